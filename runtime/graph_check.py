"""
A loaded executor graph checked against its kernels and params before anything runs.

    check_graph(graph, kernels, params, "model.xrelay/graph.json")   # or an ArtifactError

The graph executor trusts its graph: a shape, dtype or storage id that disagrees with the
kernels it calls makes a kernel read or write past a buffer (a crash, or wrong numbers). A
saved graph is data from a file, so `load` checks, naming the node: the graph's structure
(TVM's graph-JSON keys and columns, one output per node); every node's inputs defined before
it (so there is no cycle); every shape non-negative and every dtype one its device kind's
kernels take (`DeviceKind.dtypes`); storage ids within the pool of one device, and storage
offsets (where the graph has them) non-negative multiples of the device kind's
`offset_alignment`; and every kernel node's inputs and output equal, in shape and dtype, to
its kernel's parameters (`KernelSource.args`), a copy's to its input's, a `__nop` node's (a
reshape, or a concatenation done in place) its inputs' bytes end to end in one storage, a
param's array to its entry.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

import numpy as np

from xrelay.errors import ArtifactError
from xrelay.runtime.device_kinds import device_kind
from xrelay.runtime.kernels import KernelSource, TensorArg

COPY = "__copy"
NOP = "__nop"
COLUMNS = ("storage_id", "shape", "dltype")


def check_graph(graph: object, kernels: Sequence[KernelSource], params: Mapping[str, np.ndarray], where: str) -> None:
    """Raises an ArtifactError, naming the node, for a graph its kernels cannot run."""
    checker = _Checker(_dict(graph, where, "the graph"), where)
    entries = checker.entries()
    by_name = {(k.device, k.name): k for k in kernels}
    for index, node in enumerate(checker.nodes):
        checker.check_node(index, node, entries, by_name, params)
    for head in _list(checker.graph.get("heads"), where, "heads"):
        checker.reference(head, len(entries), "a head (a result of the program)")


def _dict(value: object, where: str, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ArtifactError(f"{where}: {what} must be a JSON object, but is {type(value).__name__}")
    return cast(dict[str, Any], value)


def _list(value: object, where: str, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise ArtifactError(f"{where}: {what} must be a JSON list, but is {type(value).__name__}")
    return cast(list[Any], value)


def _int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class _Checker:
    def __init__(self, graph: dict[str, Any], where: str):
        self.graph, self.where = graph, where
        self.nodes = [_dict(n, where, f"node {i}") for i, n in enumerate(_list(graph.get("nodes"), where, "nodes"))]
        self.devices = [
            _dict(d, where, f"device {i}") for i, d in enumerate(_list(graph.get("devices"), where, "devices"))
        ]

    def fail(self, index: int, message: str) -> ArtifactError:
        name = self.nodes[index].get("name")
        return ArtifactError(f"{self.where}: node {index} ({name}) {message}")

    def column(self, attrs: dict[str, Any], name: str) -> list[Any]:
        pair = _list(attrs.get(name), self.where, f"attrs.{name}")
        values = _list(pair[1] if len(pair) == 2 else None, self.where, f"attrs.{name}[1]")
        if len(values) != len(self.nodes):
            raise ArtifactError(f"{self.where}: attrs.{name} has {len(values)} entries for {len(self.nodes)} nodes")
        return values

    def entries(self) -> list[tuple[int, tuple[int, ...], str, int]]:
        """(storage id, shape, dtype, device index) of each node's one output, checked."""
        n = len(self.nodes)
        if self.graph.get("node_row_ptr") != list(range(n + 1)):
            raise ArtifactError(f"{self.where}: node_row_ptr must be 0..{n} (one output per node)")
        attrs = _dict(self.graph.get("attrs"), self.where, "attrs")
        storage, shapes, dtypes = (self.column(attrs, c) for c in COLUMNS)
        devices = self.column(attrs, "device_index") if "device_index" in attrs else [0] * n
        result = [self.entry(i, *row) for i, row in enumerate(zip(storage, shapes, dtypes, devices))]
        offsets = self.column(attrs, "storage_offset") if "storage_offset" in attrs else [0] * n
        self.offsets = [self.offset(i, at, result[i][3]) for i, at in enumerate(offsets)]
        pools: dict[int, int] = {}
        for index, (sid, _, _, device) in enumerate(result):
            if pools.setdefault(sid, device) != device:
                raise self.fail(
                    index, f"has storage {sid} on device {device}, but the storage is device {pools[sid]}'s"
                )
        return result

    def entry(
        self, index: int, sid: object, shape: object, dtype: object, device: object
    ) -> tuple[int, tuple[int, ...], str, int]:
        if not _int(sid) or not 0 <= cast(int, sid) < len(self.nodes):
            raise self.fail(index, f"has storage id {sid!r}; storage ids are 0 to {len(self.nodes) - 1}")
        if not isinstance(shape, list) or not all(_int(d) and d >= 0 for d in cast(list[Any], shape)):
            raise self.fail(index, f"has shape {shape!r}; a shape is a list of non-negative integers")
        if not _int(device) or not 0 <= cast(int, device) < len(self.devices):
            raise self.fail(index, f"has device index {device!r}, but the graph has {len(self.devices)} devices")
        scope = self.devices[cast(int, device)]
        kind = device_kind(str(scope.get("kind")))
        if kind is None or not kind.generates_kernels:
            raise self.fail(index, f"is on device {device} of kind {scope.get('kind')!r}, which xrelay cannot run")
        if dtype not in kind.dtypes:
            raise self.fail(index, f"has dtype {dtype!r}, but {kind.name} kernels take {', '.join(kind.dtypes)}")
        return cast(int, sid), tuple(cast(list[int], shape)), cast(str, dtype), cast(int, device)

    def offset(self, index: int, at: object, device: int) -> int:
        """An entry's first byte in its storage, one its device kind takes."""
        kind = device_kind(str(self.devices[device].get("kind")))
        align = kind.offset_alignment if kind is not None else None
        if not _int(at) or cast(int, at) < 0 or (at and (align is None or cast(int, at) % align)):
            takes = f"multiples of {align} bytes" if align else "none but 0"
            raise self.fail(index, f"has storage offset {at!r}, but its device takes {takes}")
        return cast(int, at)

    def reference(self, ref: object, before: int, what: str, index: int | None = None) -> int:
        """The node a `[node, output, version]` reference names, defined before `before`."""
        ok = isinstance(ref, list) and len(cast(list[Any], ref)) == 3 and all(_int(r) for r in cast(list[Any], ref))
        node = cast(list[int], ref)[0] if ok else -1
        if ok and 0 <= node < before and cast(list[int], ref)[1] == 0:
            return node
        problem = "is not [node, 0, 0]" if not ok or node < 0 else f"names node {node}, not defined before it"
        if index is None:
            raise ArtifactError(f"{self.where}: {what} {ref!r} {problem}")
        raise self.fail(index, f"reads {what} {ref!r}, which {problem} (inputs come first: no cycles)")

    def check_node(
        self,
        index: int,
        node: dict[str, Any],
        entries: list[tuple[int, tuple[int, ...], str, int]],
        kernels: Mapping[tuple[int, str], KernelSource],
        params: Mapping[str, np.ndarray],
    ) -> None:
        refs = _list(node.get("inputs"), self.where, f"node {index}'s inputs")
        inputs = [self.reference(r, index, "input", index) for r in refs]
        op = node.get("op")
        if op == "null":
            if inputs:
                raise self.fail(index, "is a graph input (op null) but has inputs")
            self.check_param(index, node, entries[index], params)
            return
        attrs = _dict(node.get("attrs"), self.where, f"node {index}'s attrs")
        if op != "tvm_op" or not isinstance(attrs.get("func_name"), str):
            raise self.fail(
                index, f"has op {op!r} and func_name {attrs.get('func_name')!r}; expected tvm_op and a name"
            )
        if attrs.get("num_inputs", str(len(inputs))) != str(len(inputs)):
            raise self.fail(index, f"says num_inputs {attrs['num_inputs']!r}, but has {len(inputs)} inputs")
        func_name = cast(str, attrs["func_name"])
        if func_name in (COPY, NOP):
            self.check_view(index, func_name, inputs, entries)
            return
        kernel = kernels.get((entries[index][3], func_name))
        if kernel is None:
            raise self.fail(index, f"calls kernel {func_name!r}, which device {entries[index][3]} does not have")
        self.check_call(index, kernel, [entries[i] for i in inputs] + [entries[index]])

    def check_param(
        self,
        index: int,
        node: dict[str, Any],
        entry: tuple[int, tuple[int, ...], str, int],
        params: Mapping[str, np.ndarray],
    ) -> None:
        value = params.get(str(node.get("name")))
        if value is not None and (value.shape != entry[1] or str(value.dtype) != entry[2]):
            raise self.fail(
                index,
                f"is {list(entry[1])} {entry[2]}, but its value in params.npz is {list(value.shape)} {value.dtype}",
            )

    def check_view(
        self, index: int, func_name: str, inputs: list[int], entries: list[tuple[int, tuple[int, ...], str, int]]
    ) -> None:
        """A copy's output is its input's shape and dtype; a `__nop`'s its inputs' bytes end to end."""
        if func_name == COPY and len(inputs) != 1:
            raise self.fail(index, f"is a {func_name} node with {len(inputs)} inputs; it takes one")
        if func_name == COPY:
            (_, shape, dtype, _), (_, out_shape, out_dtype, _) = entries[inputs[0]], entries[index]
            if (shape, dtype) != (out_shape, out_dtype):
                raise self.fail(index, f"copies {list(shape)} {dtype} into {list(out_shape)} {out_dtype}")
            return
        out_sid, out_shape, out_dtype, _ = entries[index]
        at = self.offsets[index]
        for i in inputs:
            sid, shape, dtype, _ = entries[i]
            if (sid, self.offsets[i], dtype) != (out_sid, at, out_dtype):
                raise self.fail(
                    index,
                    f"views its input node {i} (storage {sid} at byte {self.offsets[i]}, {list(shape)} {dtype}) "
                    f"as storage {out_sid} at byte {at}, {list(out_shape)} {out_dtype}",
                )
            at += int(np.prod(shape)) * np.dtype(dtype).itemsize
        if not inputs or at != self.offsets[index] + int(np.prod(out_shape)) * np.dtype(out_dtype).itemsize:
            raise self.fail(index, f"is {list(out_shape)} {out_dtype}, but its inputs are not as many bytes")

    def check_call(
        self, index: int, kernel: KernelSource, tensors: list[tuple[int, tuple[int, ...], str, int]]
    ) -> None:
        if kernel.num_inputs != len(tensors) - 1 or len(kernel.args) != len(tensors):
            raise self.fail(
                index, f"passes {len(tensors) - 1} inputs to kernel {kernel.name}, which takes "
                f"{kernel.num_inputs} (and {len(kernel.args)} parameters in all)"
            )  # fmt: skip
        for position, (arg, (_, shape, dtype, _)) in enumerate(zip(kernel.args, tensors)):
            if arg != TensorArg(shape, dtype):
                what = "its output" if position == len(tensors) - 1 else f"input {position}"
                raise self.fail(
                    index, f"gives kernel {kernel.name} {what} as {list(shape)} {dtype}, but the kernel takes "
                    f"{list(arg.shape)} {arg.dtype}"
                )  # fmt: skip
