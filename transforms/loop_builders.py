"""
Scalar code for a fused group: the value of a relay tensor at an index, as loop-level IR.

`GroupEmitter.value_at(v, idx)` emits, at the current insertion point, the ops that compute the
f32 element of tensor `v` at the index values `idx` (one `index` SSA value per axis). A group
input is a `memref.load`; every other value is computed from its operands' values at derived
indices, recursively, so producers are fused into their consumer's loop body and no
intermediate buffer is written:

- elementwise and broadcast ops apply `arith`/`math` ops to their operands' values at the
  (broadcast) index;
- injective ops only rewrite the index: reshape linearises and delinearises (`divsi`/`remsi`),
  transpose permutes, squeeze/expand_dims drop or insert zeros, strided_slice scales and
  shifts, concatenate picks its input with an `scf.if` chain;
- reductions, dense, batch_matmul, conv2d, pooling and softmax are `scf.for` nests with
  `iter_args` inside the work item; a padded window's loops run over the taps inside the
  input only (`window_range`: bounds from index min/max, no test per tap).

A group whose result is a conv2d (plus elementwise consumers) is computed a row per work
item instead (`store_conv_rows`): the sums of an output row accumulate in a scratch row
(`memref.alloca`) in an order whose innermost loop is unit-stride and carries nothing. A
group whose result has the shape of its dense or batch_matmul is computed a block of outputs
per work item (`store_matmul_block`): one loop over k with an accumulator per output, so each
loaded x[i, k] and w[j, k] serves a row or column of the block (register blocking); or, for
short dot products in C, whole rows per work item (`store_matmul_rows`): the rhs copied
transposed into scratch, the rows' sums in scratch, the innermost loop unit-stride over j.

Values are memoised per (value, index) in a stack of scopes that follows the region nesting,
so a value used twice at one index is computed once, and only where it dominates its uses.
Index arithmetic folds constants (a size-1 axis costs nothing); constants go in front of the
kernel's parallel nest; everything else where it is asked for: xDSL's licm and cse, run
after this pass, hoist it out of loops and merge the copies (see KernelBuilder).

A softmax that is its group's result is computed a row per work item: the parallel nest spans
the axes but the softmax axis, and each work item finds the row's max and sum with `scf.for`
loops, then stores the row in a third loop. A softmax inside a group (fuse-ops never makes one:
softmax is Opaque) recomputes the max and the sum for each element it is asked for, which is
quadratic in the axis length but needs no scratch buffer and no barrier.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from xdsl.builder import Builder
from xdsl.dialects import arith, memref, scf
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import FloatAttr, IndexType, IntegerAttr, f32, i64
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint

from xrelay.dialects import relay

Index = Sequence[SSAValue]
Shape = tuple[int, ...]
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


def shape_of(value: SSAValue) -> Shape:
    return tuple(value.type.get_shape())


@dataclass
class Scope:
    """A block being filled: where to insert, and the values computed in it so far."""

    builder: Builder
    memo: dict[object, SSAValue] = field(default_factory=dict)


class KernelBuilder:
    """Builds a kernel body: nested scopes, folded index arithmetic, loops and branches.

    Scope 0 is the kernel's entry block (constants only); scope 1 the outer parallel body;
    deeper scopes are loop and branch bodies. Everything is emitted in the scope that asks
    for it: hoisting what a loop does not change, and merging the copies that sibling loops
    then compute, is left to xDSL's licm and cse, which the compile pipeline runs next. The
    kernels came out as with the hoisting this class did by hand before (all of
    bench/kernels.py's and the tests'; of 1062 from 400 random graphs, 12 differ: index
    arithmetic is no longer speculated out of an scf.if, and cse merges float ops a group
    computed twice).

    Index arithmetic is folded here, though canonicalize could fold it afterwards: equal
    indices must be one SSA value while the kernel is built, because `value_at` memoises by
    the index's values. Left to canonicalize, `dense(1x784, 256x784) + bias` lost its
    register block (the bias's size-1 batch index is the constant 0, the block's was `0 * 1
    + 0`): four dot-product loops instead of one with four sums, C 10.2 -> 13.0 us (medians
    of 200 calls).
    """

    def __init__(self, constants: Builder):
        self.scopes: list[Scope] = [Scope(constants)]
        self.known: dict[SSAValue, int] = {}  # index constants by value
        self.const_cache: dict[tuple[str, int | str], SSAValue] = {}

    # --- insertion and memoisation ------------------------------------------------------------

    @property
    def builder(self) -> Builder:
        return self.scopes[-1].builder

    def emit(self, op: Operation) -> SSAValue:
        self.builder.insert(op)
        return op.results[0]

    @contextmanager
    def inside(self, block: Block) -> Iterator[None]:
        """Emit at the end of `block`, with a memo scope that dies with it."""
        self.scopes.append(Scope(Builder(InsertPoint.at_end(block))))
        try:
            yield
        finally:
            self.scopes.pop()

    def lookup(self, key: object) -> SSAValue | None:
        for scope in reversed(self.scopes):
            if key in scope.memo:
                return scope.memo[key]
        return None

    def memo(self, key: object, make: Callable[[], SSAValue]) -> SSAValue:
        found = self.lookup(key)
        if found is None:
            found = self.scopes[-1].memo[key] = make()
        return found

    def pure(self, key: object, make: Callable[[], Operation]) -> SSAValue:
        """A pure integer op, emitted once in the scopes that see it (hash-consed by `key`)."""
        return self.memo(key, lambda: self.emit(make()))

    # --- constants and index arithmetic -------------------------------------------------------

    def index(self, n: int) -> SSAValue:
        key = ("index", n)
        if key not in self.const_cache:
            op = arith.ConstantOp(IntegerAttr(n, IndexType()))
            self.scopes[0].builder.insert(op)
            self.const_cache[key] = op.result
            self.known[op.result] = n
        return self.const_cache[key]

    def f32(self, x: float) -> SSAValue:
        key = ("f32", repr(float(x)))  # (repr: -0.0 is not 0.0)
        if key not in self.const_cache:
            op = arith.ConstantOp(FloatAttr(float(x), f32))
            self.scopes[0].builder.insert(op)
            self.const_cache[key] = op.result
        return self.const_cache[key]

    def int_op(self, kind: type[Operation], a: SSAValue, b: SSAValue) -> SSAValue:
        return self.pure((kind, a, b), lambda: kind(a, b))

    def add(self, a: SSAValue, b: SSAValue) -> SSAValue:
        ka, kb = self.known.get(a), self.known.get(b)
        if ka is not None and kb is not None:
            return self.index(ka + kb)
        if ka == 0:
            return b
        if kb == 0:
            return a
        return self.int_op(arith.AddiOp, a, b)

    def add_const(self, a: SSAValue, n: int) -> SSAValue:
        return self.add(a, self.index(n))

    def mul_const(self, a: SSAValue, n: int) -> SSAValue:
        ka = self.known.get(a)
        if ka is not None:
            return self.index(ka * n)
        if n == 0:
            return self.index(0)
        if n == 1:
            return a
        return self.int_op(arith.MuliOp, a, self.index(n))

    def mul(self, a: SSAValue, b: SSAValue) -> SSAValue:
        kb = self.known.get(b)
        if kb is not None:
            return self.mul_const(a, kb)
        ka = self.known.get(a)
        return self.mul_const(b, ka) if ka is not None else self.int_op(arith.MuliOp, a, b)

    def div_const(self, a: SSAValue, n: int) -> SSAValue:
        """`a / n` for `a >= 0`."""
        ka = self.known.get(a)
        if ka is not None:
            return self.index(ka // n)
        return a if n == 1 else self.int_op(arith.DivSIOp, a, self.index(n))

    def rem_const(self, a: SSAValue, n: int) -> SSAValue:
        """`a % n` for `a >= 0`."""
        ka = self.known.get(a)
        if ka is not None:
            return self.index(ka % n)
        return self.index(0) if n == 1 else self.int_op(arith.RemSIOp, a, self.index(n))

    def sub(self, a: SSAValue, b: SSAValue) -> SSAValue:
        ka, kb = self.known.get(a), self.known.get(b)
        if ka is not None and kb is not None:
            return self.index(ka - kb)
        if kb == 0:
            return a
        return self.int_op(arith.SubiOp, a, b)

    def ceil_div_const(self, a: SSAValue, n: int) -> SSAValue:
        """`ceil(a / n)` for `a >= 0`; for `a < 0` some value <= 0 (`divsi` truncates), which
        is all a bound clamped at 0 needs."""
        ka = self.known.get(a)
        if ka is not None:
            return self.index(-(-ka // n))
        return a if n == 1 else self.int_op(arith.DivSIOp, self.add_const(a, n - 1), self.index(n))

    def max_index(self, a: SSAValue, b: SSAValue) -> SSAValue:
        ka, kb = self.known.get(a), self.known.get(b)
        if ka is not None and kb is not None:
            return self.index(max(ka, kb))
        return self.select(self.compare("sgt", a, b), a, b)

    def min_index(self, a: SSAValue, b: SSAValue) -> SSAValue:
        ka, kb = self.known.get(a), self.known.get(b)
        if ka is not None and kb is not None:
            return self.index(min(ka, kb))
        return self.select(self.compare("slt", a, b), a, b)

    def window_range(self, offset: SSAValue, scale: int, size: int, count: int) -> tuple[SSAValue, SSAValue]:
        """The `t` in `[0, count)` with `0 <= offset + t * scale < size` (scale > 0), as bounds
        `[lo, hi)`: a padded window's taps that fall inside the input. Computing the range
        once replaces a bounds check per tap (an `scf.if` in the innermost loop, which kept
        C conv2d scalar); `hi <= lo` means no tap is inside, and a loop over it runs 0 times.
        """
        lo = self.ceil_div_const(self.sub(self.index(0), offset), scale)
        hi = self.ceil_div_const(self.sub(self.index(size), offset), scale)
        return self.max_index(self.index(0), lo), self.min_index(self.index(count), hi)

    def compare(self, predicate: str, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.pure(("cmpi", predicate, a, b), lambda: arith.CmpiOp(a, b, predicate))

    def select(self, cond: SSAValue, a: SSAValue, b: SSAValue) -> SSAValue:
        """`cond ? a : b` on index or i1 values."""
        return self.pure(("select", cond, a, b), lambda: arith.SelectOp(cond, a, b))

    def linearize(self, idx: Index, shape: Shape) -> SSAValue:
        flat, stride = self.index(0), 1
        for i, extent in reversed(list(zip(idx, shape))):
            if extent != 1:
                flat = self.add(flat, self.mul_const(i, stride))
            stride *= extent
        return flat

    def delinearize(self, flat: SSAValue, shape: Shape) -> list[SSAValue]:
        idx, stride = [], math.prod(shape)
        for axis, extent in enumerate(shape):
            stride //= extent
            if extent == 1:
                idx.append(self.index(0))
                continue
            quotient = self.div_const(flat, stride)
            outermost = all(e == 1 for e in shape[:axis])  # flat / stride < extent already
            idx.append(quotient if outermost else self.rem_const(quotient, extent))
        return idx

    def broadcast_index(self, idx: Index, operand_shape: Shape) -> list[SSAValue]:
        """The operand's index for numpy broadcasting to the index's shape."""
        lead = len(idx) - len(operand_shape)
        return [self.index(0) if d == 1 else idx[lead + a] for a, d in enumerate(operand_shape)]

    # --- structured control flow --------------------------------------------------------------

    def loops(
        self,
        extents: Sequence[Extent],
        inits: Sequence[SSAValue],
        body: Callable[[list[SSAValue], list[SSAValue]], list[SSAValue]],
        ivs: tuple[SSAValue, ...] = (),
    ) -> list[SSAValue]:
        """A nest of `scf.for` carrying `inits`; `body(ivs, accs)` gives the next accs. An extent
        is a trip count from 0, or `(lo, hi)` index values defined before the nest."""
        if len(ivs) == len(extents):
            return body(list(ivs), list(inits))
        block = Block(arg_types=[IndexType(), *(v.type for v in inits)])
        with self.inside(block):
            nxt = self.loops(extents, block.args[1:], body, (*ivs, block.args[0]))
            self.builder.insert(scf.YieldOp(*nxt))
        extent = extents[len(ivs)]
        lo, hi = (self.index(0), self.index(extent)) if isinstance(extent, int) else extent
        loop = scf.ForOp(lo, hi, self.index(1), list(inits), block)
        self.builder.insert(loop)
        return list(loop.results)

    def if_else(
        self,
        cond: SSAValue,
        types: Sequence[Attribute],
        then: Callable[[], list[SSAValue]],
        otherwise: Callable[[], list[SSAValue]],
    ) -> list[SSAValue]:
        blocks = Block(), Block()
        for block, branch in zip(blocks, (then, otherwise)):
            with self.inside(block):
                self.builder.insert(scf.YieldOp(*branch()))
        op = scf.IfOp(cond, list(types), Region(blocks[0]), Region(blocks[1]))
        self.builder.insert(op)
        return list(op.results)


class GroupEmitter(KernelBuilder):
    """Emits the scalar code of one fused group: `value_at(v, idx)` for any value of the group."""

    def __init__(self, constants: Builder, inputs: dict[SSAValue, SSAValue]):
        super().__init__(constants)
        self.inputs = inputs  # group block argument -> kernel memref argument

    def value_at(self, value: SSAValue, idx: Index) -> SSAValue:
        """The f32 element of the tensor `value` at `idx`."""
        return self.memo((value, tuple(idx)), lambda: self.compute(value, list(idx)))

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

    def unary(self, op: relay.UnaryElemwiseOp, idx: list[SSAValue]) -> SSAValue:
        x = self.value_at(op.data, idx)
        if isinstance(op, relay.ReluOp):
            return self.emit(arith.MaximumfOp(x, self.f32(0.0)))
        if isinstance(op, relay.ClipOp):
            low = self.emit(arith.MaximumfOp(x, self.f32(op.a_min.value.data)))
            return self.emit(arith.MinimumfOp(low, self.f32(op.a_max.value.data)))
        if isinstance(op, relay.SigmoidOp):
            e = self.emit(mathd.ExpOp(self.emit(arith.NegfOp(x))))
            return self.emit(arith.DivfOp(self.f32(1.0), self.emit(arith.AddfOp(self.f32(1.0), e))))
        return self.emit(UNARY_SCALAR[type(op)](x))

    def binary(self, op: relay.BinaryBroadcastOp, idx: list[SSAValue]) -> SSAValue:
        lhs = self.value_at(op.lhs, self.broadcast_index(idx, shape_of(op.lhs)))
        rhs = self.value_at(op.rhs, self.broadcast_index(idx, shape_of(op.rhs)))
        return self.emit(BINARY_SCALAR[type(op)](lhs, rhs))

    def bias_add(self, op: relay.BiasAddOp, idx: list[SSAValue]) -> SSAValue:
        x = self.value_at(op.data, idx)
        b = self.value_at(op.bias, [idx[op.axis_value]])
        return self.emit(arith.AddfOp(x, b))

    def broadcast_to(self, op: relay.BroadcastToOp, idx: list[SSAValue]) -> SSAValue:
        return self.value_at(op.data, self.broadcast_index(idx, shape_of(op.data)))

    def expand_dims(self, op: relay.ExpandDimsOp, idx: list[SSAValue]) -> SSAValue:
        count = len(shape_of(op.res)) - len(shape_of(op.data))  # the new axes, all of size 1
        start = relay.normalize_axis(op.axis.value.data, len(shape_of(op.data)) + 1)
        return self.value_at(op.data, idx[:start] + idx[start + count :])

    # injective

    def reshape(self, op: relay.ReshapeOp, idx: list[SSAValue]) -> SSAValue:
        src, dst = shape_of(op.data), shape_of(op.res)
        if src == dst:
            return self.value_at(op.data, idx)
        return self.value_at(op.data, self.delinearize(self.linearize(idx, dst), src))

    def transpose(self, op: relay.TransposeOp, idx: list[SSAValue]) -> SSAValue:
        src_idx: list[SSAValue] = [idx[0]] * len(idx)
        for out_axis, in_axis in enumerate(op.permutation):
            src_idx[in_axis] = idx[out_axis]
        return self.value_at(op.data, src_idx)

    def squeeze(self, op: relay.SqueezeOp, idx: list[SSAValue]) -> SSAValue:
        removed, rest = op.squeezed_axes, iter(idx)
        src = [self.index(0) if a in removed else next(rest) for a in range(len(shape_of(op.data)))]
        return self.value_at(op.data, src)

    def strided_slice(self, op: relay.StridedSliceOp, idx: list[SSAValue]) -> SSAValue:
        src = []
        for i, s, extent in zip(idx, op.slices(), shape_of(op.data)):
            start, _, step = s.indices(extent)
            src.append(self.add_const(self.mul_const(i, step), start))
        return self.value_at(op.data, src)

    def concatenate(self, op: relay.ConcatenateOp, idx: list[SSAValue]) -> SSAValue:
        return self.concat_value(list(op.inputs), op.axis_value, idx)

    def concat_value(self, inputs: list[SSAValue], axis: int, idx: list[SSAValue]) -> SSAValue:
        first, extent = inputs[0], shape_of(inputs[0])[axis]
        if len(inputs) == 1:
            return self.value_at(first, idx)
        shifted = idx[:axis] + [self.add_const(idx[axis], -extent)] + idx[axis + 1 :]
        (result,) = self.if_else(
            self.compare("slt", idx[axis], self.index(extent)),
            [f32],
            lambda: [self.value_at(first, idx)],
            lambda: [self.concat_value(inputs[1:], axis, shifted)],
        )
        return result

    # reductions

    def reduce(self, op: relay.ReduceOp, idx: list[SSAValue]) -> SSAValue:
        shape, axes = shape_of(op.data), op.reduced_axes
        kept_axes = [a for a in range(len(shape)) if a not in axes]
        outer = {a: idx[a] for a in kept_axes} if op.keeps_dims else dict(zip(kept_axes, idx))

        def at(ivs: Sequence[SSAValue]) -> list[SSAValue]:
            return [ivs[axes.index(a)] if a in axes else outer[a] for a in range(len(shape))]

        extents = [shape[a] for a in axes]
        if isinstance(op, (relay.MaxOp, relay.MinOp)):
            combine = arith.MaximumfOp if isinstance(op, relay.MaxOp) else arith.MinimumfOp
            init = self.value_at(op.data, at([self.index(0)] * len(axes)))
        else:
            combine, init = arith.AddfOp, self.f32(0.0)
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

    def store_softmax_row(self, op: relay.SoftmaxOp, row: list[SSAValue], out: SSAValue) -> None:
        """A whole row of a softmax that is the group's result: max, sum, then a store loop."""
        axis, extent = op.axis_value, shape_of(op.data)[op.axis_value]
        shifted_exp, total = self.softmax_row(op, row)

        def store(ks: list[SSAValue], accs: list[SSAValue]) -> list[SSAValue]:
            value = self.emit(arith.DivfOp(shifted_exp(ks[0]), total))
            self.builder.insert(memref.StoreOp.get(value, out, row[:axis] + ks + row[axis:]))
            return []

        self.loops([extent], [], store)

    # anchors

    def dot_factors(
        self, op: relay.DenseOp | relay.BatchMatmulOp, idx: list[SSAValue]
    ) -> tuple[int, Callable[[SSAValue], SSAValue], Callable[[SSAValue], SSAValue]]:
        """The depth of the dot product giving output `idx` of `op`, and its two factors at k
        (both unit-stride in k: dense's weight and batch_matmul's rhs are stored transposed)."""
        if isinstance(op, relay.DenseOp):
            return (
                shape_of(op.weight)[1],
                lambda k: self.value_at(op.data, idx[:-1] + [k]),
                lambda k: self.value_at(op.weight, [idx[-1], k]),
            )
        b, i, j = idx
        x_batch = self.index(0) if shape_of(op.lhs)[0] == 1 else b
        y_batch = self.index(0) if shape_of(op.rhs)[0] == 1 else b
        return (
            shape_of(op.lhs)[2],
            lambda k: self.value_at(op.lhs, [x_batch, i, k]),
            lambda k: self.value_at(op.rhs, [y_batch, j, k]),
        )

    def dot_products(self, op: relay.DenseOp | relay.BatchMatmulOp, idxs: list[list[SSAValue]]) -> list[SSAValue]:
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

    def batch_matmul(self, op: relay.BatchMatmulOp, idx: list[SSAValue]) -> SSAValue:
        return self.dot_products(op, [idx])[0]

    def store_matmul_block(
        self,
        op: relay.DenseOp | relay.BatchMatmulOp,
        root: SSAValue,
        tile: list[SSAValue],
        out: SSAValue,
        block: Sequence[int],
    ) -> None:
        """The work item of output block `tile` of a group whose anchor `op` has the shape of
        its result `root`: the outputs tile[a] * block[a] + o[a] for every offset o < block
        (register blocking). Their dot products share one loop over k, one accumulator each,
        so each x[i, k] (and each w[j, k]) is loaded once per block row (column) instead of
        once per output; then `root` is stored at each, reading the anchor from its sum. A
        consumer reading the anchor at another index (a transpose of a square result)
        recomputes that element with `dot_products`.
        """
        firsts = [self.mul_const(t, b) for t, b in zip(tile, block)]
        offsets = itertools.product(*(range(b) for b in block))
        idxs = [[self.add_const(f, o) for f, o in zip(firsts, offset)] for offset in offsets]
        for idx, total in zip(idxs, self.dot_products(op, idxs)):
            self.scopes[-1].memo[(op.res, tuple(idx))] = total
        for idx in idxs:
            self.store(self.value_at(root, idx), out, idx)

    def store(self, value: SSAValue, ref: SSAValue, idx: Index) -> list[SSAValue]:
        """`ref[idx] = value`; returns no loop-carried values (a loop body that only stores)."""
        self.builder.insert(memref.StoreOp.get(value, ref, list(idx)))
        return []

    def store_matmul_rows(
        self, op: relay.DenseOp | relay.BatchMatmulOp, root: SSAValue, tile: list[SSAValue], out: SSAValue, rows: int
    ) -> None:
        """The work item of `rows` whole output rows of a group whose anchor `op` has the
        shape of its result `root`: rows tile[-1] * rows + r of the matrix at tile[:-1].
        The rhs (n x k, stored transposed) is copied into a k x n scratch matrix, then

            for r, for k:  acc[r, j] += x[i_r, k] * rhs_t[k, j]  for every j

        whose innermost loop is unit-stride and carries nothing (the i-k-j order of
        `store_conv_rows`), so no sum ends in a fold of vector lanes; then `root` is stored
        along the rows, reading the anchor from `acc`. For short dot products, where the
        lane folds of register blocks cost as much as their multiply-adds (C batch_matmul
        8x64x64, bench/kernels.py: 14-16 GFLOP/s in register blocks, 28-33 in this order).
        The copy costs one load and store per `rows` multiply-adds.
        """
        *lead, row_tile = tile
        first = self.mul_const(row_tile, rows)
        width = shape_of(op.res)[-1]
        depth, _, _ = self.dot_factors(op, [*lead, first, self.index(0)])
        rhs_t = self.emit(memref.AllocaOp.get(f32, shape=[depth, width]))
        acc = self.emit(memref.AllocaOp.get(f32, shape=[rows, width]))

        def copy(ivs: list[SSAValue], _: list[SSAValue]) -> list[SSAValue]:
            j, k = ivs
            return self.store(self.dot_factors(op, [*lead, first, j])[2](k), rhs_t, [k, j])

        self.loops([width, depth], [], copy)
        self.loops([rows, width], [], lambda ivs, _: self.store(self.f32(0.0), acc, ivs))

        def row_step(ivs: list[SSAValue], _: list[SSAValue]) -> list[SSAValue]:
            r, k = ivs
            x = self.dot_factors(op, [*lead, self.add(first, r), self.index(0)])[1](k)

            def accumulate(js: list[SSAValue], _: list[SSAValue]) -> list[SSAValue]:
                w = self.emit(memref.LoadOp.get(rhs_t, [k, js[0]]))
                total = self.emit(memref.LoadOp.get(acc, [r, js[0]]))
                return self.store(self.emit(arith.AddfOp(total, self.emit(arith.MulfOp(x, w)))), acc, [r, js[0]])

            return self.loops([width], [], accumulate)

        self.loops([rows, depth], [], row_step)

        def store(ivs: list[SSAValue], _: list[SSAValue]) -> list[SSAValue]:
            r, j = ivs
            idx = [*lead, self.add(first, r), j]
            self.scopes[-1].memo[(op.res, tuple(idx))] = self.emit(memref.LoadOp.get(acc, [r, j]))
            return self.store(self.value_at(root, idx), out, idx)

        self.loops([rows, width], [], store)

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

        rows, cols = self.window_range(row0, dh, height, kh), self.window_range(col0, dw, width, kw)
        return self.loops([in_c, rows, cols], [self.f32(0.0)], step)[0]

    def store_conv_rows(
        self, op: relay.Conv2DOp, root: SSAValue, row: list[SSAValue], out: SSAValue, block: int = 1
    ) -> None:
        """The work item of output rows `row` = (n, ob, oh) of a group whose anchor is `op`
        and whose result `root` has the conv's shape: the rows oh of output channels
        ob * block + b for b < block (all in one conv group). Two kinds of scratch rows: the
        output rows' sums, and an input row with its padding as zeros
        (`padded[left + iw] = data[.., ih, iw]`):

            for c, for i in <the window rows inside the input>:
                padded[left:left + width] = data[n, c, ih, :]
                for b, for j:  acc[b, ow] += padded[ow * sw + j * dw] * weight[o_b, c, i, j]  for every ow

        then a last loop stores `root` at each (n, o_b, oh, ow), reading the conv value from
        `acc`. The innermost loop has a constant trip count, walks both rows with unit
        stride (for stride 1), tests nothing and carries nothing, so C and OpenCL compilers
        vectorise it without reordering a sum: the i-k-j order of a matrix multiply. The
        copy costs one load per block * kw multiply-adds. One element per work item with the
        taps innermost and a test per tap ran at 1-4 GFLOP/s; this order at 11-34
        (bench/kernels.py). A consumer that reads the conv at another index (a transpose of
        a square result) recomputes that element with `conv2d`.
        """
        n, ob, oh = row
        _, _, height, width = shape_of(op.data)
        _, in_c, kh, kw = shape_of(op.weight)
        (sh, sw), (dh, dw) = op.stride_values, op.dilation_values
        top, left, _, _ = op.padding_values
        out_w = shape_of(op.res)[3]
        padded_w = (out_w - 1) * sw + (kw - 1) * dw + 1  # the input columns the windows span
        copied = max(0, min(width, padded_w - left))  # input columns inside them
        acc = self.emit(memref.AllocaOp.get(f32, shape=[block, out_w]))
        padded = self.emit(memref.AllocaOp.get(f32, shape=[padded_w]))
        zero = self.f32(0.0)

        def each_channel(extents: list[Extent], body: Callable[..., list[SSAValue]]) -> None:
            """Loops over the block's channels b (none for a block of 1) and `extents`."""
            if block == 1:
                self.loops(extents, [], lambda ivs, _: body(self.index(0), *ivs))
            else:
                self.loops([block, *extents], [], lambda ivs, _: body(*ivs))

        each_channel([out_w], lambda b, ow: self.store(zero, acc, [b, ow]))
        for lo, hi in ((0, min(left, padded_w)), (left + copied, padded_w)):  # the padding
            if lo < hi:
                self.loops([(self.index(lo), self.index(hi))], [], lambda ps, _: self.store(zero, padded, ps))
        first_o = self.mul_const(ob, block)
        channel_base = self.conv_channel_base(op, first_o)  # the block shares its conv group
        row0 = self.add_const(self.mul_const(oh, sh), -top)

        def input_row(ivs: list[SSAValue], _: list[SSAValue]) -> list[SSAValue]:
            c, i = ivs
            ih = self.add(row0, self.mul_const(i, dh))
            channel = self.add(channel_base, c)
            self.loops(
                [copied], [],
                lambda qs, _: self.store(self.value_at(op.data, [n, channel, ih, qs[0]]), padded, [self.add_const(qs[0], left)]),
            )  # fmt: skip
            each_channel([kw], lambda b, j: tap(c, i, b, j))
            return []

        def tap(c: SSAValue, i: SSAValue, b: SSAValue, j: SSAValue) -> list[SSAValue]:
            w = self.value_at(op.weight, [self.add(first_o, b), c, i, j])
            first = self.mul_const(j, dw)  # the padded column of tap j at ow = 0

            def accumulate(ows: list[SSAValue], _: list[SSAValue]) -> list[SSAValue]:
                x = self.emit(memref.LoadOp.get(padded, [self.add(first, self.mul_const(ows[0], sw))]))
                total = self.emit(memref.LoadOp.get(acc, [b, ows[0]]))
                return self.store(self.emit(arith.AddfOp(total, self.emit(arith.MulfOp(x, w)))), acc, [b, ows[0]])

            return self.loops([out_w], [], accumulate)

        self.loops([in_c, self.window_range(row0, dh, height, kh)], [], input_row)

        def store(b: SSAValue, ow: SSAValue) -> list[SSAValue]:
            idx = [n, self.add(first_o, b), oh, ow]
            self.scopes[-1].memo[(op.res, tuple(idx))] = self.emit(memref.LoadOp.get(acc, [b, ow]))
            return self.store(self.value_at(root, idx), out, idx)

        each_channel([out_w], store)

    def pool2d(self, op: relay.Pool2DOp, idx: list[SSAValue]) -> SSAValue:
        """Max or average over the window taps inside the input (average: of those taps only)."""
        n, c, oh, ow = idx
        _, _, height, width = shape_of(op.data)
        (kh, kw), (sh, sw) = op.window, op.stride_values
        top, left, _, _ = op.padding_values
        row0 = self.add_const(self.mul_const(oh, sh), -top)
        col0 = self.add_const(self.mul_const(ow, sw), -left)
        rows, cols = self.window_range(row0, 1, height, kh), self.window_range(col0, 1, width, kw)

        def at(i: SSAValue, j: SSAValue) -> SSAValue:
            return self.value_at(op.data, [n, c, self.add(row0, i), self.add(col0, j)])

        if isinstance(op, relay.MaxPool2DOp):
            # Start from the first tap inside (padding is smaller than the window, so there is one).
            (peak,) = self.loops(
                [rows, cols], [at(rows[0], cols[0])], lambda ivs, accs: [self.emit(arith.MaximumfOp(accs[0], at(*ivs)))]
            )
            return peak
        (total,) = self.loops(
            [rows, cols], [self.f32(0.0)], lambda ivs, accs: [self.emit(arith.AddfOp(accs[0], at(*ivs)))]
        )
        return self.emit(
            arith.DivfOp(total, self.index_to_f32(self.mul(self.sub(rows[1], rows[0]), self.sub(cols[1], cols[0]))))
        )

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
        return self.f32(float(op.value.get_values()[0]))  # a splat (checked by the pass)


DISPATCH: list[tuple[type[Operation] | tuple[type[Operation], ...], Callable]] = [
    (relay.UnaryElemwiseOp, GroupEmitter.unary),
    (relay.BinaryBroadcastOp, GroupEmitter.binary),
    (relay.BiasAddOp, GroupEmitter.bias_add),
    (relay.BroadcastToOp, GroupEmitter.broadcast_to),
    (relay.ExpandDimsOp, GroupEmitter.expand_dims),
    (relay.ReshapeOp, GroupEmitter.reshape),
    (relay.TransposeOp, GroupEmitter.transpose),
    (relay.SqueezeOp, GroupEmitter.squeeze),
    (relay.StridedSliceOp, GroupEmitter.strided_slice),
    (relay.ConcatenateOp, GroupEmitter.concatenate),
    (relay.ReduceOp, GroupEmitter.reduce),
    (relay.SoftmaxOp, GroupEmitter.softmax),
    (relay.DenseOp, GroupEmitter.dense),
    (relay.BatchMatmulOp, GroupEmitter.batch_matmul),
    (relay.Conv2DOp, GroupEmitter.conv2d),
    (relay.Pool2DOp, GroupEmitter.pool2d),
    (relay.GlobalAvgPool2DOp, GroupEmitter.global_avg_pool2d),
    (relay.ConstantOp, GroupEmitter.constant),
]
