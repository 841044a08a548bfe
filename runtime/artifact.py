"""
The artifact format of a built program: a plain directory, no pickle.

    model.xrelay/
      manifest.json     format, version, sha256 of every other file, the kernels' metadata
      graph.json        the executor graph (`-t graph-json`)
      params.npz        the params (constants), by node name
      kernels/NAME.c    one translation unit per kernel (.cl for OpenCL C)

Loading checks the format and every hash before reading anything else; kernels are rebuilt
from their sources (the builders' on-disk cache makes that cheap).
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from xrelay.errors import Error

FORMAT = "xrelay-executable"
VERSION = 1
SUFFIXES = {"c": ".c", "opencl": ".cl"}


class ArtifactError(Error):
    """A saved executable is missing, corrupt or of another format."""


@dataclass(frozen=True)
class Artifact:
    """What a saved executable holds."""

    graph: dict[str, Any]
    params: dict[str, np.ndarray]
    kernels: list[Any]  # xrelay.targets.kernels.KernelSource


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def save(path: str | Path, artifact: Artifact) -> None:
    root = Path(path)
    (root / "kernels").mkdir(parents=True, exist_ok=True)
    files = {"graph.json": json.dumps(artifact.graph, indent=1).encode(), "params.npz": _npz(artifact.params)}
    kernels = []
    for k in artifact.kernels:
        name = f"kernels/{k.name}{SUFFIXES[k.language]}"
        files[name] = k.source.encode()
        kernels.append({"name": k.name, "language": k.language, "file": name, "global_size": list(k.global_size),
                        "num_inputs": k.num_inputs, "scope": str(k.scope)})
    for name, data in files.items():
        (root / name).write_bytes(data)
    manifest = {"format": FORMAT, "version": VERSION, "files": {n: sha256(d) for n, d in files.items()}, "kernels": kernels}
    (root / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")


def _npz(params: Mapping[str, np.ndarray]) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **params)
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
    return Artifact(json.loads(files["graph.json"]), params, kernels)


def _manifest(root: Path) -> dict[str, Any]:
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


def _kernel(entry: Mapping[str, Any], files: Mapping[str, bytes], root: Path) -> Any:
    from xrelay.targets.kernels import KernelSource

    if entry["file"] not in files:
        raise ArtifactError(f"{root}/manifest.json lists kernel {entry['name']} in {entry['file']}, which it does not hash")
    return KernelSource(
        name=entry["name"],
        language=entry["language"],
        source=files[entry["file"]].decode(),
        global_size=tuple(entry["global_size"]),
        num_inputs=int(entry["num_inputs"]),
        scope=parse_scope(entry["scope"]),
    )


def parse_scope(text: str) -> Any:
    """An `#relay.se_scope<...>` from its printed form."""
    from xdsl.parser import Parser

    from xrelay.dialects.se_scope import SEScopeAttr
    from xrelay.ir import context

    scope = Parser(context(), text).parse_attribute()
    if not isinstance(scope, SEScopeAttr):
        raise ArtifactError(f"expected an #relay.se_scope<...>, but found {text!r}")
    return scope


def scope_keys(scopes: Sequence[str]) -> list[tuple[str, int]]:
    """`(device, id)` of each printed scope of a graph."""
    keys = []
    for text in scopes:
        scope = parse_scope(text)
        keys.append((scope.device, scope.id))
    return keys
