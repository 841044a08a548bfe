"""
The kernels of a lowered module as source text, one translation unit each, for the runtime.

    graph = executor_graph(module)
    for k in kernel_sources(module, graph.devices):   # xrelay.runtime.kernels.KernelSource
        ...

A kernel's language and emitter are its scope's device kind's (`xrelay.runtime.device_kinds`:
cpu -> "c", opencl -> "opencl"); its
`device` is its scope's index in the executor graph's `devices` (the same list the graph's
`device_index` column indexes); its `global_size` is the NDRange, the trip counts of its
outermost scf.parallel in OpenCL's dimension order: the innermost (contiguous) loop dimension
first (see `c_style.ndrange_groups`), e.g. (8, 4) for a nest over 4x8; the `local_size` of a
kernel of a kind that launches work groups (opencl) is (1, ...) when its schedule gives each work item a work group of its own
(`relay.work_group_per_item`), else None; its `args` the shape and dtype of each memref
parameter, inputs then output, against which `load` checks a saved graph.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Any

from xdsl.dialects import func
from xdsl.dialects.builtin import MemRefType, ModuleOp

from xrelay.diagnostics import LoweringError, location_of
from xrelay.dialects.se_scope import SEScopeAttr
from xrelay.runtime.device_kinds import DeviceKind, device_kind, generating_kinds, resolve
from xrelay.runtime.kernels import KernelSource, TensorArg
from xrelay.targets.c_style import CStyleEmitter, global_size, kernel_scope, local_size, lowered_kernels
from xrelay.targets.graph_json import DTYPES, scope_order


def kernel_sources(module: ModuleOp, devices: Sequence[SEScopeAttr] | None = None) -> list[KernelSource]:
    """The source of every kernel of a lowered module, in module order. `devices` is the
    executor graph's device list; without it, the kernels' own scopes in device-index order.
    A kernel on none of `devices` is never launched (its function is not called from @main)
    and is left out."""
    return list(iter_kernel_sources(module, devices))


def iter_kernel_sources(module: ModuleOp, devices: Sequence[SEScopeAttr] | None = None) -> Iterator[KernelSource]:
    """`kernel_sources`, each as soon as it is emitted."""
    kernels = lowered_kernels(module, "kernel builder")
    if devices is None:
        devices = sorted({kernel_scope(k) for k in kernels}, key=scope_order)
    index = {scope: i for i, scope in enumerate(devices)}
    return (kernel_source(k, index[kernel_scope(k)]) for k in kernels if kernel_scope(k) in index)


def kernel_source(kernel: func.FuncOp, device: int = 0) -> KernelSource:
    scope = kernel_scope(kernel)
    kind = device_kind(scope.device or "")
    if kind is None or kind.language is None:
        supported = " and ".join(f"{k.name} ({k.language_name})" for k in generating_kinds())
        message = (
            f"cannot generate a kernel for @{kernel.sym_name.data} at {location_of(kernel)}: "
            f"its scope {scope} is on device '{scope.device}', but only {supported} kernels are supported"
        )
        kernel.emit_error(message, LoweringError(message))
    emitter = emitter_of(kind)
    return KernelSource(
        name=kernel.sym_name.data,
        language=kind.language,
        source=emitter.render_unit([kernel]),
        global_size=global_size(kernel, emitter.target),
        local_size=local_size(kernel, emitter.target) if kind.work_groups else None,
        num_inputs=len(kernel.args) - 1,
        device=device,
        args=tuple(kernel_arg(kernel, t) for t in kernel.function_type.inputs),
    )


def kernel_arg(kernel: func.FuncOp, ty: object) -> TensorArg:
    """A parameter's shape and dtype (the emitters took it: a static memref)."""
    if not isinstance(ty, MemRefType):
        message = f"kernel @{kernel.sym_name.data} at {location_of(kernel)} takes {ty}, but kernels take memrefs"
        kernel.emit_error(message, LoweringError(message))
    element = str(ty.element_type)
    return TensorArg(tuple(ty.get_shape()), DTYPES.get(element, element))


@dataclass
class KernelSet:
    """The distinct kernels of builds that share one library per device (the graphs of an
    executable's batch sizes): each by its content digest, and the names taken per device."""

    by_digest: dict[str, KernelSource] = field(default_factory=dict[str, KernelSource])
    names: set[tuple[int, str]] = field(default_factory=set[tuple[int, str]])

    def fresh_name(self, kernel: KernelSource, suffix: str) -> KernelSource:
        """`kernel`, renamed (its symbol too) NAME+suffix (then NAME+suffix_2, ...) where its
        name is taken on its device."""
        name, count = kernel.name, 1
        while (kernel.device, name) in self.names:
            name, count = f"{kernel.name}{suffix}{f'_{count}' if count > 1 else ''}", count + 1
        if name == kernel.name:
            return kernel
        return replace(kernel, name=name, source=re.sub(rf"\b{re.escape(kernel.name)}\b", name, kernel.source))


def distinct_kernels(
    kernels: Iterable[KernelSource],
    graph: dict[str, Any],
    on_distinct: Callable[[KernelSource], None] | None = None,
    known: tuple[KernelSet, str] | None = None,
) -> list[KernelSource]:
    """One kernel per distinct one: kernels equal but for their name (source, device, sizes)
    become the first of them, and the graph's nodes that called the others call it (their
    `func_name`). gcc and PoCL then compile each once, and an artifact stores each once.
    (convert-relay-to-loops already lowers equal groups once; this catches equal kernels of
    groups that differ, e.g. in what produces an input.) `on_distinct` sees each distinct
    kernel as it comes.

    `known`: the kernels of earlier builds whose graphs share a library with this one, and a
    suffix. A kernel equal to one of them becomes it (and is not in the result); a new one
    whose name they took is renamed NAME+suffix. The set takes in this build's kernels."""
    seen, suffix = known if known is not None else (KernelSet(), "")
    first: dict[str, KernelSource] = {}
    renamed: dict[str, str] = {}
    for k in kernels:
        digest = content_digest(k)
        kept = seen.by_digest.get(digest)
        if kept is None:
            kept = first[digest] = seen.by_digest[digest] = seen.fresh_name(k, suffix)
            seen.names.add((kept.device, kept.name))
            if on_distinct is not None:
                on_distinct(kept)
        if kept.name != k.name:
            renamed[k.name] = kept.name
    for node in graph["nodes"]:
        attrs = node.get("attrs", {})
        if attrs.get("func_name") in renamed:
            attrs["func_name"] = renamed[attrs["func_name"]]
    return list(first.values())


def content_digest(kernel: KernelSource) -> str:
    """A hash of what a kernel computes and where: its source with its own name (a whole
    identifier) taken out, its language, device, and launch sizes."""
    body = re.sub(rf"\b{re.escape(kernel.name)}\b", "\0", kernel.source)
    meta = (kernel.language, kernel.device, kernel.global_size, kernel.local_size, kernel.num_inputs, kernel.args)
    return hashlib.sha256(f"{meta}\0{body}".encode()).hexdigest()


@cache
def emitter_of(kind: DeviceKind) -> type[CStyleEmitter]:
    """The emitter class of a device kind with a code generator (its row's "module:Class")."""
    return resolve(kind.emitter)
