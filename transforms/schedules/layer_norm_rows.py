"""
layer_norm_rows: a work item per row of a layer_norm that is its group's result.

A row is the axes the layer_norm normalises (`axis`..), so the parallel nest spans the axes
before `axis`. Each work item computes the row's mean and 1/std first (two `scf.for` nests,
`GroupEmitter.layer_norm_stats`, memoised in the work item's scope), then stores the row in a
third nest that reads them. One element per work item would recompute both for every element.
fuse-ops never fuses a consumer into a layer_norm (it is CommReduce), so it is its group's
result; its producers (a residual add) are computed inline in each of the three nests.
"""

from __future__ import annotations

from xdsl.dialects import scf
from xdsl.ir import SSAValue

from xrelay.dialects import relay
from xrelay.transforms.kernel_builder import shape_of
from xrelay.transforms.scalar_ops import GroupEmitter
from xrelay.transforms.schedules import Schedule, group_root, result_shape


def layer_norm_result(group: relay.FusedOp) -> relay.LayerNormOp | None:
    op = group_root(group).owner
    return op if isinstance(op, relay.LayerNormOp) else None


def matches(group: relay.FusedOp) -> bool:
    return layer_norm_result(group) is not None


def build(emitter: GroupEmitter, group: relay.FusedOp, out: SSAValue) -> scf.ParallelOp:
    op = layer_norm_result(group)
    assert op is not None
    rows = result_shape(group)[: op.axis_value]
    return emitter.parallel_nest(rows, lambda row: store_row(emitter, op, row, out))


def store_row(e: GroupEmitter, op: relay.LayerNormOp, row: list[SSAValue], out: SSAValue) -> None:
    """The row's statistics in the work item's scope, then a nest storing each element."""
    e.layer_norm_stats(op, row)
    extents = list(shape_of(op.res)[op.axis_value :])
    e.loops(extents, [], lambda ivs, _: e.store(e.value_at(op.res, [*row, *ivs]), out, [*row, *ivs]))


SCHEDULE = Schedule("layer_norm_rows", matches, build)
