"""
`cpu`: the host as a device. Tensors are numpy arrays; kernels are C, built by
`xrelay.runtime.c_library` into one shared library per load (or loaded from a saved one) and
called through ctypes with their buffer addresses bound once (a call then costs about 0.3 us,
see the performance guide). A kernel's outer loop nest runs on `num_threads` OpenMP threads
(the graph's `devices` entry gives the count; see `xrelay.runtime.c_library`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial

import numpy as np

from xrelay.errors import DeviceError
from xrelay.runtime.c_library import build_c, c_flags, load_c
from xrelay.runtime.device import Kernel, LoadedKernels, Tensor
from xrelay.runtime.device_kinds import host_kind
from xrelay.runtime.kernels import KernelSource
from xrelay.runtime.numpy_device import NumpyDevice


class CCall(partial[None]):
    """A C kernel's call with its buffers' addresses bound (`func(*args)`); `c_steps` makes a
    run of them in one ctypes call."""


class CPUDevice(NumpyDevice):
    """Host memory (numpy) and C kernels built with gcc into one shared library per load."""

    kind = "cpu"
    language = "c"

    def __init__(self, index: int = 0):
        super().__init__(index)
        self.name = "cpu" if index == 0 else f"cpu:{index}"

    def alloc(self, nbytes: int) -> np.ndarray:
        # 64-byte aligned, so gcc's vector loads never straddle a cache line at the start
        raw = np.empty(nbytes + 64, dtype=np.uint8)
        offset = -raw.ctypes.data % 64
        return raw[offset : offset + nbytes]

    def load(
        self,
        sources: Sequence[KernelSource],
        target: str,
        library: bytes | None = None,
        num_threads: int | None = None,
    ) -> LoadedKernels:
        if not sources:
            return LoadedKernels({})
        if library is not None:  # (built with the thread count it was saved with)
            built = load_c(library, sources)
        else:
            built = build_c(sources, c_flags(target), num_threads)
        return LoadedKernels({s.name: built[s.name] for s in sources}, built.data)

    def bind(self, kernel: Kernel, args: Sequence[Tensor]) -> Callable[[], None]:
        held = host_kind().dtypes
        for a in args:
            if not a.flags.c_contiguous or a.dtype.name not in held:
                raise DeviceError(
                    f"{self.name}: C kernels take C-contiguous tensors of {', '.join(held)}, not {a.dtype}"
                )
        return CCall(kernel.function, *(a.ctypes.data for a in args))
