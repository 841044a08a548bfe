"""
packed_matmul: a cpu group whose anchor is a big enough dense, batch_matmul or matmul of the
result's shape, computed in packed panels by the register-blocked micro-kernel
(`micro_kernel.py`), with the group's other ops applied to each block before it is stored.

The micro-kernel's tile is the target's (`micro_kernel.register_tile` of `features_of(group)`:
16 x 1 vectors of 16 floats with AVX-512, 6 x 2 of 8 with AVX2, 6 x 2 of 4 with SSE), and the
blocks are whole tiles (`Blocking`). The nest spans the result's batch axes, its rows in
blocks of about ROWS and its columns in blocks of about COLUMNS (the last blocks may be
partial). A work item (one block of outputs), for each k-block (the whole dot product where a
work item's scratch stays small, up to MAX_DEPTH; else DEPTH or less, so that a panel of the
k-block stays in half the L1 data cache):

1. packs the rhs's block of columns of the k-block into scratch, `panel[p, k, j]` (the tile's
   columns per panel p, adjacent per k), and copies the lhs's block of rows into `rows[t, r, k]`
   (the tile's rows per panel t, each along k as in the lhs, ROW_PAD floats longer), unless the
   lhs is a kernel input whose rows a tile can read where they lie (`rows_spread`). Where
   the result's extent is not a multiple of the block, a row or column past its edge reads
   the last one (clamped: copied, and for a column computed, never stored; the row tile the
   result's last row falls in is computed with a tile of only its rows, `split_row_tiles`).
   The rhs layout is a parameter (`micro_kernel.Layout`): dense's and batch_matmul's rhs are
   transposed ([N, K]);
2. for each tile of the block (row tiles outer; panels outer where
   they are read from a pre-packed rhs): the micro-kernel's sums over the k-block, added to
   the block's sums in scratch (`sums[rows, columns]`; with a single k-block they start at
   zero instead).

Then the epilogue: each valid output of the block is the group's result (`value_at`) with
the anchor's value read from `sums` (`remember`): bias, activation and residual loops over a
block in L1, which gcc vectorises (tanh through libmvec).

Pre-packed weights (`PREPACKED`, the schedule "packed_matmul_prepacked"): where the anchor's
rhs (dense's weight) is a `relay.constant` of @main (a param bound at build time) read by
nothing else in the group, the packing of step 1 is done once, at build time, as onnxruntime
prepacks and TVM's AlterOpLayout + FoldConstant do. Before the kernel is built, `prepare`
gives the group a new `relay.constant` in place of the rhs, holding it in the panels the
micro-kernel reads, `packed[..., p, k, j]` = the rhs's element (n = min(C p + j, N - 1), k), C the tile's columns,
for every panel p of every block of columns (`pack_weight`; columns past N repeat the last,
as the clamped reads do; batch axes as the rhs's), marked `relay.packed_from` with the rhs's
type and the layout. It is inserted after the original constant and reused by every group
that packs that constant the same way; the original stays for any other user (dce drops it
when there is none). The work item then reads its panels from the packed input (panel
`first panel of the block + p`, step `k0 + k`) and has no pack loop and no panel scratch,
and prefetches the packed stream PREFETCH_AHEAD steps ahead of each load (`cpu.prefetch`);
the rest is as above. Single-thread dense with its weight bound as a param, pre-packed
against packed per work item in the same run (31 interleaved rounds, load 1.2-2): 64x784.
512x784 0.91x the time, 64x512.512x512 0.90x, 128x256.256x256 0.95x, 128x256.1024x256
0.94x, 128x1024.256x1024 0.97x.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from xdsl.dialects import memref, scf
from xdsl.dialects.builtin import StringAttr, UnitAttr, f32
from xdsl.ir import BlockArgument, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from xrelay.dialects import cpu, relay
from xrelay.runtime.machine import Features
from xrelay.transforms.kernel_builder import Extent, shape_of
from xrelay.transforms.scalar_ops import GroupEmitter
from xrelay.transforms.schedules import Schedule, features_of, group_root, kind_of, round_up
from xrelay.transforms.schedules import micro_kernel as mk
from xrelay.transforms.schedules.matmul_block import Matmul, dot_depth, matmul_anchor
from xrelay.values import constant_value

# A work item's block of outputs (about ROWS x COLUMNS: whole tiles, `blocking`) and its
# k-block (DEPTH, less where a panel of it would fill more than half the L1 data cache). With
# AVX-512's 16 x 1 tile of 16 floats: bench/kernels.py at 1 thread, GFLOP/s against OpenBLAS in
# the same run (a shared, loaded machine: OpenBLAS at 62-79), dense 64x784.512x784,
# dense 64x512.512x512, batch_matmul 4x128x64.4x128x64: a 16 x 1 tile (16 sums, one rhs
# vector and 16 broadcasts from the packed rows per step) 135%, 136%, 113%; 8 x 2 104%,
# 105%, 96%. Every work item packs its rows of the lhs and its columns of the rhs per
# k-block, which took 15-30% of the time in 64 x 64 blocks (measured against kernels that
# skip the packs): blocks of 128 x 128 pack each operand half as often, and were 4-17%
# faster than 64 x 64 at the MLP's and the transformer's shapes (GFLOP/s, one run, load
# 3.2: dense 64x784.512x784 93.6 -> 97.5, 128x256.256x256 93.2 -> 103.1, 128x1024.256x1024
# 81.1 -> 94.8, batch_matmul 4x128x64.4x128x64 77.7 -> 89.7); 128 x 64, 64 x 128 and 128 x
# 256 gained less, k-blocks of 128 or 512 as much as 256, which keeps the two panels at 128
# KiB each (stack scratch, also on OpenMP's threads: 320 KiB with the sums).
ROWS = 128
COLUMNS = 128
DEPTH = 256
# The lhs rows are copied as they lie (`micro_kernel.copy_rows`), not transposed into
# [k, r] panels (as the rhs is): the micro-kernel's 16 broadcasts per step then read 16 rows
# instead of one line, and the copy is unit-stride (0.5-6% faster, one run at load 1.7:
# dense 128x1024.256x1024 91.7 -> 97.3 GFLOP/s, 64x784.512x784 98.9 -> 100.1). Rows
# ROW_PAD floats longer than the k-block spread a tile's rows over the cache's sets (1 KiB
# apart without it); pads of 0 and 16 measured within 2% of 4.
ROW_PAD = 4
# The lhs is read where it lies, not copied, when the result has more than one block of
# columns (each work item would copy the same rows again), its rows are the kernel input's
# own (a dense's data, a batch_matmul's or matmul's lhs: row-major, k last), and
# a tile's 16 rows, K floats apart, fall in sets of the 32 KiB 8-way L1d (64 sets of 64
# bytes) at most 8 to a set (`rows_spread`): K = 784 (49 lines apart) puts them in 16 sets,
# 256 and 512 in 4 and 2; 1024 puts all 16 rows in one set, and its conflict misses made
# dense 128x1024.256x1024 2.1x and 64x2048.128x2048 1.9x the time of copied rows. The copy
# is made per work item, so 4 times per dense for the MLP's 64 rows and 4 column blocks;
# read in place instead, at 1 thread, interleaved (20 rounds, load 3): dense
# 128x256.256x256 0.98x the time, 128x256.1024x256 0.97x, 64x512.512x512 0.99x. Where the
# copy is made once (one block of columns) it stays: batch_matmul 4x128x64.4x128x64 took
# 1.02x the time in place.
L1_SETS = 64
L1_WAYS = 8
LINE_FLOATS = 16
# With the lhs in place and the rhs pre-packed the only scratch is the sums, and a k-block
# as deep as the dot product (up to MAX_DEPTH) adds to them once instead of once per k-block
# of DEPTH; so does any work item whose scratch (sums, copied rows, packed panels) stays
# within SCRATCH_MAX_BYTES, the 320 KiB of the DEPTH blocks. Both, with the prefetch below,
# against rows copied per work item in k-blocks of 256, at 1 thread, interleaved with
# onnxruntime (30 rounds, three runs, load 6): the MLP 784-512-512-10 0.80-0.81x the time
# (k-blocks of 256 with the rows in place: 0.83x in an earlier run), the transformer block
# 0.90-0.92x; alone, dense 64x784.512x784 0.90x, 64x512.512x512 0.96x, 128x256.1024x256 0.94x.
# Again with the in-place rows addressed from one pointer (constant offsets, targets/c_style
# split_constant), AVX-512, MAX_DEPTH 256 against 1024 (30 interleaved rounds, load 0.5):
# median GFLOP/s 64x784.512x784 0.89x, 64x512.512x512 0.91x, the others 0.99-1.00x.
MAX_DEPTH = 1024
SCRATCH_MAX_BYTES = 320 << 10
# A pre-packed rhs is one stream, panel after panel (`pack_weight`), which a work item reads
# from L3 or memory when the model's other layers (or another program) have run since:
# `cpu.prefetch` asks for the line PREFETCH_AHEAD steps (16 floats each) ahead of every
# step's panel load (8 KiB ahead). 16 to 256 steps measured alike on the MLP; on BERT's and
# GPT-2's denses 128 beat 64 (1 thread, prepacked, kernel CPU time, 20 interleaved rounds,
# load 11-15): x86-64-v3 128x768.3072x768 +2.2% GFLOP/s, 128x3072.768x3072 +3.1%,
# 128x768.768x768 +0.6%, 197x768.3072x768 +1.3%; native +1.3 to +2.0%, 197 rows -0.3%. MLP with its caches
# flushed (48 MB written) before each call: 0.90x the time without the prefetch; alone
# (interleaved with the kernels without it, 30 rounds), dense 64x784.512x784 0.97x,
# 128x1024.256x1024 0.96x, 128x256.1024x256 0.97x. The work item takes the panels in the
# order of the stream, each for every row tile in turn (panel-outer), so a panel comes in
# once and is reused while it is in L1/L2: MLP 0.95-0.97x the time of row tile outer (load
# 2.5-2.9, 30 rounds, interleaved with onnxruntime), transformer 0.98x, both 1.00x warm.
PREFETCH_AHEAD = 128

# How each anchor's rhs holds element (n, k): dense's and batch_matmul's transposed
# ([..., N, K]), matmul's plain ([..., K, N]); both pack into the same panels.
RHS_LAYOUT: dict[type[Matmul], mk.Layout] = {
    relay.DenseOp: mk.Layout.TRANSPOSED,
    relay.BatchMatmulOp: mk.Layout.TRANSPOSED,
    relay.MatmulOp: mk.Layout.PLAIN,
}

# Where the rows (the broadcast side: pixels, for ConvNeXt's pointwise layers) are many of 7
# and the 16 x 1 tile pads them (its 7 x 7 stage's 49 rows to 64, 196 to 208), a cpu kernel
# takes the ROWS_OF_SEVEN tile instead, where it fits the registers and pads the rows less than
# the 16-row tile (counting the last, partial tile of each whole). With
# AVX-512 (7 x 3 vectors: 21 sums, 3 rhs vectors), matmul + bias (+ relu) at 1 thread, min of
# 40 interleaved runs, load 8, GFLOP/s 16 x 1 -> 7 x 3: 49x768.768x3072 164 -> 227,
# 49x3072.3072x768 158 -> 198, 196x1536.1536x384 187 -> 254, 196x384.384x1536 192 -> 249;
# where neither pads (784x768.768x192 240 -> 258, 3136x96.96x384 176 -> 198) 16 x 1 was kept
# for the transformers' shapes, where 7 x 3 measured 0.9-1.0x (128x3072.3072x768 225 -> 203).
# ViT's 197 rows (7 x 3: 28 tiles and one of 1 row, 203 rows; 16 x 1: 12 and one of 5, 208)
# had kept 16 x 1 under a bound of 0.95x the padding; six of ViT's denses in a chain
# (197x768 . 768x3072, 3072x768, 768x2304, ...; 20 interleaved rounds, load 4.6-5.9) took 0.90x
# the time with 7 x 3 (190 -> 211 GFLOP/s, onnxruntime 214), and 1.04x / 1.08x at 128 / 64 rows,
# which 16 divides.
ROWS_OF_SEVEN = (7, 3)

# Smaller products (multiply-adds) stay with matmul_block / transposed_rows, as do results
# narrower than one vector (the MLP's 512 -> 10 layer) or shorter than a tile: a tile's rows
# are computed whole, and dense 1x784 . 512x784 ran at 5 GFLOP/s packed against 36 in
# register blocks; 12 rows at 57 against 62, 16 rows at 75 against 54. (A dense below the
# tile's rows whose weight is a bound param reads these panels all the same: packed_gemv.)
MIN_WORK = 1 << 17


@dataclass(frozen=True)
class Blocking:
    """A work item's blocks on one target: the micro-kernel's tile, the block of outputs
    (`rows` x `columns`, whole tiles) and the k-block (`depth`)."""

    tile: mk.Tile
    rows: int
    columns: int
    depth: int


def blocking(features: Features, tile: mk.Tile | None = None) -> Blocking:
    """The blocks on `features`' machine: its register tile (`micro_kernel.register_tile`),
    or `tile`, ROWS x COLUMNS cut to whole tiles, and a k-block of DEPTH, or the largest
    power of two under it whose panel (the tile's columns) fills at most half the L1 data
    cache."""
    tile = tile or mk.register_tile(features)
    panel_steps = max(1, features.l1d // 2 // (tile.columns * 4))
    depth = min(DEPTH, max(LINE_FLOATS, 1 << (panel_steps.bit_length() - 1)))
    rows = max(1, ROWS // tile.rows) * tile.rows
    columns = max(1, COLUMNS // tile.columns) * tile.columns
    return Blocking(tile, rows, columns, depth)


def blocking_of(group: relay.FusedOp) -> Blocking:
    """The blocks of `group`'s kernel: its target's (`features_of`), with the ROWS_OF_SEVEN
    tile where a cpu kernel's rows are many of 7 (`rows_of_seven`)."""
    features = features_of(group)
    matmul = matmul_anchor(group)
    if matmul is None or kind_of(group).work_groups or in_register_tiles(group):
        return blocking(features)
    shape = matrix_shape(matmul)
    return blocking(features, rows_of_seven(features, shape[-2], shape[-1]) if len(shape) >= 2 else None)


def in_register_tiles(group: relay.FusedOp) -> bool:
    """Whether the group's anchor pre-packs a constant rhs marked REGISTER_TILES_ATTR (a build
    of several batch sizes: every size packs it alike, so it is held once)."""
    found = constant_rhs(group)
    return found is not None and REGISTER_TILES_ATTR in found[1].attributes


def rows_of_seven(features: Features, rows: int, columns: int) -> mk.Tile | None:
    """The ROWS_OF_SEVEN tile for a result of `rows` x `columns` where it fits the target's
    registers and pads the rows less than the register tile (both tiles
    whole along the columns and rows: the set of matmuls packed_matmul takes is the same),
    else None."""
    register = mk.register_tile(features)
    seven = mk.Tile(*ROWS_OF_SEVEN, lanes=features.vector_floats)
    if mk.registers_needed(seven.rows, seven.vectors, features.fma) > features.vector_registers:
        return None
    if rows < register.rows or columns < seven.columns:
        return None
    return seven if round_up(rows, seven.rows) < round_up(rows, register.rows) else None


def matches(group: relay.FusedOp) -> bool:
    matmul = matmul_anchor(group)
    if group.se_scope is None or kind_of(group).work_groups or matmul is None:
        return False
    return big_enough(matmul, blocking_of(group).tile)


def flat_rows(matmul: Matmul) -> bool:
    """Whether the result's batch axes fold into its rows: where the rhs is one matrix (a
    weight, [K, N] or [N, K]) and the lhs has the result's batch axes, the product is one
    matmul of all the lhs's rows. ConvNeXt's pointwise layers, matmul [1, 14, 14, 1536] .
    [1536, 384] + bias, were 14 batches of 14 rows: too few rows for a tile (matmul_rows
    took them, at 1.4-2.9 GFLOP/s), and the weight streamed once per batch."""
    shape = shape_of(matmul.res)
    lhs = matmul.data if isinstance(matmul, relay.DenseOp) else matmul.lhs
    return (
        len(shape) > 2
        and math.prod(shape[:-2]) > 1
        and len(shape_of(matmul.operands[1])) == 2
        and shape_of(lhs)[:-1] == shape[:-1]
    )


def matrix_shape(matmul: Matmul) -> tuple[int, ...]:
    """The result's shape as the blocks see it: [rows, columns] with the batch axes folded
    into the rows where `flat_rows`, else the result's."""
    shape = shape_of(matmul.res)
    return (math.prod(shape[:-1]), shape[-1]) if flat_rows(matmul) else shape


def big_enough(matmul: Matmul, tile: mk.Tile) -> bool:
    """At least a tile of outputs and MIN_WORK multiply-adds (packed_matmul_opencl's test too)."""
    shape = matrix_shape(matmul)
    if len(shape) < 2 or shape[-1] < tile.columns or shape[-2] < tile.rows:
        return False
    return shape[-2] * shape[-1] * dot_depth(matmul) >= MIN_WORK


def build(emitter: GroupEmitter, group: relay.FusedOp, out: SSAValue) -> scf.ParallelOp:
    return build_blocks(emitter, group, out, prepacked=False)


def build_prepacked(emitter: GroupEmitter, group: relay.FusedOp, out: SSAValue) -> scf.ParallelOp:
    return build_blocks(emitter, group, out, prepacked=True)


def build_blocks(emitter: GroupEmitter, group: relay.FusedOp, out: SSAValue, prepacked: bool) -> scf.ParallelOp:
    matmul = matmul_anchor(group)
    assert matmul is not None
    shape = matrix_shape(matmul)
    blocks = blocking_of(group)
    rows, columns = block_rows(shape[-2], blocks), block_columns(shape[-1], blocks)
    tiles = (*shape[:-2], -(-shape[-2] // rows), -(-shape[-1] // columns))
    root = group_root(group)
    panels = emitter.inputs[matmul.operands[1]] if prepacked else None
    return emitter.parallel_nest(tiles, lambda tile: Block(emitter, matmul, tile, blocks, panels).emit(root, out))


class Block:
    """One work item: the outputs of block `tile` of `op`'s result, in `blocks`; with
    `panels` (a kernel input holding the rhs pre-packed, `pack_weight`), read from it
    instead of packing the rhs."""

    def __init__(
        self, e: GroupEmitter, op: Matmul, tile: list[SSAValue], blocks: Blocking, panels: SSAValue | None = None
    ):
        lhs = op.data if isinstance(op, relay.DenseOp) else op.lhs
        self.e, self.op, self.panels, self.blocks, self.tile = e, op, panels, blocks, blocks.tile
        self.shape = matrix_shape(op)
        self.flat = flat_rows(op)  # rows: the result's rows of every batch, `unravel`led
        self.batch = tile[:-2]
        self.rows = block_rows(self.shape[-2], blocks)
        self.columns = block_columns(self.shape[-1], blocks)
        self.row0 = e.mul_const(tile[-2], self.rows)
        self.col0 = e.mul_const(tile[-1], self.columns)
        self.depth = dot_depth(op)
        self.layout = RHS_LAYOUT[type(op)]
        # the block's first panel in a pre-packed rhs
        self.panel0 = None if panels is None else e.mul_const(tile[-1], self.columns // self.tile.columns)
        self.lhs_in_place = (
            not self.flat
            and lhs in e.inputs
            and self.shape[-1] > self.columns
            and rows_spread(self.depth, self.tile.rows)
        )
        self.k_depth = self.k_block_depth()

    def valid_row_tiles(self) -> Extent:
        """The block's row tiles that hold a row of the result: all of them where the
        blocks divide the rows, else those up to the tile holding the last row (ViT's 197
        rows in two blocks of 7 AVX-512 tiles: 13 tiles computed, not 14)."""
        e, tile = self.e, self.tile
        tiles = self.rows // tile.rows
        if self.shape[-2] % self.rows == 0:
            return tiles
        left = e.sub(e.index(self.shape[-2]), self.row0)
        return (e.index(0), e.min_index(e.index(tiles), e.div_const(e.add_const(left, tile.rows - 1), tile.rows)))

    def k_block_depth(self) -> int:
        """The k-block: the whole dot product where the scratch allows (see MAX_DEPTH), else
        the blocking's depth."""
        depth = self.blocks.depth
        if self.depth > MAX_DEPTH:
            return depth
        rows = 0 if self.lhs_in_place else self.rows * (self.depth + ROW_PAD)
        panels = 0 if self.panels is not None else self.columns * self.depth
        whole = (self.rows * self.columns + rows + panels) * 4 <= SCRATCH_MAX_BYTES
        return self.depth if whole else min(depth, self.depth)

    # the operands at (row, k) and (column, k), clamped to the result's edge

    def clamp(self, i: SSAValue, extent: int, block: int) -> SSAValue:
        """`i`, or the last index of the axis where blocks of `block` overrun it. (Only then:
        a row index affine in the tile's row lets gcc address the rows from one pointer; 16
        clamped rows took 16 registers, spilled, and halved batch_matmul 4x128x64.)"""
        return i if extent % block == 0 else self.e.min_index(i, self.e.index(extent - 1))

    def lhs_at(self, row: SSAValue, k: SSAValue) -> SSAValue:
        """The lhs at (`row`, k): clamped for a copy, which copies whole tiles; read in place,
        a row is never past the edge (`split_row_tiles` computes the last tile with its rows)."""
        e, op = self.e, self.op
        if not self.lhs_in_place:
            row = self.clamp(row, self.shape[-2], self.rows)
        if self.flat:
            return e.value_at(op.data if isinstance(op, relay.DenseOp) else op.lhs, [*self.unravel(row), k])
        if isinstance(op, relay.DenseOp):
            return e.value_at(op.data, [*self.batch, row, k])
        return e.value_at(op.lhs, [*self.batch_of(op.lhs), row, k])

    def unravel(self, row: SSAValue) -> list[SSAValue]:
        """The result's index (but the last axis) of row `row` of the folded rows (`flat_rows`)."""
        e, idx = self.e, list[SSAValue]()
        for extent in reversed(shape_of(self.op.res)[1:-1]):
            idx.insert(0, e.rem_const(row, extent))
            row = e.div_const(row, extent)
        return [row, *idx]

    def rhs_at(self, column: SSAValue, k: SSAValue) -> SSAValue:
        e, op = self.e, self.op
        n = self.clamp(column, self.shape[-1], self.columns)
        if isinstance(op, relay.DenseOp):
            return e.value_at(op.weight, mk.rhs_index(self.layout, n, k))
        return e.value_at(op.rhs, [*self.batch_of(op.rhs), *mk.rhs_index(self.layout, n, k)])

    def batch_of(self, operand: SSAValue) -> list[SSAValue]:
        """The block's batch index in `operand` (batch_matmul's or matmul's), whose batch
        axes broadcast against the result's as numpy's do: right-aligned, 0 on an axis of 1."""
        axes = shape_of(operand)[:-2]
        batch = self.batch[len(self.batch) - len(axes) :]
        return [self.e.index(0) if extent == 1 else b for extent, b in zip(axes, batch)]

    # the block's sums

    def emit(self, root: SSAValue, out: SSAValue) -> None:
        e = self.e
        sums = e.emit(memref.AllocaOp.get(f32, shape=[self.rows, self.columns]))
        tile = self.tile
        panels = self.columns // tile.columns
        depth = self.k_depth
        panel = self.panels
        if panel is None:
            panel = e.emit(memref.AllocaOp.get(f32, shape=[panels, depth, tile.columns]))
        rows = None
        if not self.lhs_in_place:
            rows = e.emit(memref.AllocaOp.get(f32, shape=[self.rows // tile.rows, tile.rows, depth + ROW_PAD]))
        blocks = -(-self.depth // depth)
        if blocks == 1:
            self.k_block(e.index(0), depth, panel, rows, sums, first=True)
        else:
            self.clear(sums)

            def k_block(ks: list[SSAValue], _: list[SSAValue]) -> list[SSAValue]:
                k0 = e.mul_const(ks[0], depth)
                end = e.min_index(e.add_const(k0, depth), e.index(self.depth))
                self.k_block(k0, end, panel, rows, sums, first=False)
                return []

            e.loops([blocks], [], k_block)
        self.epilogue(root, sums, out)

    def clear(self, sums: SSAValue) -> None:
        e, lanes = self.e, self.tile.lanes
        zero = mk.broadcast(e, e.f32(0.0), lanes)

        def body(ivs: list[SSAValue], _: list[SSAValue]) -> list[SSAValue]:
            mk.store(e, zero, sums, [ivs[0], e.mul_const(ivs[1], lanes)])
            return []

        e.loops([self.rows, self.columns // lanes], [], body)

    def pack_rhs(self, panel: SSAValue, panels: int, extent: Extent) -> None:
        """Packs the block's rhs columns of k in `extent` into `panel` (`micro_kernel.pack_panel`)."""
        e = self.e
        mk.pack_panel(e, self.tile, panel, panels, extent, lambda n, k: self.rhs_at(e.add(self.col0, n), k))

    def k_block(
        self, k0: SSAValue, end: SSAValue | int, panel: SSAValue, rows: SSAValue | None, sums: SSAValue, first: bool
    ) -> None:
        """Adds the products of k in [k0, end) to `sums` (or, `first`, sets it to them).
        `panel` is the scratch the rhs's k-block is packed into, or the pre-packed input;
        `rows` the scratch the lhs's rows are copied into, or None to read them in place."""
        e, tile = self.e, self.tile
        extent = end if isinstance(end, int) else (k0, end)
        panels = self.columns // tile.columns
        if self.panels is None:
            self.pack_rhs(panel, panels, extent)
        tiles = self.valid_row_tiles()
        if rows is not None:
            mk.copy_rows(e, tile, rows, tiles, extent, lambda m, k: self.lhs_at(e.add(self.row0, m), k))
        steps = end if isinstance(end, int) else e.sub(end, k0)
        whole, last = self.split_row_tiles(tiles)
        edge = mk.Tile(self.shape[-2] % tile.rows, tile.vectors, tile.lanes)

        def tile_sums(t: mk.Tile, ivs: list[SSAValue]) -> list[SSAValue]:
            """The sums of row tile ivs[0] (`t`'s rows of it) and panel ivs[1]."""
            tr, tc = e.mul_const(ivs[0], tile.rows), e.mul_const(ivs[1], tile.columns)

            def at(r: int, v: int) -> list[SSAValue]:
                return [e.add_const(tr, r), e.add_const(tc, v * tile.lanes)]

            def lhs(ks: list[SSAValue], r: int) -> SSAValue:
                if rows is None:
                    return self.lhs_at(e.add_const(e.add(self.row0, tr), r), e.add(k0, ks[0]))
                return e.emit(memref.LoadOp.get(rows, [ivs[0], e.index(r), ks[0]]))

            inits = mk.zeros(e, t) if first else mk.load_block(e, t, sums, at)
            accs = mk.accumulate(
                e,
                t,
                [steps if isinstance(steps, int) else (e.index(0), steps)],
                inits,
                lhs,
                lambda ks, v: self.rhs_vector(panel, ivs[1], k0, ks[0], v),
            )
            mk.store_block(e, t, accs, sums, at)
            return []

        if self.panels is None:
            e.loops([whole, panels], [], lambda ivs, _: tile_sums(tile, ivs))
            if last is not None:
                e.loops([last, panels], [], lambda ivs, _: tile_sums(edge, ivs))
            return

        def panel_sums(ps: list[SSAValue], _: list[SSAValue]) -> list[SSAValue]:
            """Each panel of the stream, then every row tile with it (see PREFETCH_AHEAD)."""
            e.loops([whole], [], lambda ts, _: tile_sums(tile, [ts[0], ps[0]]))
            if last is not None:
                e.loops([last], [], lambda ts, _: tile_sums(edge, [ts[0], ps[0]]))
            return []

        e.loops([panels], [], panel_sums)

    def split_row_tiles(self, tiles: Extent) -> tuple[Extent, Extent | None]:
        """The block's row tiles (`tiles`, from `valid_row_tiles`) as the whole ones and the
        one the result's last row falls in when that is only partly inside the result (an
        extent of one tile in the last block, of none in the others), or None where the tile
        divides the rows. The partial tile is computed with a tile of only its rows (ViT's 197
        rows: 12 AVX-512 tiles of 16 and one of 5, not 13 of 16)."""
        e, rows = self.e, self.tile.rows
        if self.shape[-2] % rows == 0 or isinstance(tiles, int):
            return tiles, None
        left = e.sub(e.index(self.shape[-2]), self.row0)
        full = e.min_index(tiles[1], e.div_const(left, rows))
        return (e.index(0), full), (full, tiles[1])

    def rhs_vector(self, panel: SSAValue, p: SSAValue, k0: SSAValue, k: SSAValue, v: int) -> SSAValue:
        """Vector `v` of panel `p` at step `k`; from a pre-packed rhs, after a prefetch of
        its line PREFETCH_AHEAD steps on (once per step: with the first vector)."""
        e = self.e
        if self.panel0 is not None and v == 0:
            e.builder.insert(cpu.PrefetchOp(panel, self.panel_index(p, k0, e.add_const(k, PREFETCH_AHEAD), v)))
        return mk.load(e, panel, self.panel_index(p, k0, k, v), self.tile.lanes)

    def panel_index(self, p: SSAValue, k0: SSAValue, k: SSAValue, v: int) -> list[SSAValue]:
        """Where vector `v` of the block's panel `p` at step `k` of the k-block from `k0`
        lies: in the scratch, or in the pre-packed input (its panels span every k; its batch
        axes are the rhs's)."""
        e = self.e
        if self.panel0 is None:
            return [p, k, e.index(v * self.tile.lanes)]
        batch = self.batch_of(self.op.operands[1])
        return [*batch, e.add(self.panel0, p), e.add(k0, k), e.index(v * self.tile.lanes)]

    def epilogue(self, root: SSAValue, sums: SSAValue, out: SSAValue) -> None:
        """The group's result at every output of the block inside the result."""
        e = self.e
        rows = self.valid(self.row0, self.rows, self.shape[-2])
        columns = self.valid(self.col0, self.columns, self.shape[-1])

        def body(ivs: list[SSAValue], _: list[SSAValue]) -> list[SSAValue]:
            i, j = ivs
            row = e.add(self.row0, i)
            idx = [*self.unravel(row), e.add(self.col0, j)] if self.flat else [*self.batch, row, e.add(self.col0, j)]
            e.remember(self.op.res, idx, e.emit(memref.LoadOp.get(sums, [i, j])))
            return e.store(e.value_at(root, idx), out, idx)

        e.loops([rows, columns], [], body)

    def valid(self, first: SSAValue, block: int, extent: int) -> int | tuple[SSAValue, SSAValue]:
        """The outputs of a block from `first` inside [0, extent): a trip count when every
        block is whole, else [0, min(block, extent - first))."""
        e = self.e
        if extent % block == 0:
            return block
        return (e.index(0), e.min_index(e.index(block), e.sub(e.index(extent), first)))


def rows_spread(k: int, rows: int) -> bool:
    """Whether a tile's `rows` rows of k floats each, one after another, start in L1 sets
    that each hold at most L1_WAYS of them (see L1_SETS)."""
    sets = [(r * k // LINE_FLOATS) % L1_SETS for r in range(rows)]
    return max(sets.count(s) for s in sets) <= L1_WAYS


def balanced(extent: int, block: int, tile: int) -> int:
    """The block of an axis of `extent` cut into as few blocks of at most `block` (whole
    tiles of `tile`) as it needs, all of the same size: the extent shared out evenly and
    rounded up to whole tiles, so that only the last tile overruns the edge, not most of a
    block (128 rows in blocks of 126 computed 252; 192 columns in blocks of 128, 256)."""
    count = -(-extent // block)
    return round_up(-(-extent // count), tile)


def block_rows(m: int, blocks: Blocking) -> int:
    """The rows of a block of a result of `m` rows (`balanced`)."""
    return balanced(m, blocks.rows, blocks.tile.rows)


def block_columns(n: int, blocks: Blocking) -> int:
    """The columns of a block of a result `n` wide (`balanced`)."""
    return balanced(n, blocks.columns, blocks.tile.columns)


# --- pre-packed weights -----------------------------------------------------------------------

PACKED_FROM_ATTR = "relay.packed_from"  # on a packed relay.constant: what it was packed from
# On a relay.constant (from a @main param's arg attribute, `driver.bind_params`): the weight is
# held as it is anyway (a build of several batch sizes, another size's kernel reads it so), so
# it is read as it is here too rather than held a second time packed.
HELD_AS_IS_ATTR = "relay.held_as_is"
# On a relay.constant (likewise): pre-packed, it is packed in the register tile's panels, never
# ROWS_OF_SEVEN's (a build of several batch sizes, where the sizes that pre-pack it, and
# packed_gemv's below the tile, share one packed copy; a size of rows many of 7 would pack
# panels three vectors wide, a second copy).
REGISTER_TILES_ATTR = "relay.packed_in_register_tiles"


# how a packed constant names what it was packed from
RHS_NAME: dict[type[Matmul], str] = {
    relay.DenseOp: "dense weight",
    relay.BatchMatmulOp: "batch_matmul rhs",
    relay.MatmulOp: "matmul rhs",
}


def constant_rhs(group: relay.FusedOp) -> tuple[int, relay.ConstantOp] | None:
    """The position among the group's inputs, and the `relay.constant` of @main, of the rhs
    (dense's weight) of the group's anchor, where it is one, nothing else in the group reads it,
    and it is not held as it is anyway (`HELD_AS_IS_ATTR`)."""
    matmul = matmul_anchor(group)
    if matmul is None:
        return None
    rhs = matmul.operands[1]
    if not isinstance(rhs, BlockArgument) or any(use.operation is not matmul for use in rhs.uses):
        return None
    source = group.inputs[rhs.index].owner
    if not isinstance(source, relay.ConstantOp) or HELD_AS_IS_ATTR in source.attributes:
        return None
    return rhs.index, source


def matches_prepacked(group: relay.FusedOp) -> bool:
    return matches(group) and constant_rhs(group) is not None


def prepare(group: relay.FusedOp) -> None:
    """Gives the group the packed form of its anchor's constant rhs in place of it."""
    matmul = matmul_anchor(group)
    found = constant_rhs(group)
    assert matmul is not None and found is not None
    index, rhs = found
    operands = list(group.operands)
    operands[index] = packed_constant(rhs, type(matmul), blocking_of(group)).res
    group.operands = operands


def pack_weight(rhs: np.ndarray, blocks: Blocking, layout: mk.Layout = mk.Layout.TRANSPOSED) -> np.ndarray:
    """A matmul's rhs (`[..., N, K]` TRANSPOSED, as dense's weight, or `[..., K, N]` PLAIN)
    as packed_matmul's panels `[..., P, K, C]`, C the tile's columns: panel p holds columns
    C p .. C p + C - 1 (the last column repeated past N), and P covers every block of columns."""
    columns_last = rhs if layout is mk.Layout.TRANSPOSED else np.swapaxes(rhs, -1, -2)
    n, k = int(columns_last.shape[-2]), int(columns_last.shape[-1])
    width = blocks.tile.columns
    block = block_columns(n, blocks)
    panels = -(-n // block) * (block // width)
    columns = np.take(columns_last, np.minimum(np.arange(panels * width), n - 1), axis=-2)
    tiles = columns.reshape(*columns.shape[:-2], panels, width, k)
    return np.ascontiguousarray(np.swapaxes(tiles, -1, -2))


def packed_constant(rhs: relay.ConstantOp, kind: type[Matmul], blocks: Blocking) -> relay.ConstantOp:
    """The packed form of `rhs`, read by a `kind` anchor in `blocks`: a new `relay.constant`
    after it, or the one an earlier group made."""
    values = pack_weight(constant_value(rhs), blocks, RHS_LAYOUT[kind])
    value = relay.f32_elements(values)
    after = rhs.next_op
    while isinstance(after, relay.ConstantOp) and PACKED_FROM_ATTR in after.attributes:
        if after.value == value:
            return after
        after = after.next_op
    packed = relay.ConstantOp(value, rhs.se_scope)
    if REGISTER_TILES_ATTR in rhs.attributes:  # (the group's blocks, read again from it once prepared)
        packed.attributes[REGISTER_TILES_ATTR] = UnitAttr()
    batch = "..., " if values.ndim > 3 else ""
    width = blocks.tile.columns
    panels = f"[{batch}n / {width}, k, n % {width}]"
    packed.attributes[PACKED_FROM_ATTR] = StringAttr(f"{RHS_NAME[kind]} {rhs.res.type}: panels {panels}")
    if rhs.res.name_hint:
        packed.res.name_hint = f"{rhs.res.name_hint}_packed"
    Rewriter.insert_op(packed, InsertPoint.after(rhs))
    return packed


SCHEDULE = Schedule("packed_matmul", matches, build)
PREPACKED = Schedule("packed_matmul_prepacked", matches_prepacked, build_prepacked, prepare)
