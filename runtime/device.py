"""
Devices the graph executor runs on: the interface every device implements, the registry of
runtime devices (each device kind's `runtime_device` in `xrelay.runtime.device_kinds`, and
the test-only `numpy`), and the table that maps the program's virtual scopes to physical devices.

A device allocates buffers, views a buffer as a typed tensor, moves tensors to and from host
memory, builds the kernels of its scope and binds a kernel to its argument tensors once, so
that running a node is one call. A device with a queue also starts transfers without waiting
for them and holds its queue back while a run queues its work (`start_write`, `start_read`,
`hold`), so that a run waits once, at its end. The compiler decided everything else.

Physical devices are named by a spec string, `kind[:index]`: `cpu`, `opencl:1` (the second
device of the OpenCL platform), `numpy` (host memory, Python kernels; for tests). A virtual
scope `device:id` of the program maps to a spec through a table the user may pass
(`{("opencl", 1): "opencl:0"}`, or with string keys `{"opencl:1": "opencl:0"}`); without an
entry, a scope runs on its kind's `default_spec`: `cpu:N` on `cpu` (the host is one device)
and `opencl:N` on `opencl:N`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, ClassVar, TypeAlias

import numpy as np

from xrelay.errors import DeviceError
from xrelay.runtime.device_kinds import DEVICE_KINDS as KINDS
from xrelay.runtime.device_kinds import device_kind, resolve
from xrelay.runtime.kernels import KernelSource

Tensor: TypeAlias = Any
Kernel: TypeAlias = Any
Wait: TypeAlias = Callable[[], None]  # waits for (or releases) something a device started
DeviceTable: TypeAlias = Mapping["tuple[str, int] | str", "str | Device"]


@dataclass(frozen=True)
class MemoryLimits:
    """A device's memory: the largest buffer it allocates and its total, in bytes."""

    buffer: int | None
    total: int | None


@dataclass(frozen=True)
class LoadedKernels:
    """The kernels one device built, by name, and the binary to save with them (a C shared
    library; None where the platform keeps its own cache, as OpenCL does)."""

    kernels: Mapping[str, Kernel]
    library: bytes | None = None


class Device(ABC):
    """One physical device: memory, kernels, and the work queue they run on."""

    kind: ClassVar[str]
    language: ClassVar[str | None] = None  # the kernel language it builds ("c", "opencl")
    host_memory: ClassVar[bool] = False  # tensors are numpy arrays the host reads directly
    # True where a kernel is compiled at its first launch (PoCL): the executor launches each
    # once when it loads, so the first `run` is as fast as the others.
    compiles_at_first_launch: ClassVar[bool] = False
    # The host's cores its worker threads are pinned to (PoCL's); a run whose host kernels
    # overlap its work keeps the host's thread off them (`xrelay.runtime.executor`).
    worker_cores: frozenset[int] = frozenset()

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"

    @abstractmethod
    def alloc(self, nbytes: int) -> Any:
        """A buffer of at least `nbytes` bytes."""

    def share(self, array: np.ndarray) -> Any | None:
        """A buffer of this device that is `array`'s own memory, for a param nothing will
        change; None when the device must allocate a buffer and write a copy (by default:
        its memory is not the host's)."""
        return None

    def memory_limits(self) -> MemoryLimits:
        """How large one buffer, and all of them together, may be (None: unknown)."""
        return MemoryLimits(None, None)

    @abstractmethod
    def tensor(self, buffer: Any, shape: Sequence[int], dtype: np.dtype, offset: int = 0) -> Tensor:
        """A tensor of `shape` and `dtype` at byte `offset` of `buffer` (a multiple of its
        kind's `offset_alignment`, `xrelay.runtime.device_kinds`)."""

    @abstractmethod
    def write(self, dst: Tensor, src: np.ndarray) -> None:
        """Copies a host array into a tensor of this device."""

    @abstractmethod
    def read(self, src: Tensor, dst: np.ndarray) -> None:
        """Copies a tensor of this device into a host array (waits for pending work)."""

    def start_write(self, dst: Tensor, src: np.ndarray) -> Wait:
        """Queues a copy of a host array into a tensor of this device, behind the work queued
        before it, and returns a call that waits for it; `src` stays unchanged until then.
        (By default the copy is done at once.)"""
        self.write(dst, src)
        return done

    def start_read(self, src: Tensor, dst: np.ndarray) -> Wait:
        """Queues a copy of a tensor of this device into a host array, after the work queued
        before it, and returns a call that waits for it; `dst` holds the tensor after the
        call. (By default the copy is done at once.)"""
        self.read(src, dst)
        return done

    def hold(self) -> Wait:
        """Holds back the work queued on this device from now on until the returned call
        releases it, so that a run queues all its work before the device wakes up to do it.
        Release a hold before waiting for anything queued after it. (By default nothing
        is held.)"""
        return done

    def copy_peer(self, dst: Tensor, src_device: Device, src: Tensor, nbytes: int) -> bool:
        """Copies `src` of `src_device` straight into `dst`, if this device can; else False."""
        return False

    @abstractmethod
    def load(
        self,
        sources: Sequence[KernelSource],
        target: str,
        library: bytes | None = None,
        num_threads: int | None = None,
    ) -> LoadedKernels:
        """Builds `sources` for this device with the options of `target` (the scope's target
        string, e.g. `"c -O2"`), or loads them from `library`, a binary saved by an earlier
        load of the same sources on this kind of device. `num_threads` is how many threads
        a kernel may use (the graph's `devices` entry says; None: the device's default)."""

    @abstractmethod
    def bind(self, kernel: Kernel, args: Sequence[Tensor]) -> Callable[[], None]:
        """A call that runs `kernel` on `args` (inputs, then the output)."""

    def event_span(self, started: Any) -> tuple[float, float] | None:
        """When work this device started ran, by its own timing: `started` is what a bound
        kernel call or `start_write`/`start_read` returned; (start, end) in seconds of
        `time.perf_counter`'s clock, or None where the device does not time its work (by
        default)."""
        return None

    def sync(self) -> None:  # noqa: B027 (a device without a queue has nothing to wait for)
        """Waits until the work queued on this device is done."""


def done() -> None:
    """The wait of something already done."""


# --- registry ----------------------------------------------------------------------------

# spec kind -> "module:Class" under xrelay.runtime; the class takes the spec's index. The
# device kinds' own, and `numpy`, a device of the runtime only (host memory, Python kernels:
# for tests), which no scope compiles for.
DEVICE_KINDS: dict[str, str] = {
    **{kind.name: kind.runtime_device for kind in KINDS if kind.runtime_device},
    "numpy": "numpy_device:NumpyDevice",
}


def parse_spec(spec: str) -> tuple[str, int]:
    kind, _, index = spec.partition(":")
    if kind not in DEVICE_KINDS or (index and not index.isdigit()):
        raise DeviceError(
            f"unknown device '{spec}'; expected kind[:index] with kind one of {', '.join(DEVICE_KINDS)}, "
            "e.g. cpu or opencl:1"
        )
    return kind, int(index or 0)


@cache
def open_device(spec: str) -> Device:
    """The device named by `spec` (one object per spec for the whole process)."""
    kind, index = parse_spec(spec)
    return resolve(DEVICE_KINDS[kind], "xrelay.runtime")(index)


def share_cores(host_threads: int, cores: int, kinds: Sequence[str]) -> list[str]:
    """Gives the worker pools of device kinds `kinds` (those with `worker_threads` in their row:
    PoCL's) the `cores` the host's kernel threads leave, so that a cpu kernel and a queued
    device's kernel running at the same time (`xrelay.runtime.executor`) take a core each
    rather than share one: on 2 cores, C kernels on 1 thread leave PoCL 1. Nothing where the
    host's threads take every core, or a pool's count was set (its environment variable, or
    its platform started already); the kinds whose pools it set."""
    if host_threads >= cores:
        return []
    rows = [row for row in (device_kind(k) for k in dict.fromkeys(kinds)) if row is not None and row.worker_threads]
    return [row.name for row in rows if resolve(row.worker_threads, "xrelay.runtime")(cores - host_threads)]


# --- virtual scopes to physical devices ----------------------------------------------------


def default_spec(device: str, id: int) -> str:
    """The physical device scope `device:id` runs on without an entry in the table."""
    kind = device_kind(device)
    if kind is None or not kind.runtime_device:
        runs = " and ".join(k.name for k in KINDS if k.runtime_device)
        raise DeviceError(f"no runtime device for scope {device}:{id}; xrelay runs {runs} scopes")
    return kind.default_spec(id)


def resolve_devices(scopes: Sequence[tuple[str, int]], table: DeviceTable | None = None) -> list[Device]:
    """The physical device of each virtual scope `(device, id)`, through `table`."""
    entries = {_key(k): v for k, v in (table or {}).items()}
    unknown = [f"{d}:{i}" for d, i in entries if (d, i) not in scopes]
    if unknown:
        raise DeviceError(
            f"the device table maps {', '.join(unknown)}, which the program does not use; "
            f"its scopes are {', '.join(f'{d}:{i}' for d, i in scopes)}"
        )
    devices: list[Device] = []
    for device, id in scopes:
        target = entries.get((device, id)) or default_spec(device, id)
        devices.append(target if isinstance(target, Device) else open_device(target))
    return devices


def _key(key: tuple[str, int] | str) -> tuple[str, int]:
    if isinstance(key, str):
        device, _, id = key.partition(":")
        if not id.isdigit() and id:
            raise DeviceError(f"bad device table key '{key}'; expected 'device:id' such as 'opencl:1'")
        return device, int(id or 0)
    return key[0], int(key[1])
