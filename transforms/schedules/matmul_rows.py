"""
matmul_rows: whole output rows per work item of a cpu group whose anchor is a relay.nn.matmul
of the result's shape (the rhs [k, n] not transposed).

The nest spans the result's axes but the last, the row axis divided by the rows per work
item. The rows' sums accumulate in one scratch `memref.alloca` in i-k-j order:

    for r, for k:  acc[r, j] += x[i_r, k] * rhs[k, j]  for every j

whose innermost loop is unit-stride in both the rhs and the scratch and carries nothing, so
gcc vectorises it without folding lanes; then the group's result is stored along the rows,
reading the anchor from `acc`. Register blocks (matmul_block) would read the rhs with a
stride of a row per k. Not OpenCL: the scratch would be a work item's private memory.
"""

from __future__ import annotations

from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import f32
from xdsl.ir import SSAValue

from xrelay.dialects import relay
from xrelay.transforms.kernel_builder import shape_of
from xrelay.transforms.scalar_ops import GroupEmitter
from xrelay.transforms.schedules import Schedule, anchor_of, group_root, largest_power_of_two_dividing, result_shape

# Up to ROWS rows per work item (the largest power of two dividing the row count), while the
# scratch holds at most MAX_SCRATCH_FLOATS (64 KiB of a thread's stack); one row of a wider
# result (a vocabulary projection) takes what it needs. Every cpu matmul is taken: the
# packed_matmul schedule after this one packs only transposed rhs (dense, batch_matmul).
ROWS = 4
MAX_SCRATCH_FLOATS = 16384


def matmul_rows(group: relay.FusedOp) -> tuple[relay.MatmulOp, int] | None:
    """The group's matmul anchor and its rows per work item, if this schedule takes it."""
    scope, op = group.se_scope, anchor_of(group, relay.MatmulOp)
    if op is None or scope is None or scope.device != "cpu":
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
    acc = e.emit(memref.AllocaOp.get(f32, shape=[rows, width]))
    e.loops([rows, width], [], lambda ivs, _: e.store(e.f32(0.0), acc, ivs))

    def row_step(ivs: list[SSAValue], _: list[SSAValue]) -> list[SSAValue]:
        r, k = ivs
        x = e.dot_factors(op, [*lead, e.add(first, r), e.index(0)])[1](k)

        def accumulate(js: list[SSAValue], _: list[SSAValue]) -> list[SSAValue]:
            w = e.dot_factors(op, [*lead, first, js[0]])[2](k)
            total = e.emit(memref.LoadOp.get(acc, [r, js[0]]))
            return e.store(e.emit(arith.AddfOp(total, e.emit(arith.MulfOp(x, w)))), acc, [r, js[0]])

        return e.loops([width], [], accumulate)

    e.loops([rows, depth], [], row_step)

    def store(ivs: list[SSAValue], _: list[SSAValue]) -> list[SSAValue]:
        r, j = ivs
        idx = [*lead, e.add(first, r), j]
        e.remember(op.res, idx, e.emit(memref.LoadOp.get(acc, [r, j])))
        return e.store(e.value_at(root, idx), out, idx)

    e.loops([rows, width], [], store)


SCHEDULE = Schedule("matmul_rows", matches, build)
