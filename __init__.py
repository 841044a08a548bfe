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
from xrelay.build import Executable, build, load
from xrelay.interpreter import interpret
from xrelay.ir import context, parse

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
