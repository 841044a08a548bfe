"""The artifact: a saved executable holds its compiled C library with the machine and compiler
it was built for; `load` uses it where these match (no compiler needed), and otherwise
rebuilds it from the saved sources and says so."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from graphs import CL0, CPU, inputs, simplex_expected, simplex_on

import xrelay.runtime
from xrelay.errors import ArtifactError
from xrelay.runtime import Executable, LibraryRebuiltWarning
from xrelay.runtime.c_library import c_compiler_version, machine
from xrelay.runtime.signing import sign


@pytest.fixture
def saved(tmp_path: Path) -> Path:
    graph, kernels = simplex_on([CPU, CL0])
    Executable(graph, kernels, {}).save(tmp_path / "m")
    return tmp_path / "m"


def manifest(root: Path) -> dict:
    return json.loads((root / "manifest.json").read_text())


def write_signed(root: Path, data: dict) -> None:
    text = json.dumps(data).encode()
    (root / "manifest.json").write_bytes(text)
    (root / "manifest.sig").write_text(sign(text))


def test_the_library_is_saved_with_its_machine_and_compiler(saved: Path) -> None:
    (library,) = manifest(saved)["libraries"]
    assert library == {
        "device": 0,
        "file": "kernels/device0.so",
        "machine": machine(),
        "compiler": c_compiler_version(),
    }
    assert (saved / "kernels" / "device0.so").read_bytes()[:4] == b"\x7fELF"


def test_load_uses_the_library_without_a_compiler(tmp_path: Path) -> None:
    """With nothing on PATH (no gcc) and an empty kernel cache, only the saved libraries can
    run (two cpu scopes: two libraries; PoCL would need a linker, so no opencl here)."""
    graph, kernels = simplex_on([CPU, {**CPU, "id": 1}])
    saved = tmp_path / "m"
    Executable(graph, kernels, {}).save(saved)
    assert [lib["device"] for lib in manifest(saved)["libraries"]] == [0, 1]
    x = inputs("ABD")
    np.savez(tmp_path / "x.npz", **x)
    script = ("import sys, numpy as np, xrelay.runtime\n"
              "out = xrelay.runtime.load(sys.argv[1]).run(dict(np.load(sys.argv[2])))\n"
              "np.save(sys.argv[3], out)\n")  # fmt: skip
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    env = {**os.environ, "PATH": str(bin_dir), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    result = subprocess.run([sys.executable, "-W", "error", "-c", script, saved, tmp_path / "x.npz", tmp_path / "out.npy"],
                            capture_output=True, text=True, env=env, check=False)  # fmt: skip
    assert result.returncode == 0, result.stderr
    np.testing.assert_allclose(np.load(tmp_path / "out.npy"), simplex_expected(x), rtol=1e-6)


@pytest.mark.parametrize("field", ["machine", "compiler"])
def test_load_rebuilds_a_library_of_another_machine_or_compiler(saved: Path, field: str) -> None:
    data = manifest(saved)
    data["libraries"][0][field] = "elsewhere"
    write_signed(saved, data)  # (as its owner would: an artifact moved to another host)
    with pytest.warns(
        LibraryRebuiltWarning, match="device 0 were built on .*elsewhere.*: rebuilding them from the saved sources"
    ):
        exe = xrelay.runtime.load(saved)
    x = inputs("ABD")
    np.testing.assert_allclose(exe.run(x), simplex_expected(x), rtol=1e-6)


def test_an_edited_library_is_rejected(saved: Path) -> None:
    library = saved / "kernels" / "device0.so"
    library.write_bytes(library.read_bytes() + b"\0")
    with pytest.raises(ArtifactError, match="device0.so has sha256 .*, but the manifest says"):
        xrelay.runtime.load(saved)


def test_save_onto_a_file_and_load_of_a_file_say_what_an_artifact_is(tmp_path: Path) -> None:
    graph, kernels = simplex_on([CPU, CL0])
    (tmp_path / "model.mlir").write_text("func.func @main() { func.return }")
    with pytest.raises(
        ArtifactError, match="cannot save to .*model.mlir: it is a file, and an executable is saved as a directory"
    ):
        Executable(graph, kernels, {}).save(tmp_path / "model.mlir")
    with pytest.raises(
        ArtifactError, match="model.mlir is a file, but a saved xrelay executable is a directory .*use xrelay.build"
    ):
        xrelay.runtime.load(tmp_path / "model.mlir")
