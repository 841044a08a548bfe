"""
conv_taps: a convolution of few input channels (an image model's first conv: 1 or 3 of them),
for a cpu or opencl group whose anchor is a conv2d of stride 1, one group, of the result's
shape, with at most MAX_TAPS taps (input channels x window) per output.

packed_conv's register blocks sum CHANNELS x VECTORS vectors over a loop of input channels,
the taps of each unrolled in it; with one input channel that loop has one step, and a
block's zeros, stores and finite test cost as much as its nine multiply-adds (the CNN's first
conv, 1 -> 16 channels at 28 x 28, batch 8: 41 GFLOP/s). Here an output vector's taps are
loaded once into registers, and each output channel is one chain of fused multiply-adds
over them, its sum stored right after:

    for each output vector q:  taps[c, i, j] = packed[base(c, i, j) + q ...]    (the target's lanes)
        for o:                 sum = fma(broadcast(weight[o, c, i, j]), taps[c, i, j], sum) ...
                               the group's result at q's outputs of channel o, from sum

The nest spans (n, block of output rows), as packed_conv's; a work item:

1. Pack: its input rows, every input channel, the padding as zeros (`packed_conv.pack`).
2. Check: whether every weight is finite, 0 x w summed over them being 0.
3. Fast path (finite weights): the output vectors of the work item, row-aligned as in
   packed_conv's row-aligned layout (ceil(out_w / LANES) vectors per output row, the last
   ending at the row's end; a row shorter than a vector computes lanes past it, reading the
   next packed row, and drops them), each as above; a sum is stored with the epilogue (bias,
   relu, a residual add, ...) by `packed_conv.store_vector`, a loop of LANES (or the row's
   width) that gcc turns into vector operations; without an epilogue, as a vector (the same
   loop copying the sums, gcc stored lane by lane: 2x the time of the CNN's first conv). Reading the padding as zeros is exact
   there: a padded tap adds 0 x w = 0, as if skipped.
4. Slow path (some weight NaN or inf, which a padded tap would turn into 0 x inf = NaN):
   every output of the work item computed one by one (`GroupEmitter.conv2d`, whose loop
   bounds skip the padding), as in `xrelay.interpret`. (A NaN or inf input needs no slow
   path: the fast path multiplies it by the same weights as `interpret` does.)

Pooled (a group of fuse-conv-pool on a device of work groups, `pools_here`: a 2 x 2 max_pool2d at stride 2
over an epilogue that commutes with the max, `Pooling.before_epilogue`): a work item's rows
are an even count (an odd last conv row is left out, as the pool drops it); per pair of conv
rows and vector of LANES conv columns (even-aligned: the last ends at the last even column),
each output channel's two chains, their max, and the max of its even and odd lanes
(`vector.shuffle`, OpenCL swizzles) are the LANES / 2 windows' largest conv outputs, a NaN
winning; the epilogue is applied once per window, to that value (`remember_peak`), and
stored. The slow path computes each pooled output as `interpret` does. The CNN's first conv
and pool on PoCL (1 thread): 0.029 ms against 0.027 + 0.011 ms as two kernels.

The output channel loop is a loop, not unrolled: the weights of a step are loads that gcc
folds into the multiply-adds (`vfmadd231ps mem{1to16}`); packed_conv's unrolled channels,
whose weights do not change along its loop over output vectors, had gcc hoist 144 broadcast
weights out of it and spill them.
"""

from __future__ import annotations

from xdsl.dialects import arith, memref, scf, vector
from xdsl.dialects.builtin import DenseArrayBase, VectorType, f32, i64
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
    one_group_per_item,
    packed_conv,
)
from xrelay.transforms.schedules import micro_kernel as mk
from xrelay.transforms.schedules.conv_pooling import Pooling, pooling_of, remember_peak

# At most this many taps (input channels x kh x kw) per output, and no more than the target's
# vector registers hold with the sum and a weight (`max_taps`): the taps of an output vector
# stay in registers (3 channels x 3 x 3 = 27 of AVX-512's 32; 14 of AVX2's 16).
MAX_TAPS = 27

# Rows shorter than half a vector of the target's lanes compute mostly dropped lanes (a
# vector a row): packed_conv's flat layout or conv_rows serve them better.

# Below MIN_WORK multiply-adds per image the conv stays with conv_rows, as packed_conv leaves
# its small ones (a threshold of half packed_conv.MIN_WORK, for convs of fewer
# multiply-adds per output; not measured: the packing and the weights' check per work item
# are the cost it guards against).
MIN_WORK = 1 << 14

# A work item's rows: the largest divisor of the output height whose packed rows take at
# most PACK_MAX_FLOATS (in L1 with the output vectors being stored: 16 KiB), of those giving
# a `packed_conv.balanced` count of work items for two threads.
PACK_MAX_FLOATS = 1 << 12

# It serves every device kind with kernels (`DeviceKind.generates_kernels`). On opencl a work item is the same code (`float16` vectors), launched
# as a work group of its own (`one_group_per_item`) so that PoCL's threads share them. It
# took 0.081 ms of PoCL device time for the CNN's first conv against packed_conv's 0.046
# while PoCL's vload16 was built of pieces; through float-aligned vector pointers (the
# OpenCL target's `xr_float16u`) 0.027 against 0.036, the C kernel 0.029
# (bench/opencl_model_kernels.py cnn, PoCL on 1 thread, one interleaved run; at 2 threads
# 0.030 against the C kernel's 0.030, 0.039 in one work group). A group of fuse-conv-pool
# takes it, its pool in the stores, on a device of work groups (OpenCL: `pools_here`); on
# the others winograd_conv pools.


def plan_of(group: relay.FusedOp) -> packed_conv.Plan | None:
    """The group's conv as packed_conv's row-aligned plan of one channel a block and one
    vector, or None if this schedule does not take it."""
    pool = pooling_of(group)
    if pool is None:
        return plan_of_conv(group, anchor_of(group, relay.Conv2DOp))
    return plan_of_conv(group, pool.conv, pool) if pools_here(group, pool) else None


def pools_here(group: relay.FusedOp, pool: Pooling) -> bool:
    """Whether the pool of a group of fuse-conv-pool is one this schedule computes in its
    stores: on a device of work groups (OpenCL), 2 x 2 windows over an epilogue that
    commutes with the max."""
    if group.se_scope is None or not kind_of(group).work_groups:
        return False
    return pool.size == 2 and pool.before_epilogue


def pools_in_epilogue(group: relay.FusedOp) -> bool:
    """Whether the schedule takes `group` and computes its pooled outputs from its output
    vectors (fuse-conv-pool asks this of a group it would make)."""
    return pooling_of(group) is not None and plan_of(group) is not None


def plan_of_conv(
    group: relay.FusedOp, conv: relay.Conv2DOp | None, pool: Pooling | None = None
) -> packed_conv.Plan | None:
    """The plan of the group's conv `conv` (pooled by `pool`: work items of an even number of
    rows, an odd last row left out), or None."""
    if conv is None or group.se_scope is None or not kind_of(group).generates_kernels:
        return None
    if conv.stride_values != (1, 1) or conv.group_count != 1:
        return None
    features = features_of(group)
    lanes = features.vector_floats
    _, in_c, _, width = shape_of(conv.data)
    batch, _, out_h, out_w = shape_of(conv.res)
    _, left, _, right = conv.padding_values
    kh, kw = shape_of(conv.weight)[2:]
    taps = in_c * kh * kw
    if taps > max_taps(features) or 2 * out_w < lanes or shape_of(conv.res)[1] * out_h * out_w * taps < MIN_WORK:
        return None
    padded_width = width + left + right
    reach = (kh - 1) * conv.dilation_values[0]
    height, step = (out_h, 1) if pool is None else (out_h // 2 * 2, 2)
    fits = [
        rows
        for rows in range(step, height + 1, step)
        if height % rows == 0
        and packed_conv.pack_floats(in_c, rows + reach, padded_width, packed_conv.VECTORS * lanes) <= PACK_MAX_FLOATS
    ]
    if not fits:
        return None
    rows = max(fits, key=lambda rows: (packed_conv.balanced(batch * height // rows), rows))
    tile = mk.Tile(rows=1, vectors=1, lanes=lanes)
    return packed_conv.Plan(conv, padded_width, rows, rows + reach, row_aligned=True, tile=tile)


def max_taps(features: Features) -> int:
    """The most taps an output vector's chain keeps in registers with its sum and a weight."""
    return min(MAX_TAPS, features.vector_registers - 2)


def matches(group: relay.FusedOp) -> bool:
    return plan_of(group) is not None


def build(emitter: GroupEmitter, group: relay.FusedOp, out: SSAValue) -> scf.ParallelOp:
    plan = plan_of(group)
    assert plan is not None
    pool = pooling_of(group)
    if pool is None:
        return one_group_per_item(packed_conv.row_blocks(emitter, group, plan, work_item, out), group)
    batch, _, out_h, _ = shape_of(plan.conv.res)
    root = group_root(group)
    tiles = (batch, out_h // 2 * 2 // plan.row_block)
    nest = emitter.parallel_nest(tiles, lambda tile: work_item(emitter, plan, root, tile, out, pool))
    return one_group_per_item(nest, group)


def work_item(
    e: GroupEmitter,
    plan: packed_conv.Plan,
    root: SSAValue,
    tile: list[SSAValue],
    out: SSAValue,
    pool: Pooling | None = None,
) -> None:
    """Output rows tile[1] * row_block + r, every channel, of image tile[0] (with `pool`,
    the pooled rows of those conv rows)."""
    packed = packed_conv.pack(e, plan, tile)
    finite = e.emit(arith.CmpfOp(weights_probe(e, plan.conv), e.f32(0.0), "oeq"))
    if pool is None:
        e.if_else(
            finite, [], lambda: fast_path(e, plan, root, tile, packed, out), lambda: slow_path(e, plan, root, tile, out)
        )
        return
    e.if_else(
        finite,
        [],
        lambda: pooled_fast_path(e, plan, pool, root, tile, packed, out),
        lambda: pooled_slow_path(e, plan, root, tile, out),
    )


def weights_probe(e: GroupEmitter, conv: relay.Conv2DOp) -> SSAValue:
    """0 x w summed over the conv's weights w: 0 exactly when every one is finite. A loop
    over the output channels carrying one sum per tap (at most MAX_TAPS), the taps unrolled
    in it, then the sums added: chains of out_c adds, not of all the weights (a nest down to
    the taps, its innermost loop a reduction of 3, took a tenth of the CNN's first conv)."""
    in_c, kh, kw = shape_of(conv.weight)[1:]
    taps = [(c, i, j) for c in range(in_c) for i in range(kh) for j in range(kw)]

    def add(ivs: list[SSAValue], sums: list[SSAValue]) -> list[SSAValue]:
        weights = [e.value_at(conv.weight, [ivs[0], *(e.index(k) for k in tap)]) for tap in taps]
        return [e.emit(arith.AddfOp(s, e.emit(arith.MulfOp(w, e.f32(0.0))))) for s, w in zip(sums, weights)]

    sums = e.loops([shape_of(conv.weight)[0]], [e.f32(0.0)] * len(taps), add)
    total = sums[0]
    for partial in sums[1:]:
        total = e.emit(arith.AddfOp(total, partial))
    return total


def fast_path(
    e: GroupEmitter, plan: packed_conv.Plan, root: SSAValue, tile: list[SSAValue], packed: SSAValue, out: SSAValue
) -> list[SSAValue]:
    """Every output vector of the work item (row r, vector k of the row), every channel."""
    n, row_tile = tile
    out_w = shape_of(plan.conv.res)[3]
    first_row = e.mul_const(row_tile, plan.row_block)
    direct = root == plan.conv.res and out_w >= plan.lanes  # no epilogue, vectors inside the rows
    sums = None if direct else e.emit(memref.AllocaOp.get(f32, shape=[1, plan.lanes]))

    def output_vector(ivs: list[SSAValue], _: list[SSAValue]) -> list[SSAValue]:
        r, k = ivs
        column = e.min_index(e.mul_const(k, plan.lanes), e.index(max(out_w - plan.lanes, 0)))
        taps = load_taps(e, plan, packed, e.add(e.mul_const(r, plan.padded_width), column))

        def channel(os: list[SSAValue], _: list[SSAValue]) -> list[SSAValue]:
            at = [n, os[0], e.add(first_row, r), column]
            total = chain(e, plan, os[0], taps)
            if sums is None:
                mk.store(e, total, out, at)
                return []
            mk.store(e, total, sums, [e.index(0), e.index(0)])
            packed_conv.store_vector(e, plan, root, sums, 0, at, out)
            return []

        return e.loops([shape_of(plan.conv.res)[1]], [], channel)

    return e.loops([plan.row_block, plan.row_vectors], [], output_vector)


def load_taps(e: GroupEmitter, plan: packed_conv.Plan, packed: SSAValue, position: SSAValue) -> list[SSAValue]:
    """The `plan.lanes` packed floats each tap (c, i, j) of the window reads for the output vector at
    flat `position` (row * padded_width + column) of the work item: c-major, then i, j."""
    in_c, kh, kw = shape_of(plan.conv.weight)[1:]
    dh, dw = plan.conv.dilation_values
    taps: list[SSAValue] = []
    for c in range(in_c):
        for i in range(kh):
            for j in range(kw):
                offset = (c * plan.packed_rows + i * dh) * plan.padded_width + j * dw
                taps.append(mk.load(e, packed, [e.add_const(position, offset)], plan.lanes))
    return taps


def chain(e: GroupEmitter, plan: packed_conv.Plan, o: SSAValue, taps: list[SSAValue]) -> SSAValue:
    """Output channel o's sums at the vector: one fused multiply-add per tap, in tap order."""
    conv = plan.conv
    kh, kw = shape_of(conv.weight)[2:]
    total = mk.broadcast(e, e.f32(0.0), plan.lanes)
    for t, tap in enumerate(taps):
        c, i, j = t // (kh * kw), t // kw % kh, t % kw
        weight = e.value_at(conv.weight, [o, e.index(c), e.index(i), e.index(j)])
        total = e.emit(vector.FMAOp(mk.broadcast(e, weight, plan.lanes), tap, total))
    return total


def slow_path(
    e: GroupEmitter, plan: packed_conv.Plan, root: SSAValue, tile: list[SSAValue], out: SSAValue
) -> list[SSAValue]:
    """Every output of the work item, one by one, the conv computed as `interpret` does."""
    n, row_tile = tile
    _, out_c, _, out_w = shape_of(plan.conv.res)
    first_row = e.mul_const(row_tile, plan.row_block)

    def output(ivs: list[SSAValue], _: list[SSAValue]) -> list[SSAValue]:
        o, r, ow = ivs
        idx = [n, o, e.add(first_row, r), ow]
        return e.store(e.value_at(root, idx), out, idx)

    return e.loops([out_c, plan.row_block, out_w], [], output)


# --- pooled: a group of fuse-conv-pool ------------------------------------------------------


def pooled_fast_path(
    e: GroupEmitter,
    plan: packed_conv.Plan,
    pool: Pooling,
    root: SSAValue,
    tile: list[SSAValue],
    packed: SSAValue,
    out: SSAValue,
) -> list[SSAValue]:
    """Per pair of conv rows and vector of `plan.lanes` conv columns (half as many windows),
    every channel: the two rows' sums, their max, then the max of its even and odd lanes (each
    window's two columns), the pooled values of those windows; the epilogue once per
    window, from its largest conv output (`remember_peak`)."""
    n, row_tile = tile
    width = shape_of(plan.conv.res)[3] // 2 * 2  # an odd last column is left out
    half = plan.lanes // 2
    pairs = e.mul_const(row_tile, plan.row_block // 2)
    peaks = e.emit(memref.AllocaOp.get(f32, shape=[half]))
    narrow = VectorType(f32, [half])
    even = DenseArrayBase.from_list(i64, list(range(0, plan.lanes, 2)))
    odd = DenseArrayBase.from_list(i64, list(range(1, plan.lanes, 2)))

    def output_vector(ivs: list[SSAValue], _: list[SSAValue]) -> list[SSAValue]:
        p, k = ivs
        first = e.min_index(e.mul_const(k, half), e.index(max(width // 2 - half, 0)))  # pooled column
        position = e.add(e.mul_const(e.mul_const(p, 2), plan.padded_width), e.mul_const(first, 2))
        taps = [load_taps(e, plan, packed, at) for at in (position, e.add_const(position, plan.padded_width))]

        def channel(os: list[SSAValue], _: list[SSAValue]) -> list[SSAValue]:
            o = os[0]
            top, bottom = (chain(e, plan, o, row) for row in taps)
            rows = e.emit(arith.MaximumfOp(top, bottom))
            left, right = (e.emit(vector.ShuffleOp(rows, rows, lanes, result_type=narrow)) for lanes in (even, odd))
            e.builder.insert(vector.StoreOp(e.emit(arith.MaximumfOp(left, right)), peaks, [e.index(0)]))

            def window(ws: list[SSAValue], _: list[SSAValue]) -> list[SSAValue]:
                idx = [n, o, e.add(pairs, p), e.add(first, ws[0])]
                tap = [n, o, e.mul_const(idx[2], 2), e.mul_const(idx[3], 2)]
                remember_peak(e, pool, idx, tap, e.emit(memref.LoadOp.get(peaks, [ws[0]])))
                return e.store(e.value_at(root, idx), out, idx)

            return e.loops([min(half, width // 2)], [], window)

        return e.loops([shape_of(plan.conv.res)[1]], [], channel)

    return e.loops([plan.row_block // 2, -(-width // plan.lanes)], [], output_vector)


def pooled_slow_path(
    e: GroupEmitter, plan: packed_conv.Plan, root: SSAValue, tile: list[SSAValue], out: SSAValue
) -> list[SSAValue]:
    """Every pooled output of the work item, one by one, as `interpret` computes it."""
    n, row_tile = tile
    _, out_c, _, out_w = shape_of(plan.conv.res)
    pairs = e.mul_const(row_tile, plan.row_block // 2)

    def output(ivs: list[SSAValue], _: list[SSAValue]) -> list[SSAValue]:
        o, p, column = ivs
        idx = [n, o, e.add(pairs, p), column]
        return e.store(e.value_at(root, idx), out, idx)

    return e.loops([out_c, plan.row_block // 2, out_w // 2], [], output)


SCHEDULE = Schedule("conv_taps", matches, build)
