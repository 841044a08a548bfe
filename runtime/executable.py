"""
`Executable` and `load`: a built program on its devices, ready to run, save and load again.

    exe = xrelay.runtime.load("model.xrelay")   # numpy, ctypes and pyopencl only
    out = exe.run(x)                             # numpy in, numpy out (one array, or a tuple)
    print(exe.profile(x, runs=10))               # min/median per node, copies, waits, pools
    exe.profile(x, runs=3).save_trace("run.json")  # the timeline, for Perfetto
    exe.save("copy.xrelay")

An executable is the compiler's plain output: the executor graph (whose `devices` list says
where each node runs), the kernel sources, the params, and the compiled C libraries. Each
device of the graph runs on a physical device chosen by the table `devices` (see
`xrelay.runtime.device`): by default `cpu:N` on the host and `opencl:N` on the N-th device
of the first OpenCL platform.

An artifact is code, so `load` refuses one that was not saved under this user's key (see
`xrelay.runtime.signing`) unless told `trust=True`. A saved C library is used when it was built on this machine with this compiler; otherwise
`load` rebuilds it from the saved sources and says so with a `LibraryRebuiltWarning`. Each
device of the graph records the features its kernels were tiled and built for
(`xrelay.runtime.machine`, `Executable.features`); kernels built for an instruction set this
host's processor lacks are refused with a `DeviceError` (they would stop with an illegal
instruction), whether loaded or rebuilt.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np

from xrelay.errors import CompileError, DeviceError, InputError
from xrelay.runtime import artifact
from xrelay.runtime.artifact import Artifact, SavedLibrary
from xrelay.runtime.batched import BatchedGraphs
from xrelay.runtime.c_library import available_cores, c_compiler_version, cpu_flags, machine
from xrelay.runtime.device import Device, DeviceTable, LoadedKernels, resolve_devices, share_cores
from xrelay.runtime.device_kinds import device_kind, language_name
from xrelay.runtime.executor import COPY, GraphExecutor
from xrelay.runtime.kernels import KernelSource
from xrelay.runtime.machine import Features, isa_of_flags, missing_extensions
from xrelay.runtime.profiling import Profile


class LibraryRebuiltWarning(UserWarning):
    """A saved C library was built for another machine or compiler and was rebuilt."""


def load(path: str | Path, devices: DeviceTable | None = None, *, trust: bool = False) -> Executable:
    """An executable saved with `Executable.save`. An artifact is code: its signature (under
    this user's key, `xrelay.runtime.signing`), its hashes and its graph are checked before
    anything is built or loaded. `trust=True` loads an artifact signed elsewhere, or not at
    all: this runs native code from the artifact."""
    saved = artifact.load(path, trust=trust)
    check_features(saved.graph)  # before a library of another machine is rebuilt
    _share_cores(saved.graph)  # before a queued device's worker pool starts
    libraries = {device: _usable(library, path, device) for device, library in saved.libraries.items()}
    return Executable(
        saved.graph,
        saved.kernels,
        saved.params,
        devices,
        {d: lib.data for d, lib in libraries.items() if lib is not None},
        saved.batches,
    )


def _share_cores(graph: Mapping[str, Any]) -> None:
    """As `xrelay.build(num_threads=N)` does: cpu kernels on fewer threads than there are
    cores leave the rest to the worker pools of queued devices (`share_cores`)."""
    entries = graph["devices"]
    threads = [int(entry["num_threads"]) for entry in entries if entry.get("num_threads")]
    if threads:
        share_cores(max(threads), available_cores(), [entry["kind"] for entry in entries])


def _usable(library: SavedLibrary, path: str | Path, device: int) -> SavedLibrary | None:
    """`library` if it runs here: built on this machine, with this compiler when there is one
    (a host without gcc can only use what it is given)."""
    try:
        compiler = c_compiler_version()
    except CompileError:
        compiler = library.compiler
    if (library.machine, library.compiler) == (machine(), compiler):
        return library
    warnings.warn(
        f"{path}: the C kernels of device {device} were built on {library.machine} with "
        f"{library.compiler}; this is {machine()} with {compiler}: rebuilding them from the "
        "saved sources",
        LibraryRebuiltWarning,
        stacklevel=3,
    )
    return None


def recorded_features(graph: Mapping[str, Any]) -> dict[int, Features]:
    """The features each device of `graph` was built for, by device index (where recorded)."""
    devices = graph["devices"]
    return {i: Features.from_json(entry["features"]) for i, entry in enumerate(devices) if "features" in entry}


def check_features(graph: Mapping[str, Any]) -> None:
    """Refuses a graph whose kernels were built for an instruction set this host's processor
    lacks (its `cpu_flags()`, which `machine()` digests; nothing to check where the OS does
    not list them)."""
    flags = cpu_flags()
    if flags is None:
        return
    for index, features in recorded_features(graph).items():
        missing = missing_extensions(features.isa, flags)
        if missing:
            entry = graph["devices"][index]
            host = isa_of_flags(flags) or "a machine with none of them"
            example = f"c -march={host}" if host.startswith("x86-64-v") else "c -march=x86-64-v2"
            raise DeviceError(
                f'device {index} (scope {entry["kind"]}:{entry["id"]}, target "{entry["target"]}") runs kernels '
                f"built for {features.isa} ({features.name}), but this host is {host} ({machine()}) and lacks "
                f"{', '.join(missing)}: they would stop with an illegal instruction; build the program again "
                f"on this host, or build it for the oldest machine it must run on, e.g. targets=({example!r},)"
            )


class Executable:
    """A built program: its executor graph, kernel sources and params, ready on its devices.

    `run` and `profile` are safe to call from several threads at once (see
    `xrelay.runtime.executor`: each concurrent call runs in a workspace of its own).

    `batches`, of an executable built with `batch_sizes`: the graph of each batch size (`graph`
    is the largest's), which share the kernels, params and devices; `run` then takes any batch
    (`xrelay.runtime.batched`)."""

    def __init__(
        self,
        graph: dict[str, Any],
        kernels: Sequence[KernelSource],
        params: Mapping[str, np.ndarray],
        devices: DeviceTable | None = None,
        libraries: Mapping[int, bytes] | None = None,
        batches: Mapping[int, dict[str, Any]] | None = None,
    ):
        self.graph, self.kernels, self.params = graph, list(kernels), dict(params)
        self.batches = dict(sorted((batches or {}).items()))
        _check_batches(graph, self.batches)
        check_features(graph)
        # The features each device's kernels were tiled and built for, by device index.
        self.features = recorded_features(graph)
        self.scopes = [(d["kind"], int(d["id"])) for d in graph["devices"]]
        self.devices = resolve_devices(self.scopes, devices)
        self.loaded = self._load_kernels(libraries or {})
        self.executor = GraphExecutor(graph, self.devices, [k.kernels for k in self.loaded], self.params)
        self.batched = self._batched() if self.batches else None

    def _batched(self) -> BatchedGraphs:
        """An executor per batch size, sharing the params' buffers with the largest's."""
        kernels, buffers = [k.kernels for k in self.loaded], self.executor.param_buffers
        largest = max(self.batches)
        return BatchedGraphs(
            {
                size: self.executor
                if size == largest
                else GraphExecutor(graph, self.devices, kernels, self.params, buffers)
                for size, graph in self.batches.items()
            }
        )

    @property
    def batch_sizes(self) -> tuple[int, ...]:
        """The batch sizes it was built for, smallest first (`run` takes any batch); () for an
        executable of one graph, whose `run` takes exactly its inputs' shapes."""
        return tuple(self.batches)

    def _load_kernels(self, libraries: Mapping[int, bytes]) -> list[LoadedKernels]:
        """Each device builds the kernels of its scope (or loads its saved library)."""
        loaded: list[LoadedKernels] = []
        for index, (device, entry) in enumerate(zip(self.devices, self.graph["devices"])):
            sources = [k for k in self.kernels if k.device == index]
            self._check_language(device, entry, sources)
            threads = entry.get("num_threads")
            loaded.append(device.load(sources, entry["target"], libraries.get(index), threads))
        return loaded

    @staticmethod
    def _check_language(device: Device, entry: Mapping[str, Any], sources: Sequence[KernelSource]) -> None:
        wrong = [k for k in sources if device.language is not None and k.language != device.language]
        if wrong:
            kind = device_kind(entry["kind"])
            example = kind.default_spec(0) if kind is not None else entry["kind"]
            raise DeviceError(
                f"scope {entry['kind']}:{entry['id']}'s kernels are {language_name(wrong[0].language)} "
                f"and cannot run on device {device.name}, which runs {language_name(device.language or '')} "
                f"kernels; map the scope to a device of its kind, e.g. {example!r}"
            )

    # --- running ---------------------------------------------------------------------------

    def run(self, *inputs: Any, **named: Any) -> np.ndarray | tuple[np.ndarray, ...]:
        """Runs the program on numpy inputs: positional in @main's parameter order
        (`run(x, y)`, or one sequence `run([x, y])`), a dict by name (`run({"x": x})`; an
        imported model's inputs by their names in the model, even ones that are not
        identifiers: `run({"input.1": x})`), or keywords (`run(x=x)`); one array, or a tuple
        for several results."""
        runner = self.batched or self.executor
        return _results(runner.run(self._by_name(inputs, named)))

    def profile(self, *inputs: Any, runs: int = 1, **named: Any) -> Profile:
        """Runs `runs` times (inputs as `run` takes them), timing every node (waiting for its
        devices): per node the min and median, copies and waits per device, pools, and the
        timeline (`save_trace`). Built with batch sizes: of the size the batch runs at."""
        report = (self.batched or self.executor).profile(self._by_name(inputs, named), runs)
        report.outputs = _results(report.outputs)
        return report

    def _by_name(self, inputs: tuple[Any, ...], named: Mapping[str, Any]) -> dict[str, Any]:
        if len(inputs) == 1 and isinstance(inputs[0], Mapping):
            return {**inputs[0], **named}
        if len(inputs) == 1 and isinstance(inputs[0], list | tuple):
            inputs = tuple(cast(Sequence[Any], inputs[0]))  # one sequence of arrays
        if inputs and (named or len(inputs) != len(self.input_names)):
            raise InputError(
                f"the program takes {len(self.input_names)} inputs ({', '.join(self.input_names)}), "
                f"but {len(inputs)} were given by position" + (" and more by name" if named else "")
            )
        return dict(zip(self.input_names, inputs)) if inputs else dict(named)

    @property
    def input_names(self) -> list[str]:
        return list(self.executor.inputs)

    def placement(self, batch_size: int | None = None) -> list[tuple[str, str]]:
        """`(node, device)` for every kernel and copy, in execution order (copies as `src -> dst`).
        Built with batch sizes: of the graph of `batch_size` (one of `batch_sizes`; by default the
        largest), as `placement="auto"` may place each size differently."""
        ex = self._executor_of(batch_size)
        rows: list[tuple[str, str]] = []
        for _, index in ex.steps:
            node, device = ex.nodes[index], ex.labels[ex.entries[index].device]
            if node["attrs"]["func_name"] == COPY:
                device = f"{ex.labels[ex.entries[ex.copy_source(index)].device]} -> {device}"
            rows.append((node["name"], device))
        return rows

    def _executor_of(self, batch_size: int | None) -> GraphExecutor:
        if batch_size is None:
            return self.executor
        if self.batched is None or batch_size not in self.batched.executors:
            sizes = ", ".join(map(str, self.batch_sizes)) or "none: it was built without batch_sizes"
            raise InputError(f"no graph of batch size {batch_size}; the executable's batch sizes are {sizes}")
        return self.batched.executors[batch_size]

    def save(self, path: str | Path) -> None:
        """Saves the graph, params, kernel sources and compiled libraries to a directory."""
        libraries = {
            index: SavedLibrary(k.library, machine(), c_compiler_version())
            for index, k in enumerate(self.loaded)
            if k.library is not None
        }
        artifact.save(path, Artifact(self.graph, self.params, self.kernels, libraries, self.batches))


def _check_batches(graph: Mapping[str, Any], batches: Mapping[int, Mapping[str, Any]]) -> None:
    """The graphs of the batch sizes run on `graph`'s devices, and `graph` is the largest's."""
    if not batches:
        return
    if batches[max(batches)] is not graph and batches[max(batches)] != graph:
        raise DeviceError(f"the executable's graph must be the graph of its largest batch size, {max(batches)}")
    for size, other in batches.items():
        if other.get("devices") != graph.get("devices"):
            raise DeviceError(
                f"the graph of batch size {size} runs on devices {other.get('devices')}, but the executable's "
                f"on {graph.get('devices')}; the graphs of all batch sizes share their devices"
            )


def _results(outputs: list[np.ndarray]) -> np.ndarray | tuple[np.ndarray, ...]:
    return outputs[0] if len(outputs) == 1 else tuple(outputs)
