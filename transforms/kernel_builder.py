"""
The index-arithmetic builder: a kernel body's scopes, folded index arithmetic and loops.

`KernelBuilder` is what every schedule and every op's scalar code (`scalar_ops.GroupEmitter`)
emits through: index constants and f32 constants in front of the kernel's parallel nest;
integer ops on `index` values, folded when their operands are known and hash-consed per
scope; window bounds (`window_range`); linearising and delinearising indices; `scf.for`
nests with `iter_args`, `scf.if`, and the kernel's one `scf.parallel` nest
(`parallel_nest`).

Values are memoised per key in a stack of scopes that follows the region nesting, so a value
asked for twice in one scope is computed once, and only where it dominates its uses.
Constants go in front of the kernel's parallel nest; everything else where it is asked for:
xDSL's licm and cse, run after convert-relay-to-loops, hoist it out of loops and merge the
copies.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from xdsl.builder import Builder
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import FloatAttr, IndexType, IntegerAttr, TensorType, f32, i1
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint

Index = Sequence[SSAValue]
Shape = tuple[int, ...]
Extent = int | tuple[SSAValue, SSAValue]  # a loop's trip count from 0, or its [lo, hi) bounds
NDRANGE_DIMS = 3  # OpenCL guarantees three work-item dimensions
# `arith.cmpi` predicates on index values, folded where both operands are known.
INDEX_PREDICATES: dict[str, Callable[[int, int], bool]] = {
    "eq": lambda a, b: a == b,
    "ne": lambda a, b: a != b,
    "slt": lambda a, b: a < b,
    "sle": lambda a, b: a <= b,
    "sgt": lambda a, b: a > b,
    "sge": lambda a, b: a >= b,
}


def shape_of(value: SSAValue) -> Shape:
    """The static shape of a tensor (or memref) value."""
    ty = value.type
    assert isinstance(ty, TensorType), ty
    return tuple(ty.get_shape())


@dataclass
class Scope:
    """A block being filled: where to insert, and the values computed in it so far."""

    builder: Builder
    memo: dict[object, SSAValue] = field(default_factory=dict[object, SSAValue])


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
        self.known_flags: dict[SSAValue, bool] = {}  # i1 constants by value (folded compares)
        # `base * factor + phase` (0 <= phase < factor) by value (`phase_index`)
        self.phases: dict[SSAValue, tuple[SSAValue, int, int]] = {}
        self.const_cache: dict[tuple[str, int | str], SSAValue] = {}

    # --- insertion and memoisation ------------------------------------------------------------

    @property
    def builder(self) -> Builder:
        return self.scopes[-1].builder

    def emit(self, op: Operation) -> SSAValue:
        self.builder.insert(op)
        return op.results[0]

    @contextmanager
    def inside(self, block: Block) -> Generator[None, None, None]:
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

    def scalar(self, value: float | int | bool, element: Attribute) -> SSAValue:
        """A constant scalar of element type `element` (f32, i64 or i1), in front of the nest."""
        if element == f32:
            return self.f32(float(value))
        key = (str(element), int(value))
        if key not in self.const_cache:
            from xrelay.transforms.scalar_dtypes import scalar_constant

            op = scalar_constant(value, element)
            self.scopes[0].builder.insert(op)
            self.const_cache[key] = op.results[0]
        return self.const_cache[key]

    def int_op(self, kind: Callable[[SSAValue, SSAValue], Operation], a: SSAValue, b: SSAValue) -> SSAValue:
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
        split = self.phases.get(a)
        if split is not None and n > 1 and split[1] % n == 0:  # (b f + p) / n = b (f / n) + p / n
            base, factor, phase = split
            return self.add_const(self.mul_const(base, factor // n), phase // n)
        return a if n == 1 else self.int_op(arith.DivSIOp, a, self.index(n))

    def rem_const(self, a: SSAValue, n: int) -> SSAValue:
        """`a % n` for `a >= 0`."""
        ka = self.known.get(a)
        if ka is not None:
            return self.index(ka % n)
        split = self.phases.get(a)
        if split is not None and split[1] % n == 0:  # (b f + p) % n = p % n
            return self.index(split[2] % n)
        return self.index(0) if n == 1 else self.int_op(arith.RemSIOp, a, self.index(n))

    def phase_index(self, base: SSAValue, factor: int, phase: int) -> SSAValue:
        """`base * factor + phase` (`base >= 0`, `0 <= phase < factor`), whose division and
        remainder by a divisor of `factor` fold (`div_const`, `rem_const`): a loop over a
        row's `factor`-wide groups with the phase unrolled computes an interleave's index
        `i / factor`, `i % factor` (a reshape merging an axis of `factor`) with no division."""
        value = self.add_const(self.mul_const(base, factor), phase)
        if value not in self.known:
            self.phases[value] = (base, factor, phase)
        return value

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
        """`a predicate b` on index values; an i1 constant (`known_flags`) when both are known."""
        ka, kb = self.known.get(a), self.known.get(b)
        if ka is not None and kb is not None and predicate in INDEX_PREDICATES:
            return self.flag(INDEX_PREDICATES[predicate](ka, kb))
        return self.pure(("cmpi", predicate, a, b), lambda: arith.CmpiOp(a, b, predicate))

    def flag(self, value: bool) -> SSAValue:
        """An i1 constant, its value in `known_flags`."""
        key = ("flag", int(value))
        if key not in self.const_cache:
            op = arith.ConstantOp(IntegerAttr(int(value), i1))
            self.scopes[0].builder.insert(op)
            self.const_cache[key] = op.result
            self.known_flags[op.result] = value
        return self.const_cache[key]

    def select(self, cond: SSAValue, a: SSAValue, b: SSAValue) -> SSAValue:
        """`cond ? a : b` on index or i1 values."""
        if cond in self.known_flags:
            return a if self.known_flags[cond] else b
        return self.pure(("select", cond, a, b), lambda: arith.SelectOp(cond, a, b))

    def linearize(self, idx: Index, shape: Shape) -> SSAValue:
        flat, stride = self.index(0), 1
        for i, extent in reversed(list(zip(idx, shape))):
            if extent != 1:
                flat = self.add(flat, self.mul_const(i, stride))
            stride *= extent
        return flat

    def delinearize(self, flat: SSAValue, shape: Shape) -> list[SSAValue]:
        if math.prod(shape) == 0:  # a size-0 tensor is never indexed: its loop has no trips
            return [self.index(0) for _ in shape]
        idx: list[SSAValue] = []
        stride = math.prod(shape)
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
        """`scf.if`; the taken branch's code alone where `cond` is known (`known_flags`)."""
        if cond in self.known_flags:
            return (then if self.known_flags[cond] else otherwise)()
        blocks = Block(), Block()
        for block, branch in zip(blocks, (then, otherwise)):
            with self.inside(block):
                self.builder.insert(scf.YieldOp(*branch()))
        op = scf.IfOp(cond, list(types), Region(blocks[0]), Region(blocks[1]))
        self.builder.insert(op)
        return list(op.results)

    def parallel_nest(self, shape: Shape, body: Callable[[list[SSAValue]], object]) -> scf.ParallelOp:
        """The kernel's single parallel nest over `shape`; `body(idx)` emits one work item's code.

        Size-1 axes get no loop (their index is 0), so an NCHW result with N = 1 still fills the
        NDRange. The outer loop spans the first NDRANGE_DIMS other axes, an inner one the rest;
        with no such axis, the outer loop has extent 1.
        """
        axes = [a for a, extent in enumerate(shape) if extent != 1]
        outer, inner = axes[:NDRANGE_DIMS], axes[NDRANGE_DIMS:]

        def loop(loop_axes: list[int], fill: Callable[[list[SSAValue]], object]) -> scf.ParallelOp:
            extents = [shape[a] for a in loop_axes] or [1]
            block = Block(arg_types=[IndexType()] * len(extents))
            with self.inside(block):
                fill(list(block.args[: len(loop_axes)]))
                self.builder.insert(scf.ReduceOp())
            zeros, ones = [self.index(0)] * len(extents), [self.index(1)] * len(extents)
            return scf.ParallelOp(zeros, [self.index(e) for e in extents], ones, Region(block))

        def index(ivs: list[SSAValue]) -> list[SSAValue]:
            by_axis = dict(zip(outer + inner, ivs))
            return [by_axis.get(a, self.index(0)) for a in range(len(shape))]

        def fill_outer(ivs: list[SSAValue]) -> None:
            if not inner:
                body(index(ivs))
                return
            self.builder.insert(loop(inner, lambda inner_ivs: body(index(ivs + inner_ivs))))

        return loop(outer, fill_outer)
