"""
split-reductions: accumulate the pure reduction loops of opencl kernels in vector lanes.

Words. A *pure reduction loop* is an innermost `scf.for` whose only loop-carried
dependences are reductions: each f32 iter_arg has one use, its *combine* (`arith.addf`,
`mulf`, `maximumf` or `minimumf`) with a value of the same iteration, whose result is what
the loop yields in its place, and the body has no nested region and no store. Reordering
such a loop changes only the order of its reductions. A *lane* is one of the `lanes`
elements of a `vector<lanes x f32>` accumulator, `lanes` the kernel's device's vector width
in floats (`Features.vector_floats`).

Input: kernels made by convert-relay-to-loops (`func.func`s with a `relay.se_scope`
attribute). Only kernels of a device kind with `ordered_reductions` (opencl) change: an
OpenCL compiler keeps the order of a one-accumulator loop, so a work item's dot product
stays a chain of dependent scalar adds
(PoCL: a dense layer at 1.6-3 GFLOP/s). C kernels never see a vector: gcc reorders the same
loops itself under the C emitter's `#pragma omp simd reduction`.

Phase 1, find: the pure reduction loops with constant bounds, at least `lanes` trips, and a
body small enough for its copies (SPLIT_BODY_BUDGET).
Phase 2, split, in front of each loop:
- accumulators: per iter_arg VECTORS vectors in loops of WIDE_MIN_TRIPS or more (fewer when
  the loop carries several, e.g. a register block's sums: they are independent chains
  already), else one; each a `vector.broadcast` of the combine's identity (-0.0 for a sum,
  1 for a product) or of the initial value (max and min: they may see it twice);
- a wide loop taking `vectors * lanes` iterations per trip, then a narrow loop taking `lanes`
  into the first vector: each trip clones the body once per iteration (at the induction
  variable plus `u * step`) without its combines; the values of `lanes` consecutive
  iterations make a vector (`vector.broadcast` of the first, `vector.insert` of the
  others), which the combine, on vectors, adds into its accumulator;
- the fold: the vectors combine pairwise (a balanced tree, so the combines are
  independent), their lanes by `vector.reduction` (with `fastmath<reassoc>` for sums and
  products: the lanes may combine in any order), and the result with the initial value.
Phase 3, remainder: the loop itself runs the last `trips % lanes` iterations from the
folded value; it is erased when none are left.

Like `#pragma omp simd reduction` in C, this reassociates a float sum on purpose. Max and
min keep their NaN-wins meaning lane by lane. The OpenCL emitter prints the vectors as
`floatN` and the lane fold by halves (`.lo`, `.hi`); the C emitter rejects vector ops.

Not yet: bounds that are not constants, integer reductions, loops that store.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from typing import cast

from xdsl.builder import Builder
from xdsl.context import Context
from xdsl.dialects import arith, func, scf, vector
from xdsl.dialects.builtin import (
    DenseArrayBase,
    Float32Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    ModuleOp,
    VectorType,
    f32,
    i64,
)
from xdsl.dialects.utils.fast_math import FastMathFlag
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from xrelay.dialects.reductions import reduction_combines
from xrelay.dialects.se_scope import SCOPE_ATTR, SEScopeAttr
from xrelay.runtime.device_kinds import device_kind
from xrelay.runtime.machine import target_features

# A kernel's lanes are its device's vector width in floats (`Features.vector_floats`: one
# register). Sixteen independent scalar partials ran at 19-37 GFLOP/s on PoCL when LLVM's SLP
# vectoriser packed them into one register, but one scalar op after the loop (a fused relu)
# made it pick 4-wide vectors (0.5 -> 1.7 ms for the demo's first layer); explicit vectors run
# at 0.3-0.4 ms either way (PoCL turns the 16 loads of a vector into one vector load).

# VECTORS accumulators per iter_arg, so the adds of consecutive chunks do not wait on each
# other (the demo's first layer: 0.39 -> 0.34 ms, median of 60 interleaved launches). Only
# loops of WIDE_MIN_TRIPS or more get them: the body's 4 * 16 more copies made PoCL's cold
# build of bench/build_kernels.py (48 kernels, reductions of 96-128) 5.4 -> 6.9 s.
VECTORS = 4
WIDE_MIN_TRIPS = 256

# A split loop's body is copied (vectors + 1) * lanes times; above this many ops in all, the
# loop stays as it is (the copies would cost compile time for little gain). A 4 x 4 dense
# block's body is 41 ops, 1312 copied.
SPLIT_BODY_BUDGET = 2048

# The `vector.reduction` kind of each op a reduction loop may combine with
# (`reductions.REDUCTION_OPERATORS`).
COMBINING_KINDS: dict[type[Operation], vector.CombiningKindFlag] = {
    arith.AddfOp: vector.CombiningKindFlag.ADD,
    arith.MulfOp: vector.CombiningKindFlag.MUL,
    arith.MaximumfOp: vector.CombiningKindFlag.MAXIMUMF,
    arith.MinimumfOp: vector.CombiningKindFlag.MINIMUMF,
}

# The lanes of a sum or product start from the identity (-0.0: -0.0 + x is x for every x,
# 0.0 + -0.0 is 0.0); max and min from the initial value.
IDENTITIES: dict[type[Operation], float] = {arith.AddfOp: -0.0, arith.MulfOp: 1.0}


@dataclass(frozen=True)
class SplitReductionsPass(ModulePass):
    """Splits the pure reduction loops of opencl kernels into vector lanes."""

    name = "split-reductions"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel, lanes in vectorised_kernels(op):
            for found in find_reductions(kernel, lanes):
                inserter = Inserter(kernel, found.loop)
                accumulators = split(inserter, found)
                remainder(inserter, found, fold(inserter, found, accumulators))


def vectorised_kernels(module: ModuleOp) -> Iterator[tuple[func.FuncOp, int]]:
    """The kernels of device kinds whose compiler keeps a float sum's order (opencl's), each
    with the lanes of its device's vectors."""
    for op in module.ops:
        scope = op.attributes.get(SCOPE_ATTR)
        if not isinstance(op, func.FuncOp) or not isinstance(scope, SEScopeAttr):
            continue
        kind = device_kind(scope.device or "")
        if kind is not None and kind.ordered_reductions:
            yield op, target_features(scope.target or kind.target_kinds[0]).vector_floats


# --- Phase 1: find ----------------------------------------------------------------------------


@dataclass
class Reduction:
    """A pure reduction loop to split: its combines (one per iter_arg) and its bounds."""

    loop: scf.ForOp
    combines: list[Operation]
    lb: int
    ub: int
    step: int
    lanes: int  # floats per vector accumulator: the device's vector width
    vectors: int  # accumulators per iter_arg in the wide loop

    @property
    def vector_type(self) -> VectorType[Float32Type]:
        return VectorType(f32, [self.lanes])

    @property
    def trips(self) -> int:
        return max(0, -(-(self.ub - self.lb) // self.step))

    @property
    def wide_end(self) -> int:
        """The end of the iterations the wide loop takes (`vectors * lanes` per trip)."""
        chunk = self.vectors * self.lanes
        return self.lb + self.trips // chunk * chunk * self.step

    @property
    def main_end(self) -> int:
        """The end of the iterations the vector loops take; the rest is the remainder's."""
        return self.lb + self.trips // self.lanes * self.lanes * self.step


def find_reductions(kernel: func.FuncOp, lanes: int) -> list[Reduction]:
    loops = [op for op in kernel.walk() if isinstance(op, scf.ForOp)]
    return [r for r in (splittable(loop, lanes) for loop in loops) if r is not None]


def splittable(loop: scf.ForOp, lanes: int) -> Reduction | None:
    """The loop as a `Reduction`, if it is a pure reduction loop worth splitting."""
    combines = reduction_combines(loop)
    lb, ub, step = (constant_index(v) for v in (loop.lb, loop.ub, loop.step))
    if combines is None or lb is None or ub is None or step is None:
        return None
    if not all(isinstance(r.type, Float32Type) for r in loop.res):
        return None
    if step <= 0:
        return None
    found = Reduction(loop, combines, lb, ub, step, lanes, vectors=1)
    if found.trips >= WIDE_MIN_TRIPS:
        found.vectors = max(1, VECTORS // len(combines))
    body_ops = len(loop.body.block.ops) * lanes * (found.vectors + 1)
    if lanes < 2 or found.trips < lanes or body_ops > SPLIT_BODY_BUDGET:
        return None
    return found


def constant_index(value: SSAValue) -> int | None:
    op = value.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        return op.value.value.data
    return None


# --- Phase 2: split ---------------------------------------------------------------------------


class Inserter:
    """Inserts ops in front of the loop being split; constants go to the kernel's entry
    block, beside those convert-relay-to-loops put there, each made once."""

    def __init__(self, kernel: func.FuncOp, loop: scf.ForOp):
        self.builder = Builder(InsertPoint.before(loop))
        self.entry = kernel.body.block
        self.constants = {
            constant_key(op.value): op.result
            for op in self.entry.ops
            if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr | FloatAttr)
        }
        self.indices: dict[int, SSAValue] = {}

    def constant(self, value: IntegerAttr | FloatAttr) -> SSAValue:
        key = constant_key(value)
        if key not in self.constants:
            op = arith.ConstantOp(value)
            after = next(o for o in self.entry.ops if not isinstance(o, arith.ConstantOp))
            Rewriter.insert_op(op, InsertPoint.before(after))
            self.constants[key] = op.result
        return self.constants[key]

    def index(self, n: int) -> SSAValue:
        if n not in self.indices:  # (the lane offsets ask for the same few again and again)
            value = self.indices[n] = self.constant(IntegerAttr(n, IndexType()))
            value.name_hint = value.name_hint or f"c{n}"
        return self.indices[n]

    def insert(self, op: Operation) -> SSAValue:
        return self.builder.insert(op).results[0]


def constant_key(value: IntegerAttr | FloatAttr) -> tuple[Attribute, str]:
    return value.type, repr(value.value.data)  # (repr: 0.0 and -0.0 are two constants)


def split(inserter: Inserter, found: Reduction) -> list[list[SSAValue]]:
    """The accumulators, the wide loop, then the narrow loop into each first vector; returns
    the accumulators after the loops (per iter_arg, `found.vectors` of them)."""
    accs = [[lane_start(inserter, found, k)] * found.vectors for k in range(len(found.combines))]
    accs = vector_loop(inserter, found, found.lb, found.wide_end, accs)
    firsts = vector_loop(inserter, found, found.wide_end, found.main_end, [a[:1] for a in accs])
    return [first + rest[1:] for first, rest in zip(firsts, accs)]


def lane_start(inserter: Inserter, found: Reduction, k: int) -> SSAValue:
    """The vector the lanes of iter_arg k start from: the identity, or the initial value."""
    identity = IDENTITIES.get(type(found.combines[k]))
    start = found.loop.iter_args[k]
    if identity is not None:
        start = inserter.constant(FloatAttr(identity, f32))
    lanes = inserter.insert(vector.BroadcastOp(start, found.vector_type))
    lanes.name_hint = lane_hint(found, k)
    return lanes


def lane_hint(found: Reduction, k: int) -> str | None:
    hint = found.loop.res[k].name_hint
    return f"{hint}_lanes" if hint else None


def vector_loop(
    inserter: Inserter, found: Reduction, start: int, end: int, accs: list[list[SSAValue]]
) -> list[list[SSAValue]]:
    """`for k in [start, end)`, taking `vectors * lanes` iterations per trip (`vectors`: the
    accumulators per iter_arg in `accs`), `lanes` consecutive ones combined into each vector;
    returns the accumulators after the loop. No loop for an empty range."""
    if start >= end:
        return accs
    vectors = len(accs[0])
    flat = [v for per_arg in accs for v in per_arg]
    block = Block(arg_types=[IndexType(), *(v.type for v in flat)])
    iv, carried = block.args[0], regroup(list(block.args[1:]), vectors)
    inside = Builder(InsertPoint.at_end(block))
    updated = [list(per_arg) for per_arg in carried]
    for v in range(vectors):
        values = lane_values(inserter, inside, found, iv, range(v * found.lanes, (v + 1) * found.lanes))
        for k, combine in enumerate(found.combines):
            lanes = gather(inside, values[k])
            updated[k][v] = accumulate(inside, combine, carried[k][v], lanes)
    inside.insert(scf.YieldOp(*(v for per_arg in updated for v in per_arg)))
    step = inserter.index(vectors * found.lanes * found.step)
    loop = scf.ForOp(inserter.index(start), inserter.index(end), step, flat, block)
    inserter.builder.insert(loop)
    iv.name_hint = found.loop.body.block.args[0].name_hint
    for k, per_arg in enumerate(regroup(list(loop.results), vectors)):
        for value in (*per_arg, *carried[k]):
            value.name_hint = lane_hint(found, k)
    return regroup(list(loop.results), vectors)


def regroup(values: Sequence[SSAValue], size: int) -> list[list[SSAValue]]:
    return [list(values[i : i + size]) for i in range(0, len(values), size)]


def lane_values(
    inserter: Inserter, inside: Builder, found: Reduction, iv: SSAValue, iterations: range
) -> list[list[SSAValue]]:
    """Clones the body, without its combines, once per iteration `u` of `iterations` (at
    `iv + u * step`); returns, per iter_arg, the value each clone combines."""
    body = found.loop.body.block
    copied = [op for op in body.ops if op not in found.combines and not isinstance(op, scf.YieldOp)]
    values: list[list[SSAValue]] = [[] for _ in found.combines]
    for u in iterations:
        at = iv
        if u > 0:
            at = inside.insert(arith.AddiOp(iv, inserter.index(u * found.step))).result
            at.name_hint = body.args[0].name_hint
        mapper: dict[SSAValue, SSAValue] = {body.args[0]: at}
        for op in copied:  # (no regions: a pure reduction loop's body has none)
            inside.insert(op.clone_without_regions(mapper))
        for per_arg, carried, combine in zip(values, body.args[1:], found.combines):
            (value,) = (x for x in combine.operands if x is not carried)
            per_arg.append(mapper.get(value, value))
    return values


def gather(inside: Builder, values: list[SSAValue]) -> SSAValue:
    """A vector of `values`: a broadcast of the first, each other inserted at its lane."""
    lanes_type = VectorType(f32, [len(values)])
    lanes = inside.insert(vector.BroadcastOp(values[0], lanes_type)).vector
    for position, value in enumerate(values[1:], start=1):
        # (`create` with the position made once: InsertOp's constructor cost a third of
        # the pass's time)
        insert = vector.InsertOp.create(
            operands=[value, lanes],
            result_types=[lanes_type],
            properties={"static_position": lane_position(position)},
        )
        lanes = inside.insert(insert).result
    return lanes


@cache
def lane_position(position: int) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, [position])


def accumulate(inside: Builder, combine: Operation, acc: SSAValue, lanes: SSAValue) -> SSAValue:
    """`combine` on vectors: `acc` in place of the carried value, `lanes` in the other."""
    block = combine.parent_block()
    assert block is not None
    carried = block.args[1:]
    operands = [acc if x in carried else lanes for x in combine.operands]
    return inside.insert(type(combine)(*operands)).results[0]


# --- the fold ---------------------------------------------------------------------------------


def fold(inserter: Inserter, found: Reduction, accumulators: list[list[SSAValue]]) -> list[SSAValue]:
    """Each iter_arg's value after the vector loops: its vectors combined pairwise, their
    lanes reduced, and the result combined with the initial value."""
    folded: list[SSAValue] = []
    for k, (combine, vectors) in enumerate(zip(found.combines, accumulators)):
        kind = cast(Callable[[SSAValue, SSAValue], Operation], type(combine))
        while len(vectors) > 1:  # a balanced tree: the combines of one level are independent
            pairs = zip(vectors[::2], vectors[1::2])
            vectors = [inserter.insert(kind(a, b)) for a, b in pairs] + vectors[len(vectors) // 2 * 2 :]
        lanes = inserter.insert(lane_reduction(type(combine), vectors[0]))
        lanes.name_hint = lane_hint(found, k)
        total = inserter.insert(kind(found.loop.iter_args[k], lanes))
        total.name_hint = found.loop.res[k].name_hint
        folded.append(total)
    return folded


def lane_reduction(kind: type[Operation], lanes: SSAValue) -> vector.ReductionOp:
    """`vector.reduction` of `lanes` with `kind`'s combining kind; a sum or product may
    combine its lanes in any order (`reassoc`)."""
    fastmath = arith.FastMathFlagsAttr([FastMathFlag.REASSOC] if kind in (arith.AddfOp, arith.MulfOp) else "none")
    return vector.ReductionOp.build(
        operands=[lanes, []],
        result_types=[f32],
        properties={"kind": vector.CombiningKindAttr(COMBINING_KINDS[kind]), "fastmath": fastmath},
    )


# --- Phase 3: remainder -----------------------------------------------------------------------


def remainder(inserter: Inserter, found: Reduction, folded: list[SSAValue]) -> None:
    """The loop runs the iterations the vector loops left, from the folded values; with
    none left, the folded values replace its results."""
    loop = found.loop
    if found.trips % found.lanes == 0:
        for result, value in zip(loop.res, folded):
            result.replace_all_uses_with(value)
        Rewriter.erase_op(loop)
        return
    loop.operands = [inserter.index(found.main_end), loop.ub, loop.step, *folded]
