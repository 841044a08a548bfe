"""
`-t graph-json`: the executor graph of a lowered @main, in TVM's graph-executor JSON.

    {"nodes": [...], "arg_nodes": [...], "heads": [...], "node_row_ptr": [...],
     "attrs": {"storage_id": ["list_int", [...]], "shape": ["list_shape", [...]],
               "dltype": ["list_str", [...]], "device_index": ["list_int", [...]]},
     "devices": [{"kind": "cpu", "id": 0, "target": "c", "memory": "global"}, ...]}

Nodes, in this order: one `null` node per parameter of @main (named after it, or after its
`relay.input_name` argument attribute: the name an importer found, e.g. `onnx::Conv_0`, which is
not a valid SSA name, so that the runtime takes the input by that name), one `null`
node per `relay.constant` (a *param*, named `p0`, `p1`, ...; its value goes to the
artifact), then one `tvm_op` node per op of @main in program order: a `relay.launch` is a
node whose `func_name` is the kernel's name, a `relay.device_copy` a node whose `func_name`
is `__copy`, a launch marked `relay.reshape_only` (`transforms/reshape_only.py`) a node named
after its kernel whose `func_name` is `__nop`, as TVM marks a reshape-only function: its
output is its input's storage (plan-memory gave both one storage id), so nothing runs. A
concatenation planned in place (`transforms/in_place_concat.py`) is a `__nop` node too: its
inputs' producers wrote its result. Then `attrs` has one column more than TVM's,
`"storage_offset": ["list_int", [...]]`, the byte at which each entry starts in its storage
(0: its start, for all where the column is absent). Every node has one output, so entry ids equal node ids. `device_index` indexes
`devices`, the canonical scopes of the program sorted by DLPack device type, then id (the
host, cpu, comes first and is the primary device), each as plain data: the runtime learns
where a node runs from this list alone. This module is where a scope becomes a device
index, once, from the attribute (`device_list`). The graphs of a build of several batch sizes,
each placed by its own costs, all list the devices of them all (`planned_devices` of each size
after plan-devices, joined), so that an index means one device in every graph and kernel of
the build (a size may list a device it does not use). `storage_id` comes from plan-memory: the
input must have been through `inline-calls,plan-memory`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import IO, Any, cast

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, ModuleOp, StringAttr, TensorType, f32
from xdsl.ir import Attribute, SSAValue
from xdsl.utils.target import Target

from xrelay.diagnostics import LoweringError
from xrelay.dialects import relay
from xrelay.dialects.lowered_graph import (
    INPUT_NAME_ATTR,
    is_in_place_concat,
    is_reshape_only_launch,
    main_function,
    scope_of,
    storage_id,
    storage_offset,
    tensors,
)
from xrelay.dialects.se_scope import DEVICE_TYPES, SEScopeAttr
from xrelay.values import constant_value

COPY = "__copy"
NOP = "__nop"
DTYPES = {"f32": "float32", "f64": "float64", "i32": "int32", "i64": "int64", "i1": "bool"}


@dataclass
class ExecutorGraph:
    """The graph JSON object, the values of its params (by node name), and the scope of each
    device index."""

    graph: dict[str, Any]
    params: dict[str, np.ndarray] = field(default_factory=dict)
    devices: list[SEScopeAttr] = field(default_factory=list)


@dataclass(frozen=True)
class GraphJSONTarget(Target):
    name = "graph-json"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        output.write(format_graph(executor_graph(module).graph))


def param_value(op: relay.ConstantOp) -> np.ndarray:
    """A constant's value as a param: a read-only view of the attribute's bytes, not a copy
    (BERT-base: 340 MB less at the peak of a build) for float32; int64 and bool constants (small
    shape data and masks) as the interpreter reads them."""
    if op.res.type.element_count() == 1 or op.res.type.element_type != f32:
        return constant_value(op)
    return np.frombuffer(op.value.data.data, dtype="<f4").reshape(tuple(op.res.type.get_shape()))


def executor_graph(module: ModuleOp, devices: Sequence[SEScopeAttr] | None = None) -> ExecutorGraph:
    """The executor graph of a lowered module whose memory is planned. `devices`, the list of
    a build of several graphs that share one (`planned_devices` of each, joined): it must hold
    every scope of the module; default, the module's own (`device_list`)."""
    main = main_function(module)
    unplanned = next((v for v in tensors(main) if storage_id(v) is None), None)
    if unplanned is not None:
        what = f"%{unplanned.name_hint}" if unplanned.name_hint else "a tensor"
        message = (
            f"the graph-json target expects a memory plan, but {what} of @main has no storage id; "
            "run inline-calls,plan-memory first (e.g. -p '...,convert-relay-to-loops,inline-calls,plan-memory')"
        )
        main.emit_error(message, LoweringError(message))
    return _GraphBuilder(main, devices).build()


def device_list(values: list[SSAValue]) -> list[SEScopeAttr]:
    """The distinct canonical scopes of `values`, in device-index order (`scope_order`)."""
    return sorted({scope_of(v) for v in values}, key=scope_order)


def device_entry(scope: SEScopeAttr) -> dict[str, Any]:
    """A scope as the runtime reads it: `{"kind", "id", "target", "memory"}`."""
    return {"kind": scope.device, "id": scope.id, "target": scope.target, "memory": scope.memory}


def planned_devices(module: ModuleOp) -> set[SEScopeAttr]:
    """The canonical scopes a module names once plan-devices ran (its ops' and copies', its
    functions' parameters' and results'): the devices of its executor graph, known before it is
    lowered (or more, where lowering drops the only value on one)."""
    found: set[SEScopeAttr] = set()
    for op in module.walk():
        for attr in (*op.properties.values(), *op.attributes.values()):
            found.update(_scopes_in(attr))
    return found


def _scopes_in(attr: Attribute) -> Iterator[SEScopeAttr]:
    """The canonical scopes `attr` is or holds (in a function's argument attribute dictionaries)."""
    if isinstance(attr, SEScopeAttr):
        if attr.is_fully_constrained:
            yield attr
    elif isinstance(attr, ArrayAttr):
        for inner in cast(ArrayAttr[Attribute], attr).data:
            yield from _scopes_in(inner)
    elif isinstance(attr, DictionaryAttr):
        for inner in attr.data.values():
            yield from _scopes_in(inner)


@dataclass
class _GraphBuilder:
    main: func.FuncOp
    devices: Sequence[SEScopeAttr] | None = None
    nodes: list[dict[str, Any]] = field(default_factory=list)
    entries: dict[SSAValue, int] = field(default_factory=dict)
    params: dict[str, np.ndarray] = field(default_factory=dict)

    def build(self) -> ExecutorGraph:
        self.add_inputs()
        self.add_params()
        ops = [op for op in self.main.body.block.ops if isinstance(op, (relay.LaunchOp, relay.DeviceCopyOp))]
        for op in ops:
            self.add_op(op)
        ret = self.main.body.block.last_op
        assert isinstance(ret, func.ReturnOp)
        devices = self.shared_devices() if self.devices is not None else device_list(list(self.entries))
        return ExecutorGraph(self.json([self.entries[v] for v in ret.arguments], devices), self.params, devices)

    def shared_devices(self) -> list[SEScopeAttr]:
        assert self.devices is not None
        devices = list(self.devices)
        missing = next((v for v in self.entries if scope_of(v) not in devices), None)
        if missing is not None:
            what = f"%{missing.name_hint}" if missing.name_hint else f"a tensor of type {missing.type}"
            message = (
                f"the graph-json target was given the devices {', '.join(map(str, devices))} for @main, but {what} "
                f"is on {scope_of(missing)}, which is not one of them (a compiler bug: they are planned first)"
            )
            self.main.emit_error(message, LoweringError(message))
        return devices

    def add_node(self, value: SSAValue, node: dict[str, Any]) -> None:
        self.entries[value] = len(self.nodes)
        self.nodes.append(node)

    def add_inputs(self) -> None:
        attrs = self.main.arg_attrs.data if self.main.arg_attrs is not None else ()
        for i, arg in enumerate(self.main.args):
            given = attrs[i].data.get(INPUT_NAME_ATTR) if i < len(attrs) else None
            name = given.data if isinstance(given, StringAttr) else arg.name_hint or f"arg{i}"
            self.add_node(arg, {"op": "null", "name": name, "inputs": []})

    def add_params(self) -> None:
        taken = {node["name"] for node in self.nodes}
        for op in self.main.body.block.ops:
            if isinstance(op, relay.ConstantOp):
                name = _fresh_name(f"p{len(self.params)}", taken)
                taken.add(name)
                self.params[name] = param_value(op)
                self.add_node(op.res, {"op": "null", "name": name, "inputs": []})

    def add_op(self, op: relay.LaunchOp | relay.DeviceCopyOp) -> None:
        inputs = [op.data] if isinstance(op, relay.DeviceCopyOp) else list(op.inputs)
        name = COPY if isinstance(op, relay.DeviceCopyOp) else op.callee.string_value()
        func_name = NOP if is_reshape_only_launch(op) or is_in_place_concat(op) else name
        attrs = {"func_name": func_name, "num_inputs": str(len(inputs)), "num_outputs": "1", "flatten_data": "0"}
        node = {"op": "tvm_op", "name": name, "attrs": attrs, "inputs": [[self.entries[v], 0, 0] for v in inputs]}
        self.add_node(op.res, node)

    def json(self, heads: list[int], devices: list[SEScopeAttr]) -> dict[str, Any]:
        values = sorted(self.entries, key=self.entries.__getitem__)
        index = {scope: i for i, scope in enumerate(devices)}
        types = [v.type for v in values]
        assert all(isinstance(t, TensorType) for t in types)
        graph: dict[str, Any] = {
            "nodes": self.nodes,
            "arg_nodes": [i for i, node in enumerate(self.nodes) if node["op"] == "null"],
            "heads": [[h, 0, 0] for h in heads],
            "node_row_ptr": list(range(len(self.nodes) + 1)),
            "attrs": {
                "storage_id": ["list_int", [storage_id(v) for v in values]],
                "shape": ["list_shape", [list(t.get_shape()) for t in types]],  # type: ignore[union-attr]
                "dltype": ["list_str", [DTYPES.get(str(t.element_type), str(t.element_type)) for t in types]],  # type: ignore[union-attr]
                "device_index": ["list_int", [index[scope_of(v)] for v in values]],
            },
            "devices": [device_entry(s) for s in devices],
        }
        offsets = [storage_offset(v) for v in values]
        if any(offsets):
            graph["attrs"]["storage_offset"] = ["list_int", offsets]
        return graph


def scope_order(scope: SEScopeAttr) -> tuple[int, int, str, str]:
    """DLPack device type first (cpu, the host, is first), then the virtual id."""
    device = scope.device or ""
    rank = DEVICE_TYPES.index(device) if device in DEVICE_TYPES else len(DEVICE_TYPES)
    return (rank, scope.id or 0, scope.target or "", scope.memory or "")


def _fresh_name(name: str, taken: set[str]) -> str:
    suffix = 0
    candidate = name
    while candidate in taken:
        suffix += 1
        candidate = f"{name}_{suffix}"
    return candidate


def format_graph(graph: dict[str, Any]) -> str:
    """JSON with one node, one head list and one attribute column per line (readable, diffable)."""
    d = json.dumps
    lines = ["{", '  "nodes": [']
    lines += [f"    {d(node)}," for node in graph["nodes"]]
    lines[-1] = lines[-1].rstrip(",")
    lines += ["  ],"]
    for key in ("arg_nodes", "heads", "node_row_ptr"):
        lines.append(f"  {d(key)}: {d(graph[key])},")
    lines.append('  "attrs": {')
    lines += [f"    {d(k)}: {d(v)}," for k, v in graph["attrs"].items()]
    lines[-1] = lines[-1].rstrip(",")
    lines.append("  },")
    lines.append(f'  "devices": {d(graph["devices"])}')
    lines.append("}")
    return "\n".join(lines) + "\n"
