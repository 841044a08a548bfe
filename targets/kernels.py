"""
The kernels of a lowered module as source text, one translation unit each, for the runtime.

    graph = executor_graph(module)
    for k in kernel_sources(module, graph.devices):   # xrelay.runtime.kernels.KernelSource
        ...

A kernel's language follows its scope's device (cpu -> "c", opencl -> "opencl"); its
`device` is its scope's index in the executor graph's `devices` (the same list the graph's
`device_index` column indexes); its `global_size` is the NDRange, the trip counts of its
outermost scf.parallel in OpenCL's dimension order: the innermost (contiguous) loop dimension
first (see `c_style.ndrange_groups`), e.g. (8, 4) for a nest over 4x8; an opencl kernel's
`local_size` is (1, ...) when its schedule gives each work item a work group of its own
(`relay.work_group_per_item`), else None.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

from xrelay.diagnostics import LoweringError, location_of
from xrelay.dialects.se_scope import SEScopeAttr
from xrelay.runtime.kernels import KernelSource
from xrelay.targets.c import CEmitter
from xrelay.targets.c_style import CStyleEmitter, global_size, kernel_scope, local_size, lowered_kernels
from xrelay.targets.graph_json import scope_order
from xrelay.targets.opencl import OpenCLEmitter

EMITTERS: dict[str, type[CStyleEmitter]] = {"cpu": CEmitter, "opencl": OpenCLEmitter}
LANGUAGES = {"cpu": "c", "opencl": "opencl"}


def kernel_sources(module: ModuleOp, devices: Sequence[SEScopeAttr] | None = None) -> list[KernelSource]:
    """The source of every kernel of a lowered module, in module order. `devices` is the
    executor graph's device list; without it, the kernels' own scopes in device-index order.
    A kernel on none of `devices` is never launched (its function is not called from @main)
    and is left out."""
    kernels = lowered_kernels(module, "kernel builder")
    if devices is None:
        devices = sorted({kernel_scope(k) for k in kernels}, key=scope_order)
    index = {scope: i for i, scope in enumerate(devices)}
    return [kernel_source(k, index[kernel_scope(k)]) for k in kernels if kernel_scope(k) in index]


def kernel_source(kernel: func.FuncOp, device: int = 0) -> KernelSource:
    scope = kernel_scope(kernel)
    emitter = EMITTERS.get(scope.device or "")
    if emitter is None:
        message = (
            f"cannot generate a kernel for @{kernel.sym_name.data} at {location_of(kernel)}: "
            f"its scope {scope} is on device '{scope.device}', but only cpu (C) and opencl "
            "(OpenCL C) kernels are supported"
        )
        kernel.emit_error(message, LoweringError(message))
    return KernelSource(
        name=kernel.sym_name.data,
        language=LANGUAGES[scope.device],
        source=emitter.render_unit([kernel]),
        global_size=global_size(kernel, emitter.target),
        local_size=local_size(kernel, emitter.target) if scope.device == "opencl" else None,
        num_inputs=len(kernel.args) - 1,
        device=device,
    )
