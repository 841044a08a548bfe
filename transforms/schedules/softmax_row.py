"""
softmax_row: a work item per row of a softmax that is its group's result.

The parallel nest spans the result's axes but the softmax axis; each work item finds the
row's max and sum with `scf.for` loops (`GroupEmitter.softmax_row`), then stores the row in
a third loop. One element per work item would recompute the max and the sum per element.
"""

from __future__ import annotations

from xdsl.dialects import arith, scf
from xdsl.ir import SSAValue

from xrelay.dialects import relay
from xrelay.transforms.kernel_builder import shape_of
from xrelay.transforms.scalar_ops import GroupEmitter
from xrelay.transforms.schedules import Schedule, group_root, result_shape


def softmax_result(group: relay.FusedOp) -> relay.SoftmaxOp | None:
    op = group_root(group).owner
    return op if isinstance(op, relay.SoftmaxOp) else None


def matches(group: relay.FusedOp) -> bool:
    return softmax_result(group) is not None


def build(emitter: GroupEmitter, group: relay.FusedOp, out: SSAValue) -> scf.ParallelOp:
    softmax = softmax_result(group)
    assert softmax is not None
    shape, axis = result_shape(group), softmax.axis_value
    rows = shape[:axis] + shape[axis + 1 :]
    return emitter.parallel_nest(rows, lambda row: store_row(emitter, softmax, row, out))


def store_row(e: GroupEmitter, op: relay.SoftmaxOp, row: list[SSAValue], out: SSAValue) -> None:
    """A whole row of a softmax that is the group's result: max, sum, then a store loop."""
    axis, extent = op.axis_value, shape_of(op.data)[op.axis_value]
    shifted_exp, total = e.softmax_row(op, row)

    def store(ks: list[SSAValue], accs: list[SSAValue]) -> list[SSAValue]:
        value = e.emit(arith.DivfOp(shifted_exp(ks[0]), total))
        return e.store(value, out, row[:axis] + ks + row[axis:])

    e.loops([extent], [], store)


SCHEDULE = Schedule("softmax_row", matches, build)
