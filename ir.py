"""Parsing and the xDSL context: every xDSL dialect (loaded lazily) plus `relay`."""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects import get_all_dialects
from xdsl.dialects.builtin import FileLineColLoc, IntAttr, ModuleOp, StringAttr, UnknownLoc
from xdsl.ir import Operation
from xdsl.parser import Parser
from xdsl.utils.exceptions import ParseError as XDSLParseError
from xdsl.utils.exceptions import VerifyException

from xrelay.errors import ParseError, VerifyError


def _relay_dialect():
    from xrelay.dialects.relay import Relay

    return Relay


def register_dialects(ctx: Context) -> None:
    """Registers xDSL's dialects and `relay` lazily in `ctx` (those not registered yet)."""
    registered = set(ctx.registered_dialect_names)
    for name, factory in get_all_dialects().items():
        if name not in registered:
            ctx.register_dialect(name, factory)
    if "relay" not in registered:
        ctx.register_dialect("relay", _relay_dialect)


def context() -> Context:
    """The xDSL context `opt-tool` uses: all of xDSL's dialects and `relay`."""
    ctx = Context()
    register_dialects(ctx)
    return ctx


class LocParser(Parser):
    """A parser that stamps every op with `loc("file":line:col)` of its first token.

    `line_offset` shifts lines, for a chunk of a file split with `--split-input-file`.
    """

    def __init__(self, ctx: Context, text: str, name: str = "<unknown>", line_offset: int = 0):
        super().__init__(ctx, text, name)
        self.line_offset = line_offset

    def parse_operation(self) -> Operation:
        span = self._current_token.span
        op = super().parse_operation()
        if isinstance(op.location, UnknownLoc):
            loc = span.get_location()
            op.location = FileLineColLoc(
                StringAttr(loc.file), IntAttr(loc.line + self.line_offset), IntAttr(loc.col)
            )
        return op


def parse(text: str, filename: str = "<input>", ctx: Context | None = None) -> ModuleOp:
    """Parses and verifies a module; raises `xrelay.ParseError` or `xrelay.VerifyError`."""
    try:
        module = LocParser(ctx or context(), text, filename).parse_module()
    except XDSLParseError as e:
        raise ParseError(str(e)) from None
    try:
        module.verify()
    except VerifyException as e:
        raise VerifyError(_with_notes(e)) from None
    return module


def _with_notes(e: BaseException) -> str:
    return "\n".join([str(e), *getattr(e, "__notes__", [])])
