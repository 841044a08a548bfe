"""
softmax_row: a work item per row of a softmax that is its group's result.

The parallel nest spans the result's axes but the softmax axis. Each work item makes four
passes over its row, each an `scf.for` that gcc (C) or split-reductions (OpenCL) vectorises:

1. max: the row's peak, one loop carrying the max. In C its `arith.maximumf` is marked
   `fastmath<nnan>` (below), which the C target prints as one comparison under
   `#pragma omp simd reduction(max:...)`: gcc vectorises it (a NaN-exact max it leaves
   scalar). On OpenCL split-reductions folds it in vector lanes.
2. exp: `out[k] = exp(x[k] - peak)`, each exponential computed once (libmvec's in C).
3. sum: the sum of the row just stored (a `+` reduction: `omp simd` in C).
4. scale: `out[k] = out[k] * (1 / sum)`: one division per row. The sum is at least 1 (the
   peak's own exponential), so the reciprocal is exact to half an ulp and the product within
   an ulp and a half of the quotient.

On OpenCL, a row along the last axis of whole vectors of an input buffer (a softmax is
Opaque, so its data is one) makes the four passes on vectors of the device's width
(`vector_row`: loads of a `floatN`, `exp` of it, stores); PoCL vectorises across work items only where
they have no inner loop. Other rows take the scalar loops.

Reading `out` back is what saves the second exponential of the old form (exp in the sum and
again in the store): the row is in L1 by then. The transformer's 4x128x128 softmax: C 0.127
-> 0.055 ms with a scratch row of lane maxima that gcc left scalar, 0.033 ms with the
`nnan` max and the reciprocal (a C driver calling the kernel, best of 200; 0.020 ms of it
are the 64K exponentials); OpenCL 0.114 -> 0.084 ms with the scalar loops, 0.068 ms in
vectors.

The peak only keeps the exponentials in range; softmax is the same for any shift. So the C
max may drop a NaN or return one (`nnan`: the peak of a row with a NaN is unspecified): a NaN
anywhere in the row makes its exponential, the sum and so every element of the row NaN,
whatever the peak; +inf gives `inf - inf`, NaN, as numpy's `exp(x - max) / sum` does.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import arith, memref, scf, vector
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import VectorType, f32
from xdsl.dialects.utils.fast_math import FastMathFlag
from xdsl.ir import SSAValue

from xrelay.dialects import relay
from xrelay.transforms.kernel_builder import shape_of
from xrelay.transforms.scalar_ops import GroupEmitter
from xrelay.transforms.schedules import Schedule, features_of, group_root, kind_of, result_shape
from xrelay.transforms.split_reductions import lane_reduction

# The C max's flags: a NaN of the row may be dropped (the module docstring says why that is exact).
NO_NANS = arith.FastMathFlagsAttr([FastMathFlag.NO_NANS])

Along = Callable[[SSAValue], SSAValue]  # k -> the row's element at k
Store = Callable[[SSAValue, SSAValue], list[SSAValue]]  # (value, k) -> stores it at the row's k


def softmax_result(group: relay.FusedOp) -> relay.SoftmaxOp | None:
    op = group_root(group).owner
    return op if isinstance(op, relay.SoftmaxOp) else None


def matches(group: relay.FusedOp) -> bool:
    return softmax_result(group) is not None


def build(emitter: GroupEmitter, group: relay.FusedOp, out: SSAValue) -> scf.ParallelOp:
    softmax = softmax_result(group)
    assert softmax is not None
    shape, axis = result_shape(group), softmax.axis_value
    rows = shape[:axis] + shape[axis + 1 :]
    lanes = vector_lanes(group)
    return emitter.parallel_nest(rows, lambda row: store_row(emitter, softmax, row, out, lanes))


def vector_lanes(group: relay.FusedOp) -> int | None:
    """The floats per vector of a row written in vectors (`vector_row`), on a device whose
    compiler vectorises only across work items (OpenCL); None where the kernel compiler
    vectorises the scalar passes itself (C, with the max `fastmath<nnan>`)."""
    return features_of(group).vector_floats if kind_of(group).explicit_vectors else None


def store_row(e: GroupEmitter, op: relay.SoftmaxOp, row: list[SSAValue], out: SSAValue, lanes: int | None) -> None:
    """A whole row of a softmax that is the group's result: max, exp into `out`, sum, scale."""
    axis, extent = op.axis_value, shape_of(op.data)[op.axis_value]
    if extent == 0:  # no elements: nothing to read or store
        return

    data = e.inputs.get(op.data)
    if lanes is not None and lanes > 1 and data is not None and axis == len(row) and extent % lanes == 0:
        vector_row(e, row, extent, lanes, data, out)
        return

    def at(k: SSAValue) -> list[SSAValue]:
        return row[:axis] + [k] + row[axis:]

    def x(k: SSAValue) -> SSAValue:
        return e.value_at(op.data, at(k))

    def stored(k: SSAValue) -> SSAValue:
        return e.emit(memref.LoadOp.get(out, at(k)))

    row_passes(e, extent, x, stored, lambda value, k: e.store(value, out, at(k)), vectorised_by_compiler=lanes is None)


def row_passes(
    e: GroupEmitter, extent: int, x: Along, stored: Along, store: Store, vectorised_by_compiler: bool
) -> None:
    """The four passes over a row of `extent` elements in scalar loops: its max of `x` (on
    the cpu `fastmath<nnan>`: a NaN may be dropped, the loop reordered, in vectors), the
    exponentials `store`d, their sum from what is `stored`, then each times the sum's
    reciprocal (also attention_rows' softmax, in its scratch)."""
    peak = row_max(e, x, (e.index(0), e.index(extent)), flags=NO_NANS if vectorised_by_compiler else None)

    def exp(ks: list[SSAValue], _: list[SSAValue]) -> list[SSAValue]:
        return store(e.emit(mathd.ExpOp(e.emit(arith.SubfOp(x(ks[0]), peak)))), ks[0])

    e.loops([extent], [], exp)
    (total,) = e.loops([extent], [e.f32(0.0)], lambda ks, accs: [e.emit(arith.AddfOp(accs[0], stored(ks[0])))])
    scale = e.emit(arith.DivfOp(e.f32(1.0), total))
    e.loops([extent], [], lambda ks, _: store(e.emit(arith.MulfOp(stored(ks[0]), scale)), ks[0]))


def row_max(
    e: GroupEmitter,
    x: Along,
    bounds: tuple[SSAValue, SSAValue],
    start: SSAValue | None = None,
    flags: arith.FastMathFlagsAttr | None = None,
) -> SSAValue:
    """The max of x[k] for k in `bounds`, from `start` (default: the first of them): one
    loop carrying the max, its `arith.maximumf` with `flags`."""
    first = x(bounds[0]) if start is None else start
    (peak,) = e.loops([bounds], [first], lambda ks, accs: [e.emit(arith.MaximumfOp(accs[0], x(ks[0]), flags))])
    return peak


def vector_row(e: GroupEmitter, row: list[SSAValue], extent: int, width: int, data: SSAValue, out: SSAValue) -> None:
    """OpenCL, a row along the last axis of whole vectors of the input buffer `data`: the
    four passes on `vector<width x f32>` values (vector loads, `exp` of a `floatN`, vector
    stores), the max and the sum folded from their lanes after their loops."""
    lanes = VectorType(f32, [width])

    def load(ref: SSAValue, step: SSAValue) -> SSAValue:
        return e.emit(vector.LoadOp(ref, [*row, e.mul_const(step, width)], lanes))

    def store(value: SSAValue, step: SSAValue) -> list[SSAValue]:
        e.builder.insert(vector.StoreOp(value, out, [*row, e.mul_const(step, width)]))
        return []

    def larger(cs: list[SSAValue], accs: list[SSAValue]) -> list[SSAValue]:
        return [e.emit(arith.MaximumfOp(accs[0], load(data, cs[0])))]

    steps = extent // width
    (peaks,) = e.loops([(e.index(1), e.index(steps))], [load(data, e.index(0))], larger)
    peak = e.emit(vector.BroadcastOp(e.emit(lane_reduction(arith.MaximumfOp, peaks)), lanes))

    def exp(cs: list[SSAValue], _: list[SSAValue]) -> list[SSAValue]:
        return store(e.emit(mathd.ExpOp(e.emit(arith.SubfOp(load(data, cs[0]), peak)))), cs[0])

    e.loops([steps], [], exp)
    zeros = e.emit(vector.BroadcastOp(e.f32(0.0), lanes))
    (sums,) = e.loops([steps], [zeros], lambda cs, accs: [e.emit(arith.AddfOp(accs[0], load(out, cs[0])))])
    scale = e.emit(arith.DivfOp(e.f32(1.0), e.emit(lane_reduction(arith.AddfOp, sums))))
    scales = e.emit(vector.BroadcastOp(scale, lanes))
    e.loops([steps], [], lambda cs, _: store(e.emit(arith.MulfOp(load(out, cs[0]), scales)), cs[0]))


SCHEDULE = Schedule("softmax_row", matches, build)
