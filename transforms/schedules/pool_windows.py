"""
pool_windows: an OpenCL work item (or a cpu loop iteration) per output row of a group whose
anchor is a max or average pool2d of the result's shape, the taps of windows inside its input
unrolled. Where windows reach the padding (or past the input, ceil_mode), only the interior
outputs (`interior`: rows and columns whose windows lie inside) are computed so; the few
around them, and the rows whose windows cross the padding, as the elementwise schedule does
(`GroupEmitter.pool2d`: the window clipped to the input, so a max ignores the padding and an
average counts the taps it should). ResNet-18's max pool (3x3, stride 2, padding 1, 64 x 112
x 112 -> 56 x 56), its C kernel alone: 2500 -> 160 us (bench/pool_windows.py).

The elementwise schedule computes each output's window as a loop nest whose bounds clip it to
the input (`GroupEmitter.pool2d`): loops of unknown trip count, which neither PoCL's
vectoriser (across work items: only code without loops of its own) nor LLVM's loop
vectoriser (a loop of loops) handles, so every tap is scalar code with its loop overhead.
Where no window reaches the padding or past the input, no clipping is needed: the kh x kw
taps are straight-line code, a max (or a sum, then the division by kh x kw) in row-major tap
order, as the loops compute it, and a work item's loop over the output row has a constant
trip count, which LLVM vectorises. Windows that reach the padding stay with the elementwise
schedule.

The nest spans (n, c, output row), as the elementwise nest of an NCHW result does (its first
three axes of size > 1). Measured as device time (OpenCL profiling events) on PoCL with
POCL_MAX_PTHREAD_COUNT=1, medians of 7 interleaved rounds, machine load 2.5-3.5 on 2 cores:
the CNN's max_pool2d 2x2 stride 2 of 8x16x28x28 took 0.12 ms in the elementwise schedule,
0.031-0.035 ms here (the C kernel: 0.010-0.012 ms); of 8x32x14x14, 0.061-0.064 against
0.020 ms (C: 0.007-0.009). A work item per output element, every result axis in the
NDRange, was slower (0.07-0.09 ms with the launch, against 0.05-0.06 here); a work item per
(n, c) plane no faster.

Still every tap a scalar: PoCL's LLVM does not vectorise the row's loop of stride-2 loads
(1.4 ns per output of a 2x2 pool, 4 of C's, which gcc vectorises). Where the pool is the
group's result, reads a group input and its windows are 2 wide at stride 2 (the usual 2x2
pool, any kh), a work item's row is computed LANES outputs at a time (`vector_row`): per
window row, one vector load of the 2 x LANES input floats under those outputs, whose even
and odd lanes (`vector.shuffle`, OpenCL swizzles) are the two taps of each window; taps
combined in the same order as the scalar code. A row not a multiple of LANES ends with the
last LANES outputs (computed twice, stored twice alike). Device time at 1 PoCL thread
(hand-written kernels of this form, medians of 40, load 3): 8x16x28x28 0.036 -> 0.011 ms
(C 0.010), 8x32x14x14 (4 lanes: 7 wide) 0.020 -> 0.010 ms (C 0.007).

On the cpu, gcc vectorises only part of the elementwise schedule's clipped window loops and
leaves the rest scalar code with a compare and jump per max (as it does a row loop of 14
unrolled outputs: 8 in vectors, 4, then 2 scalar). Here a row of at least CPU_CHUNK outputs is computed `cpu_chunk` outputs at a
time (`chunked_row`: a loop of constant trip count, which gcc -O3 vectorises whole, the
stride-2 taps by permutes; a row not a multiple of the chunk ends with its last chunk's
outputs, computed twice, stored twice alike), a max's taps combined as a tree of adjacent
pairs (`pairwise_max`, bit for bit the chain's value). The CNN's 8x16x28x28 2x2 pool, its
kernel alone on warm data (medians of 31 x 200 calls): 8.2 -> 7.0 us (an AVX-512 kernel
written by hand: 5.0). Narrower rows stay elementwise: the 7-wide rows of 8x32x14x14 in
chunks of 4 took 11 us against 5.9 (gcc's SLP did not vectorise the unrolled chunk), as
one loop of 7 the same 5.9. A max row of one loop of PROBE_MIN_WIDTH outputs or more is
first computed as if no tap were NaN, its taps' sum the probe, and again exactly where a sum
is NaN (`probed_max`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.dialects import arith, scf, vector
from xdsl.dialects.builtin import DenseArrayBase, VectorType, f32, i1, i64
from xdsl.ir import BlockArgument, SSAValue

from xrelay.dialects import relay
from xrelay.transforms.kernel_builder import shape_of
from xrelay.transforms.scalar_ops import GroupEmitter
from xrelay.transforms.schedules import Schedule, anchor_of, features_of, group_root, kind_of, result_shape

# At most this many taps per window are unrolled (a 3x3 or 7x7 window is; a global-sized
# one would make straight-line code of thousands of loads).
MAX_TAPS = 64
# Outputs per vector of a row computed in vectors on a device of work groups (`vector_row`):
# the most of these that the row holds and whose input floats (twice as many) fill at most a
# vector of the device (PoCL here: 16, so 8, 4 or 2).
ROW_LANES = (8, 4, 2)
# Outputs per chunk of a cpu row (`chunked_row`): a vector of the target's, at most
# CPU_CHUNK (measured on AVX-512 at 8; AVX2's 8 and SSE's 4 fill one vector of outputs).
# Rows narrower than CPU_CHUNK stay with the elementwise schedule (a 7-wide row in chunks of
# 4 measured slower on AVX-512, as one loop no faster).
CPU_CHUNK = 8
# Rows whose interior holds this many chunks are one loop instead: ResNet-18's 3x3 stride-2
# max pool (55 interior outputs a row) took 512 us in chunks of 8 natively, 164 us as one
# loop (AVX2: 488 -> 362 us; the C kernels alone, medians of 15 x 20 calls, load 2.7).
ROW_LOOP_CHUNKS = 4
# Windows wider than 2 columns (overlapping at stride 2: SqueezeNet's and ResNet's 3x3) take
# one loop from a row of one chunk on: the kernel alone, min of 120 profiled runs (load 7-10),
# AVX-512 / AVX2, 128 x 55 x 55 -> 27 x 27 in chunks of 8 262 / 261 us, as one loop 49 / 59
# us; 256 x 27 x 27 -> 13 x 13 55 / 55 -> 31 / 29 us (onnxruntime: 56 and 30 us). 2x2 windows
# at 14 and 15 outputs a row stay in chunks (1.7 -> 2.0 us as one loop).
WIDE_WINDOW_ROW_LOOP_CHUNKS = 1

# A max row is probed for NaN (`probed_max`) where it is one loop of at least this many
# outputs: more than gcc -O3 peels completely (the C target's COMPLETE_PEEL_TRIPS, 16), since
# a loop carrying the probe's flag gets no `#pragma GCC unroll 1`, and gcc's straight-line
# copies of it would branch on each select. Narrower rows keep `arith.maximumf`.
PROBE_MIN_WIDTH = 17


def cpu_chunk(group: relay.FusedOp) -> int:
    """Outputs per chunk of a row on a device without work groups."""
    return min(CPU_CHUNK, features_of(group).vector_floats)


def cpu_row_chunk(group: relay.FusedOp, width: int) -> int:
    """Outputs per chunk of a cpu row whose interior is `width` outputs wide: `cpu_chunk`, or
    the whole interior where it holds ROW_LOOP_CHUNKS chunks (WIDE_WINDOW_ROW_LOOP_CHUNKS for
    windows wider than 2 columns: one loop, which gcc vectorises with a remainder loop of its
    own)."""
    chunk = cpu_chunk(group)
    pool = pool_anchor(group)
    wide = pool is not None and pool.window[1] > 2
    return width if width >= (WIDE_WINDOW_ROW_LOOP_CHUNKS if wide else ROW_LOOP_CHUNKS) * chunk else chunk


def pool_anchor(group: relay.FusedOp) -> relay.MaxPool2DOp | relay.AvgPool2DOp | None:
    """The group's max or average pool2d of the result's shape, with at most MAX_TAPS taps
    per window and an interior (`interior`) of at least one output row, and of rows of at
    least one output on a device of work groups (OpenCL), of at least CPU_CHUNK outputs on
    one without them."""
    if group.se_scope is None or not kind_of(group).generates_kernels:
        return None
    pool = anchor_of(group, relay.Pool2DOp)
    if not isinstance(pool, relay.MaxPool2DOp | relay.AvgPool2DOp):
        return None
    (top, bottom), (left, right) = interior(pool)
    least = 1 if kind_of(group).work_groups else CPU_CHUNK
    kh, kw = pool.window
    return pool if kh * kw <= MAX_TAPS and bottom > top and right - left >= least else None


def interior(pool: relay.Pool2DOp) -> tuple[tuple[int, int], tuple[int, int]]:
    """The output rows and columns `[lo, hi)` whose windows lie inside the input (no tap on
    the padding, none past the input's end as ceil_mode's last windows may): an output in
    both ranges has every tap of its window in the input."""
    _, _, height, width = shape_of(pool.data)
    _, _, out_h, out_w = shape_of(pool.res)
    top, left, _, _ = pool.padding_values
    (kh, kw), (sh, sw), (dh, dw) = pool.window, pool.stride_values, pool.dilation_values

    def inside(size: int, out: int, pad: int, k: int, s: int, d: int) -> tuple[int, int]:
        lo, last = -(-pad // s), size - 1 + pad - (k - 1) * d  # first output; last window start
        hi = min(out, last // s + 1) if last >= 0 else 0
        return lo, max(lo, hi)

    return inside(height, out_h, top, kh, sh, dh), inside(width, out_w, left, kw, sw, dw)


def windows_inside(pool: relay.Pool2DOp) -> bool:
    """Whether every tap of every output's window reads the input."""
    _, _, out_h, out_w = shape_of(pool.res)
    return interior(pool) == ((0, out_h), (0, out_w))


def matches(group: relay.FusedOp) -> bool:
    return pool_anchor(group) is not None


def vector_lanes(group: relay.FusedOp, pool: relay.MaxPool2DOp | relay.AvgPool2DOp) -> int | None:
    """The outputs per vector of a row computed in vectors (`vector_row`): the most of
    ROW_LANES the row holds and a vector of the device fits twice, where the pool is the
    group's result, reads a group input, all its windows lie inside the input and are 2 wide
    at stride 2 (dilation 1); else None."""
    _, sw = pool.stride_values
    _, kw = pool.window
    _, dw = pool.dilation_values
    if group_root(group) is not pool.res or not isinstance(pool.data, BlockArgument) or (sw, kw, dw) != (2, 2, 1):
        return None
    if not windows_inside(pool):
        return None
    width, most = shape_of(pool.res)[-1], features_of(group).vector_floats
    return next((lanes for lanes in ROW_LANES if lanes <= width and 2 * lanes <= most), None)


def build(emitter: GroupEmitter, group: relay.FusedOp, out: SSAValue) -> scf.ParallelOp:
    pool = pool_anchor(group)
    assert pool is not None
    shape = result_shape(group)
    _, columns = interior(pool)
    if not kind_of(group).work_groups:
        chunk = cpu_row_chunk(group, columns[1] - columns[0])
        return emitter.parallel_nest(
            shape[:-1],
            lambda idx: padded_row(
                emitter,
                group,
                pool,
                idx,
                out,
                lambda: chunked_row(emitter, group, pool, idx, columns, chunk, out, True),
            ),
        )
    lanes = vector_lanes(group, pool)
    if lanes is not None:
        return emitter.parallel_nest(shape[:-1], lambda idx: vector_row(emitter, pool, idx, lanes, out))
    width = columns[1] - columns[0]
    return emitter.parallel_nest(
        shape[:-1],
        lambda idx: padded_row(
            emitter, group, pool, idx, out, lambda: chunked_row(emitter, group, pool, idx, columns, width, out, False)
        ),
    )


def padded_row(
    e: GroupEmitter,
    group: relay.FusedOp,
    pool: relay.MaxPool2DOp | relay.AvgPool2DOp,
    idx: list[SSAValue],
    out: SSAValue,
    interior_columns: Callable[[], None],
) -> None:
    """Output row `idx` (n, c, output row) of the group's result: in an interior row
    (`interior`), the outputs left and right of the interior columns as the elementwise
    schedule computes them (their windows clipped to the input, `GroupEmitter.pool2d`), then
    `interior_columns`; a row whose windows reach the padding or past the input, all of it
    so (a branch on the row index where the rows are not all interior)."""
    (top, bottom), (left, right) = interior(pool)
    out_h, out_w = result_shape(group)[-2:]

    def interior_row() -> list[SSAValue]:
        border_outputs(e, group, idx, (0, left), out)
        interior_columns()
        border_outputs(e, group, idx, (right, out_w), out)
        return []

    row = idx[-1]
    known = e.known.get(row)
    if (top, bottom) == (0, out_h) or (known is not None and top <= known < bottom):
        interior_row()
    elif known is not None:
        border_outputs(e, group, idx, (0, out_w), out)
    else:
        inside = e.compare("slt", row, e.index(bottom))
        if top > 0:
            inside = e.emit(arith.AndIOp(e.compare("sge", row, e.index(top)), inside))
        e.if_else(inside, [], interior_row, lambda: border_outputs(e, group, idx, (0, out_w), out))


def border_outputs(
    e: GroupEmitter, group: relay.FusedOp, idx: list[SSAValue], columns: tuple[int, int], out: SSAValue
) -> list[SSAValue]:
    """Outputs `columns` `[lo, hi)` of row `idx` as the elementwise schedule computes them
    (a loop, or straight-line code for one output)."""
    root, (lo, hi) = group_root(group), columns

    def output(column: SSAValue) -> list[SSAValue]:
        return e.store(e.value_at(root, [*idx, column]), out, [*idx, column])

    if hi - lo == 1:
        return output(e.index(lo))
    if hi > lo:
        e.loops([(e.index(lo), e.index(hi))], [], lambda ivs, _: output(ivs[0]))
    return []


def chunked_row(
    e: GroupEmitter,
    group: relay.FusedOp,
    pool: relay.MaxPool2DOp | relay.AvgPool2DOp,
    idx: list[SSAValue],
    columns: tuple[int, int],
    lanes: int,
    out: SSAValue,
    pairwise: bool,
) -> None:
    """Outputs `columns` `[lo, hi)` of row `idx` (n, c, output row) of the group's result,
    whose windows lie inside the input, `lanes` outputs at a time in a loop of constant trip
    count (the last chunk: the range's last `lanes` outputs, computed and stored twice alike
    where the range is not a multiple of `lanes`); a max's taps `pairwise` or as a chain
    (`window`). A `pairwise` max of a row of one loop of at least PROBE_MIN_WIDTH outputs is
    first taken as if no tap were NaN (`probed_max`), and the row again as `window` computes
    it where a tap may be."""
    row = RowLoops(e, group, idx, columns, lanes, out)
    width = columns[1] - columns[0]
    if not (pairwise and isinstance(pool, relay.MaxPool2DOp) and lanes == width >= PROBE_MIN_WIDTH):
        row.run(lambda at: (window(e, pool, at, pairwise), None))
        return
    (maybe_nan,) = row.run(lambda at: probed_max(e, pool, at), flagged=True)
    e.if_else(maybe_nan, [], lambda: row.run(lambda at: (window(e, pool, at, True), None)), lambda: [])


Pooled = Callable[[list[SSAValue]], tuple[SSAValue, SSAValue | None]]


@dataclass(frozen=True)
class RowLoops:
    """`chunked_row`'s loops over outputs `columns` of row `idx`, `lanes` at a time."""

    e: GroupEmitter
    group: relay.FusedOp
    idx: list[SSAValue]
    columns: tuple[int, int]
    lanes: int
    out: SSAValue

    def run(self, value: Pooled, flagged: bool = False) -> list[SSAValue]:
        """Stores the group's result at each output, the pool's value there `value(at)[0]`;
        `flagged`: `value(at)[1]` is an i1 flag, and the result [the OR of the row's flags]."""
        e, (lo, hi), lanes = self.e, self.columns, self.lanes
        pool = pool_anchor(self.group)
        assert pool is not None
        root, width = group_root(self.group), hi - lo
        flags = [e.scalar(False, i1)] if flagged else []

        def outputs(first: SSAValue, carried: list[SSAValue]) -> list[SSAValue]:
            def output(lane: list[SSAValue], carried: list[SSAValue]) -> list[SSAValue]:
                at = [*self.idx, e.add(first, lane[0])]
                pooled, flag = value(at)
                e.remember(pool.res, at, pooled)
                e.store(e.value_at(root, at), self.out, at)
                return [e.emit(arith.OrIOp(carried[0], flag))] if flag is not None else []

            return e.loops([lanes], carried, output)

        def chunk(ivs: list[SSAValue], carried: list[SSAValue]) -> list[SSAValue]:
            first = e.mul_const(ivs[0], lanes)
            first = e.min_index(first, e.index(width - lanes)) if width % lanes else first
            return outputs(e.add_const(first, lo), carried)

        return outputs(e.index(lo), flags) if lanes == width else e.loops([-(-width // lanes)], flags, chunk)


def probed_max(
    e: GroupEmitter, pool: relay.MaxPool2DOp | relay.AvgPool2DOp, idx: list[SSAValue]
) -> tuple[SSAValue, SSAValue]:
    """The max of the window at output `idx` as if no tap were NaN (a tree of `a > b ? a :
    b`: `pairwise_max`'s value, bit for bit, where none is), and whether one may be: the taps'
    sum is NaN (a NaN tap's, or inf - inf: then the row is computed again, exactly). gcc
    vectorises both, an instruction per op, where `arith.maximumf`'s NaN test costs a compare
    and a blend per pair. SqueezeNet's 64 x 111 x 111 3x3 stride-2 pool, the kernel alone
    (`exe.profile`, medians of 50, load 15): AVX-512 135 -> 95 us, AVX2 124 -> 119, SSE4.2
    183 -> 132 (a probe of the input rows instead: AVX2 1.05x slower than without)."""
    taps = window_taps(e, pool, idx)
    peak, total = list(taps), list(taps)
    while len(peak) > 1:
        pairs = [e.emit(arith.SelectOp(e.emit(arith.CmpfOp(a, b, "ogt")), a, b)) for a, b in zip(peak[::2], peak[1::2])]
        sums = [e.emit(arith.AddfOp(a, b)) for a, b in zip(total[::2], total[1::2])]
        peak, total = pairs + peak[len(peak) - len(peak) % 2 :], sums + total[len(total) - len(total) % 2 :]
    return peak[0], e.emit(arith.CmpfOp(total[0], total[0], "uno"))


def window(
    e: GroupEmitter, pool: relay.MaxPool2DOp | relay.AvgPool2DOp, idx: list[SSAValue], pairwise: bool = False
) -> SSAValue:
    """The pool's value at output `idx`, whose window lies inside the input: its taps,
    unrolled in row-major order; a max `pairwise` (`pairwise_max`) or as a chain; an average
    their sum divided by kh x kw (with or without count_include_pad: every tap is inside)."""
    taps = window_taps(e, pool, idx)
    kh, kw = pool.window
    if isinstance(pool, relay.MaxPool2DOp) and pairwise:
        return pairwise_max(e, taps)
    if isinstance(pool, relay.MaxPool2DOp):
        peak = taps[0]
        for tap in taps[1:]:
            peak = e.emit(arith.MaximumfOp(peak, tap))
        return peak
    total = e.f32(0.0)
    for tap in taps:
        total = e.emit(arith.AddfOp(total, tap))
    return e.emit(arith.DivfOp(total, e.f32(float(kh * kw))))


def window_taps(e: GroupEmitter, pool: relay.MaxPool2DOp | relay.AvgPool2DOp, idx: list[SSAValue]) -> list[SSAValue]:
    """The input values of the window of output `idx` (inside the input), row-major."""
    n, c, oh, ow = idx
    (kh, kw), (sh, sw), (dh, dw) = pool.window, pool.stride_values, pool.dilation_values
    top, left, _, _ = pool.padding_values
    row0, col0 = e.add_const(e.mul_const(oh, sh), -top), e.add_const(e.mul_const(ow, sw), -left)
    return [
        e.value_at(pool.data, [n, c, e.add_const(row0, i * dh), e.add_const(col0, j * dw)])
        for i in range(kh)
        for j in range(kw)
    ]


def pairwise_max(e: GroupEmitter, taps: list[SSAValue]) -> SSAValue:
    """The max of `taps` as a tree of adjacent pairs, in order (((t0, t1), (t2, t3)), ...):
    the value of the chain t0, t1, ... bit for bit, as `arith.maximumf` of the C target
    (`a != a ? a : (a > b ? a : b)`) picks the first NaN, else the last of the largest (of
    -0 and +0, the later), whichever way adjacent taps are grouped; a chain half as deep."""
    while len(taps) > 1:
        pairs = [e.emit(arith.MaximumfOp(a, b)) for a, b in zip(taps[::2], taps[1::2])]
        taps = pairs + taps[len(taps) - len(taps) % 2 :]
    return taps[0]


def vector_row(
    e: GroupEmitter, pool: relay.MaxPool2DOp | relay.AvgPool2DOp, idx: list[SSAValue], lanes: int, out: SSAValue
) -> None:
    """Output row `idx` (n, c, output row) of a pool whose windows are 2 wide at stride 2,
    `lanes` outputs at a time: per window row, the 2 x `lanes` input floats under them in one
    load, its even lanes the windows' first taps and its odd lanes their second."""
    n, c, oh = idx
    kh, _ = pool.window
    sh, _ = pool.stride_values
    dh, _ = pool.dilation_values
    width = shape_of(pool.res)[-1]
    data = e.inputs[pool.data]
    wide, narrow = VectorType(f32, [2 * lanes]), VectorType(f32, [lanes])
    even = DenseArrayBase.from_list(i64, list(range(0, 2 * lanes, 2)))
    odd = DenseArrayBase.from_list(i64, list(range(1, 2 * lanes, 2)))
    row0 = e.mul_const(oh, sh)

    def chunk(ivs: list[SSAValue], _: list[SSAValue]) -> list[SSAValue]:
        first = e.mul_const(ivs[0], lanes)
        if width % lanes:
            first = e.min_index(first, e.index(width - lanes))  # the last chunk: the last `lanes` outputs
        column = e.mul_const(first, 2)
        taps: list[SSAValue] = []
        for i in range(kh):
            row = e.emit(vector.LoadOp(data, [n, c, e.add_const(row0, i * dh), column], wide))
            taps += [e.emit(vector.ShuffleOp(row, row, lanes_of, result_type=narrow)) for lanes_of in (even, odd)]
        if isinstance(pool, relay.MaxPool2DOp):
            value = taps[0]
            for tap in taps[1:]:
                value = e.emit(arith.MaximumfOp(value, tap))
        else:
            value = e.emit(vector.BroadcastOp(e.f32(0.0), narrow))
            for tap in taps:
                value = e.emit(arith.AddfOp(value, tap))
            value = e.emit(arith.DivfOp(value, e.emit(vector.BroadcastOp(e.f32(float(2 * kh)), narrow))))
        e.builder.insert(vector.StoreOp(value, out, [n, c, oh, first]))
        return []

    e.loops([-(-width // lanes)], [], chunk)


SCHEDULE = Schedule("pool_windows", matches, build)
