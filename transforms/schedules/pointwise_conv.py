"""
pointwise_conv: a 1 x 1 convolution (any stride, one conv group, no padding) computed as a
matmul over the NCHW image by packed_matmul's blocks and micro-kernel, on cpu and on opencl.

Per image n, the conv is out[o, p] = sum_c w[o, c] x[c, p] over the output pixels p = (oh,
ow), x[c, p] the input at (c, oh * sh, ow * sw): a matmul whose lhs is the weight ([O, C]
as it lies, rows along k, so the micro-kernel's broadcasts read it in place), whose rhs is
the image ([C, P], `micro_kernel.Layout.PLAIN`: each work item packs its pixels into
panels), with the image's batch as the batch axis. The work items, k-blocks, tiles and
scratch are packed_matmul's (`Block`); only what an element of each operand is and where the
block's outputs go differ (`PointwiseBlock`): the epilogue stores each output row that a
block of pixels spans by a unit-stride loop along the row (as packed_conv's `store_block`),
the group's other ops (bias, activation, residual) applied there.

A group of fuse-conv-pool whose conv ends in a `global_avg_pool2d` (`GlobalPooling`) is
computed here too when this schedule takes the conv and a block of columns holds all of an
image's pixels: each work item owns
its channels at every pixel, so it sums each channel's epilogue over the pixels in its own
scratch (race-free, no partial sums) and stores the pooled [N, C, 1, 1] (or what elementwise
ops after the pool make of it) instead of the conv's result. The sum runs in the loops the
pool's own kernel has (`GroupEmitter.global_avg_pool2d`: from 0.0, the rows, each row's
pixels, the C target's reduction pragma on the inner loop), then is divided by H * W, so the
result is bit for bit that of the two kernels. At the mobile nets' last convs it takes
0.96-1.02x the time of the two (MobileNetV2's 320 -> 1280 at 7 x 7: 294 against 289 + 10 us,
AVX2 533 against 512 + 10; EfficientNet-B0's 311 against 314 + 9, AVX2 548 against 561 + 10;
1 thread, per-node medians of 11 interleaved rounds, bench/conv_pool_kernels.py, load 3.5):
the pool's kernel was cheap, and the pass over the sums costs most of what it did.

packed_conv computed these as a direct conv with one tap: at the exported models' shapes,
where the pixels are few (7 x 7, 14 x 14) and the channels many, its work items (blocks of
output rows, every channel) were few and its packed tile large; ResNet-50's 1 x 1 convs at
7 x 7 and 14 x 14 ran at 13-30 GFLOP/s there (bench/zoo_ops.py, AVX-512, load 4-5).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import arith, memref, scf
from xdsl.ir import SSAValue

from xrelay.dialects import relay
from xrelay.transforms.kernel_builder import Extent, shape_of
from xrelay.transforms.scalar_ops import GroupEmitter
from xrelay.transforms.schedules import (
    Schedule,
    along_channels,
    anchor_of,
    channel_epilogue,
    features_of,
    group_root,
    is_elementwise,
    kind_of,
    one_group_per_item,
    packed_conv,
    pixel_independent,
    result_shape,
)
from xrelay.transforms.schedules import micro_kernel as mk
from xrelay.transforms.schedules.packed_matmul import (
    MIN_WORK,
    Block,
    Blocking,
    block_columns,
    block_rows,
    blocking,
    rows_spread,
)

# An epilogue the same at every pixel runs in one flat loop over each channel's sums, then
# they are copied out row by row, where the output rows are at most this many vectors long:
# shorter rows left the epilogue's loops short (MobileNetV3's 1 x 1 convs at 7 x 7 with bias +
# hardswish, 160 -> 960: 421 -> 134 us; at 28 x 28 0.42-0.49x the time with AVX-512, about
# 1.05x with AVX2; at 56 x 56 and 112 x 112 the extra pass took 1.1-1.2x; 1 thread, load 7-12).
FLAT_EPILOGUE_ROW_VECTORS = 2


@dataclass(frozen=True)
class GlobalPooling:
    """A group that is a conv group's ops (`conv` first, then elementwise ops), then the
    global_avg_pool2d `pool` of their last value, then elementwise ops on the pooled value
    (a group of fuse-conv-pool)."""

    conv: relay.Conv2DOp
    pool: relay.GlobalAvgPool2DOp


def global_pooling_of(group: relay.FusedOp) -> GlobalPooling | None:
    """The group's GlobalPooling, or None: the ops after the pool read none of the conv's
    values (only the pooled one, and values from outside)."""
    first, *ops = list(group.body.block.ops)  # the last is the yield
    pools = [i for i, op in enumerate(ops) if isinstance(op, relay.GlobalAvgPool2DOp)]
    if not isinstance(first, relay.Conv2DOp) or len(pools) != 1:
        return None
    ops = ops[:-1]
    pool = ops[pools[0]]
    assert isinstance(pool, relay.GlobalAvgPool2DOp)
    before, after = ops[: pools[0]], ops[pools[0] + 1 :]
    if shape_of(pool.data) != shape_of(first.res) or not all(is_elementwise(op) for op in before + after):
        return None
    conv_values = {first.res, *(r for op in before for r in op.results)}
    if pool.data not in conv_values or any(v in conv_values for op in after for v in op.operands):
        return None
    return GlobalPooling(first, pool)


def flat_before_pool(pooling: GlobalPooling) -> bool:
    """Whether the ops from the conv to the pool compute the same function of the sum at every
    pixel of a channel (as `channel_epilogue` asks of a group's epilogue)."""
    computed: set[SSAValue] = {pooling.conv.res}
    op = pooling.conv.next_op
    while op is not None and op is not pooling.pool:
        if any(v in computed for v in op.operands):
            if not (along_channels(op) if isinstance(op, relay.BiasAddOp) else pixel_independent(op, computed)):
                return False
            computed.update(op.results)
        op = op.next_op
    return True


def pointwise_anchor(group: relay.FusedOp) -> relay.Conv2DOp | None:
    """The group's conv2d of the result's shape (or the conv a global pool of the group
    pools, `global_pooling_of`) when it is 1 x 1, of one conv group, unpadded."""
    pooling = global_pooling_of(group)
    conv = pooling.conv if pooling is not None else anchor_of(group, relay.Conv2DOp)
    if conv is None or conv.group_count != 1 or any(conv.padding_values):
        return None
    return conv if shape_of(conv.weight)[2:] == (1, 1) else None


def matrix(conv: relay.Conv2DOp) -> tuple[int, int, int]:
    """The matmul of one image: (rows, columns, depth) = (output channels, pixels, input channels)."""
    _, out_c, out_h, out_w = shape_of(conv.res)
    return out_c, out_h * out_w, shape_of(conv.data)[1]


# Strided 1 x 1 convs and those of fewer than PACKED_MAX_PIXELS output pixels per image are
# left to packed_conv (its direct conv of one tap over the subsampled, packed input) on a cpu
# target of at least PACKED_MIN_REGISTERS vector registers, where its plan has blocks of at
# least 2 output rows. The kernel alone, min of 90 profiled runs, AVX-512 (load 8-9), time
# packed_conv / pointwise_conv: stride 2 1024 -> 2048 14 -> 7 0.64, 512 -> 1024 28 -> 14 0.91,
# 256 -> 512 56 -> 28 0.90; 2048 -> 512 at 7 x 7 0.74, 512 -> 2048 0.80, 1024 -> 256 at 14 x 14
# 0.91, 1024 -> 512 0.90, SqueezeNet's 512 -> 1000 at 13 x 13 0.75, 256 -> 32 at 27 x 27 0.88;
# at 28 x 28 and above mixed (448 -> 128 1.04, 512 -> 128 1.06, 224 -> 128 at 56 0.95). With
# AVX2's 16 registers packed_conv's 3 x 3 block lost at 13 x 13 (1.20), so AVX2 and SSE keep
# this schedule; so does opencl (not measured). A widening 1 x 1 conv (more output channels
# than input) of at most WIDENING_MAX_DEPTH input channels stays here too: the expansions of
# the mobile nets' inverted residual blocks (64 -> 384 ... 320 -> 1280 at 14 x 14 and 7 x 7),
# whose short dot products packed_conv's stores of 6 channels x 49 outputs weigh on. Whole
# models at 1 thread, CPU-time medians of 15 interleaved rounds (bench/zoo_ab.py, load 3-3.7),
# against all of them to packed_conv: MobileNetV2 0.83x, EfficientNet-B0 0.94x,
# MobileNetV3-large 0.96x, ResNet-50 0.99x, SqueezeNet 1.00x; with every widening one here,
# SqueezeNet's classifier (512 -> 1000 at 13 x 13) and ResNet-50's 512 -> 2048 lost (1.06x,
# 1.01x), at fewer than 256 input channels the 320 -> 1280 convs stayed slow.
PACKED_MAX_PIXELS = 28 * 28
PACKED_MIN_REGISTERS = 32
WIDENING_MAX_DEPTH = 320


def leaves_to_packed_conv(group: relay.FusedOp, conv: relay.Conv2DOp) -> bool:
    """Whether packed_conv computes this 1 x 1 conv faster: strided, or of few pixels and not a
    widening one of short dot products (see PACKED_MAX_PIXELS)."""
    if kind_of(group).work_groups or features_of(group).vector_registers < PACKED_MIN_REGISTERS:
        return False
    _, out_c, out_h, out_w = shape_of(conv.res)
    in_c = shape_of(conv.data)[1]
    widens = out_c > in_c and in_c <= WIDENING_MAX_DEPTH
    if conv.stride_values == (1, 1) and (out_h * out_w >= PACKED_MAX_PIXELS or widens):
        return False
    plan = packed_conv.plan_of(group, conv)
    return plan is not None and plan.row_block >= 2


def matches(group: relay.FusedOp) -> bool:
    conv = pointwise_anchor(group)
    if conv is None or group.se_scope is None or not kind_of(group).generates_kernels:
        return False
    if leaves_to_packed_conv(group, conv):
        return False
    pooled = global_pooling_of(group) is not None
    blocks = blocking(features_of(group))
    rows, columns, depth = matrix(conv)
    if pooled and block_columns(columns, blocks) < columns:
        return False
    return rows >= blocks.tile.rows and columns >= blocks.tile.columns and rows * columns * depth >= MIN_WORK


def pools_in_epilogue(group: relay.FusedOp) -> bool:
    """Whether the schedule takes `group` and computes its global pool from each work item's
    sums, the item's channels at every pixel (fuse-conv-pool asks this of a group it would
    make)."""
    return global_pooling_of(group) is not None and matches(group)


def build(emitter: GroupEmitter, group: relay.FusedOp, out: SSAValue) -> scf.ParallelOp:
    conv = pointwise_anchor(group)
    assert conv is not None
    blocks = blocking(features_of(group))
    rows, columns, _ = matrix(conv)
    out_w = shape_of(conv.res)[3]
    row_block, column_block = block_rows(rows, blocks), block_columns(columns, blocks)
    tiles = (result_shape(group)[0], -(-rows // row_block), -(-columns // column_block))
    root = group_root(group)
    flat = channel_epilogue(group, conv.res) and out_w <= FLAT_EPILOGUE_ROW_VECTORS * blocks.tile.lanes
    pooling = global_pooling_of(group)

    def item(tile: list[SSAValue]) -> None:
        block = PointwiseBlock(emitter, conv, tile, blocks, flat and pooling is None)
        block.pooling = pooling
        block.emit(root, out)

    nest = emitter.parallel_nest(tiles, item)
    return one_group_per_item(nest, group)


class PointwiseBlock(Block):
    """packed_matmul's work item for block `tile` = (image, row block, column block) of a
    1 x 1 conv's matmul (`matrix`): lhs the weight, rhs the image's strided pixels."""

    def __init__(
        self, e: GroupEmitter, conv: relay.Conv2DOp, tile: list[SSAValue], blocks: Blocking, flat_epilogue: bool
    ):
        rows, columns, depth = matrix(conv)
        self.e, self.conv, self.panels, self.blocks, self.tile = e, conv, None, blocks, blocks.tile
        self.shape = (shape_of(conv.res)[0], rows, columns)
        self.batch = tile[:-2]
        self.rows, self.columns = block_rows(rows, blocks), block_columns(columns, blocks)
        self.row0 = e.mul_const(tile[-2], self.rows)
        self.col0 = e.mul_const(tile[-1], self.columns)
        self.depth = depth
        self.layout = mk.Layout.PLAIN
        self.panel0 = None
        self.lhs_in_place = conv.weight in e.inputs and rows_spread(depth, self.tile.rows)
        self.k_depth = self.k_block_depth()
        self.flat_epilogue = flat_epilogue
        self.clamped = True  # rhs_at clamps the pixels to the image (`pack_rhs` packs whole blocks unclamped)
        self.pooling: GlobalPooling | None = None  # set by `build` for a group of a global pool

    def lhs_at(self, row: SSAValue, k: SSAValue) -> SSAValue:
        """The weight at (`row`, k): clamped for a copy of whole tiles; read in place, a row is
        never past the edge (as packed_matmul's `Block.lhs_at`)."""
        e, zero = self.e, self.e.index(0)
        if not self.lhs_in_place:
            row = self.clamp(row, self.shape[-2], self.rows)
        return e.value_at(self.conv.weight, [row, k, zero, zero])

    def pack_rhs(self, panel: SSAValue, panels: int, extent: Extent) -> None:
        """At stride 1, a block of whole columns packs them unclamped: the clamp of the last
        block's pixels (a min per packed float) kept gcc from vectorising the copy, 1.4x the
        time of MobileNetV2's 96 -> 24 conv at 56 x 56 (3136 pixels, blocks of 128; AVX-512)."""
        e = self.e
        if not self.flat_pixels() or self.shape[-1] % self.columns == 0:
            return super().pack_rhs(panel, panels, extent)
        whole = e.compare("sle", e.add_const(self.col0, self.columns), e.index(self.shape[-1]))

        def pack(clamped: bool) -> list[SSAValue]:
            self.clamped = clamped
            super(PointwiseBlock, self).pack_rhs(panel, panels, extent)
            self.clamped = True
            return []

        e.if_else(whole, [], lambda: pack(False), lambda: pack(True))

    def flat_pixels(self) -> bool:
        """Whether pixel p of channel k is read as [n, k, 0, p] (see `rhs_at`)."""
        return self.conv.stride_values == (1, 1) and self.conv.data in self.e.inputs

    def rhs_at(self, column: SSAValue, k: SSAValue) -> SSAValue:
        """The input at pixel `column`: at stride 1, when the input is the kernel's own (a
        row-major NCHW buffer), pixel p of channel k is element p of the channel's plane, read
        as [n, k, 0, p] (row-major, the same address as [n, k, p / out_w, p % out_w]): a
        division and a remainder per packed element took 1.6x the time of MobileNetV2's
        32 -> 16 conv at 112 x 112 (AVX-512), and gcc folds (p / w) * w + p - (p / w) * w only
        sometimes."""
        e, conv = self.e, self.conv
        pixel = self.clamp(column, self.shape[-1], self.columns) if self.clamped else column
        if self.flat_pixels():
            return e.value_at(conv.data, [*self.batch, k, e.index(0), pixel])
        out_w = shape_of(conv.res)[3]
        sh, sw = conv.stride_values
        h, w = e.mul_const(e.div_const(pixel, out_w), sh), e.mul_const(e.rem_const(pixel, out_w), sw)
        return e.value_at(conv.data, [*self.batch, k, h, w])

    def epilogue(self, root: SSAValue, sums: SSAValue, out: SSAValue) -> None:
        """The group's result at the block's outputs: for each of its channels, each output
        row its pixels [col0, end) span, a unit-stride loop over the row's columns among them.
        An epilogue the same at every pixel (`channel_epilogue`) runs first, in place, in one
        loop over each channel's sums (`pixels_epilogue`), and the rows copy them out."""
        e = self.e
        if self.pooling is not None:
            return self.pooled_epilogue(self.pooling, root, sums, out)
        _, _, out_h, out_w = shape_of(self.conv.res)
        end = e.min_index(e.add_const(self.col0, self.columns), e.index(self.shape[-1]))
        if self.flat_epilogue:
            self.pixels_epilogue(root, sums, e.sub(end, self.col0))
        first_row = e.div_const(self.col0, out_w)
        last_row = e.min_index(e.add_const(e.div_const(e.add_const(end, -1), out_w), 1), e.index(out_h))

        def row(ivs: list[SSAValue], _: list[SSAValue]) -> list[SSAValue]:
            i, h = ivs
            start = e.mul_const(h, out_w)  # the pixel of column 0
            columns = (e.max_index(e.index(0), e.sub(self.col0, start)), e.min_index(e.index(out_w), e.sub(end, start)))
            at = e.sub(start, self.col0)  # its position in the block's sums

            def output(ws: list[SSAValue], _: list[SSAValue]) -> list[SSAValue]:
                idx = [*self.batch, e.add(self.row0, i), h, ws[0]]
                loaded = e.emit(memref.LoadOp.get(sums, [i, e.add(at, ws[0])]))
                if self.flat_epilogue:
                    return e.store(loaded, out, idx)
                e.remember(self.conv.res, idx, loaded)
                return e.store(e.value_at(root, idx), out, idx)

            return e.loops([columns], [], output)

        e.loops([self.valid(self.row0, self.rows, self.shape[-2]), (first_row, last_row)], [], row)

    def pooled_epilogue(self, pooling: GlobalPooling, root: SSAValue, sums: SSAValue, out: SSAValue) -> None:
        """The group's result for each channel of the block, whose sums hold every pixel of the
        image (`matches`): the pool's input in place of each sum (`pool_inputs`), then each
        channel's added row by row from 0.0 and divided by H * W, in the pool kernel's loops, then the ops after the pool, stored at the channel's index of the result.
        (Computing the epilogue at each pixel inside the sum's loop kept it from being
        vectorised: MobileNetV2's 320 -> 1280 conv and pool took 415 us against 301 + 10 us
        as two kernels; adding pixel by pixel across channels, through a scratch, 1.03x the
        time of this order, AVX2.)"""
        e = self.e
        _, _, out_h, out_w = shape_of(self.conv.res)
        channels = self.valid(self.row0, self.rows, self.shape[-2])
        self.pool_inputs(pooling, sums)
        rank, zero = len(shape_of(root)), e.index(0)

        def channel(ivs: list[SSAValue], _: list[SSAValue]) -> list[SSAValue]:
            idx = [*self.batch, e.add(self.row0, ivs[0]), zero, zero]

            def add(hw: list[SSAValue], accs: list[SSAValue]) -> list[SSAValue]:
                q = e.add(e.mul_const(hw[0], out_w), hw[1])
                return [e.emit(arith.AddfOp(accs[0], e.emit(memref.LoadOp.get(sums, [ivs[0], q]))))]

            (total,) = e.loops([out_h, out_w], [e.f32(0.0)], add)
            e.remember(pooling.pool.res, idx, e.emit(arith.DivfOp(total, e.f32(float(out_h * out_w)))))
            return e.store(e.value_at(root, idx[:rank]), out, idx[:rank])

        e.loops([channels], [], channel)

    def pool_inputs(self, pooling: GlobalPooling, sums: SSAValue) -> None:
        """`sums[i, q]` = the pool's input at channel i of the block and pixel q (the conv
        group's epilogue of the sum): where that epilogue is the same at every pixel
        (`flat_before_pool`), at pixel 0 of the channel in one loop over the pixels, as
        `pixels_epilogue`; else at each pixel's own index (a residual's)."""
        e = self.e
        _, _, out_h, out_w = shape_of(self.conv.res)
        channels = self.valid(self.row0, self.rows, self.shape[-2])
        flat = flat_before_pool(pooling)

        def apply(ivs: list[SSAValue], _: list[SSAValue]) -> list[SSAValue]:
            i, h, w = ivs if not flat else (ivs[0], e.index(0), e.index(0))
            q = ivs[1] if flat else e.add(e.mul_const(h, out_w), w)
            idx = [*self.batch, e.add(self.row0, i), h, w]
            e.remember(self.conv.res, idx, e.emit(memref.LoadOp.get(sums, [i, q])))
            return e.store(e.value_at(pooling.pool.data, idx), sums, [i, q])

        e.loops([channels, out_h * out_w] if flat else [channels, out_h, out_w], [], apply)

    def pixels_epilogue(self, root: SSAValue, sums: SSAValue, count: SSAValue) -> None:
        """`sums[i, q]` = the group's result from it, for each channel i of the block and
        q < `count` (its pixels): the epilogue at pixel 0 of the channel, as at any other."""
        e = self.e

        def apply(ivs: list[SSAValue], _: list[SSAValue]) -> list[SSAValue]:
            i, q = ivs
            idx = [*self.batch, e.add(self.row0, i), e.index(0), e.index(0)]
            e.remember(self.conv.res, idx, e.emit(memref.LoadOp.get(sums, [i, q])))
            return e.store(e.value_at(root, idx), sums, [i, q])

        e.loops([self.valid(self.row0, self.rows, self.shape[-2]), (e.index(0), count)], [], apply)


SCHEDULE = Schedule("pointwise_conv", matches, build)
