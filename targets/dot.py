"""
`-t dot`: the program as a Graphviz DOT picture of its placement and fusion.

    opt-tool model.mlir -p 'plan-devices{targets=c,opencl},fuse-ops' -t dot | dot -Tsvg -o model.svg

The input is a module at any stage after plan-devices: every relay op outside a fused group,
and every parameter and result of a function, carries a canonical scope. Before plan-devices
(an op without one, a `relay.on_device` left) it is an error that names the pass to run.

What is drawn:
- each function as a cluster `@name` (but the kernels `relay.launch` calls: their loops are
  what `-t c` and `-t opencl` print);
- each op as a box filled with the colour of its scope: one colour per canonical scope, in
  device-index order (the host first), and a legend cluster `scopes` naming each;
- each `relay.fused` group as a cluster labelled with its kernel name, holding its ops; after
  lowering, each `relay.launch` as a cluster labelled with the kernel it calls;
- each `relay.device_copy` as a bold edge from the producer to the consumer, labelled with
  the bytes it moves and the scope pair; a copy whose result has several uses, or that feeds
  or reads another copy, is a small dot in the destination's colour with that bold edge
  into it;
- parameters as inverted houses (`%x`), results as houses (`result 0`), both double-bordered.

Every other edge goes from the op producing a value to the op using it, with a fused group's
inputs and result drawn straight to and from the ops inside it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Attribute, BlockArgument, Operation, SSAValue
from xdsl.traits import SymbolTable
from xdsl.utils.target import Target

from xrelay.diagnostics import LoweringError, location_of
from xrelay.dialects import relay
from xrelay.dialects.lowered_graph import arg_attrs, nbytes
from xrelay.dialects.se_scope import SCOPE_ATTR, SEScopeAttr
from xrelay.targets.graph_json import scope_order

# Light fills that keep black text readable (ColorBrewer's Paired and Set3), one per scope.
PALETTE = ("#a6cee3", "#fdbf6f", "#b2df8a", "#fb9a99", "#cab2d6", "#ffff99", "#8dd3c7", "#bebada", "#fccde5")
UNPLACED = "#ffffff"  # ops of other dialects, which have no scope


@dataclass(frozen=True)
class DotTarget(Target):
    name = "dot"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        output.write(program_dot(module))


# What an error before plan-devices tells an opt-tool user to do.
RUN_PLAN_DEVICES = "run plan-devices first (e.g. -p 'plan-devices{targets=c,opencl},fuse-ops' -t dot)"


def program_dot(module: ModuleOp, remedy: str = RUN_PLAN_DEVICES) -> str:
    """The DOT text of a module after plan-devices (see the module docstring); `remedy` is
    what the error says to do when the module has not been through plan-devices."""
    check_planned(module, remedy)
    return _DotWriter(module).write()


# --- precondition ----------------------------------------------------------------------------


def check_planned(module: ModuleOp, remedy: str = RUN_PLAN_DEVICES) -> None:
    """Every op and function signature outside fused groups and kernels has a canonical scope."""
    for fn in drawn_functions(module):
        for op in _ops_outside_groups(fn):
            if (found := _unplanned(op)) is not None:
                _not_planned(op, found, remedy)
        for i in range(len(fn.args)):
            if not _canonical(arg_attrs(fn, i).get(SCOPE_ATTR)):
                found = f"parameter %{fn.args[i].name_hint or i} of @{fn.sym_name.data} has no canonical {SCOPE_ATTR}"
                _not_planned(fn, found, remedy)


def _unplanned(op: Operation) -> str | None:
    """What shows that `op` has not been through plan-devices, if anything."""
    if isinstance(op, relay.OnDeviceOp):
        return f"relay.on_device at {location_of(op)} is still there"
    if isinstance(op, relay.DeviceCopyOp):
        planned = _canonical(op.src_se_scope) and _canonical(op.dst_se_scope)
        return None if planned else f"relay.device_copy at {location_of(op)} has scopes that are not canonical"
    if isinstance(op, (relay.RelayOp, relay.FusedOp, relay.LaunchOp)) and not _canonical(op.se_scope):
        return f"{op.name} at {location_of(op)} has no canonical se_scope"
    return None


def _not_planned(op: Operation, found: str, remedy: str) -> None:
    message = (
        f"the dot target draws where values live, so it expects a module after plan-devices, but {found}; {remedy}"
    )
    op.emit_error(message, LoweringError(message))


def _canonical(scope: Attribute | None) -> bool:
    return isinstance(scope, SEScopeAttr) and scope.is_fully_constrained


def drawn_functions(module: ModuleOp) -> list[func.FuncOp]:
    """The functions of the module but the kernels `relay.launch` calls."""
    kernels = {op.callee.root_reference.data for op in module.walk() if isinstance(op, relay.LaunchOp)}
    return [op for op in module.ops if isinstance(op, func.FuncOp) and op.sym_name.data not in kernels]


def _ops_outside_groups(fn: func.FuncOp) -> Iterator[Operation]:
    for op in fn.walk():
        if not isinstance(op.parent_op(), relay.FusedOp):
            yield op


# --- scopes ----------------------------------------------------------------------------------


def scope_label(scope: SEScopeAttr) -> str:
    """`opencl:1`: a canonical scope as the runtime's devices are named."""
    return f"{scope.device}:{scope.id}"


def type_label(ty: Attribute) -> str:
    """`32x256xf32` for a tensor type; anything else as xDSL prints it."""
    if isinstance(ty, TensorType):
        return "x".join([*(str(d) for d in ty.get_shape()), str(ty.element_type)])  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
    return str(ty)


def dot_string(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


# --- drawing ---------------------------------------------------------------------------------


@dataclass
class _DotWriter:
    module: ModuleOp
    lines: list[str] = field(default_factory=list[str])
    edges: list[str] = field(default_factory=list[str])  # at the top level: an edge inside a cluster pulls its ends in
    nodes: dict[SSAValue, str] = field(default_factory=dict[SSAValue, str])
    colours: dict[SEScopeAttr, str] = field(default_factory=dict[SEScopeAttr, str])
    count: int = 0
    indent: str = "    "  # of a node line: deeper inside a group's cluster

    def write(self) -> str:
        functions = drawn_functions(self.module)
        scopes = sorted({s for fn in functions for s in _scopes(fn)}, key=scope_order)
        self.colours = {s: PALETTE[i % len(PALETTE)] for i, s in enumerate(scopes)}
        self.lines = [
            "digraph xrelay {",
            "  rankdir=TB;",
            '  graph [fontname="Helvetica", fontsize=12];',
            '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=11];',
            '  edge [fontname="Helvetica", fontsize=9];',
        ]
        self.legend(scopes)
        for fn in functions:
            self.function(fn)
        self.lines += [*self.edges, "}"]
        return "\n".join(self.lines) + "\n"

    def legend(self, scopes: list[SEScopeAttr]) -> None:
        self.lines += ["  subgraph cluster_legend {", '    label="scopes"; style="dashed"; color="#888888";']
        for i, scope in enumerate(scopes):
            label = f"{scope_label(scope)}\ntarget {scope.target}, memory {scope.memory}"
            self.lines.append(
                f"    legend{i} [label={dot_string(label)}, fillcolor={dot_string(self.colours[scope])}];"
            )
        self.lines += [f"    legend{i} -> legend{i + 1} [style=invis];" for i in range(len(scopes) - 1)]  # a column
        self.lines.append("  }")

    def fresh(self, prefix: str = "n") -> str:
        self.count += 1
        return f"{prefix}{self.count}"

    def colour(self, scope: Attribute | None) -> str:
        return self.colours.get(scope, UNPLACED) if isinstance(scope, SEScopeAttr) else UNPLACED

    def node(self, name: str, label: str, scope: Attribute | None, extra: str = "") -> None:
        attrs = f"label={dot_string(label)}, fillcolor={dot_string(self.colour(scope))}"
        self.lines.append(f"{self.indent}{name} [{attrs}{', ' + extra if extra else ''}];")

    # --- functions and ops ---

    def function(self, fn: func.FuncOp) -> None:
        name = fn.sym_name.data
        self.lines += [f"  subgraph {dot_string('cluster_fn_' + name)} {{", f"    label={dot_string('@' + name)};"]
        for i, arg in enumerate(fn.args):
            self.nodes[arg] = node = self.fresh("param")
            label = f"%{arg.name_hint or i}\n{type_label(arg.type)}"
            self.node(node, label, arg_attrs(fn, i).get(SCOPE_ATTR), "shape=invhouse, peripheries=2")
        for op in fn.body.block.ops:
            self.op(op, fn)
        self.lines.append("  }")

    def op(self, op: Operation, fn: func.FuncOp) -> None:
        if isinstance(op, relay.FusedOp):
            self.fused(op)
        elif isinstance(op, relay.LaunchOp):
            self.launch(op)
        elif isinstance(op, relay.DeviceCopyOp):
            self.copy(op)
        elif isinstance(op, func.ReturnOp):
            self.results(op, fn)
        else:
            self.plain(op, _result_scope(op, self.module))

    def plain(self, op: Operation, scope: Attribute | None) -> None:
        node = self.fresh()
        label = "\n".join([op.name.removeprefix("relay."), *(type_label(r.type) for r in op.results)])
        if isinstance(op, func.CallOp):
            label = f"call @{op.callee.string_value()}\n" + "\n".join(type_label(r.type) for r in op.results)
        self.node(node, label, scope, "shape=note" if isinstance(op, relay.ConstantOp) else "")
        for result in op.results:
            self.nodes[result] = node
        for operand in op.operands:
            self.edge(operand, node)

    def fused(self, op: relay.FusedOp) -> None:
        self.cluster_open(op.kernel or "relay.fused", op.se_scope)
        for inner in op.body.block.ops:
            if not isinstance(inner, relay.YieldOp):
                self.plain(inner, op.se_scope)
        self.cluster_close()

    def launch(self, op: relay.LaunchOp) -> None:
        self.cluster_open(op.callee.string_value(), op.se_scope)
        self.plain(op, op.se_scope)
        self.cluster_close()

    def cluster_open(self, label: str, scope: Attribute | None) -> None:
        self.lines += [
            f"    subgraph {self.fresh('cluster_group')} {{",
            f'      label={dot_string(label)}; style="rounded,bold"; color={dot_string(self.colour(scope))};',
        ]
        self.indent = "      "

    def cluster_close(self) -> None:
        self.lines.append("    }")
        self.indent = "    "

    def copy(self, op: relay.DeviceCopyOp) -> None:
        if _drawn_as_edge(op):
            return  # drawn by its one use (see `edge`)
        self.nodes[op.res] = node = self.fresh("copy")
        self.node(node, "", op.dst_se_scope, "shape=point, width=0.15")
        self.edge(op.res, node)

    def results(self, op: func.ReturnOp, fn: func.FuncOp) -> None:
        for i, value in enumerate(op.arguments):
            node = self.fresh("result")
            scope = _result_attrs(fn, i).get(SCOPE_ATTR)
            self.node(node, f"result {i}\n{type_label(value.type)}", scope, "shape=house, peripheries=2")
            self.edge(value, node)

    # --- edges ---

    def edge(self, value: SSAValue, target: str) -> None:
        """An edge for `value` into `target`: a bold labelled one when `value` is a copy drawn as
        an edge (or `target` is that copy's own dot)."""
        value = _through_groups(value)
        copy = value.owner
        if isinstance(copy, relay.DeviceCopyOp) and (_drawn_as_edge(copy) or self.nodes.get(value) == target):
            source = self.nodes[_through_groups(copy.data)]
            self.edges.append(
                f"  {source} -> {target} [style=bold, penwidth=2.5, label={dot_string(_copy_label(copy))}];"
            )
            return
        self.edges.append(f"  {self.nodes[value]} -> {target};")


def _through_groups(value: SSAValue) -> SSAValue:
    """The value a picture node produces: a fused group's input is its outer operand, and a
    group's result is what its body yields."""
    while True:
        if isinstance(value, BlockArgument) and isinstance(group := value.owner.parent_op(), relay.FusedOp):
            value = group.operands[value.index]
        elif isinstance(group := value.owner, relay.FusedOp):
            value = group.body.block.last_op.operands[0]  # pyright: ignore[reportOptionalMemberAccess]
        else:
            return value


def _drawn_as_edge(op: relay.DeviceCopyOp) -> bool:
    """A copy with one use, neither reading nor feeding another copy, is drawn as one edge."""
    uses = list(op.res.uses)
    if len(uses) != 1 or isinstance(uses[0].operation, relay.DeviceCopyOp):
        return False
    return not isinstance(_through_groups(op.data).owner, relay.DeviceCopyOp)


def _copy_label(op: relay.DeviceCopyOp) -> str:
    return f"{nbytes(op.res.type)} bytes\n{scope_label(op.src_se_scope)} → {scope_label(op.dst_se_scope)}"


def _result_attrs(fn: func.FuncOp, index: int) -> dict[str, Attribute]:
    return {} if fn.res_attrs is None else dict(fn.res_attrs.data[index].data)


def _result_scope(op: Operation, module: ModuleOp) -> Attribute | None:
    """Where the results of an op are: its se_scope, or a callee's result scope for a call."""
    if isinstance(op, func.CallOp):
        callee = SymbolTable.lookup_symbol(module, op.callee)
        return _result_attrs(callee, 0).get(SCOPE_ATTR) if isinstance(callee, func.FuncOp) and op.results else None
    scope = op.properties.get("se_scope")
    return scope if isinstance(scope, SEScopeAttr) else None


def _scopes(fn: func.FuncOp) -> Iterator[SEScopeAttr]:
    """Every canonical scope a drawn op or signature of `fn` names."""
    for i in range(len(fn.args)):
        yield from _if_scope(arg_attrs(fn, i).get(SCOPE_ATTR))
    for i in range(len(fn.function_type.outputs)):
        yield from _if_scope(_result_attrs(fn, i).get(SCOPE_ATTR))
    for op in _ops_outside_groups(fn):
        for name in ("se_scope", "src_se_scope", "dst_se_scope"):
            yield from _if_scope(op.properties.get(name))


def _if_scope(attr: Attribute | None) -> Iterator[SEScopeAttr]:
    if isinstance(attr, SEScopeAttr) and attr.is_fully_constrained:
        yield attr
