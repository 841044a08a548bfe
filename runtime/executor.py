"""
The graph executor: runs an executor graph (the `-t graph-json` object) on a list of devices.

Minimal on purpose, like TVM's heterogeneous graph runtime: the compiler decided devices,
copies and storage, and the executor only carries them out.

1. Storages: one per storage id, on the device of the entries stored there (a storage id
   belongs to one device; a graph that says otherwise is rejected), sized for the largest
   (an entry starts at its `storage_offset`, 0 where the graph has no such column).
2. Every `tvm_op` node is resolved once: `__copy` to a copy between its two devices, `__nop`
   (a reshape-only node, as in TVM, or a concatenation its inputs' producers wrote in place)
   to nothing at all: its entry is its inputs' bytes, end to end in one storage, which the
   graph must give it (checked), any other `func_name` to the kernel of
   that name *of the node's device* (so two devices may have kernels of the same name).
3. A *workspace* is what one run needs for itself: a buffer per storage, every entry as a
   typed view at its offset in its storage's buffer, and every node bound to those views
   once, so running a node is one call (each input's write and each result's read too).
4. What runs at the same time (`Schedule`, computed once at load). Each kernel or copy node
   runs on a *lane*: the calling thread (HOST: a kernel of a device of host memory, a copy
   between host memories, a copy between two queued devices, which their queues order
   themselves), or a queued device's in-order queue (its kernels, and a copy between it and
   host memory, started there without the host waiting). The nodes' hazards on storages
   make a DAG: a node comes after the last writer of each storage it reads, and after the
   last writer and every reader since of the storage it writes, in program order. The nodes
   are issued once per run in one topological order of it: every ready queue node that
   needs no wait first (enqueuing takes microseconds), then the host's ready node that needs
   none, else the first ready in program order. The host waits for a started copy only
   before a node of another lane that depends on it (a host kernel reading what the copy
   brought, or overwriting what it still reads). So, precisely: a queue runs its nodes one
   after the other in issue order, the host runs its own one after the other, and a node
   starts when its lane is free and its DAG predecessors on other lanes are done; a run
   ends when every lane is done and the results are read. Its predicted time is the
   longest path through the DAG with each node's time on its lane and each lane serial (a
   copy's time on its queue). A cpu kernel thus runs while an OpenCL queue runs what was
   enqueued before it, and independent branches on the two overlap. Where the queued
   device's workers are pinned (PoCL's), the host's thread keeps to the other cores during
   such a run (`GraphExecutor.host_cores`). The order keeps every storage hazard, so the
   plan's reuse of a storage (within a device, and across a copy) stays safe.
5. `run` takes a free workspace (or makes one) and, with every device that has a queue held
   back (`Device.hold`), starts the inputs' writes, issues the nodes and starts the results'
   reads (after waiting for the copy that brought a result to host memory, if one did); it
   releases the devices before its first host work (a C kernel or a wait), so
   that the devices work meanwhile, and waits at the end. Calls from several threads at
   once each run in a workspace of their own (holds on a shared queue just queue one behind
   the other; a run never waits while it holds a queue); workspaces are kept for the next
   calls, so there are as many as there were concurrent runs at most.
6. `profile` runs a workspace N times as `run` does and hands each node's span to
   `xrelay.runtime.profiling.Profile` (per-node min and median, copies, waits, a trace
   that shows the overlap): a host node timed on the host, a queued node by its device's
   own timing of it (`Device.event_span`, OpenCL profiling events).

Shared between workspaces, read-only while running: the graph, the devices and their queues,
the built kernels, and the params' storages (a param is written once, when the storage holds
nothing else, as plan-memory plans it; on a device of host memory an immutable param is that
storage itself, see `GraphExecutor.share`). Everything a run writes is its workspace's own.

`devices[i]` is the device of `device_index` i, the graph's `devices[i]` entry
(`{"kind": "opencl", "id": 1, "target": "opencl", "memory": "global"}`); `devices[0]` is the
primary device, used for every entry when the graph has no `device_index` column.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Callable, Generator, Mapping, Sequence, Set
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from xrelay.errors import DeviceError, InputError, UsageError
from xrelay.runtime import c_steps
from xrelay.runtime.device import Device, Kernel, Tensor, Wait, done
from xrelay.runtime.profiling import Profile, Span, Step

COPY = "__copy"
NOP = "__nop"
HOST = -1  # the lane of the nodes the calling thread runs itself (see `Schedule`)


@dataclass(frozen=True)
class Entry:
    """One tensor of the graph: its storage, shape, dtype, device index, and its first byte
    in its storage."""

    storage: int
    shape: tuple[int, ...]
    dtype: np.dtype
    device: int
    offset: int = 0

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * self.dtype.itemsize  # Python ints: no int64 overflow


class GraphExecutor:
    """Runs `graph` on `devices` with `kernels[i]` the kernels of device i, by name."""

    def __init__(
        self,
        graph: Mapping[str, Any],
        devices: Sequence[Device],
        kernels: Sequence[Mapping[str, Kernel]],
        params: Mapping[str, np.ndarray] | None = None,
        param_buffers: dict[tuple[int, str, int], Any] | None = None,
    ):
        if not devices:
            raise DeviceError("the graph executor needs at least one device (the primary one)")
        self.graph, self.devices = graph, list(devices)
        self.nodes: list[dict[str, Any]] = list(graph["nodes"])
        self.entries = _entries(graph, len(self.devices))
        self.labels = _labels(graph, self.devices)
        self.storage_devices, self.storage_sizes = self._storages()
        self.params = dict(params or {})
        # The params' buffers by (device index, name, storage bytes), which executors of
        # graphs that share params and devices (one per batch size) share too.
        self.param_buffers = {} if param_buffers is None else param_buffers
        is_param = [n["op"] == "null" and n["name"] in self.params for n in self.nodes]
        self.inputs = {n["name"]: i for i, n in enumerate(self.nodes) if n["op"] == "null" and not is_param[i]}
        self.heads: list[int] = [h[0] for h in graph["heads"]]
        self._check_nops()
        nodes = [(self._func_name(i), i) for i, n in enumerate(self.nodes) if n["op"] != "null"]
        self.steps = [(name, i) for name, i in nodes if name != NOP]
        self.kernels = {i: self._kernel(i, kernels) for name, i in self.steps if name != COPY}
        self.shared = self._shared_params(is_param)
        self.schedule = Schedule.of(self)
        self.host_cores = self._host_cores()
        self._free = [Workspace(self)]  # the first one now: binding errors show at load
        self._free[0].warm_up()
        self._lock = threading.Lock()

    # --- set-up --------------------------------------------------------------------------

    def _storages(self) -> tuple[dict[int, int], dict[int, int]]:
        """The device and size of each storage id."""
        sizes: dict[int, int] = {}
        device_of: dict[int, int] = {}
        for e in self.entries:
            if device_of.setdefault(e.storage, e.device) != e.device:
                raise DeviceError(
                    f"malformed graph: storage {e.storage} is used on devices {self.labels[device_of[e.storage]]} "
                    f"and {self.labels[e.device]}; a storage id belongs to one device"
                )
            sizes[e.storage] = max(sizes.get(e.storage, 0), e.offset + e.nbytes)
        self._check_memory(device_of, sizes)
        return device_of, sizes

    def _check_memory(self, device_of: dict[int, int], sizes: dict[int, int]) -> None:
        """Every buffer, and each device's buffers together, fit the device's memory."""
        totals = [0] * len(self.devices)
        limits = [d.memory_limits() for d in self.devices]  # (the host's: files read each time)
        for index, e in enumerate(self.entries):
            limit = limits[e.device].buffer
            if limit is not None and e.nbytes > limit:
                raise DeviceError(
                    f"{self._describe(index)} takes {_bytes(e.nbytes)}, but device {self.labels[e.device]} "
                    f"allocates at most {_bytes(limit)} in one buffer; make the tensor smaller"
                )
        for sid, nbytes in sizes.items():
            totals[device_of[sid]] += nbytes
        for device, total in enumerate(totals):
            limit = limits[device].total
            if limit is not None and total > limit:
                raise DeviceError(
                    f"the program needs {_bytes(total)} on device {self.labels[device]}, which has "
                    f"{_bytes(limit)}; place part of it on another device or make it smaller"
                )

    def _check_nops(self) -> None:
        """Each `__nop` node's entry is its inputs' bytes, end to end from its offset in their
        storage: a reshape's its input's, read another way; a concatenation's its slices."""
        for index, node in enumerate(self.nodes):
            if node["op"] == "null" or self._func_name(index) != NOP:
                continue
            entry, at = self.entries[index], self.entries[index].offset
            for i, *_ in node["inputs"]:
                source = self.entries[int(i)]
                if (source.storage, source.offset, source.dtype) != (entry.storage, at, entry.dtype):
                    raise DeviceError(
                        f"malformed graph: {NOP} node {index} ({node['name']}) must view its inputs' bytes in "
                        f"storage {entry.storage}, input node {i} at byte {at} as {entry.dtype}, but that input "
                        f"is storage {source.storage} at byte {source.offset} as {source.dtype}"
                    )
                at += source.nbytes
            if at != entry.offset + entry.nbytes:
                raise DeviceError(
                    f"malformed graph: {NOP} node {index} ({node['name']}) has {entry.nbytes} bytes, but its "
                    f"inputs have {at - entry.offset}"
                )

    def _describe(self, index: int) -> str:
        node = self.nodes[index]
        what = "input" if node["op"] == "null" else "the result of"
        return f"{what} {node['name']} (node {index}, shape {list(self.entries[index].shape)})"

    def _func_name(self, index: int) -> str:
        node = self.nodes[index]
        return node.get("attrs", {}).get("func_name", node["name"])

    def _kernel(self, index: int, kernels: Sequence[Mapping[str, Kernel]]) -> Kernel:
        node, device, func_name = self.nodes[index], self.entries[index].device, self._func_name(index)
        kernel = kernels[device].get(func_name) if device < len(kernels) else None
        if kernel is None:
            raise DeviceError(
                f"node {index} ({node['name']}) calls kernel {func_name}, which device "
                f"{self.labels[device]} does not have"
            )
        return kernel

    def _shared_params(self, is_param: list[bool]) -> dict[int, Any]:
        """Buffers of the storages that hold params (and `__nop` views of them) and nothing
        else, written once for all workspaces (a param sharing its storage with another tensor
        is written per workspace)."""
        nops = {i for i, n in enumerate(self.nodes) if n["op"] != "null" and self._func_name(i) == NOP}
        others = {e.storage for i, (e, param) in enumerate(zip(self.entries, is_param)) if not param and i not in nops}
        shared: dict[int, Any] = {}
        for index in (i for i, param in enumerate(is_param) if param):
            sid = self.entries[index].storage
            if sid in others:
                continue
            key = (self.entries[index].device, self.nodes[index]["name"], self.storage_sizes[sid])
            buffer = self.share(index, sid)
            if buffer is None:
                buffer = self.param_buffers.get(key)
            if buffer is None:
                buffer = self.param_buffers[key] = self.alloc(sid)
                self.write(index, self.view(index, buffer), self.param(index))
            shared[sid] = buffer
        return shared

    def share(self, index: int, sid: int) -> Any | None:
        """The param of node `index` as the buffer of its storage `sid`, uncopied, where its
        device reads host memory in place (`Device.share`) and nothing can change the param
        (`immutable`): a built model's weights then live once in the process, not also in a
        copy (BERT-base: 340 MB). None: the storage is allocated and the param written."""
        array, entry = self.param(index), self.entries[index]
        if array.dtype != entry.dtype or array.shape != entry.shape or array.nbytes < self.storage_sizes[sid]:
            return None
        return self.devices[entry.device].share(array) if immutable(array) else None

    def alloc(self, sid: int) -> Any:
        return self.devices[self.storage_devices[sid]].alloc(max(self.storage_sizes[sid], 1))

    def view(self, index: int, buffer: Any) -> Tensor:
        e = self.entries[index]
        return self.devices[e.device].tensor(buffer, e.shape, e.dtype, e.offset)

    def param(self, index: int) -> np.ndarray:
        return np.asarray(self.params[self.nodes[index]["name"]])

    def write(self, index: int, tensor: Tensor, array: np.ndarray, what: str | None = None) -> None:
        entry = self.entries[index]
        if array.shape != entry.shape:
            what = what or f"param {self.nodes[index]['name']}"
            raise InputError(f"{what} must have shape {list(entry.shape)}, but has shape {list(array.shape)}")
        self.devices[entry.device].write(tensor, _contiguous(array, entry.dtype))

    def _host_cores(self) -> frozenset[int] | None:
        """The cores the calling thread keeps to during a run where a host kernel may overlap a
        kernel of a queued device with pinned workers (neither depends on the other): the
        usable cores those workers leave (PoCL on 1 pinned thread of 2 cores: the other). Left
        to the OS, the host's thread was woken onto the worker's core under load and waited
        there for the device's work to end (the branchy model, C and PoCL on 1 thread each,
        machine load 8: release of the hold 10 us pinned, 510-750 us not; a run 0.77 / 1.10 /
        1.97 ms pinned, 1.43 / 1.11 / 2.68 ms not, in three pairs of processes). A model whose
        devices take turns is not pinned: there it only kept the host off a free core (the
        zoo's transformer and ResNet block split at 1 thread, load 7.5: p10 1.55 and 1.66 ms
        pinned, 1.47 and 1.48 not). None: no pinning."""
        lanes = self.schedule.lanes
        kernels = [k for k, (name, _) in enumerate(self.steps) if name != COPY]
        queued = [k for k in kernels if lanes[k] != HOST and self.devices[lanes[k]].worker_cores]
        hosts = [k for k in kernels if lanes[k] == HOST]
        if not queued or not hosts:
            return None
        overlapping = independent(hosts, queued, self.schedule.deps)
        taken = frozenset[int]().union(*(self.devices[lanes[k]].worker_cores for k in overlapping))
        left = frozenset(os.sched_getaffinity(0)) - taken if hasattr(os, "sched_getaffinity") else frozenset[int]()
        return left if taken and left else None

    # --- running ---------------------------------------------------------------------------

    @contextmanager
    def workspace(self) -> Generator[Workspace, None, None]:
        """A workspace no other call is using, for the duration of the block."""
        with self._lock:
            workspace = self._free.pop() if self._free else None
        workspace = workspace or Workspace(self)
        try:
            yield workspace
        finally:
            with self._lock:
                self._free.append(workspace)

    def run(self, inputs: Mapping[str, Any]) -> list[np.ndarray]:
        """Runs the graph on `inputs` (by name) and returns fresh arrays of its results."""
        arrays = self.check_inputs(inputs)
        with self.workspace() as workspace:
            if self.host_cores is None:
                return workspace.execute(arrays)
            with keep_to(self.host_cores):
                return workspace.execute(arrays)

    def profile(self, inputs: Mapping[str, Any], runs: int = 1) -> Profile:
        """Runs `runs` times as `run` does (the inputs written before each), timing each node
        (`Workspace.timed_run`), and reports what the runs did (`xrelay.runtime.profiling`);
        the outputs are the last run's."""
        if isinstance(runs, bool) or not isinstance(runs, int) or runs < 1:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise UsageError(f"profile(runs=...) takes a number of runs of at least 1, but was given {runs!r}")
        arrays = self.check_inputs(inputs)
        spans: list[list[Span]] = []
        with self.workspace() as workspace:
            origin = time.perf_counter()
            for _ in range(runs):
                workspace.write_inputs(arrays)  # plan-memory may reuse an input's storage
                with keep_to(self.host_cores):
                    spans.append(workspace.timed_run(origin))
            outputs = workspace.outputs()
        tracks = [f"{label} ({device.name})" for label, device in zip(self.labels, self.devices)]
        profile = Profile.of_runs(self.profile_steps(), spans, self.labels, tracks)
        profile.outputs, profile.pool_bytes = outputs, self.pool_bytes()
        profile.activation_bytes = self.activation_bytes()
        return profile

    def profile_steps(self) -> list[Step]:
        """Each kernel and copy node, in execution order, as a profile shows it."""
        return [self._step(func_name, index) for func_name, index in self.steps]

    def _step(self, func_name: str, index: int) -> Step:
        entry, node = self.entries[index], self.nodes[index]
        inputs = tuple(self.entries[int(i)].shape for i, *_ in node["inputs"])
        source = self.entries[self.copy_source(index)].device if func_name == COPY else None
        return Step(
            node=index,
            name=node["name"],
            kind="copy" if func_name == COPY else "kernel",
            device=entry.device,
            label=self.labels[entry.device],
            shape=entry.shape,
            dtype=str(entry.dtype),
            nbytes=entry.nbytes,
            input_shapes=inputs,
            source=None if source is None else self.labels[source],
            source_device=source,
        )

    def check_inputs(self, inputs: Mapping[str, Any]) -> dict[int, np.ndarray]:
        """The inputs as arrays by entry, after checking their names, shapes and dtypes."""
        if inputs.keys() != self.inputs.keys():
            names = list(self.inputs)
            missing = [n for n in names if n not in inputs]
            unknown = [n for n in inputs if n not in self.inputs]
            raise InputError(
                f"the program takes inputs {', '.join(names)}; "
                + "; ".join(
                    filter(
                        None,
                        [
                            f"missing {', '.join(missing)}" if missing else "",
                            f"unknown {', '.join(repr(n) for n in unknown)}" if unknown else "",
                        ],
                    )
                )
            )
        return {index: self._checked(name, index, inputs[name]) for name, index in self.inputs.items()}

    def _checked(self, name: str, index: int, value: Any) -> np.ndarray:
        entry, array = self.entries[index], np.asarray(value)
        if array.shape != entry.shape:
            raise InputError(f"input {name} must have shape {list(entry.shape)}, but has shape {list(array.shape)}")
        if array.dtype != entry.dtype:
            raise InputError(
                f"input {name} must have dtype {entry.dtype}, but has dtype {array.dtype}; "
                f"convert it with .astype(np.{entry.dtype})"
            )
        return array

    def copy_source(self, index: int) -> int:
        """The entry that the `__copy` node `index` copies from."""
        return self.nodes[index]["inputs"][0][0]

    def pool_bytes(self) -> dict[str, int]:
        """Bytes allocated per device for one workspace and the shared params (the plan is
        static, so this is also the peak of one run)."""
        totals = {label: 0 for label in self.labels}
        for sid, nbytes in self.storage_sizes.items():
            totals[self.labels[self.storage_devices[sid]]] += nbytes
        return totals

    def activation_bytes(self) -> dict[str, int]:
        """Bytes per device of one workspace alone, the params left out: the peak memory a run
        needs for inputs, intermediates and outputs (the plan is static)."""
        totals = {label: 0 for label in self.labels}
        for sid, nbytes in self.storage_sizes.items():
            if sid not in self.shared:
                totals[self.labels[self.storage_devices[sid]]] += nbytes
        return totals


@dataclass(frozen=True)
class Schedule:
    """When each node of `GraphExecutor.steps` is issued, on which lane, and what the host
    waits for before it (see the module docstring, item 4). Positions are indices into
    `steps`; a lane is HOST or the index of a queued device (its first, where two indices
    are one device)."""

    order: tuple[int, ...]  # positions, in issue order
    lanes: tuple[int, ...]  # by position
    deps: tuple[frozenset[int], ...]  # by position: the positions it must come after
    waits: Mapping[int, tuple[int, ...]]  # position -> the started copies the host waits for first
    slots: Mapping[int, int]  # a started copy's position -> its slot in a workspace's `pending`
    final: tuple[int, ...]  # slots nothing waits for, nor a result's read after them: waited last
    # slots of the copies that last write a result in host memory: waited before it is read
    before_reads: tuple[int, ...] = ()

    @classmethod
    def of(cls, ex: GraphExecutor) -> Schedule:
        lanes = tuple(_lane(ex, name, index) for name, index in ex.steps)
        deps = tuple(frozenset(d) for d in hazards(*_accesses(ex)))
        started = [k for k, (name, _) in enumerate(ex.steps) if name == COPY and lanes[k] != HOST]
        peers = {k for k in range(len(lanes)) if _peer_copy(ex, k)}
        order, waits, known_done = issue_plan(deps, lanes, set(started), peers)
        known_done_slots = {slot for slot, k in enumerate(started) if k in known_done}
        slots = {k: slot for slot, k in enumerate(started)}
        writer = {ex.entries[index].storage: k for k, (_, index) in enumerate(ex.steps)}  # the last
        host_heads = [ex.entries[h].storage for h in ex.heads if ex.devices[ex.entries[h].device].host_memory]
        before_reads = sorted({slots[writer[s]] for s in host_heads if writer.get(s) in slots} - known_done_slots)
        read = {_queue_lane(ex, ex.entries[h].device) for h in ex.heads}  # queues the run waits for last
        final = tuple(slots[k] for k in started if k not in known_done and lanes[k] not in read)
        final = tuple(slot for slot in final if slot not in before_reads)
        return cls(tuple(order), lanes, deps, waits, slots, final, tuple(before_reads))


def _lane(ex: GraphExecutor, func_name: str, index: int) -> int:
    """HOST for a node the calling thread runs; else the queued device whose queue runs it."""
    dst = ex.entries[index].device
    src = ex.entries[ex.copy_source(index)].device if func_name == COPY else dst
    queued = [d for d in (src, dst) if not ex.devices[d].host_memory]
    if not queued or (func_name == COPY and len(queued) == 2):
        return HOST  # host memory alone, or two queues (`Device.copy_peer` orders the copy)
    return _queue_lane(ex, queued[0])


def _queue_lane(ex: GraphExecutor, device: int) -> int:
    """The lane of device index `device`: HOST for host memory, else the first index of its device."""
    if ex.devices[device].host_memory:
        return HOST
    return next(i for i, d in enumerate(ex.devices) if d is ex.devices[device])


def _peer_copy(ex: GraphExecutor, position: int) -> bool:
    """Whether step `position` copies between two queued devices (their queues order it)."""
    name, index = ex.steps[position]
    if name != COPY:
        return False
    src, dst = ex.entries[ex.copy_source(index)].device, ex.entries[index].device
    return not ex.devices[src].host_memory and not ex.devices[dst].host_memory


def _accesses(ex: GraphExecutor) -> tuple[list[list[int]], list[int]]:
    """The storages each step reads, and the storage it writes, by position."""
    reads = [[ex.entries[int(i)].storage for i, *_ in ex.nodes[index]["inputs"]] for _, index in ex.steps]
    return reads, [ex.entries[index].storage for _, index in ex.steps]


def hazards(reads: Sequence[Sequence[int]], writes: Sequence[int]) -> list[set[int]]:
    """For each step (in program order) the earlier steps it must come after: the last
    writer of each storage it reads, and the last writer and every reader since of the
    storage it writes."""
    last_writer: dict[int, int] = {}
    readers: dict[int, list[int]] = {}
    deps: list[set[int]] = []
    for k, (read, write) in enumerate(zip(reads, writes)):
        mine = {last_writer[s] for s in read if s in last_writer}
        mine.update(readers.get(write, ()))
        if write in last_writer:
            mine.add(last_writer[write])
        mine.discard(k)
        deps.append(mine)
        for s in read:
            readers.setdefault(s, []).append(k)
        last_writer[write], readers[write] = k, []
    return deps


def independent(hosts: Sequence[int], queued: Sequence[int], deps: Sequence[frozenset[int]]) -> list[int]:
    """The nodes of `queued` that some node of `hosts` neither depends on nor is depended on
    by, through the DAG `deps` (each node's predecessors come before it): those that may run
    at the same time as a host node."""
    before = [0] * len(deps)  # ancestors, as bit sets
    for k, mine in enumerate(deps):
        for d in mine:
            before[k] |= before[d] | 1 << d
    after = [0] * len(deps)  # descendants
    for k in reversed(range(len(deps))):
        for d in deps[k]:
            after[d] |= after[k] | 1 << k
    related = [before[h] | after[h] | 1 << h for h in hosts]
    return [q for q in queued if any(not r >> q & 1 for r in related)]


def issue_plan(
    deps: Sequence[frozenset[int]], lanes: Sequence[int], started: Set[int], peers: Set[int]
) -> tuple[list[int], dict[int, tuple[int, ...]], set[int]]:
    """`issue_order` of steps whose `started` ones are copies a queue runs without the host
    waiting: a step waits for such a copy of another lane that it depends on, unless it is
    one of `peers` (a copy between two queues, which they order). The rules of item 4, for
    `Schedule.of` and for place-by-cost's prediction of a placed graph (`replay`)."""
    needs = {
        k: tuple(sorted(d for d in deps[k] if d in started and lanes[d] != lanes[k]))
        for k in range(len(lanes))
        if k not in peers
    }
    return issue_order(deps, lanes, {k: w for k, w in needs.items() if w})


def replay(
    order: Sequence[int],
    lanes: Sequence[int],
    deps: Sequence[frozenset[int]],
    waits: Mapping[int, tuple[int, ...]],
    seconds: Sequence[float],
) -> tuple[list[float], dict[int, float]]:
    """When each step ends, and when each lane is free, if step k takes `seconds[k]` and the
    host issues the steps in `order` (from `issue_plan`): before a step the host waits for
    its `waits`; a step starts when its lane is free, its predecessors have ended and (a
    queued one) the host has issued it, so a queue never runs ahead of the host's issuing."""
    host, free, end = 0.0, {HOST: 0.0}, [0.0] * len(lanes)
    for k in order:
        host = max([host, *(end[w] for w in waits.get(k, ()))])
        begin = max([host, free.get(lanes[k], 0.0), *(end[d] for d in deps[k])])
        end[k] = free[lanes[k]] = begin + seconds[k]
        if lanes[k] == HOST:
            host = end[k]
    free[HOST] = host
    return end, free


def issue_order(
    deps: Sequence[frozenset[int]], lanes: Sequence[int], needs: Mapping[int, tuple[int, ...]]
) -> tuple[list[int], dict[int, tuple[int, ...]], set[int]]:
    """A topological order of the DAG `deps` that issues every ready queued node that needs
    no wait first, then the ready node that needs none, else the first in program order;
    the waits each node still needs when it is issued (`needs` less those known done: the
    host's wait for a copy means its queue did all it was given before it); and the copies
    known done at the end."""
    dependents: list[list[int]] = [[] for _ in deps]
    for k, mine in enumerate(deps):
        for d in mine:
            dependents[d].append(k)
    missing = [len(d) for d in deps]
    ready = [k for k, m in enumerate(missing) if not m]
    issued: dict[int, int] = {}  # position -> its place in the order
    done_upto: dict[int, int] = {}  # lane -> the place up to which its work is known done

    def pending(k: int) -> tuple[int, ...]:
        return tuple(w for w in needs.get(k, ()) if issued[w] > done_upto.get(lanes[w], -1))

    order: list[int] = []
    waits: dict[int, tuple[int, ...]] = {}
    while ready:
        k = min(ready, key=lambda k: (lanes[k] == HOST or bool(pending(k)), bool(pending(k)), k))
        ready.remove(k)
        if pending(k):
            waits[k] = pending(k)
            for w in waits[k]:
                done_upto[lanes[w]] = max(done_upto.get(lanes[w], -1), issued[w])
        issued[k] = len(order)
        order.append(k)
        for j in dependents[k]:
            missing[j] -= 1
            if not missing[j]:
                ready.append(j)
    known = {k for k, place in issued.items() if lanes[k] != HOST and place <= done_upto.get(lanes[k], -1)}
    return order, waits, known


class Workspace:
    """One run's storage: a buffer per storage id (the shared params' aside), a view per entry,
    and every node bound to its views."""

    def __init__(self, executor: GraphExecutor):
        self.executor = ex = executor
        pools = {sid: ex.shared[sid] if sid in ex.shared else ex.alloc(sid) for sid in ex.storage_sizes}
        self.tensors = [ex.view(i, pools[e.storage]) for i, e in enumerate(ex.entries)]
        for index, node in enumerate(ex.nodes):
            if node["op"] == "null" and node["name"] in ex.params and ex.entries[index].storage not in ex.shared:
                ex.write(index, self.tensors[index], ex.param(index))
        self.queued = list({id(d): d for d in ex.devices if not d.host_memory}.values())
        self.releases: list[Wait] = []  # the holds of the run in progress
        self.pending: list[Wait] = [done] * len(ex.schedule.slots)  # the run's started copies
        self.steps = [self._bind(name, index, k) for k, (name, index) in enumerate(ex.steps)]
        self.plan = self._plan()
        # what `run` calls: consecutive C kernels in one ctypes call each (`c_steps`)
        self.runs = c_steps.batched([call for _, call in self.plan])
        self.writers = {index: self._writer(index) for index in ex.inputs.values()}
        self.readers = [self._reader(head) for head in ex.heads]

    def _writer(self, index: int) -> Callable[[np.ndarray], Wait]:
        """Starts writing a checked input (its shape and dtype the entry's) into entry `index`."""
        ex, tensor = self.executor, self.tensors[index]
        entry = ex.entries[index]
        device = ex.devices[entry.device]
        if device.host_memory:

            def copy(array: np.ndarray) -> Wait:
                np.copyto(tensor, array)  # (any strides: copyto reads them)
                return done

            return copy
        return lambda array: device.start_write(tensor, _contiguous(array, entry.dtype))

    def _reader(self, head: int) -> Callable[[], tuple[np.ndarray, Wait]]:
        """Starts reading entry `head` into a fresh host array: the array and its wait."""
        ex, tensor = self.executor, self.tensors[head]
        entry = ex.entries[head]
        device = ex.devices[entry.device]
        if device.host_memory:
            return lambda: (np.array(tensor, copy=True), done)

        def read() -> tuple[np.ndarray, Wait]:
            out = np.empty(entry.shape, entry.dtype)
            return out, device.start_read(tensor, out)

        return read

    def _plan(self) -> list[tuple[int | None, Callable[[], Any]]]:
        """The calls of a run in the schedule's order: (position, its node's call), and
        (None, a wait) where the host waits for started copies, or releases the queues
        before its first work of its own."""
        schedule = self.executor.schedule
        released = not self.queued
        plan: list[tuple[int | None, Callable[[], Any]]] = []
        for k in schedule.order:
            waits = schedule.waits.get(k, ())
            if waits or (not released and schedule.lanes[k] == HOST):
                plan.append((None, partial(self._wait, tuple(schedule.slots[w] for w in waits))))
                released = True
            plan.append((k, self.steps[k]))
        return plan

    def _wait(self, slots: tuple[int, ...]) -> None:
        """Releases the run's holds, then waits for the started copies in `slots`."""
        self._release()
        for slot in slots:
            self.pending[slot]()

    def _bind(self, func_name: str, index: int, position: int) -> Callable[[], Any]:
        ex = self.executor
        inputs = [i for i, _, _ in ex.nodes[index]["inputs"]]
        if func_name == COPY:
            return self._copier(inputs[0], index, ex.schedule.slots.get(position))
        device = ex.devices[ex.entries[index].device]
        return device.bind(ex.kernels[index], [self.tensors[i] for i in inputs] + [self.tensors[index]])

    def _copier(self, src: int, dst: int, slot: int | None) -> Callable[[], Any]:
        """A copy from entry `src` to entry `dst`: direct when a device can, else through the
        host. A copy between host memory and a queue is started, its wait kept in
        `pending[slot]` (and returned)."""
        ex, pending = self.executor, self.pending
        s_dev, d_dev = ex.devices[ex.entries[src].device], ex.devices[ex.entries[dst].device]
        s, d, nbytes = self.tensors[src], self.tensors[dst], ex.entries[dst].nbytes
        if d_dev.host_memory and s_dev.host_memory:
            return lambda: np.copyto(d, s)
        if slot is not None:
            start = partial(d_dev.start_write, d, s) if s_dev.host_memory else partial(s_dev.start_read, s, d)

            def started() -> Wait:
                wait = pending[slot] = start()
                return wait

            return started
        staging = np.empty(ex.entries[dst].shape, ex.entries[dst].dtype)

        def through_host() -> None:
            s_dev.read(s, staging)
            d_dev.write(d, staging)

        def copy() -> None:
            if not d_dev.copy_peer(d, s_dev, s, nbytes):
                self._released(through_host)

        return copy

    def warm_up(self) -> None:
        """Launches once each kernel of a device that compiles kernels at their first launch,
        on this workspace's (unset) buffers, which every run overwrites before it reads them."""
        ex = self.executor
        cold = {
            ex.entries[i].device
            for name, i in ex.steps
            if name != COPY and ex.devices[ex.entries[i].device].compiles_at_first_launch
        }
        for (name, index), step in zip(ex.steps, self.steps):
            if name != COPY and ex.entries[index].device in cold:
                step()
        for device in cold:
            ex.devices[device].sync()

    def execute(self, arrays: Mapping[int, np.ndarray]) -> list[np.ndarray]:
        """One run on the inputs `GraphExecutor.check_inputs` checked: with every queued device
        held, starts the inputs' writes, queues the nodes and starts the results' reads, then
        releases the devices (before, if the host has work of its own) and waits once.
        Returns fresh result arrays.

        The host waits for the reads first, the run's last work, and then for the writes,
        done by then. Waiting for an input's write first put the host to sleep on it, and
        PoCL's worker paid to wake it (a futex wake, 8-15 us in this VM) before it started
        the first kernel. Runs alternating the two orders in one process, PoCL on one thread:
        the CNN of bench/models.py 0.96-0.97x the time (203 -> 195 us), a graph of one small
        kernel 0.62-0.69x; on two threads, where the host sleeps at once, 0.99x and 1.04-1.06x."""
        self._hold()
        try:
            writes = [self.writers[index](array) for index, array in arrays.items()]
            self.run()
            if self.executor.schedule.before_reads:
                self._wait(self.executor.schedule.before_reads)
            reads = [read() for read in self.readers]
        finally:
            self._release()
        for _, wait in reads:
            wait()
        for wait in writes:
            wait()
        self._wait_final()
        return [out for out, _ in reads]

    def _wait_final(self) -> None:
        """Waits for the run's started copies that nothing waited for (done by now, mostly)."""
        for slot in self.executor.schedule.final:
            self.pending[slot]()

    def write_inputs(self, arrays: Mapping[int, np.ndarray]) -> None:
        """Writes the inputs `GraphExecutor.check_inputs` checked."""
        for index, array in arrays.items():
            self.writers[index](array)()

    def run(self) -> None:
        """Calls the bound nodes in the schedule's order (runs of C kernels in one call each)."""
        for step in self.runs:
            step()

    def outputs(self) -> list[np.ndarray]:
        """Fresh host arrays holding the graph's results."""
        reads = [read() for read in self.readers]
        for _, wait in reads:
            wait()
        return [out for out, _ in reads]

    def _hold(self) -> None:
        self.releases = [device.hold() for device in self.queued]

    def _release(self) -> None:
        releases, self.releases = self.releases, []
        for release in releases:
            release()

    def _released(self, work: Callable[[], None]) -> None:
        """Releases the run's holds, then calls `work`: host work that waits (a copy through
        host memory), while the queued devices do theirs. A run holds its queues only while
        it just queues work."""
        self._release()
        work()

    def timed_run(self, origin: float) -> list[Span]:
        """Runs once as `execute` does (the inputs written before); the (start, end) of each
        node in seconds since `origin`, by position in `steps`: a host node's on the host's
        clock, a queued node's as its device timed it (`Device.event_span`; where it does
        not, the time it took to queue it)."""
        ex, spans = self.executor, [(0.0, 0.0)] * len(self.steps)
        started: dict[int, Any] = {}
        self._hold()
        try:
            for position, call in self.plan:
                start = time.perf_counter()
                result = call()
                if position is not None:
                    spans[position] = (start - origin, time.perf_counter() - origin)
                    started[position] = result
        finally:
            self._release()
        self._wait_final()
        for device in self.queued:
            device.sync()
        for position, result in started.items():
            lane = ex.schedule.lanes[position]
            span = ex.devices[lane].event_span(result) if lane != HOST and result is not None else None
            if span is not None:
                spans[position] = (span[0] - origin, span[1] - origin)
        return spans


@contextmanager
def keep_to(cores: frozenset[int] | None) -> Generator[None, None, None]:
    """The calling thread runs on `cores` (those of them it may use) for the duration of the
    block, then as before; None, or none of them usable: as it is."""
    previous = os.sched_getaffinity(0) if cores is not None else set[int]()
    mine = (cores or frozenset[int]()) & previous
    if not mine or len(mine) == len(previous):  # (mine is a subset of previous)
        yield
        return
    os.sched_setaffinity(0, mine)
    try:
        yield
    finally:
        os.sched_setaffinity(0, previous)


def _bytes(n: int) -> str:
    """`n` bytes in binary units: 3.55 PiB."""
    size, unit = float(n), "bytes"
    for next_unit in ("KiB", "MiB", "GiB", "TiB", "PiB", "EiB"):
        if size < 1024:
            break
        size, unit = size / 1024, next_unit
    return f"{n} bytes" if unit == "bytes" else f"{size:.3g} {unit}"


def immutable(array: np.ndarray) -> bool:
    """Whether nothing can change `array`'s elements: it and each array it views are
    read-only, down to memory that is read-only too (bytes, a read-only mapping) or that the
    last of them owns. (Who flips an owner's flag back to writable may change it.)"""
    base: object = array
    while isinstance(base, np.ndarray):
        if base.flags.writeable:
            return False
        base = base.base
    if base is None:
        return True
    try:
        with memoryview(base) as view:  # pyright: ignore[reportArgumentType]
            return view.readonly
    except TypeError:
        return False


def _contiguous(array: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """`array` as C-contiguous `dtype`, keeping its rank (np.ascontiguousarray makes a 0-d
    array 1-d); the array itself, without np.require's checks, where it already is."""
    if array.dtype == dtype and array.flags.c_contiguous:
        return array
    return np.require(array, dtype=dtype, requirements="C")


def _entries(graph: Mapping[str, Any], num_devices: int) -> list[Entry]:
    attrs = graph["attrs"]
    count = graph["node_row_ptr"][-1]
    devices = attrs["device_index"][1] if "device_index" in attrs else [0] * count
    if any(d >= num_devices or d < 0 for d in devices):
        raise DeviceError(f"the graph uses device indices up to {max(devices)}, but {num_devices} devices were given")
    offsets = attrs["storage_offset"][1] if "storage_offset" in attrs else [0] * count
    columns = zip(attrs["storage_id"][1], attrs["shape"][1], attrs["dltype"][1], devices, offsets)
    return [Entry(sid, tuple(shape), np.dtype(dt), dev, at) for sid, shape, dt, dev, at in columns]


def _labels(graph: Mapping[str, Any], devices: Sequence[Device]) -> list[str]:
    """`opencl:1` for each device index: the virtual device when the graph names it."""
    named = graph.get("devices", [])
    return [f"{named[i]['kind']}:{named[i]['id']}" if i < len(named) else d.name for i, d in enumerate(devices)]
