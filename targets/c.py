"""
`-t c`: the C kernels of the cpu-scoped kernels of a lowered module.

C99 with `restrict` buffers, the outermost parallel nest as `for` loops (the builder runs each
kernel once per launch), and `float` maths (`expf`, ...). Max and min are written as
`a != a ? a : (a > b ? a : b)`: gcc 12 does not vectorise a loop that calls `fmaxf`, and like
`arith.maximumf` (and numpy) a NaN on either side wins, where `fmaxf` would drop it. Two
single-condition selects, not `(a > b || a != a) ? a : b`: where loop if-conversion is off
(kernels with a branch, below), gcc kept that `||` as branches, which mispredict on the signs of a
relu's input (packed_conv's conv + bias + relu of the CNN, batch 8, 1 -> 16 channels at
28x28: 0.61 ms, 0.11 ms as two selects). An innermost loop whose
iter_args are only reductions gets `#pragma omp simd reduction(...)` where reordering them
keeps their value: sums and products, and a max or min marked `fastmath<nnan>` (softmax_row's
peak, which may drop a NaN), printed as one comparison `a > b ? a : b`. The pragma is guarded
by `XRELAY_OMP_SIMD` (the builder defines it and passes -fopenmp-simd): without it gcc may not
reorder float additions or max and leaves the loop scalar (a dense layer: 1.9 -> 22 GFLOP/s,
bench/c_sum_reduction.py; the transformer's 4x128x128 softmax 0.053 -> 0.031 ms with its max
so reordered and a reciprocal).

Maths: the libmvec functions a unit calls (expf, logf, tanhf, erff, powf) are declared
`simd("notinbranch")` before its kernels, so that gcc, with the builder's -fno-math-errno,
vectorises a loop calling them into calls of glibc's vector variants (`_ZGVeN16v_tanhf`),
which keep NaN, inf and subnormals; no -ffast-math needed.

Vectors: the micro-kernels' `vector<Nxf32>` (transforms/schedules/micro_kernel.py, N 4, 8 or 16) is a GCC
vector type (`xr_f32xN`, defined before the kernels that use it, with `xr_fma_f32xN`):
loads and stores are casts of a float address, a broadcast is a vector literal, and
`vector.fma` the register's FMA instruction (where the instruction set has none, a loop of
`fmaf` over the lanes if the machine fuses in hardware, else a multiply and an add). Their lanes
are never read one by one (no `vector.insert` or `vector.reduction` in C).

Threads: the outermost nest of a kernel that does enough work (its target's
`Features.min_parallel_work()` operations, a vector op counted by its lanes) runs in a `#pragma omp parallel
num_threads(XRELAY_NUM_THREADS)` region as `#pragma omp for schedule(dynamic) nowait`
(guarded by `_OPENMP`), collapsing its leading loops until they have `PARALLEL_ITERATIONS`
iterations, and ends in `xr_join` (see JOIN). A nest with a reduction across its
iterations, or of one iteration, stays on one thread. The builder defines the macro. Work
items are handed out one at a time: a sleeping thread (OMP_WAIT_POLICY=passive, as bench/models.py
runs every runtime) wakes tens of microseconds late, and the running one takes its share
meanwhile (bench/models.py's ResNet block at 2 threads took 0.93x the time of a static
schedule, the MLP 0.97-0.98x, the transformer 1.00x; interleaved A/B in one process, load
1.2-1.3).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from math import prod
from typing import IO, ClassVar

from xdsl.context import Context
from xdsl.dialects import arith, func, math, scf
from xdsl.dialects.builtin import Float32Type, ModuleOp, VectorType
from xdsl.ir import Block, Operation, SSAValue
from xdsl.utils.target import Target

from xrelay.runtime.machine import target_features
from xrelay.targets.c_style import (
    COMMON_CODE,
    CStyleEmitter,
    Expr,
    assumes_no_nans,
    kernel_scope,
    kernels_in_language,
    math_calls,
    trip_counts,
)
from xrelay.targets.index_bounds import IndexBounds, constant_of

# Defined by the runtime's C builder (`xrelay.runtime.c_library`), which passes -fopenmp-simd.
SIMD_MACRO = "XRELAY_OMP_SIMD"

# The maths functions glibc's libmvec has vector variants of (`_ZGVdN8v_tanhf`,
# `_ZGVeN16vv_powf`, ...; erff and tanhf since glibc 2.35). Declared `simd("notinbranch")`, a
# loop calling them vectorises without -ffast-math (the builder passes -fno-math-errno and
# links -lmvec). The others the kernels call (sqrtf, fabsf, floorf, ceilf, fmaf) are single
# instructions under -fno-math-errno.
VECTOR_MATH = ("expf(float)", "logf(float)", "tanhf(float)", "erff(float)", "powf(float, float)")
# The thread count of the C kernels' `omp parallel` regions: the runtime's builder defines it
# (`-DXRELAY_NUM_THREADS=N`, N from `xrelay.build(num_threads=...)`) and passes -fopenmp.
THREADS_MACRO = "XRELAY_NUM_THREADS"

# A top-level nest is split across threads only when it does at least its target's
# `Features.min_parallel_work()` (`parallel_threshold`): below that, waking and joining the
# team's sleeping thread costs more than the work it takes saves (runtime/machine.py,
# FORK_JOIN_SECONDS; 12M lane-counted ops on the hosts measured so far).

# The leading loops of a nest `collapse`d into the one the threads share: as few as give this
# many iterations, so that the innermost loop, which gcc vectorises, stays a loop of its own.
PARALLEL_ITERATIONS = 16

# Vectors: `vector<Nxf32>` (the micro-kernels of transforms/schedules/micro_kernel.py, N the
# target's vector width in floats: 16, 8 or 4) is a GCC vector type `xr_f32xN`, which gcc
# maps onto one zmm, ymm or xmm register. It may sit at any float's address (aligned(4)) and
# alias floats (may_alias): loads and stores are casts of a float pointer. `vector.fma` is a
# fused multiply-add per lane (-std=c99 keeps gcc's -ffp-contract=off, so `a * b + c` would
# stay a multiply and an add): the register's FMA intrinsic where the width's instruction set
# has it, which gcc folds with the broadcast into one `vfmadd231ps mem{1toN}`; else, where the
# machine fuses in hardware (`__FP_FAST_FMAF`), a loop of `fmaf` over the lanes, which gcc's
# SLP vectoriser makes vector FMAs of where it can; else (SSE4.2, x86-64-v2) a multiply and an
# add, rounded twice: glibc's fmaf in software ran a 256 -> 1024 1 x 1 conv at 14 x 14 at
# 0.5 GFLOP/s. Macros,
# not functions: a 64-byte vector passed to a function built without AVX-512 draws gcc's
# -Wpsabi warning. (That loop with AVX-512 too: SLP also merged a tile's 16 adjacent
# broadcast loads into a load and 15 vpermd, batch_matmul 4x128x64 at 61 against 89 GFLOP/s.)
VECTOR_WIDTHS = (4, 8, 16)
# Per width: the preprocessor test for its FMA intrinsic, and the intrinsic.
VECTOR_FMA_INTRINSICS = {
    16: ("defined(__AVX512F__)", "_mm512_fmadd_ps"),
    8: ("defined(__FMA__) && defined(__AVX__)", "_mm256_fmadd_ps"),
    4: ("defined(__FMA__)", "_mm_fmadd_ps"),
}


def vector_type(lanes: int) -> str:
    return f"xr_f32x{lanes}"


def vector_fma(lanes: int) -> str:
    return f"xr_fma_f32x{lanes}"


def vector_prelude(lanes: int) -> str:
    """The definitions of the `lanes`-float vector type and its FMA (each guarded, so that
    kernels concatenated into one library define them once)."""
    ty, fma = vector_type(lanes), vector_fma(lanes)
    test, intrinsic = VECTOR_FMA_INTRINSICS[lanes]
    return f"""#ifndef XRELAY_VECTORS_{lanes}
#define XRELAY_VECTORS_{lanes}
typedef float {ty} __attribute__((vector_size({4 * lanes}), aligned(4), may_alias));
#if defined(__x86_64__) && {test}
#include <immintrin.h>
#define {fma}(a, b, c) (({ty}){intrinsic}((a), (b), (c)))
#elif defined(__FP_FAST_FMAF)
#define {fma}(a, b, c) __extension__({{ \
  {ty} xr_a_ = (a), xr_b_ = (b), xr_c_ = (c), xr_r_; \
  for (int xr_i_ = 0; xr_i_ < {lanes}; xr_i_++) xr_r_[xr_i_] = fmaf(xr_a_[xr_i_], xr_b_[xr_i_], xr_c_[xr_i_]); \
  xr_r_; }})
#else
#define {fma}(a, b, c) ((a) * (b) + (c))
#endif
#endif
"""


VECTOR_DECLARATIONS = {f.split("(")[0]: f'float {f} __attribute__((simd("notinbranch")));' for f in VECTOR_MATH}
# gcc's loop if-conversion off for one kernel (`CEmitter.function_prefix`); nothing elsewhere.
# gcc's complete peeling of a loop of constant trips (its max-completely-peel-times), and the
# ops that peeling leaves worse than the loop (`CEmitter.loop_pragmas`): those printed as a
# conditional expression, and the maths calls that have libmvec variants (VECTOR_MATH).
COMPLETE_PEEL_TRIPS = 16
SELECTS = (arith.MaximumfOp, arith.MinimumfOp, arith.SelectOp)
VECTOR_CALLS = (math.ExpOp, math.LogOp, math.TanhOp, math.ErfOp, math.PowFOp)
NO_IF_CONVERSION = "XRELAY_NO_IF_CONVERSION"
NO_IF_CONVERSION_PRELUDE = f"""#ifndef {NO_IF_CONVERSION}
#if defined(__GNUC__) && !defined(__clang__)
#define {NO_IF_CONVERSION} __attribute__((optimize("no-tree-loop-if-convert")))
#else
#define {NO_IF_CONVERSION}
#endif
#endif
"""
# The attribute of a kernel whose loops gcc if-converts, where it cannot mask what it would
# speculate (no AVX-512): without partial redundancy elimination (-fno-tree-pre; no value
# changes). Hardswish's x * min(max(x/6 + 1/2, 0), 1) otherwise lost its vectorised loop: PRE
# folds x * 1 on the clamp's upper arm and puts the multiply in the other, and gcc 12
# if-converts a multiply in an arm (an op that may trap) only where it can mask it; with AVX2
# and SSE each element took a branch (a 1 x 1 conv 112 -> 672 at 14 x 14 with bias and
# hardswish, x86-64-v3: 422 -> 324 us, the time of the same conv with relu6).
# (-fno-trapping-math vectorises it too, but put one of AVX2's 6 x 2 tile's sums on the stack
# in MobileNetV2's 160 -> 960 conv, and DenseNet's max pools slowed 28x with it for all kernels.)
NO_PRE = "XRELAY_NO_PRE"
NO_PRE_PRELUDE = f"""#ifndef {NO_PRE}
#if defined(__GNUC__) && !defined(__clang__) && !defined(__AVX512F__)
#define {NO_PRE} __attribute__((optimize("no-tree-pre")))
#else
#define {NO_PRE}
#endif
#endif
"""
THREADS_DEFAULT = f"#ifndef {THREADS_MACRO}\n#define {THREADS_MACRO} 1\n#endif\n"

# The end of a shared nest (`omp for nowait`, then `xr_join`): each thread counts itself in,
# and the team's first thread, the caller's, spins until every thread has (at most
# JOIN_SPIN_SECONDS), so that it reaches the region's closing barrier last. Arriving first, it
# slept in the barrier (OMP_WAIT_POLICY=passive, as bench/models.py runs every runtime) and
# the thread arriving last had to wake it: 25-47 us in this VM. The others go on to the
# barrier and sleep there, as before. A probe of two threads and dynamic items of busy work
# (OMP_WAIT_POLICY=passive, medians of 2000 regions): 4 items of 112 us 272 -> 246 us, 4 of
# 73 us 190 -> 173, 8 of 50 us 255 -> 222, 16 of 10 us 103 -> 100.
JOIN = "xr_join"
JOIN_SPIN_SECONDS = 100e-6
JOIN_PRELUDE = f"""#if defined(_OPENMP) && !defined(XRELAY_JOIN)
#define XRELAY_JOIN
#include <omp.h>
#if defined(__x86_64__) || defined(__i386__)
#define XRELAY_PAUSE() __builtin_ia32_pause()
#else
#define XRELAY_PAUSE() ((void)0)
#endif
#ifndef XRELAY_JOIN_SPIN_SECONDS
#define XRELAY_JOIN_SPIN_SECONDS {JOIN_SPIN_SECONDS!r}
#endif
static inline void {JOIN}(int *joined) {{
  int threads = omp_get_num_threads();
  if (__atomic_add_fetch(joined, 1, __ATOMIC_ACQ_REL) == threads || omp_get_thread_num() != 0) return;
  double start = omp_get_wtime();
  while (__atomic_load_n(joined, __ATOMIC_ACQUIRE) < threads && omp_get_wtime() - start < XRELAY_JOIN_SPIN_SECONDS)
    XRELAY_PAUSE();
}}
#endif
"""


def float_result(op: Operation) -> bool:
    """Whether `op` makes a float (not an index: a clamp's select in a packing loop, whose
    complete peeling is what makes the packing fast: 224 -> 128 1 x 1 conv at 56 x 56,
    0.94 -> 1.87 ms with the pragma on it)."""
    return isinstance(op.results[0].type, Float32Type)


def literal_value(text: str) -> float | None:
    """The value of a finite float literal as `c_style.float_literal` prints it, else None."""
    match = re.fullmatch(r"\(?(-?[0-9][0-9.e+-]*)f\)?", text)
    return float(match.group(1)) if match else None


def maximum_expr(a: str, b: str) -> str:
    """`arith.maximumf` as the C target prints it: a NaN on either side wins, else `a > b ? a
    : b` (a tie, -0 and +0, gives b, as numpy's maximum). Against a finite constant c, one
    comparison that a NaN fails: `c >= x ? c : x` when c is the second operand (a tie gives
    c), `c > x ? c : x` when it is the first, instead of two selects: the relu6 epilogue of a
    depthwise conv spent 30% of its time in their compares and masked moves. (A `+ 0.0f`
    after `c > x ? c : x` for relu's +0 kept AVX2 loops scalar: gcc moved the add into the
    select's arms, which it then could not if-convert.)"""
    return _extreme(a, b, ">")


def minimum_expr(a: str, b: str) -> str:
    """`arith.minimumf`, as `maximum_expr` with `<`."""
    return _extreme(a, b, "<")


def two_selects(a: str, b: str, order: str) -> str:
    """max (`order` ">") or min ("<"): a NaN `a` wins, else `a order b ? a : b`."""
    return f"{a} != {a} ? {a} : ({a} {order} {b} ? {a} : {b})"


def _extreme(a: str, b: str, order: str) -> str:
    if literal_value(b) is not None:
        return f"({b} {order}= {a} ? {b} : {a})"  # a tie gives b; a NaN a fails the comparison
    if literal_value(a) is not None:
        return f"({a} {order} {b} ? {a} : {b})"  # a tie gives b; a NaN b fails the comparison
    return two_selects(a, b, order)


class CEmitter(CStyleEmitter):
    target = "c"
    header = "#include <math.h>\n"
    kernel_prefix = "void"
    pointer_qualifier = "restrict "
    reduction_pragma = (f"#ifdef {SIMD_MACRO}", "#pragma omp simd {}", "#endif")
    code_for_op: ClassVar[dict[type[Operation], Expr]] = {
        **COMMON_CODE,
        **math_calls("f"),
        arith.MaximumfOp: lambda a, b: maximum_expr(a, b),
        arith.MinimumfOp: lambda a, b: minimum_expr(a, b),
        math.RsqrtOp: lambda a: f"1.0f / sqrtf({a})",
    }
    vector_widths = VECTOR_WIDTHS
    vector_lanes = False
    if_converts = True  # whether gcc's loop if-conversion is on for the kernel being printed

    def loop_pragmas(self, op: scf.ForOp) -> tuple[str, ...]:
        """`#pragma GCC unroll 1` before an innermost loop of at most COMPLETE_PEEL_TRIPS
        constant trips that selects (max, min, select: a relu or clip epilogue) or calls a
        maths function: gcc -O3 otherwise peels it completely before the loop vectoriser sees
        it, and, if-conversion being a loop pass, each select of the straight-line copies is
        a branch, which mispredicts on the signs of a conv's outputs, and each call a scalar
        call. Kept a loop, it is if-converted and vectorised (MobileNetV2's first conv, 3 ->
        32 at 112 x 112 with bias and relu6, packed_conv's 5 x 2 tile of 8 lanes for
        x86-64-v3: 2104 -> 287 us; EfficientNet's, with bias and swish, 934 -> 379 us; 1 thread, load 10)."""
        counts = [constant_of(v) for v in (op.lb, op.ub, op.step)]
        if None in counts or op.iter_args or has_loop(op):
            return ()
        lb, ub, step = (c for c in counts if c is not None)
        if step <= 0 or -(-(ub - lb) // step) > COMPLETE_PEEL_TRIPS:
            return ()
        if not any(isinstance(inner, SELECTS + VECTOR_CALLS) and float_result(inner) for inner in op.body.block.ops):
            return ()
        return ("#pragma GCC unroll 1",)

    def function_prefix(self, kernel: func.FuncOp) -> str:
        """`void`, and for a kernel with a branch gcc could if-convert (an `scf.if` with no
        loop inside: concatenate, pad, pooling windows) gcc's loop if-conversion off. gcc 12.2
        at -O3 with AVX2/AVX-512 miscompiles its conditional loads
        (test/Inputs/fuzz/concatenate_on_c.mlir, gcc_concatenate.c: a row of zeros). Only
        there: off everywhere, no loop with a select vectorises, and a chain ending in relu
        calls the scalar tanhf (bench/vector_math.py: 7 -> 100 ms). gcc if-converts innermost
        loops only, so a branch that holds loops (a micro-kernel's choice of store path or its
        exact slow path) cannot be if-converted and leaves it on: its epilogue's relu then
        vectorises (the CNN's first conv, 8x1x28x28 -> 16 with bias and relu: 2.6x -> 1.7x the
        time of onnxruntime's Conv + Relu, measured beside it). A kernel that if-converts
        has partial redundancy elimination off below AVX-512 (NO_PRE)."""
        self.if_converts = not any(isinstance(op, scf.IfOp) and not has_loop(op) for op in kernel.walk())
        return f"{NO_PRE} {self.kernel_prefix}" if self.if_converts else f"{NO_IF_CONVERSION} {self.kernel_prefix}"

    def emit_expression(self, op: Operation) -> None:
        """A max or min keeps its two selects in a kernel without loop if-conversion, where
        gcc vectorises those and leaves `maximum_expr`'s one comparison a branch (DenseNet's
        concatenate + batch norm + relu: 10x the time)."""
        if isinstance(op, arith.MaximumfOp | arith.MinimumfOp) and not self.if_converts and not assumes_no_nans(op):
            order = ">" if isinstance(op, arith.MaximumfOp) else "<"
            a, b = (self.expr(v) for v in op.operands)
            self.assign(op.results[0], two_selects(a, b, order), op)
            return
        super().emit_expression(op)

    def vector_type_name(self, lanes: int) -> str:
        return vector_type(lanes)

    def fma_expr(self, type_name: str, a: str, b: str, c: str) -> str:
        return f"{type_name.replace('xr_f32', 'xr_fma_f32')}({a}, {b}, {c})"

    def broadcast_expr(self, type_name: str, scalar: str, lanes: int) -> str:
        return f"({type_name}){{{', '.join([scalar] * lanes)}}}"

    def vector_load_expr(self, type_name: str, address: str, space: str) -> str:
        return f"*(const {type_name} *)({address})"

    def vector_store_line(self, type_name: str, address: str, space: str, value: str) -> str:
        return f"*({type_name} *)({address}) = {value};"

    def prefetch_line(self, buffer: str, index: str) -> str | None:
        # The address in integers: the index may lie past the buffer's end, where forming a
        # pointer (`&buffer[index]`) would be undefined behaviour; a prefetch never faults.
        return f"__builtin_prefetch((const void *)((__UINTPTR_TYPE__){buffer} + sizeof *{buffer} * ({index})));"

    @classmethod
    def prelude_for(cls, text: str) -> str:
        """The `simd` declarations of the libmvec functions the kernels `text` call, a
        default thread count for their `omp parallel` regions, and the macros they use."""
        called = [d for name, d in VECTOR_DECLARATIONS.items() if re.search(rf"\b{name}\(", text)]
        lines = ["#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)", *called, "#endif\n"]
        vectors = "".join(vector_prelude(n) for n in VECTOR_WIDTHS if f"{vector_type(n)} " in text)
        if_conversion = NO_IF_CONVERSION_PRELUDE if NO_IF_CONVERSION in text else ""
        if_conversion += NO_PRE_PRELUDE if NO_PRE in text else ""
        threads = THREADS_DEFAULT if THREADS_MACRO in text else ""
        join = JOIN_PRELUDE if f"{JOIN}(" in text else ""
        return threads + join + vectors + if_conversion + ("\n".join(lines) if called else "")

    def emit_outer_parallel(self, op: scf.ParallelOp) -> None:
        """The nest's loops, the leading ones shared by `XRELAY_NUM_THREADS` OpenMP threads
        when the nest does enough work (`parallel_work`), then their join (`xr_join`)."""
        work, threshold = parallel_work(op), parallel_threshold(self.kernel)
        if work is None or threshold is None or work < threshold:
            self.emit(op)
            return
        counts = trip_counts(op, self.target)
        collapse = 1
        while collapse < len(counts) - 1 and prod(counts[:collapse]) < PARALLEL_ITERATIONS:
            collapse += 1
        clause = f" collapse({collapse})" if collapse > 1 else ""
        region = f"#pragma omp parallel num_threads({THREADS_MACRO})"
        share = f"#pragma omp for schedule(dynamic{chunk_clause(op, counts)}) nowait{clause}"
        for line in ("#ifdef _OPENMP", "{", "int xr_joined = 0;", region, "{", share, "#endif"):
            self.line(line)
        self.emit(op)
        for line in ("#ifdef _OPENMP", f"{JOIN}(&xr_joined);", "}", "}", "#endif"):
            self.line(line)


def parallel_threshold(kernel: func.FuncOp) -> int | None:
    """The least work for which `kernel`'s outer nest gets an `omp parallel` region: its
    scope's target's `Features.min_parallel_work()` (None: never)."""
    return target_features(kernel_scope(kernel).target or CEmitter.target).min_parallel_work()


def chunk_clause(op: scf.ParallelOp, counts: Sequence[int]) -> str:
    """The chunk of `schedule(dynamic, chunk)` where the shared loop is the innermost loop
    (a nest of one loop, no loop inside): PARALLEL_ITERATIONS strips of it, each a loop gcc
    vectorises (chunks of one iteration would leave it scalar and pay a dispatch per
    element). Elsewhere an iteration holds a loop, and one iteration a chunk lets the
    threads share the nest evenly."""
    if len(counts) != 1 or has_loop(op):
        return ""
    return f", {max(1, -(-counts[0] // PARALLEL_ITERATIONS))}"


def parallel_work(op: scf.ParallelOp) -> int | None:
    """The estimated work of a top-level nest (`estimated_work` of its body times its
    iterations), or None where threads cannot share it: a reduction across its iterations,
    or a single iteration."""
    iterations = prod(trip_counts(op, CEmitter.target))
    if op.initVals or iterations <= 1:
        return None
    return iterations * estimated_work(op.body.block)


def estimated_work(block: Block, bounds: IndexBounds | None = None) -> int:
    """The ops one run of `block` executes: loops counted by the most trips their bounds
    allow (`index_bounds`: packed_matmul's `[k0, min(k0 + 256, K))` as 256; 1 where nothing
    bounds them), and the shorter branch of an `scf.if` (0 without an else), what a run
    surely does: a rare fallback does not count, like packed_conv's exact recomputation of a
    block whose sums are not finite, several times the block's fast path (the CNN's
    convolutions: 15M and 73M counting it, 2.1M and 2.2M not). An op counts its `lanes`."""
    bounds = IndexBounds() if bounds is None else bounds
    total = 0
    for op in block.ops:
        if isinstance(op, scf.ForOp):
            total += _trips(bounds, [(op.lb, op.ub, op.step)]) * estimated_work(op.body.block, bounds)
        elif isinstance(op, scf.ParallelOp):
            loops = list(zip(op.lowerBound, op.upperBound, op.step))
            total += _trips(bounds, loops) * estimated_work(op.body.block, bounds)
        elif isinstance(op, scf.IfOp):
            branches = [r.block for r in (op.true_region, op.false_region) if r.blocks]
            total += min((estimated_work(b, bounds) for b in branches), default=0)
        else:
            total += lanes(op)
    return total


def lanes(op: Operation) -> int:
    """The scalar operations an op stands for: the lanes of the widest vector it makes or
    takes (a `vector<16xf32>` FMA is 16 multiply-adds, a vector store 16 stores), else 1."""
    types = [v.type for v in (*op.results, *op.operands)]
    return max((prod(t.get_shape()) for t in types if isinstance(t, VectorType)), default=1)


def _trips(bounds: IndexBounds, loops: Sequence[tuple[SSAValue, SSAValue, SSAValue]]) -> int:
    counts = [bounds.trip_count(lb, ub, step) for lb, ub, step in loops]
    return prod(1 if count is None else count for count in counts)


def has_loop(op: Operation) -> bool:
    """Whether a loop is nested in `op`."""
    return any(isinstance(inner, (scf.ForOp, scf.ParallelOp)) for inner in op.walk() if inner is not op)


@dataclass(frozen=True)
class CTarget(Target):
    """Prints the C kernels of the cpu scopes of a lowered module."""

    name = "c"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        output.write(CEmitter.render_unit(kernels_in_language(module, CEmitter.target)))
