"""xrelay: a hackable heterogeneous tensor compiler on xDSL.

    m = xrelay.parse(text)                 # xDSL ModuleOp with the relay dialect loaded
    ctx = xrelay.context()                 # the xDSL Context opt-tool uses
    ref = xrelay.interpret(m, {"a": a})    # numpy reference, any stage before lowering
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
from xrelay.interpreter import interpret
from xrelay.ir import context, parse

__all__ = [
    "CompileError",
    "ConfigError",
    "DeviceError",
    "Error",
    "InputError",
    "ParseError",
    "PlacementError",
    "VerifyError",
    "context",
    "interpret",
    "parse",
]
