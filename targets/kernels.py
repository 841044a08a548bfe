"""
The kernels of a lowered module as source text, one translation unit each, for the builders.

    for k in kernel_sources(module):   # KernelSource(name, language, source, global_size, ...)
        ...

A kernel's language follows its scope's device (cpu -> "c", opencl -> "opencl"); its
`global_size` is the NDRange, the trip counts of its outermost scf.parallel in OpenCL's
dimension order: the innermost (contiguous) loop dimension first (see
`c_style.ndrange_groups`), e.g. (8, 4) for a nest over 4x8.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

from xrelay.dialects.se_scope import SEScopeAttr
from xrelay.errors import CompileError, location_of
from xrelay.targets.c import CEmitter
from xrelay.targets.c_style import CStyleEmitter, global_size, kernel_scope, lowered_kernels
from xrelay.targets.opencl import OpenCLEmitter

EMITTERS: dict[str, type[CStyleEmitter]] = {"cpu": CEmitter, "opencl": OpenCLEmitter}
LANGUAGES = {"cpu": "c", "opencl": "opencl"}


@dataclass(frozen=True)
class KernelSource:
    name: str
    language: str  # "c" | "opencl"
    source: str  # a complete translation unit for this one kernel
    global_size: tuple[int, ...]  # the NDRange (the outermost scf.parallel's extents, innermost first)
    num_inputs: int
    scope: SEScopeAttr


def kernel_sources(module: ModuleOp) -> list[KernelSource]:
    """The source of every kernel of a lowered module, in module order."""
    return [kernel_source(k) for k in lowered_kernels(module, "kernel builder")]


def kernel_source(kernel: func.FuncOp) -> KernelSource:
    scope = kernel_scope(kernel)
    emitter = EMITTERS.get(scope.device or "")
    if emitter is None:
        message = (
            f"cannot generate a kernel for @{kernel.sym_name.data} at {location_of(kernel)}: "
            f"its scope {scope} is on device '{scope.device}', but only cpu (C) and opencl "
            "(OpenCL C) kernels are supported"
        )
        kernel.emit_error(message, CompileError(message))
    return KernelSource(
        name=kernel.sym_name.data,
        language=LANGUAGES[scope.device],
        source=emitter.render_unit([kernel]),
        global_size=global_size(kernel, emitter.target),
        num_inputs=len(kernel.args) - 1,
        scope=scope,
    )
