"""
`opencl:N`: the N-th device of the first OpenCL platform (PoCL on machines without a GPU;
`POCL_DEVICES="pthread pthread"` gives two). All devices of a platform share one context, so
a copy between two of them is one `enqueue_copy`; each device has its own in-order queue.

Kernels come from `xrelay.targets.build.build_opencl`; each launch gets its own `cl.Kernel`
object with its buffers set once, so running a node is one enqueue over the kernel's NDRange
(`KernelSource.global_size`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

from xrelay.errors import DeviceError
from xrelay.runtime.device import Device, Kernel

OTHER_DEVICE_HINT = (
    "PoCL runs OpenCL on the CPU (`make setup` installs it when run as root); or map the "
    "scope to another device with build(..., devices={...})"
)


@dataclass(eq=False)
class CLTensor:
    """A tensor at the start of an OpenCL buffer."""

    buffer: Any
    shape: tuple[int, ...]
    dtype: np.dtype

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize


@cache
def platform_context(platform_index: int = 0) -> tuple[Any, list[Any]]:
    """One context over every device of the platform, and those devices."""
    from xrelay.targets.build import import_pyopencl, opencl_platforms

    cl = import_pyopencl()
    try:
        platform = opencl_platforms()[platform_index]
    except DeviceError as e:
        raise DeviceError(f"an opencl scope needs an OpenCL device, but {e}; {OTHER_DEVICE_HINT}") from None
    devices = platform.get_devices()
    return cl.Context(devices), devices


class OpenCLDevice(Device):
    kind = "opencl"

    def __init__(self, index: int = 0, platform: int = 0):
        super().__init__(f"opencl:{index}")
        from xrelay.targets.build import import_pyopencl

        self.cl = import_pyopencl()
        self.context, devices = platform_context(platform)
        if index >= len(devices):
            raise DeviceError(
                f"device opencl:{index} does not exist: the OpenCL platform has {len(devices)} "
                f"device(s) ({', '.join(d.name for d in devices)}); with PoCL, "
                'POCL_DEVICES="pthread pthread" gives two, or map the scope to an existing device'
            )
        self.device = devices[index]
        self.queue = self.cl.CommandQueue(self.context, self.device)

    def alloc(self, nbytes: int) -> Any:
        return self.cl.Buffer(self.context, self.cl.mem_flags.READ_WRITE, max(nbytes, 4))

    def tensor(self, buffer: Any, shape: Sequence[int], dtype: np.dtype) -> CLTensor:
        return CLTensor(buffer, tuple(shape), np.dtype(dtype))

    def write(self, dst: CLTensor, src: np.ndarray) -> None:
        if dst.nbytes:
            self.cl.enqueue_copy(self.queue, dst.buffer, src, is_blocking=True)

    def read(self, src: CLTensor, dst: np.ndarray) -> None:
        if src.nbytes:
            self.cl.enqueue_copy(self.queue, dst, src.buffer, is_blocking=True)

    def copy_peer(self, dst: CLTensor, src_device: Device, src: CLTensor, nbytes: int) -> bool:
        if not isinstance(src_device, OpenCLDevice) or src_device.context is not self.context:
            return False
        if nbytes:
            src_device.queue.finish()  # the source's producer ran on the other queue
            self.cl.enqueue_copy(self.queue, dst.buffer, src.buffer, byte_count=nbytes)
            self.queue.finish()  # the source's storage may be reused by its queue right after
        return True

    def load(self, sources: Sequence[Any]) -> Mapping[str, Kernel]:
        from xrelay.targets.build import build_opencl

        if not sources:
            return {}
        program = build_opencl(self.context, sources)
        return {s.name: program[s.name] for s in sources}

    def bind(self, kernel: Kernel, args: Sequence[CLTensor]) -> Callable[[], None]:
        own = self.cl.Kernel(kernel.kernel.program, kernel.name)  # one object per launch site
        own.set_args(*(a.buffer for a in args))
        enqueue, queue, size = self.cl.enqueue_nd_range_kernel, self.queue, kernel.global_size
        return lambda: enqueue(queue, own, size, None)

    def sync(self) -> None:
        self.queue.finish()
