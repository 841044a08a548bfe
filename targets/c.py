"""
`-t c`: the C kernels of the cpu-scoped kernels of a lowered module.

C99 with `restrict` buffers, the outermost parallel nest as `for` loops (the builder runs each
kernel once per launch), and `float` maths (`expf`, ...). Max and min are written as
`(a > b || a != a) ? a : b`: gcc 12 does not vectorise a loop that calls `fmaxf`, and like
`arith.maximumf` (and numpy) a NaN on either side wins, where `fmaxf` would drop it. An innermost loop whose
iter_args are only reductions (sum, product, max, min) gets `#pragma omp simd reduction(...)`,
guarded by `XRELAY_OMP_SIMD` (the builder defines it and passes -fopenmp-simd): without it
gcc may not reorder float additions or max and leaves the loop scalar (a dense layer: 1.9 ->
22 GFLOP/s, bench/c_sum_reduction.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO, ClassVar

from xdsl.context import Context
from xdsl.dialects import arith, math
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.utils.target import Target

from xrelay.targets.c_style import (
    COMMON_CODE,
    CStyleEmitter,
    Expr,
    kernel_scope,
    lowered_kernels,
    math_calls,
)

# Defined by the runtime's C builder (`xrelay.runtime.c_library`), which passes -fopenmp-simd.
SIMD_MACRO = "XRELAY_OMP_SIMD"

# The maths functions glibc's libmvec has vector variants of (`_ZGVdN8v_tanhf`,
# `_ZGVeN16vv_powf`, ...; erff and tanhf since glibc 2.35). Declared `simd("notinbranch")`, a
# loop calling them vectorises without -ffast-math (the builder passes -fno-math-errno and
# links -lmvec). The others the kernels call (sqrtf, fabsf, floorf, ceilf, fmaf) are single
# instructions under -fno-math-errno.
VECTOR_MATH = ("expf(float)", "logf(float)", "tanhf(float)", "erff(float)", "powf(float, float)")
HEADER = "\n".join(
    [
        "#include <math.h>",
        "#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)",
        *(f'float {f} __attribute__((simd("notinbranch")));' for f in VECTOR_MATH),
        "#endif",
        "",
    ]
)


class CEmitter(CStyleEmitter):
    target = "c"
    header = HEADER
    kernel_prefix = "void"
    pointer_qualifier = "restrict "
    reduction_pragma = (f"#ifdef {SIMD_MACRO}", "#pragma omp simd {}", "#endif")
    code_for_op: ClassVar[dict[type[Operation], Expr]] = {
        **COMMON_CODE,
        **math_calls("f"),
        arith.MaximumfOp: lambda a, b: f"({a} > {b} || {a} != {a}) ? {a} : {b}",
        arith.MinimumfOp: lambda a, b: f"({a} < {b} || {a} != {a}) ? {a} : {b}",
        math.RsqrtOp: lambda a: f"1.0f / sqrtf({a})",
    }


@dataclass(frozen=True)
class CTarget(Target):
    """Prints the C kernels of the cpu scopes of a lowered module."""

    name = "c"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        kernels = [k for k in lowered_kernels(module, self.name) if kernel_scope(k).device == "cpu"]
        output.write(CEmitter.render_unit(kernels))
