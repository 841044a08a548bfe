"""
The graph executor: runs an executor graph (the `-t graph-json` object) on a list of devices.

Minimal on purpose, like TVM's heterogeneous graph runtime: the compiler decided devices,
copies and storage, and the executor only carries them out.

1. Pools: one buffer per storage id, on the device of the entries stored there (a storage id
   belongs to one device; a graph that says otherwise is rejected), sized for the largest.
2. Tensors: every entry is a typed view at the start of its storage's buffer.
3. Params are written into their storage once.
4. Every `tvm_op` node is bound once: `__copy` to a copy between its two devices, any other
   `func_name` to the kernel of that name *of the node's device* (so two devices may have
   kernels of the same name).
5. `run` calls the bound nodes in order.

`devices[i]` is the device of `device_index` i, the graph's `devices[i]` entry
(`{"kind": "opencl", "id": 1, "target": "opencl", "memory": "global"}`); `devices[0]` is the
primary device, used for every entry when the graph has no `device_index` column.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from xrelay.errors import DeviceError, InputError
from xrelay.runtime.device import Device, Kernel, Tensor

COPY = "__copy"


@dataclass(frozen=True)
class Entry:
    """One tensor of the graph: its storage, shape, dtype and device index."""

    storage: int
    shape: tuple[int, ...]
    dtype: np.dtype
    device: int

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize


@dataclass
class Profile:
    """What one profiled run did: time per node, copies per device pair, pool bytes per device."""

    outputs: Any = None
    # (node, device, seconds)
    nodes: list[tuple[str, str, float]] = field(default_factory=list[tuple[str, str, float]])
    # (source device, destination device) -> (count, bytes)
    copies: dict[tuple[str, str], tuple[int, int]] = field(default_factory=dict[tuple[str, str], tuple[int, int]])
    pool_bytes: dict[str, int] = field(default_factory=dict[str, int])
    total_seconds: float = 0.0

    def __str__(self) -> str:
        lines = [f"{'node':<48} {'device':<10} {'us':>10}"]
        lines += [f"{name[:48]:<48} {dev:<10} {s * 1e6:>10.1f}" for name, dev, s in self.nodes]
        lines.append(f"{'total':<48} {'':<10} {self.total_seconds * 1e6:>10.1f}")
        for (src, dst), (count, nbytes) in self.copies.items():
            lines.append(f"copies {src} -> {dst}: {count}, {nbytes} bytes")
        for dev, nbytes in self.pool_bytes.items():
            lines.append(f"pool {dev}: {nbytes} bytes")
        return "\n".join(lines)


class GraphExecutor:
    """Runs `graph` on `devices` with `kernels[i]` the kernels of device i, by name."""

    def __init__(
        self,
        graph: Mapping[str, Any],
        devices: Sequence[Device],
        kernels: Sequence[Mapping[str, Kernel]],
        params: Mapping[str, np.ndarray] | None = None,
    ):
        if not devices:
            raise DeviceError("the graph executor needs at least one device (the primary one)")
        self.graph, self.devices = graph, list(devices)
        self.nodes: list[dict[str, Any]] = list(graph["nodes"])
        self.entries = _entries(graph, len(self.devices))
        self.labels = _labels(graph, self.devices)
        self.pools = self._allocate()
        self.tensors = [self._view(e) for e in self.entries]
        self.params = dict(params or {})
        self._write_params()
        self.inputs = {n["name"]: i for i, n in enumerate(self.nodes) if n["op"] == "null" and n["name"] not in self.params}
        self.steps = [self._bind(i, kernels) for i, n in enumerate(self.nodes) if n["op"] != "null"]
        self.heads: list[int] = [h[0] for h in graph["heads"]]

    # --- set-up --------------------------------------------------------------------------

    def _allocate(self) -> dict[int, Any]:
        sizes: dict[int, int] = {}
        device_of: dict[int, int] = {}
        for e in self.entries:
            if device_of.setdefault(e.storage, e.device) != e.device:
                raise DeviceError(
                    f"malformed graph: storage {e.storage} is used on devices {self.labels[device_of[e.storage]]} "
                    f"and {self.labels[e.device]}; a storage id belongs to one device"
                )
            sizes[e.storage] = max(sizes.get(e.storage, 0), e.nbytes)
        self.storage_devices = device_of
        self.storage_sizes = sizes
        return {sid: self.devices[device_of[sid]].alloc(max(n, 1)) for sid, n in sizes.items()}

    def _view(self, e: Entry) -> Tensor:
        return self.devices[e.device].tensor(self.pools[e.storage], e.shape, e.dtype)

    def _write_params(self) -> None:
        for i, node in enumerate(self.nodes):
            if node["op"] == "null" and node["name"] in self.params:
                self._write(i, np.asarray(self.params[node["name"]]), f"param {node['name']}")

    def _bind(self, index: int, kernels: Sequence[Mapping[str, Kernel]]) -> tuple[str, int, Callable[[], None]]:
        node, entry = self.nodes[index], self.entries[index]
        inputs = [i for i, _, _ in node["inputs"]]
        func_name = node.get("attrs", {}).get("func_name", node["name"])
        if func_name == COPY:
            return (COPY, index, self._copier(inputs[0], index))
        kernel = kernels[entry.device].get(func_name) if entry.device < len(kernels) else None
        if kernel is None:
            raise DeviceError(f"node {index} ({node['name']}) calls kernel {func_name}, which device "
                              f"{self.labels[entry.device]} does not have")
        device = self.devices[entry.device]
        return (func_name, index, device.bind(kernel, [self.tensors[i] for i in inputs] + [self.tensors[index]]))

    def _copier(self, src: int, dst: int) -> Callable[[], None]:
        """A copy from entry `src` to entry `dst`: direct when a device can, else through the host."""
        s_dev, d_dev = self.devices[self.entries[src].device], self.devices[self.entries[dst].device]
        s, d, nbytes = self.tensors[src], self.tensors[dst], self.entries[dst].nbytes
        if d_dev.host_memory and s_dev.host_memory:
            return lambda: np.copyto(d, s)
        if s_dev.host_memory:
            return lambda: d_dev.write(d, s)
        if d_dev.host_memory:
            return lambda: s_dev.read(s, d)
        staging = np.empty(self.entries[dst].shape, self.entries[dst].dtype)

        def copy() -> None:
            if not d_dev.copy_peer(d, s_dev, s, nbytes):
                s_dev.read(s, staging)
                d_dev.write(d, staging)

        return copy

    # --- running ---------------------------------------------------------------------------

    def set_inputs(self, inputs: Mapping[str, Any]) -> None:
        """Checks the inputs' names, shapes and dtypes, and writes them to their devices."""
        names = list(self.inputs)
        missing = [n for n in names if n not in inputs]
        unknown = [n for n in inputs if n not in self.inputs]
        if missing or unknown:
            raise InputError(
                f"the program takes inputs {', '.join(names)}; "
                + "; ".join(filter(None, [
                    f"missing {', '.join(missing)}" if missing else "",
                    f"unknown {', '.join(repr(n) for n in unknown)}" if unknown else "",
                ]))
            )
        for name, index in self.inputs.items():
            self._write(index, self._checked(name, index, inputs[name]), f"input {name}")

    def _checked(self, name: str, index: int, value: Any) -> np.ndarray:
        entry, array = self.entries[index], np.asarray(value)
        if array.shape != entry.shape:
            raise InputError(f"input {name} must have shape {list(entry.shape)}, but has shape {list(array.shape)}")
        if array.dtype != entry.dtype:
            raise InputError(f"input {name} must have dtype {entry.dtype}, but has dtype {array.dtype}; "
                             f"convert it with .astype(np.{entry.dtype})")
        return np.ascontiguousarray(array)

    def _write(self, index: int, array: np.ndarray, what: str) -> None:
        entry = self.entries[index]
        if array.shape != entry.shape:
            raise InputError(f"{what} must have shape {list(entry.shape)}, but has shape {list(array.shape)}")
        self.devices[entry.device].write(self.tensors[index], np.ascontiguousarray(array, dtype=entry.dtype))

    def run(self) -> None:
        for _, _, step in self.steps:
            step()

    def outputs(self) -> list[np.ndarray]:
        """Fresh host arrays holding the graph's results."""
        results: list[np.ndarray] = []
        for head in self.heads:
            entry = self.entries[head]
            out = np.empty(entry.shape, entry.dtype)
            self.devices[entry.device].read(self.tensors[head], out)
            results.append(out)
        return results

    def profile(self) -> Profile:
        """Runs once, waiting for each node's devices, and reports what it did."""
        profile = Profile(pool_bytes=self.pool_bytes())
        start = time.perf_counter()
        for func_name, index, step in self.steps:
            t0 = time.perf_counter()
            step()
            for dev in self._devices_of(func_name, index):
                dev.sync()
            profile.nodes.append((self.nodes[index]["name"], self.labels[self.entries[index].device], time.perf_counter() - t0))
            if func_name == COPY:
                pair = (self.labels[self.entries[self.copy_source(index)].device], self.labels[self.entries[index].device])
                count, nbytes = profile.copies.get(pair, (0, 0))
                profile.copies[pair] = (count + 1, nbytes + self.entries[index].nbytes)
        profile.total_seconds = time.perf_counter() - start
        return profile

    def _devices_of(self, func_name: str, index: int) -> list[Device]:
        devices = [self.devices[self.entries[index].device]]
        if func_name == COPY:
            devices.append(self.devices[self.entries[self.copy_source(index)].device])
        return devices

    def copy_source(self, index: int) -> int:
        """The entry that the `__copy` node `index` copies from."""
        return self.nodes[index]["inputs"][0][0]

    def pool_bytes(self) -> dict[str, int]:
        """Bytes allocated per device (the plan is static, so this is also the peak)."""
        totals = {label: 0 for label in self.labels}
        for sid, nbytes in self.storage_sizes.items():
            label = self.labels[self.storage_devices[sid]]
            totals[label] += nbytes
        return totals


def _entries(graph: Mapping[str, Any], num_devices: int) -> list[Entry]:
    attrs = graph["attrs"]
    count = graph["node_row_ptr"][-1]
    devices = attrs["device_index"][1] if "device_index" in attrs else [0] * count
    if any(d >= num_devices or d < 0 for d in devices):
        raise DeviceError(f"the graph uses device indices up to {max(devices)}, but {num_devices} devices were given")
    columns = zip(attrs["storage_id"][1], attrs["shape"][1], attrs["dltype"][1], devices)
    return [Entry(sid, tuple(shape), np.dtype(dt), dev) for sid, shape, dt, dev in columns]


def _labels(graph: Mapping[str, Any], devices: Sequence[Device]) -> list[str]:
    """`opencl:1` for each device index: the virtual device when the graph names it."""
    named = graph.get("devices", [])
    return [f"{named[i]['kind']}:{named[i]['id']}" if i < len(named) else d.name for i, d in enumerate(devices)]
