"""
depthwise_conv: a depthwise convolution (one input and one output channel per conv group:
MobileNet's, EfficientNet's, ShuffleNet's, RegNet's 3 x 3 and 5 x 5, ConvNeXt's 7 x 7), of any
stride, dilation and padding, in vectors of the target's lanes, on cpu and on opencl.

The nest spans (image, channel, block of `Plan.rows` output rows). A work item:

1. packs the input its windows read, of its one channel, with the padding as zeros, by
   phases as packed_conv does: for each residue a modulo sh and b modulo sw that some tap
   reads (`packed_conv.phases`), an image of `packed_rows` x `padded_width` whose (k, t) is
   the padded input at row (first row of the block) + k sh + a, column t sw + b. Output
   (r, ow) at tap (i, j) then reads image ((i dh) % sh, (j dw) % sw) at (r + (i dh) // sh,
   ow + (j dw) // sw): at flat position q = r * padded_width + ow plus the tap's offset,
   whatever the row;
2. for each chunk of consecutive flat positions (`chunk_vectors` vectors: the columns past
   the output width computed and dropped; the last chunk ending at the block's last
   position, recomputing a few), sums every tap, unrolled, in registers: per tap one
   broadcast of the weight and one FMA per vector (`micro_kernel.accumulate`, a tile of one
   row), so a 7 x 7 image is one chunk, not seven short rows; the sums go to a scratch of
   the block's flat positions;
3. stores the group's epilogue at the block's outputs from those sums, one loop along each
   output row over the whole row (gcc vectorises it, clip and all; per chunk, its rows cut
   at the chunk's ends, it did not). An epilogue that is the same at every pixel of the
   channel (bias, clip, hardswish, swish: `schedules.channel_epilogue`) runs instead in one loop over
   all the sums, in place, before they are copied out, where it calls a maths function or
   the rows are short (`FLAT_ROW_VECTORS`): a sigmoid per row of 7 or 14 was
   scalar expf calls (EfficientNet's 1152 x 7 x 7 5 x 5 conv + bias + swish: 155 -> 89 us,
   576 x 14 x 14 3 x 3: 229 -> 84 us; 1 thread, AVX-512, load 6), and the rows' scalar
   remainders (12 of a row of 28 with 16 lanes) kept gcc's branchy form of the clip, whose
   branches, on a model's activations, mispredicted: MobileNetV2's 192 x 28 x 28 conv + bias +
   relu6 took 135 us in the model against 42 us timed alone on the same input (a predictor
   that learns the signs of a repeated input). The loop spans the block's positions rounded
   up to whole vectors (`Plan.summed`), so it has no remainder.

The sums are exact (as `interpret`, which skips the padded taps) when the channel's weights
are finite: 0 x w = 0 on a padded tap. A constant weight (a model's) is checked once when the
kernel is planned (`Plan.finite_weights`); any other, per work item (the sum of w x 0 over
its taps), whose block is computed output by output (`GroupEmitter.conv2d`) when one is
not. Probing the sums of each chunk for a non-finite value instead, with the store cut at
the chunk's ends, took 1.5x the time (MobileNetV2's 144 x 56 x 56 conv + bias + relu6:
336 -> 168 us, 1 thread, AVX-512).

packed_conv computed these as a conv with register blocks of one channel and three vectors,
packing every channel of a work item's rows: MobileNetV2's depthwise convs ran at 2-17
GFLOP/s with AVX-512 and 0.7-2.8 with AVX2 (bench/zoo_ops.py, load 4-6); vectors along each
output row (this schedule's first form) 3-12 with AVX-512, the 7 x 7 and 14 x 14 images
slowest (a 7-wide row in a vector of 16).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import f32
from xdsl.ir import BlockArgument, SSAValue

from xrelay.dialects import relay
from xrelay.transforms.kernel_builder import shape_of
from xrelay.transforms.scalar_ops import GroupEmitter
from xrelay.transforms.schedules import (
    Schedule,
    anchor_of,
    channel_epilogue,
    features_of,
    group_root,
    kind_of,
    one_group_per_item,
    result_shape,
    round_up,
)
from xrelay.transforms.schedules import micro_kernel as mk
from xrelay.transforms.schedules.matmul_block import loops_epilogue
from xrelay.transforms.schedules.packed_conv import phases
from xrelay.values import constant_value

# A chunk: VECTORS to MAX_VECTORS vectors of consecutive positions, its sums in registers (at
# least 4 independent FMA chains per tap; with AVX2's 16 registers 8 sums, a load and a
# broadcast fit): as many as compute the fewest vectors over the block's positions (a 7 x 7
# image's 5 x 5 conv: 73 positions, 5 vectors of 16 instead of 2 chunks of 4).
VECTORS = 4
MAX_VECTORS = 8
# A work item's rows: the largest divisor of the output height whose packed images (every
# phase) hold at most PACK_MAX_FLOATS (64 KiB: within L2, far under PoCL's stack).
PACK_MAX_FLOATS = 1 << 14
# An epilogue the same at every pixel runs in one loop over the block's sums where it calls a
# maths function or the output rows are at most FLAT_ROW_VECTORS vectors long (see the module
# docstring); along wider rows (56, 112) the extra pass cost more than the rows' remainders
# (MobileNetV2 in the model, AVX-512: 144 x 56 x 56 152 -> 203 us, 32 x 112 x 112 145 -> 203 us).
FLAT_ROW_VECTORS = 2
# Tiny convs (fewer multiply-adds than this) stay with the scalar and conv_vectors schedules:
# a work item's packing, zeroing and finite probe cost more than their loops (not measured
# finer; the models' smallest depthwise conv, 7 x 7 x 3 x 3 of a channel, has 441 each).
MIN_WORK = 1 << 7


@dataclass(frozen=True)
class Plan:
    """The shapes of a depthwise conv's work item: its output rows, the packed rows and
    width of a phase image, the phases and the chunk's vectors."""

    conv: relay.Conv2DOp
    rows: int
    packed_rows: int
    padded_width: int
    row_phases: tuple[int, ...]
    column_phases: tuple[int, ...]
    tile: mk.Tile  # one row of VECTORS vectors of the target's lanes
    finite_weights: bool  # the weight is a constant of finite values (no check at run time)
    # the epilogue is the same at every pixel (`schedules.channel_epilogue`) and calls a maths
    # function or the rows are short: it runs in one loop over the sums, then they are copied out
    flat_epilogue: bool

    @property
    def chunk(self) -> int:
        return self.tile.columns

    @property
    def positions(self) -> int:
        """The flat positions of the block's outputs: its rows but the last columns of the last."""
        return (self.rows - 1) * self.padded_width + shape_of(self.conv.res)[3]

    @property
    def image_floats(self) -> int:
        return self.packed_rows * self.padded_width

    @property
    def summed(self) -> int:
        """The flat positions summed: the block's, rounded up to whole vectors (those past the
        last output read the zeros after the last image), so that the flat epilogue's loop has
        no scalar remainder."""
        return round_up(self.positions, self.tile.lanes)

    @property
    def sum_floats(self) -> int:
        """The block's sums: a float per flat position summed (at least a chunk)."""
        return max(self.summed, self.chunk)

    @property
    def pack_floats(self) -> int:
        """The phase images and a chunk of zeros after them (a chunk past the last position)."""
        return len(self.row_phases) * len(self.column_phases) * self.image_floats + self.chunk


def depthwise_anchor(group: relay.FusedOp) -> relay.Conv2DOp | None:
    """The group's conv2d of the result's shape when each conv group is one input and one
    output channel."""
    conv = anchor_of(group, relay.Conv2DOp)
    if conv is None:
        return None
    out_c, in_per_group = shape_of(conv.weight)[:2]
    return conv if in_per_group == 1 and conv.group_count == out_c == shape_of(conv.data)[1] else None


def plan_of(group: relay.FusedOp) -> Plan | None:
    conv = depthwise_anchor(group)
    if conv is None or group.se_scope is None or not kind_of(group).generates_kernels:
        return None
    if math.prod(shape_of(conv.res)[1:]) * math.prod(shape_of(conv.weight)[2:]) < MIN_WORK:
        return None
    lanes = features_of(group).vector_floats
    _, _, out_h, out_w = shape_of(conv.res)
    _, _, kh, kw = shape_of(conv.weight)
    (sh, sw), (dh, dw) = conv.stride_values, conv.dilation_values
    row_phases, column_phases = phases(kh, dh, sh), phases(kw, dw, sw)
    padded_width = out_w + (kw - 1) * dw // sw
    reach = (kh - 1) * dh // sh
    images = len(row_phases) * len(column_phases)
    fits = [
        rows
        for rows in range(1, out_h + 1)
        if out_h % rows == 0 and images * (rows + reach) * padded_width + MAX_VECTORS * lanes <= PACK_MAX_FLOATS
    ]
    if not fits:
        return None
    rows = max(fits)
    tile = mk.Tile(rows=1, vectors=chunk_vectors((rows - 1) * padded_width + out_w, lanes), lanes=lanes)
    flat = channel_epilogue(group, conv.res) and (out_w <= FLAT_ROW_VECTORS * lanes or loops_epilogue(group))
    checks = (constant_finite(group, conv.weight), flat)
    return Plan(conv, rows, rows + reach, padded_width, row_phases, column_phases, tile, *checks)


def chunk_vectors(positions: int, lanes: int) -> int:
    """The vectors of a chunk over `positions`: the fewest vectors computed in all, then the
    fewest chunks, with at least VECTORS (or as many as the positions fill)."""
    least = min(VECTORS, math.ceil(positions / lanes))
    return min(range(least, MAX_VECTORS + 1), key=lambda v: (math.ceil(positions / (v * lanes)) * v, -v))


def constant_finite(group: relay.FusedOp, value: SSAValue) -> bool:
    """Whether group input `value` is a `relay.constant` of @main (a model's weight) whose
    values are all finite."""
    if not isinstance(value, BlockArgument):
        return False
    source = group.inputs[value.index].owner
    return isinstance(source, relay.ConstantOp) and bool(np.isfinite(constant_value(source)).all())


def matches(group: relay.FusedOp) -> bool:
    return plan_of(group) is not None


def build(emitter: GroupEmitter, group: relay.FusedOp, out: SSAValue) -> scf.ParallelOp:
    plan = plan_of(group)
    assert plan is not None
    batch, channels, out_h, _ = result_shape(group)
    root = group_root(group)
    nest = emitter.parallel_nest(
        (batch, channels, out_h // plan.rows), lambda tile: work_item(emitter, plan, root, tile, out)
    )
    return one_group_per_item(nest, group)


def work_item(e: GroupEmitter, plan: Plan, root: SSAValue, tile: list[SSAValue], out: SSAValue) -> None:
    """Output rows tile[2] * rows + r of channel tile[1] of image tile[0]: the sums of the
    whole block, then its epilogue; output by output (as `interpret`) when a weight of the
    channel is not finite."""
    packed = pack(e, plan, tile)
    if plan.finite_weights:
        sums_then_epilogue(e, plan, root, tile, packed, out)
        return
    e.if_else(
        weights_finite(e, plan, tile[1]),
        [],
        lambda: sums_then_epilogue(e, plan, root, tile, packed, out),
        lambda: store(e, plan, root, tile, None, out),
    )


def sums_then_epilogue(
    e: GroupEmitter, plan: Plan, root: SSAValue, tile: list[SSAValue], packed: SSAValue, out: SSAValue
) -> list[SSAValue]:
    """The block's sums into scratch, chunk by chunk, then `root` at its outputs from them."""
    sums = e.emit(memref.AllocaOp.get(f32, shape=[plan.sum_floats]))
    chunks = math.ceil(plan.summed / plan.chunk)
    e.loops([chunks], [], lambda ivs, _: chunk(e, plan, tile[1], packed, ivs[0], sums))
    if not plan.flat_epilogue:
        return store(e, plan, root, tile, sums, out)
    n, c, block = tile
    first_row = e.mul_const(block, plan.rows)

    def epilogue(ivs: list[SSAValue], _: list[SSAValue]) -> list[SSAValue]:
        idx = [n, c, first_row, e.index(0)]  # any pixel of the channel
        e.remember(plan.conv.res, idx, e.emit(memref.LoadOp.get(sums, ivs)))
        return e.store(e.value_at(root, idx), sums, ivs)

    e.loops([plan.summed], [], epilogue)
    return store(e, plan, None, tile, sums, out)


def weights_finite(e: GroupEmitter, plan: Plan, c: SSAValue) -> SSAValue:
    """Whether every weight of channel `c` is finite: the sum of w x 0 over its taps is 0
    exactly then (NaN else)."""
    _, _, kh, kw = shape_of(plan.conv.weight)

    def add(ivs: list[SSAValue], total: list[SSAValue]) -> list[SSAValue]:
        w = e.value_at(plan.conv.weight, [c, e.index(0), *ivs])
        return [e.emit(arith.AddfOp(total[0], e.emit(arith.MulfOp(w, e.f32(0.0)))))]

    total = e.loops([kh, kw], [e.f32(0.0)], add)[0]
    return e.emit(arith.CmpfOp(total, e.f32(0.0), "oeq"))


def pack(e: GroupEmitter, plan: Plan, tile: list[SSAValue]) -> SSAValue:
    """The phase images of the work item's channel (see the module docstring), zeros where
    they are padding, then a chunk of zeros. Only the padding is zeroed (rows above and below
    the input, then per row the columns left and right of it): zeroing the whole scratch
    first took a fifth of MobileNetV2's stride-2 convs (96 x 112 x 112: 185 -> 146 us without
    it, 1 thread, AVX-512)."""
    op = plan.conv
    height = shape_of(op.data)[2]
    top = op.padding_values[0]
    sh = op.stride_values[0]
    packed = e.emit(memref.AllocaOp.get(f32, shape=[plan.pack_floats]))
    images = len(plan.row_phases) * len(plan.column_phases)
    e.loops(
        [(e.index(images * plan.image_floats), e.index(plan.pack_floats))], [], lambda ivs, _: zero(e, packed, ivs[0])
    )
    first_row = e.add_const(e.mul_const(tile[2], plan.rows * sh), -top)  # the input row of output row 0's window
    end = e.index(plan.packed_rows)
    for a, q in enumerate(plan.row_phases):
        row0 = e.add_const(first_row, q)
        lo, hi = e.window_range(row0, sh, height, plan.packed_rows)
        lo = e.min_index(lo, end)
        hi = e.max_index(hi, lo)  # rows [0, lo) and [hi, packed_rows) are padding
        for padding in ((e.index(0), lo), (hi, end)):
            e.loops([padding], [], lambda ivs, _, a=a: zero_row(e, plan, packed, a, ivs[0]))
        e.loops([(lo, hi)], [], lambda ivs, _, a=a, row0=row0: copy_row(e, plan, tile, packed, (a, row0, ivs[0])))
    return packed


def zero(e: GroupEmitter, packed: SSAValue, at: SSAValue) -> list[SSAValue]:
    return e.store(e.f32(0.0), packed, [at])


def zero_row(e: GroupEmitter, plan: Plan, packed: SSAValue, a: int, k: SSAValue) -> list[SSAValue]:
    """Zeros packed row k of every column phase's image of row phase a."""
    for b in range(len(plan.column_phases)):
        base = e.mul_const(e.add_const(k, (a * len(plan.column_phases) + b) * plan.packed_rows), plan.padded_width)
        e.loops([plan.padded_width], [], lambda ivs, _, base=base: zero(e, packed, e.add(base, ivs[0])))
    return []


def copy_row(
    e: GroupEmitter, plan: Plan, tile: list[SSAValue], packed: SSAValue, row: tuple[int, SSAValue, SSAValue]
) -> list[SSAValue]:
    """Packed row k of row phase a (input row row0 + k sh) in each column phase's image: its
    packed column offset + t is input column first + t sw, for t < count; the columns left
    and right of those are zeros."""
    n, c, _ = tile
    a, row0, k = row
    width = shape_of(plan.conv.data)[3]
    left = plan.conv.padding_values[1]
    sh, sw = plan.conv.stride_values
    h = e.add(row0, e.mul_const(k, sh))
    for b, p in enumerate(plan.column_phases):
        first = (p - left) % sw  # the first input column of phase p
        offset = (first + left - p) // sw  # its packed column
        count = max(min(math.ceil((width - first) / sw), plan.padded_width - offset), 0)
        image = a * len(plan.column_phases) + b
        base = e.mul_const(e.add_const(k, image * plan.packed_rows), plan.padded_width)
        for padding in (
            (0, min(offset, plan.padded_width)),
            (min(offset + count, plan.padded_width), plan.padded_width),
        ):
            if padding[1] > padding[0]:
                extent = (e.index(padding[0]), e.index(padding[1]))
                e.loops([extent], [], lambda ivs, _, base=base: zero(e, packed, e.add(base, ivs[0])))
        if count == 0:
            continue

        def copy(
            ivs: list[SSAValue], _: list[SSAValue], base: SSAValue = base, first: int = first, offset: int = offset
        ) -> list[SSAValue]:
            value = e.value_at(plan.conv.data, [n, c, h, e.add_const(e.mul_const(ivs[0], sw), first)])
            return e.store(value, packed, [e.add(base, e.add_const(ivs[0], offset))])

        e.loops([count], [], copy)
    return []


def chunk(
    e: GroupEmitter, plan: Plan, c: SSAValue, packed: SSAValue, index: SSAValue, sums: SSAValue
) -> list[SSAValue]:
    """The sums at the flat positions of chunk `index` (the last one ending at the block's
    last position, or starting at 0 when the block has fewer), stored at those positions of
    `sums`."""
    _, _, kh, kw = shape_of(plan.conv.weight)
    start = e.min_index(e.mul_const(index, plan.chunk), e.index(max(plan.summed - plan.chunk, 0)))
    accs = mk.zeros(e, plan.tile)
    for i in range(kh):
        for j in range(kw):
            accs = one_tap(e, plan, (c, i, j), start, packed, accs)
    mk.store_block(e, plan.tile, accs, sums, lambda _, v: [e.add_const(start, v * plan.tile.lanes)])
    return []


def one_tap(
    e: GroupEmitter, plan: Plan, tap: tuple[SSAValue, int, int], start: SSAValue, packed: SSAValue, sums: list[SSAValue]
) -> list[SSAValue]:
    """`sums` plus tap (channel c, window row i, column j) at the chunk's positions from
    `start`: the weight times phase image ((i dh) % sh, (j dw) % sw) from row (i dh) // sh,
    column (j dw) // sw on."""
    c, i, j = tap
    (sh, sw), (dh, dw) = plan.conv.stride_values, plan.conv.dilation_values
    image = plan.row_phases.index(i * dh % sh) * len(plan.column_phases) + plan.column_phases.index(j * dw % sw)
    offset = image * plan.image_floats + i * dh // sh * plan.padded_width + j * dw // sw
    base = e.add_const(start, offset)
    weight = e.value_at(plan.conv.weight, [c, e.index(0), e.index(i), e.index(j)])
    lanes = plan.tile.lanes
    return mk.accumulate(
        e,
        plan.tile,
        [],
        sums,
        lambda _, __: weight,
        lambda _, v: mk.load(e, packed, [e.add_const(base, v * lanes)], lanes),
    )


def store(
    e: GroupEmitter, plan: Plan, root: SSAValue | None, tile: list[SSAValue], sums: SSAValue | None, out: SSAValue
) -> list[SSAValue]:
    """`root` at the block's outputs, a unit-stride loop along each output row (which gcc
    vectorises, epilogue and all): output (r, ow) reads the conv from flat position
    r * padded_width + ow of `sums`, or, without them, computes it (`GroupEmitter.conv2d`);
    without `root`, the outputs are copied from `sums` as they are (the epilogue done)."""
    n, c, block = tile
    out_w = shape_of(plan.conv.res)[3]
    first_row = e.mul_const(block, plan.rows)

    def output(ivs: list[SSAValue], _: list[SSAValue]) -> list[SSAValue]:
        r, ow = ivs
        idx = [n, c, e.add(first_row, r), ow]
        if sums is not None:
            at = e.add(e.mul_const(r, plan.padded_width), ow)
            loaded = e.emit(memref.LoadOp.get(sums, [at]))
            if root is None:
                return e.store(loaded, out, idx)
            e.remember(plan.conv.res, idx, loaded)
        assert root is not None
        return e.store(e.value_at(root, idx), out, idx)

    return e.loops([plan.rows, out_w], [], output)


SCHEDULE = Schedule("depthwise_conv", matches, build)
