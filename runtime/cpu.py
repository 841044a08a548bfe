"""
`cpu`: the host as a device. Tensors are numpy arrays; kernels are the C kernels of
`xrelay.targets.build.build_c`, called through ctypes with their buffer addresses bound once
(a call then costs about 0.3 us, see the performance guide).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any

import numpy as np

from xrelay.errors import DeviceError
from xrelay.runtime.device import Kernel, Tensor
from xrelay.runtime.numpy_device import NumpyDevice


class CPUDevice(NumpyDevice):
    """Host memory (numpy) and C kernels built with gcc into one shared library per load."""

    kind = "cpu"

    def __init__(self, index: int = 0):
        super().__init__(index)
        self.name = "cpu" if index == 0 else f"cpu:{index}"

    def alloc(self, nbytes: int) -> np.ndarray:
        # 64-byte aligned, so gcc's vector loads never straddle a cache line at the start
        raw = np.empty(nbytes + 64, dtype=np.uint8)
        offset = -raw.ctypes.data % 64
        return raw[offset : offset + nbytes]

    def load(self, sources: Sequence[Any]) -> Mapping[str, Kernel]:
        from xrelay.targets.build import build_c, c_flags

        if not sources:
            return {}
        library = build_c(sources, c_flags(sources[0].scope.target or "c"))
        return {s.name: library[s.name] for s in sources}

    def bind(self, kernel: Kernel, args: Sequence[Tensor]) -> Callable[[], None]:
        for a in args:
            if not a.flags.c_contiguous or a.dtype != np.float32:
                raise DeviceError(f"{self.name}: C kernels take C-contiguous float32 tensors, not {a.dtype}")
        return partial(kernel.function, *(a.ctypes.data for a in args))
