"""`opt-tool`: `xdsl-opt` with the relay dialect, xrelay's passes and the c/opencl/graph-json targets.

Every user error (bad syntax, a failed verification, a pass failure, a bad pipeline or
target spec, a missing file) is printed to stderr, with the file:line:col of the text or op
at fault where there is one, and exits with status 1, without a Python traceback.

Beyond xdsl-opt: an `.onnx` input is imported with `xrelay.from_onnx`, its initializers
bound as constants (as `xrelay.build` binds params), so every pass and target works on it;
`--input-shape input.1=1x3x224x224` fixes an ONNX input's dynamic dimensions;
`--elide-constants` prints large constants as `dense<"...">` (for reading; such output does
not parse back); several `-p` flags run one after the other, as one pipeline; pass options
are checked by their CLI names (`default-device`): an unknown one, one without a value, or
one given twice is an error; `--time-passes` and `--print-between-passes` write to stderr
(as MLIR's timing and IR dumps do), so stdout holds only the output. `--help` lists xrelay's
passes first, each with its options, their defaults and a line saying what it does (from
the pass module's docstring), and `--list-targets` the `-t` targets, a line each, with the
features of the machine each kernel target builds for (vector width in floats, vector
registers, FMA, caches, cores: the host's for `c`, the OpenCL device's own for `opencl`).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import re
import sys
import textwrap
import warnings
from collections.abc import Callable, Sequence
from typing import IO, Any, NoReturn

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.utils.arg_spec import PipelineLexer, SpecTokenKind, parse_pipeline
from xdsl.utils.exceptions import (
    ArgSpecParseError,
    DiagnosticException,
    ParseError,
    VerifyException,
)
from xdsl.xdsl_opt_main import xDSLOptMain

from xrelay.diagnostics import ConfigError, elide_constants, excerpt
from xrelay.dialects.dominance import verify_dominance
from xrelay.errors import Error, OnnxImportError
from xrelay.ir import LocParser, add_location, register_dialects, verifier_crash
from xrelay.runtime.device_kinds import kind_of_target
from xrelay.runtime.machine import target_features
from xrelay.universe import XRELAY_UNIVERSE


class OptTool(xDSLOptMain):
    """`xdsl-opt` that stamps every parsed op with its location and reports errors briefly.

    `xDSLOptMain` registers the dialects, passes and targets of every installed xDSL plugin
    (xDSL's multiverse), xrelay's own among them through its `xdsl.universe` entry point. The
    `register_all_*` methods below add from `XRELAY_UNIVERSE` only what is still missing:
    nothing once xrelay is installed, everything when it runs from a source tree that is not
    (no entry point).
    """

    version_format = "opt-tool (xrelay, xdsl {xdsl_version})"

    def register_all_dialects(self) -> None:
        super().register_all_dialects()
        register_dialects(self.ctx)  # those not registered yet

    def register_all_passes(self) -> None:
        super().register_all_passes()
        for name, factory in XRELAY_UNIVERSE.all_passes.items():
            self.available_passes.setdefault(name, factory)

    def register_all_targets(self) -> None:
        super().register_all_targets()
        for name, factory in XRELAY_UNIVERSE.all_targets.items():
            self.available_targets.setdefault(name, factory)

    def register_all_frontends(self) -> None:
        super().register_all_frontends()
        self.available_frontends["onnx"] = lambda chunk: import_onnx(chunk, self.args.input_shape)

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        super().register_all_arguments(arg_parser)
        arg_parser.add_argument(
            "--elide-constants",
            action="store_true",
            help='print the values of large constants as dense<"..."> (the output is for reading: it does not parse back)',
        )
        arg_parser.add_argument(
            "--input-shape",
            action="append",
            default=[],
            metavar="NAME=DIMS",
            help="the shape of an ONNX input with dynamic dimensions, e.g. --input-shape input.1=1x3x224x224 (repeatable)",
        )
        arg_parser.prog = "opt-tool"  # also when run as `python -m xrelay.tools.opt_tool`
        arg_parser.formatter_class = argparse.RawDescriptionHelpFormatter  # keep our lines
        # The description comes before the options, so xrelay's passes before xDSL's list.
        arg_parser.description = f"{arg_parser.description}\n\n{pass_help(XRELAY_UNIVERSE.all_passes)}"
        arg_parser.epilog = _epilog()
        arg_parser.add_argument(
            "--list-targets",
            action="store_true",
            help="list the -t targets, a line each, with the features of the machine each kernel target builds for, and exit",
        )

    def setup_pipeline(self) -> None:
        # xDSL verifies the module before, between and after the passes; its `verify()` does
        # not check SSA dominance (a use before its definition, a cycle), so check it there too.
        # Its callback prints pass timings and IR dumps with print(): to stderr here.
        check_pipeline(self.args.passes, self.available_passes)
        super().setup_pipeline()
        verify = self.pipeline.callback

        def callback(before: ModulePass | None, module: ModuleOp, after: ModulePass | None) -> None:
            if verify is not None:
                try:
                    with contextlib.redirect_stdout(sys.stderr):
                        verify(before, module, after)
                except VerifyException:
                    raise
                except Exception as e:  # an xDSL verifier that fails otherwise: still a verify error
                    raise verifier_crash(e, module) from None
            if not self.args.disable_verify:
                verify_dominance(module)

        self.pipeline = dataclasses.replace(self.pipeline, callback=callback)

    def apply_passes(self, prog: ModuleOp) -> None:
        # The pipeline verifies the module before and after every pass; a failure names the
        # failing op's file:line:col (ops from the input carry their parse location).
        try:
            super().apply_passes(prog)
        except VerifyException as e:
            add_location(e, prog)
            raise

    def output_resulting_program(self, prog: ModuleOp) -> str:
        text = super().output_resulting_program(prog)
        return elide_constants(text) if self.args.elide_constants else text

    def parse_chunk(self, chunk: IO[bytes], file_extension: str, start_offset: int = 0) -> ModuleOp | None:
        if file_extension != "mlir":
            return super().parse_chunk(chunk, file_extension, start_offset)
        text = chunk.read().decode()
        parser = LocParser(self.ctx, text, self.get_input_name(), line_offset=start_offset)
        return parser.parse_module(not self.args.no_implicit_module)


def import_onnx(chunk: IO[bytes], input_shapes: Sequence[str] = ()) -> ModuleOp:
    """An ONNX model as relay, its initializers bound as constants; `input_shapes` fix
    dynamic input shapes (`name=1x3x224x224`)."""
    import onnx
    from google.protobuf.message import DecodeError

    from xrelay.driver import bind_params
    from xrelay.frontend.onnx_import import from_onnx

    try:
        model = onnx.ModelProto.FromString(chunk.read())
    except DecodeError as e:
        raise OnnxImportError(f"the input is not an ONNX model: {e}") from None
    module, params = from_onnx(model, shapes=dict(map(_input_shape, input_shapes)))
    bind_params(module, params)
    return module


def _input_shape(flag: str) -> tuple[str, tuple[int, ...]]:
    name, _, dims = flag.rpartition("=")
    try:
        return name, tuple(int(d) for d in dims.split("x"))
    except ValueError:
        raise ConfigError(f"--input-shape expects NAME=DIMS such as input.1=1x3x224x224, but got {flag!r}") from None


def join_pass_flags(argv: Sequence[str]) -> list[str]:
    """`-p a -p b` as `-p a,b`: several pipelines run one after the other (argparse would
    keep only the last)."""
    rest, pipelines, args = [], [], iter(argv)
    for arg in args:
        if arg in ("-p", "--passes"):
            pipelines.append(next(args, ""))
        elif arg.startswith("--passes="):
            pipelines.append(arg.removeprefix("--passes="))
        elif arg.startswith("-p") and not arg.startswith("--"):
            pipelines.append(arg.removeprefix("-p").removeprefix("="))
        else:
            rest.append(arg)
    return [*rest, "-p", ",".join(p for p in pipelines if p)] if pipelines else rest


def check_target_flag(argv: Sequence[str]) -> None:
    """Refuses `-t 'c -march=...'`: `-t` names a printer; a target's options belong to
    plan-devices (xDSL would report the space as a malformed pass pipeline)."""
    args = iter(argv)
    for arg in args:
        if arg in ("-t", "--target"):
            value = next(args, "")
        elif arg.startswith("--target="):
            value = arg.removeprefix("--target=")
        else:
            continue
        if " " in value.strip():
            kind = value.split()[0]
            _fail(
                f"-t takes a target name, but found '{value}'; give a target's options to plan-devices: "
                f"-p 'plan-devices{{targets=\"{value}\"}},...' -t {kind}"
            )


def check_pipeline(spec: str, passes: dict[str, Callable[[], type[ModulePass]]]) -> None:
    """Rejects options a pass does not have, options without a value and options given
    twice, naming them as the command line spells them (xDSL would name the field, ignore the
    repetition, or take a missing value as empty)."""
    _check_repeated_options(spec)
    for arg_spec in parse_pipeline(spec):
        if arg_spec.name not in passes:
            continue  # xDSL names unknown passes
        fields = {f.name: f for f in dataclasses.fields(passes[arg_spec.name]())}
        cli = ", ".join(name.replace("_", "-") for name in fields) or "none"
        for name, values in arg_spec.parameters.items():
            field = fields.get(name.replace("-", "_"))
            if field is None:
                raise ConfigError(f"{arg_spec.name} has no option '{name}'; its options are {cli}")
            if values == () and field.type not in (bool, "bool"):
                raise ConfigError(f"option '{name}' of {arg_spec.name} needs a value, e.g. {name}=...")


def _check_repeated_options(spec: str) -> None:
    lexer, after_brace_or_space, seen = PipelineLexer(spec), False, set[str]()
    while (token := lexer.lex()).kind is not SpecTokenKind.EOF:
        if token.kind is SpecTokenKind.L_BRACE:
            seen.clear()
        if token.kind is SpecTokenKind.IDENT and after_brace_or_space:
            name = token.span.text.replace("_", "-")
            if name in seen:
                raise ConfigError(f"option '{name}' is given twice in {spec!r}; give each option once")
            seen.add(name)
        after_brace_or_space = token.kind in (SpecTokenKind.L_BRACE, SpecTokenKind.SPACE)


def _warn(message: Warning | str, category: type[Warning], *_: object, **__: object) -> None:
    """xrelay's warnings (e.g. an ONNX input's symbolic dims taken as 1) as one line each."""
    print(f"opt-tool: warning: {message}", file=sys.stderr)


def _fail(message: str) -> NoReturn:
    print(f"opt-tool: error: {message}", file=sys.stderr)
    sys.exit(1)


def _describe(e: BaseException) -> str:
    return "\n".join([str(e), *map(excerpt, getattr(e, "__notes__", []))])


def _epilog() -> str:
    return "\n".join(
        [
            "opt-tool --list-targets lists the -t targets; xDSL's own passes (cse, dce, canonicalize,",
            "...) are listed under -p above.",
        ]
    )


# --- help: passes and targets ----------------------------------------------------------------


def pass_help(passes: dict[str, Callable[[], type[ModulePass]]]) -> str:
    """xrelay's passes, each as `name{option=default ...}` and a line saying what it does."""
    lines = ["xrelay passes (-p 'name{option=value ...}'), with their options' defaults:"]
    for name, load in passes.items():
        cls = load()
        lines.append(f"  {name}{_options(cls)}")
        lines.append(textwrap.fill(summary(cls), width=92, initial_indent=" " * 6, subsequent_indent=" " * 6))
    return "\n".join(lines)


def _options(cls: type[ModulePass]) -> str:
    fields = [f for f in dataclasses.fields(cls) if f.init]
    if not fields:
        return ""
    return "{" + " ".join(f"{f.name.replace('_', '-')}={_default(f)}" for f in fields) + "}"


def _default(f: dataclasses.Field[Any]) -> str:
    value = f.default if f.default is not dataclasses.MISSING else None
    if f.default_factory is not dataclasses.MISSING:
        value = f.default_factory()
    if value is None:
        return "<unset>"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, tuple | list):
        return ",".join(str(v) for v in value)  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
    return str(value)


def summary(cls: type) -> str:
    """What a pass or target does: the first paragraph of its module's docstring (else of the
    class docstring) as one line, without the leading `name:` (`-t name`:)."""
    doc = sys.modules[cls.__module__].__doc__ or cls.__doc__ or ""
    first = doc.strip().split("\n\n")[0]
    return _NAME_PREFIX.sub("", " ".join(first.split()))


_NAME_PREFIX = re.compile(r"^`?(-t )?[\w-]+`?: ")


def target_list(xrelay_targets: Sequence[str], all_targets: dict[str, Callable[[], type[Any]]]) -> str:
    """The `-t` targets, a line each: xrelay's with what they print, and under each that
    prints kernels the features of the machine it builds them for (what schedules read);
    then xDSL's own."""
    width = max(map(len, all_targets)) + 2
    lines = ["xrelay targets:"]
    for name in (n for n in xrelay_targets if n in all_targets):
        lines.append(f"  {name:<{width}}{summary(all_targets[name]())}")
        kind = kind_of_target(name)
        if kind is not None and kind.generates_kernels:
            lines.append(f"  {'':<{width}}features: {target_features(name).summary()}")
    lines.append("xDSL's own targets (see xdsl-opt):")
    lines += [f"  {name:<{width}}xDSL's {name} printer" for name in all_targets if name not in xrelay_targets]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    try:
        args = join_pass_flags(sys.argv[1:] if argv is None else argv)
        check_target_flag(args)
        tool = OptTool(description="xrelay optimizer driver (xdsl-opt with relay)", args=args)
    except SystemExit as e:
        # argparse reports a bad flag or -t choice with exit status 2; ours is 1.
        sys.exit(0 if e.code in (0, None) else 1)
    except ArgSpecParseError as e:
        _fail(f"malformed pass pipeline: {e}")
    except (ValueError, ConfigError) as e:  # xDSL's, and check_pipeline's
        _fail(f"invalid pass pipeline: {e}")
    if tool.args.list_targets:
        print(target_list(list(XRELAY_UNIVERSE.all_targets), tool.available_targets))
        sys.exit(0)
    warnings.showwarning = _warn
    try:
        tool.run()
    except ParseError as e:
        _fail(str(e))
    except DiagnosticException as e:
        _fail(_describe(e))
    except Error as e:  # xrelay's own, e.g. an ONNX model it cannot import
        _fail(str(e))
    except (ValueError, OSError) as e:
        _fail(str(e))
    except ModuleNotFoundError as e:
        what = f"target '{tool.args.target}'" if tool.args.target else "this pipeline"
        _fail(
            f"{what} needs the Python package '{e.name}', which is not installed; install it (pip install {e.name}) or use another"
        )
    except Exception as e:
        # An error that xDSL already attributed to an op (raised through `op.emit_error`,
        # e.g. a pattern of one of xDSL's passes giving up) is a user error; anything else
        # is a bug, and its traceback is wanted.
        if not getattr(e, "__notes__", None):
            raise
        _fail(f"{type(e).__name__}: {_describe(e)}")


if __name__ == "__main__":
    main()
