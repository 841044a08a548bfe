"""xrelay: a hackable heterogeneous tensor compiler on xDSL.

    m = xrelay.parse(text)                 # xDSL ModuleOp with the relay dialect loaded
    ctx = xrelay.context()                 # the xDSL Context opt-tool uses
    ref = xrelay.interpret(m, {"a": a})    # numpy reference, any stage before lowering
    exe = xrelay.build(m, targets=("c", "opencl"), default_device="opencl")
    out = exe.run(a=a)                     # numpy in, numpy out
    exe.save("model.xrelay"); exe = xrelay.load("model.xrelay")   # signed; trust=True runs another's
    xrelay.render(m, "model.svg", targets=("c", "opencl"))  # placement and fusion picture
    prof = exe.profile(a=a, runs=10); prof.save_trace("run.json")   # timeline for Perfetto
    b = xrelay.Builder(); x = b.input("x", (4, 8)); m = b.finish(b.nn.relu(x))
    module, params = xrelay.from_onnx("model.onnx", placement={"Conv": "opencl"})
    remarks = xrelay.explain(m, "%h")      # why a value is on its scope (plan-devices' history)

Only the errors are imported with the package: `import xrelay.runtime` must not load the
compiler or xDSL, and `opt-tool` starts fast. Everything else is imported on first use
(PEP 562).
"""

from importlib import import_module
from typing import Any

from xrelay.errors import ArtifactError, CompileError, DeviceError, Error, InputError, OnnxImportError, UsageError

# name -> the module that defines it
_LAZY = {
    "parse": "xrelay.ir",
    "context": "xrelay.ir",
    "interpret": "xrelay.interpreter",
    "build": "xrelay.driver",
    "render": "xrelay.drawing",
    "RenderError": "xrelay.drawing",
    "explain": "xrelay.placement",
    "load": "xrelay.runtime",
    "Builder": "xrelay.frontend.builder",
    "from_onnx": "xrelay.frontend.onnx_import",
    "Executable": "xrelay.runtime",
    "ParseError": "xrelay.diagnostics",
    "VerifyError": "xrelay.diagnostics",
    "ConfigError": "xrelay.diagnostics",
    "PlacementError": "xrelay.diagnostics",
    "LoweringError": "xrelay.diagnostics",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'xrelay' has no attribute '{name}'")
    value = getattr(import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [  # errors first, then the lazily imported names
    "ArtifactError", "CompileError", "DeviceError", "Error", "InputError", "OnnxImportError", "UsageError",
    "parse", "context", "interpret", "build", "explain", "render", "load", "Executable", "RenderError",
    "Builder", "from_onnx",
    "ParseError", "VerifyError", "ConfigError", "PlacementError", "LoweringError",
]  # fmt: skip
