"""
`numpy`: a device in host memory whose kernels are Python functions, so the executor can be
tested without a compiler or hardware (like the hand-made graphs of TVM's runtime tests).

A kernel is `fn(*inputs, out)` writing its result into `out`; `NumpyDevice.kernels` is the
table `load` looks kernel names up in.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from xrelay.errors import DeviceError
from xrelay.runtime.device import Device, Kernel, LoadedKernels, MemoryLimits, Tensor
from xrelay.runtime.kernels import KernelSource
from xrelay.runtime.machine import host_memory


class NumpyDevice(Device):
    kind = "numpy"
    host_memory = True

    def __init__(self, index: int = 0, kernels: Mapping[str, Callable[..., None]] | None = None):
        super().__init__(f"numpy:{index}")
        self.kernels = dict(kernels or {})

    def alloc(self, nbytes: int) -> np.ndarray:
        try:
            return np.empty(nbytes, dtype=np.uint8)
        except MemoryError:  # what the limits checked before did not foresee (others' use)
            raise DeviceError(
                f"device {self.name} could not allocate {nbytes} bytes: the host is out of memory "
                "(physical, ulimit -v or its cgroup's limit)"
            ) from None

    def share(self, array: np.ndarray) -> np.ndarray | None:
        """`array`'s bytes, where it is laid out as a tensor is (C-contiguous, its elements
        aligned; a kernel reads any float's address, see `xrelay.targets.c`)."""
        if array.nbytes and array.flags.c_contiguous and array.flags.aligned:
            return array.reshape(-1).view(np.uint8)
        return None

    def memory_limits(self) -> MemoryLimits:
        total = host_memory()  # physical memory, ulimit -v and the cgroup's limit
        return MemoryLimits(total, total)

    def tensor(self, buffer: Any, shape: Sequence[int], dtype: np.dtype, offset: int = 0) -> Tensor:
        count = int(np.prod(shape, dtype=np.int64))
        return buffer[offset : offset + count * np.dtype(dtype).itemsize].view(dtype).reshape(shape)

    def write(self, dst: Tensor, src: np.ndarray) -> None:
        np.copyto(dst, src)

    def read(self, src: Tensor, dst: np.ndarray) -> None:
        np.copyto(dst, src)

    def load(
        self,
        sources: Sequence[KernelSource],
        target: str,
        library: bytes | None = None,
        num_threads: int | None = None,
    ) -> LoadedKernels:
        missing = [s.name for s in sources if s.name not in self.kernels]
        if missing:
            raise DeviceError(f"{self.name} has no Python kernel for {', '.join(missing)}")
        return LoadedKernels({s.name: self.kernels[s.name] for s in sources})

    def bind(self, kernel: Kernel, args: Sequence[Tensor]) -> Callable[[], None]:
        return lambda: kernel(*args)
