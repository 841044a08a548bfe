"""Parsing and the xDSL context: every xDSL dialect (loaded lazily) plus `relay`."""

from __future__ import annotations

import bisect
import os
import re
from collections.abc import Sequence
from pathlib import Path

from xdsl.context import Context
from xdsl.dialects import get_all_dialects as get_all_xdsl_dialects
from xdsl.dialects.builtin import (
    AnyFloat,
    ComplexType,
    FileLineColLoc,
    IndexType,
    IntAttr,
    IntegerType,
    ModuleOp,
    StringAttr,
    UnknownLoc,
)
from xdsl.ir import Operation, SSAValue
from xdsl.parser import Parser
from xdsl.parser.attribute_parser import AttrParser
from xdsl.parser.generic_parser import ParserState
from xdsl.utils.exceptions import ParseError as XDSLParseError
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.lexer import Input, Span
from xdsl.utils.mlir_lexer import MLIRLexer

from xrelay.diagnostics import ParseError, VerifyError, excerpt, location_of
from xrelay.dialects import get_all_dialects
from xrelay.dialects.dominance import SOURCE_NAMES, verify_dominance
from xrelay.errors import UsageError


def register_dialects(ctx: Context) -> None:
    """Registers xDSL's dialects and `relay` lazily in `ctx` (those not registered yet)."""
    registered = set(ctx.registered_dialect_names)
    for name, factory in (get_all_xdsl_dialects() | get_all_dialects()).items():
        if name not in registered:
            ctx.register_dialect(name, factory)


def context() -> Context:
    """The xDSL context `opt-tool` uses: all of xDSL's dialects and `relay`."""
    ctx = Context()
    register_dialects(ctx)
    return ctx


class LinearLexer(MLIRLexer):
    """xDSL's lexer with a string-literal pattern that cannot backtrack exponentially.

    xDSL's pattern nests a `+` (a run of plain characters) inside a `*`: on a line with an
    unclosed `"` the regex engine tries every way of splitting the rest of the line into runs,
    so a stray quote in a 30-character line takes seconds, and in a long line never ends. One
    character per repetition matches the same strings, in linear time.
    """

    _unescaped_characters_regex = re.compile(r'"(?:[^"\\\n\v\f]|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*"')


class HexTensorElement(AttrParser._TensorLiteralElement):
    """A dense element written in hex: an integer, or for a float type the float with
    those bits (MLIR's meaning; `dense<0xFF800000> : tensor<f32>` is -inf)."""

    def to_type(self, parser: AttrParser, type: AnyFloat | IntegerType | IndexType | ComplexType):
        if isinstance(type, AnyFloat) and isinstance(self.value, int):
            if self.is_negative or self.value >= 1 << type.bitwidth:
                parser.raise_error(
                    f"expected the {type.bitwidth} bits of a {type}, but found {self.value:#x}", at_position=self.span
                )
            return next(type.iter_unpack(self.value.to_bytes(type.compile_time_size, "little")))
        return super().to_type(parser, type)


class LocParser(Parser):
    """A parser that stamps every op with `loc("file":line:col)` of its first token.

    `line_offset` shifts lines, for a chunk of a file split with `--split-input-file`.
    Lines are found by bisection in a table of line starts built once: xDSL's
    `Span.get_location` counts newlines from the top of the file, which would make parsing
    quadratic in the file's length.
    """

    def __init__(self, ctx: Context, text: str, name: str = "<unknown>", line_offset: int = 0):
        super().__init__(ctx, "", name)
        self._parser_state = ParserState(LinearLexer(Input(text, name)))
        self.filename = StringAttr(name)
        self.line_offset = line_offset
        self.line_starts = [0, *(m.end() for m in re.finditer("\n", text))]

    def parse_operation(self) -> Operation:
        first = self._current_token.span
        try:
            op = super().parse_operation()
        except VerifyException as e:
            # A custom syntax that builds an invalid attribute or type (e.g. a function type
            # where a tensor type belongs) raises a VerifyException: report it where it is.
            self.raise_error(str(e), first.start, first.end)
        except XDSLParseError:
            raise  # already located (a nested op's, or the parser's own)
        except Exception as e:
            # xDSL's parser fails in other ways on some inputs (an AssertionError on a dense
            # value of the wrong kind, NotImplementedError for `array<i128: 1>`, OverflowError
            # for a float32 of 1e39, MemoryError for a huge splat): an error at the op, too.
            self.raise_error(f"cannot parse this op: {type(e).__name__}: {e}".rstrip(": "), first.start, first.end)
        if isinstance(op.location, UnknownLoc):
            op.location = self.location_at(first.start)
        return op

    def _parse_tensor_literal_element(self) -> AttrParser._TensorLiteralElement:
        # xDSL prints a float dense element that is not finite (inf, NaN) as its bits in hex,
        # as MLIR does, but reads a hex element back as an integer (0xFF800000 as 4.29e9).
        hexadecimal = self._current_token.text[:2] in ("0x", "0X")
        element = super()._parse_tensor_literal_element()
        if hexadecimal and isinstance(element.value, int):
            return HexTensorElement(element.is_negative, element.value, element.span)
        return element

    def _register_ssa_definition(self, name: str, values: Sequence[SSAValue], span: Span) -> None:
        # A value used before its definition: keep its name for the dominance error.
        if name in self.forward_ssa_references:
            for index, value in enumerate(values):
                SOURCE_NAMES[value] = f"%{name}" if len(values) == 1 else f"%{name}#{index}"
        super()._register_ssa_definition(name, values, span)

    def location_at(self, position: int) -> FileLineColLoc:
        line = bisect.bisect_right(self.line_starts, position)
        column = position - self.line_starts[line - 1] + 1
        return FileLineColLoc(self.filename, IntAttr(line + self.line_offset), IntAttr(column))


def parse(text: str | bytes, filename: str = "<input>", ctx: Context | None = None) -> ModuleOp:
    """Parses and verifies a module (text, or UTF-8 bytes); raises `xrelay.ParseError` or
    `xrelay.VerifyError`."""
    if isinstance(text, bytes):
        text = decode(text, filename)
    if not isinstance(text, str):
        raise UsageError(f"xrelay.parse takes relay text (str, or UTF-8 bytes), but was given {type(text).__name__}")
    try:
        module = LocParser(ctx or context(), text, filename).parse_module()
    except XDSLParseError as e:
        raise ParseError(str(e)) from None
    try:
        verify(module)
    except VerifyException as e:
        raise VerifyError(_with_notes(e)) from None
    return module


def verify(module: Operation) -> None:
    """`module.verify()`, then SSA dominance (`dialects/dominance.py`); the message of a
    failure starts with the failing op's `file:line:col`."""
    try:
        module.verify()
    except VerifyException as e:
        add_location(e, module)
        raise
    except Exception as e:
        raise verifier_crash(e, module) from None
    verify_dominance(module)


def verifier_crash(error: Exception, module: Operation) -> VerifyException:
    """A VerifyException at the op whose verifier raised `error`, which is not one: some of
    xDSL's verifiers raise a bare Exception (`memref.load` with too few indices) or a KeyError
    (`func.return` in a `func.func` without a `function_type`)."""
    what = f"{type(error).__name__}: {error}".rstrip(": ")
    for op in module.walk():
        try:
            op.verify(verify_nested_ops=False)
        except Exception as e:
            if type(e) is type(error) and str(e) == str(error):
                where = f"{location_of(op)}: " if isinstance(op.location, FileLineColLoc) else ""
                return VerifyException(f"{where}'{op.name}' does not verify: {what}")
    return VerifyException(f"the module does not verify: {what}")


def add_location(error: VerifyException, module: Operation) -> None:
    """Prefixes `error` with the location of the op in `module` that raised it, if known.

    xDSL's verifier does not say which op failed; only on this failure path we verify op by
    op until one raises the same message, so a successful verification costs nothing extra.
    """
    message = str(error)
    for op in module.walk():
        try:
            op.verify(verify_nested_ops=False)
        except Exception as e:
            if not isinstance(e, VerifyException) or str(e) != message:
                continue
            if isinstance(op.location, FileLineColLoc):  # not an op a pass created
                error.args = (f"{location_of(op)}: {message}", *error.args[1:])
            return


def _with_notes(e: BaseException) -> str:
    return "\n".join([str(e), *map(excerpt, getattr(e, "__notes__", []))])


Program = str | bytes | os.PathLike[str] | ModuleOp


def as_module(program: Program, what: str) -> ModuleOp:
    """The module a user handed to `what` (e.g. "xrelay.build"): relay text (str or bytes), a
    path to a .mlir file (a `pathlib.Path`, or a one-line string naming an existing file), or
    a module, which is returned as it is."""
    if isinstance(program, ModuleOp):
        return program
    if isinstance(program, bytes):
        return parse(program)
    if isinstance(program, os.PathLike):
        return parse_file(Path(program), what)
    if isinstance(program, str):
        if "\n" not in program and program.strip().endswith(".mlir") and "{" not in program:
            return parse_file(Path(program.strip()), what)
        return parse(program)
    raise UsageError(
        f"{what} takes relay text, a path to a .mlir file or an xDSL module, but was given {type(program).__name__}"
    )


def parse_file(path: Path, what: str) -> ModuleOp:
    try:
        data = path.read_bytes()
    except OSError as e:
        raise ParseError(f"{what} was given the path {str(path)!r}, which cannot be read: {e.strerror}") from None
    return parse(data, str(path))


def decode(data: bytes, filename: str) -> str:
    """`data` as UTF-8 text, or a `ParseError` at the first byte that is not UTF-8."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        column = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise ParseError(
            f"{filename}:{line}:{column}: the program is not UTF-8 text: byte {data[e.start]:#04x} ({e.reason})"
        ) from None
