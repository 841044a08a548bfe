"""
fuse-ops: put every primitive relay op into a `relay.fused` group (TVM's FuseOps).

Words: a *primitive* op is one of `relay.PRIMITIVE_OPS`; its *pattern* is TVM's OpPatternKind;
a *group* is a set of ops that becomes one `relay.fused` and later one kernel. The input is
normally plan-devices output, where every primitive op carries an `se_scope`; without
plan-devices the ops have none, and then neither have the groups.

Phase 1, clean: ops whose results are unused (and that have no side effects) are removed,
  repeatedly, so that dead ops neither join nor split a group.
Phase 2, graph: per function, the dataflow graph in TVM's order and its post-dominator tree
  (`fusion_graph`).
Phase 3, partition: TVM's three fusion phases on that tree (`fusion_groups`), with one rule
  added: two ops of different `se_scope` never share a group. `relay.device_copy`,
  `relay.constant` and every non-relay op are Opaque nodes that stay outside groups, so no
  group spans a copy and a constant becomes an input of the group that reads it.
Phase 4, materialise: each group becomes a `relay.fused` standing where the group's last op
  stood. Its inputs (and block arguments) are the values the group reads from outside, in the
  order TVM's FuseMutator meets them (a post-order walk from the last op, operands in order,
  each value once); its body holds the ops in program order, without their `se_scope` (the
  group's placement is the `se_scope` of the `relay.fused`), and yields the last op's result.
  `kernel_name` is `fused_` + the op names in program order (without `relay.`, dots as `_`),
  cut to 80 characters; a name taken by an earlier group (or symbol) of the module gets `_1`,
  `_2`, ... in module order.

Invariants: every primitive op at the top level of a function ends up in exactly one
`relay.fused`; each group has one placement and one result. One result is guaranteed by TVM's
rule rather than by splitting: a node only ever joins its immediate post-dominator, together
with every node on the paths between them, so all uses of a group's ops except the last
(the post-dominator every path reaches) stay inside the group; materialising checks this.
Running the pass twice changes nothing (fused ops are Opaque and their bodies are left alone).

Deviations from TVM: the placement rule above; scalar constants are not inlined into groups
(TVM marks them ElemWise and fuses them; here every constant is an input); softmax is Opaque
(newer TVM makes it OutEWiseFusable); kernel names are cut to 80 characters without TVM's
hash suffix, and also avoid the names of the module's functions.

Not handled: primitive ops nested in other ops' regions, and functions of several blocks
(both are reported as errors); TVM's `max_function_args` limit.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.transforms.dead_code_elimination import is_trivially_dead

from xrelay.diagnostics import ConfigError, LoweringError, location_of
from xrelay.dialects.relay import FusedOp, RelayOp, YieldOp
from xrelay.dialects.se_scope import SEScopeAttr
from xrelay.transforms.fusion_graph import IndexedForwardGraph, build_graph, is_primitive
from xrelay.transforms.fusion_groups import GraphPartitioner, Group

MAX_KERNEL_NAME = 80


@dataclass(frozen=True)
class FuseOpsPass(ModulePass):
    """Fuses primitive relay ops into `relay.fused` groups by TVM's rules."""

    name = "fuse-ops"
    max_depth: int = 256

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        check_max_depth(self.max_depth)
        bodies = function_bodies(op)
        names = KernelNames(taken=existing_symbols(op))
        for body in bodies:
            remove_dead_ops(body)
            graph = build_graph(body)
            groups = GraphPartitioner(self.max_depth).partition(graph)
            for members in op_groups(body, graph, groups):
                fuse_group(members, names)


# --- preconditions ----------------------------------------------------------------------------


def check_max_depth(max_depth: int) -> None:
    if max_depth < 1:
        raise ConfigError(
            f"fuse-ops expects max-depth >= 1 (the most ops a group may hold), but found "
            f"{max_depth}; use max-depth=1 to keep every op in a group of its own"
        )


def function_bodies(module: ModuleOp) -> list[Block]:
    """The body of each function with a body, in module order, after checking where ops are."""
    bodies: list[Block] = []
    for op in module.walk():
        if isinstance(op, func.FuncOp) and op.body.blocks:
            if len(op.body.blocks) > 1:
                _fail(
                    op,
                    f"fuse-ops expects functions of one block, but @{op.sym_name.data} "
                    f"has {len(op.body.blocks)}; fuse-ops handles dataflow functions only",
                )
            bodies.append(op.body.block)
        elif is_primitive(op) and not _is_fusable_position(op):
            parent = op.parent_op()
            _fail(
                op,
                f"fuse-ops expects '{op.name}' at the top level of a function body, "
                f"but found it inside '{parent.name if parent else 'nothing'}'; "
                f"move it out of the region, or call a function that holds it",
            )
    return bodies


def _is_fusable_position(op: Operation) -> bool:
    parent = op.parent_op()
    return isinstance(parent, (func.FuncOp, FusedOp))


def _fail(op: Operation, message: str) -> None:
    message = f"{location_of(op)}: {message}"
    op.emit_error(message, LoweringError(message))


def existing_symbols(module: ModuleOp) -> set[str]:
    """Names a new kernel must not take: functions, and kernels of groups already fused."""
    names: set[str] = set()
    for op in module.walk():
        if isinstance(op, func.FuncOp):
            names.add(op.sym_name.data)
        elif isinstance(op, FusedOp) and op.kernel is not None:
            names.add(op.kernel)
    return names


# --- Phase 1: clean ---------------------------------------------------------------------------


def remove_dead_ops(block: Block) -> None:
    """Erases ops whose results are all unused, consumers before producers (one sweep)."""
    op = block.last_op
    while op is not None:
        previous = op.prev_op
        if op.results and is_trivially_dead(op):
            block.erase_op(op)
        op = previous


# --- Phase 4: materialise ---------------------------------------------------------------------


def op_groups(block: Block, graph: IndexedForwardGraph, groups: list[Group]) -> list[list[RelayOp]]:
    """The primitive ops of each group in program order; groups ordered by their last op."""
    by_root: dict[int, list[RelayOp]] = {}
    for node, group in zip(graph.post_dfs_order, groups):
        if node.op is not None and is_primitive(node.op):
            by_root.setdefault(id(group.find_root()), []).append(node.op)
    position = {op: i for i, op in enumerate(block.ops)}
    members = [sorted(ops, key=position.__getitem__) for ops in by_root.values()]
    return sorted(members, key=lambda ops: position[ops[-1]])


def fuse_group(members: Sequence[RelayOp], names: KernelNames) -> FusedOp:
    """Moves `members` (in program order) into a new `relay.fused` at the last one's place."""
    last = members[-1]
    inside: set[Operation] = set(members)
    _check_one_result(members, inside)
    inputs = group_inputs(last, inside)
    body = Block(arg_types=[value.type for value in inputs])
    # `create` skips IRDL's argument checking, which dominated the pass's time; the module is
    # verified after the pass like after any other.
    fused = FusedOp.create(
        operands=inputs,
        result_types=[last.results[0].type],
        properties=group_properties(last.se_scope, names.claim(kernel_name(members))),
        regions=[Region(body)],
    )
    fused.location = last.location  # errors about the group point where it stands
    Rewriter.insert_op(fused, InsertPoint.before(last))
    last.results[0].replace_all_uses_with(fused.res)
    argument_of = dict(zip(inputs, body.args))
    for op in members:
        op.detach()
        op.operands = [argument_of.get(value, value) for value in op.operands]
        op.properties.pop("se_scope", None)
        body.add_op(op)
    body.add_op(YieldOp.create(operands=[last.results[0]]))
    return fused


def group_properties(scope: SEScopeAttr | None, name: str) -> dict[str, Attribute]:
    """The properties `FusedOp.__init__` would set, in its order (the printed order)."""
    properties: dict[str, Attribute] = {} if scope is None else {"se_scope": scope}
    properties["kernel_name"] = StringAttr(name)
    return properties


def _check_one_result(members: Sequence[Operation], inside: set[Operation]) -> None:
    for op in members[:-1]:
        for use in op.results[0].uses:
            if use.operation not in inside:
                raise AssertionError(
                    f"fuse-ops: {op.name} at {location_of(op)} escapes its group through "
                    f"{use.operation.name}; a group must have one result (internal error)"
                )


def group_inputs(last: Operation, inside: set[Operation]) -> list[SSAValue]:
    """Values read from outside, as TVM's FuseMutator allocates parameters: a post-order walk
    from the last op, operands in order, each value once."""
    inputs: dict[SSAValue, None] = {}
    walked = {last}
    stack = [iter(last.operands)]
    while stack:
        for value in stack[-1]:
            producer = value.owner
            if isinstance(producer, Operation) and producer in inside:
                if producer not in walked:
                    walked.add(producer)
                    stack.append(iter(producer.operands))
                    break
            else:
                inputs.setdefault(value, None)
        else:
            stack.pop()
    return list(inputs)


def kernel_name(members: Iterable[Operation]) -> str:
    parts = (op.name.removeprefix("relay.").replace(".", "_") for op in members)
    return ("fused_" + "_".join(parts))[:MAX_KERNEL_NAME]


@dataclass
class KernelNames:
    """Unique kernel names, TVM's way: the second `fused_exp` is `fused_exp_1`, and so on."""

    taken: set[str] = field(default_factory=set[str])
    next_suffix: dict[str, int] = field(default_factory=dict[str, int])

    def claim(self, name: str) -> str:
        if name in self.taken:
            suffix = self.next_suffix.get(name, 1)
            while f"{name}_{suffix}" in self.taken:
                suffix += 1
            self.next_suffix[name] = suffix + 1
            name = f"{name}_{suffix}"
        self.taken.add(name)
        return name
