"""
What the fuzzer checks, one case at a time (this runs inside a worker process).

A *program case* parses a generated program, runs `xrelay.interpret` on it, checks that it
prints and parses back the same (custom and generic form), and with some probability that
plan-devices and fuse-ops keep its meaning and that plan-devices is idempotent; then it
builds it for C and OpenCL (`xrelay.build`), runs it and compares with the interpreter.
An *opt-tool case* runs `opt-tool` (its `main`, in this process) on a text with a list of
flags.

Each gives an `Outcome`: "ok", "rejected" (an `xrelay.Error` for a program that may be
rejected: a mutant, or a program with a planted conflict), or a failure:

- "traceback": an exception that is not an `xrelay.Error` (in the API), or that escapes
  opt-tool's `main`;
- "masked": opt-tool exited 1, but the message came from a raw Python exception (a
  KeyError, an AssertionError, ...) that opt-tool printed as if it were a user error;
- "silent-exit" / "bad-exit": opt-tool exited without a message, or with a status not 0 or 1;
- "mismatch": compiled results differ from the interpreter's (NaN where it has NaN);
- "stage-mismatch" / "not-idempotent" / "round-trip": the IR-level checks above;
- "error": an `xrelay.Error` for a generated program that should have built;
- "hang" / "crash": the worker's watchdog (see `workers.py`).

The signature of a failure (kind, exception type, innermost frame in xrelay or xDSL) says
when two failures are the same: for de-duplication and for shrinking.
"""

from __future__ import annotations

import contextlib
import io
import os
import random
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

FAILURES = (
    "traceback", "masked", "silent-exit", "bad-exit", "mismatch", "stage-mismatch",
    "not-idempotent", "round-trip", "error", "hang", "crash",
)  # fmt: skip

RTOL, ATOL = 1e-4, 1e-5  # as the differential tests in test/unit


@dataclass
class Outcome:
    status: str  # "ok", "rejected", "unstable" or one of FAILURES
    signature: str = ""
    detail: str = ""
    stats: dict[str, int] = field(default_factory=dict)  # what the case did: built, ran, ...
    case: dict[str, Any] = field(default_factory=dict)  # how to run it again (text, flags, ...)

    @property
    def failed(self) -> bool:
        return self.status in FAILURES


# --- signatures -------------------------------------------------------------------------------

XRELAY_ROOT = str(Path(__file__).resolve().parents[2])


def frame_signature(tb: traceback.StackSummary | list[traceback.FrameSummary]) -> str:
    """`file:function` of the innermost frame in xrelay or xDSL (not in numpy or Python's
    library), else of the last one."""
    frames = list(tb)
    for frame in reversed(frames):
        path = os.path.realpath(frame.filename)
        ours = path.startswith(XRELAY_ROOT + os.sep) and not path.startswith(
            os.path.join(XRELAY_ROOT, ".venv") + os.sep
        )
        if (ours and os.sep + "bench" + os.sep not in path) or f"{os.sep}xdsl{os.sep}" in path:
            return f"{short_path(path)}:{frame.name}"
    return f"{short_path(frames[-1].filename)}:{frames[-1].name}" if frames else "?"


def short_path(path: str) -> str:
    path = os.path.realpath(path)
    marker = f"{os.sep}site-packages{os.sep}"
    if marker in path:
        return path.split(marker, 1)[1]
    if path.startswith(XRELAY_ROOT + os.sep):
        return os.path.relpath(path, XRELAY_ROOT)
    return os.path.basename(path)


def exception_outcome(e: BaseException, where: str) -> Outcome:
    tb = traceback.extract_tb(e.__traceback__)
    signature = f"traceback {where}: {type(e).__name__} at {frame_signature(tb)}"
    detail = "".join(traceback.format_exception(e))
    return Outcome("traceback", signature, detail)


# --- comparing results ------------------------------------------------------------------------


def as_tuple(x: Any) -> tuple[np.ndarray, ...]:
    return tuple(x) if isinstance(x, tuple) else (x,)


def compare(outs: Any, refs: Any) -> list[tuple[int, np.ndarray]] | str | None:
    """None when `outs` match `refs`; else a description (a shape or count difference), or
    the mismatching elements as (result index, boolean mask)."""
    outs, refs = as_tuple(outs), as_tuple(refs)
    if len(outs) != len(refs):
        return f"{len(outs)} results, but the interpreter gives {len(refs)}"
    bad = []
    for i, (out, ref) in enumerate(zip(outs, refs)):
        out, ref = np.asarray(out), np.asarray(ref)
        if out.shape != ref.shape or out.dtype != ref.dtype:
            return f"result {i} is {out.dtype}{list(out.shape)}, but the interpreter gives {ref.dtype}{list(ref.shape)}"
        mask = ~close(out, ref)
        if mask.any():
            bad.append((i, mask))
    return bad or None


def close(out: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """Elementwise: NaN exactly where ref has NaN, equal infinities, finite values within
    RTOL and ATOL."""
    with np.errstate(all="ignore"):
        nan_out, nan_ref = np.isnan(out), np.isnan(ref)
        diff = np.abs(out.astype(np.float64) - ref.astype(np.float64))
        finite = (diff <= ATOL + RTOL * np.abs(ref.astype(np.float64))) & np.isfinite(out) & np.isfinite(ref)
        same = (out == ref) | finite
    return np.where(nan_ref | nan_out, nan_ref & nan_out, same)


def describe_mismatch(bad: list[tuple[int, np.ndarray]], outs: Any, refs: Any) -> str:
    lines = []
    for i, mask in bad:
        out, ref = as_tuple(outs)[i], as_tuple(refs)[i]
        where = np.argwhere(mask)[:5]
        pairs = ", ".join(f"{tuple(int(k) for k in w)}: {out[tuple(w)]!r} vs {ref[tuple(w)]!r}" for w in where)
        lines.append(f"result {i}: {int(mask.sum())} of {mask.size} elements differ (built vs interpreted): {pairs}")
    return "\n".join(lines)


def unstable(
    module: Any, inputs: dict[str, np.ndarray], outs: Any, refs: Any, bad: list[tuple[int, np.ndarray]]
) -> bool:
    """True when every mismatching element is ill-conditioned: a NaN where the interpreter
    has an infinity (`order_dependent`), or the interpreter's own result there moves past the
    tolerance when the inputs move by a few ulps (float32 rounding differences between numpy
    and the kernels are then amplified, not a bug)."""
    import xrelay

    masks = {i: order_dependent(as_tuple(outs)[i], as_tuple(refs)[i]) for i, _ in bad}
    if all(not (mask & ~masks[i]).any() for i, mask in bad):
        return True
    if not inputs:
        return False
    rng = np.random.default_rng(0)
    for _ in range(3):
        shaken = {k: (v * (1 + 4e-7 * rng.standard_normal(v.shape))).astype(np.float32) for k, v in inputs.items()}
        with np.errstate(all="ignore"):
            other = as_tuple(xrelay.interpret(module, shaken))
        for i, _ in bad:
            masks[i] |= ~close(other[i], as_tuple(refs)[i])
    return all(not (mask & ~masks[i]).any() for i, mask in bad)


def order_dependent(out: Any, ref: Any) -> np.ndarray:
    """Elementwise: a NaN in `out` where the interpreter has an infinity. A sum that
    meets an overflowing product and an infinity of the other sign is NaN or an infinity
    depending on the summation order and on whether the compiler contracts a * b + c to one
    FMA (which does not overflow in between): C compilers may (gcc's default), PoCL may not,
    numpy's BLAS does. Neither order is wrong, so an infinity against a NaN is ill-conditioned
    (a NaN the interpreter has must still be a NaN, and a finite value still within tolerance).
    """
    return np.isnan(np.asarray(out)) & np.isinf(np.asarray(ref))


# --- program cases --------------------------------------------------------------------------


def check_program(case: dict[str, Any], rng: random.Random) -> Outcome:
    """Runs a program case: {"text", "targets", "default_device", "input_seed",
    "special_inputs", "may_conflict", "stage_checks"}."""
    import xrelay

    outcome = Outcome("ok", case={**case, "check": "program"})
    try:
        _check_program(case, rng, outcome)
    except _Stop:
        pass
    except xrelay.Error as e:
        outcome.status = "error"
        outcome.signature = f"error: {type(e).__name__}"
        outcome.detail = str(e)
    except Exception as e:
        failed = exception_outcome(e, outcome.stats.get("stage", "?"))
        outcome.status, outcome.signature, outcome.detail = failed.status, failed.signature, failed.detail
    outcome.stats.pop("stage", None)
    return outcome


class _Stop(Exception):
    """The case is decided (rejected or failed); `outcome` says how."""


def _stage(outcome: Outcome, name: str) -> None:
    outcome.stats["stage"] = name  # type: ignore[assignment]


def _check_program(case: dict[str, Any], rng: random.Random, outcome: Outcome) -> None:
    from fuzzing.programs import make_input

    import xrelay
    from xrelay.interpreter import entry_function

    text = case["text"]
    _stage(outcome, "parse")
    module = xrelay.parse(text)
    main = entry_function(module)
    inputs = {
        a.name_hint: make_input(
            case["input_seed"], a.name_hint, tuple(a.type.get_shape()), a.name_hint in case["special_inputs"]
        )
        for a in main.args
    }
    _stage(outcome, "interpret")
    with np.errstate(all="ignore"):
        refs = xrelay.interpret(module, inputs)
    _stage(outcome, "round-trip")
    check_round_trip(module, outcome)
    if case.get("stage_checks"):
        _stage(outcome, "stages")
        check_stages(module, case, inputs, refs, outcome)
    _stage(outcome, "build")
    try:
        exe = xrelay.build(
            text,
            targets=tuple(case["targets"]),
            default_device=case["default_device"],
        )
    except xrelay.Error as e:
        if case.get("may_conflict") and type(e).__name__ == "PlacementError":
            outcome.status, outcome.detail = "rejected", str(e)
            raise _Stop from None
        raise
    outcome.stats["built"] = 1
    _stage(outcome, "run")
    with np.errstate(all="ignore"):
        outs = exe.run(inputs)
    outcome.stats["ran"] = 1
    bad = compare(outs, refs)
    if bad is None:
        return
    if isinstance(bad, list) and unstable(module, inputs, outs, refs, bad):
        outcome.status = "unstable"
        outcome.detail = describe_mismatch(bad, outs, refs)
        return
    outcome.status = "mismatch"
    outcome.signature = "mismatch"
    outcome.detail = bad if isinstance(bad, str) else describe_mismatch(bad, outs, refs)


def print_module(module: Any, generic: bool = False) -> str:
    from xdsl.printer import Printer

    stream = io.StringIO()
    Printer(stream, print_generic_format=generic).print_op(module)
    return stream.getvalue()


def check_round_trip(module: Any, outcome: Outcome, stage: str = "as written") -> None:
    import xrelay

    for generic in (False, True):
        printed = print_module(module, generic)
        again = print_module(xrelay.parse(printed), generic)
        if again != printed:
            outcome.status = "round-trip"
            outcome.signature = f"round-trip ({'generic' if generic else 'custom'} form, {stage})"
            outcome.detail = f"printed:\n{printed}\nparsed and printed again:\n{again}"
            raise _Stop


def check_stages(module: Any, case: dict[str, Any], inputs: dict[str, np.ndarray], refs: Any, outcome: Outcome) -> None:
    """plan-devices and fuse-ops keep the program's meaning; plan-devices (and fuse-ops)
    twice change nothing; the module after each stage, lowering included, prints and parses
    back the same (opt-tool reads each stage's output)."""
    import xrelay
    from xrelay.ir import context, verify
    from xrelay.transforms import get_all_passes

    passes = get_all_passes()
    plan = passes["plan-devices"]()(targets=tuple(case["targets"]), default_device=case["default_device"])
    stages = [
        ("plan-devices", plan),
        ("fuse-ops", passes["fuse-ops"]()()),
        ("convert-relay-to-loops", passes["convert-relay-to-loops"]()()),
    ]
    staged = module.clone()
    ctx = context()
    for name, pass_ in stages:
        try:
            pass_.apply(ctx, staged)
        except xrelay.Error:
            return  # the build below reports it
        verify(staged)
        check_round_trip(staged, outcome, f"after {name}")
        if name == "convert-relay-to-loops":
            return
        once = print_module(staged)
        pass_.apply(ctx, staged)
        if print_module(staged) != once:
            outcome.status, outcome.signature = "not-idempotent", f"not-idempotent: {name}"
            outcome.detail = f"after one {name}:\n{once}\nafter two:\n{print_module(staged)}"
            raise _Stop
        with np.errstate(all="ignore"):
            after = xrelay.interpret(staged, inputs)
        bad = compare(after, refs)
        if bad is not None:
            outcome.status, outcome.signature = "stage-mismatch", f"stage-mismatch: after {name}"
            outcome.detail = (
                (bad if isinstance(bad, str) else describe_mismatch(bad, after, refs)) + "\n" + print_module(staged)
            )
            raise _Stop


# --- opt-tool cases -------------------------------------------------------------------------

# A raw Python exception that opt-tool printed as a user error is a bug in disguise, unless it
# comes from a place where such an exception is the user's mistake.
RAW_EXCEPTIONS = (AssertionError, AttributeError, IndexError, KeyError, TypeError, ZeroDivisionError,
                  NotImplementedError, RecursionError, UnboundLocalError, OverflowError, MemoryError, ValueError)  # fmt: skip


def run_opt_tool(text: str, flags: Sequence[str], workdir: str) -> tuple[int | None, str, str, BaseException | None]:
    """`opt-tool <file> flags...` in this process: exit status (None: an exception escaped),
    stdout, stderr, and the exception behind a status 1 or the escaping one."""
    from xrelay.tools import opt_tool

    path = os.path.join(workdir, "input.mlir")
    with open(path, "w") as f:
        f.write(text)
    out, err = io.StringIO(), io.StringIO()
    cause: BaseException | None = None
    status: int | None
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            opt_tool.main([path, *flags])
            status = 0
        except SystemExit as e:
            status = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            cause = e.__context__
        except Exception as e:
            status, cause = None, e
    return status, out.getvalue(), err.getvalue(), cause


def check_opt_tool(case: dict[str, Any], workdir: str) -> Outcome:
    """Runs an opt-tool case: {"text", "flags"}."""
    outcome = Outcome("ok", case={**case, "check": "opt"})
    status, _, err, cause = run_opt_tool(case["text"], case["flags"], workdir)
    classify_opt_tool(outcome, status, err, cause)
    return outcome


def classify_opt_tool(outcome: Outcome, status: int | None, err: str, cause: BaseException | None) -> None:
    if status is None:
        assert cause is not None
        failed = exception_outcome(cause, "in opt-tool")
        outcome.status, outcome.signature, outcome.detail = failed.status, failed.signature, failed.detail
        return
    if status == 0:
        return
    if status != 1:
        outcome.status, outcome.signature, outcome.detail = "bad-exit", f"bad-exit: status {status}", err
        return
    if not err.strip():
        outcome.status, outcome.signature, outcome.detail = "silent-exit", "silent-exit", ""
        return
    if "Traceback (most recent call last)" in err:
        outcome.status, outcome.signature, outcome.detail = "traceback", "traceback in opt-tool's message", err
        return
    outcome.status, outcome.detail = "rejected", err
    raw = masked_exception(cause)
    if raw is not None:
        outcome.status = "masked"
        outcome.signature = (
            f"masked: {type(raw).__name__} at {frame_signature(traceback.extract_tb(raw.__traceback__))}"
        )
        outcome.detail = err + "\n" + "".join(traceback.format_exception(raw))


def masked_exception(cause: BaseException | None) -> BaseException | None:
    """The raw exception behind opt-tool's exit 1, if it is one (see RAW_EXCEPTIONS)."""
    if cause is None or not isinstance(cause, RAW_EXCEPTIONS):
        return None
    from xdsl.utils.exceptions import DiagnosticException

    import xrelay

    if isinstance(cause, (DiagnosticException, xrelay.Error)):
        return None
    frames = traceback.extract_tb(cause.__traceback__)
    innermost = short_path(frames[-1].filename) if frames else ""
    # Bad flags and pipelines: argparse and xDSL's pipeline parsing raise ValueError by design.
    if isinstance(cause, ValueError) and any(
        name in short_path(f.filename) for f in frames for name in ("argparse", "parse_pipeline", "passes.py")
    ):
        return None
    if isinstance(cause, OSError) or innermost.endswith("codecs.py"):
        return None
    return cause


# --- the API on a mutant ---------------------------------------------------------------------


def check_api(case: dict[str, Any], rng: random.Random) -> Outcome:
    """A mutant through the API: parse, interpret, build and run must raise only
    `xrelay.Error`s; when it builds, it must match the interpreter."""
    import xrelay

    outcome = Outcome("ok", case={**case, "check": "api"})
    stage = "parse"
    try:
        module = xrelay.parse(case["text"])
        stage = "interpret"
        from fuzzing.programs import make_input

        from xrelay.interpreter import entry_function

        main = entry_function(module)
        inputs = {
            a.name_hint or f"arg{i}": make_input(0, a.name_hint or "", tuple(a.type.get_shape()), False)
            for i, a in enumerate(main.args)
        }
        with np.errstate(all="ignore"):
            refs = xrelay.interpret(module, inputs)
        stage = "build"
        exe = xrelay.build(module, targets=("c", "opencl"), default_device=rng.choice(["cpu", "opencl"]))
        outcome.stats["built"] = 1
        stage = "run"
        with np.errstate(all="ignore"):
            outs = exe.run(inputs)
        outcome.stats["ran"] = 1
    except xrelay.Error as e:
        outcome.status, outcome.detail = "rejected", str(e)
        return outcome
    except Exception as e:
        failed = exception_outcome(e, f"in the API ({stage})")
        outcome.status, outcome.signature, outcome.detail = failed.status, failed.signature, failed.detail
        return outcome
    bad = compare(outs, refs)
    if bad is not None and not (isinstance(bad, list) and unstable(module, inputs, outs, refs, bad)):
        outcome.status, outcome.signature = "mismatch", "mismatch"
        outcome.detail = bad if isinstance(bad, str) else describe_mismatch(bad, outs, refs)
    return outcome
