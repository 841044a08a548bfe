"""
The device kinds xrelay knows: one row each, the table every layer asks.

    kind = device_kind("opencl")              # DeviceKind(name="opencl", language="opencl", ...)
    kind = kind_of_target("c -march=x86-64-v3")  # the cpu row: what a target string compiles for

A row says what a device kind is to the compiler and to the runtime alike: the target kinds
(first words of target strings) that compile for it, its kernel language and that language's
name, the emitter that prints its kernels (`module:Class`, imported on demand so that the
runtime never imports the compiler), the suffix of its kernel sources in an artifact, its
runtime device class (`module:Class` under `xrelay.runtime`), whether its kernels launch in
work groups, whether its kernels share their loops among threads (`num_threads` in the
graph's `devices` entry), whether its kernel compiler keeps a float sum's order (so that
split-reductions accumulates its reductions in vector lanes), whether schedules write its
loops' vectors out, where the features of its targets come from (`module:function` under
`xrelay.runtime`, see `xrelay.runtime.machine`), what checks the options of its target strings
(the C flags' allow-list, OpenCL's `-vector-width=N`), the device spec a virtual scope of the
kind runs on by default, and the tensor element types it holds (a value of another is an
error at plan-devices; a loaded graph with one is refused), how its runtime's worker
threads are counted, if it has a pool of its own (PoCL), and whether its kernels take a tensor
at a byte offset in a buffer (plan-memory's in-place concatenations). Device types
of the SEScope contract with no row (cuda, vulkan, ...) have target kinds but no code
generator: `generates_kernels` is False for them.

Adding a device is one row here, an emitter and a runtime device.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module
from typing import Any


@dataclass(frozen=True)
class DeviceKind:
    """What a device kind is: its targets, kernels and runtime device."""

    name: str  # the SEScope device type: "cpu", "opencl"
    target_kinds: tuple[str, ...]  # first words of the target strings that compile for it
    language: str | None = None  # kernel language ("c", "opencl"); None: no code generator
    language_name: str = ""  # the language as people name it ("C", "OpenCL C")
    emitter: str = ""  # "module:Class" of its kernels' emitter
    source_suffix: str = ""  # a kernel source's file suffix in an artifact
    runtime_device: str = ""  # "module:Class" under xrelay.runtime
    work_groups: bool = False  # kernels launch in work groups (an NDRange with a local size)
    threads: bool = False  # kernels share their outer loops among threads (the entry's num_threads)
    ordered_reductions: bool = False  # its compiler keeps the order of a float sum (no reassociation)
    # Its kernel compiler vectorises across work items, not along a work item's loops (PoCL),
    # so schedules write those loops' vectors out; a C compiler vectorises the loops itself
    # (with `omp simd` reductions and fast-math flags).
    explicit_vectors: bool = False
    features: str = "machine:host_target_features"  # "module:function": a target string's Features
    options: str = ""  # "module:function" refusing a target string's options it does not take
    spec_has_id: bool = False  # a virtual scope kind:N runs on device spec "kind:N" ("kind" alone if not)
    # The tensor element types (numpy names) its kernels and buffers hold; a value of another
    # is an error at plan-devices. C: `float`, `long`, bools in `unsigned char`; OpenCL C:
    # `float`, `long` (64-bit in every OpenCL profile), bools in `uchar`.
    dtypes: tuple[str, ...] = ("float32", "int64", "bool")
    # "module:function" under xrelay.runtime giving its runtime's worker threads a count, before
    # its first device opens (`xrelay.runtime.device.share_cores`); "": it has no pool of its own.
    worker_threads: str = ""
    # The multiple of bytes a tensor's offset in its storage must be for its kernels and copies
    # to take it (`transforms/in_place_concat.py` plans producers into slices of a storage);
    # None: a tensor is always at the start of its buffer, nothing is planned in place there.
    offset_alignment: int | None = None

    @property
    def generates_kernels(self) -> bool:
        return self.language is not None

    def default_spec(self, id: int) -> str:
        """The physical device a virtual scope of this kind with id `id` runs on by default."""
        return f"{self.name}:{id}" if self.spec_has_id else self.name


DEVICE_KINDS: tuple[DeviceKind, ...] = (
    DeviceKind(
        "cpu",
        ("c", "llvm"),
        language="c",
        language_name="C",
        emitter="xrelay.targets.c:CEmitter",
        source_suffix=".c",
        runtime_device="cpu:CPUDevice",
        threads=True,
        options="c_library:c_flags",
        offset_alignment=1,  # a pointer into the buffer (C kernels read any element's address)
    ),
    DeviceKind(
        "opencl",
        ("opencl",),
        language="opencl",
        language_name="OpenCL C",
        emitter="xrelay.targets.opencl:OpenCLEmitter",
        source_suffix=".cl",
        runtime_device="opencl:OpenCLDevice",
        work_groups=True,
        ordered_reductions=True,
        explicit_vectors=True,
        features="machine:opencl_target_features",
        options="machine:check_opencl_options",
        spec_has_id=True,
        worker_threads="opencl:set_worker_threads",
        # A sub-buffer's origin must be a multiple of CL_DEVICE_MEM_BASE_ADDR_ALIGN, at least 1024
        # bits (a long16) on a full-profile device, PoCL's here; the runtime checks the device's.
        offset_alignment=128,
    ),
    DeviceKind("cuda", ("cuda",)),
    DeviceKind("vulkan", ("vulkan",), dtypes=("float32", "bool")),  # shaderInt64 is an optional feature
    DeviceKind("metal", ("metal",)),
)

# The kind of the host: it runs the graph executor, and every build has a target for it.
HOST_KIND = "cpu"

_BY_NAME = {kind.name: kind for kind in DEVICE_KINDS}
_BY_TARGET_KIND = {target: kind for kind in DEVICE_KINDS for target in kind.target_kinds}
_BY_LANGUAGE = {kind.language: kind for kind in DEVICE_KINDS if kind.language is not None}


def target_kind(target: str) -> str:
    """The first word of a target string ("c" of "c -O2")."""
    return target.split()[0] if target.strip() else ""


def device_kind(name: str) -> DeviceKind | None:
    """The row of device type `name`, or None when xrelay knows no such kind."""
    return _BY_NAME.get(name)


def host_kind() -> DeviceKind:
    """The row of the host's device kind."""
    return _BY_NAME[HOST_KIND]


def kind_of_target(target: str) -> DeviceKind | None:
    """The device kind a target string compiles for, or None for an unknown target kind."""
    return _BY_TARGET_KIND.get(target_kind(target))


def kind_of_language(language: str) -> DeviceKind | None:
    """The device kind whose kernels are written in `language` ("c", "opencl")."""
    return _BY_LANGUAGE.get(language)


def language_name(language: str) -> str:
    """A kernel language as people name it ("C", "OpenCL C"); unknown ones as they are."""
    kind = kind_of_language(language)
    return kind.language_name if kind is not None else language


def generating_kinds() -> tuple[DeviceKind, ...]:
    """The device kinds xrelay prints kernels for."""
    return tuple(kind for kind in DEVICE_KINDS if kind.generates_kernels)


def target_kinds() -> dict[str, str]:
    """Every target kind and the device type it compiles for."""
    return {target: kind.name for target, kind in _BY_TARGET_KIND.items()}


def check_target_options(target: str) -> None:
    """Refuses (a `CompileError`) an option of `target` its device kind does not take."""
    kind = kind_of_target(target)
    if kind is not None and kind.options:
        resolve(kind.options, "xrelay.runtime")(target)


def resolve(reference: str, package: str = "") -> Any:
    """The object a row names by `module:name` (the module under `package`, if given),
    imported on demand."""
    module, _, name = reference.partition(":")
    return getattr(import_module(f"{package}.{module}" if package else module), name)
