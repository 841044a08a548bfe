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

# The interior's whole-row loops span a multiple of this many output columns, the rest of
# it joins the border's loops (one load and store of a sum per column for all its taps):
# gcc vectorises a whole-row loop 16 and 8 lanes at a time and leaves the rest scalar, a
# load, a multiply-add and a store per tap and column (56 wide: 54 interior columns, 6 of
# them scalar, ran 1.5x the time of 48 whole-row columns and 6 in the border).
WHOLE_ROW_MULTIPLE = 8

# Rows at least this wide sum every tap over the whole row, padding zeros included, after a
# test per window row that the weights of its taps on padding are finite; narrower rows
# sum only the taps that read the input (interior and border), with no test. (C, 1 thread,
# interleaved medians against the test on every row: 14 wide 0.85x the time, 28 wide 0.8-1.0x,
# 56 wide 1.1-1.2x.)
TESTED_MIN_WIDTH = 32


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
    output rows' sums, and an input row placed at its padded columns
    (`padded[left + iw] = data[.., ih, iw]`):

        for c, for i in <the window rows inside the input>:
            padded[left:left + width] = data[n, c, ih, :]
            for b:  <the window row's taps, below>

    then a last loop stores `root` at each (n, o_b, oh, ow), reading the conv value from
    `acc`. Padding is never read, across as down: a tap on padding adds nothing, even with
    a NaN or inf weight (0 x NaN would be NaN). The window row's taps, by row width:

    - narrower than TESTED_MIN_WIDTH: only the taps that read the input, with no test.
      Over the interior (the columns whose every tap reads the input, cut to a multiple of
      WHOLE_ROW_MULTIPLE), `for j, for ow: acc[b, ow] += padded[ow * sw + j * dw] * w[o_b,
      c, i, j]`; then a loop per border segment of `tap_segments`, each column summing the
      taps that read the input there (one load and store of acc per column);
    - at least that wide: the padding columns hold zeros, and when 0 x w summed over the
      weights of the row's taps that fall on padding is 0 (all finite), each tap adds
      over the whole row; else the row is summed segment by segment. The test costs a few
      operations per window row, little beside a row this wide.

    (Issue 13 had put that test on every window row: C 14 wide -32%, 28 wide -10%. Without
    it, narrow rows run at 0.75-0.9x its time, the CNN's 8x16x28x28 conv at 0.4-0.5x;
    1 thread, interleaved medians on a noisy machine.)

    The whole-row innermost loop has a constant trip count, walks both rows with unit
    stride (for stride 1), tests nothing and carries nothing, so C and OpenCL compilers
    vectorise it without reordering a sum: the i-k-j order of a matrix multiply. Segments
    over the whole row ran C at 45-90% of the whole-row loops (bench/kernels.py), a loop
    per tap with bounds of its own (or a select per column) at 20-50%. The copy costs one
    load per block * kw multiply-adds. One element per work item with the taps innermost
    and a test per tap ran at 1-4 GFLOP/s; this order at 11-34 (bench/kernels.py). A
    consumer that reads the conv at another index (a transpose of a square result)
    recomputes that element with `conv2d`.
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
    segments = tap_segments(kw, dw, sw, left, width, out_w)
    interior, border = split_interior(segments, kw)
    first_o = e.mul_const(ob, block)
    channel_base = e.conv_channel_base(op, first_o)  # the block shares its conv group
    row0 = e.add_const(e.mul_const(oh, sh), -top)
    window_rows = e.window_range(row0, dh, height, kh)

    def input_rows(taps: Callable[[SSAValue, SSAValue, SSAValue], list[SSAValue]]) -> list[SSAValue]:
        """For each input channel and window row inside the input: copy the row, then `taps`."""

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

        e.loops([in_c, window_rows], [], input_row)
        return []

    def whole_rows(c: SSAValue, i: SSAValue, b: SSAValue, lo: int = 0, hi: int = out_w) -> list[SSAValue]:
        """Each tap of the window row adds weight x row to the output columns [lo, hi)."""

        def tap(js: list[SSAValue], _: list[SSAValue]) -> list[SSAValue]:
            w = e.value_at(op.weight, [e.add(first_o, b), c, i, js[0]])
            first = e.mul_const(js[0], dw)  # the padded column of tap j at ow = 0

            def accumulate(ows: list[SSAValue], _: list[SSAValue]) -> list[SSAValue]:
                x = e.emit(memref.LoadOp.get(padded, [e.add(first, e.mul_const(ows[0], sw))]))
                total = e.emit(memref.LoadOp.get(acc, [b, ows[0]]))
                return e.store(e.emit(arith.AddfOp(total, e.emit(arith.MulfOp(x, w)))), acc, [b, ows[0]])

            return e.loops([(e.index(lo), e.index(hi))], [], accumulate)

        return e.loops([kw], [], tap)

    def inside_taps(
        c: SSAValue,
        i: SSAValue,
        b: SSAValue,
        interior: list[tuple[int, int]] = interior,
        border: list[tuple[int, int, list[int]]] = border,
    ) -> list[SSAValue]:
        """Only the taps that read the input: whole rows over the interior columns, then a
        loop per border segment over its taps."""
        for lo, hi in interior:
            whole_rows(c, i, b, lo, hi)
        weight = [e.add(first_o, b), c, i]
        used = sorted({j for _, _, inside in border for j in inside})
        weights = {j: e.value_at(op.weight, [*weight, e.index(j)]) for j in used}
        for lo, hi, inside in border:

            def accumulate(ows: list[SSAValue], _: list[SSAValue], inside: list[int] = inside) -> list[SSAValue]:
                total = e.emit(memref.LoadOp.get(acc, [b, ows[0]]))
                for j in inside:
                    x = e.emit(memref.LoadOp.get(padded, [e.add_const(e.mul_const(ows[0], sw), j * dw)]))
                    total = e.emit(arith.AddfOp(total, e.emit(arith.MulfOp(x, weights[j]))))
                return e.store(total, acc, [b, ows[0]])

            e.loops([(e.index(lo), e.index(hi))], [], accumulate)
        return []

    def tested_taps(c: SSAValue, i: SSAValue, b: SSAValue) -> list[SSAValue]:
        """Whole rows over the padding zeros when the weights of the window row's taps that
        fall on padding are finite (0 x w summed is 0), else a loop per segment (the rare
        path: kept small, as a larger one slowed the common one, 56 wide 1.2x)."""
        probe = zero
        for j in on_padding:
            w = e.value_at(op.weight, [e.add(first_o, b), c, i, e.index(j)])
            probe = e.emit(arith.AddfOp(probe, e.emit(arith.MulfOp(w, zero))))
        finite = e.emit(arith.CmpfOp(probe, zero, "oeq"))
        return e.if_else(finite, [], lambda: whole_rows(c, i, b), lambda: inside_taps(c, i, b, [], segments))

    on_padding = padding_taps(segments, kw, out_w)
    if not on_padding:  # no tap ever reads a padded column: whole rows, no padding to fill
        input_rows(whole_rows)
    elif out_w < TESTED_MIN_WIDTH:
        input_rows(inside_taps)
    else:
        for lo, hi in ((0, min(left, padded_w)), (left + copied, padded_w)):  # the padding
            if lo < hi:
                e.loops([(e.index(lo), e.index(hi))], [], lambda ps, _: e.store(zero, padded, ps))
        input_rows(tested_taps)

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


def padding_taps(segments: list[tuple[int, int, list[int]]], kw: int, out_w: int) -> list[int]:
    """The taps j that fall on a padded column at some output column (from `tap_segments`)."""
    covered = sum(hi - lo for lo, hi, _ in segments)
    return [j for j in range(kw) if covered < out_w or any(j not in inside for _, _, inside in segments)]


def split_interior(
    segments: list[tuple[int, int, list[int]]], kw: int
) -> tuple[list[tuple[int, int]], list[tuple[int, int, list[int]]]]:
    """The interior, the output columns [lo, hi) whose every tap reads the input, cut to a
    multiple of WHOLE_ROW_MULTIPLE columns; and the border, the other segments of
    `tap_segments` with the interior's last columns."""
    interior: list[tuple[int, int]] = []
    border: list[tuple[int, int, list[int]]] = []
    for lo, hi, inside in segments:
        whole = (hi - lo) // WHOLE_ROW_MULTIPLE * WHOLE_ROW_MULTIPLE if len(inside) == kw else 0
        if whole:
            interior.append((lo, lo + whole))
        if lo + whole < hi:
            border.append((lo + whole, hi, inside))
    return interior, border


SCHEDULE = Schedule("conv_rows", matches, build)
