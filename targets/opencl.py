"""
`-t opencl`: the OpenCL C kernels of the opencl-scoped kernels of a lowered module.

`__kernel` functions over `__global` buffers. The outermost parallel nest is the NDRange:
each of its dimensions is a `get_global_id`, the innermost loop dimension `get_global_id(0)`
(leading dimensions merged when there are more than three), with a bounds check so a
rounded-up global size is safe. Inner loops are `for` loops. The `vector<16xf32>` values
that split-reductions makes (a pure reduction loop accumulating 16 iterations at a time in
vector lanes) are `float16`s: one constructor per `vector.insert` chain, the lanes of a
`vector.reduction` folded by halves (`.lo`, `.hi`); the conv_vectors schedule's row vectors
are `float8`s, loaded and stored through `xr_float8u` pointers (a `float8` aligned as a
float, see `vector_load_expr`), summed with `fma`, and the
micro-kernels' `vector<16xf32>` sums (packed_conv, packed_matmul_opencl) `float16`s the same
way, their broadcasts `(float16)(x)`. Maths uses OpenCL's overloaded built-ins (`exp`,
`fmax`, `rsqrt`, ...).
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
    kernels_in_language,
    math_calls,
)
from xrelay.targets.vector_math import OPENCL_PRELUDE


class OpenCLEmitter(CStyleEmitter):
    target = "opencl"
    header = ""
    kernel_prefix = "__kernel void"
    buffer_prefix = "__global "
    bool_storage = "uchar"
    global_id = "get_global_id({})"
    code_for_op: ClassVar[dict[type[Operation], Expr]] = {
        **COMMON_CODE,
        **math_calls(""),
        # NaN on either side wins, as in arith.maximumf and numpy (fmax would drop it); the
        # form works on float and, lane by lane, on the float16 accumulators of
        # split-reductions alike.
        # `|`, not `||`: a short-circuit is control flow, which kept PoCL from vectorising a
        # loop around it (an elementwise chain ending in relu: 10.5 -> 5.6 ms). `a != a`, not
        # `isnan(a)`: PoCL's isnan tests the bits with integer ops, `!=` is one unordered
        # compare (the CNN's first conv with its relu 0.044 -> 0.038 ms, its max_pool2d 0.012
        # -> 0.011 ms of device time, bench/opencl_model_kernels.py cnn, one run).
        arith.MaximumfOp: lambda a, b: f"(({a} > {b}) | ({a} != {a})) ? {a} : {b}",
        arith.MinimumfOp: lambda a, b: f"(({a} < {b}) | ({a} != {a})) ? {a} : {b}",
        math.RsqrtOp: lambda a: f"rsqrt({a})",
        # PoCL's built-ins of these are scalar or slow: branch-free ones of our own (vector_math.py)
        math.TanhOp: lambda a: f"xr_tanhf({a})",
        math.LogOp: lambda a: f"xr_logf({a})",
        math.ErfOp: lambda a: f"xr_erff({a})",
        math.PowFOp: lambda a, b: f"xr_powf({a}, {b})",
    }
    vector_widths = (2, 4, 8, 16)
    helper_names = ("xr_tanhf", "xr_logf", "xr_erff", "xr_powf")
    helper_prelude = OPENCL_PRELUDE

    # Vectors are loaded and stored through pointers to `xr_floatNu`, a floatN aligned as
    # a float: one unaligned vector access. PoCL's vloadN and vstoreN are built of pieces (a
    # vload16 is two 16-byte loads and a 32-byte one, then inserts into a register).
    def vector_load_expr(self, type_name: str, address: str, space: str) -> str:
        return f"*(const {space}xr_{type_name}u *)({address})"

    def vector_store_line(self, type_name: str, address: str, space: str, value: str) -> str:
        return f"*({space}xr_{type_name}u *)({address}) = {value};"

    @classmethod
    def prelude_for(cls, text: str) -> str:
        """The unaligned vector types and the maths helpers the kernels `text` use."""
        used = [lanes for lanes in cls.vector_widths if f"xr_float{lanes}u " in text]
        types = "".join(unaligned_vector_type(lanes) for lanes in used)
        return types + super().prelude_for(text)


def unaligned_vector_type(lanes: int) -> str:
    """`xr_floatNu`'s typedef, in an include guard (a program is built from several units)."""
    guard = f"XR_FLOAT{lanes}U"
    return (
        f"#ifndef {guard}\n#define {guard}\n"
        f"typedef float{lanes} xr_float{lanes}u __attribute__((aligned(4), may_alias));\n#endif\n"
    )


@dataclass(frozen=True)
class OpenCLTarget(Target):
    """Prints the OpenCL C kernels of the opencl scopes of a lowered module."""

    name = "opencl"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        output.write(OpenCLEmitter.render_unit(kernels_in_language(module, OpenCLEmitter.target)))
