"""Packaging: the wheel holds every subpackage and every file they need, the demo model builds
and runs from it, installed into a fresh venv with no part of this source tree on sys.path,
and `pip install -e .` is a plain path entry installed without setuptools' warning.

The wheel is built by pip as a user's `pip install` would (an isolated build with
pyproject's build backend), from a copy of the working tree's files that git does not ignore,
so a stale `build/` directory cannot leak into it. Its dependencies come from the package
index, as for a user. About 25 s, most of it pip fetching: setuptools for the isolated build
(the wheel takes ~6 s), then xdsl, pyopencl and their dependencies (~8 s); building and running
the model in the new venv takes ~3 s. The editable install takes ~5 s more (its isolated
build). A warm pip cache shortens the fetching.
"""

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path, PurePosixPath

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Folders of the repository that are not part of the package `xrelay`: DESIGN.md's layout,
# and pyproject's packages.find exclude list.
NOT_PACKAGED = {"test", "bench", "examples"}

RUN_DEMO_MODEL = """
import json, sys
import numpy as np
import xrelay
from xdsl.universe import Universe

text = open(sys.argv[1]).read()
module = xrelay.parse(text)
rng = np.random.default_rng(0)
inputs = {
    arg.name_hint: rng.standard_normal(tuple(arg.type.get_shape())).astype(np.float32)
    for arg in module.ops.first.args
}
exe = xrelay.build(text, targets=("c", "opencl"))
out = exe.run(**inputs)
ref = xrelay.interpret(module, inputs)
print(json.dumps({
    "file": xrelay.__file__,
    "sys_path": sys.path,
    "shape": list(out.shape),
    "max_error": float(np.abs(out - ref).max()),
    "plugin_passes": sorted(Universe.get_multiverse().all_passes),
}))
"""


def source_files() -> list[PurePosixPath]:
    """The working tree's files that git does not ignore: tracked ones and new ones."""
    listing = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    paths = {PurePosixPath(p) for p in listing.stdout.split("\0") if p}
    return sorted(p for p in paths if os.path.lexists(ROOT / p))  # not files deleted unstaged


def packaged(path: PurePosixPath) -> bool:
    """Whether a file of the repository belongs in the wheel (as `xrelay/<path>`)."""
    if len(path.parts) == 1:
        return path.suffix == ".py"  # Makefile, README.md, pyproject.toml are the project's
    top = path.parts[0]
    return top not in NOT_PACKAGED and not top.startswith(".") and "__pycache__" not in path.parts


def copy_source_tree(tree: Path) -> Path:
    for path in source_files():
        src, dst = ROOT / path, tree / path
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            os.symlink(os.readlink(src), dst)  # .src/xrelay -> ..
        else:
            shutil.copy2(src, dst)
    return tree


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("packaging")
    dist = tmp / "dist"
    pip(["wheel", "--no-deps", "--wheel-dir", str(dist), str(copy_source_tree(tmp / "xrelay-src"))])
    (built,) = dist.glob("xrelay-*.whl")
    return built


def pip(args: list[str]) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "pip", "-q", *args], capture_output=True, text=True)
    assert done.returncode == 0, f"pip {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}"
    return done


def test_the_wheel_holds_every_package_folder_and_file(wheel: Path):
    names = set(zipfile.ZipFile(wheel).namelist())
    in_wheel = {PurePosixPath(n).relative_to("xrelay") for n in names if n.startswith("xrelay/")}
    wanted = {p for p in source_files() if packaged(p)}

    folders = {p.parent for p in wanted if p.suffix == ".py"} - {PurePosixPath(".")}
    assert {"dialects", "transforms", "targets", "runtime", "tools"} <= {str(f) for f in folders}
    missing_folders = {str(f) for f in folders if not any(p.parent == f for p in in_wheel)}
    assert not missing_folders, f"subpackages missing from the wheel: {sorted(missing_folders)}"
    assert not wanted - in_wheel, f"files missing from the wheel: {sorted(map(str, wanted - in_wheel))}"
    assert not in_wheel - wanted, f"files that are no part of the package: {sorted(map(str, in_wheel - wanted))}"

    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    text = zipfile.ZipFile(wheel).read(entry_points).decode()
    assert "opt-tool = xrelay.tools.opt_tool:main" in text
    assert "xrelay = xrelay.universe:XRELAY_UNIVERSE" in text


def test_the_demo_model_runs_from_the_installed_wheel(wheel: Path, tmp_path: Path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    pip(["--python", str(python), "install", str(wheel)])  # with its dependencies

    # Run outside the repository, with nothing of it on the path.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    done = subprocess.run(
        [str(python), "-c", RUN_DEMO_MODEL, str(ROOT / "examples" / "mlp.mlir")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert Path(result["file"]).is_relative_to(venv), result["file"]
    assert not any(p and Path(p).resolve().is_relative_to(ROOT) for p in result["sys_path"])
    assert result["shape"] == [32, 10]
    assert result["max_error"] < 1e-5
    assert "plan-devices" in result["plugin_passes"]

    # xDSL's own driver finds xrelay in the installed wheel too.
    relay = "func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n  %0 = relay.exp %a : tensor<4xf32>\n  func.return %0 : tensor<4xf32>\n}\n"
    opt = subprocess.run(
        [str(venv / "bin" / "xdsl-opt"), "-p", "plan-devices{targets=c}"],
        input=relay,
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert opt.returncode == 0, opt.stderr
    assert 'relay.exp %a {se_scope = #relay.se_scope<device = cpu, id = 0, target = "c"' in opt.stdout


def test_an_editable_install_is_a_plain_path_entry_and_quiet(tmp_path: Path):
    # `make setup`'s install, without the dependencies. setuptools installs a package whose
    # folder has another name through an import hook, and warns about it in a box on every
    # install; `.src/xrelay` makes it a src layout, installed as one path in a .pth file.
    tree = copy_source_tree(tmp_path / "xrelay-src")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    done = pip(["--python", str(venv / "bin" / "python"), "install", "--no-deps", "-e", str(tree)])
    assert "Editable installation" not in done.stderr and "!!" not in done.stderr, done.stderr

    (site,) = venv.glob("lib/python*/site-packages")
    assert not list(site.glob("__editable__*finder*")), "an import hook, not a path entry"
    (pth,) = site.glob("__editable__.xrelay-*.pth")
    assert pth.read_text().split() == [str((tree / ".src").resolve())]
