"""
place-by-cost: place every op no annotation pins where the predicted run is fastest.

Runs before plan-devices (`xrelay.build(..., placement="auto")`). Steps:
1. Pins: a primitive op or parameter of @main that an annotation constrains itself is
   pinned there: its own `se_scope` or `relay.se_scope` attribute, a `relay.on_device` of its
   result that constrains its body, a `relay.device_copy` of it (its source scope), a
   function result attribute when it is returned, an operand read through an on_device that
   constrains its result or a pinned constant (what import rules write is on_device). Every
   other one is free, also when plan-devices would have joined it to a pinned neighbour by
   dataflow (auto placement decides where the copies go): its candidates are the devices of
   the targets (one scope per device type, id 0) whose kind holds its result's and operands'
   element types (`DeviceKind.dtypes`).
2. Costs (`placement_model.Model`): each node's measured seconds per device and the copy
   costs per device pair, from the cost table file `costs` (or `$XRELAY_PLACEMENT_COSTS`; for
   tests) or measured (`placement_costs.measure`: one build and profile per device, cached).
3. Search (`placement_model.search`, at most `budget` predictions of a whole run).
4. Write-back: a free op gets the chosen scope as its `se_scope` and, in `relay.cost_placement`,
   why (its measured times, the runner-up device and what moving there would cost, copies
   included): plan-devices turns that into the origin of its scope, so `explain=true` and
   `xrelay.explain` show it, and drops the attribute. A value read on another device than its
   own is read there through one `relay.on_device` of its own scope (a copy point), so
   plan-devices inserts the copy and checks the rest as for a hand placement.

With one candidate device, every free op goes there and nothing is measured.
A choice can be written back again on an equal module (`Chosen`, `replay`) without measuring
or searching: a build of several batch sizes places every size before it lowers any, so that
all sizes' graphs list one set of devices (`xrelay.batching.place_sizes`).
The cost table file (JSON): `{"ops": {"%name" or "#k": {"cpu": seconds, ...}}, "copies":
{"cpu->opencl": {"latency": seconds, "bandwidth": bytes per second}}, "overheads": {"cpu":
seconds}}` (overheads optional: `placement_model.Model.overheads`); `#k` is the k-th
primitive op of @main in program order, a device is named `cpu`, `opencl` (`kind:id` for an id
other than 0); ops it leaves out take no time.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import DictionaryAttr, ModuleOp, StringAttr
from xdsl.ir import BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from xrelay.diagnostics import ConfigError, LoweringError
from xrelay.dialects import relay
from xrelay.dialects.dtypes import dtype_of
from xrelay.dialects.lowered_graph import nbytes
from xrelay.dialects.se_scope import SCOPE_ATTR, SEScopeAttr
from xrelay.runtime.device_kinds import device_kind
from xrelay.transforms.compilation_config import CompilationConfig
from xrelay.transforms.placement_model import (
    CopyCost,
    Graph,
    Model,
    Node,
    Placement,
    PlacementOptions,
    SearchResult,
    predict,
    search,
)
from xrelay.transforms.plan_devices import COST_ATTR

COSTS_ENVIRONMENT = "XRELAY_PLACEMENT_COSTS"
PRIMITIVES = frozenset(relay.PRIMITIVE_OPS)


@dataclass(frozen=True)
class PlaceByCostPass(ModulePass):
    """Places the unpinned ops of @main where the predicted run is fastest."""

    name = "place-by-cost"

    targets: tuple[str, ...] = ("c",)
    default_device: str | None = None
    host_target: str = "c"
    budget: int = 2000
    """At most this many whole-run predictions in the search's local moves."""
    costs: str | None = None
    """A cost table file (JSON) to use instead of measuring; default `$XRELAY_PLACEMENT_COSTS`."""
    num_threads: int = 0
    """Threads of the C kernels when measuring (0: the default count)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        place(op, self.options())

    def options(self) -> PlacementOptions:
        config = CompilationConfig.from_options(self.targets, self.default_device, self.host_target)
        costs = self.costs or os.environ.get(COSTS_ENVIRONMENT) or None
        return PlacementOptions(config, tuple(self.targets), self.host_target, self.budget, costs, self.num_threads)


@dataclass
class Decision:
    """What the search chose, with what it predicted."""

    graph: Graph
    result: SearchResult
    why: list[str | None]  # each node's reason (`explanations`)


@dataclass(frozen=True)
class Chosen:
    """The placement chosen for a module: each node's name (to check that `replay` writes it on
    an equal module), device label and reason."""

    names: tuple[str, ...]
    placement: tuple[str, ...]
    why: tuple[str | None, ...]


def chosen(decision: Decision) -> Chosen:
    """What `decision` chose, apart from the IR it was chosen on."""
    names = tuple(node.name for node in decision.graph.model.nodes)
    return Chosen(names, tuple(decision.result.placement), tuple(decision.why))


def replay(module: ModuleOp, config: CompilationConfig, choice: Chosen) -> None:
    """Step 4 with a placement chosen before on an equal module (the same program, with the
    same params bound, through the same passes)."""
    graph = graph_of(module, config)
    names = tuple(node.name for node in graph.model.nodes)
    if names != choice.names:
        differ = next(
            (i for i, (a, b) in enumerate(zip(names, choice.names)) if a != b), min(len(names), len(choice.names))
        )
        raise LoweringError(
            f"place-by-cost cannot replay a placement on a module it was not chosen for (a compiler bug): "
            f"node {differ} of {len(names)} is {names[differ] if differ < len(names) else 'missing'}, but the placement's "
            f"is {choice.names[differ] if differ < len(choice.names) else 'missing'} (of {len(choice.names)})"
        )
    write_back(graph, list(choice.placement), choice.why)


def place(module: ModuleOp, options: PlacementOptions) -> Decision:
    """Steps 1-4 of the module docstring on `module`, in place."""
    graph = graph_of(module, options.config)
    if len(graph.candidates) > 1:
        fill_costs(module, graph, options)
    result = search(graph.model, graph.candidates, options.budget)
    decision = Decision(graph, result, explanations(graph.model, result.placement))
    write_back(graph, result.placement, decision.why)
    return decision


def fill_costs(module: ModuleOp, graph: Graph, options: PlacementOptions) -> None:
    if options.costs is not None:
        table = read_cost_table(options.costs)
        apply_cost_table(graph, table)
        return
    from xrelay.transforms.placement_costs import measure

    measure(module, graph, options)


# --- Step 1: the graph, pins and candidates ------------------------------------------------------


def label(scope: SEScopeAttr) -> str:
    """A device as the cost table and remarks name it: `cpu`, `opencl`, `opencl:1`."""
    return f"{scope.device}" if not scope.id else f"{scope.device}:{scope.id}"


def candidate_scopes(config: CompilationConfig) -> dict[str, SEScopeAttr]:
    """One canonical scope (id 0) per configured device type, the default device's first."""
    default = config.default_scope.device
    devices = sorted(config.targets, key=lambda d: d != default)
    scopes = [config.canonical(SEScopeAttr(device)) for device in devices]
    return {label(s): s for s in scopes}


def main_of(module: ModuleOp) -> func.FuncOp:
    for op in module.ops:
        if isinstance(op, func.FuncOp) and op.sym_name.data == "main" and not op.is_declaration:
            return op
    raise ConfigError("place-by-cost expects a module with a func.func @main that has a body")


def graph_of(module: ModuleOp, config: CompilationConfig) -> Graph:
    """The nodes of @main: its parameters, then its primitive ops in program order."""
    main = main_of(module)
    pins = direct_pins(main)
    candidates = candidate_scopes(config)
    scopes = dict(candidates)
    values: list[SSAValue] = list(main.args)
    values += [op.results[0] for op in main.body.block.ops if type(op) in PRIMITIVES]
    index = {v: i for i, v in enumerate(values)}
    nodes: list[Node] = []
    for i, value in enumerate(values):
        pin = config.canonical(pins[value]) if value in pins else None
        if pin is not None:
            scopes.setdefault(label(pin), pin)
        name = f"%{value.name_hint}" if value.name_hint else f"#{i - len(main.args)}"
        nodes.append(_node(value, name, index, pin, tuple(candidates)))
    returned = main.body.block.last_op
    if isinstance(returned, func.ReturnOp):
        for operand in returned.operands:
            if (producer := _producer(operand)) in index:
                nodes[index[producer]].is_output = True
    model = Model(nodes, {}, label(config.host_scope))
    return Graph(model, values, scopes, tuple(candidates))


def direct_pins(main: func.FuncOp) -> dict[SSAValue, SEScopeAttr]:
    """The parameters and primitive op results of @main that annotations pin (step 1)."""
    pins: dict[SSAValue, SEScopeAttr] = {}
    arg_attrs = main.arg_attrs.data if main.arg_attrs is not None else ()
    for arg, attrs in zip(main.args, arg_attrs):
        if isinstance(scope := attrs.data.get(SCOPE_ATTR), SEScopeAttr):
            pins[arg] = scope
    res_attrs = main.res_attrs.data if main.res_attrs is not None else ()
    values: list[SSAValue] = [*main.args]
    for op in main.body.block.ops:
        if type(op) in PRIMITIVES and isinstance(op, relay.RelayOp):
            values.append(op.results[0])
            if op.se_scope is not None:
                pins.setdefault(op.results[0], op.se_scope)
            for operand in op.operands:
                if (scope := _read_scope(operand)) is not None:
                    pins.setdefault(op.results[0], scope)
    for value in values:
        for use in value.uses:
            if (scope := _use_scope(use.operation, use.index, res_attrs)) is not None:
                pins.setdefault(value, scope)
    return pins


def _read_scope(operand: SSAValue) -> SEScopeAttr | None:
    """The scope a reader of `operand` must be on: an on_device's that constrains its result,
    a pinned constant's."""
    owner = operand.owner
    if isinstance(owner, relay.OnDeviceOp) and owner.constrains_result:
        return owner.se_scope
    if isinstance(owner, relay.ConstantOp):
        return owner.se_scope
    return None


def _use_scope(user: Operation, index: int, res_attrs: Sequence[DictionaryAttr]) -> SEScopeAttr | None:
    """The scope a use by `user` pins its value to."""
    if isinstance(user, relay.OnDeviceOp) and user.constrains_body:
        return user.se_scope
    if isinstance(user, relay.DeviceCopyOp):
        return user.src_se_scope
    if isinstance(user, func.ReturnOp) and index < len(res_attrs):
        scope = res_attrs[index].data.get(SCOPE_ATTR)
        return scope if isinstance(scope, SEScopeAttr) else None
    return None


def _node(
    value: SSAValue, name: str, index: Mapping[SSAValue, int], pin: SEScopeAttr | None, candidates: Sequence[str]
) -> Node:
    is_input = isinstance(value, BlockArgument)
    op = None if is_input else value.owner
    operands = list(op.operands) if isinstance(op, Operation) else []
    inputs = [index[p] for v in operands if (p := _producer(v)) in index]
    choices = (label(pin),) if pin is not None else _holding([value, *operands], candidates)
    return Node(name, inputs, nbytes(value.type), choices, pinned=pin is not None, is_input=is_input)


def _holding(values: Sequence[SSAValue], candidates: Sequence[str]) -> tuple[str, ...]:
    """The candidates whose kind holds the element types of all `values` (the host, always)."""
    names = {d.name for v in values if (d := dtype_of(v.type)) is not None}
    held = tuple(c for c in candidates if _holds(c, names))
    return held or tuple(candidates[:1])


def _holds(device_label: str, dtypes: set[str]) -> bool:
    kind = device_kind(device_label.split(":")[0])
    return kind is None or dtypes.issubset(kind.dtypes)


def _producer(value: SSAValue) -> SSAValue:
    """The value under a chain of user annotations (copy points the cost model sees through)."""
    while isinstance(value.owner, (relay.OnDeviceOp, relay.DeviceCopyOp)):
        value = value.owner.operands[0]
    return value


# --- Step 2: a cost table from a file ------------------------------------------------------------


@dataclass
class CostTable:
    ops: dict[str, dict[str, float]]  # "%name" or "#k" -> device label -> seconds
    copies: dict[tuple[str, str], CopyCost]
    overheads: dict[str, float]


def read_cost_table(path: str) -> CostTable:
    try:
        data: Any = json.loads(Path(path).read_text())
        ops = {str(k): {str(d): float(s) for d, s in v.items()} for k, v in data.get("ops", {}).items()}
        copies = {_pair(k): _copy_cost(v) for k, v in data.get("copies", {}).items()}
        overheads = {str(d): float(s) for d, s in data.get("overheads", {}).items()}
    except (OSError, ValueError, AttributeError, TypeError, KeyError) as e:
        raise ConfigError(
            f"place-by-cost cannot read the cost table {path}: {e}; expected JSON "
            '{"ops": {"%name": {"cpu": seconds}}, "copies": {"cpu->opencl": {"latency": s, "bandwidth": B/s}}}'
        ) from None
    return CostTable(ops, copies, overheads)


def _pair(key: str) -> tuple[str, str]:
    src, sep, dst = key.partition("->")
    if not sep:
        raise ValueError(f"a copy key is 'src->dst', not {key!r}")
    return src.strip(), dst.strip()


def _copy_cost(value: Mapping[str, float]) -> CopyCost:
    return CopyCost(float(value["latency"]), 1.0 / float(value["bandwidth"]))


def apply_cost_table(graph: Graph, table: CostTable) -> None:
    ops = [i for i, n in enumerate(graph.model.nodes) if not n.is_input]
    for k, i in enumerate(ops):
        node = graph.model.nodes[i]
        times = table.ops.get(node.name) or table.ops.get(f"#{k}") or {}
        node.times.update(times)
    graph.model.copies.update(table.copies)
    graph.model.overheads.update(table.overheads)


# --- Step 4: write-back ------------------------------------------------------------------------------


def write_back(graph: Graph, placement: Placement, why: Sequence[str | None] = ()) -> None:
    """Scopes on the free ops, `relay.on_device` copy points where a value is read elsewhere."""
    model = graph.model
    for i, node in enumerate(model.nodes):
        owner = graph.values[i].owner
        if node.pinned or not isinstance(owner, Operation):
            continue
        owner.properties["se_scope"] = graph.scopes[placement[i]]
        if i < len(why) and (text := why[i]) is not None:
            owner.attributes[COST_ATTR] = StringAttr(text)
    readers: dict[Operation, int] = {}
    for i, value in enumerate(graph.values):
        if isinstance(value.owner, Operation):
            readers[value.owner] = i
    for i, value in enumerate(graph.values):
        home = placement[i]
        far = [u for u in value.uses if (r := readers.get(u.operation)) is not None and placement[r] != home]
        if far:
            point = relay.OnDeviceOp(value, graph.scopes[home])
            point.res.name_hint = value.name_hint
            _insert_after(point, value)
            for use in far:
                use.operation.operands[use.index] = point.res


def _insert_after(op: Operation, value: SSAValue) -> None:
    if isinstance(value, BlockArgument):
        Rewriter.insert_op(op, InsertPoint.at_start(value.block))
    else:
        assert isinstance(value.owner, Operation)
        Rewriter.insert_op(op, InsertPoint.after(value.owner))


# --- Explanations ----------------------------------------------------------------------------------


def explanations(model: Model, placement: Placement) -> list[str | None]:
    """Why each free op is where it is: its measured times, and the runner-up with the change
    that moving it alone there makes: to the predicted run (on graphs of at most
    EXPLAIN_PREDICTED nodes, where a prediction per op is cheap) and to the serial time of
    node and copies."""
    users = model.consumers()
    base = predict(model, placement) if len(model.nodes) <= EXPLAIN_PREDICTED else None
    found: list[str | None] = []
    for i, node in enumerate(model.nodes):
        if node.pinned or node.is_input:
            found.append(None)
            continue
        times = ", ".join(f"on {d} {seconds(node.times[d])}" for d in node.choices if d in node.times)
        text = f"measured {times}" if times else "no measured times"
        others = [d for d in node.choices if d != placement[i]]
        if not others:
            found.append(f"{text}; the only device that holds its element types is {placement[i]}")
            continue
        runs = {d: _moved_run(model, placement, i, d, base) for d in others}
        serial = {d: _move_delta(model, users, placement, i, d) for d in others}
        runner = min(others, key=lambda d: (runs[d], serial[d]))
        delta, copies = serial[runner]
        text += f"; runner-up {runner}:"
        if base is not None:
            text += f" the run {signed(runs[runner])} predicted,"
        found.append(f"{text} node and copies {signed(delta)}, of which copies {signed(copies)}")
    return found


EXPLAIN_PREDICTED = 400


def _moved_run(model: Model, placement: Placement, i: int, device: str, base: float | None) -> float:
    if base is None:
        return 0.0
    moved = list(placement)
    moved[i] = device
    return predict(model, moved) - base


def _move_delta(model: Model, users: list[list[int]], placement: Placement, i: int, device: str) -> tuple[float, float]:
    """(total, copies): the serial seconds moving node `i` alone to `device` adds."""
    here = placement[i]
    node = model.nodes[i]

    def copies_at(d: str) -> float:
        total = sum(model.copy_seconds(placement[j], d, model.nodes[j].nbytes) for j in set(node.inputs))
        readers = {placement[k] for k in users[i]}
        total += sum(model.copy_seconds(d, r, node.nbytes) for r in readers)
        if node.is_output:
            total += model.copy_seconds(d, model.host, node.nbytes)
        return total

    copies = copies_at(device) - copies_at(here)
    return model.time(i, device) - model.time(i, here) + copies, copies


def seconds(value: float) -> str:
    return f"{value * 1e6:.1f} us" if abs(value) < 1e-3 else f"{value * 1e3:.2f} ms"


def signed(value: float) -> str:
    return ("+" if value >= 0 else "-") + seconds(abs(value))
