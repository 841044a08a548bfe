"""
Gives the memory a stage of a build freed back to the operating system.

glibc's malloc keeps freed blocks for reuse, and after a large block is freed it serves blocks
of up to that size from its heap, whose free pages it returns only on `malloc_trim`: an ONNX
model's protobuf, freed once `from_onnx` has its weights, stayed in the process (BERT-base:
330 MB of a 750 MB peak). Elsewhere (another C library) this does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
from functools import cache
from typing import Any


@cache
def _malloc_trim() -> Any:
    name = ctypes.util.find_library("c")
    try:
        return getattr(ctypes.CDLL(name), "malloc_trim", None) if name else None
    except OSError:
        return None


def release_freed_memory() -> None:
    """Collects cyclic garbage (an importer and its protobuf are a cycle), then returns the
    heap's free pages to the OS (glibc's `malloc_trim(0)`), where there is one."""
    gc.collect()
    trim = _malloc_trim()
    if trim is not None:
        trim(0)
