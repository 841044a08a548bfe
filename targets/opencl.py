"""
`-t opencl`: the OpenCL C kernels of the opencl-scoped kernels of a lowered module.

`__kernel` functions over `__global` buffers. The outermost parallel nest is the NDRange:
each of its dimensions is a `get_global_id`, the innermost loop dimension `get_global_id(0)`
(leading dimensions merged when there are more than three), with a bounds check so a
rounded-up global size is safe. Inner loops are `for`
loops; a pure reduction loop of at least 16 trips is split into 16 partial accumulators
(`CStyleEmitter.split_reduction`), which PoCL vectorises; maths uses OpenCL's overloaded built-ins (`exp`, `fmax`, `rsqrt`, ...).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO, ClassVar

from xdsl.context import Context
from xdsl.dialects import arith, math
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.utils.target import Target

from xrelay.targets.c_style import COMMON_CODE, CStyleEmitter, Expr, kernel_scope, lowered_kernels


class OpenCLEmitter(CStyleEmitter):
    target = "opencl"
    header = ""
    kernel_prefix = "__kernel void"
    buffer_prefix = "__global "
    global_id = "get_global_id({})"
    # A work-item's reduction loop (a dot product of dense, batch_matmul) as 16 partial sums:
    # the SLP vectoriser fills an AVX-512 register with them (see `split_reduction`).
    reduction_partials = 16
    code_for_op: ClassVar[dict[type[Operation], Expr]] = {
        **COMMON_CODE,
        arith.MaximumfOp: lambda a, b: f"fmax({a}, {b})",
        arith.MinimumfOp: lambda a, b: f"fmin({a}, {b})",
        arith.MaxnumfOp: lambda a, b: f"fmax({a}, {b})",
        arith.MinnumfOp: lambda a, b: f"fmin({a}, {b})",
        math.ExpOp: lambda a: f"exp({a})",
        math.LogOp: lambda a: f"log({a})",
        math.SqrtOp: lambda a: f"sqrt({a})",
        math.RsqrtOp: lambda a: f"rsqrt({a})",
        math.TanhOp: lambda a: f"tanh({a})",
        math.AbsFOp: lambda a: f"fabs({a})",
        math.ErfOp: lambda a: f"erf({a})",
        math.PowFOp: lambda a, b: f"pow({a}, {b})",
        math.FloorOp: lambda a: f"floor({a})",
        math.CeilOp: lambda a: f"ceil({a})",
        math.FmaOp: lambda a, b, c: f"fma({a}, {b}, {c})",
    }


@dataclass(frozen=True)
class OpenCLTarget(Target):
    """Prints the OpenCL C kernels of the opencl scopes of a lowered module."""

    name = "opencl"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        kernels = [
            k for k in lowered_kernels(module, self.name) if kernel_scope(k).device == "opencl"
        ]
        output.write(OpenCLEmitter.render_unit(kernels))
