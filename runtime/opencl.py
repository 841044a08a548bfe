"""
`opencl:N`: the N-th device of the first OpenCL platform (PoCL on machines without a GPU;
`POCL_DEVICES="pthread pthread"` gives two). All devices of a platform share one context, so
a copy between two of them is one `enqueue_copy`; each device has its own in-order queue.

Kernels are built into one pyopencl program per load (`build_opencl`); each launch gets its
own `cl.Kernel` object with its buffers set once, so running a node is one enqueue over the
kernel's NDRange (`KernelSource.global_size`), in work groups of `KernelSource.local_size`
when the compiler gave one. (PoCL's pthread device, left to choose, makes a small NDRange one
work group, run by one thread: a kernel of a few heavy work items gives each its own group.)

    prg = build_opencl(ctx, sources)                      # OpenCLProgram
    prg["fused_add"](queue, a_buf, b_buf, out_buf)        # enqueues on the NDRange

A run waits for its device once. Each launch through PoCL that the host waits for costs a round
trip to PoCL's worker threads (about 50 us, more when they sleep), so transfers start without
waiting (`start_write`, `start_read`: a pyopencl event keeps the host array alive), and a run
`hold`s the queue behind a user event while it queues its work: when the host and PoCL's
workers share a core, work released kernel by kernel left the host's enqueues waiting for the
kernels (CNN, interleaved with other runtimes: 0.50 ms against 0.32 ms held). Nothing wakes
the workers before the release: a marker queued ahead of the hold, meant to wake them while
the host queues the run, did not keep them awake until the release (the gate's marker started
28 us after it, against 33 without) and cost more than it saved. The CNN of bench/models.py at
one PoCL thread over the C build, each run after numpy, C and onnxruntime in a shuffled order
(40 rounds): with the marker 1.75x, without 1.66x, with no hold at all 1.53x; with the other
core busy 1.78x, 1.60x and 2.25x; at two threads 2.00x, 1.80x, 2.00x. A copy between two
devices of the context is ordered by events, never by a `finish`.

The host waits for a run's results (`start_read`'s wait, `poll_then_wait`) by polling the last
copy's event, yielding its core between polls, for up to POLL_SECONDS, and only then sleeps in
`clWaitForEvents`: a run that ends within the poll does not wait for the host to be woken. It
polls only where the device's worker threads leave it a core (`host_poll_seconds`): PoCL on
one thread of two cores, the CNN of bench/models.py, each run after numpy, the C build and
onnxruntime (25 rounds, the variants in a shuffled order): 0.38-0.39 -> 0.34-0.35 ms; the
ResNet block and the transformer (2-3 ms, past the poll) the same within 2%; with the other
core busy, the CNN the same (0.312 / 0.316 ms). With as many workers as cores, the polling
host took a core from one of them (the CNN at 2 pinned threads, 0.29 ms at one thread: 0.52
ms). Without the hold the CNN took 0.28 ms on the idle machine but 0.39 ms with the other core
busy (0.32 held): the hold stays.

PoCL's worker threads are pinned one to a core (`pin_pocl_workers`, POCL_AFFINITY=1) where
there are two or more. Unpinned, its two workers ran on one core: a kernel of two work groups
of 2.2 ms each took 4.5 ms on 2 workers as on 1, and 2.3 ms pinned; two such kernels on the
two devices of "pthread pthread" at once 6.7 ms, pinned 4.5. Unpinned, the ResNet block's two
kernels took 2.2-2.7 ms of device time at 2 threads after numpy, the C build or onnxruntime,
as at one thread, against 1.3-1.8 ms pinned; bench/models.py (20 rounds, one run each way,
then once more pinned), OpenCL over C at 2 threads: ResNet block 1.90 -> 1.25-1.28x,
transformer 1.77 -> 1.10-1.12x, MLP 1.14 -> 1.16-1.20x, and the CNN 1.84 -> 2.09-2.17x (its
largest kernel is one work item). PoCL 3.1 runs one pool of workers for all its pthread
devices: POCL_MAX_PTHREAD_COUNT of them, else one per core (with POCL_DEVICES="pthread
pthread" on 2 cores, 2 threads, and each device reports 2 compute units).
"""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache, partial
from typing import Any

import numpy as np

from xrelay.errors import CompileError, DeviceError
from xrelay.runtime.device import Device, Kernel, LoadedKernels, MemoryLimits, Wait, done
from xrelay.runtime.device_kinds import device_kind
from xrelay.runtime.kernels import KernelSource

OPENCL_INSTALL_HINT = (
    "install an OpenCL platform and the pyopencl package, e.g. on Debian "
    "`apt-get install pocl-opencl-icd` and `pip install pyopencl`"
)
# How long the host polls a run's last event before it sleeps on it (see the module docstring).
POLL_SECONDS = 1e-3
# Gives the core to another runnable thread (PoCL's workers, when they share it with the host).
yield_core: Callable[[], None] = getattr(os, "sched_yield", lambda: time.sleep(0))

OTHER_DEVICE_HINT = (
    "PoCL runs OpenCL on the CPU (`make setup` installs it when run as root); or map the "
    "scope to another device with build(..., devices={...})"
)


# --- the platform ----------------------------------------------------------------------------


def import_pyopencl() -> Any:
    pin_pocl_workers()
    try:
        import pyopencl
    except ImportError as e:
        raise DeviceError(f"no OpenCL: pyopencl cannot be imported ({e}); {OPENCL_INSTALL_HINT}") from None
    return pyopencl


# PoCL's pthread devices read their worker count from this variable once, when the platform
# starts (PoCL 3.1 reads no POCL_CPU_MAX_CU_NUM, which later PoCLs also take).
WORKERS_VARIABLE = "POCL_MAX_PTHREAD_COUNT"


def set_worker_threads(count: int) -> bool:
    """Asks PoCL for `count` worker threads where its platform has not started in this process
    and the environment does not give a count already; whether it did (see
    `xrelay.runtime.device.share_cores`)."""
    if os.environ.get(WORKERS_VARIABLE) or platform_started():
        return False
    os.environ[WORKERS_VARIABLE] = str(count)
    return True


def platform_started() -> bool:
    """Whether PoCL may have read its environment in this process: pyopencl is imported (xrelay
    imports it only to ask the platforms, `import_pyopencl` and `machine.opencl_features`)."""
    return "pyopencl" in sys.modules


def usable_cores() -> set[int]:
    """The cores this process may run on."""
    return os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else set(range(os.cpu_count() or 1))


def pin_pocl_workers() -> None:
    """Asks PoCL's pthread devices to pin their worker threads one to a core (POCL_AFFINITY=1)
    where they run two or more, or fewer than the cores (then the host's kernels keep to the
    cores they leave, `worker_cores`: bench/branchy.py split, C and PoCL on 1 thread each,
    processes pinned and not interleaved, load 7.5: medians 1.13 / 0.91 ms pinned, 1.31 / 1.17
    not; with a test suite also running, 6.1 against 1.3, the pinned worker waiting for its
    busy core), and the environment does not say otherwise. The workers, one
    pool for every pthread device of POCL_DEVICES, are POCL_MAX_PTHREAD_COUNT, else one per
    usable core. Only where the process may use cores 0 to n - 1 and there are no more workers
    than that: PoCL pins worker i to core i and aborts the process when it cannot (4 workers on
    2 cores). PoCL reads the variable when the platform starts, so this runs before pyopencl
    is first used (see the module docstring)."""
    cores = usable_cores()
    try:
        workers = int(os.environ.get(WORKERS_VARIABLE) or len(cores))
    except ValueError:
        return  # PoCL's own problem to report
    if 1 <= workers <= len(cores) and len(cores) > 1 and cores == set(range(len(cores))):
        os.environ.setdefault("POCL_AFFINITY", "1")


def worker_cores() -> frozenset[int]:
    """The cores PoCL's workers are pinned to, as the environment says when its platform
    starts: worker i to core i with POCL_AFFINITY=1 (`pin_pocl_workers`), else none."""
    try:
        workers = int(os.environ.get(WORKERS_VARIABLE) or len(usable_cores()))
    except ValueError:
        return frozenset()
    return frozenset(range(workers)) if os.environ.get("POCL_AFFINITY") == "1" else frozenset()


def host_poll_seconds(device: Any) -> float:
    """How long the host polls for a run's results on `device` before it sleeps (see the
    module docstring): POLL_SECONDS unless the device is the CPU and its worker threads take
    every core the host could poll from."""
    cpu = device.type & import_pyopencl().device_type.CPU
    return 0.0 if cpu and device.max_compute_units >= len(usable_cores()) else POLL_SECONDS


def opencl_platforms() -> list[Any]:
    """The OpenCL platforms that have devices; a DeviceError when there are none."""
    cl = import_pyopencl()
    try:
        platforms = [p for p in cl.get_platforms() if p.get_devices()]
    except cl.Error:
        platforms = []
    if not platforms:
        raise DeviceError(f"no OpenCL platform found; {OPENCL_INSTALL_HINT}")
    return platforms


def default_opencl_context() -> Any:
    """A new context on every device of the first OpenCL platform."""
    cl = import_pyopencl()
    return cl.Context(opencl_platforms()[0].get_devices())


@cache
def platform_context(platform_index: int = 0) -> tuple[Any, list[Any]]:
    """One context over every device of the platform, and those devices."""
    cl = import_pyopencl()
    try:
        platform = opencl_platforms()[platform_index]
    except DeviceError as e:
        raise DeviceError(f"an opencl scope needs an OpenCL device, but {e}; {OTHER_DEVICE_HINT}") from None
    devices = platform.get_devices()
    return cl.Context(devices), devices


# --- building kernels ----------------------------------------------------------------------


@dataclass(eq=False)
class OpenCLKernel:
    """One OpenCL kernel; its `cl.Kernel` object is made once and reused."""

    name: str
    num_inputs: int
    global_size: tuple[int, ...]
    local_size: tuple[int, ...] | None
    kernel: Any  # pyopencl.Kernel

    def __call__(self, queue: Any, *buffers: Any, wait_for: Sequence[Any] | None = None) -> Any:
        """Enqueues the kernel over its NDRange (in its work groups) on `queue`; the event."""
        if len(buffers) != self.num_inputs + 1:
            raise TypeError(
                f"kernel {self.name} takes {self.num_inputs} inputs and one output, "
                f"but was given {len(buffers)} buffers"
            )
        cl = import_pyopencl()
        self.kernel.set_args(*buffers)
        return cl.enqueue_nd_range_kernel(queue, self.kernel, self.global_size, self.local_size, wait_for=wait_for)


@dataclass(eq=False)
class OpenCLProgram:
    """The OpenCL kernels of one build, as one program on one context."""

    program: Any  # pyopencl.Program
    kernels: dict[str, OpenCLKernel] = field(default_factory=dict[str, OpenCLKernel])

    def __getitem__(self, name: str) -> OpenCLKernel:
        return self.kernels[name]


def build_opencl(cl_context: Any | None, sources: Sequence[KernelSource], options: Sequence[str] = ()) -> OpenCLProgram:
    """Builds OpenCL kernels for the devices of `cl_context` (the default context if None).

    Not cached here: the platform caches built programs itself (PoCL: 0.02 s warm), and
    fetching device binaries to cache them would double a cold PoCL build, which then
    compiles every kernel's work-group function up front (24 kernels: 3 s -> 7.7 s). Nor
    would a program made from such a binary spare the first launches: PoCL compiles each
    kernel's work-group function for its local size then, binary or not (the zoo's
    transformer block, 12 kernels, empty PoCL cache: from source 0.50 s + first launches
    0.69 s; binaries fetched +0.80 s; from them 0.01 s + 0.69 s; PoCL's cache 0.05 s + 0.002 s).
    """
    cl = import_pyopencl()
    for s in sources:
        if s.language != "opencl":
            raise CompileError(f"kernel {s.name} is {s.language} code, but this builder builds opencl kernels")
    context = cl_context if cl_context is not None else default_opencl_context()
    text = "\n".join(s.source for s in sources)
    try:
        program = cl.Program(context, text).build(options=list(options))
    except cl.RuntimeError as e:
        names = ", ".join(s.name for s in sources)
        raise CompileError(f"the OpenCL compiler failed on kernels {names}:\n{e}") from None
    result = OpenCLProgram(program)
    for s in sources:
        kernel = cl.Kernel(program, s.name)
        result.kernels[s.name] = OpenCLKernel(s.name, s.num_inputs, s.global_size, s.local_size, kernel)
    return result


def run_opencl_kernel(
    queue: Any, kernel: OpenCLKernel, inputs: Sequence[np.ndarray], out_shape: Sequence[int]
) -> np.ndarray:
    """Copies `inputs` and a zeroed output to the device, runs `kernel`, returns the output."""
    cl = import_pyopencl()
    mf = cl.mem_flags
    context = queue.context
    bufs = [cl.Buffer(context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=_host(a)) for a in inputs]
    out = np.zeros(out_shape, np.float32)
    out_buf = cl.Buffer(context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=_host(out))
    kernel(queue, *bufs, out_buf)
    cl.enqueue_copy(queue, out, out_buf)
    return out


def _host(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a, np.float32)
    return a if a.size else np.zeros(1, np.float32)


# --- the device ----------------------------------------------------------------------------


def poll_then_wait(event: Any, seconds: float) -> None:
    """Returns when `event` (a pyopencl event) has completed: polls its status for up to
    `seconds`, yielding the core between polls, then waits in `event.wait()` (which raises if
    the command failed)."""
    deadline = time.perf_counter() + seconds
    while event.command_execution_status > 0 and time.perf_counter() < deadline:  # 0: complete; < 0: failed
        yield_core()
    event.wait()


@dataclass(eq=False)
class EventWait:
    """The wait of a started transfer: its pyopencl event (which keeps the host array alive),
    waited by polling for up to `poll_seconds` first (`poll_then_wait`)."""

    event: Any
    poll_seconds: float = 0.0

    def __call__(self) -> None:
        if self.poll_seconds:
            poll_then_wait(self.event, self.poll_seconds)
        else:
            self.event.wait()


@dataclass(eq=False)
class CLTensor:
    """A tensor at the start of an OpenCL buffer."""

    buffer: Any
    shape: tuple[int, ...]
    dtype: np.dtype
    # computed once: a run asks for it per transfer (np.prod took 3-11 us of the CNN's run)
    nbytes: int = field(init=False)

    def __post_init__(self) -> None:
        self.nbytes = math.prod(self.shape) * self.dtype.itemsize


class OpenCLDevice(Device):
    kind = "opencl"
    language = "opencl"
    compiles_at_first_launch = True  # PoCL builds a work-group function per kernel then: 0.2-2.5 s

    def __init__(self, index: int = 0, platform: int = 0):
        super().__init__(f"opencl:{index}")
        self.cl = import_pyopencl()
        self.context, devices = platform_context(platform)
        if index >= len(devices):
            raise DeviceError(
                f"device opencl:{index} does not exist: the OpenCL platform has {len(devices)} "
                f"device(s) ({', '.join(d.name for d in devices)}); with PoCL, "
                'POCL_DEVICES="pthread pthread" gives two, or map the scope to an existing device'
            )
        self.device = devices[index]
        # profiling events: `event_span` (exe.profile's trace); no slower a run (see EventWait)
        profiling = self.cl.command_queue_properties.PROFILING_ENABLE
        self.queue = self.cl.CommandQueue(self.context, self.device, properties=profiling)
        self.poll_seconds = host_poll_seconds(self.device)
        self.clock_offset: int | None = None  # perf_counter_ns minus the device's clock, once measured
        cpu = self.device.type & self.cl.device_type.CPU
        self.worker_cores = worker_cores() if cpu else frozenset()

    def alloc(self, nbytes: int) -> Any:
        return self.cl.Buffer(self.context, self.cl.mem_flags.READ_WRITE, max(nbytes, 4))

    def memory_limits(self) -> MemoryLimits:
        return MemoryLimits(int(self.device.max_mem_alloc_size), int(self.device.global_mem_size))

    def tensor(self, buffer: Any, shape: Sequence[int], dtype: np.dtype, offset: int = 0) -> CLTensor:
        """At an offset: a sub-buffer (kernels take buffers, not pointers), whose origin must be
        a multiple of the device's CL_DEVICE_MEM_BASE_ADDR_ALIGN."""
        tensor = CLTensor(buffer, tuple(shape), np.dtype(dtype))
        if not offset or not tensor.nbytes:
            return tensor
        align = int(self.device.mem_base_addr_align) // 8  # (in bits)
        if offset % align:
            planned = getattr(device_kind(self.kind), "offset_alignment", None)
            raise DeviceError(
                f"device {self.name} takes a tensor at an offset in a buffer that is a multiple of {align} bytes "
                f"(CL_DEVICE_MEM_BASE_ADDR_ALIGN), but the graph stores one at byte {offset}: it was planned "
                f"for devices that take multiples of {planned} bytes"
            )
        tensor.buffer = buffer.get_sub_region(offset, tensor.nbytes)
        return tensor

    def write(self, dst: CLTensor, src: np.ndarray) -> None:
        self.start_write(dst, src)()

    def read(self, src: CLTensor, dst: np.ndarray) -> None:
        self.start_read(src, dst)()

    def start_write(self, dst: CLTensor, src: np.ndarray) -> Wait:
        if not dst.nbytes:
            return done
        # pyopencl's event keeps `src` alive, and waits for the copy if dropped before it ends
        return EventWait(self.cl.enqueue_copy(self.queue, dst.buffer, src, is_blocking=False))

    def start_read(self, src: CLTensor, dst: np.ndarray) -> Wait:
        if not src.nbytes:
            return done
        return EventWait(self.cl.enqueue_copy(self.queue, dst, src.buffer, is_blocking=False), self.poll_seconds)

    def hold(self) -> Wait:
        gate = self.cl.UserEvent(self.context)
        self.cl.enqueue_marker(self.queue, wait_for=[gate])  # the queue is in order
        return partial(gate.set_status, self.cl.command_execution_status.COMPLETE)

    def copy_peer(self, dst: CLTensor, src_device: Device, src: CLTensor, nbytes: int) -> bool:
        """One copy on this queue, ordered after the source's producer on its queue; the
        source's queue then waits for it before reusing the storage. Nothing blocks."""
        if not isinstance(src_device, OpenCLDevice) or src_device.context is not self.context:
            return False
        if nbytes:
            produced = self.cl.enqueue_marker(src_device.queue)
            copied = self.cl.enqueue_copy(self.queue, dst.buffer, src.buffer, byte_count=nbytes, wait_for=[produced])
            self.cl.enqueue_barrier(src_device.queue, wait_for=[copied])
        return True

    def load(
        self,
        sources: Sequence[KernelSource],
        target: str,
        library: bytes | None = None,
        num_threads: int | None = None,
    ) -> LoadedKernels:
        if not sources:
            return LoadedKernels({})
        program = build_opencl(self.context, sources)
        return LoadedKernels({s.name: program[s.name] for s in sources})

    def bind(self, kernel: Kernel, args: Sequence[CLTensor]) -> Callable[[], None]:
        own = self.cl.Kernel(kernel.kernel.program, kernel.name)  # one object per launch site
        own.set_args(*(a.buffer for a in args))
        enqueue, queue = self.cl.enqueue_nd_range_kernel, self.queue
        size, local = kernel.global_size, kernel.local_size
        return lambda: enqueue(queue, own, size, local)

    def sync(self) -> None:
        self.queue.finish()

    def event_span(self, started: Any) -> tuple[float, float] | None:
        event = started.event if isinstance(started, EventWait) else started
        if not isinstance(event, self.cl.Event):
            return None
        offset = self._clock_offset()
        return (event.profile.start + offset) / 1e9, (event.profile.end + offset) / 1e9

    def _clock_offset(self) -> int:
        """perf_counter_ns minus the device's profiling clock (PoCL's is another clock: 0.25 s
        apart here): the latest offset that puts a marker's end before the host saw it done,
        the least of a few (so a node that waited for an event starts after its end in a
        trace)."""
        if self.clock_offset is None:
            offsets: list[int] = []
            for _ in range(5):
                marker = self.cl.enqueue_marker(self.queue)
                while marker.command_execution_status > 0:
                    yield_core()
                offsets.append(time.perf_counter_ns() - marker.profile.end)
            self.clock_offset = min(offsets)
        return self.clock_offset
