"""
winograd_conv: a 3x3 convolution as Winograd's F(4x4, 3x3) or F(2x2, 3x3) (Lavin & Gray;
TVM's conv2d_winograd), for a cpu or opencl group whose anchor is a conv2d of the result's
shape (or of the shape a final max_pool2d pools: phase 2e) with a 3x3 kernel, stride 1,
dilation 1, one group, and enough channels and tiles that
the transforms pay (MIN_IN_CHANNELS, MIN_OUT_CHANNELS, MIN_TILES, MIN_WORK; F4 where the
image has F4_MIN_TILES tiles of 4 x 4 and its scratch fits, else F2). On opencl the kernel
is the same code (the micro-kernel's vectors print as `float16`, the scratch as private
arrays), each work item launched as a work group of its own (PoCL's threads share them), its
scratch within SCRATCH_MAX_FLOATS as on the cpu.

Each m x m block of outputs (a tile) is Y = A^T [U . V] A, where U = G g G^T is the alpha x
alpha transform (alpha = m + 2) of a 3x3 kernel g and V = B^T d B that of the tile's input
window d (rows and columns m * tile - padding + 0 .. alpha - 1): the alpha^2 products of U
and V per input channel, summed over the channels, are alpha^2 small matrix products M[xi] =
U[xi] . V[xi] (out channels x in channels x tiles): 36 / 16 (F4) or 16 / 4 (F2) multiply-adds
per output and channel pair, against 9 for the direct convolution.

The nest spans (n, block of tile rows); a work item computes every output channel of its
tile rows, whole runs of `Plan.chunk_rows` tile rows (the blocks differ by one run at most,
and no run is computed twice). Where U of every output channel would overrun the scratch,
the nest spans (n, block of tile rows, group of channel blocks) and a work item computes
its group's channels only (`Plan.channel_groups`, CHANNEL_GROUP_MIN_BLOCKS). On cpu, a conv under CPU_THREAD_WORK is one work item instead
(phase 1 once, then phase 2 for the batch's tile rows, image after image, a chunk's rows
running on into the next image): its kernel stays on one thread, and small images fill
their chunks (the CNN's second conv, 8 images of 7 tile rows in chunks of 4: 14 chunks, not
16 with the last of each image starting earlier; 0.134 -> 0.124 ms, bench/kernels.py --conv's
shape with bias and relu, one interleaved run). A larger conv in a batch of several images
runs through the batch's tile rows the same way, in a work item per core (per channel group,
`Plan.batch_items`), each computing U once for its share of the images, not once per image
(ResNet-18 at batch 16, 1 thread: its 256 -> 256 convs at 14x14 1.2 -> 0.8 ms a sample). On opencl, a batch of images under
OPENCL_MIN_WORK each (and under OPENCL_BATCH_WORK in all) runs through the batch's tile rows
the same way, in OPENCL_BATCH_ITEMS work items (each its share of the chunks, U in each).
Its phases:

1. Weights: U for all xi, out channels k and in channels c, into scratch (`memref.alloca`):
   per block of CHANNELS output channels, its weights copied tap by tap (unit-stride rows),
   then G g G^T in one loop that gcc vectorises, into U[block, xi, c * CHANNELS + o]: the
   micro-kernel's broadcast operand, a block's rows adjacent. (Once per work item, so a
   work item keeps at least ITEM_PRODUCTS tiles x products.)
2. Per chunk of tiles (`Plan.chunk_rows` tile rows x `Plan.chunk_cols` tile columns; a last
   chunk that would run past the image's rows or columns starts earlier instead): the tile at
   chunk row g, column t has slot g * pitch + t, pitch = chunk_cols + 1, under the plan's slots (VECTORS x lanes).
   a. pack: the input rows the chunk reads, every channel, the columns apart by their
      remainder mod m, the padding as zeros: packed[p, c, i, g * pitch + q] is input row
      m (r0 + g) - top + i, column m (c0 + q) + p - left. Then input (i, j) of the tile at
      `slot` is packed[j % m, c, i, slot + j // m]: one unit-stride row for every slot.
      Each packed row is written once per chunk, its zeros in loops of constant bounds
      (`Plan.margins`): the CNN's second conv took 0.123 ms zeroing the whole chunk first,
      then copying in clipped loops, 0.106 ms so (kernel time, one interleaved run);
   b. input transform: V[xi, c, slot] = (B^T d B)[xi] for every slot, a unit-stride loop
      that gcc vectorises, on opencl written in `float16` steps (the slot after each tile
      row's last, and those past the chunk's rows, read what is there: their products are
      computed and never stored);
   c. per block of CHANNELS output channels (the last starting earlier): the alpha^2
      products M[xi] with the micro-kernel (`micro_kernel.accumulate`, CHANNELS x VECTORS
      vector sums (`Plan.tile`) over the input channels, the slots in the lanes), then the output
      transform into a scratch block Y of the chunk's output rows, each row's columns
      adjacent;
   d. store, as packed_conv does: when every value of Y is finite (0 x y summed is 0, in
      vectors), the group's result at the chunk's outputs, a unit-stride loop along each
      output row, the epilogue (bias, relu, a residual add, ...) reading the conv from Y;
      else the block again output by output (`GroupEmitter.conv2d`, whose loop bounds skip
      the padding), as in `xrelay.interpret`. A NaN or inf input or weight makes its
      tiles' Y non-finite (the transforms skip zero coefficients, but every U and V entry
      feeds some output, every weight and input some U or V, and 0 x inf is NaN), so a
      padded tap with a NaN weight, or a NaN input spreading over its tile, never reaches
      the result. Outputs of a tile past the edge (odd sizes) are computed from zeros and
      not stored.
   e. pooled (a group of fuse-conv-pool: a max_pool2d of w x w windows at stride w, no
      padding, w dividing m, and maybe elementwise ops after it: `Pooling`): the store step iterates over the pooled
      outputs of the chunk's tiles ((m / w)^2 whole windows per tile: chunks start at whole
      tiles, so no window straddles two), each reading its window's conv outputs from Y;
      the pool drops an odd last conv row or column. Where the epilogue commutes with the
      max (bias, relu, ...: `Pooling.before_epilogue`) it is applied once, to the window's
      largest conv output (Y is finite there), the block's maxima taken first in a loop of
      constant bounds over Y's rows (`pool_block`: gcc vectorises it at full width, where a
      row of stores is a few results long); else at every tap, then the max, NaN winning
      as in `xrelay.interpret`. The non-finite path computes the pool output by output
      (`GroupEmitter.pool2d` over `conv2d`). The CNN's second conv and pool (8 x 16 x 14 x
      14 -> 32, bias, relu, 2 x 2): one kernel of 0.119 ms against 0.123 + 0.007 ms for the
      two (C, 1 thread, per-node medians of 15 profiled runs, interleaved, load 4.1).

Accuracy: the transforms add roundings per output (F4's coefficients 1/6, 1/24, 4, 5, 8 more
than F2's 1/2); against `xrelay.interpret` the results agree to about 6e-7 (F2) and 6e-6
(F4) of the largest output at 64 channels (the tests allow rtol 1e-4 and an absolute 1e-5 of
the largest output: a 576-term sum that cancels keeps the absolute error of the large ones).
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass, replace
from typing import cast

from xdsl.dialects import arith, memref, scf, vector
from xdsl.dialects.builtin import Float32Type, VectorType, f32
from xdsl.ir import SSAValue

from xrelay.dialects import relay
from xrelay.transforms.kernel_builder import Extent, shape_of
from xrelay.transforms.scalar_ops import GroupEmitter
from xrelay.transforms.schedules import (
    Schedule,
    anchor_of,
    features_of,
    group_root,
    kind_of,
    one_group_per_item,
    packed_conv,
    result_shape,
)
from xrelay.transforms.schedules import micro_kernel as mk
from xrelay.transforms.schedules.conv_pooling import Pooling, finite_maximum, pooling_of, remember_peak, remember_pooled


@dataclass(frozen=True)
class Transforms:
    """Winograd F(m x m, 3 x 3): output tiles of m x m from input tiles of alpha x alpha
    (alpha = m + 2), alpha^2 products per tile and channel pair, with V = B^T d B,
    U = G g G^T and Y = A^T M A."""

    m: int
    bt: tuple[tuple[float, ...], ...]  # alpha x alpha
    g: tuple[tuple[float, ...], ...]  # alpha x 3
    at: tuple[tuple[float, ...], ...]  # m x alpha

    @property
    def alpha(self) -> int:
        return self.m + 2

    @property
    def xi(self) -> int:
        """The transformed positions of a tile."""
        return self.alpha * self.alpha


F2 = Transforms(
    2,
    bt=((1, 0, -1, 0), (0, 1, 1, 0), (0, -1, 1, 0), (0, 1, 0, -1)),
    g=((1, 0, 0), (0.5, 0.5, 0.5), (0.5, -0.5, 0.5), (0, 0, 1)),
    at=((1, 1, 1, 0), (0, 1, -1, -1)),
)
F4 = Transforms(
    4,
    bt=(
        (4, 0, -5, 0, 1, 0),
        (0, -4, -4, 1, 1, 0),
        (0, 4, -4, -1, 1, 0),
        (0, -2, -1, 2, 1, 0),
        (0, 2, -1, -2, 1, 0),
        (0, 4, 0, -5, 0, 1),
    ),
    g=(
        (1 / 4, 0, 0),
        (-1 / 6, -1 / 6, -1 / 6),
        (-1 / 6, 1 / 6, -1 / 6),
        (1 / 24, 1 / 12, 1 / 6),
        (1 / 24, -1 / 12, 1 / 6),
        (0, 0, 1),
    ),
    at=((1, 1, 1, 1, 1, 0), (0, 1, -1, 2, -2, 0), (0, 1, 1, 4, 4, 0), (0, 1, -1, 8, -8, 1)),
)

# It serves every device kind with kernels (`DeviceKind.generates_kernels`). On opencl a work item is the same code (the micro-kernel's vectors
# as `float16`, vector loads, stores and fma; the scratch as private arrays), which PoCL's LLVM
# compiles to the same zmm FMAs as gcc: the ResNet block's convs (F4), device time on PoCL
# at 1 thread against the C kernel, 2.94-3.06x (packed_conv) -> 1.07-1.15x (one run,
# bench/opencl_model_kernels.py resnet, load 2.6); 0.93-0.97x with a work item per image
# and the input transform in vectors (below; load 2.5, the C kernel at 2 blocks).

# F(4x4, 3x3) needs 2.25 products per output where F(2x2, 3x3) needs 4, but its tiles are
# coarser (more slots past the edges) and its transforms cost more per tile: it is taken
# for images of at least F4_MIN_TILES 4 x 4 tiles whose scratch fits. Time of F2 over F4's
# (bench/kernels.py's conv2d, 1 thread, one run at load 4.5): 64 -> 64 channels at 56x56
# 1.34x, 48x48 1.39x, 40x40 1.79x, 32x32 1.79x (F2 fills half its slots there), 32 -> 32
# at 56x56 1.30x; at 28x28 (49 tiles) 1.03x to 1.07x, where F2 is kept. F4 rounds more:
# against `interpret`, 6e-6 of the largest output at 64 channels (F2: 6e-7).
F4_MIN_TILES = 64

# On cpu a batch of several images runs through the batch's tile rows (`Plan.spans_batch`), so
# its chunks fill over images: there F4 is taken for smaller images too, where its 4 x 4 tiles
# cover the output exactly (no slots past the edges) and the batch has F4_MIN_TILES of them.
# ResNet-18's 128 -> 128 convs at 28x28 (+ bias, residual, relu), F4 over F2, 1 thread,
# AVX-512, CPU time of 15 interleaved rounds (load 2.5): batch 4 0.85x, batch 16 0.86x.

# The register block: VECTORS vectors of the target's lanes (a chunk's tile slots: see
# phase 2) x at most CHANNELS output channels, as many as fit its vector registers
# (`packed_conv.register_tile`): 8 x 2 of AVX-512's 32 (16 sums), 5 x 2 of AVX2's 16.
CHANNELS = 8
VECTORS = 2

# Below MIN_IN_CHANNELS input channels, MIN_OUT_CHANNELS output channels or MIN_WORK
# multiply-adds of the direct conv per image, the transforms cost more than the 2.25x fewer
# multiply-adds save, or little is gained. bench/kernels.py's conv2d, time of winograd_conv
# against packed_conv in one run (1 thread, a machine at load 6): 4 -> 16 channels at 56x56
# 1.44x, 8 -> 16 at 28x28 1.45x, 8 x 8 -> 16 at 14x14 1.09x, 4 -> 8 at 28x28 1.21x, 8 -> 8
# at 28x28 1.16x, 16 -> 8 at 28x28 1.03x; 4 -> 8 at 14x14 (56K multiply-adds) 0.93x. (Fewer
# than 16 output channels is left to packed_conv for now: one register block, and gains
# within the noise of that machine.)
MIN_IN_CHANNELS = 4
MIN_OUT_CHANNELS = 16
MIN_WORK = 1 << 17

# Work items per run: the image's runs of chunk rows are split into blocks until the batch
# has a work item per core of the target (`Features.cores`), but a block keeps at least
# ITEM_PRODUCTS tiles x products per tile, unless that would leave a cpu core idle: each work item computes U (phase 1), about 12 operations per
# weight and product position against one vector FMA per weight, product position and slot
# in the products. (ResNet block, F4, 1 thread, blocks of 7 tile rows then: one work item
# 231 GFLOP/s, two 206, four 189.) ResNet-18's 128 -> 128 convs at 28x28 (2 units of 6 tile
# rows, 1764 tiles x products) were one work item, which a second thread could not share:
# at 2 threads 0.62 ms as at 1; as 2 items 0.62 -> 0.65 at 1 thread, 0.37 ms at 2 (kernel
# medians of 7 profiled runs, idle machine).
ITEM_PRODUCTS = 2048

# Fewer tiles per image than this leave most slots of a chunk empty (and U per item costs
# as much as the products): packed_conv is faster there (bench/kernels.py --conv).
MIN_TILES = 32

# The work item's scratch (U, V, the packed chunk, M and Y) lives on the stack (on opencl,
# its work group's thread's): at most this many floats (1.5 MiB, of the 8 MiB stacks here; the ResNet block's F4 needs
# 1.16 MiB), else F2, else packed_conv takes the group.
SCRATCH_MAX_FLOATS = 3 << 17

# On cpu, a plan whose channels are split (below) takes as few groups as bring its scratch
# under CPU_SCRATCH_MAX_FLOATS instead (3 MiB of the threads' 8 MiB stacks; the transform and
# the plan's choice of F4 or F2 stay as SCRATCH_MAX_FLOATS has them): each group packs and
# transforms the input again. ResNet-18's 256 -> 256 convs at 14x14 (+ bias, residual, relu), 7
# groups -> 2, 1 thread, AVX-512, 15 interleaved rounds at load 4 (CPU time a sample): batch 1
# 1.22 -> 1.04 ms, batch 4 0.81 -> 0.66, batch 16 0.77 -> 0.64 (one group, 4.8 MiB: 0.65).
CPU_SCRATCH_MAX_FLOATS = 3 << 18

# Where U of every output channel (`Plan.u_floats`: 36 or 16 x in x out channels) would
# overrun SCRATCH_MAX_FLOATS, the output channels are split among work items, as few groups
# of channel blocks as bring the scratch under it, each of at least CHANNEL_GROUP_MIN_BLOCKS
# blocks: each item computes U of its channels only, and packs and transforms its chunks'
# input again (once per group: about as many operations as the products of one channel block).
# ResNet-50's 256 -> 256 at 14 x 14 (F2, 4 groups of 64 channels), then packed_conv's, 1 thread,
# kernel alone: AVX-512 1.40 -> 0.90 ms, AVX2 2.22 -> 1.42 ms (see the commit for the run).
CHANNEL_GROUP_MIN_BLOCKS = 2

# On cpu, a conv of fewer direct multiply-adds than this (the whole batch) is one work item
# that computes U once and then every image: its kernel runs on one thread. The C kernels'
# threads wait passively between calls (bench/models.py sets OMP_WAIT_POLICY=passive), and
# waking the second one costs more than it saves here: the CNN's second conv (8 x 16 x 14 x
# 14 -> 32, 7.2M), a work item per image, took 0.154 ms at 1 thread and 0.166-0.207 ms at 2;
# one work item, 0.131-0.132 ms at both. Above it a work item per image pays once the second
# core is free: at load 2.2 on 2 cores (the second core busy) 8 x 16 -> 32 at 20 x 20 (14.7M),
# 28 x 28 (29M) and 40 x 40 (59M) took 0.249 / 0.415 / 0.763 ms as one item and 0.277-0.286 /
# 0.457-0.468 / 0.816-0.821 ms per image at 1 and 2 threads alike (U computed 8 times).
CPU_THREAD_WORK = 1 << 24

# On opencl each work item is a work group of its own (`one_group_per_item`), so PoCL runs
# the blocks on its threads as the cpu's OpenMP does (in one group, one thread ran them all,
# and a second block only computed U again: the ResNet block's convs, 2 blocks 1.26-1.28 ms
# against 1 block 1.08-1.16 ms device time; in groups of one at 2 PoCL threads, 2 blocks
# 0.80 ms against 1 block 1.20, a probe on a quieter machine). PoCL's idle threads sleep: with
# the other core busy, its second thread woke too late to take a work item under ~10 ms, and
# both launches ran alike (bench/opencl_model_kernels.py's `no local` column, load 3.5). Even
# on an idle machine it joins late (about half a millisecond): so on opencl the blocks are
# made for OPENCL_MIN_ITEMS work items, and the thread that starts first takes more of them.
# The ResNet block's convs at 2 PoCL threads, idle machine, one run each: 2 blocks 0.87-1.07
# and 1.06-1.25 ms (1.08-1.10 and 1.14-1.22 without a local size), 3 blocks 0.68-0.70 and
# 0.69-0.70 ms (1.13-1.21 and 1.15-1.19 without), 0.96-1.04x the C kernels' time at 2
# threads; at 1 thread 3 blocks cost 1.04x the C kernels' time (1 block 0.98x). A work
# item's scratch is a work group's (SCRATCH_MAX_FLOATS, well under PoCL's 8 MiB stack).
OPENCL_MIN_ITEMS = 4

# On opencl, below this many multiply-adds of the direct conv per image packed_conv is
# faster. Device time of winograd_conv over packed_conv on PoCL, 1 thread, one interleaved
# run (load 1.6): 8x16x14x14 -> 32 (the CNN's second conv, 0.9M per image) 1.12x;
# 8x16x28x28 -> 32 (F2, 3.6M) 0.72x; 64 -> 64 at 28x28 (F2) 0.59x, at 32x32 (F4) 0.64x,
# at 56x56 0.38x; 128 -> 128 at 40x40 (F2) 0.63x; 32 -> 32 at 56x56 0.46x.
OPENCL_MIN_WORK = 1 << 21

# On opencl, a conv under OPENCL_MIN_WORK per image but of several images, and of fewer direct
# multiply-adds than OPENCL_BATCH_WORK in all, is one work item as on the cpu (U once, the
# chunks through the batch's tile rows): the CNN's second conv (8 images, 7.2M), device time
# against the C kernel's in one interleaved run each (bench/opencl_model_kernels.py cnn, load
# 6-8): PoCL on 1 thread 1.14x (packed_conv 1.36x, a work item per image 1.56x), on 2 threads
# 1.24x (packed_conv 1.40x). (Not measured above 7.2M: the bound is the cpu's.)
OPENCL_BATCH_WORK = 1 << 24

# Such a batch is this many work items on opencl, each a work group (`one_group_per_item`)
# with its share of the batch's chunks and U of its own, so that PoCL's second thread can
# take one. The CNN's second conv (and its pool), device time on PoCL (medians of 100 runs):
# 1 thread 105-112 us as one item, 109-112 as two; 2 threads 107-127 as one, 67 as two,
# 72-92 as four. The whole CNN on OpenCL, runs of the two builds alternating in one process
# (medians of 1200, three processes each): two items take 1.014-1.017x one item's time at 1
# thread, 0.83-0.95x at 2. (On cpu, two items gained nothing at 2 OpenMP threads, the second
# thread waking too late: 147-154 us for the CNN against 149-158.)
OPENCL_BATCH_ITEMS = 2


def pools_in_epilogue(group: relay.FusedOp) -> bool:
    """Whether the schedule takes `group` and computes its pooled outputs from the conv's
    blocks (fuse-conv-pool asks this of a group it would make)."""
    plan = plan_of(group)
    return plan is not None and plan.pool is not None


@dataclass(frozen=True)
class Plan:
    """The shapes of a Winograd conv: tiles per image, the tile rows and columns of a chunk,
    and work items per image (each some runs of chunk rows); the pooling its stores compute,
    if the group yields one."""

    conv: relay.Conv2DOp
    f: Transforms
    tiles_h: int
    tiles_w: int
    chunk_rows: int
    chunk_cols: int
    blocks: int
    tile: mk.Tile  # the register block: output channels x vectors of slots
    work_groups: bool  # the device launches work groups (`DeviceKind.work_groups`)
    pool: Pooling | None = None
    channel_groups: int = 1  # work items per block of tile rows, each some channel blocks
    cores: int = 1  # of the target (`Features.cores`): a batch's work items on cpu (`batch_items`)

    @property
    def group_blocks(self) -> int:
        """The most channel blocks a work item computes (its U's blocks: see CHANNEL_GROUPS)."""
        return math.ceil(channel_blocks(self) / self.channel_groups)

    @property
    def channels(self) -> int:
        """Output channels of a register block."""
        return self.tile.rows

    @property
    def lanes(self) -> int:
        return self.tile.lanes

    @property
    def slots(self) -> int:
        """Tile slots per chunk (see phase 2): a register block's vectors of lanes."""
        return self.tile.columns

    @property
    def window(self) -> int:
        """Conv outputs per stored output along each axis (the pool's size, else 1)."""
        return 1 if self.pool is None else self.pool.size

    @property
    def peaks_first(self) -> bool:
        """Whether the finite stores take each window's max of a block first (`pool_block`):
        under a pooling whose epilogue commutes with the max (`Pooling.before_epilogue`)."""
        return self.pool is not None and self.pool.before_epilogue

    @property
    def transform_lanes(self) -> int:
        """Slots per step of the input transform: where kernels run in work groups (OpenCL)
        a vector of lanes, else 1 (see `input_transform`)."""
        return self.lanes if self.work_groups else 1

    @property
    def in_c(self) -> int:
        return shape_of(self.conv.data)[1]

    @property
    def out_c(self) -> int:
        return shape_of(self.conv.res)[1]

    @property
    def units(self) -> int:
        """Runs of chunk_rows tile rows per image (the last starting earlier, if need be)."""
        return math.ceil(self.tiles_h / self.chunk_rows)

    @property
    def spans_batch(self) -> bool:
        """Whether work items run through the batch's tile rows, image after image
        (`batch_item`): on cpu under CPU_THREAD_WORK or in a batch of several images (U once
        per work item, not per image), on opencl under OPENCL_MIN_WORK
        per image (`plan_of` takes such a conv there only in a batch under OPENCL_BATCH_WORK)."""
        batch = shape_of(self.conv.res)[0]
        if self.work_groups:
            return self.direct_work < OPENCL_MIN_WORK * batch
        return self.direct_work < CPU_THREAD_WORK or batch > 1

    @property
    def batch_units(self) -> int:
        """Runs of chunk_rows tile rows through the whole batch (the last starting earlier)."""
        return math.ceil(shape_of(self.conv.res)[0] * self.tiles_h / self.chunk_rows)

    @property
    def batch_items(self) -> int:
        """The work items of a plan that spans the batch, per channel group: on cpu one under
        CPU_THREAD_WORK, else enough that the groups' items make one a core; OPENCL_BATCH_ITEMS
        on opencl (at most one per run of chunk rows)."""
        if self.work_groups:
            return min(OPENCL_BATCH_ITEMS, self.batch_units)
        if self.direct_work < CPU_THREAD_WORK:
            return 1
        return min(self.batch_units, math.ceil(self.cores / self.channel_groups))

    @property
    def direct_work(self) -> int:
        """Multiply-adds of the direct convolution, the whole batch."""
        batch, _, out_h, out_w = shape_of(self.conv.res)
        return batch * self.out_c * self.in_c * 9 * out_h * out_w

    @property
    def pitch(self) -> int:
        """Slots per tile row of a chunk: its tiles and one more (a slot no output reads)."""
        return self.chunk_cols + 1

    @property
    def margins(self) -> tuple[int, int]:
        """The most packed slots any chunk's padding takes at the start and at the end of a
        packed row inside the input (`pack`): columns m (c0 + q) + p - left outside the
        input, over every chunk column c0 and phase p."""
        _, _, _, width = shape_of(self.conv.data)
        left = self.conv.padding_values[1]
        m, pitch = self.f.m, self.pitch
        starts = {
            min(col * self.chunk_cols, self.tiles_w - self.chunk_cols)
            for col in range(math.ceil(self.tiles_w / self.chunk_cols))
        }
        front = back = 0
        for c0, p in itertools.product(starts, range(m)):
            offset = m * c0 + p - left
            lo = min(pitch, max(0, -(offset // m)))  # ceil(-offset / m)
            hi = max(lo, min(pitch, -((offset - width) // m)))  # ceil((width - offset) / m)
            front, back = max(front, lo), max(back, pitch - hi)
        return front, back

    @property
    def u_floats(self) -> int:
        return self.f.xi * self.group_blocks * self.channels * self.in_c

    @property
    def v_floats(self) -> int:
        """V[xi, c, slot], with a channel row more than the input channels: the input
        transform stores xi rows of V at once, which rows of a power-of-two stride put into
        few cache sets (the CNN's second conv, 16 rows 2 KiB apart: 2 us of 110 saved)."""
        return self.f.xi * (self.in_c + 1) * self.slots

    @property
    def pack_floats(self) -> int:
        return self.f.m * self.in_c * self.f.alpha * (self.slots + 1)

    @property
    def scratch_floats(self) -> int:
        products = (
            self.f.xi + self.f.m * self.f.m
        ) * self.channels * self.slots + self.lanes  # M, Y, the probe's lanes
        if self.peaks_first:
            products += self.f.m * self.f.m * self.channels * self.slots // (self.window * self.window)
        return self.u_floats + 9 * self.in_c * self.channels + self.v_floats + self.pack_floats + products


def plan_of(group: relay.FusedOp) -> Plan | None:
    """How the group's conv is computed as F(4x4, 3x3) or F(2x2, 3x3), or None if it is not."""
    pool = pooling_of(group)
    if pool is not None:
        plan = plan_of_conv(group, pool.conv)
        return replace(plan, pool=pool) if plan is not None and plan.f.m % pool.size == 0 else None
    return plan_of_conv(group, anchor_of(group, relay.Conv2DOp))


def plan_of_conv(group: relay.FusedOp, conv: relay.Conv2DOp | None) -> Plan | None:
    """The plan of the group's conv `conv`, or None."""
    if conv is None or group.se_scope is None or not kind_of(group).generates_kernels:
        return None
    if conv.stride_values != (1, 1) or conv.dilation_values != (1, 1) or conv.group_count != 1:
        return None
    batch, out_c, out_h, out_w = shape_of(conv.res)
    in_c, kh, kw = shape_of(conv.weight)[1:]
    work = out_c * in_c * 9 * out_h * out_w  # per image
    if (kh, kw) != (3, 3) or in_c < MIN_IN_CHANNELS or out_c < MIN_OUT_CHANNELS or work < MIN_WORK:
        return None
    work_groups = kind_of(group).work_groups
    if work_groups and work < OPENCL_MIN_WORK and (batch < 2 or batch * work >= OPENCL_BATCH_WORK):
        return None
    features = features_of(group)
    tile = packed_conv.channel_tile(features, VECTORS, CHANNELS)
    plans = (plan_for(conv, f, tile, work_groups, features.cores) for f in (F4, F2))
    return next((p for p in plans if p is not None), None)


def plan_for(
    conv: relay.Conv2DOp, f: Transforms, tile: mk.Tile, work_groups: bool = False, cores: int = 1
) -> Plan | None:
    """The plan of `conv` as F(m x m, 3 x 3) in register blocks `tile`, on a device that
    launches work groups or not (of `cores` cores), or None if it does not pay or fit."""
    batch, _, out_h, out_w = shape_of(conv.res)
    tiles_h, tiles_w = math.ceil(out_h / f.m), math.ceil(out_w / f.m)
    if tiles_h * tiles_w < (F4_MIN_TILES if f is F4 else MIN_TILES) and not (
        f is F4 and batch_fills_f4(conv, work_groups)
    ):
        return None
    chunk_cols = min(tiles_w, tile.columns)
    chunk_rows = max(1, min(tiles_h, (tile.columns + 1) // (chunk_cols + 1)))
    units = math.ceil(tiles_h / chunk_rows)
    items = OPENCL_MIN_ITEMS if work_groups else cores
    worth_it = tiles_h * tiles_w * f.xi // ITEM_PRODUCTS
    if not work_groups:  # (on opencl a work item per core costs U again for PoCL's late threads)
        worth_it = max(worth_it, math.ceil(cores / batch))
    blocks = max(1, min(units, math.ceil(items / batch), worth_it))
    plan = Plan(conv, f, tiles_h, tiles_w, chunk_rows, chunk_cols, blocks, tile, work_groups, cores=cores)
    blocks_most = min(channel_blocks(plan), max(1, plan.out_c // (CHANNEL_GROUP_MIN_BLOCKS * plan.channels)))
    fitting = (
        groups
        for groups in range(1, blocks_most + 1)
        if replace(plan, channel_groups=groups).scratch_floats <= SCRATCH_MAX_FLOATS
        # (on opencl the groups are work items for the cores already: each computes U again)
        and (groups == 1 or not work_groups or not replace(plan, channel_groups=groups).spans_batch)
    )
    groups = next(fitting, None)
    if groups is None:
        return None
    if not work_groups:  # fewer groups where the cpu's stacks hold their scratch
        groups = next(
            g for g in range(1, groups + 1) if replace(plan, channel_groups=g).scratch_floats <= CPU_SCRATCH_MAX_FLOATS
        )
    return replace(plan, channel_groups=groups, blocks=max(1, min(blocks, math.ceil(items / (batch * groups)))))


def batch_fills_f4(conv: relay.Conv2DOp, work_groups: bool) -> bool:
    """Whether F4 pays for `conv` below F4_MIN_TILES tiles an image: on cpu, in a batch of
    F4_MIN_TILES tiles or more, with the tiles covering the output exactly."""
    batch, _, out_h, out_w = shape_of(conv.res)
    exact = out_h % F4.m == 0 and out_w % F4.m == 0
    return not work_groups and batch > 1 and exact and batch * (out_h // F4.m) * (out_w // F4.m) >= F4_MIN_TILES


def matches(group: relay.FusedOp) -> bool:
    return plan_of(group) is not None


def build(emitter: GroupEmitter, group: relay.FusedOp, out: SSAValue) -> scf.ParallelOp:
    plan = plan_of(group)
    assert plan is not None
    batch = result_shape(group)[0]
    root = group_root(group)
    groups = (plan.channel_groups,) if plan.channel_groups > 1 else ()  # no axis of one item
    if plan.spans_batch:
        items = emitter.parallel_nest(
            (plan.batch_items, *groups), lambda tile: batch_item(emitter, plan, root, tile, out)
        )
        return one_group_per_item(items, group)
    nest = emitter.parallel_nest((batch, plan.blocks, *groups), lambda tile: work_item(emitter, plan, root, tile, out))
    return one_group_per_item(nest, group)


@dataclass(frozen=True)
class Scratch:
    """A work item's buffers: U[channel block, xi, c * channels + o] (per input channel c,
    the block's `Plan.channels` rows adjacent), V[xi, c, slot], the packed chunk [column mod m, c,
    row, slot], the products M[xi, o, slot] of a channel block and its outputs Y[o, a,
    m slot + b]."""

    u: SSAValue
    v: SSAValue
    packed: SSAValue
    m: SSAValue
    y: SSAValue


def work_item(e: GroupEmitter, plan: Plan, root: SSAValue, tile: list[SSAValue], out: SSAValue) -> None:
    """Runs of chunk rows `block * units // blocks` to `(block + 1) * units // blocks` (no
    chunk computed twice; the items differ by one run at most) of image tile[0], the
    channel blocks of group tile[2] (`share`d as the runs are; all of them without a
    tile[2]): U, then the chunks."""
    scratch = item_scratch(e, plan)
    blocks = (e.index(0), e.index(channel_blocks(plan)))
    if len(tile) > 2:
        blocks = share(e, tile[2], channel_blocks(plan), plan.channel_groups)
    weight_transform(e, plan, scratch.u, blocks)
    chunks(e, plan, root, scratch, tile[:2], blocks, out)


def batch_item(e: GroupEmitter, plan: Plan, root: SSAValue, tile: list[SSAValue], out: SSAValue) -> None:
    """Work item tile[0] of a plan that spans the batch (`Plan.spans_batch`), of channel group
    tile[1] where the plan has groups: U of the group's channel blocks, then its `share` of
    the batch's runs of chunk rows, image after image (a chunk may hold the last tile rows of
    one image and the first of the next; the last chunk ends at the batch's last row)."""
    item = tile[0]
    scratch = item_scratch(e, plan)
    blocks = (e.index(0), e.index(channel_blocks(plan)))
    if len(tile) > 1:
        blocks = share(e, tile[1], channel_blocks(plan), plan.channel_groups)
    weight_transform(e, plan, scratch.u, blocks)
    rows = shape_of(plan.conv.res)[0] * plan.tiles_h
    grid: list[Extent] = [share(e, item, plan.batch_units, plan.batch_items), math.ceil(plan.tiles_w / plan.chunk_cols)]

    def chunk(ivs: list[SSAValue], _: list[SSAValue]) -> list[SSAValue]:
        unit, col = ivs
        r0 = e.min_index(e.mul_const(unit, plan.chunk_rows), e.index(rows - plan.chunk_rows))
        compute_chunk(e, plan, root, scratch, Chunk(r0, first_tile_column(e, plan, col)), blocks, out)
        return []

    e.loops(grid, [], chunk)


def item_scratch(e: GroupEmitter, plan: Plan) -> Scratch:
    def alloca(*shape: int) -> SSAValue:
        return e.emit(memref.AllocaOp.get(f32, shape=list(shape)))

    in_c, f = plan.in_c, plan.f
    return Scratch(
        alloca(plan.group_blocks, f.xi, in_c * plan.channels),
        alloca(f.xi, in_c + 1, plan.slots),  # a row more: see Plan.v_floats
        alloca(f.m, in_c, f.alpha, plan.slots + 1),
        alloca(f.xi, plan.channels, plan.slots),
        alloca(plan.channels, f.m, f.m * plan.slots),
    )


def chunks(
    e: GroupEmitter,
    plan: Plan,
    root: SSAValue,
    scratch: Scratch,
    tile: list[SSAValue],
    blocks: tuple[SSAValue, SSAValue],
    out: SSAValue,
) -> None:
    """Every chunk of block tile[1] of image tile[0], channel blocks `blocks`, with their U in `scratch`."""
    n, block = tile
    grid: list[Extent] = [share(e, block, plan.units, plan.blocks), math.ceil(plan.tiles_w / plan.chunk_cols)]

    def chunk(ivs: list[SSAValue], _: list[SSAValue]) -> list[SSAValue]:
        unit, col = ivs
        r0 = e.min_index(e.mul_const(unit, plan.chunk_rows), e.index(plan.tiles_h - plan.chunk_rows))
        first_row = e.add(e.mul_const(n, plan.tiles_h), r0)
        compute_chunk(e, plan, root, scratch, Chunk(first_row, first_tile_column(e, plan, col)), blocks, out)
        return []

    e.loops(grid, [], chunk)


def share(e: GroupEmitter, item: SSAValue, units: int, items: int) -> tuple[SSAValue, SSAValue]:
    """Work item `item`'s runs of chunk rows (or channel blocks), of `units` split over
    `items`: from `item * units // items` to `(item + 1) * units // items` (no run twice; the
    shares differ by one run at most)."""
    return (
        e.div_const(e.mul_const(item, units), items),
        e.div_const(e.mul_const(e.add_const(item, 1), units), items),
    )


def first_tile_column(e: GroupEmitter, plan: Plan, col: SSAValue) -> SSAValue:
    """The first tile column of chunk column `col` (the last one ends at the image's last)."""
    return e.min_index(e.mul_const(col, plan.chunk_cols), e.index(plan.tiles_w - plan.chunk_cols))


def channel_blocks(plan: Plan) -> int:
    return math.ceil(plan.out_c / plan.channels)


def first_channel(e: GroupEmitter, plan: Plan, block: SSAValue) -> SSAValue:
    """The first output channel of channel block `block` (the last one ends at the last
    channel: it may recompute channels of the one before)."""
    return e.min_index(e.mul_const(block, plan.channels), e.index(plan.out_c - plan.channels))


# --- Phase 1: weights (and the transforms' sums) ------------------------------------------


def fadd(e: GroupEmitter, a: SSAValue, b: SSAValue) -> SSAValue:
    return e.emit(arith.AddfOp(a, b))


def fsub(e: GroupEmitter, a: SSAValue, b: SSAValue) -> SSAValue:
    return e.emit(arith.SubfOp(a, b))


def lanes_of(value: SSAValue) -> int:
    """The lanes of vector `value`."""
    kind = value.type
    assert isinstance(kind, VectorType)
    return cast(VectorType[Float32Type], kind).get_shape()[0]


def linear(e: GroupEmitter, coefficients: tuple[float, ...], values: list[SSAValue]) -> SSAValue:
    """The sum of coefficient x value over the nonzero coefficients (1 and -1 as an add or a
    subtract; a +1 term first when there is one), of floats or of vectors."""

    def times(value: SSAValue, c: float) -> SSAValue:
        constant = e.f32(c) if value.type == f32 else mk.broadcast(e, e.f32(c), lanes_of(value))
        return e.emit(arith.MulfOp(value, constant))

    terms = sorted(((c, v) for c, v in zip(coefficients, values) if c != 0), key=lambda t: t[0] != 1)
    first, value = terms[0]
    total = value if first == 1 else times(value, first)
    for c, v in terms[1:]:
        scaled = v if abs(c) == 1 else times(v, abs(c))
        total = fadd(e, total, scaled) if c > 0 else fsub(e, total, scaled)
    return total


def weight_transform(e: GroupEmitter, plan: Plan, u: SSAValue, blocks: tuple[SSAValue, SSAValue]) -> None:
    """u[block - blocks[0], xi, c * channels + o] = (G g G^T)[xi] for g = weight[first_channel(block) +
    o, c], per channel block of `blocks`: its weights copied tap by tap into taps[i * 3 + j, c *
    channels + o] first, so that the transform is a unit-stride loop that gcc vectorises.
    (Every weight reaches some U, and a NaN or inf one makes that U non-finite.)"""
    op, f = plan.conv, plan.f
    width = plan.in_c * plan.channels
    taps = e.emit(memref.AllocaOp.get(f32, shape=[9, width]))

    def copy(ivs: list[SSAValue], _: list[SSAValue]) -> list[SSAValue]:
        block, o, c = ivs
        k = e.add(first_channel(e, plan, block), o)
        at = e.add(e.mul_const(c, plan.channels), o)
        for i, j in itertools.product(range(3), range(3)):
            weight = e.value_at(op.weight, [k, c, e.index(i), e.index(j)])
            e.store(weight, taps, [e.index(i * 3 + j), at])
        return []

    def transform(ivs: list[SSAValue], _: list[SSAValue]) -> list[SSAValue]:
        block, w = ivs
        g = [[e.emit(memref.LoadOp.get(taps, [e.index(i * 3 + j), w])) for j in range(3)] for i in range(3)]
        gg = [[linear(e, row, [g[i][j] for i in range(3)]) for j in range(3)] for row in f.g]  # (G g)[a, :]
        for a, b in itertools.product(range(f.alpha), range(f.alpha)):
            e.store(linear(e, f.g[b], gg[a]), u, [e.sub(block, blocks[0]), e.index(a * f.alpha + b), w])
        return []

    def per_block(ivs: list[SSAValue], _: list[SSAValue]) -> list[SSAValue]:
        e.loops([plan.channels, plan.in_c], [], lambda inner, _: copy([ivs[0], *inner], []))
        e.loops([width], [], lambda inner, _: transform([ivs[0], *inner], []))
        return []

    e.loops([blocks], [], per_block)


# --- Phase 2: chunks ----------------------------------------------------------------------


@dataclass(frozen=True)
class Chunk:
    """The tiles from tile row r0 and tile column c0, `chunk_rows` x `chunk_cols`, r0
    counting the batch's tile rows image after image (image n's tile row r is row n tiles_h
    + r): a chunk's rows may run on into the next image."""

    r0: SSAValue
    c0: SSAValue

    def tile_row(self, e: GroupEmitter, plan: Plan, g: SSAValue) -> tuple[SSAValue, SSAValue]:
        """(image, tile row in the image) of the chunk's tile row g."""
        row = e.add(self.r0, g)
        return e.div_const(row, plan.tiles_h), e.rem_const(row, plan.tiles_h)


def compute_chunk(
    e: GroupEmitter,
    plan: Plan,
    root: SSAValue,
    s: Scratch,
    chunk: Chunk,
    blocks: tuple[SSAValue, SSAValue],
    out: SSAValue,
) -> None:
    """The chunk's outputs of channel blocks `blocks` (U of blocks[0] first in `s`)."""
    pack(e, plan, s.packed, chunk)
    input_transform(e, plan, s.packed, s.v)

    def block(ivs: list[SSAValue], _: list[SSAValue]) -> list[SSAValue]:
        k0 = first_channel(e, plan, ivs[0])
        products(e, plan, s, e.sub(ivs[0], blocks[0]))
        output_transform(e, plan, s.m, s.y)
        finite = e.emit(arith.CmpfOp(probe(e, plan, s.y), e.f32(0.0), "oeq"))
        e.if_else(
            finite,
            [],
            lambda: store_outputs(e, plan, root, chunk, k0, s.y, out),
            lambda: store_outputs(e, plan, root, chunk, k0, None, out),
        )
        return []

    e.loops([blocks], [], block)


def pack(e: GroupEmitter, plan: Plan, packed: SSAValue, chunk: Chunk) -> None:
    """packed[p, c, i, g * pitch + q] = input (n, c, m (r0 + g) - top + i, m (c0 + q) + p -
    left) for p < m (the columns by their remainder mod m), i < alpha and q < pitch: the rows
    i of the chunk's tile row g, one after the other, zeros outside the input; then zeros past
    the last tile row's slots (read by the input transform, never stored, but finite: see
    `probe`).

    Per tile row of the chunk (its image and input rows found once), every channel's rows.
    Every loop that writes zeros has constant bounds: a row outside the input is zeros, a row
    inside has zeros in its first and last `Plan.margins` slots (the most any chunk's padding
    takes), then the input's columns over them (`column_runs`: one loop of every phase where
    all are inside the input, then each phase's edges; windows for the whole chunk). (gcc
    12 makes a zero loop of computed bounds a `rep stos` or a memset call per row: the CNN's
    second conv took 0.146 ms so, 0.111 ms this way with the channels outside the tile rows,
    0.106 ms with them inside.)"""
    f = plan.f
    op, m, pitch = plan.conv, f.m, plan.pitch
    height, width = shape_of(op.data)[2:]
    top, left, _, _ = op.padding_values
    col0 = e.add_const(e.mul_const(chunk.c0, m), -left)
    columns = [window(e, e.add_const(col0, p), m, width, pitch) for p in range(m)]
    front, back = plan.margins

    def tile_row(ivs: list[SSAValue], _: list[SSAValue]) -> list[SSAValue]:
        g = ivs[0]
        n, row = chunk.tile_row(e, plan, g)
        row0 = e.add_const(e.mul_const(row, m), -top)
        rows = window(e, row0, 1, height, f.alpha)
        first = e.mul_const(g, pitch)

        def blank(ivs: list[SSAValue], _: list[SSAValue]) -> list[SSAValue]:
            i, c, p, q = ivs
            return e.store(e.f32(0.0), packed, [p, c, i, e.add(first, q)])

        def input_row(ivs: list[SSAValue], _: list[SSAValue]) -> list[SSAValue]:
            i, c = ivs

            def copy(qs: list[SSAValue], _: list[SSAValue], phases: range) -> list[SSAValue]:
                for p in phases:
                    column = e.add(e.add_const(col0, p), e.mul_const(qs[0], m))
                    value = e.value_at(op.data, [n, c, e.add(row0, i), column])
                    e.store(value, packed, [e.index(p), c, i, e.add(first, qs[0])])
                return []

            for p in range(m):

                def zeros(qs: list[SSAValue], _: list[SSAValue], p: int = p) -> list[SSAValue]:
                    return e.store(e.f32(0.0), packed, [e.index(p), c, i, e.add(first, qs[0])])

                if front:
                    e.loops([front], [], zeros)
                if back:
                    e.loops([(e.index(pitch - back), e.index(pitch))], [], zeros)
            for (lo, hi), phases in column_runs(e, columns):
                e.loops([(lo, hi)], [], lambda qs, carried, phases=phases: copy(qs, carried, phases))
            return []

        e.loops([(e.index(0), rows[0]), plan.in_c, m, pitch], [], blank)
        e.loops([rows, plan.in_c], [], input_row)
        return e.loops([(rows[1], e.index(f.alpha)), plan.in_c, m, pitch], [], blank)

    e.loops([plan.chunk_rows], [], tile_row)
    past = (e.index(plan.chunk_rows * pitch), e.index(plan.slots + 1))
    e.loops([m, plan.in_c, f.alpha, past], [], lambda ivs, _: e.store(e.f32(0.0), packed, ivs))


def column_runs(
    e: GroupEmitter, columns: list[tuple[SSAValue, SSAValue]]
) -> list[tuple[tuple[SSAValue, SSAValue], range]]:
    """The slots of a packed row to copy, as runs of slots and the phases each copies: the
    slots inside the input for every phase (`columns[p]`: [lo_p, hi_p)) in one run of all
    the phases, which reads m adjacent input columns per slot; then, per phase, its slots
    before and after that run. (PoCL's LLVM made each phase's stride-m reads gathers: the
    CNN's second conv took 0.110 ms of PoCL device time so, 0.105 ms this way; per-node
    medians, one interleaved run each: the ResNet block's convs 0.91-0.94x the time on PoCL,
    0.99-1.02x in C, where gcc vectorised either.)"""
    lo = functools.reduce(e.max_index, [lo for lo, _ in columns])
    hi = e.max_index(lo, functools.reduce(e.min_index, [hi for _, hi in columns]))
    runs = [((lo, hi), range(len(columns)))]
    for p, (lo_p, hi_p) in enumerate(columns):
        runs.append(((lo_p, e.min_index(lo, hi_p)), range(p, p + 1)))
        runs.append(((e.max_index(hi, lo_p), hi_p), range(p, p + 1)))
    return runs


def window(e: GroupEmitter, offset: SSAValue, scale: int, size: int, count: int) -> tuple[SSAValue, SSAValue]:
    """`e.window_range` as `lo <= hi` within [0, count] (an empty one at lo): the ranges [0,
    lo), [lo, hi) and [hi, count) cover [0, count) once."""
    lo, hi = e.window_range(offset, scale, size, count)
    lo = e.min_index(lo, e.index(count))
    return lo, e.max_index(lo, hi)


def input_transform(e: GroupEmitter, plan: Plan, packed: SSAValue, v: SSAValue) -> None:
    """v[xi, c, slot] = (B^T d B)[xi] for the alpha x alpha input d of the tile at slot =
    g * pitch + t of the chunk (tile row g, column t), d[i, j] = packed[j % m, c, i, slot +
    j // m]: one unit-stride loop over every slot, `plan.transform_lanes` slots per step.

    gcc vectorises the scalar loop in zmm registers (and was 1.05x slower with vectors
    written out, 128 -> 128 channels at 40x40); PoCL's LLVM vectorises it in ymm, so on
    opencl the steps are `float16` vectors (the last one's lanes reaching the chunk's last slot, the
    packed rows' last): 64 -> 64 channels, PoCL device time at 32x32 0.95x, at 56x56 0.96x
    (bench/opencl_kernels.py's shapes, one interleaved run each, load 2.6)."""
    f, lanes = plan.f, plan.transform_lanes

    def load(idx: list[SSAValue]) -> SSAValue:
        return mk.load(e, packed, idx, lanes) if lanes > 1 else e.emit(memref.LoadOp.get(packed, idx))

    def body(ivs: list[SSAValue], _: list[SSAValue]) -> list[SSAValue]:
        c, step = ivs
        slot = e.mul_const(step, lanes)

        def d(i: int, j: int) -> SSAValue:
            return load([e.index(j % f.m), c, e.index(i), e.add_const(slot, j // f.m)])

        inputs = [[d(i, j) for j in range(f.alpha)] for i in range(f.alpha)]
        rows = [[linear(e, bt, inputs[i]) for bt in f.bt] for i in range(f.alpha)]  # (d B)[i, :]
        for a, b in itertools.product(range(f.alpha), range(f.alpha)):
            value = linear(e, f.bt[a], [rows[i][b] for i in range(f.alpha)])  # (B^T d B)[a, b]
            at = [e.index(a * f.alpha + b), c, slot]
            if lanes > 1:
                mk.store(e, value, v, at)
            else:
                e.store(value, v, at)
        return []

    e.loops([plan.in_c, plan.slots // lanes], [], body)


def products(e: GroupEmitter, plan: Plan, s: Scratch, block: SSAValue) -> None:
    """m[xi, o, slot] = sum over c of U[block, xi, c * channels + o] V[xi, c, slot] (`block`
    counted in the work item's U): per xi, the
    micro-kernel's `Plan.tile` of vector sums over the input channels."""
    tile = plan.tile

    def product(ivs: list[SSAValue], _: list[SSAValue]) -> list[SSAValue]:
        xi = ivs[0]

        def weight(ks: list[SSAValue], o: int) -> SSAValue:
            return e.emit(memref.LoadOp.get(s.u, [block, xi, e.add_const(e.mul_const(ks[0], plan.channels), o)]))

        def tiles(ks: list[SSAValue], vec: int) -> SSAValue:
            return mk.load(e, s.v, [xi, ks[0], e.index(vec * plan.lanes)], plan.lanes)

        sums = mk.accumulate(e, tile, [plan.in_c], mk.zeros(e, tile), weight, tiles)
        mk.store_block(e, tile, sums, s.m, lambda o, vec: [xi, e.index(o), e.index(vec * plan.lanes)])
        return []

    e.loops([plan.f.xi], [], product)


def output_transform(e: GroupEmitter, plan: Plan, m: SSAValue, y: SSAValue) -> None:
    """y[o, a, m slot + b] = (A^T M A)[a, b] of the tile at `slot`, for output channel k0 +
    o: a loop along the slots, each output row's columns adjacent."""
    f = plan.f

    def body(ivs: list[SSAValue], _: list[SSAValue]) -> list[SSAValue]:
        o, slot = ivs
        at = [
            [e.emit(memref.LoadOp.get(m, [e.index(i * f.alpha + j), o, slot])) for j in range(f.alpha)]
            for i in range(f.alpha)
        ]
        rows = [[linear(e, row, at[i]) for row in f.at] for i in range(f.alpha)]  # (M A)[i, :]
        for a, b in itertools.product(range(f.m), range(f.m)):
            value = linear(e, f.at[a], [rows[i][b] for i in range(f.alpha)])  # (A^T M A)[a, b]
            e.store(value, y, [o, e.index(a), e.add_const(e.mul_const(slot, f.m), b)])
        return []

    e.loops([plan.channels, plan.slots], [], body)


def probe(e: GroupEmitter, plan: Plan, y: SSAValue) -> SSAValue:
    """0 x y summed over the block's outputs y: 0 exactly when every one is finite. In
    vectors, a fused 0 x y + sum per LANES outputs into one sum per output channel (a register
    block's channels, independent chains: one sum's chain of m^2 slots / LANES dependent FMAs, at four cycles
    each, took 4.4 us of the CNN's second conv), the sums added, then the lanes one by one."""
    zero = mk.broadcast(e, e.f32(0.0), plan.lanes)

    def add(ivs: list[SSAValue], sums: list[SSAValue]) -> list[SSAValue]:
        a, v = ivs
        column = e.mul_const(v, plan.lanes)
        return [
            e.emit(vector.FMAOp(zero, mk.load(e, y, [e.index(o), a, column], plan.lanes), total))
            for o, total in enumerate(sums)
        ]

    m = plan.f.m
    sums = e.loops([m, m * plan.slots // plan.lanes], [zero] * plan.channels, add)
    while len(sums) > 1:  # pairwise, a tree
        sums = [fadd(e, sums[i], sums[i + 1]) for i in range(0, len(sums) - 1, 2)] + sums[len(sums) & ~1 :]
    lanes = e.emit(memref.AllocaOp.get(f32, shape=[plan.lanes]))
    mk.store(e, sums[0], lanes, [e.index(0)])

    def total(ivs: list[SSAValue], sums: list[SSAValue]) -> list[SSAValue]:
        return [fadd(e, sums[0], e.emit(memref.LoadOp.get(lanes, ivs)))]

    return e.loops([plan.lanes], [e.f32(0.0)], total)[0]


def store_outputs(
    e: GroupEmitter,
    plan: Plan,
    root: SSAValue,
    chunk: Chunk,
    k0: SSAValue,
    y: SSAValue | None,
    out: SSAValue,
) -> list[SSAValue]:
    """`root` at the chunk's results of channels k0 + o: the m / w result rows of each tile
    row g (w = `plan.window`, the pool's size or 1; those rows inside the result), columns
    (m / w) c0 .. (m / w)(c0 + chunk_cols) (those inside), a loop along each row. A result
    reads the w x w conv outputs of its window from y (`remember_window`), or their max from
    the block's peaks (`pool_block`, where `Plan.peaks_first`), or, without y, computes them
    output by output (`GroupEmitter.conv2d`). Where the chunk spans every tile column, or
    every tile row's results lie inside the result, those loops have constant bounds (no
    min per row; gcc sees a row's length)."""
    per_tile = plan.f.m // plan.window
    out_h, out_w = shape_of(root)[2:]
    peaks = pool_block(e, plan, y, k0) if y is not None and plan.peaks_first else None
    first_col = e.mul_const(chunk.c0, per_tile)
    columns: Extent = (first_col, e.min_index(e.index(out_w), e.add_const(first_col, per_tile * plan.chunk_cols)))
    if plan.chunk_cols == plan.tiles_w:  # c0 = 0
        first_col, columns = e.index(0), min(out_w, per_tile * plan.chunk_cols)

    def row(ivs: list[SSAValue], _: list[SSAValue]) -> list[SSAValue]:
        o, g = ivs
        n, tile_row = chunk.tile_row(e, plan, g)
        top = e.mul_const(tile_row, per_tile)
        within: Extent = (e.index(0), e.min_index(e.index(per_tile), e.sub(e.index(out_h), top)))
        if per_tile * plan.tiles_h <= out_h:
            within = per_tile
        at = Row(n, k0, o, g, top, first_col)
        e.loops([within], [], lambda a, _: output_row(e, plan, root, at, a[0], (y, peaks), columns, out))
        return []

    return e.loops([plan.channels, plan.chunk_rows], [], row)


@dataclass(frozen=True)
class Row:
    """Where the results of output channel k0 + o and tile row g of a chunk go: image n, the
    tile row's first result row `top`, the chunk's first result column `first_col`."""

    n: SSAValue
    k0: SSAValue
    o: SSAValue
    g: SSAValue
    top: SSAValue
    first_col: SSAValue


def output_row(
    e: GroupEmitter,
    plan: Plan,
    root: SSAValue,
    at: Row,
    a: SSAValue,
    sources: tuple[SSAValue | None, SSAValue | None],
    columns: Extent,
    out: SSAValue,
) -> list[SSAValue]:
    """One result row of the chunk: row top + a of `at`, its results read from y or from the
    block's peaks (`sources`), or computed output by output (neither)."""
    y, peaks = sources
    w, per_tile = plan.window, plan.f.m // plan.window
    # y's column of conv column 0, and the peaks' column of result column 0
    start = e.sub(e.mul_const(at.g, plan.f.m * plan.pitch), e.mul_const(at.first_col, w))
    peak_start = e.sub(e.mul_const(at.g, per_tile * plan.pitch), at.first_col)

    def output(ows: list[SSAValue], _: list[SSAValue]) -> list[SSAValue]:
        idx = [at.n, e.add(at.k0, at.o), e.add(at.top, a), ows[0]]
        if peaks is not None:
            assert plan.pool is not None
            peak = e.emit(memref.LoadOp.get(peaks, [at.o, a, e.add(peak_start, ows[0])]))
            if plan.pool.per_channel:  # the pool's value
                e.remember(plan.pool.op.res, idx, peak)
            else:
                tap = [at.n, idx[1], e.mul_const(idx[2], w), e.mul_const(ows[0], w)]
                remember_peak(e, plan.pool, idx, tap, peak)
        elif y is not None:
            remember_window(e, plan, y, idx, [at.o, a, start])
        return e.store(e.value_at(root, idx), out, idx)

    return e.loops([columns], [], output)


def pool_block(e: GroupEmitter, plan: Plan, y: SSAValue, k0: SSAValue) -> SSAValue:
    """peaks[o, a, q] = the largest of y's w x w window at rows w a .., columns w q .. (y's
    values being finite: a compare and a select each), over every slot of the block (those
    past the chunk's tiles too, never stored): a loop of constant bounds along y's rows that
    gcc vectorises at full width, where the stores' rows are a few results long (the CNN's
    second conv: 7, in 16- and 8-byte vectors). Where the ops up to the pool read one value
    per channel (`Pooling.per_channel`: a bias, a relu), the peak goes through them here, in
    that loop, and the stores copy the pool's values. The CNN's second conv and pool, C at 1
    thread against the kernel before the probe's chains and this (per-node medians of 301-501
    profiled runs, interleaved in one process, load 0.9-2.6): 0.957x with the chains, 0.948x
    with the peaks taken first, 0.905x with the epilogue in this loop (103.1 -> 93.3 us)."""
    assert plan.pool is not None
    pool, w, m = plan.pool, plan.window, plan.f.m
    peaks = e.emit(memref.AllocaOp.get(f32, shape=[plan.channels, m // w, m * plan.slots // w]))

    def peak(ivs: list[SSAValue], _: list[SSAValue]) -> list[SSAValue]:
        o, a, q = ivs
        values = [
            e.emit(memref.LoadOp.get(y, [o, e.add_const(e.mul_const(a, w), i), e.add_const(e.mul_const(q, w), j)]))
            for i, j in itertools.product(range(w), range(w))
        ]
        value = finite_maximum(e, values)
        if pool.per_channel:  # any image, row and column of channel k0 + o
            tap = [e.index(0), e.add(k0, o), e.index(0), e.index(0)]
            e.remember(pool.conv.res, tap, value)
            value = e.value_at(pool.op.data, tap)
        return e.store(value, peaks, ivs)

    e.loops([plan.channels, m // w, m * plan.slots // w], [], peak)
    return peaks


def remember_window(e: GroupEmitter, plan: Plan, y: SSAValue, idx: list[SSAValue], at: list[SSAValue]) -> None:
    """Hands over the conv outputs of result `idx`'s window, read from y: conv row w row + i
    is y's row w a + i, conv column w col + j its column start + w col + j (`at` = [o, a,
    start]); under a pooling, the pooled value (`conv_pooling.remember_pooled`, y's values
    being finite here)."""
    n, k, row, col = idx
    o, a, start = at
    w = plan.window
    taps: list[tuple[list[SSAValue], SSAValue]] = []
    for i, j in itertools.product(range(w), range(w)):
        tap = [n, k, e.add_const(e.mul_const(row, w), i), e.add_const(e.mul_const(col, w), j)]
        y_at = [o, e.add_const(e.mul_const(a, w), i), e.add_const(e.add(start, e.mul_const(col, w)), j)]
        taps.append((tap, e.emit(memref.LoadOp.get(y, y_at))))
    if plan.pool is not None:
        remember_pooled(e, plan.pool, idx, taps, finite=True)
        return
    ((tap, conv),) = taps
    e.remember(plan.conv.res, tap, conv)


SCHEDULE = Schedule("winograd_conv", matches, build)
