"""
transposed_rows: whole output rows per work item of a cpu group whose anchor is a dense or
batch_matmul of short dot products with a small rhs.

The nest spans the result's axes but the last, the row axis divided by the rows per work
item. Two scratch `memref.alloca`: the rhs transposed, and the rows' sums.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import f32
from xdsl.ir import SSAValue

from xrelay.dialects import relay
from xrelay.transforms.kernel_builder import shape_of
from xrelay.transforms.scalar_ops import GroupEmitter
from xrelay.transforms.schedules import Schedule, group_root, kind_of, largest_power_of_two_dividing, result_shape
from xrelay.transforms.schedules.matmul_block import ROW_BLOCK_MIN_DEPTH, Matmul, dot_depth, matmul_anchor

# On the cpu, a short dot product (depth below ROW_BLOCK_MIN_DEPTH) whose rhs fits in
# TRANSPOSED_MAX_FLOATS is computed a block of whole rows per work item instead of in
# register blocks: the rhs copied transposed into scratch, the rows summed with unit-stride
# innermost loops. Blocks of up to TRANSPOSED_ROWS rows, at least TRANSPOSED_MIN_ROWS (each
# block copies the rhs once). Not OpenCL: the scratch would be a work item's private memory.
TRANSPOSED_MAX_FLOATS = 64 * 64
TRANSPOSED_ROWS = 16
TRANSPOSED_MIN_ROWS = 4


def transposed_rows(matmul: Matmul, group: relay.FusedOp) -> int | None:
    """How many whole output rows a work item of `matmul` computes with a transposed copy of
    its rhs, or None for register blocks."""
    shape = shape_of(matmul.res)
    depth = dot_depth(matmul)
    if kind_of(group).explicit_vectors or len(shape) < 2 or depth >= ROW_BLOCK_MIN_DEPTH:
        return None
    if depth * shape[-1] > TRANSPOSED_MAX_FLOATS:
        return None
    rows = largest_power_of_two_dividing(shape[-2], TRANSPOSED_ROWS)
    return rows if rows >= TRANSPOSED_MIN_ROWS else None


def matches(group: relay.FusedOp) -> bool:
    matmul = matmul_anchor(group)
    return matmul is not None and transposed_rows(matmul, group) is not None


def build(emitter: GroupEmitter, group: relay.FusedOp, out: SSAValue) -> scf.ParallelOp:
    matmul = matmul_anchor(group)
    rows = transposed_rows(matmul, group) if matmul is not None else None
    assert matmul is not None and rows is not None
    root, shape = group_root(group), result_shape(group)
    tiles = (*shape[:-2], shape[-2] // rows)
    return emitter.parallel_nest(tiles, lambda tile: store_rows(emitter, matmul, root, tile, out, rows))


def store_rows(e: GroupEmitter, op: Matmul, root: SSAValue, tile: list[SSAValue], out: SSAValue, rows: int) -> None:
    """The work item of `rows` whole output rows of a group whose anchor `op` has the
    shape of its result `root`: rows tile[-1] * rows + r of the matrix at tile[:-1].
    The rhs (n x k, stored transposed) is copied into a k x n scratch matrix, then

        for r, for k:  acc[r, j] += x[i_r, k] * rhs_t[k, j]  for every j

    whose innermost loop is unit-stride and carries nothing (the i-k-j order of
    `conv_rows.store_rows`), so no sum ends in a fold of vector lanes; then `root` is stored
    along the rows, reading the anchor from `acc`. For short dot products, where the
    lane folds of register blocks cost as much as their multiply-adds (C batch_matmul
    8x64x64, bench/kernels.py: 14-16 GFLOP/s in register blocks, 28-33 in this order).
    The copy costs one load and store per `rows` multiply-adds.
    """
    *lead, row_tile = tile
    first = e.mul_const(row_tile, rows)
    width = shape_of(op.res)[-1]
    depth, _, _ = e.dot_factors(op, [*lead, first, e.index(0)])
    rhs_t = e.emit(memref.AllocaOp.get(f32, shape=[depth, width]))

    def copy(ivs: list[SSAValue], _: list[SSAValue]) -> list[SSAValue]:
        j, k = ivs
        return e.store(e.dot_factors(op, [*lead, first, j])[2](k), rhs_t, [k, j])

    e.loops([width, depth], [], copy)

    def rhs_at(k: SSAValue, j: SSAValue) -> SSAValue:
        return e.emit(memref.LoadOp.get(rhs_t, [k, j]))

    sum_rows(e, op, Rows(lead, first, rows, width, depth), rhs_at, root, out)


RhsAt = Callable[[SSAValue, SSAValue], SSAValue]  # (k, j) -> the rhs's element


@dataclass(frozen=True)
class Rows:
    """A work item's block of whole output rows: first + r for r < count of the matrix at
    `lead`, each `width` long, of dot products `depth` long."""

    lead: list[SSAValue]
    first: SSAValue
    count: int
    width: int
    depth: int


def sum_rows(e: GroupEmitter, op: Matmul, rows: Rows, rhs_at: RhsAt, root: SSAValue, out: SSAValue) -> None:
    """The block's sums in a scratch `acc` in i-k-j order, then `root` stored along the rows
    reading the anchor `op` from `acc`:

        for r, for k:  acc[r, j] += x[first + r, k] * rhs_at(k, j)  for every j

    (the innermost loop unit-stride where `rhs_at` is, and carrying nothing)."""
    lead, first = rows.lead, rows.first
    acc = e.emit(memref.AllocaOp.get(f32, shape=[rows.count, rows.width]))
    e.loops([rows.count, rows.width], [], lambda ivs, _: e.store(e.f32(0.0), acc, ivs))

    def row_step(ivs: list[SSAValue], _: list[SSAValue]) -> list[SSAValue]:
        r, k = ivs
        x = e.dot_factors(op, [*lead, e.add(first, r), e.index(0)])[1](k)

        def accumulate(js: list[SSAValue], _: list[SSAValue]) -> list[SSAValue]:
            w = rhs_at(k, js[0])
            total = e.emit(memref.LoadOp.get(acc, [r, js[0]]))
            return e.store(e.emit(arith.AddfOp(total, e.emit(arith.MulfOp(x, w)))), acc, [r, js[0]])

        return e.loops([rows.width], [], accumulate)

    e.loops([rows.count, rows.depth], [], row_step)
    store_sums(e, op, rows, acc, root, out)


def store_sums(e: GroupEmitter, op: Matmul, rows: Rows, acc: SSAValue, root: SSAValue, out: SSAValue) -> None:
    """`root` stored along the rows, reading the anchor `op`'s sums from `acc` [r, j]."""
    lead, first = rows.lead, rows.first

    def store(ivs: list[SSAValue], _: list[SSAValue]) -> list[SSAValue]:
        r, j = ivs
        idx = [*lead, e.add(first, r), j]
        e.remember(op.res, idx, e.emit(memref.LoadOp.get(acc, [r, j])))
        return e.store(e.value_at(root, idx), out, idx)

    e.loops([rows.count, rows.width], [], store)


SCHEDULE = Schedule("transposed_rows", matches, build)
