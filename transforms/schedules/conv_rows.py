"""
conv_rows: a work item per output row of a group whose anchor is a conv2d of the result's shape.

The parallel nest spans (n, output channel block, output row); the width is the work item's.
The sums of the output rows accumulate in a scratch row per output channel
(`memref.alloca`), in an order whose innermost loop is unit-stride and carries nothing, then
the group's result is stored along the rows (the epilogue reads the conv from the scratch
row). A work item takes the rows of CHANNEL_BLOCK output channels at once when they are wide.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import f32
from xdsl.ir import SSAValue

from xrelay.dialects import relay
from xrelay.transforms.kernel_builder import Extent, shape_of
from xrelay.transforms.scalar_ops import GroupEmitter
from xrelay.transforms.schedules import Schedule, anchor_of, group_root, result_shape

# Below this output width a conv2d group keeps one work item per element: a scratch row
# of a few elements vectorises nothing.
MIN_ROW_WIDTH = 4

# A conv2d work item computes the rows of this many output channels at once when its rows
# are at least BLOCK_MIN_WIDTH wide: each copied input row then feeds four channels' taps
# (C: 28 and 56 wide 9-15 -> 19-34 GFLOP/s; 14 wide, gcc's code for four short rows was
# slower than for one, 15 -> 10).
CHANNEL_BLOCK = 4
BLOCK_MIN_WIDTH = 16


def row_anchor(group: relay.FusedOp) -> relay.Conv2DOp | None:
    """The group's conv2d, if it has one of the result's shape and a row worth a work item."""
    conv = anchor_of(group, relay.Conv2DOp)
    return conv if conv is not None and result_shape(group)[3] >= MIN_ROW_WIDTH else None


def matches(group: relay.FusedOp) -> bool:
    return row_anchor(group) is not None


def channel_block(conv: relay.Conv2DOp) -> int:
    """How many output channels a work item of `conv` computes: CHANNEL_BLOCK when the rows
    are wide enough and the channels of each conv group split into whole blocks, else 1."""
    _, out_c, _, width = shape_of(conv.res)
    per_group = out_c // conv.group_count
    return CHANNEL_BLOCK if width >= BLOCK_MIN_WIDTH and per_group % CHANNEL_BLOCK == 0 else 1


def build(emitter: GroupEmitter, group: relay.FusedOp, out: SSAValue) -> scf.ParallelOp:
    conv = row_anchor(group)
    assert conv is not None
    root, shape, block = group_root(group), result_shape(group), channel_block(conv)
    rows = (shape[0], shape[1] // block, shape[2])
    return emitter.parallel_nest(rows, lambda row: store_rows(emitter, conv, root, row, out, block))


def store_rows(
    e: GroupEmitter, op: relay.Conv2DOp, root: SSAValue, row: list[SSAValue], out: SSAValue, block: int
) -> None:
    """The work item of output rows `row` = (n, ob, oh) of a group whose anchor is `op`
    and whose result `root` has the conv's shape: the rows oh of output channels
    ob * block + b for b < block (all in one conv group). Two kinds of scratch rows: the
    output rows' sums, and an input row with its padding as zeros
    (`padded[left + iw] = data[.., ih, iw]`):

        for c, for i in <the window rows inside the input>:
            padded[left:left + width] = data[n, c, ih, :]
            for b:
                if the weights w[o_b, c, i, :] are all finite:
                    for j:  acc[b, ow] += padded[ow * sw + j * dw] * w[o_b, c, i, j]  for every ow
                else, for each segment [lo, hi) of `tap_segments`, for ow in [lo, hi):
                    acc[b, ow] += padded[ow * sw + j * dw] * w[o_b, c, i, j]  for its taps j

    then a last loop stores `root` at each (n, o_b, oh, ow), reading the conv value from
    `acc`. Padding is never read, across as down: with finite weights, a padded tap adds
    0 x w = 0 (the fast path); with a NaN or inf weight, a segment sums only the taps that
    read the input there (padding would give 0 x NaN = NaN). The test is 0 x w summed over
    the window row, compared with 0. Segments alone (one load and store of `acc` per ow)
    ran C at 45-90% of the whole-row loops (bench/kernels.py), a loop per tap with its own
    bounds at 20-50%. The whole-row innermost loop has a constant trip count, walks both
    rows with unit stride (for stride 1), tests nothing and carries nothing, so C and
    OpenCL compilers vectorise it without reordering a sum: the i-k-j order of a matrix
    multiply. The copy costs one load per block * kw multiply-adds. One element per work
    item with the taps innermost and a test per tap ran at 1-4 GFLOP/s; this order at
    11-34 (bench/kernels.py). A consumer that reads the conv at another index (a transpose
    of a square result) recomputes that element with `conv2d`.
    """
    n, ob, oh = row
    _, _, height, width = shape_of(op.data)
    _, in_c, kh, kw = shape_of(op.weight)
    (sh, sw), (dh, dw) = op.stride_values, op.dilation_values
    top, left, _, _ = op.padding_values
    out_w = shape_of(op.res)[3]
    padded_w = (out_w - 1) * sw + (kw - 1) * dw + 1  # the input columns the windows span
    copied = max(0, min(width, padded_w - left))  # input columns inside them
    acc = e.emit(memref.AllocaOp.get(f32, shape=[block, out_w]))
    padded = e.emit(memref.AllocaOp.get(f32, shape=[padded_w]))
    zero = e.f32(0.0)

    def each_channel(extent: Extent, body: Callable[[SSAValue, SSAValue], list[SSAValue]]) -> None:
        """Loops over the block's channels b (none for a block of 1) and `extent`."""
        if block == 1:
            e.loops([extent], [], lambda ivs, _: body(e.index(0), ivs[0]))
        else:
            e.loops([block, extent], [], lambda ivs, _: body(ivs[0], ivs[1]))

    each_channel(out_w, lambda b, ow: e.store(zero, acc, [b, ow]))
    for lo, hi in ((0, min(left, padded_w)), (left + copied, padded_w)):  # the padding
        if lo < hi:
            e.loops([(e.index(lo), e.index(hi))], [], lambda ps, _: e.store(zero, padded, ps))
    segments = tap_segments(kw, dw, sw, left, width, out_w)
    first_o = e.mul_const(ob, block)
    channel_base = e.conv_channel_base(op, first_o)  # the block shares its conv group
    row0 = e.add_const(e.mul_const(oh, sh), -top)

    def input_row(ivs: list[SSAValue], _: list[SSAValue]) -> list[SSAValue]:
        c, i = ivs
        ih = e.add(row0, e.mul_const(i, dh))
        channel = e.add(channel_base, c)
        e.loops(
            [copied], [],
            lambda qs, _: e.store(e.value_at(op.data, [n, channel, ih, qs[0]]), padded, [e.add_const(qs[0], left)]),
        )  # fmt: skip
        if block == 1:
            taps(c, i, e.index(0))
        else:
            e.loops([block], [], lambda bs, _: taps(c, i, bs[0]))
        return []

    def taps(c: SSAValue, i: SSAValue, b: SSAValue) -> list[SSAValue]:
        """The window row's taps for output channel b: over the whole row (padding as zeros)
        when its weights are finite, else a loop per segment of the taps that read the input."""
        weight = [e.add(first_o, b), c, i]
        probe = zero  # 0 x w summed: 0 exactly when every weight of the row is finite
        for j in range(kw):
            probe = e.emit(
                arith.AddfOp(probe, e.emit(arith.MulfOp(e.value_at(op.weight, [*weight, e.index(j)]), zero)))
            )
        finite = e.emit(arith.CmpfOp(probe, zero, "oeq"))
        e.if_else(finite, [], lambda: whole_row(b, weight), lambda: segmented(b, weight))
        return []

    def whole_row(b: SSAValue, weight: list[SSAValue]) -> list[SSAValue]:
        def tap(js: list[SSAValue], _: list[SSAValue]) -> list[SSAValue]:
            w = e.value_at(op.weight, [*weight, js[0]])
            first = e.mul_const(js[0], dw)  # the padded column of tap j at ow = 0

            def accumulate(ows: list[SSAValue], _: list[SSAValue]) -> list[SSAValue]:
                x = e.emit(memref.LoadOp.get(padded, [e.add(first, e.mul_const(ows[0], sw))]))
                total = e.emit(memref.LoadOp.get(acc, [b, ows[0]]))
                return e.store(e.emit(arith.AddfOp(total, e.emit(arith.MulfOp(x, w)))), acc, [b, ows[0]])

            return e.loops([out_w], [], accumulate)

        e.loops([kw], [], tap)
        return []

    def segmented(b: SSAValue, weight: list[SSAValue]) -> list[SSAValue]:
        used = sorted({j for _, _, inside in segments for j in inside})
        weights = {j: e.value_at(op.weight, [*weight, e.index(j)]) for j in used}
        for lo, hi, inside in segments:

            def accumulate(ows: list[SSAValue], _: list[SSAValue], inside: list[int] = inside) -> list[SSAValue]:
                total = e.emit(memref.LoadOp.get(acc, [b, ows[0]]))
                for j in inside:
                    x = e.emit(memref.LoadOp.get(padded, [e.add_const(e.mul_const(ows[0], sw), j * dw)]))
                    total = e.emit(arith.AddfOp(total, e.emit(arith.MulfOp(x, weights[j]))))
                return e.store(total, acc, [b, ows[0]])

            e.loops([(e.index(lo), e.index(hi))], [], accumulate)
        return []

    e.loops([in_c, e.window_range(row0, dh, height, kh)], [], input_row)

    def store(b: SSAValue, ow: SSAValue) -> list[SSAValue]:
        idx = [n, e.add(first_o, b), oh, ow]
        e.remember(op.res, idx, e.emit(memref.LoadOp.get(acc, [b, ow])))
        return e.store(e.value_at(root, idx), out, idx)

    each_channel(out_w, store)


def tap_segments(kw: int, dw: int, sw: int, left: int, width: int, out_w: int) -> list[tuple[int, int, list[int]]]:
    """The output columns [lo, hi) cut where the set of taps j reading the input (not the
    padding) at ow * sw + j * dw - left changes, with that set; columns no tap reads left out."""

    def inside(j: int, ow: int) -> bool:
        return 0 <= ow * sw + j * dw - left < width

    segments: list[tuple[int, int, list[int]]] = []
    for ow in range(out_w):
        taps = [j for j in range(kw) if inside(j, ow)]
        if segments and segments[-1][1] == ow and segments[-1][2] == taps:
            segments[-1] = (segments[-1][0], ow + 1, taps)
        elif taps:
            segments.append((ow, ow + 1, taps))
    return segments


SCHEDULE = Schedule("conv_rows", matches, build)
