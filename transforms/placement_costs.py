"""
Measured costs for place-by-cost: each node's time on each candidate device, and copy costs.

Node times: per candidate device, the program is built once with every free op on that
device (where its kind holds the op's element types; else on the host) and profiled
(`exe.profile`, PROFILE_RUNS runs, the least per kernel: on a shared machine the noise only
adds time, and the median of a few runs still caught other processes' bursts). A kernel's time is its fused
group's; the group's ops, followed from the relay ops that fuse-ops moved into it, share it
evenly (a group of new ops, such as combine-parallel-dense's, passes its time on to the
groups that read it). So one build and profile per device gives every group's time, and the
search sees the groups of the builds it will choose among.

A run's overhead per device (`Model.overheads`): the median wall time of `exe.run` of the same
build beyond the sum of its nodes' least times (so the prediction is of a typical run, while the
kernels compare by their least times).

Copies: a program of one copy between each pair of devices, profiled at two sizes, gives
the latency and bandwidth of that pair.

Both are cached on disk under the kernel cache's directory (`c_library.cache_dir()`, 0700,
sha256-checked entries), in `placement/`: node times per (program structure: the ops, their
types, attributes and scopes, not the constants' values; device and target; the C compiler;
the target's machine features; thread count), each with the kernel digests of its groups
(`targets.kernels.content_digest`) and their times; copy costs per (pair, features). A second
placement of the same program measures nothing.
"""

from __future__ import annotations

import hashlib
import json
import statistics
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue

from xrelay.dialects import relay
from xrelay.errors import CompileError
from xrelay.runtime import Executable
from xrelay.runtime.c_library import (
    c_compiler_version,
    cache_dir,
    cached_bytes,
    content_key,
    default_num_threads,
    store_digest,
    write_atomically,
)
from xrelay.runtime.machine import target_features
from xrelay.targets.kernels import content_digest
from xrelay.transforms.place_by_cost import graph_of, write_back
from xrelay.transforms.placement_model import CopyCost, Graph, PlacementOptions, uniform

PROFILE_RUNS = 3
COPY_SIZES = (1 << 10, 1 << 20)  # floats: the latency's and the bandwidth's


def measure(module: ModuleOp, graph: Graph, options: PlacementOptions) -> None:
    """Fills `graph`'s node times and copy costs, from the cache or by measuring."""
    threads = options.num_threads or default_num_threads()
    structure = structure_digest(module)
    groups: list[list[int]] = []
    for device in graph.candidates:
        target = graph.scopes[device].target or ""
        key = content_key("times", structure, device, target, compiler_of(target), _features(target), str(threads))
        entry = _cached(key)
        if entry is None:
            entry = measure_device(module, device, options, threads)
            _store(key, entry)
        for index, (where, seconds) in entry["times"].items():
            graph.model.nodes[int(index)].times[where] = seconds
        groups += [g["nodes"] for g in entry["groups"]]
        graph.model.overheads[device] = float(entry.get("overhead", 0.0))
    graph.model.units = units(len(graph.model.nodes), groups)
    for src in graph.candidates:
        for dst in graph.candidates:
            if src != dst:
                graph.model.copies[src, dst] = copy_cost(graph, src, dst, options, threads)


def units(count: int, groups: Sequence[Sequence[int]]) -> list[list[int]]:
    """The nodes that share a fused group in some build, joined (union-find), as lists."""
    parent = list(range(count))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for group in groups:
        for i, j in zip(group, group[1:]):
            parent[find(i)] = find(j)
    found: dict[int, list[int]] = {}
    for i in range(count):
        found.setdefault(find(i), []).append(i)
    return [members for members in found.values() if len(members) > 1]


def compiler_of(target: str) -> str:
    """What builds a target's kernels, as far as it changes their speed."""
    return c_compiler_version() if target.split()[0] == "c" else target


def _features(target: str) -> str:
    return json.dumps(target_features(target).to_json(), sort_keys=True)


# --- Node times --------------------------------------------------------------------------------


def measure_device(module: ModuleOp, device: str, options: PlacementOptions, threads: int) -> dict[str, Any]:
    """Builds the program with every free node on `device` (where it may be) and profiles it:
    {"times": {node: [device it ran on, seconds]}, "groups": [{"kernel", "seconds", "nodes"}]}."""
    from xrelay.driver import Progress, compile_module

    clone = module.clone()
    graph = graph_of(clone, options.config)
    placement = uniform(graph.model, device)
    write_back(graph, placement)
    tracked = {v.owner: i for i, v in enumerate(graph.values) if isinstance(v.owner, Operation)}
    groups: list[list[int]] = []

    def observe(name: str, m: ModuleOp) -> None:
        if name == "fuse-attention":
            groups[:] = fused_groups(m, tracked)

    default = options.config.default_scope.device
    built = compile_module(
        clone, {}, options.targets, (default, options.host_target, threads), Progress(False), observe=observe
    )
    exe = Executable(built.graph, built.kernels, built.params)
    inputs = random_inputs(built.graph, set(built.params))
    profile = exe.profile(inputs, runs=PROFILE_RUNS)
    fastest = {t.step.node: t.min_seconds for t in profile.timings}
    entry = node_times(built.graph, groups, fastest, placement, {k.name: content_digest(k) for k in built.kernels})
    entry["overhead"] = max(run_seconds(exe, inputs) - sum(fastest.values()), 0.0)
    return entry


def run_seconds(exe: Executable, inputs: Mapping[str, np.ndarray]) -> float:
    """The median wall time of `exe.run` in PROFILE_RUNS runs, after the profile warmed it."""
    times: list[float] = []
    for _ in range(PROFILE_RUNS):
        start = time.perf_counter()
        exe.run(inputs)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def fused_groups(module: ModuleOp, tracked: Mapping[Operation, int]) -> list[list[int]]:
    """The nodes in each `relay.fused` of @main, in program order."""
    from xrelay.transforms.place_by_cost import main_of

    found: list[list[int]] = []
    for op in main_of(module).body.block.ops:
        if isinstance(op, relay.FusedOp):
            found.append([tracked[inner] for inner in op.body.walk() if inner in tracked])
    return found


def node_times(
    graph: Mapping[str, Any],
    groups: list[list[int]],
    medians: Mapping[int, float],
    placement: Sequence[str],
    digests: Mapping[str, str],
) -> dict[str, Any]:
    """Each group's kernel time shared among its nodes (see the module docstring)."""
    nodes = graph["nodes"]
    launches = [i for i, n in enumerate(nodes) if n["op"] == "tvm_op" and n["name"] != "__copy"]
    if len(launches) != len(groups):
        raise CompileError(
            f"place-by-cost measured {len(launches)} kernels for {len(groups)} fused groups of @main; "
            "it cannot tell which ops a kernel's time belongs to (a program with calls between functions?)"
        )
    members = dict(zip(launches, groups))
    readers: dict[int, list[int]] = {}
    for i, n in enumerate(nodes):
        for j, _, _ in n.get("inputs", []):
            readers.setdefault(j, []).append(i)
    share: dict[int, float] = {}
    for launch in launches:
        owners = _owners(launch, members, readers)
        for node in owners:
            share[node] = share.get(node, 0.0) + medians.get(launch, 0.0) / len(owners)
    times = {str(i): [placement[i], share.get(i, 0.0)] for i in range(len(placement))}
    kernels = [
        {"kernel": digests.get(nodes[i]["attrs"]["func_name"], ""), "seconds": medians.get(i, 0.0), "nodes": members[i]}
        for i in launches
    ]
    return {"times": times, "groups": kernels}


def _owners(launch: int, members: Mapping[int, list[int]], readers: Mapping[int, list[int]]) -> list[int]:
    """The nodes of the group of `launch`, or of the first groups after it that have some."""
    frontier, seen = [launch], {launch}
    while frontier:
        found = [node for i in frontier for node in members.get(i, [])]
        if found:
            return found
        frontier = [j for i in frontier for j in readers.get(i, []) if j not in seen]
        seen.update(frontier)
    return []


def random_inputs(graph: Mapping[str, Any], params: set[str]) -> dict[str, np.ndarray]:
    """An input per graph input: normal floats, zero integers (valid indices), true bools."""
    rng = np.random.default_rng(0)
    shapes, dtypes = graph["attrs"]["shape"][1], graph["attrs"]["dltype"][1]
    inputs: dict[str, np.ndarray] = {}
    for i in graph["arg_nodes"]:
        name = graph["nodes"][i]["name"]
        if name in params:
            continue
        shape, dtype = tuple(shapes[i]), np.dtype(dtypes[i])
        if dtype.kind == "f":
            inputs[name] = rng.standard_normal(shape).astype(dtype)
        else:
            inputs[name] = (np.ones if dtype.kind == "b" else np.zeros)(shape, dtype)
    return inputs


def structure_digest(module: ModuleOp) -> str:
    """A hash of what the program computes and where, without its constants' values."""
    digest = hashlib.sha256()
    ids: dict[SSAValue, int] = {}
    for op in module.walk():
        for region in op.regions:
            for block in region.blocks:
                ids.update((arg, len(ids) + k) for k, arg in enumerate(block.args))
        ids.update((r, len(ids) + k) for k, r in enumerate(op.results))
        constant = isinstance(op, relay.ConstantOp)
        props = sorted((k, "" if constant and k == "value" else str(v)) for k, v in op.properties.items())
        attrs = sorted((k, str(v)) for k, v in op.attributes.items())
        operands = [ids.get(v, -1) for v in op.operands]
        types = [str(r.type) for r in op.results]
        digest.update(repr((op.name, props, attrs, operands, types)).encode())
    return digest.hexdigest()


# --- Copies -----------------------------------------------------------------------------------


def copy_cost(graph: Graph, src: str, dst: str, options: PlacementOptions, threads: int) -> CopyCost:
    """The latency and time per byte of copies from `src` to `dst` (cached)."""
    a, b = graph.scopes[src], graph.scopes[dst]
    key = content_key("copy", src, dst, _features(a.target or ""), _features(b.target or ""))
    entry = _cached(key)
    if entry is None:
        small, large = (copy_seconds(a.device or "", b.device or "", n, options, threads) for n in COPY_SIZES)
        per_byte = max(large - small, 0.0) / (4 * (COPY_SIZES[1] - COPY_SIZES[0]))
        entry = {"latency": max(small - 4 * COPY_SIZES[0] * per_byte, 0.0), "seconds_per_byte": per_byte}
        _store(key, entry)
    return CopyCost(float(entry["latency"]), float(entry["seconds_per_byte"]))


def copy_seconds(src: str, dst: str, floats: int, options: PlacementOptions, threads: int) -> float:
    """The least time of one copy of `floats` floats from device `src` to `dst`."""
    from xrelay.driver import build
    from xrelay.frontend.builder import Builder

    b = Builder()
    y = b.on_device(b.negative(b.input("x", (floats,))), src)
    module = b.finish(b.on_device(b.negative(y), dst))
    default = options.config.default_scope.device
    exe = build(module, options.targets, default, options.host_target, num_threads=threads)
    profile = exe.profile(x=np.ones(floats, np.float32), runs=PROFILE_RUNS * 2)
    copies = [t.min_seconds for t in profile.timings if t.step.kind == "copy"]
    return statistics.median(copies) if copies else 0.0


# --- The cache ----------------------------------------------------------------------------------


def _path(key: str) -> Path:
    directory = cache_dir() / "placement"
    directory.mkdir(mode=0o700, exist_ok=True)
    return directory / f"{key}.json"


def _cached(key: str) -> dict[str, Any] | None:
    data = cached_bytes(_path(key))
    if data is None:
        return None
    try:
        entry: Any = json.loads(data)
    except ValueError:
        return None
    return cast(dict[str, Any], entry) if isinstance(entry, dict) else None


def _store(key: str, entry: Mapping[str, Any]) -> None:
    path, data = _path(key), json.dumps(entry).encode()
    write_atomically(path, data)
    store_digest(path, data)
