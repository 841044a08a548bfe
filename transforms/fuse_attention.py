"""
fuse-attention: the scores' product group, the softmax group after it (and an elementwise
group of the softmax alone, torch's `where(p != p, 0, p)`) and the product group that
multiplies the probabilities by v become one group, whose kernel keeps the scores in scratch.

fuse-ops leaves attention's `batch_matmul(softmax(batch_matmul(q, k) * scale), v)` in three
groups: batch_matmul is OutEWiseFusable and softmax Opaque (DESIGN.md's table), so the scores
([b, m, n]) go through memory twice, and each group is a kernel (at 2 threads a parallel
region paying its threads' wake-up). A schedule that computes the scores a block of query
rows at a time can take their softmax and the product with v before the next block
(schedules/attention_rows.py): this pass makes those groups, and leaves the others alone.

Words: a *scores group* is a `relay.fused` whose first op is a batch_matmul or matmul (a
*product*) of the group's result shape, followed by elementwise and broadcast ops only (the
scale, a mask added); a *softmax group* is a `relay.fused` holding one softmax along the last
axis of its input; a *fix group* is a `relay.fused` of elementwise ops of the softmax's
result and scalar constants only, of its shape; an *output group* is a `relay.fused` whose
first op is a product whose lhs is a group input that nothing else in the group reads,
followed by elementwise and broadcast ops only; a *move group* is a `relay.fused` of one
tensor input (and scalar constants) whose ops only move data (reshapes, transposes, strided
slices, squeezes, expand_dims: MOVES) or multiply it by a scalar
(`attention_rows.operand_op`: torch scales q and k so). The input is fuse-ops output.

Phase 1, match: each softmax group whose input is the result of a scores group that nothing
  else uses, and whose result only an output group reads (as its product's lhs), directly or
  through a fix group read by nothing else, all with the same se_scope (or all without). With them, the move groups whose results
  the scores group's product reads (q and k) and the output group's reads as its rhs
  (v), on that scope and read by nothing else: the heads of a Q/K/V dense's result (slice,
  reshape, transpose), which attention_rows then reads where they lie instead of three
  kernels copying them.
  Where one chain's output group is the next one's scores group (an attention of an
  attention's result), the first chain merged takes it and the other stays as it was.
Phase 2, merge (`group_chains.merge_where`, as fuse-conv-pool merges): a new `relay.fused` of
  the groups' inputs (each value once), holding a copy of the move groups' ops, then the
  scores group's, the softmax group's and the output group's (each reading the values the
  ones before yielded), yielding what the output group yielded; their se_scope;
  `kernel_name` named as fuse-ops names groups, after its ops but the moves, unique in the
  module.
Phase 3, decide: the merged group replaces the three only where convert-relay-to-loops would
  lower it with attention_rows (`pick_schedule`), which checks the ops between the scores
  and the softmax are elementwise ops of the scores and of values from outside (`segment`),
  and that its scratch is small enough (cpu and opencl). Elsewhere the merged group is dropped: another schedule would
  compute every score again for each output that reads it.

Running the pass twice changes nothing (a merged group holds a softmax among other ops, so
it is no softmax group).

The transformer block of bench/models.py (4 heads, 128 x 128 scores), its attention as one
kernel against the three, built both ways in one process and interleaved (medians of 25
rounds of profiled node times and of whole runs): C at 1 thread 0.203-0.204 against
0.210-0.214 ms (0.96-0.97x), the whole block 0.99x (load 1.1 and 2.8-3.1 alike); at 2
threads 0.155-0.159 against 0.216-0.236 ms (0.69-0.72x: one parallel region's wake-up
instead of three), the whole block 0.95-0.96x (two runs, load 1.1; with the second core
busy, load 2.8-3.1, both builds were slower at 2 threads than at 1 and the ratio 1.0).
OpenCL (PoCL, 1 thread) 0.92x (attention_rows' docstring).

With the heads' move groups taken in (the same block, its Q/K/V denses combined, built with
and without them in one process, 40 interleaved rounds with numpy and onnxruntime): C 0.99x
the time at 1 thread, 0.97x at 2; OpenCL 0.99x and 0.95x. The attention kernel reads k and
v with a stride of the dense's row (768 floats) instead of the head's (64): 0.205 -> 0.217
ms in C at 1 thread, against 0.054 ms of the three copies it saves; on PoCL 0.38 -> 0.35 ms
(v's pack now reads along rows).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import BlockArgument, SSAValue
from xdsl.passes import ModulePass

from xrelay.dialects import relay
from xrelay.transforms.convert_relay_to_loops import pick_schedule
from xrelay.transforms.fuse_ops import KernelNames, existing_symbols
from xrelay.transforms.group_chains import anchored, is_elementwise, merge_where
from xrelay.transforms.kernel_builder import shape_of
from xrelay.transforms.schedules import MOVES, attention_rows
from xrelay.transforms.schedules.attention_rows import Product


@dataclass(frozen=True)
class FuseAttentionPass(ModulePass):
    name = "fuse-attention"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        names = KernelNames(taken=existing_symbols(op))
        merged_groups: set[relay.FusedOp] = set()
        for chain in matches(op):
            if merged_groups.intersection(chain):  # an output group that was also a scores group
                continue
            if merge_where(chain, names, lowered_by_attention_rows, named_after=lambda op: not isinstance(op, MOVES)):
                merged_groups.update(chain)


Chain = tuple[relay.FusedOp, ...]  # the move groups of q, k and v, then scores, softmax, [fix,] output groups


# --- Phase 1: match -----------------------------------------------------------------------------


def matches(module: ModuleOp) -> list[Chain]:
    """(moves..., scores group, softmax group, [fix group,] output group) for each softmax
    group between the two, on one scope, nothing else using the scores or the softmax."""
    found: list[Chain] = []
    for softmax_group in [op for op in module.walk() if isinstance(op, relay.FusedOp)]:
        if not is_softmax_group(softmax_group) or not softmax_group.res.has_one_use():
            continue
        scores_group = softmax_group.inputs[0].owner
        after = only_user(softmax_group)
        fix = after if after is not None and is_fix_group(after, softmax_group.res) else None
        output_group = only_user(fix) if fix is not None else after
        if not isinstance(scores_group, relay.FusedOp) or output_group is None:
            continue
        if product_anchor(scores_group) is None or not scores_group.res.has_one_use():
            continue
        if not reads_as_lhs(output_group, (fix or softmax_group).res):
            continue
        groups = [scores_group, softmax_group, *([fix] if fix else []), output_group]
        if len({group.se_scope for group in groups}) == 1:
            moves = [*operand_moves(scores_group), *operand_moves(output_group, lhs=False)]
            found.append((*moves, *groups))
    return found


def only_user(group: relay.FusedOp) -> relay.FusedOp | None:
    """The group that reads `group`'s result, where one op does and it is a group."""
    if not group.res.has_one_use():
        return None
    user = next(iter(group.res.uses)).operation
    return user if isinstance(user, relay.FusedOp) else None


def product_anchor(group: relay.FusedOp) -> Product | None:
    """The group's batch_matmul or matmul, where it is its first op, followed by elementwise
    and broadcast ops only."""
    return anchored(group, relay.BatchMatmulOp) or anchored(group, relay.MatmulOp)


def operand_moves(group: relay.FusedOp, lhs: bool = True) -> list[relay.FusedOp]:
    """The move groups whose results `group`'s product reads (its lhs, if `lhs`, and its
    rhs), on the group's scope and read by nothing else."""
    first = next(iter(group.body.block.ops))
    assert isinstance(first, Product)
    operands = [first.lhs, first.rhs] if lhs else [first.rhs]
    args = [a for a in operands if isinstance(a, BlockArgument) and a.has_one_use()]
    producers = [group.inputs[a.index].owner for a in args]
    return [
        p
        for p in producers
        if isinstance(p, relay.FusedOp) and is_move_group(p) and p.res.has_one_use() and p.se_scope == group.se_scope
    ]


def is_move_group(group: relay.FusedOp) -> bool:
    """A group of one input (and scalar constants) whose ops move data or scale it by a
    scalar (`attention_rows.operand_op`: the heads of a Q/K/V dense, q and k scaled)."""
    ops = list(group.body.block.ops)[:-1]
    tensors = [v for v in group.inputs if math.prod(shape_of(v)) > 1]
    return len(tensors) == 1 and bool(ops) and all(attention_rows.operand_op(op) for op in ops)


def is_fix_group(group: relay.FusedOp, probabilities: SSAValue) -> bool:
    """A group of elementwise ops of the softmax's result alone (and scalar constants), of
    its shape: torch's `where(p != p, 0, p)` after a softmax whose rows may be all masked."""
    ops = list(group.body.block.ops)[:-1]
    others = [v for v in group.inputs if v != probabilities]
    return (
        bool(ops)
        and probabilities in group.inputs
        and all(isinstance(v.owner, relay.ConstantOp) and math.prod(shape_of(v)) == 1 for v in others)
        and all(is_elementwise(op) for op in ops)
        and shape_of(group.res) == shape_of(probabilities)
    )


def is_softmax_group(group: relay.FusedOp) -> bool:
    """One softmax, along the last axis of the group's one input."""
    ops = list(group.body.block.ops)[:-1]
    if len(ops) != 1 or not isinstance(ops[0], relay.SoftmaxOp) or len(group.inputs) != 1:
        return False
    softmax = ops[0]
    return isinstance(softmax.data, BlockArgument) and softmax.axis_value == len(shape_of(softmax.res)) - 1


def reads_as_lhs(group: relay.FusedOp, value: SSAValue) -> bool:
    """Whether `group` is an output group whose product's lhs is `value` (one input of the
    group, read by nothing else in it)."""
    first, *tail = list(group.body.block.ops)[:-1]
    if not isinstance(first, Product) or not all(is_elementwise(op) for op in tail):
        return False
    args = [arg for arg, input in zip(group.body.block.args, group.inputs, strict=True) if input == value]
    return len(args) == 1 and args[0] == first.lhs and args[0].has_one_use()


# --- Phase 3: decide ----------------------------------------------------------------------------


def lowered_by_attention_rows(merged: relay.FusedOp) -> bool:
    return pick_schedule(merged).name == attention_rows.SCHEDULE.name
