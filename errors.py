"""The errors xrelay raises to its users: one `Error` base, one subclass per stage.

This module is plain Python, so the runtime (which imports nothing of the compiler or of
xDSL) raises the same `xrelay.Error` as the compiler does. The compiler's own errors
(`ParseError`, `VerifyError`, `ConfigError`, `PlacementError`, `LoweringError`) live in
`xrelay.diagnostics`: they are also xDSL `DiagnosticException`s, so `opt-tool` and
`xdsl-opt --verify-diagnostics` print them like any verifier error.
"""


class Error(Exception):
    """Base of every error xrelay reports to a user."""


class CompileError(Error):
    """Compiling the program or its kernels failed (lowering, the C or OpenCL compiler)."""


class DeviceError(Error):
    """A device is missing, cannot run a kernel, or failed at run time."""


class InputError(Error):
    """Run-time inputs do not match the program's parameters."""


class ArtifactError(Error):
    """A saved executable is missing, corrupt or of another format."""


class UsageError(Error, TypeError):
    """An API function was called with an argument of the wrong kind (also a TypeError)."""


class OnnxImportError(CompileError):
    """An ONNX model uses an op, attribute, dtype or dynamic shape the importer does not take."""
