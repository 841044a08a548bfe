"""xrelay: a hackable heterogeneous tensor compiler on xDSL.

    m = xrelay.parse(text)                 # xDSL ModuleOp with the relay dialect loaded
    ctx = xrelay.context()                 # the xDSL Context opt-tool uses
    ref = xrelay.interpret(m, {"a": a})    # numpy reference, any stage before lowering
    exe = xrelay.build(m, targets=("c", "opencl"), default_device="opencl")
    out = exe.run(a=a)                     # numpy in, numpy out
    exe.save("model.xrelay"); exe = xrelay.load("model.xrelay")
"""

from xrelay.errors import (
    CompileError,
    ConfigError,
    DeviceError,
    Error,
    InputError,
    ParseError,
    PlacementError,
    VerifyError,
)
from xrelay.ir import context, parse

# The interpreter (xDSL's interpreters) and the build API (runtime, pyopencl) are imported on
# first use, so `opt-tool` and `import xrelay` start fast (PEP 562).
_LAZY = {
    "interpret": "xrelay.interpreter",
    "build": "xrelay.build",
    "load": "xrelay.build",
    "Executable": "xrelay.build",
}


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'xrelay' has no attribute '{name}'")
    from importlib import import_module

    value = getattr(import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


__all__ = [
    "CompileError",
    "ConfigError",
    "DeviceError",
    "Error",
    "Executable",
    "InputError",
    "ParseError",
    "PlacementError",
    "VerifyError",
    "build",
    "context",
    "interpret",
    "load",
    "parse",
]
