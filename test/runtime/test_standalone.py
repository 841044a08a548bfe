"""The runtime stands alone: it imports nothing of the compiler or of xDSL, and a saved
artifact that uses cpu and opencl loads and runs in a fresh interpreter with numpy, ctypes
and pyopencl only."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
from graphs import CL0, CPU, inputs, simplex_expected, simplex_on

from xrelay.runtime import Executable

RUNTIME = Path(__file__).parents[2] / "runtime"
COMPILER = ("xdsl", "xrelay.dialects", "xrelay.transforms", "xrelay.targets", "xrelay.ir",
            "xrelay.interpreter", "xrelay.driver", "xrelay.diagnostics", "xrelay.frontend", "onnx")  # fmt: skip

LOAD_AND_RUN = """
import sys
import numpy as np
import xrelay.runtime
exe = xrelay.runtime.load(sys.argv[1])
out = exe.run(dict(np.load(sys.argv[2])))
np.save(sys.argv[3], out)
print([m for m in sys.modules if m.split(".")[0] == "xdsl" or m.startswith({compiler!r})])
print(sorted({{device for _, device in exe.placement()}}))
"""


def imported_modules(path: Path) -> set[str]:
    modules = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            modules.add(node.module)
    return modules


def test_runtime_modules_import_nothing_of_the_compiler() -> None:
    for path in RUNTIME.glob("*.py"):
        bad = {m for m in imported_modules(path) if m.startswith(COMPILER)}
        assert not bad, f"{path.name} imports {bad}"


def test_a_saved_artifact_runs_in_a_fresh_interpreter_without_xdsl(tmp_path: Path) -> None:
    graph, kernels = simplex_on([CPU, CL0])
    Executable(graph, kernels, {}).save(tmp_path / "simplex.xrelay")
    x = inputs("ABD")
    np.savez(tmp_path / "x.npz", **x)
    script = LOAD_AND_RUN.format(compiler=COMPILER[1:])
    env = {**os.environ, "POCL_DEVICES": os.environ.get("POCL_DEVICES", "pthread pthread")}
    result = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "simplex.xrelay"), str(tmp_path / "x.npz"), str(tmp_path / "out.npy")],
        capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    imported, devices = result.stdout.splitlines()
    assert imported == "[]", f"the runtime imported the compiler: {imported}"
    assert devices == "['cpu:0', 'opencl:0', 'opencl:0 -> cpu:0']"
    np.testing.assert_allclose(np.load(tmp_path / "out.npy"), simplex_expected(x), rtol=1e-6)
