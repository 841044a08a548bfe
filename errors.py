"""The errors xrelay raises to its users: one `Error` base, one subclass per stage.

They derive from xDSL's `DiagnosticException`, so `opt-tool --verify-diagnostics` prints them
like any verifier error, and `opt-tool` reports them without a traceback.
"""

import re

from xdsl.ir import Operation
from xdsl.dialects.builtin import FileLineColLoc
from xdsl.utils.exceptions import DiagnosticException


class Error(DiagnosticException):
    """Base of every error xrelay reports to a user."""


class ParseError(Error):
    """The input text is not valid IR."""


class VerifyError(Error):
    """The IR parsed but an op does not verify."""


class ConfigError(Error):
    """The compilation config (targets, default device, host target) is inconsistent."""


class PlacementError(Error):
    """Device planning found conflicting constraints."""


class CompileError(Error):
    """Lowering or building a kernel failed."""


class DeviceError(Error):
    """A device is missing or failed at run time."""


class InputError(Error):
    """Run-time inputs do not match the program's parameters."""


def location_of(op: Operation) -> str:
    """`file:line:col` of an op parsed from text, or its name when no location is known."""
    loc = op.location
    if isinstance(loc, FileLineColLoc):
        return f"{loc.filename.data}:{loc.line.data}:{loc.column.data}"
    return "unknown location"


_UNDERLINE = re.compile(r"\s*\^+-*")


def excerpt(note: str, context: int = 8) -> str:
    """xDSL's diagnostic note prints the whole module with the failing op underlined; for a
    long module keep only the lines around the underlined op."""
    lines = note.splitlines()
    marked = [i for i, line in enumerate(lines) if _UNDERLINE.fullmatch(line)]
    if len(lines) <= 4 * context or not marked:
        return note
    first, last = max(0, marked[0] - context), min(len(lines), marked[-1] + context)
    head = ["..."] if first > 0 else []
    tail = ["..."] if last < len(lines) else []
    return "\n".join([*head, *lines[first:last], *tail])
