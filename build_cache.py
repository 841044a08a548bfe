"""
The build cache: what `xrelay.build` made of a program before, so that building it again skips
the passes and the emitters (ResNet-50: 3.5 s of them) as the kernel cache skips gcc.

    entry = lookup(key)                  # a Built, or None
    store(key, Built(graph, kernels, params))

An entry is keyed (`build_key`) by everything the build's result depends on: the program's
text, the sha256 of each bound param, the options of `xrelay.build`, the features of each
target's machine, gcc's version, the machine, and the source of xrelay itself (an edited pass
gives new keys). It lives in the kernel cache's directory (`c_library.cache_dir()`: 0700, this
user's) as `build-KEY.json` (the graph, the kernels' metadata and sources, each param's place,
the params file's size and sha256) and `build-KEY.bin` (the params' bytes, each at a multiple
of 64 bytes). The json is written last, so a half-written entry is none. A lookup maps the
params file read-only and checks its sha256 before it is used, so a damaged one is a miss (and
rebuilt); the params are views of that mapping, which the host device runs on as they are: a
warm build reads each weight once, from the page cache, and copies none (BERT-base, 340 MB of
weights: 0.2 s and none of its memory beside the caller's). The kernels themselves are
compiled through the kernel cache as on any build.

Entries hold their params, so the cache keeps at most `XRELAY_BUILD_CACHE_MB` (default
MAX_MEGABYTES) of them: storing one removes the least recently used beyond that (a lookup
marks its entry used).

`XRELAY_BUILD_CACHE=0` turns it off (the tests do, as they patch the compiler's internals).
"""

from __future__ import annotations

import hashlib
import json
import math
import mmap
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
FORMAT = 2
ALIGNMENT = 64  # each param's offset in the params file: a cache line
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
        digest.update(_bytes_of(array))
    return digest.hexdigest()[:40]


def _bytes_of(array: np.ndarray) -> memoryview:
    return array.reshape(-1).data.cast("B")  # (reshape: a 0-d array casts too)


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
            array = np.asarray(value, order="C")  # (np.ascontiguousarray makes a 0-d param 1-d)
            places[name] = {"dtype": array.dtype.str, "shape": list(array.shape), "offset": offset}
            for data in (_bytes_of(array), memoryview(bytes(-array.nbytes % ALIGNMENT))):
                file.write(data)
                digest.update(data)
                offset += data.nbytes
    entry = {
        "format": FORMAT,
        "graph": built.graph,
        "kernels": [{**k.to_json(), "source": k.source} for k in built.kernels],
        "params": places,
        "params_bytes": offset,
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
        if not isinstance(entry, dict) or entry.get("format") != FORMAT:
            return None
        data = _checked_params(bin_path, int(entry["params_bytes"]), str(entry["params_sha256"]))
        if data is None:
            return None
        params = {name: _param(data, place) for name, place in entry["params"].items()}
        kernels = [KernelSource.from_json(k, k["source"]) for k in entry["kernels"]]
        graph = entry["graph"]
    except (OSError, KeyError, TypeError, ValueError, AttributeError):  # none, or of another shape: a miss
        return None
    _mark_used(json_path)
    return Built(graph, kernels, params)


def _checked_params(path: Path, nbytes: int, sha256: str) -> mmap.mmap | bytes | None:
    """The params file, mapped read-only, if it has `nbytes` bytes of that sha256 (hashed
    straight from the page cache: reading it into fresh memory faulted in its pages, as
    long again as the hash and at times 0.5 s more); None when it does not check.
    (xrelay replaces an entry's files and never writes into them, so the mapped bytes stay
    those checked; another program that truncated one in place would stop its users.)"""
    with open(path, "rb") as file:
        if os.fstat(file.fileno()).st_size != nbytes:
            return None
        data = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) if nbytes else b""
    return data if hashlib.sha256(data).hexdigest() == sha256 else None


def _mark_used(json_path: Path) -> None:
    """Sets the entry's mtime to now, to the nanosecond: the kernel stamps files from a coarse
    clock (milliseconds apart), too coarse to order two builds of one second."""
    now = time.time_ns()
    with suppress(OSError):
        os.utime(json_path, ns=(now, now))


def _param(data: mmap.mmap | bytes, place: Mapping[str, Any]) -> np.ndarray:
    """A param's read-only view of the params file, which it must lie in, at its alignment."""
    dtype = np.dtype(place["dtype"])
    if dtype.hasobject:
        raise ValueError("a param of Python objects")
    shape, offset = tuple(int(n) for n in place["shape"]), int(place["offset"])
    count = math.prod(shape)
    if offset < 0 or offset % ALIGNMENT or min(shape, default=0) < 0 or offset + count * dtype.itemsize > len(data):
        raise ValueError(f"a param outside the params' {len(data)} bytes")
    return np.frombuffer(data, dtype, count, offset).reshape(shape)
