"""
The artifact format of a built program: a plain directory, no pickle.

    model.xrelay/
      manifest.json       format, version, sha256 of every other file, the kernels' metadata
                          (with their parameters' shapes and dtypes), and the machine and
                          compiler each library was built for
      manifest.sig        HMAC-SHA256 of manifest.json's bytes under the saving user's key
      graph.json          the executor graph (`-t graph-json`, with its `devices` list, each
                          entry with the `features` its kernels were built for); of an
                          executable built with batch sizes, the largest size's graph
      batchN.json         the graph of batch size N, for each smaller one (the manifest's
                          `batches` lists each size and its file; the kernels, libraries and
                          params are shared by the graphs, stored once)
      params.npz          the params (constants), by node name: an uncompressed .npz whose
                          arrays start 64-byte aligned, read into one buffer they view
                          (`xrelay.runtime.params_archive`)
      kernels/NAME.c      one translation unit per kernel (.cl for OpenCL C)
      kernels/deviceN.so  the C kernels of device N, compiled

An artifact is code: its libraries and kernels run in the process that loads it. Loading
checks the format and the signature (`xrelay.runtime.signing`; `trust=True` skips it), then
every hash, before reading anything else, and then the graph against the kernels and params
(`xrelay.runtime.graph_check`); anything malformed is an ArtifactError saying what. Reading
needs only numpy and the standard library: no compiler, no xDSL. `save` writes into a new or
empty directory, or over an xrelay artifact, never into another directory.
"""

from __future__ import annotations

import hashlib
import json
import re
import struct
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar, cast

import numpy as np

from xrelay.errors import ArtifactError
from xrelay.runtime import params_archive
from xrelay.runtime.device_kinds import generating_kinds
from xrelay.runtime.graph_check import COPY, NOP, check_graph
from xrelay.runtime.kernels import LANGUAGES, KernelSource, TensorArg
from xrelay.runtime.signing import SIGNATURE_FILE, sign, verify

FORMAT = "xrelay-executable"
# 3: the graph's `devices` entries carry the features they were built for; 4: signed, and
# each kernel's entry has its parameters' shapes and dtypes (`args`); 5: `batches`, the graph
# of each batch size (a version 4 artifact, of one graph, still loads)
VERSION = 5
READS = (4, 5)
KERNEL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # a C identifier: the symbol, and a file name
# A kernel source's file suffix by language (the device kinds' table's).
Contents = TypeVar("Contents", bytes, np.ndarray)
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
    # the graph of each batch size (`graph` is the largest's), or none for one graph
    batches: dict[int, dict[str, Any]] = field(default_factory=dict[int, dict[str, Any]])


def sha256(data: bytes | np.ndarray) -> str:
    return hashlib.sha256(data if isinstance(data, bytes) else data.data).hexdigest()


def save(path: str | Path, artifact: Artifact) -> None:
    root = Path(path)
    _check_target(root)
    files, manifest = _contents(artifact)
    text = (json.dumps(manifest, indent=1) + "\n").encode()
    signature = sign(text)  # (before writing anything: a key that cannot be made leaves no files)
    (root / "kernels").mkdir(parents=True, exist_ok=True)
    (root / SIGNATURE_FILE).unlink(missing_ok=True)  # (a half-written artifact is then unsigned)
    for name, data in files.items():
        (root / name).write_bytes(data)
    (root / "manifest.json").write_bytes(text)
    (root / SIGNATURE_FILE).write_text(signature + "\n")


def _contents(artifact: Artifact) -> tuple[dict[str, bytes], dict[str, Any]]:
    """The artifact's files by name, and its manifest."""
    files = {
        "graph.json": json.dumps(artifact.graph, indent=1).encode(),
        "params.npz": params_archive.to_npz(artifact.params),
    }
    kernels: list[dict[str, Any]] = []
    for k in artifact.kernels:
        name = f"kernels/{k.name}{SUFFIXES[k.language]}"
        files[name] = k.source.encode()
        kernels.append({**_with_args(k, artifact.graph).to_json(), "file": name})
    libraries: list[dict[str, Any]] = []
    for device, library in sorted(artifact.libraries.items()):
        name = f"kernels/device{device}.so"
        files[name] = library.data
        libraries.append({"device": device, "file": name, "machine": library.machine, "compiler": library.compiler})
    batches: list[dict[str, Any]] = []
    for size, graph in sorted(artifact.batches.items()):
        name = "graph.json" if size == max(artifact.batches) else f"batch{size}.json"
        files[name] = json.dumps(graph, indent=1).encode()
        batches.append({"size": size, "file": name})
    hashes = {n: sha256(d) for n, d in files.items()}
    manifest = {"format": FORMAT, "version": VERSION, "files": hashes, "kernels": kernels, "libraries": libraries}
    return files, {**manifest, "batches": batches}


def _check_target(root: Path) -> None:
    """`root` is new, an empty directory or an xrelay artifact: `save` overwrites no other files."""
    if root.exists() and not root.is_dir():
        raise ArtifactError(
            f"cannot save to {root}: it is a file, and an executable is saved as a "
            "directory; choose a new path or remove the file"
        )
    if not root.exists() or not any(root.iterdir()):
        return
    try:
        is_artifact = json.loads((root / "manifest.json").read_text()).get("format") == FORMAT
    except (OSError, ValueError, AttributeError):
        is_artifact = False
    if not is_artifact:
        raise ArtifactError(
            f"cannot save to {root}: it is a directory with files of its own, not an xrelay "
            "artifact, and saving would overwrite them; choose a new or empty directory"
        )


def _with_args(kernel: KernelSource, graph: Mapping[str, Any]) -> KernelSource:
    """`kernel`, with the parameter types the graph gives it where it has none of its own (a
    kernel written by hand), so that every saved kernel has a signature to check against."""
    if kernel.args:
        return kernel
    attrs = graph["attrs"]
    devices = attrs["device_index"][1] if "device_index" in attrs else [0] * len(graph["nodes"])
    for index, node in enumerate(graph["nodes"]):
        func_name = node.get("attrs", {}).get("func_name")
        if func_name == kernel.name and devices[index] == kernel.device and func_name not in (COPY, NOP):
            tensors = [i for i, _, _ in node["inputs"]] + [index]
            args = tuple(TensorArg(tuple(attrs["shape"][1][t]), attrs["dltype"][1][t]) for t in tensors)
            return replace(kernel, args=args)
    return kernel


def load(path: str | Path, trust: bool = False) -> Artifact:
    """The artifact at `path`, checked: its signature (unless `trust`: this runs native code
    from the artifact), every file's hash, and the graph against the kernels and params."""
    root = Path(path)
    text, manifest = _manifest(root)
    if not trust:
        verify(root, text)
    hashes = _entries(manifest, "files", dict, root)
    files = {
        name: _verified(root, name, digest, _read_bytes) for name, digest in hashes.items() if name != "params.npz"
    }
    for required in ("graph.json", "params.npz"):
        if required not in hashes:
            raise ArtifactError(f"{root}: the manifest lists no {required}; the artifact is incomplete")
    params = _params(_verified(root, "params.npz", hashes["params.npz"], params_archive.read), root)
    kernels = [_kernel(k, files, root) for k in _entries(manifest, "kernels", list, root)]
    libraries: dict[int, SavedLibrary] = {}
    for entry in _entries(manifest, "libraries", list, root):
        device, library = _library(entry, files, root)
        libraries[device] = library
    graph = _graph(files, "graph.json", kernels, params, root)
    batches = _batches(manifest.get("batches", []), files, (graph, kernels, params), root)
    return Artifact(graph, params, kernels, libraries, batches)


def _graph(
    files: Mapping[str, bytes], name: str, kernels: list[KernelSource], params: Mapping[str, np.ndarray], root: Path
) -> dict[str, Any]:
    """The graph in file `name`, checked against the kernels and params."""
    try:
        graph = json.loads(files[name])
    except ValueError as e:
        raise ArtifactError(f"{root}/{name} is not valid JSON ({e})") from None
    check_graph(graph, kernels, params, f"{root}/{name}")
    return graph


def _batches(
    entries: object,
    files: Mapping[str, bytes],
    loaded: tuple[dict[str, Any], list[KernelSource], Mapping[str, np.ndarray]],
    root: Path,
) -> dict[int, dict[str, Any]]:
    """The graph of each batch size the manifest lists (graph.json the largest's), checked."""
    graph, kernels, params = loaded
    if not isinstance(entries, list):
        raise ArtifactError(f"{root}/manifest.json: 'batches' must be a JSON list")
    batches: dict[int, dict[str, Any]] = {}
    for entry in cast(list[object], entries):
        fields = _entry(entry, ("size", "file"), root, "batch")
        size = fields["size"]
        if not isinstance(size, int) or isinstance(size, bool) or size < 1 or size in batches:
            raise ArtifactError(f"{root}/manifest.json lists the batch size {size!r}; expected distinct sizes >= 1")
        _check_hashed(fields, files, root, f"the graph of batch size {size}")
        name = fields["file"]
        batches[size] = graph if name == "graph.json" else _graph(files, name, kernels, params, root)
    if batches and batches[max(batches)] is not graph:
        raise ArtifactError(f"{root}/manifest.json: graph.json must be the graph of the largest batch size")
    return batches


def _manifest(root: Path) -> tuple[bytes, dict[str, Any]]:
    """manifest.json's bytes and content, of this format and version."""
    if root.exists() and not root.is_dir():
        raise ArtifactError(
            f"{root} is a file, but a saved xrelay executable is a directory "
            "(made by Executable.save); to compile a program use xrelay.build"
        )
    try:
        text = (root / "manifest.json").read_bytes()
        manifest = json.loads(text)
    except FileNotFoundError:
        raise ArtifactError(f"{root} is not a saved xrelay executable: it has no manifest.json") from None
    except ValueError as e:
        raise ArtifactError(f"{root}/manifest.json is not valid JSON ({e})") from None
    if not isinstance(manifest, dict):
        raise ArtifactError(f"{root}/manifest.json must be a JSON object, but is {type(manifest).__name__}")
    manifest = cast(dict[str, Any], manifest)
    if manifest.get("format") != FORMAT or manifest.get("version") not in READS:
        raise ArtifactError(
            f"{root}/manifest.json is format {manifest.get('format')!r} version {manifest.get('version')!r}, "
            f"but this xrelay reads {FORMAT!r} version {' or '.join(map(str, READS))}"
            + (" (signed artifacts): build and save the program again" if manifest.get("format") == FORMAT else "")
        )
    return text, manifest


def _entries(manifest: Mapping[str, Any], key: str, kind: type, root: Path) -> Any:
    """The manifest's `key`, a JSON object (dict) or list."""
    if key not in manifest:
        raise ArtifactError(f"{root}/manifest.json has no {key!r} key; the artifact is incomplete")
    if not isinstance(manifest[key], kind):
        raise ArtifactError(f"{root}/manifest.json: {key!r} must be a JSON {'object' if kind is dict else 'list'}")
    return manifest[key]


def _verified(root: Path, name: object, digest: object, read: Callable[[Path], Contents]) -> Contents:
    """The file's contents as `read` gives them, if they have the sha256 `digest`."""
    if not isinstance(name, str) or Path(name).is_absolute() or ".." in Path(name).parts:
        raise ArtifactError(f"{root}/manifest.json names the file {name!r} outside the artifact")
    try:
        data = read(root / name)
    except FileNotFoundError:
        raise ArtifactError(f"{root}/{name} is missing; the artifact is incomplete") from None
    if sha256(data) != digest:
        raise ArtifactError(
            f"{root}/{name} has sha256 {sha256(data)}, but the manifest says {digest}; "
            "the artifact is corrupt or was edited — save it again"
        )
    return data


def _read_bytes(path: Path) -> bytes:
    return path.read_bytes()


def _params(buffer: np.ndarray, root: Path) -> dict[str, np.ndarray]:
    """params.npz's arrays (numbers only: no pickled objects), read-only views of the file's
    aligned buffer (`params_archive`): the weights are then held once, and the host device runs
    on them as they are (`GraphExecutor.share`)."""
    try:
        return params_archive.arrays(buffer)
    except (ValueError, OSError, EOFError, AttributeError, struct.error, zipfile.BadZipFile) as e:
        raise ArtifactError(
            f"{root}/params.npz is not an archive of numeric arrays ({e}); save the program again"
        ) from None


def _kernel(entry: object, files: Mapping[str, bytes], root: Path) -> KernelSource:
    entry = _entry(entry, ("name", "language", "file", "global_size", "num_inputs", "device", "args"), root, "kernel")
    name = entry["name"]
    if not isinstance(name, str) or not KERNEL_NAME.fullmatch(name):
        raise ArtifactError(f"{root}/manifest.json names a kernel {name!r}; a kernel's name is a C identifier")
    _check_hashed(entry, files, root, f"kernel {name}")
    if entry["language"] not in LANGUAGES:
        raise ArtifactError(
            f"{root}/manifest.json gives kernel {name} the language "
            f"{entry['language']!r}; expected one of {', '.join(LANGUAGES)}"
        )
    try:
        kernel = KernelSource.from_json(entry, files[entry["file"]].decode())
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise ArtifactError(f"{root}/manifest.json: the entry of kernel {name} is malformed ({e!r})") from None
    if (
        kernel.num_inputs < 0
        or any(n < 0 for n in kernel.global_size)
        or any(d < 0 for a in kernel.args for d in a.shape)
    ):
        raise ArtifactError(f"{root}/manifest.json: kernel {name} has a negative size, input count or shape")
    if kernel.args and len(kernel.args) != kernel.num_inputs + 1:
        raise ArtifactError(
            f"{root}/manifest.json: kernel {name} takes {kernel.num_inputs} inputs, but has "
            f"{len(kernel.args)} parameters (the inputs and one output)"
        )
    return kernel


def _library(entry: object, files: Mapping[str, bytes], root: Path) -> tuple[int, SavedLibrary]:
    entry = _entry(entry, ("device", "file", "machine", "compiler"), root, "library")
    if not isinstance(entry["device"], int):
        raise ArtifactError(f"{root}/manifest.json gives a library the device {entry['device']!r}; expected an index")
    _check_hashed(entry, files, root, f"the library of device {entry['device']}")
    return entry["device"], SavedLibrary(files[entry["file"]], str(entry["machine"]), str(entry["compiler"]))


def _entry(entry: object, keys: tuple[str, ...], root: Path, what: str) -> dict[str, Any]:
    """A manifest entry (a kernel's, a library's), with all of `keys`."""
    if not isinstance(entry, dict):
        raise ArtifactError(f"{root}/manifest.json: a {what} entry must be a JSON object, but is {entry!r}")
    fields = cast(dict[str, Any], entry)
    missing = [k for k in keys if k not in fields]
    if missing:
        raise ArtifactError(
            f"{root}/manifest.json: the {what} entry {fields.get('name', '')} lacks {', '.join(missing)}"
        )
    return fields


def _check_hashed(entry: Mapping[str, Any], files: Mapping[str, bytes], root: Path, what: str) -> None:
    if not isinstance(entry["file"], str) or entry["file"] not in files:
        raise ArtifactError(f"{root}/manifest.json lists {what} in {entry['file']!r}, which it does not hash")
