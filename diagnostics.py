"""The compiler's errors, and how they point at the IR.

Each is an `xrelay.Error` and an xDSL `DiagnosticException`: passes raise them through
`op.emit_error(message, PlacementError(message))`, which attaches the module with the op
underlined as a note, and `opt-tool` (or a plain `xdsl-opt --verify-diagnostics`) prints
them without a traceback. Remarks (`emit_remark`) go to stderr as `mlir-opt` prints them.
"""

from __future__ import annotations

import re
import sys
from typing import TYPE_CHECKING, TextIO

from xdsl.dialects.builtin import FileLineColLoc
from xdsl.ir import Operation
from xdsl.utils.exceptions import DiagnosticException

from xrelay.errors import CompileError, Error

if TYPE_CHECKING:
    from xrelay.transforms.device_remarks import Remark


class Diagnostic(Error, DiagnosticException):
    """Base of the errors the compiler reports at an op or a place in the text."""


class ParseError(Diagnostic):
    """The input text is not valid IR."""


class VerifyError(Diagnostic):
    """The IR parsed but an op does not verify."""


class ConfigError(Diagnostic):
    """The compilation config (targets, default device, host target) is inconsistent."""


class PlacementError(Diagnostic):
    """Device planning found conflicting constraints. A conflict carries the chain that
    fixed each side's scope (`chains`: the value's side, then its use's side)."""

    def __init__(self, message: str, chains: tuple[Remark, ...] = ()):
        super().__init__(message)
        self.chains = chains


class LoweringError(CompileError, DiagnosticException):
    """A pass or an emitter cannot lower or print an op."""


def location_of(op: Operation) -> str:
    """`file:line:col` of an op parsed from text, or its name when no location is known."""
    loc = op.location
    if isinstance(loc, FileLineColLoc):
        return f"{loc.filename.data}:{loc.line.data}:{loc.column.data}"
    return "unknown location"


def emit_remark(location: str, message: str, file: TextIO | None = None) -> None:
    """Prints `<file>:<line>:<col>: remark: <message>` (to stderr unless `file` is given)."""
    print(f"{location}: remark: {message}", file=file if file is not None else sys.stderr)


_UNDERLINE = re.compile(r"\s*\^+-*")


def excerpt(note: str, context: int = 8) -> str:
    """xDSL's diagnostic note prints the whole module with the failing op underlined; for a
    long module keep only the lines around the underlined op, with large constants elided."""
    note = elide_constants(note)
    lines = note.splitlines()
    marked = [i for i, line in enumerate(lines) if _UNDERLINE.fullmatch(line)]
    if len(lines) <= 4 * context or not marked:
        return note
    first, last = max(0, marked[0] - context), min(len(lines), marked[-1] + context)
    head = ["..."] if first > 0 else []
    tail = ["..."] if last < len(lines) else []
    return "\n".join([*head, *lines[first:last], *tail])


# A constant's value as xDSL prints it: hex bytes, or a list of numbers.
_LARGE_DENSE = re.compile(r'dense<(?:"0x[0-9A-Fa-f]{64,}"|\[[^<>]{200,}?\])>')


def elide_constants(text: str) -> str:
    """`text` with the value of every large dense constant replaced by `...` (as MLIR's
    --mlir-elide-elementsattrs-if-larger), so an error about a model with bound weights stays
    readable."""
    return _LARGE_DENSE.sub('dense<"..."> /* elided */', text)


def shorten_notes(error: BaseException) -> None:
    """Replaces the module excerpts attached to `error` by short ones."""
    notes = getattr(error, "__notes__", None)
    if notes:
        error.__notes__ = [excerpt(note) for note in notes]
