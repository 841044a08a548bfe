"""
packed_conv: a direct convolution over a packed input tile, in register blocks, for a cpu or
opencl group whose anchor is a conv2d of the result's shape, of any stride.

The nest spans (n, block of output rows, part of the output channels); a work item computes
its part's output channels at its rows. The channels are split into parts (`Plan.channel_parts`)
only where the images and row blocks are fewer than the target's cores: a 7x7 or 14x14
output is one row block, and was one work item that no second thread could share. Each part
packs its rows again, a copy far smaller than its multiply-adds. Its phases:

1. Pack: the input rows the block's windows read, every input channel, with the padding as
   zeros, into one scratch buffer of padded rows (`memref.alloca`), `Plan.row_block` rows.
   With a stride (sh, sw), by phases: the padded rows (columns) of one residue modulo sh (sw)
   that some tap reads (`Plan.row_phases`, `Plan.column_phases`) are one packed image, so
   that output (r, ow) at tap (i, j) reads its phase image at (r + i*dh // sh, ow + j*dw // sw)
   and the micro-kernel's loads stay unit-stride, as at stride 1 (one phase each). A 1 x 1
   conv of stride 2 packs the subsampled input (one phase) and is a dense over it.
2. Register blocks: the output pixel at (row r, column ow) of the block reads the packed
   input at its flat position q = r * padded_width + ow plus the tap's offset, for every
   tap, whatever its row. A block sums `Plan.vectors` vectors of LANES output pixels (one
   vector load each per tap) times CHANNELS output channels (one broadcast each per tap)
   in registers (`micro_kernel.accumulate`); the loop runs over input channels, the taps of
   a window of at most UNROLLED_TAPS unrolled in it (else a loop over the window's rows too):

       for c:  for i, j (unrolled):  for o < CHANNELS:  w = broadcast(weight[o0 + o, c, i, j])
                   for v < vectors:  acc[o, v] = fma(w, packed[base(c, i, j) + q_v ...], acc[o, v])

   Where the vectors are, one of two layouts (`Plan.row_aligned`):
   - row-aligned, when output rows fill whole vectors about as well as padded rows do (a
     28-wide row in 2 vectors, a 14-wide one in 1: `row_aligned`): each vector is one stretch
     of one output row (the last of a row ends at the row's end and recomputes a few columns;
     a row shorter than a vector computes lanes past it, reading the next packed row, and
     drops them), so its outputs are stored by a loop of a constant count;
   - flat, else: `vectors` x LANES consecutive flat positions (the columns past the output
     width are computed and dropped), which may span several output rows.
   A last block of vectors, positions or channels that would run past the end starts earlier
   instead and recomputes a few outputs, so every block is a full one.
3. Store: when the block's sums are all finite (0 x s summed is 0, one fused multiply-add a
   vector in registers), the group's result is stored at the block's outputs, the epilogue
   (bias, relu, a residual add, ...) reading the conv from the sums (`store_rows`: a loop of
   LANES or the row's width per vector; `store_block`: a unit-stride loop along each output
   row the block spans). Reading the padding as zeros is then exact: a
   padded tap added 0 x w = 0, as if skipped. A NaN or inf weight on a padded tap would
   have made a sum NaN (0 x inf), so a block with any non-finite sum is computed again
   output by output (`GroupEmitter.conv2d`, which skips the padded taps by its loop bounds),
   as in `xrelay.interpret`: padding is never read there. The test costs one multiply-add
   per output vector, not per weight.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

from xdsl.dialects import arith, memref, scf, vector
from xdsl.dialects.builtin import f32
from xdsl.ir import SSAValue

from xrelay.dialects import relay
from xrelay.runtime.machine import Features
from xrelay.transforms.kernel_builder import Extent, shape_of
from xrelay.transforms.scalar_ops import GroupEmitter
from xrelay.transforms.schedules import (
    Schedule,
    anchor_of,
    features_of,
    group_root,
    kind_of,
    one_group_per_item,
    result_shape,
)
from xrelay.transforms.schedules import micro_kernel as mk

# The register block: at most CHANNELS output channels x VECTORS vectors of the target's
# lanes of output pixels, as many channels as fit its registers (`register_tile`: 8 x 3 of
# AVX-512's 32, 3 x 3 of AVX2's 16). bench/kernels.py --conv, time against sgemm of the im2col
# matrix in the same run (a shared machine at load 12; ResNet 64->64 at 56x56, 16->32 at
# 28x28, CNN batch 8 16->32 at 14x14): 8 x 3 ran at 0.77-1.06x / 0.96-0.97x / 1.09-1.15x
# sgemm's speed, 6 x 4 at 0.75-1.42x / 0.79-0.81x / 0.89-0.97x (it computes 36 channels for
# 32), 12 x 2 and 16 x 1 no better. (In plain scalar C, before vector types, gcc kept only
# 6 x 4 in registers.)
CHANNELS = 8
VECTORS = 3

# A work item's rows: the largest divisor of the output height whose padded rows hold at
# most ROW_BLOCK_PIXELS positions (the packed tile is reused by every channel block), and
# whose packed rows are at most PACK_MAX_FLOATS (a stack buffer, the size of the 512 KiB L2;
# 512 input channels in 4 phases of 8 x 8 exactly, ResNet-50's 3x3 conv of stride 2 at 14x14
# -> 7x7: with the tail of zeros counted, blocks of one 7-wide row ran it 5x slower).
# (256, 512 and 1024 ran within the noise of each other.) At 1 << 16 (256 channels there),
# against 1 << 17, conv + bias + relu at 1 thread, GFLOP/s AVX-512 / AVX2, 15 interleaved
# rounds, load 7: 512 -> 512 s2 14 -> 7 21 -> 95 / 20 -> 73, 256 -> 256 s2 28 -> 14 64 -> 144
# / 30 -> 76, 128 -> 128 s2 56 -> 28 129 -> 182 / 85 -> 100; the 7x7 stem, MobileNetV2's first
# conv, 512 -> 512 at 7x7 and 64 -> 64 at 56x56 within 5% or faster (1 << 18 no better).
ROW_BLOCK_PIXELS = 512
PACK_MAX_FLOATS = 1 << 17

# It serves every device kind with kernels (`DeviceKind.generates_kernels`). On opencl a work item is the same code (`float16` vectors, the
# scratch as private arrays), which PoCL's LLVM compiles to the same zmm broadcast-FMAs as gcc:
# bench/opencl_kernels.py, PoCL on 1 thread against the C kernel, conv2d 3x3 64 -> 64 at
# 56x56 2.09x -> 0.93x the C kernel's time, 8x16x28x28 -> 32 1.69x -> 0.97x (conv_vectors
# before; one run, machine load 2-3). Each work item is launched as a work group of its own
# (`one_group_per_item`), so PoCL's threads share them and each has its own stack for its
# packed tile (PACK_MAX_FLOATS: 512 KiB, far under its 8 MiB); in one group a
# batch's tiles together overflowed it (64 64-channel 32x32 images segfaulted).

# Of those down to half the largest, the largest giving a `balanced` count of work items
# (images x row blocks), for the two cores here: the ResNet block's 56 rows make 7 blocks of
# 8 rows (4 + 3 on two threads), but 8 blocks of 7.
BALANCED_ITEMS = 8

# Below half a register block's pixels per image (`Plan.pixels`), its positions would mostly
# compute dropped columns; below MIN_WORK multiply-adds per image, packing costs more than
# it saves. conv_rows takes such groups (the CNN's first conv, 1 -> 16 channels at 28x28,
# is 113K multiply-adds).
MIN_WORK = 1 << 15

# A register block's loop over input channels runs a window of at most this many taps
# unrolled (a larger window: a row of taps); gcc allocated the sums of three nested loops
# worse (the CNN's 16 -> 32 conv at 14x14: 0.216 -> 0.193 ms unrolled, in one run).
UNROLLED_TAPS = 9

# The row-aligned layout (phase 2's alternative) is taken when its vectors compute at most
# this many columns per output row more than the padded row has (see `row_aligned`). Its
# register blocks have the count of ROW_VECTORS that recomputes the fewest vectors of a work
# item (the larger on a tie): the CNN's 16 -> 32 conv at 14x14, 14 vectors a work item, ran
# 5% faster in blocks of 2 than of 3 (its 28x28 first conv: equal; 4 no better than 3 there).
ROW_SLACK = 2
ROW_VECTORS = (3, 2)

# The flat layout's register blocks are VECTORS vectors, or of FLAT_VECTORS the count that
# computes at least FLAT_SAVING fewer vectors of a work item (its last block, starting
# earlier, recomputes the ones before), in blocks of at least MIN_SUMS vector sums (FMA
# latency x pipes). A 7 x 7 output (ResNet's last stage: 61 positions in padded rows of 9)
# is 2 blocks of 3 vectors (96 positions for 49 outputs) but 1 of 4 (6 channels x 4 on
# AVX-512: 64 positions). Conv + bias + relu alone at 1 thread, AVX-512, min of 60
# interleaved runs (load 11): 512 -> 512 at 7 x 7 134 -> 186 GFLOP/s, stride 2 14 -> 7
# 132 -> 196, 128 -> 32 at 7 x 7 110 -> 135. Smaller savings keep 8 x 3 (6 x 4 measured
# mixed against it at larger shapes: see CHANNELS).
FLAT_VECTORS = (4, 2)
FLAT_SAVING = 0.25
MIN_SUMS = 8

# The finite test of a block's sums runs this many chains of fused multiply-adds side by side
# (one chain of 16 or 24 waited on each one's latency).
PROBE_CHAINS = 4


@dataclass(frozen=True)
class Plan:
    """The shapes of a packed conv: the padded row width, the rows per work item and the
    packed rows they read, and the register block (output channels x vectors of pixels)."""

    conv: relay.Conv2DOp
    padded_width: int  # of a packed row (of one column phase): out_w + (kw - 1) * dw // sw
    row_block: int
    packed_rows: int
    row_aligned: bool
    tile: mk.Tile  # channels x vectors (VECTORS, or ROW_VECTORS' best fit) of the target's lanes
    row_phases: tuple[int, ...] = (0,)  # the padded rows' residues modulo sh that taps read
    column_phases: tuple[int, ...] = (0,)  # the padded columns' residues modulo sw
    channel_parts: int = 1  # the work items that share an image's row block, by output channels

    @property
    def channels(self) -> int:
        return self.tile.rows

    @property
    def vectors(self) -> int:
        return self.tile.vectors

    @property
    def lanes(self) -> int:
        return self.tile.lanes

    @property
    def pixels(self) -> int:
        """Flat layout: the positions of a register block."""
        return self.tile.columns

    @property
    def row_vectors(self) -> int:
        """Row-aligned layout: the vectors of an output row (the last one ends at the row's
        end, or the row is shorter than a vector)."""
        return math.ceil(shape_of(self.conv.res)[3] / self.lanes)

    @property
    def vector_count(self) -> int:
        """Row-aligned layout: the vectors of a work item, row by row."""
        return self.row_block * self.row_vectors

    @property
    def positions(self) -> int:
        """The flat positions of the block's outputs: its rows but the last columns of the last."""
        return (self.row_block - 1) * self.padded_width + shape_of(self.conv.res)[3]

    @property
    def phase_count(self) -> int:
        """The packed images of an input channel, one per (row phase, column phase)."""
        return len(self.row_phases) * len(self.column_phases)

    @property
    def pack_floats(self) -> int:
        in_c = shape_of(self.conv.data)[1] * self.phase_count
        return pack_floats(in_c, self.packed_rows, self.padded_width, max(VECTORS, self.vectors) * self.lanes)


def plan_of(group: relay.FusedOp, conv: relay.Conv2DOp | None = None) -> Plan | None:
    """How the group's conv (its anchor, or `conv`: pointwise_conv asks of a conv whose global
    pool the group yields) is computed in packed register blocks, or None if it is not."""
    conv = conv or anchor_of(group, relay.Conv2DOp)
    if conv is None or group.se_scope is None or not kind_of(group).generates_kernels:
        return None
    features = features_of(group)
    lanes = features.vector_floats
    in_c = shape_of(conv.data)[1]
    _, _, out_h, out_w = shape_of(conv.res)
    out_c, in_per_group, kh, kw = shape_of(conv.weight)
    (sh, sw), (dh, dw) = conv.stride_values, conv.dilation_values
    if 2 * out_h * out_w < VECTORS * lanes or out_c * out_h * out_w * in_per_group * kh * kw < MIN_WORK:
        return None
    padded_width = out_w + (kw - 1) * dw // sw  # at stride 1, the input's padded width
    reach = (kh - 1) * dh // sh  # the packed rows (of a phase) beyond the output rows
    row_phases, column_phases = phases(kh, dh, sh), phases(kw, dw, sw)
    images = in_c * len(row_phases) * len(column_phases)
    fits = [
        rows
        for rows in range(1, out_h + 1)
        if out_h % rows == 0
        and (rows == 1 or rows * padded_width <= ROW_BLOCK_PIXELS)
        and images * (rows + reach) * padded_width <= PACK_MAX_FLOATS  # its rows, without the tail
    ]
    if not fits:
        return None
    per_group = shape_of(conv.res)[1] // conv.group_count
    batch = shape_of(conv.res)[0]
    large = [rows for rows in fits if 2 * rows >= max(fits)]  # blocks at least half the largest
    rows = max(large, key=lambda rows: (balanced(batch * out_h // rows), rows))
    count = rows * math.ceil(out_w / lanes)  # the vectors of a work item, row-aligned
    aligned = row_aligned(out_w, padded_width, lanes) and count >= VECTORS
    most = min(CHANNELS, per_group)
    if aligned:
        vectors = min(ROW_VECTORS, key=lambda v: (math.ceil(count / v) * v - count, -v))
        tile = channel_tile(features, vectors, most)
    else:
        tile = flat_tile(features, (rows - 1) * padded_width + out_w, most)
    plan = Plan(conv, padded_width, rows, rows + reach, aligned, tile, row_phases, column_phases)
    return replace(plan, channel_parts=channel_parts(plan, batch * out_h // rows, features.cores))


def channel_parts(plan: Plan, items: int, cores: int) -> int:
    """The parts an image's row block splits its channel blocks into: enough that the `items`
    work items become one a core, each part at least one channel block."""
    if items >= cores:
        return 1
    blocks = channel_blocks(plan)
    per_part = math.ceil(blocks / min(blocks, math.ceil(cores / items)))
    return math.ceil(blocks / per_part)


def part_blocks(e: GroupEmitter, plan: Plan, tile: list[SSAValue]) -> Extent:
    """The channel blocks of work item `tile`'s part as `e.loops`' extent: every block with one part, else
    ceil(blocks / parts) of them, the last part's ending at the last block."""
    blocks = channel_blocks(plan)
    if plan.channel_parts == 1:
        return blocks
    per_part = math.ceil(blocks / plan.channel_parts)
    first = e.mul_const(tile[2], per_part)
    return first, e.min_index(e.add_const(first, per_part), e.index(blocks))


def flat_tile(features: Features, positions: int, most: int) -> mk.Tile:
    """The flat layout's register block for a work item of `positions` flat positions:
    VECTORS vectors, unless one of FLAT_VECTORS computes FLAT_SAVING fewer vectors in
    blocks of at least MIN_SUMS sums (then the one computing fewest, the first on a tie)."""
    lanes = features.vector_floats

    def computed(vectors: int) -> int:
        return math.ceil(positions / (vectors * lanes)) * vectors

    tile = channel_tile(features, VECTORS, most)
    others = [t for v in FLAT_VECTORS if (t := channel_tile(features, v, most)).count >= min(MIN_SUMS, tile.count)]
    best = min(others, key=lambda t: computed(t.vectors), default=tile)
    return best if computed(best.vectors) <= (1 - FLAT_SAVING) * computed(VECTORS) else tile


def phases(taps: int, dilation: int, stride: int) -> tuple[int, ...]:
    """The residues modulo `stride` of the taps' offsets along one axis: the phases packed."""
    return tuple(sorted({t * dilation % stride for t in range(taps)}))


def regular_phases(plan: Plan) -> bool:
    """Whether the row phases are every multiple of gcd(dh, sh) below sh, so that a loop over
    the window's rows finds tap i's phase as (i * dh % sh) / gcd (`tap_rows`)."""
    (sh, _), (dh, _) = plan.conv.stride_values, plan.conv.dilation_values
    step = math.gcd(dh, sh)
    return plan.row_phases == tuple(range(0, sh, step))


def channel_tile(features: Features, vectors: int, most: int) -> mk.Tile:
    """A convolution's register block: `vectors` vectors of the target's lanes x the most
    output channels, up to `most`, whose step (`mk.registers_needed`, with two broadcasts:
    gcc alternates two) leaves a vector register spare: 8 x 3 or 8 x 2 of AVX-512's 32; 3 x 3
    or 5 x 2 of AVX2's 16, where 6 x 2 (16 of 16) kept a sum on the stack (winograd_conv,
    ResNet conv, AVX2: 212 -> 320 GFLOP/s as 5 x 2)."""
    channels = max(1, most)
    while channels > 1 and mk.registers_needed(channels, vectors, features.fma, 2) >= features.vector_registers:
        channels -= 1
    return mk.Tile(rows=channels, vectors=vectors, lanes=features.vector_floats)


def pack_floats(in_c: int, packed_rows: int, padded_width: int, pixels: int) -> int:
    """A work item's scratch, its packed tile: every input channel's packed rows, then `pixels`
    zeros (a block of positions past the last row, when a block has fewer than `pixels`)."""
    return in_c * packed_rows * padded_width + pixels


def balanced(work_items: int) -> bool:
    """Whether `work_items` split evenly enough over threads: an even count (2 threads: one
    half each), or enough that one more on a thread costs at most 1/BALANCED_ITEMS."""
    return work_items % 2 == 0 or work_items >= BALANCED_ITEMS


def row_aligned(out_w: int, padded_width: int, lanes: int) -> bool:
    """Whether vectors along output rows compute at most ROW_SLACK columns more per row than
    the padded row does (a 28-wide row in 2 vectors of its 30, a 14-wide one in 1 of 16)."""
    return math.ceil(out_w / lanes) * lanes <= padded_width + ROW_SLACK


def matches(group: relay.FusedOp) -> bool:
    return plan_of(group) is not None


def build(emitter: GroupEmitter, group: relay.FusedOp, out: SSAValue) -> scf.ParallelOp:
    plan = plan_of(group)
    assert plan is not None
    nest = row_blocks(emitter, group, plan, work_item, out)
    return one_group_per_item(nest, group)


WorkItem = Callable[[GroupEmitter, Plan, SSAValue, list[SSAValue], SSAValue], None]


def row_blocks(
    emitter: GroupEmitter, group: relay.FusedOp, plan: Plan, item: WorkItem, out: SSAValue
) -> scf.ParallelOp:
    """The nest of work items (image, block of `plan.row_block` output rows[, channel part]),
    each built by `item(emitter, plan, root, [n, block[, part]], out)` (conv_taps shares it)."""
    batch, _, out_h, _ = result_shape(group)
    root = group_root(group)
    tiles = (batch, out_h // plan.row_block) + ((plan.channel_parts,) if plan.channel_parts > 1 else ())
    return emitter.parallel_nest(tiles, lambda tile: item(emitter, plan, root, tile, out))


def work_item(e: GroupEmitter, plan: Plan, root: SSAValue, tile: list[SSAValue], out: SSAValue) -> None:
    """Output rows tile[1] * row_block + r, every channel (of part tile[2], where the plan has
    parts), of image tile[0]: the packed tile, then its register blocks."""
    packed = pack(e, plan, tile)
    chunks = (
        math.ceil(plan.vector_count / plan.vectors) if plan.row_aligned else math.ceil(plan.positions / plan.pixels)
    )
    blocks = part_blocks(e, plan, tile)
    e.loops([blocks, chunks], [], lambda ivs, _: register_block(e, plan, root, tile, packed, ivs, out))


def pack(e: GroupEmitter, plan: Plan, tile: list[SSAValue]) -> SSAValue:
    """The packed tile: for each input channel c, row phase q (index a) and column phase p
    (index b), an image of packed_rows x padded_width whose (k, k2) is the padded input at row
    row0 + k * sh + q, column k2 * sw + p, where row0 = first output row * sh (the input's
    row minus top, column minus left); zeros where that is padding."""
    op = plan.conv
    _, in_c, height, width = shape_of(op.data)
    left, sw = op.padding_values[1], op.stride_values[1]
    packed = e.emit(memref.AllocaOp.get(f32, shape=[plan.pack_floats]))
    e.loops([plan.pack_floats], [], lambda ivs, _: e.store(e.f32(0.0), packed, ivs))
    for a, q in enumerate(plan.row_phases):
        for b, p in enumerate(plan.column_phases):
            first = (p - left) % sw  # the first input column of phase p
            offset = (first + left - p) // sw  # its packed column
            count = min(math.ceil((width - first) / sw), plan.padded_width - offset)
            image = a * len(plan.column_phases) + b
            pack_phase(e, plan, tile, packed, (image, q, first, offset), (in_c, height, count))
    return packed


def pack_phase(
    e: GroupEmitter,
    plan: Plan,
    tile: list[SSAValue],
    packed: SSAValue,
    phase: tuple[int, int, int, int],
    extents: tuple[int, int, int],
) -> None:
    """Copies the input of one phase image: (image index, row phase, first input column,
    its packed column) into packed rows, `extents` = (input channels, input height, columns)."""
    op = plan.conv
    n, row_tile = tile[:2]
    image, q, first, offset = phase
    in_c, height, count = extents
    top = op.padding_values[0]
    sh, sw = op.stride_values
    row0 = e.add_const(e.mul_const(row_tile, plan.row_block * sh), q - top)

    def copy(ivs: list[SSAValue], _: list[SSAValue]) -> list[SSAValue]:
        c, k, t = ivs
        sub = e.add_const(e.mul_const(c, plan.phase_count), image)
        at = e.add(e.mul_const(e.add(e.mul_const(sub, plan.packed_rows), k), plan.padded_width), e.add_const(t, offset))
        at_input = [n, c, e.add(row0, e.mul_const(k, sh)), e.add_const(e.mul_const(t, sw), first)]
        return e.store(e.value_at(op.data, at_input), packed, [at])

    if count > 0:
        e.loops([in_c, e.window_range(row0, sh, height, plan.packed_rows), count], [], copy)


def channel_blocks(plan: Plan) -> int:
    """Register blocks of `plan.channels` output channels: per conv group, enough to cover it."""
    out_c = shape_of(plan.conv.res)[1]
    per_group = out_c // plan.conv.group_count
    return plan.conv.group_count * math.ceil(per_group / plan.channels)


def first_channel(e: GroupEmitter, plan: Plan, block: SSAValue) -> SSAValue:
    """The first output channel of channel block `block`: blocks tile each conv group, the
    last one ending at the group's end (it may recompute channels of the one before)."""
    per_group = shape_of(plan.conv.res)[1] // plan.conv.group_count
    count = math.ceil(per_group / plan.channels)
    group, within = e.div_const(block, count), e.rem_const(block, count)
    start = e.min_index(e.mul_const(within, plan.channels), e.index(per_group - plan.channels))
    return e.add(e.mul_const(group, per_group), start)


def register_block(
    e: GroupEmitter,
    plan: Plan,
    root: SSAValue,
    tile: list[SSAValue],
    packed: SSAValue,
    ivs: list[SSAValue],
    out: SSAValue,
) -> list[SSAValue]:
    """The outputs of `plan.channels` channels from channel block ivs[0], at the
    `plan.vectors` vectors of chunk ivs[1] (the last chunk ending at the work item's last
    vector or position)."""
    op = plan.conv
    block, chunk = ivs
    _, in_c, kh, kw = shape_of(op.weight)
    o0 = first_channel(e, plan, block)
    channel_base = e.conv_channel_base(op, o0)
    spots = row_spots(e, plan, chunk) if plan.row_aligned else None
    offsets = vector_offsets(e, plan, chunk, spots)
    tile_shape = plan.tile

    def weight(tap: Tap, o: int) -> SSAValue:
        c, i, j = tap
        return e.value_at(op.weight, [e.add_const(o0, o), c, e.index(i) if isinstance(i, int) else i, e.index(j)])

    def pixels(tap: Tap, v: int) -> SSAValue:
        return mk.load(e, packed, [e.add(tap_address(e, plan, channel_base, tap), offsets[v])], plan.lanes)

    def one_tap(tap: Tap, sums: list[SSAValue]) -> list[SSAValue]:
        return mk.accumulate(e, tile_shape, [], sums, lambda _, o: weight(tap, o), lambda _, v: pixels(tap, v))

    looped = kh * kw > UNROLLED_TAPS and regular_phases(plan)

    def taps(ks: list[SSAValue], sums: list[SSAValue]) -> list[SSAValue]:
        """Every tap of input channel ks[0] (of row ks[1] when the window is large), unrolled."""
        rows: list[int | SSAValue] = [ks[1]] if looped else list(range(kh))
        for i in rows:
            for j in range(kw):
                sums = one_tap((ks[0], i, j), sums)
        return sums

    extents = [in_c, kh] if looped else [in_c]
    sums = e.loops(extents, mk.zeros(e, tile_shape), taps)
    acc = e.emit(memref.AllocaOp.get(f32, shape=[plan.channels, plan.vectors * plan.lanes]))
    mk.store_block(e, tile_shape, sums, acc, lambda o, v: [e.index(o), e.index(v * plan.lanes)])
    finite = e.emit(arith.CmpfOp(block_probe(e, sums, plan.lanes), e.f32(0.0), "oeq"))

    def store(sums: SSAValue | None) -> list[SSAValue]:
        if spots is not None:
            return store_rows(e, plan, root, tile, sums, o0, spots, out)
        return store_block(e, plan, root, tile, sums, o0, offsets[0], out)

    e.if_else(finite, [], lambda: store(acc), lambda: store(None))
    return []


# A tap of a register block: (input channel of the conv group, window row, window column);
# the row is a loop's variable when the window's rows are a loop.
Tap = tuple[SSAValue, "int | SSAValue", int]


def tap_address(e: GroupEmitter, plan: Plan, channel_base: SSAValue, tap: Tap) -> SSAValue:
    """Where in the packed tile output position 0 reads tap (c, i, j): the phase image of
    input channel channel_base + c, row (i * dh) % sh, column (j * dw) % sw, at row
    i * dh // sh, column j * dw // sw."""
    c, i, j = tap
    sw, dw = plan.conv.stride_values[1], plan.conv.dilation_values[1]
    b = plan.column_phases.index(j * dw % sw)
    row_phase, row_offset = tap_rows(e, plan, i)
    image = e.add(e.mul_const(row_phase, len(plan.column_phases)), e.index(b))
    sub = e.add(e.mul_const(e.add(channel_base, c), plan.phase_count), image)
    row = e.mul_const(sub, plan.packed_rows)
    tap_offset = e.add(row_offset, e.index(j * dw // sw))
    return e.add(e.mul_const(row, plan.padded_width), tap_offset)


def tap_rows(e: GroupEmitter, plan: Plan, i: int | SSAValue) -> tuple[SSAValue, SSAValue]:
    """Window row i's row phase index and its offset in the packed tile (packed rows times
    the padded width); from a loop's variable when the phases are `regular_phases`."""
    (sh, _), (dh, _) = plan.conv.stride_values, plan.conv.dilation_values
    width = plan.padded_width
    if isinstance(i, int):
        return e.index(plan.row_phases.index(i * dh % sh)), e.index(i * dh // sh * width)
    if len(plan.row_phases) == 1:  # every i * dh a multiple of sh
        return e.index(0), e.mul_const(i, dh // sh * width)
    step = math.gcd(dh, sh)
    offset = e.mul_const(i, dh)
    return e.div_const(e.rem_const(offset, sh), step), e.mul_const(e.div_const(offset, sh), width)


def row_spots(e: GroupEmitter, plan: Plan, chunk: SSAValue) -> list[tuple[SSAValue, SSAValue]]:
    """Row-aligned layout: (row of the work item, first column) of each vector of the chunk.
    Vector g of the work item is vector g % row_vectors of row g / row_vectors; the last one of
    a row ends at the row's end (it recomputes columns of the one before), a row shorter than
    a vector starts at 0 (its lanes past the row are computed and dropped)."""
    out_w = shape_of(plan.conv.res)[3]
    first = e.min_index(e.mul_const(chunk, plan.vectors), e.index(plan.vector_count - plan.vectors))
    spots: list[tuple[SSAValue, SSAValue]] = []
    for v in range(plan.vectors):
        g = e.add_const(first, v)
        column = e.mul_const(e.rem_const(g, plan.row_vectors), plan.lanes)
        spots.append((e.div_const(g, plan.row_vectors), e.min_index(column, e.index(max(out_w - plan.lanes, 0)))))
    return spots


def vector_offsets(
    e: GroupEmitter, plan: Plan, chunk: SSAValue, spots: list[tuple[SSAValue, SSAValue]] | None
) -> list[SSAValue]:
    """The flat position (in the packed padded rows) of each vector's first output: from its
    row and column in the row-aligned layout, else `Plan.pixels` consecutive positions from the
    chunk's start (the last chunk ending at the block's last position)."""
    if spots is not None:
        return [e.add(e.mul_const(row, plan.padded_width), column) for row, column in spots]
    start = e.mul_const(chunk, plan.pixels)
    q0 = e.min_index(start, e.index(plan.positions - plan.pixels)) if plan.positions >= plan.pixels else e.index(0)
    return [e.add_const(q0, v * plan.lanes) for v in range(plan.vectors)]


def block_probe(e: GroupEmitter, sums: list[SSAValue], lanes: int) -> SSAValue:
    """0 x s summed over the block's sums s: 0 exactly when every one is finite. In registers:
    PROBE_CHAINS independent chains of fused multiply-adds (one a vector) joined by x * 1 + y
    (exact), then the `lanes` lanes of the total."""
    zero, one = mk.broadcast(e, e.f32(0.0), lanes), mk.broadcast(e, e.f32(1.0), lanes)
    chains = [zero] * PROBE_CHAINS
    for k, vec in enumerate(sums):
        chains[k % PROBE_CHAINS] = e.emit(vector.FMAOp(vec, zero, chains[k % PROBE_CHAINS]))
    total = chains[0]
    for chain in chains[1:]:
        total = e.emit(vector.FMAOp(chain, one, total))
    spilled = e.emit(memref.AllocaOp.get(f32, shape=[lanes]))
    mk.store(e, total, spilled, [e.index(0)])

    def add(ivs: list[SSAValue], partial: list[SSAValue]) -> list[SSAValue]:
        return [e.emit(arith.AddfOp(partial[0], e.emit(memref.LoadOp.get(spilled, ivs))))]

    return e.loops([lanes], [e.f32(0.0)], add)[0]


def store_block(
    e: GroupEmitter,
    plan: Plan,
    root: SSAValue,
    tile: list[SSAValue],
    acc: SSAValue | None,
    o0: SSAValue,
    q0: SSAValue,
    out: SSAValue,
) -> list[SSAValue]:
    """`root` at the block's outputs, row by row: the positions q0 + p (p < `Plan.pixels`) of output
    row r of the work item are r * padded_width + ow for ow < out_w, so each row's stretch is
    one loop over ow, unit-stride and without a test, which gcc vectorises with the epilogue
    (a test and a division per position cost a fifth of the micro-kernel's time at 64
    channels, more at 16). The conv is read from the sums `acc`, or, without them, computed
    output by output (`GroupEmitter.conv2d`, whose loop bounds skip the padding)."""
    n, row_tile = tile[:2]
    out_w = shape_of(plan.conv.res)[3]
    width = plan.padded_width
    first_row = e.mul_const(row_tile, plan.row_block)
    rows = (
        e.div_const(q0, width),
        e.min_index(e.add_const(e.div_const(e.add_const(q0, plan.pixels - 1), width), 1), e.index(plan.row_block)),
    )

    def row(ivs: list[SSAValue], _: list[SSAValue]) -> list[SSAValue]:
        o, r = ivs
        start = e.sub(e.mul_const(r, width), q0)  # position p of column 0 (may be negative)
        columns = (
            e.max_index(e.index(0), e.sub(e.index(0), start)),
            e.min_index(e.index(out_w), e.sub(e.index(plan.pixels), start)),
        )

        def output(ows: list[SSAValue], _: list[SSAValue]) -> list[SSAValue]:
            idx = [n, e.add(o0, o), e.add(first_row, r), ows[0]]
            if acc is not None:
                e.remember(plan.conv.res, idx, e.emit(memref.LoadOp.get(acc, [o, e.add(start, ows[0])])))
            return e.store(e.value_at(root, idx), out, idx)

        return e.loops([columns], [], output)

    return e.loops([plan.channels, rows], [], row)


def store_rows(
    e: GroupEmitter,
    plan: Plan,
    root: SSAValue,
    tile: list[SSAValue],
    acc: SSAValue | None,
    o0: SSAValue,
    spots: list[tuple[SSAValue, SSAValue]],
    out: SSAValue,
) -> list[SSAValue]:
    """Row-aligned layout: `root` at the block's outputs, vector by vector: each vector's
    lanes are one stretch of an output row, a loop of a constant count (LANES, or the row's
    width when shorter), which gcc turns into whole vector operations with the epilogue. The
    conv is read from the sums `acc`, or, without them, computed output by output."""
    n, row_tile = tile[:2]
    first_row = e.mul_const(row_tile, plan.row_block)
    for v, (row, column) in enumerate(spots):
        store_vector(e, plan, root, acc, v, [n, o0, e.add(first_row, row), column], out)
    return []


def store_vector(
    e: GroupEmitter, plan: Plan, root: SSAValue, acc: SSAValue | None, v: int, at: list[SSAValue], out: SSAValue
) -> None:
    """The outputs of vector v of the block, every channel: `at` is (n, first channel, row,
    first column) of its first one."""
    n, o0, row, column = at
    lanes = min(plan.lanes, shape_of(plan.conv.res)[3])

    def output(ivs: list[SSAValue], _: list[SSAValue]) -> list[SSAValue]:
        o, lane = ivs
        idx = [n, e.add(o0, o), row, e.add(column, lane)]
        if acc is not None:
            e.remember(plan.conv.res, idx, e.emit(memref.LoadOp.get(acc, [o, e.add_const(lane, v * plan.lanes)])))
        return e.store(e.value_at(root, idx), out, idx)

    e.loops([plan.channels, lanes], [], output)


SCHEDULE = Schedule("packed_conv", matches, build)
