"""
`-t opencl`: the OpenCL C kernels of the opencl-scoped kernels of a lowered module.

`__kernel` functions over `__global` buffers. The outermost parallel nest is the NDRange:
each of its dimensions is a `get_global_id`, the innermost loop dimension `get_global_id(0)`
(leading dimensions merged when there are more than three), with a bounds check so a
rounded-up global size is safe. Inner loops are `for`
loops; a pure reduction loop of at least 16 trips accumulates 16 iterations at a time in
the lanes of a `float16` (`OpenCLEmitter.split_reduction`); maths uses OpenCL's overloaded built-ins (`exp`, `fmax`, `rsqrt`, ...).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO, ClassVar

from xdsl.context import Context
from xdsl.dialects import arith, math, scf
from xdsl.dialects.builtin import Float32Type, ModuleOp
from xdsl.ir import Operation
from xdsl.utils.target import Target

from xrelay.targets.c_style import (
    COMMON_CODE,
    CStyleEmitter,
    Expr,
    constant_int,
    kernel_scope,
    lowered_kernels,
    math_calls,
)


class OpenCLEmitter(CStyleEmitter):
    target = "opencl"
    header = ""
    kernel_prefix = "__kernel void"
    buffer_prefix = "__global "
    global_id = "get_global_id({})"
    code_for_op: ClassVar[dict[type[Operation], Expr]] = {
        **COMMON_CODE,
        **math_calls(""),
        # NaN on either side wins, as in arith.maximumf and numpy (fmax would drop it); the
        # form works on float and on the float16 accumulators of split reductions alike.
        arith.MaximumfOp: lambda a, b: f"({a} > {b} || isnan({a})) ? {a} : {b}",
        arith.MinimumfOp: lambda a, b: f"({a} < {b} || isnan({a})) ? {a} : {b}",
        math.RsqrtOp: lambda a: f"rsqrt({a})",
    }


    def split_reduction(self, op: scf.ForOp, combines: list[type[Operation]]) -> bool:
        """Prints a reduction loop with `float16` accumulators for each iter_arg, if it has
        constant bounds, at least LANES trips and a small body; else returns False.

        Iterations are taken VECTORS * LANES at a time (in loops of at least WIDE_MIN_TRIPS;
        else there is one vector; a loop with n accumulators, a register block's sums, has
        VECTORS // n vectors each, at least one), then LANES at a time, then one at a time. In the vector
        loops the body is printed once per iteration, with each combine left out; the values
        of LANES consecutive iterations form one vector, combined into an accumulator lane by
        lane. Then the vectors and their lanes fold pairwise into
        the scalar accumulator, and a remainder loop runs the last trips % LANES iterations:

            float16 acc_v0 = (float16)(0.0f), ..., acc_v3 = (float16)(0.0f);
            for (long k = 0; k < 768; k += 64) {
              <body at k: m0> ... <body at k + 15: m15>
              const float16 acc_x0 = (float16)(m0, ..., m15); acc_v0 = acc_v0 + acc_x0;
              ...                                              acc_v3 = acc_v3 + acc_x3;
            }
            for (long k = 768; k < 784; k += 16) { ...  acc_v0 = acc_v0 + acc_x0; }
            acc_v0 = acc_v0 + acc_v1; acc_v2 = acc_v2 + acc_v3; acc_v0 = acc_v0 + acc_v2;
            float8 acc_h8 = acc_v0.lo + acc_v0.hi; ... float acc_h1 = acc_h2.lo + acc_h2.hi;
            acc = acc + acc_h1;
            for (long k = 784; k < 790; k++) { <body into acc> }

        This reassociates a float sum on purpose, as `#pragma omp simd reduction` does in C:
        an OpenCL compiler must keep the order of a one-accumulator loop, so a work-item's
        dot product stays a chain of dependent scalar adds (PoCL: a dense layer at 1.6-3
        GFLOP/s). Sixteen independent scalar partials ran at 19-37 GFLOP/s when LLVM's SLP
        vectoriser packed them into an AVX-512 register, but one scalar op after the loop (a
        fused relu) made it pick 4-wide vectors (0.5 -> 1.7 ms for the demo's first layer);
        the explicit vectors run at 0.3-0.4 ms either way (PoCL turns the 16 loads of a
        vector into one vector load). Max and min start their lanes from the initial value
        (both are idempotent), sums from 0, products from 1.
        """
        bounds = [constant_int(v) for v in (op.lb, op.ub, op.step)]
        block = op.body.block
        if None in bounds or not all(isinstance(r.type, Float32Type) for r in op.res):
            return False
        lb, ub, step = bounds
        trips = max(0, -(-(ub - lb) // step))
        # Several accumulators are independent chains already (a register block's outputs).
        vectors = max(1, VECTORS // len(op.res)) if trips >= WIDE_MIN_TRIPS else 1
        if trips < LANES or len(block.ops) * LANES * (vectors + 1) > SPLIT_BODY_BUDGET:
            return False
        iv = block.args[0]
        accumulators = [self.names[r] for r in op.res]
        for acc, combine in zip(accumulators, combines):
            start = f"({VECTOR})({REDUCTION_IDENTITY.get(combine, acc)})"
            self.line(f"{VECTOR} {', '.join(f'{acc}_v{v} = {start}' for v in range(vectors))};")
        # `vectors` * LANES iterations at a time, then LANES at a time into the first vector
        wide_end = lb + trips // (vectors * LANES) * vectors * LANES * step
        main_end = lb + trips // LANES * LANES * step
        self.vector_loop(op, lb, wide_end, vectors, combines)
        self.vector_loop(op, wide_end, main_end, 1, combines)
        for acc, combine in zip(accumulators, combines):
            self.fold_vectors(combine, [f"{acc}_v{v}" for v in range(vectors)])
            self.line(f"{acc} = {self.code_for_op[combine](acc, self.fold_lanes(combine, acc))};")
        if main_end < ub:
            i = self.declare(iv, "i")
            inc = f"{i}++" if step == 1 else f"{i} += {step}"
            self.line(f"for ({self.index_type} {i} = {main_end}; {i} < {ub}; {inc}) {{")
            self.body(block)
            self.line("}")
        return True

    def vector_loop(self, op: scf.ForOp, start: int, end: int, vectors: int, combines: list[type[Operation]]) -> None:
        """`for k in [start, end)`, `vectors * LANES` iterations at a time: the body printed
        for each, without its combines, and the values of LANES consecutive iterations
        combined into vector accumulator v (`<acc>_v<v>`). Nothing for an empty range."""
        if start >= end:
            return
        block = op.body.block
        iv, *carried = block.args
        step = constant_int(op.step)
        combine_ops = [arg.get_user_of_unique_use() for arg in carried]
        i = self.declare(iv, "i")
        self.line(f"for ({self.index_type} {i} = {start}; {i} < {end}; {i} += {vectors * LANES * step}) {{")
        self.depth += 1
        for v in range(vectors):
            lanes: list[list[str]] = [[] for _ in carried]
            for u in range(v * LANES, (v + 1) * LANES):
                self.names[iv] = i
                if u > 0:
                    self.line(f"const {self.index_type} {i}_{u} = {i} + {u * step};")
                    self.names[iv] = f"{i}_{u}"
                for inner in block.ops:
                    if inner not in combine_ops and not isinstance(inner, scf.YieldOp):
                        self.emit(inner)
                for values, arg, combine in zip(lanes, carried, combine_ops):
                    (value,) = (x for x in combine.operands if x is not arg)
                    values.append(self.expr(value))
            for res, combine, values in zip(op.res, combines, lanes):
                acc, vector = f"{self.names[res]}_v{v}", f"{self.names[res]}_x{v}"
                self.line(f"const {VECTOR} {vector} = ({VECTOR})({', '.join(values)});")
                self.line(f"{acc} = {self.code_for_op[combine](acc, vector)};")
        self.depth -= 1
        self.line("}")

    def fold_vectors(self, combine: type[Operation], names: list[str]) -> None:
        """Combines the vector accumulators `names` pairwise into the first (a balanced tree,
        so the combines are independent)."""
        while len(names) > 1:
            for first, second in zip(names[::2], names[1::2]):
                self.line(f"{first} = {self.code_for_op[combine](first, second)};")
            names = names[::2]

    def fold_lanes(self, combine: type[Operation], acc: str) -> str:
        """Combines the lanes of `<acc>_v0` by halves (float16 -> float8 -> ... -> float), each
        step a named value, so the combines stay vector ops and the text stays linear in the
        lanes (the NaN-aware max names its operands twice); returns the scalar's name."""
        vector, width = f"{acc}_v0", LANES
        while width > 1:
            width //= 2
            half = f"{acc}_h{width}"
            element = f"float{width}" if width > 1 else "float"
            self.line(f"{element} {half} = {self.code_for_op[combine](f'{vector}.lo', f'{vector}.hi')};")
            vector = half
        return vector


# A split reduction's vector: 16 lanes fill an AVX-512 register (two AVX2 ones). VECTORS of
# them accumulate independently, so the adds of consecutive chunks do not wait on each other
# (the demo's first layer: 0.39 -> 0.34 ms, median of 60 interleaved launches). Only loops
# of WIDE_MIN_TRIPS or more get them: the body's 4 * 16 more copies made PoCL's cold build
# of bench/build_kernels.py (48 kernels, reductions of 96-128) 5.4 -> 6.9 s.
WIDE_MIN_TRIPS = 256
LANES = 16
VECTOR = f"float{LANES}"
VECTORS = 4

# The value a split reduction's lanes start from (max and min: the initial value, which they
# may then see twice).
REDUCTION_IDENTITY: dict[type[Operation], str] = {arith.AddfOp: "0.0f", arith.MulfOp: "1.0f"}

# A split reduction prints its body (vectors + 1) * LANES times; above this many ops in all,
# the loop stays as it is (the copies would cost compile time for little gain). A 4 x 4 dense
# block's body is 41 ops, 1312 printed.
SPLIT_BODY_BUDGET = 2048


@dataclass(frozen=True)
class OpenCLTarget(Target):
    """Prints the OpenCL C kernels of the opencl scopes of a lowered module."""

    name = "opencl"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        kernels = [
            k for k in lowered_kernels(module, self.name) if kernel_scope(k).device == "opencl"
        ]
        output.write(OpenCLEmitter.render_unit(kernels))
