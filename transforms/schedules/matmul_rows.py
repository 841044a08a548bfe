"""
matmul_rows: whole output rows per work item of a cpu group whose anchor is a relay.nn.matmul
of the result's shape (the rhs [k, n] not transposed).

The nest spans the result's axes but the last, the row axis divided by the rows per work
item. The rows' sums accumulate in one scratch `memref.alloca` in i-k-j order:

    for r, for k:  acc[r, j] += x[i_r, k] * rhs[k, j]  for every j

whose innermost loop is unit-stride in both the rhs and the scratch and carries nothing, so
gcc vectorises it without folding lanes; then the group's result is stored along the rows,
reading the anchor from `acc` (`transposed_rows.sum_rows`, without the transposed copy).
Register blocks (matmul_block) would read the rhs with a stride of a row per k. Not on a
device launched in work groups (OpenCL): the scratch would be a work item's private memory.
"""

from __future__ import annotations

from xdsl.dialects import scf
from xdsl.ir import SSAValue

from xrelay.dialects import relay
from xrelay.transforms.kernel_builder import shape_of
from xrelay.transforms.scalar_ops import GroupEmitter
from xrelay.transforms.schedules import (
    Schedule,
    anchor_of,
    group_root,
    kind_of,
    largest_power_of_two_dividing,
    result_shape,
)
from xrelay.transforms.schedules.transposed_rows import Rows, sum_rows

# Up to ROWS rows per work item (the largest power of two dividing the row count), while the
# scratch holds at most MAX_SCRATCH_FLOATS (64 KiB of a thread's stack); one row of a wider
# result (a vocabulary projection) takes what it needs. packed_matmul, before this one,
# takes the matmuls of enough work; this one every other cpu matmul.
ROWS = 4
MAX_SCRATCH_FLOATS = 16384


def matmul_rows(group: relay.FusedOp) -> tuple[relay.MatmulOp, int] | None:
    """The group's matmul anchor and its rows per work item, if this schedule takes it."""
    scope, op = group.se_scope, anchor_of(group, relay.MatmulOp)
    if op is None or scope is None or kind_of(group).work_groups:
        return None
    width = shape_of(op.res)[-1]
    rows = largest_power_of_two_dividing(shape_of(op.res)[-2], ROWS)
    while rows > 1 and rows * width > MAX_SCRATCH_FLOATS:
        rows //= 2
    return op, rows


def matches(group: relay.FusedOp) -> bool:
    return matmul_rows(group) is not None


def build(emitter: GroupEmitter, group: relay.FusedOp, out: SSAValue) -> scf.ParallelOp:
    found = matmul_rows(group)
    assert found is not None
    op, rows = found
    root, shape = group_root(group), result_shape(group)
    tiles = (*shape[:-2], shape[-2] // rows)
    return emitter.parallel_nest(tiles, lambda tile: store_rows(emitter, op, root, tile, out, rows))


def store_rows(
    e: GroupEmitter, op: relay.MatmulOp, root: SSAValue, tile: list[SSAValue], out: SSAValue, rows: int
) -> None:
    """The work item of `rows` whole output rows, tile[-1] * rows + r of the matrix at tile[:-1]."""
    *lead, row_tile = tile
    first = e.mul_const(row_tile, rows)
    width = shape_of(op.res)[-1]
    depth, _, _ = e.dot_factors(op, [*lead, first, e.index(0)])

    def rhs_at(k: SSAValue, j: SSAValue) -> SSAValue:
        return e.dot_factors(op, [*lead, first, j])[2](k)

    sum_rows(e, op, Rows(lead, first, rows, width, depth), rhs_at, root, out)


SCHEDULE = Schedule("matmul_rows", matches, build)
