"""
matmul_rows: whole output rows per work item of a cpu group whose anchor is a relay.nn.matmul
of the result's shape (the rhs [k, n] not transposed).

The nest spans the result's axes but the last, the row axis divided by the rows per work
item. The rows' sums accumulate in one scratch `memref.alloca` in i-k-j order:

    for r, for k:  acc[r, j] += x[i_r, k] * rhs[k, j]  for every j

whose innermost loop is unit-stride in both the rhs and the scratch and carries nothing, so
gcc vectorises it without folding lanes; then the group's result is stored along the rows,
reading the anchor from `acc` (`transposed_rows.sum_rows`, without the transposed copy).
Where the rhs is a kernel input of one matrix (an RNN's recurrent weight, `h @ R.T` of every
step) and the width whole vectors, the sums are instead register blocks (`vector_tile`) of
the micro-kernel (`micro_kernel.accumulate`: a rhs vector loaded and one FMA per sum per k)
stored once into `acc`: the scalar form loaded and stored all of `acc` for every k.
Register blocks (matmul_block) would read the rhs with a stride of a row per k. Not on a
device launched in work groups (OpenCL): the scratch would be a work item's private memory.
"""

from __future__ import annotations

from xdsl.dialects import memref, scf
from xdsl.dialects.builtin import f32
from xdsl.ir import SSAValue

from xrelay.dialects import relay
from xrelay.runtime.machine import Features
from xrelay.transforms.kernel_builder import shape_of
from xrelay.transforms.scalar_ops import GroupEmitter
from xrelay.transforms.schedules import (
    Schedule,
    anchor_of,
    features_of,
    group_root,
    kind_of,
    largest_power_of_two_dividing,
    result_shape,
)
from xrelay.transforms.schedules import micro_kernel as mk
from xrelay.transforms.schedules.transposed_rows import Rows, store_sums, sum_rows

# Up to ROWS rows per work item (the largest power of two dividing the row count), while the
# scratch holds at most MAX_SCRATCH_FLOATS (64 KiB of a thread's stack); one row of a wider
# result (a vocabulary projection) takes what it needs. packed_matmul, before this one,
# takes the matmuls of enough work; this one every other cpu matmul.
ROWS = 4
MAX_SCRATCH_FLOATS = 16384
# A register block's vectors per row at most (`block_vectors`): the most dividing the row's
# vectors whose step fits the target's registers. With one row, each rhs vector feeds one FMA
# (gcc folds its load into it), so the block can span a whole row of 16 AVX-512 vectors, read
# as one unit-stride stream. LSTM's step, 1x64 . 64x256 with the weight in L2, alone at 1
# thread (gcc -O3, min of 300 x 1000 calls, two weights in turn): scalar i-k-j sums 0.45 us,
# blocks of 2 vectors 0.52, of 8 0.46, a whole row of 16 0.26.
MAX_VECTORS = 16


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


def vector_tile(e: GroupEmitter, group: relay.FusedOp, op: relay.MatmulOp, rows: int) -> mk.Tile | None:
    """The register block of a work item's `rows` rows where the rhs is a kernel input of one
    matrix and the width whole vectors (`block_vectors`); else None (the scalar i-k-j sums)."""
    features = features_of(group)
    if op.rhs not in e.inputs or len(shape_of(op.rhs)) != 2:
        return None
    vectors = block_vectors(features, rows, shape_of(op.res)[-1])
    return None if vectors is None else mk.Tile(rows, vectors, features.vector_floats)


def block_vectors(features: Features, rows: int, width: int) -> int | None:
    """The vectors per row of a register block of `rows` rows `width` wide on `features`'
    machine: the most (at most MAX_VECTORS, dividing the row's) whose step fits its
    registers; None where the width is not whole vectors."""
    lanes = features.vector_floats
    if lanes < 2 or width % lanes:
        return None
    fits = [
        v
        for v in range(1, MAX_VECTORS + 1)
        if (width // lanes) % v == 0 and block_registers(rows, v, features.fma) <= features.vector_registers
    ]
    return max(fits) if fits else None


def block_registers(rows: int, vectors: int, fma: bool) -> int:
    """The vector registers of a step of a block: the micro-kernel's (`registers_needed`), but
    with one row only one rhs vector live at a time (each feeds one FMA)."""
    if rows > 1:
        return mk.registers_needed(rows, vectors, fma)
    return vectors + 2 + (0 if fma else 1)


def build(emitter: GroupEmitter, group: relay.FusedOp, out: SSAValue) -> scf.ParallelOp:
    found = matmul_rows(group)
    assert found is not None
    op, rows = found
    root, shape = group_root(group), result_shape(group)
    tiles = (*shape[:-2], shape[-2] // rows)
    block = vector_tile(emitter, group, op, rows)
    return emitter.parallel_nest(tiles, lambda tile: store_rows(emitter, op, root, tile, out, rows, block))


def store_rows(
    e: GroupEmitter,
    op: relay.MatmulOp,
    root: SSAValue,
    tile: list[SSAValue],
    out: SSAValue,
    rows: int,
    block: mk.Tile | None,
) -> None:
    """The work item of `rows` whole output rows, tile[-1] * rows + r of the matrix at tile[:-1]
    (in register blocks of `block` where given)."""
    *lead, row_tile = tile
    first = e.mul_const(row_tile, rows)
    width = shape_of(op.res)[-1]
    depth, _, _ = e.dot_factors(op, [*lead, first, e.index(0)])
    block_rows = Rows(lead, first, rows, width, depth)
    if block is not None:
        store_blocks(e, op, block_rows, block, root, out)
        return

    def rhs_at(k: SSAValue, j: SSAValue) -> SSAValue:
        return e.dot_factors(op, [*lead, first, j])[2](k)

    sum_rows(e, op, block_rows, rhs_at, root, out)


def store_blocks(
    e: GroupEmitter, op: relay.MatmulOp, rows: Rows, block: mk.Tile, root: SSAValue, out: SSAValue
) -> None:
    """The rows' sums in register blocks of `block` (the rhs `e.inputs[op.rhs]`, [K, N], read
    a vector at a time), stored into a scratch `acc`; then `root` stored along the rows
    reading the anchor from `acc`."""
    acc = e.emit(memref.AllocaOp.get(f32, shape=[rows.count, rows.width]))
    rhs = e.inputs[op.rhs]

    def columns(cs: list[SSAValue], _: list[SSAValue]) -> list[SSAValue]:
        j0 = e.mul_const(cs[0], block.columns)

        def at(r: int, v: int) -> list[SSAValue]:
            return [e.index(r), e.add_const(j0, v * block.lanes)]

        def lhs(ks: list[SSAValue], r: int) -> SSAValue:
            return e.dot_factors(op, [*rows.lead, e.add_const(rows.first, r), e.index(0)])[1](ks[0])

        def rhs_vector(ks: list[SSAValue], v: int) -> SSAValue:
            return mk.load(e, rhs, [ks[0], e.add_const(j0, v * block.lanes)], block.lanes)

        sums = mk.accumulate(e, block, [rows.depth], mk.zeros(e, block), lhs, rhs_vector)
        mk.store_block(e, block, sums, acc, at)
        return []

    e.loops([rows.width // block.columns], [], columns)
    store_sums(e, op, rows, acc, root, out)


SCHEDULE = Schedule("matmul_rows", matches, build)
