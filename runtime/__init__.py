"""The xrelay runtime: runs what the compiler built, and stands alone.

    import xrelay.runtime
    exe = xrelay.runtime.load("model.xrelay")
    out = exe.run(x)

It imports numpy, ctypes and (for OpenCL devices) pyopencl, and nothing of the compiler or of
xDSL: a saved model deploys with this package alone (`test/runtime/test_standalone.py`).
"""

from xrelay.runtime.executable import Executable, LibraryRebuiltWarning, load

__all__ = ["Executable", "LibraryRebuiltWarning", "load"]
