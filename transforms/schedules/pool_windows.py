"""
pool_windows: an OpenCL work item per output row of a group whose anchor is a max or average
pool2d of the result's shape with every window inside its input, the window's taps unrolled.

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
"""

from __future__ import annotations

from xdsl.dialects import arith, scf
from xdsl.ir import SSAValue

from xrelay.dialects import relay
from xrelay.transforms.kernel_builder import shape_of
from xrelay.transforms.scalar_ops import GroupEmitter
from xrelay.transforms.schedules import Schedule, anchor_of, group_root, result_shape

# At most this many taps per window are unrolled (a 3x3 or 7x7 window is; a global-sized
# one would make straight-line code of thousands of loads).
MAX_TAPS = 64


def pool_anchor(group: relay.FusedOp) -> relay.MaxPool2DOp | relay.AvgPool2DOp | None:
    """The group's max or average pool2d of the result's shape, on an opencl scope, whose
    windows all lie inside its input and have at most MAX_TAPS taps."""
    scope = group.se_scope
    if scope is None or scope.device != "opencl":
        return None
    pool = anchor_of(group, relay.Pool2DOp)
    if not isinstance(pool, relay.MaxPool2DOp | relay.AvgPool2DOp):
        return None
    kh, kw = pool.window
    return pool if kh * kw <= MAX_TAPS and windows_inside(pool) else None


def windows_inside(pool: relay.Pool2DOp) -> bool:
    """Whether every tap of every output's window reads the input (none the padding, none
    past the input's end, as ceil_mode's last windows may)."""
    _, _, height, width = shape_of(pool.data)
    _, _, out_h, out_w = shape_of(pool.res)
    top, left, _, _ = pool.padding_values
    (kh, kw), (sh, sw), (dh, dw) = pool.window, pool.stride_values, pool.dilation_values
    rows = top == 0 and (out_h - 1) * sh + (kh - 1) * dh < height
    columns = left == 0 and (out_w - 1) * sw + (kw - 1) * dw < width
    return rows and columns


def matches(group: relay.FusedOp) -> bool:
    return pool_anchor(group) is not None


def build(emitter: GroupEmitter, group: relay.FusedOp, out: SSAValue) -> scf.ParallelOp:
    pool = pool_anchor(group)
    assert pool is not None
    root, shape = group_root(group), result_shape(group)

    def row(idx: list[SSAValue]) -> None:
        def output(ivs: list[SSAValue], _: list[SSAValue]) -> list[SSAValue]:
            at = [*idx, ivs[0]]
            emitter.remember(pool.res, at, window(emitter, pool, at))
            return emitter.store(emitter.value_at(root, at), out, at)

        emitter.loops([shape[-1]], [], output)

    return emitter.parallel_nest(shape[:-1], row)


def window(e: GroupEmitter, pool: relay.MaxPool2DOp | relay.AvgPool2DOp, idx: list[SSAValue]) -> SSAValue:
    """The pool's value at output `idx`: its window's taps, unrolled in row-major order."""
    n, c, oh, ow = idx
    (kh, kw), (sh, sw), (dh, dw) = pool.window, pool.stride_values, pool.dilation_values
    row0, col0 = e.mul_const(oh, sh), e.mul_const(ow, sw)
    taps = [
        e.value_at(pool.data, [n, c, e.add_const(row0, i * dh), e.add_const(col0, j * dw)])
        for i in range(kh)
        for j in range(kw)
    ]
    if isinstance(pool, relay.MaxPool2DOp):
        peak = taps[0]
        for tap in taps[1:]:
            peak = e.emit(arith.MaximumfOp(peak, tap))
        return peak
    total = e.f32(0.0)
    for tap in taps:
        total = e.emit(arith.AddfOp(total, tap))
    return e.emit(arith.DivfOp(total, e.f32(float(kh * kw))))


SCHEDULE = Schedule("pool_windows", matches, build)
