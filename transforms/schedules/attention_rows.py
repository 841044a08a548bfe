"""
attention_rows: a cpu or opencl group computing
`batch_matmul(softmax(batch_matmul(q, k) * scale + mask), v)` (made by fuse-attention), a
block of query rows per work item, the scores never stored.

The group's ops (`attention_of`): a product of the scores ([..., m, n] from q [..., m, d] and
k: a batch_matmul's [..., n, d] or a matmul's [..., d, n], torch's exports' k^T), elementwise
ops of the scores and of values from outside the group (a scale; a mask of every score,
broadcasting into the scores: BERT's padding mask and GPT-2's causal one, as torch exports
them, `add(scores, where(mask, 0, -inf))`), a softmax along the last axis, elementwise ops of
the softmax and of scalars (torch's `where(p != p, 0, p)`, which makes a row whose keys are
all masked 0), a product of those (lhs) and v ([..., e, n] or [..., n, e]), then elementwise
ops of the result's shape. The batch axes are any number (torch's [1, heads]), v's equal to
the scores'. q, k and v are group inputs, or moves of them first (reshapes, transposes,
strided slices: the heads of a Q/K/V dense's result, which fuse-attention takes in) or
products with a scalar from outside (torch scales q and k each by a root of the scale):
each is read through those ops where it lies (`GroupEmitter.value_at`), by the packs and q's
rows alike.

The nest spans the batch and the query rows in blocks of ROWS (fewer where m is smaller; the
last block may be partial: it computes only its tiles holding a row of the result
(`valid_tiles`), their rows past m reading row m - 1, never stored, and its softmax and
epilogue only its rows inside the result). A work item:

1. packs k's rows into micro-kernel panels (`micro_kernel.pack_panel`: [n / C, d, C], C the
   target's tile's columns, `micro_kernel.register_tile`),
   the keys past n repeating the last;
2. computes the block's scores, ROWS x n rounded up to whole vectors, tile by tile with the
   micro-kernel (q's rows read where they lie), into a scratch `scores`;
3. per row of the block: the ops up to the softmax at every score (`value_at`, the score
   `remember`ed: a mask is read per score, never stored as a [..., m, n] tensor), stored
   back; then the softmax as softmax_row makes it (max, exp stored,
   sum, times 1 / sum), in the scratch: the same NaN and inf semantics (its docstring: on
   the cpu the max is `fastmath<nnan>`, which a NaN of the row makes unspecified and every
   element of the row NaN anyway; a row of -inf gives NaN, as numpy); on opencl, a row of
   whole vectors in `float16`s (softmax_row.vector_row: PoCL's exp of a vector); then the
   ops after the softmax at every probability, stored back;
4. packs v's rows into panels ([e / C, n, C]) and computes P . V tile by tile with the
   micro-kernel (P's rows from `scores`), into a scratch `sums`;
5. the epilogue: the group's result at every valid output of the block, the product
   `remember`ed.

k and v are packed again by each of the m / ROWS work items of a batch: 2 n d floats each,
against 2 ROWS n d multiply-adds per matmul.

On opencl each work item is a work group of its own (`one_group_per_item`), its scratch (112
KiB at the transformer's shapes) private, as packed_matmul_opencl's. The transformer's
attention on PoCL at 1 thread, against the three kernels it replaces (per-node medians of 15
profiled runs, interleaved in one process, load 2.5-2.7): 0.996x the time with the softmax
in scalar loops, 0.92x (0.300 against 0.322 ms) with it in `float16`s; the C kernel takes
0.20 ms: PoCL's packs of k and v are strided gathers (packed_matmul_opencl's docstring). Read
through the heads' moves (fuse-attention's docstring), v's pack reads along the Q/K/V dense's
rows instead: 0.38 -> 0.35 ms on PoCL at 1 thread.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from xdsl.dialects import memref, scf
from xdsl.dialects.builtin import f32
from xdsl.ir import Operation, SSAValue

from xrelay.dialects import relay
from xrelay.transforms.kernel_builder import Extent, shape_of
from xrelay.transforms.scalar_ops import GroupEmitter
from xrelay.transforms.schedules import (
    MOVES,
    Schedule,
    features_of,
    from_outside,
    group_root,
    is_elementwise,
    kind_of,
    one_group_per_item,
    round_up,
    softmax_row,
)
from xrelay.transforms.schedules import micro_kernel as mk
from xrelay.transforms.schedules.packed_matmul import balanced

# A work item's query rows (about ROWS: whole tiles of the target's micro-kernel tile,
# `micro_kernel.register_tile`, as packed_matmul's). The transformer's
# attention (4 x 128 x 128 scores, d = 64), C at 1 thread, the kernel's time against the three
# kernels it replaces (per-node medians of 15 profiled runs, interleaved in one process, load
# 0.6-0.9; AVX-512's 16 x 1 tile): ROWS 32 1.02x, 64 0.93x, 128 0.94x (each work item packs k and v again: 2 x 32
# KiB per 32 rows). The two products are 524K vector multiply-adds, about 0.18 ms at one a
# cycle: the kernel (0.20-0.21 ms) is near that, with the softmax's 64K exponentials.
ROWS = 64
# A work item's scratch (scores, sums, the two packs) stays within packed_matmul's 320 KiB
# (stack scratch, also on OpenMP's threads); larger attentions stay three kernels.
SCRATCH_MAX_BYTES = 320 << 10

LhsAt = Callable[[SSAValue, SSAValue], SSAValue]  # (row of the block, k) -> the lhs there
Product = relay.BatchMatmulOp | relay.MatmulOp

# How each product's rhs holds element (n, k): batch_matmul's transposed, matmul's plain
# (torch's exports: q . k^T with k transposed by a move, p . v).
LAYOUT: dict[type[Product], mk.Layout] = {relay.BatchMatmulOp: mk.Layout.TRANSPOSED, relay.MatmulOp: mk.Layout.PLAIN}


@dataclass(frozen=True)
class Attention:
    """The ops of an attention group: the scores' product, the softmax, the output's
    product (whose lhs is the softmax, or elementwise ops of it: `probabilities`)."""

    scores: Product
    softmax: relay.SoftmaxOp
    output: Product

    @property
    def probabilities(self) -> SSAValue:
        return self.output.lhs

    @property
    def batch(self) -> tuple[int, ...]:
        return shape_of(self.scores.res)[:-2]


def attention_of(group: relay.FusedOp) -> Attention | None:
    """The group's attention, when its ops are those of the module docstring."""
    ops = list(group.body.block.ops)[:-1]
    first = next((i for i, op in enumerate(ops) if isinstance(op, Product)), None)
    softmaxes = [i for i, op in enumerate(ops) if isinstance(op, relay.SoftmaxOp)]
    if first is None or len(softmaxes) != 1 or not all(operand_op(op) for op in ops[:first]):
        return None
    s = softmaxes[0]
    last = next((i for i in range(s + 1, len(ops)) if isinstance(ops[i], Product)), None)
    if last is None:
        return None
    scores, softmax, output = ops[first], ops[s], ops[last]
    assert isinstance(scores, Product) and isinstance(softmax, relay.SoftmaxOp) and isinstance(output, Product)
    if not all(computed_from_outside(v) for v in (scores.lhs, scores.rhs, output.rhs)):
        return None
    shape = shape_of(scores.res)
    if softmax.axis_value != len(shape) - 1 or shape_of(output.res)[:-2] != shape[:-2] or len(shape) < 3:
        return None
    if not (
        segment(ops[first + 1 : s], scores.res, softmax, shape)
        and segment(ops[s + 1 : last], softmax.res, output, shape)
        and chain(ops[last:])
    ):
        return None
    return Attention(scores, softmax, output)


def operand_op(op: Operation) -> bool:
    """An op that computes q, k or v from a group input: a move (MOVES), or an elementwise op
    whose other operands are scalars from outside the group (the scale torch puts on q and k)."""
    if isinstance(op, MOVES):
        return True
    return is_elementwise(op) and all(from_outside(v) and math.prod(shape_of(v)) == 1 for v in op.operands[1:])


def computed_from_outside(value: SSAValue) -> bool:
    """`from_outside`, or `operand_op`s of a value computed from outside, each read by
    nothing else."""
    if from_outside(value):
        return True
    op = value.owner
    return (
        isinstance(op, Operation) and operand_op(op) and value.has_one_use() and computed_from_outside(op.operands[0])
    )


def segment(ops: list[Operation], source: SSAValue, consumer: Operation, shape: tuple[int, ...]) -> bool:
    """Whether `ops` (between a product or the softmax and `consumer`, the next) are
    elementwise ops computing the consumer's first operand from `source` (each element from
    the elements at its index) and from values outside the group (a mask, a scale), nothing
    but them and the consumer reading `source` or their results: the ops of the scores' shape,
    the others broadcasting into it."""
    result = consumer.operands[0]
    inside = {op.results[0] for op in ops} | {source}
    readers = set(ops) | {consumer}
    if not all(use.operation in readers for value in inside for use in value.uses):
        return False
    for op in ops:
        if not is_elementwise(op) or not all(v in inside or from_outside(v) for v in op.operands):
            return False
        if not broadcasts_into(shape_of(op.results[0]), shape):
            return False
    return result in inside and result.has_one_use() and shape_of(result) == shape


def broadcasts_into(shape: tuple[int, ...], into: tuple[int, ...]) -> bool:
    return len(shape) <= len(into) and all(d in (1, t) for d, t in zip(reversed(shape), reversed(into)))


def chain(ops: list[Operation]) -> bool:
    """Whether each op after the first reads the one before (its only user) and values from
    outside the group, is elementwise or broadcast, and keeps the first's shape."""
    shape = shape_of(ops[0].results[0])
    for before, op in zip(ops, ops[1:]):
        if not before.results[0].has_one_use() or shape_of(op.results[0]) != shape or not is_elementwise(op):
            return False
        if not all(from_outside(v) for v in op.operands if v != before.results[0]):
            return False
    return True


def matches(group: relay.FusedOp) -> bool:
    found = attention_of(group)
    if group.se_scope is None or not kind_of(group).generates_kernels or found is None:
        return False
    m, n = shape_of(found.scores.res)[-2:]
    d, e = shape_of(found.scores.lhs)[-1], shape_of(found.output.res)[-1]
    if 0 in (m, n, d, e):
        return False
    tile = tile_of(group)
    rows, keys, values = block_rows(m, tile), round_up(n, tile.columns), round_up(e, tile.columns)
    floats = rows * keys + rows * values + keys * d + values * n
    return floats * 4 <= SCRATCH_MAX_BYTES


def build(emitter: GroupEmitter, group: relay.FusedOp, out: SSAValue) -> scf.ParallelOp:
    found = attention_of(group)
    assert found is not None
    m = shape_of(found.scores.res)[-2]
    root = group_root(group)
    tile = tile_of(group)
    blocks = (*found.batch, -(-m // block_rows(m, tile)))
    lanes = softmax_row.vector_lanes(group)
    nest = emitter.parallel_nest(blocks, lambda item: Rows(emitter, found, item, tile, lanes).emit(root, out))
    return one_group_per_item(nest, group)


def tile_of(group: relay.FusedOp) -> mk.Tile:
    """The micro-kernel's tile on `group`'s target."""
    return mk.register_tile(features_of(group))


class Rows:
    """One work item: the block of query rows `item[-1]` of batch `item[:-1]`."""

    def __init__(
        self, e: GroupEmitter, attention: Attention, item: list[SSAValue], tile: mk.Tile, softmax_lanes: int | None
    ):
        self.e, self.a, self.tile, self.softmax_lanes = e, attention, tile, softmax_lanes
        self.batch = item[:-1]
        self.m, self.n = shape_of(attention.scores.res)[-2:]
        self.d = shape_of(attention.scores.lhs)[-1]
        self.values = shape_of(attention.output.res)[-1]
        self.rows = block_rows(self.m, tile)
        self.row0 = e.mul_const(item[-1], self.rows)
        self.keys = round_up(self.n, tile.columns)  # the scores' columns, whole vectors

    def emit(self, root: SSAValue, out: SSAValue) -> None:
        e, tile = self.e, self.tile
        scores = e.emit(memref.AllocaOp.get(f32, shape=[self.rows, self.keys]))
        keys = e.emit(memref.AllocaOp.get(f32, shape=[self.keys // tile.columns, self.d, tile.columns]))
        mk.pack_panel(e, tile, keys, self.keys // tile.columns, self.d, lambda j, k: self.key(j, k))
        self.products(keys, self.keys, self.d, lambda r, k: self.query(r, k), scores)
        e.loops([self.valid_rows()], [], lambda ivs, _: self.softmax_row(scores, ivs[0]))
        columns = round_up(self.values, tile.columns)
        values = e.emit(memref.AllocaOp.get(f32, shape=[columns // tile.columns, self.n, tile.columns]))
        mk.pack_panel(e, tile, values, columns // tile.columns, self.n, lambda c, j: self.value(c, j))
        sums = e.emit(memref.AllocaOp.get(f32, shape=[self.rows, columns]))
        self.products(values, columns, self.n, lambda r, j: e.emit(memref.LoadOp.get(scores, [r, j])), sums)
        self.epilogue(root, sums, out)

    # the operands, clamped to their edges

    def clamp(self, i: SSAValue, extent: int, block: int) -> SSAValue:
        """`i`, or the last index of the axis where blocks of `block` overrun it."""
        return i if extent % block == 0 else self.e.min_index(i, self.e.index(extent - 1))

    def batch_of(self, operand: SSAValue) -> list[SSAValue]:
        """The work item's batch index in `operand`, whose batch axes broadcast against the
        scores' as numpy's do: right-aligned, 0 on an axis of 1."""
        axes = shape_of(operand)[:-2]
        batch = self.batch[len(self.batch) - len(axes) :]
        return [self.e.index(0) if extent == 1 else b for extent, b in zip(axes, batch)]

    def row(self, r: SSAValue) -> SSAValue:
        """The query row of the block's row `r` (the last where the block overruns m)."""
        return self.clamp(self.e.add(self.row0, r), self.m, self.rows)

    def query(self, r: SSAValue, k: SSAValue) -> SSAValue:
        q = self.a.scores.lhs
        return self.e.value_at(q, [*self.batch_of(q), self.row(r), k])

    def key(self, j: SSAValue, k: SSAValue) -> SSAValue:
        scores = self.a.scores
        j = self.clamp(j, self.n, self.tile.columns)
        return self.e.value_at(scores.rhs, [*self.batch_of(scores.rhs), *mk.rhs_index(LAYOUT[type(scores)], j, k)])

    def value(self, c: SSAValue, j: SSAValue) -> SSAValue:
        output = self.a.output
        c = self.clamp(c, self.values, self.tile.columns)
        return self.e.value_at(output.rhs, [*self.batch_of(output.rhs), *mk.rhs_index(LAYOUT[type(output)], c, j)])

    # the block's products

    def products(self, panels: SSAValue, columns: int, depth: int, lhs_at: LhsAt, sums: SSAValue) -> None:
        """`sums[r, c]` = the sum over k < `depth` of `lhs_at(r, k)` times panel element
        (c, k), for every row of the block and each of the panels' `columns`: tile by tile."""
        e, tile = self.e, self.tile
        count = columns // tile.columns

        def tile_sums(ivs: list[SSAValue], _: list[SSAValue]) -> list[SSAValue]:
            tr, p = e.mul_const(ivs[0], tile.rows), ivs[1]
            tc = e.mul_const(p, tile.columns)

            def at(r: int, v: int) -> list[SSAValue]:
                return [e.add_const(tr, r), e.add_const(tc, v * tile.lanes)]

            accs = mk.accumulate(
                e,
                tile,
                [depth],
                mk.zeros(e, tile),
                lambda ks, r: lhs_at(e.add_const(tr, r), ks[0]),
                lambda ks, v: mk.load(e, panels, [p, ks[0], e.index(v * tile.lanes)], tile.lanes),
            )
            mk.store_block(e, tile, accs, sums, at)
            return []

        e.loops([self.valid_tiles(), count], [], tile_sums)

    def softmax_row(self, scores: SSAValue, r: SSAValue) -> list[SSAValue]:
        """Row `r` of the block's scores through the ops up to the softmax, then the softmax,
        in place: the ops, max, exp, sum, scale (softmax_row's passes)."""
        e, a = self.e, self.a
        row = self.row(r)

        def score(j: SSAValue) -> SSAValue:
            return e.emit(memref.LoadOp.get(scores, [r, j]))

        def prologue(ks: list[SSAValue], _: list[SSAValue]) -> list[SSAValue]:
            idx = [*self.batch, row, ks[0]]
            e.remember(a.scores.res, idx, score(ks[0]))
            return e.store(e.value_at(a.softmax.data, idx), scores, [r, ks[0]])

        e.loops([self.n], [], prologue)
        lanes = self.softmax_lanes
        if lanes is not None and lanes > 1 and self.n % lanes == 0:  # PoCL: exp of a floatN
            softmax_row.vector_row(e, [r], self.n, lanes, scores, scores)
        else:
            softmax_row.row_passes(
                e,
                self.n,
                score,
                score,
                lambda value, k: e.store(value, scores, [r, k]),
                vectorised_by_compiler=lanes is None,
            )
        if a.probabilities != a.softmax.res:  # the ops after the softmax, at every probability

            def after(ks: list[SSAValue], _: list[SSAValue]) -> list[SSAValue]:
                idx = [*self.batch, row, ks[0]]
                e.remember(a.softmax.res, idx, score(ks[0]))
                return e.store(e.value_at(a.probabilities, idx), scores, [r, ks[0]])

            e.loops([self.n], [], after)
        return []

    def valid_rows(self) -> Extent:
        """The block's rows inside the result: all where the blocks divide m."""
        e = self.e
        if self.m % self.rows == 0:
            return self.rows
        return (e.index(0), e.min_index(e.index(self.rows), e.sub(e.index(self.m), self.row0)))

    def valid_tiles(self) -> Extent:
        """The block's row tiles holding a row of the result (ViT's 197 query rows in blocks
        of 64: the last block computes one tile of 16, not four)."""
        e, tile = self.e, self.tile
        tiles = self.rows // tile.rows
        if self.m % self.rows == 0:
            return tiles
        left = e.sub(e.index(self.m), self.row0)
        return (e.index(0), e.min_index(e.index(tiles), e.div_const(e.add_const(left, tile.rows - 1), tile.rows)))

    def epilogue(self, root: SSAValue, sums: SSAValue, out: SSAValue) -> None:
        """The group's result at every output of the block inside the result."""
        e = self.e
        rows = self.valid_rows()

        def body(ivs: list[SSAValue], _: list[SSAValue]) -> list[SSAValue]:
            i, j = ivs
            idx = [*self.batch, e.add(self.row0, i), j]
            e.remember(self.a.output.res, idx, e.emit(memref.LoadOp.get(sums, [i, j])))
            return e.store(e.value_at(root, idx), out, idx)

        e.loops([rows, self.values], [], body)


def block_rows(m: int, tile: mk.Tile) -> int:
    """A work item's query rows: m shared out evenly in blocks of at most ROWS cut to whole
    tiles (`packed_matmul.balanced`: 128 rows in AVX2's 6-row tiles are 3 x 48, not 3 x 60)."""
    return balanced(m, max(1, ROWS // tile.rows) * tile.rows, tile.rows)


SCHEDULE = Schedule("attention_rows", matches, build)
