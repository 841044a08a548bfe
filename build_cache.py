"""
The build cache: what `xrelay.build` made of a program before, so that building it again skips
the passes and the emitters (ResNet-50: 3.5 s of them) as the kernel cache skips gcc.

    entry = lookup(key)                  # a Built, or None
    store(key, Built(graph, kernels, params))

An entry is keyed (`build_key`) by everything the build's result depends on: the program's
text, the sha256 of each bound param, the options of `xrelay.build`, the features of each
target's machine, gcc's version, the machine, and the source of xrelay itself (an edited pass
gives new keys). It lives in the kernel cache's directory (`c_library.cache_dir()`: 0700, this
user's) as `build-KEY.json` (the graph, the kernels' metadata and sources, each param's place
and the params file's sha256) and `build-KEY.bin` (the params' bytes, one after another). The
json is written last, so a half-written entry is none; the params' sha256 is checked before
they are used, so a damaged one is a miss (and rebuilt). The kernels themselves are compiled
through the kernel cache as on any build.

Entries hold their params, so the cache keeps at most `XRELAY_BUILD_CACHE_MB` (default
MAX_MEGABYTES) of them: storing one removes the least recently used beyond that (a lookup
marks its entry used).

`XRELAY_BUILD_CACHE=0` turns it off (the tests do, as they patch the compiler's internals).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from xrelay.runtime.c_library import atomic_path, c_compiler_version, cache_dir, machine, write_atomically
from xrelay.runtime.kernels import KernelSource

ENVIRONMENT = "XRELAY_BUILD_CACHE"
SIZE_ENVIRONMENT = "XRELAY_BUILD_CACHE_MB"
MAX_MEGABYTES = 4096
FORMAT = 1
# Folders of the repository that are not the compiler (and .venv, .git: any hidden one).
NOT_XRELAY = ("test", "bench", "examples", "__pycache__")


@dataclass(frozen=True)
class Built:
    """What a build hands the runtime: the executor graph, the kernels and the params."""

    graph: dict[str, Any]
    kernels: list[KernelSource]
    params: dict[str, np.ndarray]


def enabled() -> bool:
    return os.environ.get(ENVIRONMENT, "1").strip() not in ("0", "")


def build_key(program_text: str, params: Mapping[str, np.ndarray], options: Sequence[object]) -> str:
    """The hash of a build's inputs: the program, the params' bytes, the options (targets,
    devices, threads, features), the compiler, the machine and xrelay's own source."""
    digest = hashlib.sha256()
    for part in (str(FORMAT), program_text, repr(options), c_compiler_version(), machine(), xrelay_digest()):
        digest.update(part.encode())
        digest.update(b"\0")
    for name in sorted(params):
        array = np.ascontiguousarray(params[name])
        digest.update(f"{name} {array.dtype.str} {array.shape}\0".encode())
        digest.update(memoryview(array).cast("B"))
    return digest.hexdigest()[:40]


@cache
def xrelay_digest() -> str:
    """A hash of the path, size and modification time of each of xrelay's Python files (as
    Python's own .pyc check): a build cached by another or an edited xrelay is not reused.
    (Their contents: 0.17 s per process.)"""
    digest = hashlib.sha256()
    root = Path(__file__).parent
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = sorted(d for d in subfolders if not d.startswith(".") and d not in NOT_XRELAY)
        for name in sorted(f for f in files if f.endswith(".py")):
            info = (Path(folder) / name).stat()
            digest.update(f"{Path(folder, name).relative_to(root)} {info.st_size} {info.st_mtime_ns}\0".encode())
    return digest.hexdigest()


def _paths(key: str) -> tuple[Path, Path]:
    root = cache_dir()
    return root / f"build-{key}.json", root / f"build-{key}.bin"


def store(key: str, built: Built) -> None:
    """Writes the entry of `key` (the params first, the json that names them last)."""
    json_path, bin_path = _paths(key)
    digest, places, offset = hashlib.sha256(), dict[str, Any](), 0
    with atomic_path(bin_path) as tmp, open(tmp, "wb") as file:
        for name, value in built.params.items():
            array = np.ascontiguousarray(value)
            data = memoryview(array).cast("B")
            places[name] = {"dtype": array.dtype.str, "shape": list(array.shape), "offset": offset}
            file.write(data)
            digest.update(data)
            offset += array.nbytes
    entry = {
        "format": FORMAT,
        "graph": built.graph,
        "kernels": [{**k.to_json(), "source": k.source} for k in built.kernels],
        "params": places,
        "params_sha256": digest.hexdigest(),
    }
    write_atomically(json_path, json.dumps(entry).encode())
    _mark_used(json_path)
    evict(keep=json_path)


def evict(keep: Path) -> None:
    """Removes the least recently used entries (but `keep`) while the entries' params exceed
    the size limit."""
    limit = int(float(os.environ.get(SIZE_ENVIRONMENT) or MAX_MEGABYTES) * 1e6)
    entries: list[tuple[float, int, Path]] = []
    for path in cache_dir().glob("build-*.json"):
        try:
            entries.append((path.stat().st_mtime_ns, path.with_suffix(".bin").stat().st_size, path))
        except OSError:
            continue
    total = sum(size for _, size, _ in entries)
    for _, size, path in sorted(entries):
        if total <= limit:
            break
        if path != keep:
            for stale in (path, path.with_suffix(".bin")):
                with suppress(OSError):
                    stale.unlink()
            total -= size


def lookup(key: str) -> Built | None:
    """The entry of `key`, or None when there is none or it does not check."""
    json_path, bin_path = _paths(key)
    try:
        entry = json.loads(json_path.read_text())
        data = bin_path.read_bytes()
    except (OSError, ValueError):
        return None
    if (
        not isinstance(entry, dict)
        or entry.get("format") != FORMAT
        or hashlib.sha256(data).hexdigest() != entry.get("params_sha256")
    ):
        return None
    try:
        params = {name: _param(data, place) for name, place in entry["params"].items()}
        kernels = [KernelSource.from_json(k, k["source"]) for k in entry["kernels"]]
        graph = entry["graph"]
    except (KeyError, TypeError, ValueError):  # an entry of another shape: a miss, rebuilt
        return None
    _mark_used(json_path)
    return Built(graph, kernels, params)


def _mark_used(json_path: Path) -> None:
    """Sets the entry's mtime to now, to the nanosecond: the kernel stamps files from a coarse
    clock (milliseconds apart), too coarse to order two builds of one second."""
    now = time.time_ns()
    with suppress(OSError):
        os.utime(json_path, ns=(now, now))


def _param(data: bytes, place: Mapping[str, Any]) -> np.ndarray:
    dtype = np.dtype(place["dtype"])
    if dtype.hasobject:
        raise ValueError("a param of Python objects")
    count = int(np.prod(place["shape"], dtype=np.int64))
    return np.frombuffer(data, dtype, count, int(place["offset"])).reshape(place["shape"])
