"""
The compile driver, `xrelay.build`: a relay program in, an `xrelay.runtime.Executable` out.

    exe = xrelay.build(text, targets=("c", "opencl"), default_device="opencl")
    exe = xrelay.build(text, targets=("c",), params={"w": w})   # weights bound as constants
    out = exe.run(x=x)                 # numpy in, numpy out (one array, or a tuple)

The pipeline, with the passes by their CLI names (`PIPELINE`): fuse-layer-norm (a layer
normalisation written in primitive ops becomes one relay.nn.layer_norm), sink-reshapes (a
reshape adding or dropping leading 1s moves below the elementwise ops after it, so that a
matmul's activation fuses into it), pool-before-conv (an average pool of a 1 x 1 conv pools
the conv's input instead), plan-devices,
combine-parallel-dense (denses of one data with constant weights become one dense and slices),
fuse-ops, fuse-conv-pool (a conv group and the max_pool2d or global_avg_pool2d group after it
become one where the conv's schedule pools in its stores), fuse-attention (attention's scores, softmax and product
with v become one group where attention_rows lowers it), convert-relay-to-loops, inline-calls (calls between relay
functions are inlined into @main after lowering, when every value already has its scope),
plan-memory. Then the compiler's last step hands the runtime plain data: the executor graph
(`-t graph-json`, whose `devices` list gives each canonical scope its `device_index`), the
kernel sources with their device index, and the constants as params. The runtime builds the kernels on its devices.

Devices: each entry of the graph's `devices` runs on a physical device chosen by the table
`devices` (see `xrelay.runtime.device`): by default `cpu:N` on the host and `opencl:N` on the
N-th device of the first OpenCL platform, e.g. `devices={("opencl", 1): "opencl:0"}` runs
virtual device 1 on the first OpenCL device. The first (the host, when there is one) is the
primary device.
"""

from __future__ import annotations

import os
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, ModuleOp, UnitAttr
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import DiagnosticException

from xrelay import batching, build_cache
from xrelay.diagnostics import ConfigError, LoweringError, excerpt, shorten_notes
from xrelay.dialects import relay
from xrelay.dialects.se_scope import SCOPE_ATTR, SEScopeAttr
from xrelay.errors import CompileError, Error, InputError, UsageError
from xrelay.ir import Program, as_module, context
from xrelay.runtime import Executable
from xrelay.runtime.c_library import (
    EarlyObjects,
    available_cores,
    c_flags,
    check_num_threads,
    default_num_threads,
)
from xrelay.runtime.device import DeviceTable, share_cores
from xrelay.runtime.device_kinds import device_kind, generating_kinds, kind_of_target, language_name
from xrelay.runtime.heap import release_freed_memory
from xrelay.runtime.kernels import KernelSource
from xrelay.runtime.machine import target_features
from xrelay.targets.graph_json import executor_graph, planned_devices
from xrelay.targets.kernels import distinct_kernels, iter_kernel_sources
from xrelay.transforms import place_by_cost
from xrelay.transforms.compilation_config import device_of_target
from xrelay.transforms.place_by_cost import Chosen, PlaceByCostPass
from xrelay.transforms.schedules.packed_matmul import HELD_AS_IS_ATTR, REGISTER_TILES_ATTR
from xrelay.values import check_input, entry_function

# The compile pipeline by CLI names: xrelay's passes and, after lowering, xDSL's dce, licm and cse.
PIPELINE = (
    "fuse-layer-norm",
    "sink-reshapes",
    "pool-before-conv",
    "plan-devices",
    "combine-parallel-dense",
    "fuse-ops",
    "fuse-conv-pool",
    "fuse-attention",
    "convert-relay-to-loops",
    "dce",
    "licm",
    "cse",
    "split-reductions",
    "inline-calls",
    "plan-memory",
)


# `placement` choices of `xrelay.build`: "annotated" places by the program's annotations and
# the default device alone; "auto" runs place-by-cost first (transforms/place_by_cost.py).
# Inside the driver, a placement place-by-cost chose before (`Chosen`) is written back as it is.
PLACEMENTS = ("annotated", "auto")
Placement = str | Chosen
Observer = Callable[[str, ModuleOp], None]


def pipeline(placement: Placement) -> tuple[str, ...]:
    """PIPELINE, with place-by-cost before plan-devices for `placement` "auto" (or chosen)."""
    if placement == "annotated":
        return PIPELINE
    at = PIPELINE.index("plan-devices")
    return (*PIPELINE[:at], "place-by-cost", *PIPELINE[at:])


def check_placement(placement: object) -> str:
    if placement not in PLACEMENTS:
        raise UsageError(f"placement must be one of {', '.join(repr(p) for p in PLACEMENTS)}, but was {placement!r}")
    assert isinstance(placement, str)
    return placement


# The device types xrelay has a code generator and a runtime device for, with their kernel
# language's name (from the table of device kinds).
GENERATED_DEVICES = {kind.name: kind.language_name for kind in generating_kinds()}


def build(
    program: Program,
    targets: str | Sequence[str] = ("c",),
    default_device: str | None = None,
    host_target: str = "c",
    devices: DeviceTable | None = None,
    params: Mapping[str, np.ndarray] | None = None,
    num_threads: int | None = None,
    progress: bool | None = None,
    batch_sizes: Sequence[int] | None = None,
    placement: str = "annotated",
) -> Executable:
    """Compiles `program` (relay text, a path to a .mlir file, or a module, which is not
    changed) for `targets` (target strings, or one string: "c", "c,opencl").

    `params` binds parameters of @main to fixed values (weights): they become constants, so
    they are placed like constants, written to their devices once, and `run` no longer takes
    them.

    `num_threads` is how many threads each C kernel's outer loops may use (default: every
    core, or `XRELAY_NUM_THREADS` from the environment). Given, and fewer than the cores, it
    leaves the rest to PoCL's worker pool, where no PoCL has started in the process and
    POCL_MAX_PTHREAD_COUNT is unset (`xrelay.runtime.device.share_cores`): on 2 cores,
    `num_threads=1` runs a cpu kernel and an OpenCL one at the same time on a core each. It is recorded in the cpu entries of
    the graph's `devices` list, so a saved executable keeps it, as it keeps each entry's
    `features`: what the machine its target builds for can do (`xrelay.runtime.machine`).
    `placement="auto"` places the ops no annotation pins where the predicted run is fastest,
    by measured kernel and copy times (`transforms/place_by_cost.py`; "annotated", the
    default, places by the annotations and `default_device` alone).
    `progress=True` (or the environment variable XRELAY_PROGRESS=1) prints each stage to stderr as it ends: the
    passes, the kernels emitted, and their build on the devices.

    `batch_sizes=(1, 4, 16)`: one graph per batch size (the inputs' and results' leading
    axis), sharing the params and kernels; `run` then takes any batch (`xrelay.batching`).
    With `placement="auto"`, each size is placed by its own costs (a batch of 16 may pay for
    copies to a device that one sample does not), and every size's graph lists the devices of
    them all."""
    report = Progress.start(progress)
    module = as_module(program, "xrelay.build").clone()
    targets = target_list(targets)
    threads = thread_count(num_threads)
    placement = check_placement(placement)
    if num_threads is not None:  # PoCL's pool takes the cores the C kernels leave (before it starts)
        share_cores(threads, available_cores(), [kind.name for kind in map(kind_of_target, targets) if kind])
    if batch_sizes is not None:
        options = (default_device, host_target, threads)
        return build_sizes(module, params or {}, batch_sizes, (targets, options, placement), devices, report)
    key = None
    if build_cache.enabled():
        features = [target_features(t).to_json() for t in (*targets, host_target)]
        key = build_cache.build_key(
            str(module), params or {}, (targets, default_device, host_target, threads, features, placement)
        )
        built = build_cache.lookup(key)
        if built is not None:
            report.stage(f"took the build from the cache ({len(built.kernels)} kernels)")
            return _executable(built, devices, report)
    built = compile_module(
        module, params or {}, targets, (default_device, host_target, threads), report, placement=placement
    )
    del module  # (its constants that no param views, the weights before the passes, go now)
    release_freed_memory()
    exe = _executable(built, devices, report)
    if key is not None:
        build_cache.store(key, built)
        report.stage("stored the build in the cache")
    return exe


def build_sizes(
    module: ModuleOp,
    params: Mapping[str, np.ndarray],
    batch_sizes: Sequence[int],
    how: tuple[tuple[str, ...], tuple[str | None, str, int], str],
    devices: DeviceTable | None,
    report: Progress,
) -> Executable:
    """`build` with `batch_sizes` (`xrelay.batching`; `how`: targets, options as for
    `compile_module`, placement): the sizes' kernels go to gcc as they are emitted, in one
    sequence, so that the library's build finds every object cached. With placement "auto",
    each size is placed by its own costs (`batching.place_sizes`) before any is lowered."""
    targets, options, placement = how
    early = EarlyBuilds({}, options[2])

    def compile_one(sized: ModuleOp, bound: Mapping[str, np.ndarray], size: batching.SizeBuild) -> build_cache.Built:
        placed = size.chosen if size.chosen is not None else placement
        return compile_module(sized, bound, targets, options, report, (size, early), placement=placed)

    def place_one(sized: ModuleOp, bound: Mapping[str, np.ndarray]) -> tuple[Chosen, set[SEScopeAttr]]:
        return place_only(sized, bound, targets, options, report)

    try:
        built = batching.compile_sizes(
            module, params, batch_sizes, compile_one, report.stage, place_one if placement == "auto" else None
        )
    finally:
        early.finish()
    exe = Executable(built.graph, built.kernels, built.params, devices, None, built.batches)
    report.stage(f"built them on {', '.join(d.name for d in exe.devices)} ({len(built.params)} params)")
    return exe


def compile_module(
    module: ModuleOp,
    params: Mapping[str, np.ndarray],
    targets: tuple[str, ...],
    options: tuple[str | None, str, int],
    report: Progress,
    shared: tuple[batching.SizeBuild, EarlyBuilds] | None = None,
    placement: Placement = "annotated",
    observe: Observer | None = None,
) -> build_cache.Built:
    """Binds the params, runs the pipeline on `module` in place, and emits the kernels:
    what the runtime needs (`options`: default device, host target, thread count). `shared`,
    for a build of several batch sizes: the kernels of the sizes before (`distinct_kernels`)
    and the devices all sizes' graphs list (`batching.SizeBuild`), and the early builds of all
    of them."""
    default_device, host_target, threads = options
    bind_params(module, params)
    lower(module, targets, default_device, host_target, report, placement, threads, observe)
    size, early = shared if shared is not None else (None, EarlyBuilds({}, threads))
    graph = executor_graph(module, size.devices if size is not None else None)
    record_threads(graph.graph, threads)
    record_features(graph.graph)
    emitted: list[KernelSource] = []
    known = (size.kernels, size.suffix) if size is not None else None
    early.graph = graph.graph
    try:
        kernels = distinct_kernels(
            _recorded(iter_kernel_sources(module, graph.devices), emitted), graph.graph, early.add, known
        )
    finally:
        if shared is None:
            early.finish()
    report.stage(f"emitted {len(emitted)} kernels, {len(kernels)} distinct ({_by_language(kernels)})")
    return build_cache.Built(graph.graph, kernels, graph.params)


def _recorded(kernels: Iterator[KernelSource], into: list[KernelSource]) -> Iterator[KernelSource]:
    for k in kernels:
        into.append(k)
        yield k


@dataclass
class EarlyBuilds:
    """gcc on the C kernels of each device while the rest are emitted (`c_library.EarlyObjects`):
    the runtime's build then finds their objects in the cache and only links them."""

    graph: dict[str, Any]
    threads: int
    devices: dict[int, EarlyObjects] = field(default_factory=dict[int, EarlyObjects])

    def add(self, kernel: KernelSource) -> None:
        if kernel.language != "c":
            return
        if kernel.device not in self.devices:
            self.devices[kernel.device] = EarlyObjects(
                c_flags(self.graph["devices"][kernel.device]["target"]), self.threads
            )
        self.devices[kernel.device].add(kernel)

    def finish(self) -> None:
        for objects in self.devices.values():
            objects.finish()


def _executable(built: build_cache.Built, devices: DeviceTable | None, report: Progress) -> Executable:
    exe = Executable(built.graph, built.kernels, built.params, devices)
    report.stage(f"built them on {', '.join(d.name for d in exe.devices)}")
    return exe


@dataclass
class Progress:
    """Stage lines on stderr (`xrelay.build  1.23 s  fuse-ops`), when asked for."""

    enabled: bool
    start_time: float = field(default_factory=time.perf_counter)

    @classmethod
    def start(cls, enabled: bool | None) -> Progress:
        return cls(bool(os.environ.get("XRELAY_PROGRESS")) if enabled is None else enabled)

    def stage(self, what: str) -> None:
        if self.enabled:
            print(f"xrelay.build {time.perf_counter() - self.start_time:7.2f} s  {what}", file=sys.stderr, flush=True)


def _by_language(kernels: Sequence[KernelSource]) -> str:
    counts = Counter(language_name(k.language) for k in kernels)
    return ", ".join(f"{n} {language}" for language, n in sorted(counts.items())) or "none"


def thread_count(num_threads: int | None) -> int:
    """`num_threads`, checked, or the default count."""
    try:
        return default_num_threads() if num_threads is None else check_num_threads(num_threads)
    except CompileError as e:
        raise UsageError(str(e)) from None


def record_threads(graph: dict[str, Any], threads: int) -> None:
    """Writes the thread count into each entry of the graph's `devices` whose kind's kernels
    share their loops among threads (cpu)."""
    for entry in graph["devices"]:
        kind = device_kind(entry["kind"])
        if kind is not None and kind.threads:
            entry["num_threads"] = threads


def record_features(graph: dict[str, Any]) -> None:
    """Writes into each entry of the graph's `devices` the features of the machine its
    target builds for (`Features.to_json()`), so that an executable, saved or not, says what
    its kernels were tiled and built for, and `load` can refuse a host that lacks them."""
    for entry in graph["devices"]:
        entry["features"] = target_features(entry["target"]).to_json()


def target_list(targets: str | Sequence[str]) -> tuple[str, ...]:
    """`targets` as a tuple of target strings, each with a code generator."""
    if isinstance(targets, str):
        targets = [t.strip() for t in targets.split(",")]
    if not isinstance(targets, Sequence) or not all(isinstance(t, str) for t in targets):
        raise UsageError(
            f"targets must be a target string or a sequence of them, e.g. ('c', 'opencl'), but was {targets!r}"
        )
    for target in targets:
        device = device_of_target(target)
        if device not in GENERATED_DEVICES:
            raise ConfigError(
                f'target "{target}" is for device type {device}, but xrelay generates kernels only for '
                + " and ".join(f"{d} ({lang})" for d, lang in GENERATED_DEVICES.items())
                + "; use targets such as ('c', 'opencl')"
            )
    return tuple(targets)


def bind_params(module: ModuleOp, params: Mapping[str, np.ndarray]) -> None:
    """Replaces the named parameters of @main by `relay.constant`s of their values. A
    parameter's `relay.se_scope` attribute pins its constant there; its `relay.held_as_is`
    (`batching`) keeps its constant from being pre-packed."""
    if not params:
        return
    main = entry_function(module)
    names = [arg.name_hint for arg in main.args]
    unknown = [name for name in params if name not in names]
    if unknown:
        raise InputError(
            f"params {', '.join(repr(n) for n in unknown)} are not parameters of @main "
            f"(its parameters: {', '.join('%' + str(n) for n in names)})"
        )
    arg_attrs = list(main.arg_attrs.data) if main.arg_attrs is not None else [DictionaryAttr({})] * len(names)
    block = main.body.block
    for index in reversed(range(len(names))):
        if names[index] in params:
            arg = main.args[index]
            value = check_input(names[index], arg.type, params[names[index]], what="param")
            scope = arg_attrs[index].data.get(SCOPE_ATTR)
            constant = relay.ConstantOp(relay.elements(value), scope if isinstance(scope, SEScopeAttr) else None)
            constant.results[0].name_hint = names[index]
            for attr in (HELD_AS_IS_ATTR, REGISTER_TILES_ATTR):
                if attr in arg_attrs[index].data:
                    constant.attributes[attr] = UnitAttr()
            Rewriter.insert_op(constant, InsertPoint.at_start(block))
            arg.replace_all_uses_with(constant.results[0])
            block.erase_arg(arg)
            del arg_attrs[index]
    main.arg_attrs = ArrayAttr(arg_attrs)
    main.update_function_type()


def lower(
    module: ModuleOp,
    targets: tuple[str, ...],
    default_device: str | None,
    host_target: str,
    progress: Progress | None = None,
    placement: Placement = "annotated",
    num_threads: int = 0,
    observe: Observer | None = None,
) -> None:
    """Runs the pipeline in place (with place-by-cost before plan-devices for `placement`
    "auto", or the placement it chose before) and verifies the result. `observe` sees the
    module after each pass."""
    Passes(targets, default_device, host_target, num_threads, progress, observe).run(
        module, pipeline(placement), placement
    )
    try:
        module.verify()
    except DiagnosticException as e:
        raise LoweringError(f"the lowered module does not verify (a compiler bug): {e}") from None


def place_only(
    module: ModuleOp,
    params: Mapping[str, np.ndarray],
    targets: tuple[str, ...],
    options: tuple[str | None, str, int],
    report: Progress,
) -> tuple[Chosen, set[SEScopeAttr]]:
    """The placement place-by-cost chooses for `module` with `params` bound, and the devices
    the module is then on (`planned_devices`): the pipeline through plan-devices, on a clone."""
    default_device, host_target, threads = options
    placed = module.clone()
    bind_params(placed, params)
    names = pipeline("auto")
    passes = Passes(targets, default_device, host_target, threads, report)
    choice = passes.run(placed, names[: names.index("plan-devices") + 1], "auto")
    assert choice is not None
    return choice, planned_devices(placed)


@dataclass(frozen=True)
class Passes:
    """The options of the pipeline's passes, and who sees the module after each."""

    targets: tuple[str, ...]
    default_device: str | None
    host_target: str
    num_threads: int = 0
    progress: Progress | None = None
    observe: Observer | None = None

    def run(self, module: ModuleOp, names: Sequence[str], placement: Placement) -> Chosen | None:
        """Runs the passes `names` on `module` in place; place-by-cost places by cost, or
        writes back `placement` when it is one chosen before. What place-by-cost chose, if it ran."""
        passes, ctx, choice = all_passes(), context(), None
        options = {"targets": self.targets, "default_device": self.default_device, "host_target": self.host_target}
        for name in names:
            with reported():
                if name == "place-by-cost":
                    choice = place_or_replay(
                        module, PlaceByCostPass(**options, num_threads=self.num_threads), placement
                    )
                else:
                    cls = passes[name]()
                    (cls(**options) if name == "plan-devices" else cls()).apply(ctx, module)
            if self.progress is not None:
                self.progress.stage(name)
            if self.observe is not None:
                self.observe(name, module)
        return choice


def place_or_replay(module: ModuleOp, by_cost: PlaceByCostPass, placement: Placement) -> Chosen:
    """place-by-cost on `module`, or `placement` written back where it was chosen before."""
    options = by_cost.options()
    if isinstance(placement, Chosen):
        place_by_cost.replay(module, options.config, placement)
        return placement
    return place_by_cost.chosen(place_by_cost.place(module, options))


def all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """xDSL's passes and xrelay's, by CLI name: what the pipelines here (and opt-tool) name."""
    from xdsl.transforms import get_all_passes as get_all_xdsl_passes

    from xrelay.transforms import get_all_passes

    return {**get_all_xdsl_passes(), **get_all_passes()}


@contextmanager
def reported() -> Iterator[None]:
    """A pass's errors as the driver reports them: an xrelay error without the bound weights
    in its notes, a diagnostic as a LoweringError."""
    try:
        yield
    except Error as e:
        shorten_notes(e)  # the module excerpt, without the bound weights
        raise
    except DiagnosticException as e:
        raise LoweringError("\n".join([str(e), *map(excerpt, getattr(e, "__notes__", []))])) from None
