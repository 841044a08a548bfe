"""
The scalar meaning of each relay op at an index, as loop-level IR.

`GroupEmitter.value_at(v, idx)` emits, at the current insertion point, the ops that compute the
f32 element of tensor `v` at the index values `idx` (one `index` SSA value per axis). A group
input is a `memref.load`; every other value is computed from its operands' values at derived
indices (operands first, from an explicit stack: `compute_reads`), so producers are fused into
their consumer's loop body and no intermediate buffer is written:

- elementwise and broadcast ops apply `arith`/`math` ops to their operands' values at the
  (broadcast) index;
- injective ops only rewrite the index: reshape linearises and delinearises (`divsi`/`remsi`)
  within each group of axes of equal size (`reshape_groups`),
  transpose permutes, squeeze/expand_dims drop or insert zeros, strided_slice scales and
  shifts, concatenate picks its input with an `scf.if` chain, pad clamps, mirrors or wraps the
  index or tests it in an `scf.if` (both select instead past `BRANCH_NESTING` regions), take maps the position in its constant indices to the
  index they hold (`constant_index`);
- reductions, dense, batch_matmul, matmul, conv2d, pooling, softmax and layer_norm are `scf.for` nests with
  `iter_args` inside the work item; a padded window's loops run over the taps inside the
  input only (`window_range`: bounds from index min/max, no test per tap), so padding is
  never read.

This is one element at a time. How a kernel's work items are laid out (a row, a block of
outputs, scratch rows) is a schedule's (`transforms/schedules/`): a schedule computes some
values its own way and hands them over with `remember`, and everything else it needs comes
from `value_at`. Values are memoised per (value, index) in the scopes of `KernelBuilder`.

A softmax inside a group (fuse-ops never makes one: softmax is Opaque; the `softmax_row`
schedule handles one that is its group's result) recomputes the max and the sum for each
element it is asked for, which is quadratic in the axis length but needs no scratch buffer
and no barrier. A layer_norm is the same (it is CommReduce, so fuse-ops makes it its group's
result, and the `layer_norm_rows` schedule computes the mean and 1/std once per row).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from typing import Any

from xdsl.builder import Builder
from xdsl.dialects import arith, memref
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import IndexType, f32, i1, i64
from xdsl.ir import Operation, SSAValue

from xrelay.dialects import relay
from xrelay.dialects.dtypes import FLOAT32, DType
from xrelay.transforms import scalar_dtypes
from xrelay.transforms.kernel_builder import Index, KernelBuilder, shape_of
from xrelay.transforms.scalar_dtypes import element_dtype

Shape = tuple[int, ...]
BRANCH_NESTING = 24  # the regions a kernel nests before concatenate and pad select instead of branching
Extent = int | tuple[SSAValue, SSAValue]  # a loop's trip count from 0, or its [lo, hi) bounds

# relay op -> the arith/math op computing it on scalars
UNARY_SCALAR: dict[type[Operation], Callable[[SSAValue], Operation]] = {
    relay.NegativeOp: arith.NegfOp,
    relay.ExpOp: mathd.ExpOp,
    relay.LogOp: mathd.LogOp,
    relay.SqrtOp: mathd.SqrtOp,
    relay.RsqrtOp: mathd.RsqrtOp,
    relay.TanhOp: mathd.TanhOp,
    relay.AbsOp: mathd.AbsFOp,
    relay.ErfOp: mathd.ErfOp,
}

BINARY_SCALAR: dict[type[Operation], Callable[[SSAValue, SSAValue], Operation]] = {
    relay.AddOp: arith.AddfOp,
    relay.SubtractOp: arith.SubfOp,
    relay.MultiplyOp: arith.MulfOp,
    relay.DivideOp: arith.DivfOp,
    relay.MaximumOp: arith.MaximumfOp,
    relay.MinimumOp: arith.MinimumfOp,
    relay.PowerOp: mathd.PowFOp,
}


class GroupEmitter(KernelBuilder):
    """Emits the scalar code of one fused group: `value_at(v, idx)` for any value of the group."""

    def __init__(self, constants: Builder, inputs: dict[SSAValue, SSAValue]):
        super().__init__(constants)
        self.inputs = inputs  # group block argument -> kernel memref argument

    def value_at(self, value: SSAValue, idx: Index) -> SSAValue:
        """The f32 element of the tensor `value` at `idx`."""
        key = self.element(value, idx)
        found = self.lookup(key)
        if found is None:
            self.compute_reads(value, list(idx))
            found = self.memo(key, lambda: self.compute(value, list(idx)))
        return found

    def compute_reads(self, value: SSAValue, idx: list[SSAValue]) -> None:
        """Computes, operands first and with a stack instead of recursion, the elements `value`
        at `idx` reads in this scope through elementwise and injective ops (`reads`), so
        `compute` finds them memoised: a chain of 10,000 such ops costs no Python recursion.
        An op that reads its operands inside a loop or branch (reductions, concatenate, pad)
        asks for them there, where they are computed in turn; its own result is not."""
        stack: list[tuple[SSAValue, list[SSAValue], bool]] = [
            (operand, operand_idx, False) for operand, operand_idx in reversed(self.reads(value, idx) or [])
        ]
        while stack:
            v, i, operands_done = stack.pop()
            key = self.element(v, i)
            if self.lookup(key) is not None:
                continue
            reads = None if operands_done else self.reads(v, i)
            if not reads:
                self.scopes[-1].memo[key] = self.compute(v, i)
                continue
            stack.append((v, i, True))
            stack.extend((operand, operand_idx, False) for operand, operand_idx in reversed(reads))

    def reads(self, value: SSAValue, idx: list[SSAValue]) -> list[tuple[SSAValue, list[SSAValue]]] | None:
        """The elements an elementwise or injective op's result at `idx` is computed from, in
        the order it asks for them (index arithmetic only, emitted here); None for a group
        input and for the ops that read their operands inside a region of their own."""
        op = value.owner
        if value in self.inputs or not isinstance(op, Operation):
            return None
        if isinstance(op, relay.UnaryElemwiseOp):
            return [(op.data, idx)]
        if isinstance(op, relay.BinaryBroadcastOp):
            return [(x, self.broadcast_index(idx, shape_of(x))) for x in (op.lhs, op.rhs)]
        if isinstance(op, relay.BiasAddOp):
            return [(op.data, idx), (op.bias, [idx[op.axis_value]])]
        if isinstance(op, relay.CastOp):
            return [(op.data, idx)]
        if isinstance(op, relay.WhereOp):
            return [(x, self.broadcast_index(idx, shape_of(x))) for x in op.operands]
        for kinds, source_index in INJECTIVE:
            if isinstance(op, kinds):
                return [(op.operands[0], source_index(self, op, idx))]  # their one operand, `data`
        if isinstance(op, relay.PadOp):
            return self.pad_reads(op, idx)
        if isinstance(op, relay.ConcatenateOp) and not self.may_branch():
            return self.concat_reads(list(op.inputs), op.axis_value, idx)
        return None

    def element(self, value: SSAValue, idx: Index) -> tuple[SSAValue, tuple[SSAValue, ...]]:
        """The memo key of `value` at `idx`: an axis of size 1 is always at index 0, whichever
        value stands for it (a broadcast's constant 0, a schedule's loop variable or computed
        image number), so an element remembered under one is found under the other."""
        shape = shape_of(value)
        return value, tuple(self.index(0) if d == 1 else i for i, d in zip(idx, shape, strict=True))

    def compute(self, value: SSAValue, idx: list[SSAValue]) -> SSAValue:
        if value in self.inputs:
            return self.emit(memref.LoadOp.get(self.inputs[value], idx))
        op = value.owner
        assert isinstance(op, Operation)
        for kinds, method in DISPATCH:
            if isinstance(op, kinds):
                return method(self, op, idx)
        raise AssertionError(f"no lowering for '{op.name}'; the pass checks ops before lowering")

    # elementwise and broadcast

    def remember(self, value: SSAValue, idx: Index, result: SSAValue) -> None:
        """Make `result` the value of `value` at `idx` in the current scope: a schedule that
        computed it its own way (a sum in registers or in a scratch row)."""
        self.scopes[-1].memo[self.element(value, idx)] = result

    def store(self, value: SSAValue, ref: SSAValue, idx: Index) -> list[SSAValue]:
        """`ref[idx] = value`; returns no loop-carried values (a loop body that only stores)."""
        self.builder.insert(memref.StoreOp.get(value, ref, list(idx)))
        return []

    def operands_at(self, op: Operation, idx: list[SSAValue]) -> list[SSAValue]:
        """The operands' elements that `op`'s element at `idx` is computed from (`reads`)."""
        return [self.value_at(v, i) for v, i in self.reads(op.results[0], idx) or []]

    def unary(self, op: relay.UnaryElemwiseOp, idx: list[SSAValue]) -> SSAValue:
        (x,) = self.operands_at(op, idx)
        if element_dtype(op.data) != FLOAT32:
            return scalar_dtypes.integer_unary(op, x, self.emit, self.scalar(0, i64), self.scalar(True, i1))
        if isinstance(op, relay.ReluOp):
            return self.emit(arith.MaximumfOp(x, self.f32(0.0)))
        if isinstance(op, relay.ClipOp):
            low = self.emit(arith.MaximumfOp(x, self.f32(op.a_min.value.data)))
            return self.emit(arith.MinimumfOp(low, self.f32(op.a_max.value.data)))
        if isinstance(op, relay.LeakyReluOp):  # NaN is not > 0, and alpha * NaN is NaN
            scaled = self.emit(arith.MulfOp(x, self.f32(op.alpha_value)))
            return self.emit(arith.SelectOp(self.emit(arith.CmpfOp(x, self.f32(0.0), "ogt")), x, scaled))
        if isinstance(op, relay.SigmoidOp):
            e = self.emit(mathd.ExpOp(self.emit(arith.NegfOp(x))))
            return self.emit(arith.DivfOp(self.f32(1.0), self.emit(arith.AddfOp(self.f32(1.0), e))))
        return self.emit(UNARY_SCALAR[type(op)](x))

    def binary(self, op: relay.BinaryBroadcastOp, idx: list[SSAValue]) -> SSAValue:
        lhs, rhs = self.operands_at(op, idx)
        if isinstance(op, relay.CompareOp) or element_dtype(op.lhs) != FLOAT32:
            return scalar_dtypes.typed_binary(op, lhs, rhs, self.emit, self.scalar(0, i64), self.scalar(1, i64))
        return self.emit(BINARY_SCALAR[type(op)](lhs, rhs))

    def cast(self, op: relay.CastOp, idx: list[SSAValue]) -> SSAValue:
        source, target = element_dtype(op.data), element_dtype(op.res)
        zero: Callable[[DType], SSAValue] = lambda d: self.scalar(0, d.element)  # noqa: E731
        (x,) = self.operands_at(op, idx)
        return scalar_dtypes.cast(x, source, target, self.emit, zero)

    def where(self, op: relay.WhereOp, idx: list[SSAValue]) -> SSAValue:
        """Both branches are computed (they are elementwise and cheap) and selected."""
        cond, x, y = self.operands_at(op, idx)
        return self.emit(arith.SelectOp(cond, x, y))

    def bias_add(self, op: relay.BiasAddOp, idx: list[SSAValue]) -> SSAValue:
        x, b = self.operands_at(op, idx)
        return self.emit(arith.AddfOp(x, b))

    # injective: the input at an index computed from the output's (the `*_index` methods)

    def injective(self, op: Operation, idx: list[SSAValue]) -> SSAValue:
        (x,) = self.operands_at(op, idx)
        return x

    def broadcast_to_index(self, op: relay.BroadcastToOp, idx: list[SSAValue]) -> list[SSAValue]:
        return self.broadcast_index(idx, shape_of(op.data))

    def expand_dims_index(self, op: relay.ExpandDimsOp, idx: list[SSAValue]) -> list[SSAValue]:
        count = len(shape_of(op.res)) - len(shape_of(op.data))  # the new axes, all of size 1
        start = relay.normalize_axis(op.axis.value.data, len(shape_of(op.data)) + 1)
        return idx[:start] + idx[start + count :]

    def reshape_index(self, op: relay.ReshapeOp, idx: list[SSAValue]) -> list[SSAValue]:
        """The input at the output's index, linearised and delinearised group by group
        (`reshape_groups`), so an axis the reshape keeps costs no division and a split or
        merged axis is divided within its group only."""
        src, dst = shape_of(op.data), shape_of(op.res)
        src_idx: list[SSAValue] = []
        for (s0, s1), (d0, d1) in reshape_groups(src, dst):
            src_idx += self.delinearize(self.linearize(idx[d0:d1], dst[d0:d1]), src[s0:s1])
        return src_idx

    def transpose_index(self, op: relay.TransposeOp, idx: list[SSAValue]) -> list[SSAValue]:
        src_idx: list[SSAValue] = list(idx)  # every position is overwritten (rank 0: none)
        for out_axis, in_axis in enumerate(op.permutation):
            src_idx[in_axis] = idx[out_axis]
        return src_idx

    def squeeze_index(self, op: relay.SqueezeOp, idx: list[SSAValue]) -> list[SSAValue]:
        removed, rest = op.squeezed_axes, iter(idx)
        return [self.index(0) if a in removed else next(rest) for a in range(len(shape_of(op.data)))]

    def strided_slice_index(self, op: relay.StridedSliceOp, idx: list[SSAValue]) -> list[SSAValue]:
        src: list[SSAValue] = []
        for i, s, extent in zip(idx, op.slices(), shape_of(op.data)):
            start, _, step = s.indices(extent)
            src.append(self.add_const(self.mul_const(i, step), start))
        return src

    def concatenate(self, op: relay.ConcatenateOp, idx: list[SSAValue]) -> SSAValue:
        return self.concat_value(list(op.inputs), op.axis_value, idx)

    def concat_value(self, inputs: list[SSAValue], axis: int, idx: list[SSAValue]) -> SSAValue:
        """The input holding `idx`, found by a balanced tree of `scf.if` on `idx[axis]` (each
        input read only in its own branch; depth log2 of the inputs, not their number: an
        unrolled LSTM's outputs are one concatenate of hundreds of steps), or picked with
        selects among the inputs left once the branches nest `BRANCH_NESTING` deep."""
        if len(inputs) == 1:
            return self.value_at(inputs[0], idx)
        if not self.may_branch():
            return self.concat_select(inputs, axis, idx)
        left, right = inputs[: len(inputs) // 2], inputs[len(inputs) // 2 :]
        extent = sum(shape_of(x)[axis] for x in left)
        shifted = idx[:axis] + [self.add_const(idx[axis], -extent)] + idx[axis + 1 :]
        (result,) = self.if_else(
            self.compare("slt", idx[axis], self.index(extent)),
            [element_dtype(inputs[0]).element],
            lambda: [self.concat_value(left, axis, idx)],
            lambda: [self.concat_value(right, axis, shifted)],
        )
        return result

    def may_branch(self) -> bool:
        """Whether a concatenate or pad may open one more branch here: past `BRANCH_NESTING`
        nested regions they select instead, so that a chain of thousands of them in one
        group nests no deeper (no recursion per op here, in the printers or in xDSL's passes)."""
        return len(self.scopes) <= BRANCH_NESTING

    def concat_reads(
        self, inputs: list[SSAValue], axis: int, idx: list[SSAValue]
    ) -> list[tuple[SSAValue, list[SSAValue]]]:
        """Every input that has elements along `axis`, at `idx` shifted to it and clamped into it."""
        reads: list[tuple[SSAValue, list[SSAValue]]] = []
        offset = 0
        for x in inputs:
            extent = shape_of(x)[axis]
            if extent > 0:
                j = self.add_const(idx[axis], -offset)
                j = self.max_index(self.index(0), self.min_index(j, self.index(extent - 1)))
                reads.append((x, idx[:axis] + [j] + idx[axis + 1 :]))
            offset += extent
        return reads

    def concat_select(self, inputs: list[SSAValue], axis: int, idx: list[SSAValue]) -> SSAValue:
        """The input holding `idx`, by a select chain over every input read at a clamped index."""
        reads = self.concat_reads(inputs, axis, idx)
        ends = list(itertools.accumulate(shape_of(x)[axis] for x, _ in reads))
        values = [self.value_at(x, i) for x, i in reads]
        result = values[-1]
        for value, end in zip(values[-2::-1], ends[-2::-1]):
            result = self.select(self.compare("slt", idx[axis], self.index(end)), value, result)
        return result

    def pad_index(self, op: relay.PadOp, idx: list[SSAValue]) -> tuple[list[SSAValue], SSAValue | None]:
        """The input's index for the output's `idx`: `idx - before` per axis, clamped to the
        border ("edge"), mirrored at it ("reflect") or modulo the axis length ("wrap"); and for
        "constant", the test that it is inside the input (None when no axis is padded)."""
        src: list[SSAValue] = []
        tests: list[SSAValue] = []
        for i, extent, (before, after) in zip(idx, shape_of(op.data), op.pads):
            zero, last = self.index(0), extent - 1
            padded = max(before, after) > 0
            if op.mode == "wrap" and padded:  # (i - before + k extent) % extent, k making it >= 0
                j = self.rem_const(self.add_const(i, -before + extent * -(-max(before, 0) // extent)), extent)
            else:
                j = self.add_const(i, -before)
            if op.mode == "edge" and padded:
                j = self.max_index(zero, self.min_index(j, self.index(last)))
            if op.mode == "reflect" and before > 0:
                j = self.select(self.compare("slt", j, zero), self.sub(zero, j), j)
            if op.mode == "reflect" and after > 0:
                j = self.select(self.compare("sgt", j, self.index(last)), self.sub(self.index(2 * last), j), j)
            if op.mode == "constant" and before > 0:
                tests.append(self.compare("sge", j, zero))
            if op.mode == "constant" and after > 0:
                tests.append(self.compare("slt", j, self.index(extent)))
            src.append(j)
        if not tests:
            return src, None
        inside = tests[0]
        for test in tests[1:]:
            inside = self.select(inside, test, inside)  # inside and test
        return src, inside

    def pad_reads(self, op: relay.PadOp, idx: list[SSAValue]) -> list[tuple[SSAValue, list[SSAValue]]] | None:
        """The input element a pad reads outside a branch: always when no axis is padded with
        the constant, else past `BRANCH_NESTING` (clamped into the input; none when it is empty)."""
        src, inside = self.pad_index(op, idx)
        if inside is None:
            return [(op.data, src)]
        if self.may_branch():
            return None
        if 0 in shape_of(op.data):
            return []
        zero = self.index(0)
        clamped = [self.max_index(zero, self.min_index(j, self.index(n - 1))) for j, n in zip(src, shape_of(op.data))]
        return [(op.data, clamped)]

    def pad(self, op: relay.PadOp, idx: list[SSAValue]) -> SSAValue:
        """The input at its index (`pad_index`), or outside the input ("constant") the pad
        value: one `scf.if`, so the input is read only inside it, or past `BRANCH_NESTING`
        a select of the input read at a clamped index."""
        src, inside = self.pad_index(op, idx)
        if inside is None or not self.may_branch():
            values = self.operands_at(op, idx)
            if inside is None:
                return values[0]
            return self.select(inside, values[0], self.f32(op.value)) if values else self.f32(op.value)
        (result,) = self.if_else(inside, [f32], lambda: [self.value_at(op.data, src)], lambda: [self.f32(op.value)])
        return result

    def take_index(self, op: relay.TakeOp, idx: list[SSAValue]) -> list[SSAValue]:
        """The input at the index the output's position in `indices` names: a constant one,
        or one loaded from the indices tensor, made non-negative and clipped into range."""
        axis, rank = op.axis_value, len(op.indices_shape)
        if op.runtime_indices is not None:
            return [*idx[:axis], self.runtime_index(op, idx[axis : axis + rank]), *idx[axis + rank :]]
        position = self.linearize(idx[axis : axis + rank], op.indices_shape)
        source = self.constant_index(op.normalized_indices, position)
        return [*idx[:axis], source, *idx[axis + rank :]]

    def runtime_index(self, op: relay.TakeOp, position: list[SSAValue]) -> SSAValue:
        """`indices[position]` as an index into the data's axis: + extent if negative, then
        clipped to [0, extent - 1] (TVM's take mode "clip")."""
        assert op.runtime_indices is not None
        extent = shape_of(op.data)[op.axis_value]
        value = self.value_at(op.runtime_indices, position)
        zero, size = self.scalar(0, i64), self.scalar(extent, i64)
        wrapped = self.emit(
            arith.SelectOp(self.emit(arith.CmpiOp(value, zero, "slt")), self.emit(arith.AddiOp(value, size)), value)
        )
        clipped = self.emit(
            arith.MinSIOp(self.emit(arith.MaxSIOp(wrapped, zero)), self.scalar(max(extent - 1, 0), i64))
        )
        return self.emit(arith.IndexCastOp(clipped, IndexType()))

    def constant_index(self, values: Sequence[int], position: SSAValue) -> SSAValue:
        """`values[position]` as index arithmetic: `values` split into runs of arithmetic
        progressions (a range is one run, a scalar index a constant), each run an affine
        function of the position, chosen by an `arith.select` chain on where runs start."""
        result = self.index(0)  # no values: the result has no elements
        start = 0
        while start < len(values):
            step = values[start + 1] - values[start] if start + 1 < len(values) else 0
            end = start + 1
            while end < len(values) and values[end] - values[end - 1] == step:
                end += 1
            run = self.add_const(self.mul_const(self.add_const(position, -start), step), values[start])
            result = run if start == 0 else self.select(self.compare("sge", position, self.index(start)), run, result)
            start = end
        return result

    # reductions

    def reduce(self, op: relay.ReduceOp, idx: list[SSAValue]) -> SSAValue:
        shape, axes = shape_of(op.data), op.reduced_axes
        kept_axes = [a for a in range(len(shape)) if a not in axes]
        outer = {a: idx[a] for a in kept_axes} if op.keeps_dims else dict(zip(kept_axes, idx))

        def at(ivs: Sequence[SSAValue]) -> list[SSAValue]:
            return [ivs[axes.index(a)] if a in axes else outer[a] for a in range(len(shape))]

        extents = [shape[a] for a in axes]
        ints = element_dtype(op.data) != FLOAT32  # int64 sum, max or min
        if isinstance(op, (relay.MaxOp, relay.MinOp)):
            combine = scalar_dtypes.extremum(isinstance(op, relay.MaxOp), ints)
            init = self.value_at(op.data, at([self.index(0)] * len(axes)))
        else:
            combine, init = (arith.AddiOp, self.scalar(0, i64)) if ints else (arith.AddfOp, self.f32(0.0))
        (total,) = self.loops(
            extents, [init], lambda ivs, accs: [self.emit(combine(accs[0], self.value_at(op.data, at(ivs))))]
        )
        if isinstance(op, relay.MeanOp):
            return self.emit(arith.DivfOp(total, self.f32(float(math.prod(extents)))))
        return total

    def softmax(self, op: relay.SoftmaxOp, idx: list[SSAValue]) -> SSAValue:
        """One element; the max and the sum along the axis are recomputed for it."""
        axis = op.axis_value
        row = idx[:axis] + idx[axis + 1 :]
        shifted_exp, total = self.softmax_row(op, row)
        return self.emit(arith.DivfOp(shifted_exp(idx[axis]), total))

    def softmax_row(self, op: relay.SoftmaxOp, row: list[SSAValue]) -> tuple[Callable[[SSAValue], SSAValue], SSAValue]:
        """For the row at `row` (the index without the axis): `exp(x[k] - max)` and the sum."""
        axis, extent = op.axis_value, shape_of(op.data)[op.axis_value]

        def along(k: SSAValue) -> SSAValue:
            return self.value_at(op.data, row[:axis] + [k] + row[axis:])

        def larger(ks: list[SSAValue], accs: list[SSAValue]) -> list[SSAValue]:
            return [self.emit(arith.MaximumfOp(accs[0], along(ks[0])))]

        (peak,) = self.loops([extent], [along(self.index(0))], larger)

        def shifted_exp(k: SSAValue) -> SSAValue:
            return self.emit(mathd.ExpOp(self.emit(arith.SubfOp(along(k), peak))))

        (total,) = self.loops(
            [extent], [self.f32(0.0)], lambda ks, accs: [self.emit(arith.AddfOp(accs[0], shifted_exp(ks[0])))]
        )
        return shifted_exp, total

    def layer_norm(self, op: relay.LayerNormOp, idx: list[SSAValue]) -> SSAValue:
        """One element; the row's mean and 1/std are computed once per row in a scope (a
        schedule of whole rows asks for them first), else again for each element."""
        axis = op.axis_value
        mean, rstd = self.layer_norm_stats(op, idx[:axis])
        centred = self.emit(arith.SubfOp(self.value_at(op.data, idx), mean))
        scaled = self.emit(arith.MulfOp(self.emit(arith.MulfOp(centred, rstd)), self.value_at(op.gamma, idx[axis:])))
        return self.emit(arith.AddfOp(scaled, self.value_at(op.beta, idx[axis:])))

    def layer_norm_stats(self, op: relay.LayerNormOp, row: list[SSAValue]) -> tuple[SSAValue, SSAValue]:
        """The mean and `1 / sqrt(var + epsilon)` of the row at `row` (the index of the axes
        before `axis`): two loops over the row. The mean is the row's first element plus the
        mean of the differences from it, so a row of equal values has exactly its value as
        mean and 0 as variance, whatever order the sums take (split-reductions reorders
        them); the (biased) variance is summed about the mean."""
        extents = list(shape_of(op.data)[op.axis_value :])
        count = math.prod(extents)

        def along(ivs: Sequence[SSAValue]) -> SSAValue:
            return self.value_at(op.data, [*row, *ivs])

        def mean() -> SSAValue:
            if count == 0:  # no elements to normalise, and none to read
                return self.f32(0.0)
            first = along([self.index(0)] * len(extents))

            def step(ivs: list[SSAValue], accs: list[SSAValue]) -> list[SSAValue]:
                return [self.emit(arith.AddfOp(accs[0], self.emit(arith.SubfOp(along(ivs), first))))]

            (total,) = self.loops(extents, [self.f32(0.0)], step)
            return self.emit(arith.AddfOp(first, self.emit(arith.DivfOp(total, self.f32(float(count))))))

        average = self.memo(("layer_norm_mean", op.res, tuple(row)), mean)

        def rstd() -> SSAValue:
            def step(ivs: list[SSAValue], accs: list[SSAValue]) -> list[SSAValue]:
                d = self.emit(arith.SubfOp(along(ivs), average))
                return [self.emit(arith.AddfOp(accs[0], self.emit(arith.MulfOp(d, d))))]

            (total,) = self.loops(extents, [self.f32(0.0)], step)
            variance = self.emit(arith.DivfOp(total, self.f32(float(count))))
            return self.emit(mathd.RsqrtOp(self.emit(arith.AddfOp(variance, self.f32(op.epsilon_value)))))

        return average, self.memo(("layer_norm_rstd", op.res, tuple(row)), rstd)

    # anchors

    def dot_factors(
        self, op: relay.DenseOp | relay.BatchMatmulOp | relay.MatmulOp, idx: list[SSAValue]
    ) -> tuple[int, Callable[[SSAValue], SSAValue], Callable[[SSAValue], SSAValue]]:
        """The depth of the dot product giving output `idx` of `op`, and its two factors at k.
        Dense's weight and batch_matmul's rhs are stored transposed (both factors unit-stride
        in k); matmul's rhs is not (its factor steps by a row in k). Batch axes broadcast."""
        if isinstance(op, relay.DenseOp):
            return (
                shape_of(op.weight)[1],
                lambda k: self.value_at(op.data, idx[:-1] + [k]),
                lambda k: self.value_at(op.weight, [idx[-1], k]),
            )
        *batch, i, j = idx
        x_batch = self.broadcast_index(batch, shape_of(op.lhs)[:-2])
        y_batch = self.broadcast_index(batch, shape_of(op.rhs)[:-2])
        if isinstance(op, relay.MatmulOp):
            return (
                shape_of(op.lhs)[-1],
                lambda k: self.value_at(op.lhs, [*x_batch, i, k]),
                lambda k: self.value_at(op.rhs, [*y_batch, k, j]),
            )
        return (
            shape_of(op.lhs)[2],
            lambda k: self.value_at(op.lhs, [*x_batch, i, k]),
            lambda k: self.value_at(op.rhs, [*y_batch, j, k]),
        )

    def dot_products(
        self, op: relay.DenseOp | relay.BatchMatmulOp | relay.MatmulOp, idxs: list[list[SSAValue]]
    ) -> list[SSAValue]:
        """The outputs of `op` at `idxs`, summed in one loop over k with an accumulator each.
        A factor several outputs share (x[i, k] across a block of j) is loaded once per k:
        `value_at` memoises it in the loop body."""
        depth = self.dot_factors(op, idxs[0])[0]
        factors = [self.dot_factors(op, idx)[1:] for idx in idxs]

        def step(ks: list[SSAValue], accs: list[SSAValue]) -> list[SSAValue]:
            products = [self.emit(arith.MulfOp(lhs(ks[0]), rhs(ks[0]))) for lhs, rhs in factors]
            return [self.emit(arith.AddfOp(acc, p)) for acc, p in zip(accs, products)]

        return self.loops([depth], [self.f32(0.0)] * len(idxs), step)

    def dense(self, op: relay.DenseOp, idx: list[SSAValue]) -> SSAValue:
        return self.dot_products(op, [idx])[0]

    def batch_matmul(self, op: relay.BatchMatmulOp | relay.MatmulOp, idx: list[SSAValue]) -> SSAValue:
        return self.dot_products(op, [idx])[0]

    def conv_channel_base(self, op: relay.Conv2DOp, o: SSAValue) -> SSAValue:
        """The first input channel of output channel `o`'s group."""
        out_c, in_c = shape_of(op.weight)[:2]
        group = self.div_const(o, out_c // op.group_count) if op.group_count > 1 else self.index(0)
        return self.mul_const(group, in_c)

    def conv2d(self, op: relay.Conv2DOp, idx: list[SSAValue]) -> SSAValue:
        """One output element: a sum over the input channels and the window taps inside the
        input (the padding contributes zeros, so its taps are skipped by the loop bounds)."""
        n, o, oh, ow = idx
        _, _, height, width = shape_of(op.data)
        _, in_c, kh, kw = shape_of(op.weight)
        (sh, sw), (dh, dw) = op.stride_values, op.dilation_values
        top, left, _, _ = op.padding_values
        channel_base = self.conv_channel_base(op, o)
        row0 = self.add_const(self.mul_const(oh, sh), -top)  # the input row of tap row 0
        col0 = self.add_const(self.mul_const(ow, sw), -left)

        def step(ivs: list[SSAValue], accs: list[SSAValue]) -> list[SSAValue]:
            c, i, j = ivs
            ih, iw = self.add(row0, self.mul_const(i, dh)), self.add(col0, self.mul_const(j, dw))
            x = self.value_at(op.data, [n, self.add(channel_base, c), ih, iw])
            w = self.value_at(op.weight, [o, c, i, j])
            return [self.emit(arith.AddfOp(accs[0], self.emit(arith.MulfOp(x, w))))]

        if (kh, kw) == (1, 1) and not any(op.padding_values):
            # its one tap is inside the input: the channels' loop innermost, which the C
            # target vectorises as a reduction (an SE block's 1 x 1 convs of one pixel, 960 ->
            # 240 channels: a scalar chain of adds under two loops of one trip, 4 GFLOP/s)
            zero = self.index(0)
            return self.loops([in_c], [self.f32(0.0)], lambda ivs, accs: step([ivs[0], zero, zero], accs))[0]
        rows, cols = self.window_range(row0, dh, height, kh), self.window_range(col0, dw, width, kw)
        return self.loops([in_c, rows, cols], [self.f32(0.0)], step)[0]

    def pool2d(self, op: relay.Pool2DOp, idx: list[SSAValue]) -> SSAValue:
        """Max or average over the window taps inside the input (dilated: tap t at t * dilation).
        An average divides by the taps inside the input, or with `count_include_pad` by those
        inside the explicitly padded input (not the taps past it that `ceil_mode` adds)."""
        n, c, oh, ow = idx
        _, _, height, width = shape_of(op.data)
        (kh, kw), (sh, sw), (dh, dw) = op.window, op.stride_values, op.dilation_values
        top, left, bottom, right = op.padding_values
        row0 = self.add_const(self.mul_const(oh, sh), -top)
        col0 = self.add_const(self.mul_const(ow, sw), -left)
        rows, cols = self.window_range(row0, dh, height, kh), self.window_range(col0, dw, width, kw)

        def at(i: SSAValue, j: SSAValue) -> SSAValue:
            return self.value_at(
                op.data, [n, c, self.add(row0, self.mul_const(i, dh)), self.add(col0, self.mul_const(j, dw))]
            )

        if isinstance(op, relay.MaxPool2DOp):
            # Start from the first tap inside (the verifier checked every window has one).
            (peak,) = self.loops(
                [rows, cols], [at(rows[0], cols[0])], lambda ivs, accs: [self.emit(arith.MaximumfOp(accs[0], at(*ivs)))]
            )
            return peak
        (total,) = self.loops(
            [rows, cols], [self.f32(0.0)], lambda ivs, accs: [self.emit(arith.AddfOp(accs[0], at(*ivs)))]
        )
        if isinstance(op, relay.AvgPool2DOp) and op.counts_padding:
            rows = self.window_range(self.mul_const(oh, sh), dh, height + top + bottom, kh)
            cols = self.window_range(self.mul_const(ow, sw), dw, width + left + right, kw)
        count = self.mul(self.sub(rows[1], rows[0]), self.sub(cols[1], cols[0]))
        return self.emit(arith.DivfOp(total, self.index_to_f32(count)))

    def index_to_f32(self, value: SSAValue) -> SSAValue:
        known = self.known.get(value)
        if known is not None:
            return self.f32(float(known))
        return self.emit(arith.SIToFPOp(self.emit(arith.IndexCastOp(value, i64)), f32))

    def global_avg_pool2d(self, op: relay.GlobalAvgPool2DOp, idx: list[SSAValue]) -> SSAValue:
        n, c, _, _ = idx
        _, _, height, width = shape_of(op.data)
        (total,) = self.loops(
            [height, width],
            [self.f32(0.0)],
            lambda ivs, accs: [self.emit(arith.AddfOp(accs[0], self.value_at(op.data, [n, c, *ivs])))],
        )
        return self.emit(arith.DivfOp(total, self.f32(float(height * width))))

    def constant(self, op: relay.ConstantOp, idx: list[SSAValue]) -> SSAValue:
        value = op.value.get_values()[0]  # a splat (checked by the pass)
        assert isinstance(value, (int, float))
        return self.scalar(value, element_dtype(op.res).element)


def reshape_groups(src: Shape, dst: Shape) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """The reshape's axes in groups of equal size: pairs of [start, end) ranges of `src` and
    `dst` axes, cut wherever a prefix of `src` and a prefix of `dst` hold as many elements
    ([128, 256] -> [128, 4, 64]: (128) with (128), (256) with (4, 64)). A size-0 tensor is
    one group."""
    if math.prod(src) == 0:
        return [((0, len(src)), (0, len(dst)))]
    src_cuts = {math.prod(src[:k]): k for k in range(len(src) + 1)}  # the last k of each size
    dst_cuts = {math.prod(dst[:k]): k for k in range(len(dst) + 1)}
    cuts = [(src_cuts[size], dst_cuts[size]) for size in sorted(src_cuts.keys() & dst_cuts.keys())]
    return [((s0, s1), (d0, d1)) for (s0, d0), (s1, d1) in zip([(0, 0), *cuts], cuts) if (s0, d0) != (s1, d1)]


# injective relay op kind -> the index of its input that its output at an index reads
INJECTIVE: list[tuple[type[Operation], Callable[[GroupEmitter, Any, list[SSAValue]], list[SSAValue]]]] = [
    (relay.BroadcastToOp, GroupEmitter.broadcast_to_index),
    (relay.ExpandDimsOp, GroupEmitter.expand_dims_index),
    (relay.ReshapeOp, GroupEmitter.reshape_index),
    (relay.TransposeOp, GroupEmitter.transpose_index),
    (relay.SqueezeOp, GroupEmitter.squeeze_index),
    (relay.StridedSliceOp, GroupEmitter.strided_slice_index),
    (relay.TakeOp, GroupEmitter.take_index),
]

# relay op kind -> its scalar meaning at an index (an op is matched by the first kind it is)
DISPATCH: list[
    tuple[type[Operation] | tuple[type[Operation], ...], Callable[[GroupEmitter, Any, list[SSAValue]], SSAValue]]
] = [
    (relay.UnaryElemwiseOp, GroupEmitter.unary),
    (relay.BinaryBroadcastOp, GroupEmitter.binary),
    (relay.BiasAddOp, GroupEmitter.bias_add),
    (tuple(kind for kind, _ in INJECTIVE), GroupEmitter.injective),
    (relay.ConcatenateOp, GroupEmitter.concatenate),
    (relay.PadOp, GroupEmitter.pad),
    (relay.CastOp, GroupEmitter.cast),
    (relay.WhereOp, GroupEmitter.where),
    (relay.ReduceOp, GroupEmitter.reduce),
    (relay.SoftmaxOp, GroupEmitter.softmax),
    (relay.LayerNormOp, GroupEmitter.layer_norm),
    (relay.DenseOp, GroupEmitter.dense),
    (relay.BatchMatmulOp, GroupEmitter.batch_matmul),
    (relay.MatmulOp, GroupEmitter.batch_matmul),
    (relay.Conv2DOp, GroupEmitter.conv2d),
    (relay.Pool2DOp, GroupEmitter.pool2d),
    (relay.GlobalAvgPool2DOp, GroupEmitter.global_avg_pool2d),
    (relay.ConstantOp, GroupEmitter.constant),
]
