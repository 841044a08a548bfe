"""An artifact is code: `load` refuses one not signed under this user's key before anything of
it is built or loaded (a planted library's constructor never runs, nothing is compiled), and
`trust=True` loads one from elsewhere. Each refusal is shown to matter: with `trust=True` the
same planted code does run (in a child process)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from graphs import CPU, inputs, simplex_expected, simplex_on

import xrelay.runtime
from xrelay.errors import ArtifactError
from xrelay.runtime import Executable
from xrelay.runtime.artifact import sha256

CONSTRUCTOR = (
    '#include <stdio.h>\n__attribute__((constructor)) static void planted(void) {{ fclose(fopen("{marker}", "w")); }}\n'
)
LOAD = "import sys, warnings, xrelay.runtime\nwarnings.simplefilter('ignore')\nxrelay.runtime.load(sys.argv[1], trust=True)\n"


@pytest.fixture
def saved(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The simplex graph on two cpu scopes (a library each), saved; an empty kernel cache."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    graph, kernels = simplex_on([CPU, {**CPU, "id": 1}])
    Executable(graph, kernels, {}).save(tmp_path / "m")
    return tmp_path / "m"


def rehash(root: Path, edit: dict[str, object] | None = None) -> None:
    """What whoever can write the artifact but lacks the key can do: recompute its hashes."""
    manifest = json.loads((root / "manifest.json").read_text())
    manifest["files"] = {name: sha256((root / name).read_bytes()) for name in manifest["files"]}
    for key, value in (edit or {}).items():
        manifest["libraries"][0][key] = value
    (root / "manifest.json").write_text(json.dumps(manifest))


def built_files(root: Path) -> list[str]:
    return sorted(p.name for p in (root / "cache").rglob("*") if p.suffix in (".so", ".o", ".c"))


def refused_then_trusted(root: Path, marker: Path) -> None:
    """Refused with nothing run or built; trusted (in a child), the planted code runs."""
    before = built_files(root.parent)
    with pytest.raises(ArtifactError, match="is not signed with this user's key .*nothing of it was loaded"):
        xrelay.runtime.load(root)
    assert not marker.exists(), "the planted code ran although the artifact was refused"
    assert built_files(root.parent) == before, "something was compiled or cached for a refused artifact"
    env = {**os.environ, "XDG_CACHE_HOME": str(root.parent / "child-cache")}
    subprocess.run([sys.executable, "-c", LOAD, str(root)], capture_output=True, env=env, check=False)
    assert marker.exists(), "the planted code does not run even when trusted: the test proves nothing"


def test_a_swapped_library_with_its_hash_recomputed_is_refused(saved: Path, tmp_path: Path) -> None:
    marker = tmp_path / "constructor-ran"
    (tmp_path / "planted.c").write_text(CONSTRUCTOR.format(marker=marker))
    planted = saved / "kernels" / "device0.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", planted, tmp_path / "planted.c"], check=True)
    rehash(saved)
    refused_then_trusted(saved, marker)


def test_an_edited_source_of_another_machine_is_refused(saved: Path, tmp_path: Path) -> None:
    """A changed `machine` field would have the edited source compiled and loaded."""
    marker = tmp_path / "constructor-ran"
    source = saved / "kernels" / "sub.c"
    source.write_text(CONSTRUCTOR.format(marker=marker) + source.read_text())
    rehash(saved, {"machine": "elsewhere"})
    refused_then_trusted(saved, marker)


def test_an_unsigned_artifact_is_refused_and_says_how_to_proceed(saved: Path) -> None:
    (saved / "manifest.sig").unlink()
    with pytest.raises(
        ArtifactError, match=r"is not signed \(\$XRELAY_ARTIFACT_KEY\).*trust=True.*XRELAY_ARTIFACT_KEY"
    ):
        xrelay.runtime.load(saved)


def test_an_artifact_of_another_key_is_refused_and_loads_when_trusted(
    saved: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XRELAY_ARTIFACT_KEY", "someone else's key")
    with pytest.raises(ArtifactError, match="not signed with this user's key"):
        xrelay.runtime.load(saved)
    x = inputs("ABD")
    np.testing.assert_allclose(xrelay.runtime.load(saved, trust=True).run(x), simplex_expected(x), rtol=1e-6)


def test_an_edited_manifest_is_refused(saved: Path) -> None:
    (saved / "manifest.json").write_text((saved / "manifest.json").read_text().replace('"device": 1', '"device": 0'))
    with pytest.raises(ArtifactError, match="not signed with this user's key"):
        xrelay.runtime.load(saved)


def test_without_the_variable_a_private_key_file_is_made_and_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("XRELAY_ARTIFACT_KEY")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    graph, kernels = simplex_on([CPU, {**CPU, "id": 1}])
    Executable(graph, kernels, {}).save(tmp_path / "m")
    key = tmp_path / "config" / "xrelay" / "artifact.key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert stat.S_IMODE(key.parent.stat().st_mode) == 0o700
    assert len(key.read_bytes()) == 32
    x = inputs("ABD")
    np.testing.assert_allclose(xrelay.runtime.load(tmp_path / "m").run(x), simplex_expected(x), rtol=1e-6)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "other-config"))  # another user: no key
    with pytest.raises(ArtifactError, match="other-config/xrelay/artifact.key"):
        xrelay.runtime.load(tmp_path / "m")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    key.chmod(0o644)
    with pytest.raises(ArtifactError, match="has mode 644, open to other users.*chmod 600"):
        xrelay.runtime.load(tmp_path / "m")


@pytest.mark.skipif(os.getuid() != 0, reason="only root can give the key file another owner")
def test_a_key_file_of_another_user_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("XRELAY_ARTIFACT_KEY")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    graph, kernels = simplex_on([CPU, {**CPU, "id": 1}])
    Executable(graph, kernels, {}).save(tmp_path / "m")
    os.chown(tmp_path / "config" / "xrelay" / "artifact.key", 1, 1)
    with pytest.raises(ArtifactError, match="belongs to user id 1, not to this user"):
        xrelay.runtime.load(tmp_path / "m")


def test_an_artifact_of_version_3_says_to_save_it_again(saved: Path) -> None:
    manifest = json.loads((saved / "manifest.json").read_text())
    (saved / "manifest.json").write_text(json.dumps({**manifest, "version": 3}))
    with pytest.raises(
        ArtifactError, match="version 3, but this xrelay reads .* version 4 or 5 .*save the program again"
    ):
        xrelay.runtime.load(saved, trust=True)


def test_save_refuses_a_directory_that_is_not_an_artifact(tmp_path: Path) -> None:
    graph, kernels = simplex_on([CPU, {**CPU, "id": 1}])
    exe = Executable(graph, kernels, {})
    (tmp_path / "photos").mkdir()
    (tmp_path / "photos" / "graph.json").write_text("mine")
    with pytest.raises(ArtifactError, match="photos: it is a directory with files of its own, not an xrelay artifact"):
        exe.save(tmp_path / "photos")
    assert (tmp_path / "photos" / "graph.json").read_text() == "mine"
    assert sorted(p.name for p in (tmp_path / "photos").iterdir()) == ["graph.json"]
    (tmp_path / "empty").mkdir()
    exe.save(tmp_path / "empty")
    exe.save(tmp_path / "empty")  # over an artifact: allowed
    x = inputs("ABD")
    np.testing.assert_allclose(xrelay.runtime.load(tmp_path / "empty").run(x), simplex_expected(x), rtol=1e-6)


def test_a_key_that_cannot_be_made_says_to_set_the_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("XRELAY_ARTIFACT_KEY")
    (tmp_path / "config").write_text("a file, not a directory")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    graph, kernels = simplex_on([CPU, {**CPU, "id": 1}])
    with pytest.raises(
        ArtifactError, match="cannot make the artifact key .*config/xrelay/artifact.key .*set XRELAY_ARTIFACT_KEY"
    ):
        Executable(graph, kernels, {}).save(tmp_path / "m")
    assert not (tmp_path / "m").exists()
