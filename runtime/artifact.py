"""
The artifact format of a built program: a plain directory, no pickle.

    model.xrelay/
      manifest.json       format, version, sha256 of every other file, the kernels' metadata,
                          and the machine and compiler each library was built for
      graph.json          the executor graph (`-t graph-json`, with its `devices` list, each
                          entry with the `features` its kernels were built for)
      params.npz          the params (constants), by node name
      kernels/NAME.c      one translation unit per kernel (.cl for OpenCL C)
      kernels/deviceN.so  the C kernels of device N, compiled

Loading checks the format and every hash before reading anything else. Reading needs only
numpy and the standard library: no compiler, no xDSL.
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from xrelay.errors import ArtifactError
from xrelay.runtime.device_kinds import generating_kinds
from xrelay.runtime.kernels import LANGUAGES, KernelSource

FORMAT = "xrelay-executable"
VERSION = 3  # 3: the graph's `devices` entries carry the features they were built for
# A kernel source's file suffix by language (the device kinds' table's).
SUFFIXES = {kind.language: kind.source_suffix for kind in generating_kinds() if kind.language is not None}


@dataclass(frozen=True)
class SavedLibrary:
    """A device's compiled kernels, and where they can run."""

    data: bytes
    machine: str  # `xrelay.runtime.c_library.machine()` where it was built
    compiler: str  # the compiler's version line


@dataclass(frozen=True)
class Artifact:
    """What a saved executable holds."""

    graph: dict[str, Any]
    params: dict[str, np.ndarray]
    kernels: list[KernelSource]
    libraries: dict[int, SavedLibrary] = field(default_factory=dict[int, SavedLibrary])  # by device index


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def save(path: str | Path, artifact: Artifact) -> None:
    root = Path(path)
    if root.exists() and not root.is_dir():
        raise ArtifactError(
            f"cannot save to {root}: it is a file, and an executable is saved as a "
            "directory; choose a new path or remove the file"
        )
    (root / "kernels").mkdir(parents=True, exist_ok=True)
    files = {"graph.json": json.dumps(artifact.graph, indent=1).encode(), "params.npz": _npz(artifact.params)}
    kernels: list[dict[str, Any]] = []
    for k in artifact.kernels:
        name = f"kernels/{k.name}{SUFFIXES[k.language]}"
        files[name] = k.source.encode()
        kernels.append({**k.to_json(), "file": name})
    libraries: list[dict[str, Any]] = []
    for device, library in sorted(artifact.libraries.items()):
        name = f"kernels/device{device}.so"
        files[name] = library.data
        libraries.append({"device": device, "file": name, "machine": library.machine, "compiler": library.compiler})
    for name, data in files.items():
        (root / name).write_bytes(data)
    manifest = {
        "format": FORMAT,
        "version": VERSION,
        "files": {n: sha256(d) for n, d in files.items()},
        "kernels": kernels,
        "libraries": libraries,
    }
    (root / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")


def _npz(params: Mapping[str, np.ndarray]) -> bytes:
    buffer = io.BytesIO()
    # Explicit, so that no parameter can be taken for the flag; `load` refuses pickles too.
    np.savez(buffer, allow_pickle=False, **params)
    return buffer.getvalue()


def load(path: str | Path) -> Artifact:
    root = Path(path)
    manifest = _manifest(root)
    files = {name: _verified(root, name, digest) for name, digest in manifest["files"].items()}
    for required in ("graph.json", "params.npz"):
        if required not in files:
            raise ArtifactError(f"{root}: the manifest lists no {required}; the artifact is incomplete")
    with np.load(io.BytesIO(files["params.npz"]), allow_pickle=False) as npz:
        params = {name: npz[name] for name in npz.files}
    kernels = [_kernel(k, files, root) for k in manifest["kernels"]]
    libraries = {int(entry["device"]): _library(entry, files, root) for entry in manifest.get("libraries", [])}
    return Artifact(json.loads(files["graph.json"]), params, kernels, libraries)


def _manifest(root: Path) -> dict[str, Any]:
    if root.exists() and not root.is_dir():
        raise ArtifactError(
            f"{root} is a file, but a saved xrelay executable is a directory "
            "(made by Executable.save); to compile a program use xrelay.build"
        )
    try:
        manifest = json.loads((root / "manifest.json").read_text())
    except FileNotFoundError:
        raise ArtifactError(f"{root} is not a saved xrelay executable: it has no manifest.json") from None
    except json.JSONDecodeError as e:
        raise ArtifactError(f"{root}/manifest.json is not valid JSON ({e})") from None
    if manifest.get("format") != FORMAT or manifest.get("version") != VERSION:
        raise ArtifactError(
            f"{root}/manifest.json is format {manifest.get('format')!r} version {manifest.get('version')!r}, "
            f"but this xrelay reads {FORMAT!r} version {VERSION}"
        )
    return manifest


def _verified(root: Path, name: str, digest: str) -> bytes:
    if Path(name).is_absolute() or ".." in Path(name).parts:
        raise ArtifactError(f"{root}/manifest.json names the file {name!r} outside the artifact")
    try:
        data = (root / name).read_bytes()
    except FileNotFoundError:
        raise ArtifactError(f"{root}/{name} is missing; the artifact is incomplete") from None
    if sha256(data) != digest:
        raise ArtifactError(
            f"{root}/{name} has sha256 {sha256(data)}, but the manifest says {digest}; "
            "the artifact is corrupt or was edited — save it again"
        )
    return data


def _kernel(entry: Mapping[str, Any], files: Mapping[str, bytes], root: Path) -> KernelSource:
    _check_hashed(entry, files, root, f"kernel {entry['name']}")
    if entry.get("language") not in LANGUAGES:
        raise ArtifactError(
            f"{root}/manifest.json gives kernel {entry['name']} the language "
            f"{entry.get('language')!r}; expected one of {', '.join(LANGUAGES)}"
        )
    return KernelSource.from_json(dict(entry), files[entry["file"]].decode())


def _library(entry: Mapping[str, Any], files: Mapping[str, bytes], root: Path) -> SavedLibrary:
    _check_hashed(entry, files, root, f"the library of device {entry['device']}")
    return SavedLibrary(files[entry["file"]], str(entry["machine"]), str(entry["compiler"]))


def _check_hashed(entry: Mapping[str, Any], files: Mapping[str, bytes], root: Path, what: str) -> None:
    if entry["file"] not in files:
        raise ArtifactError(f"{root}/manifest.json lists {what} in {entry['file']}, which it does not hash")
