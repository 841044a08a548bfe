"""bench/fuzz.py: a small seeded sample of the fuzzer (random programs built and run on C and
OpenCL against the interpreter, mutants through opt-tool), and its parts: the generator, the
comparison, opt-tool's outcome classification, the shrinker and the watchdog."""

from __future__ import annotations

import os

os.environ.setdefault("POCL_DEVICES", "pthread pthread")

import random
import re
import sys
from pathlib import Path

import numpy as np
import pytest

import xrelay

BENCH = Path(__file__).parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import fuzz
from fuzzing import checks, mutants, programs
from fuzzing.shrink import shrink
from fuzzing.workers import Pool


def test_a_seeded_sample_has_no_failures_but_known_ones(tmp_path, capsys):
    """Seed 0: 6 programs built and run, 120 mutants; failures must be open issues."""
    status = fuzz.main(
        ["--seed", "0", "--programs", "6", "--mutants", "120", "--no-shrink", "--quiet", "--out", str(tmp_path)]
    )
    report = capsys.readouterr().out
    assert "programs: 6 generated" in report and "mutants: 120 through opt-tool" in report
    assert status == 0, report  # 1: a failure that is not a known open issue


@pytest.mark.parametrize("seed", [1, 2])
def test_generated_programs_verify(seed):
    kinds = set()
    for index in range(60):
        case = programs.program_case(seed, index)
        module = xrelay.parse(case["text"])  # an xrelay.Error here is a generator bug
        kinds |= {op.name for op in module.walk()}
    assert {"relay.on_device", "relay.device_copy", "relay.nn.conv2d", "func.call", "relay.concatenate"} <= kinds
    assert {"relay.cast", "relay.where", "relay.logical_not"} <= kinds  # int64 and bool islands


def test_programs_and_mutants_are_the_same_for_the_same_seed(tmp_path):
    assert programs.program_case(3, 7) == programs.program_case(3, 7)
    assert programs.program_case(3, 7) != programs.program_case(4, 7)
    assert mutants.mutant_case(3, 7, str(tmp_path), {}) == mutants.mutant_case(3, 7, str(tmp_path), {})


def test_compare_wants_nan_where_the_interpreter_has_nan():
    ref = np.array([np.nan, 1.0, np.inf, -np.inf, 0.0], np.float32)
    assert checks.compare(ref.copy(), ref) is None
    assert checks.compare(ref + np.float32(5e-5) * np.array([0, 1, 0, 0, 0], np.float32), ref) is None  # within rtol
    for wrong in ([0.0, 1, np.inf, -np.inf, 0], [np.nan, np.nan, np.inf, -np.inf, 0], [np.nan, 1, -np.inf, -np.inf, 0]):
        bad = checks.compare(np.array(wrong, np.float32), ref)
        assert isinstance(bad, list) and int(bad[0][1].sum()) == 1
    assert "shape" not in str(checks.compare((ref, ref), ref))  # several results where one is expected


def outcome_of(status, err, cause):
    outcome = checks.Outcome("ok")
    checks.classify_opt_tool(outcome, status, err, cause)
    return outcome


def test_opt_tool_outcomes():
    assert outcome_of(0, "", None).status == "ok"
    assert outcome_of(1, "opt-tool: error: <input>:1:1 expected ...", None).status == "rejected"
    assert outcome_of(1, "", None).status == "silent-exit"
    assert outcome_of(2, "usage: ...", None).status == "bad-exit"
    try:
        {}["x"]
    except KeyError as e:
        masked = outcome_of(1, "opt-tool: error: KeyError: 'x'", e)
        escaped = outcome_of(None, "", e)
    assert masked.status == "masked" and masked.signature.startswith("masked: KeyError at ")
    assert escaped.status == "traceback" and "KeyError" in escaped.signature


def test_shrink_keeps_the_failure_and_drops_the_rest():
    text = "\n".join(f"line {i} {'needle' if i == 13 else 'hay'} {'pin' if i == 3 else ''}" for i in range(40))
    calls = []

    def fails(candidate: str) -> bool:
        calls.append(candidate)
        return "needle" in candidate and "pin" in candidate

    small = shrink(text, fails, budget=500)
    assert small.split() == ["pin", "needle"]
    assert len(calls) < 500


def test_shrink_a_program_in_its_ir():
    t = "tensor<2xf32>"
    text = f"""func.func @main(%a: {t}, %b: {t}) -> {t} {{
  %0 = relay.exp %a : {t}
  %1 = relay.add %0, %b : ({t}, {t}) -> {t}
  %2 = relay.nn.softmax %1 : ({t}) -> {t}
  %3 = relay.negative %2 : {t}
  %4 = relay.tanh %3 : {t}
  func.return %4 : {t}
}}"""

    def fails(candidate: str) -> bool:  # "the bug is in softmax": any valid program that has one
        try:
            return "relay.nn.softmax" in candidate and xrelay.parse(candidate) is not None
        except xrelay.Error:
            return False

    small = shrink(text, fails, budget=200, valid_program=True)
    assert "softmax" in small and "exp" not in small and "tanh" not in small and "add" not in small


def test_the_watchdog_reports_hangs_and_crashes_and_goes_on():
    with Pool(jobs=1) as pool:
        assert pool.run({"kind": "sleep", "seconds": 30, "timeout": 1}).status == "hang"
        assert pool.run({"kind": "exit", "status": 3, "timeout": 30}).status == "crash"
        assert pool.run({"kind": "sleep", "seconds": 0, "timeout": 30}).status == "ok"
        assert pool.restarts == 2


def test_a_program_case_builds_runs_and_matches():
    case = programs.program_case(0, 2)
    outcome = checks.check_program({**case, "stage_checks": True}, random.Random(0))
    assert outcome.status == "ok", outcome.detail
    assert outcome.stats == {"built": 1, "ran": 1}


@pytest.mark.parametrize("kind", ["xi64>", "xi1>"])
def test_a_program_with_int64_or_bool_values_builds_runs_and_matches(kind):
    """int64 arithmetic, casts, comparisons, where and take of run-time indices, on C and
    OpenCL against the interpreter (the first such case of seed 0)."""
    case = next(c for c in (programs.program_case(0, i) for i in range(200)) if kind in c["text"])
    outcome = checks.check_program(case, random.Random(0))
    assert outcome.status == "ok", outcome.detail
    assert outcome.stats["ran"] == 1


# --- open bugs the fuzzer found in code others own ----------------------------------------------

FOUND = sorted((Path(__file__).parents[1] / "Inputs" / "fuzz").glob("*.mlir"))
# Findings fixed since: they must stay right.
# concatenate_on_c: gcc's if-conversion (off in C kernels with a branch, targets/c.py);
# reshape_of_empty: delinearize divided by a zero stride; transpose_of_rank_0: an empty index.
FIXED = {"concatenate_on_c", "reshape_of_empty", "transpose_of_rank_0"}
OPEN = [p for p in FOUND if p.stem not in FIXED]


def run_finding(path: Path) -> None:
    text = path.read_text()
    header = dict(re.findall(r"^// (targets|default-device): (.*)$", text, re.M))
    shapes = {a.name_hint: tuple(a.type.get_shape()) for a in xrelay.parse(text).ops.first.args}
    inputs = {
        name: np.arange(1, 1 + int(np.prod(shape)), dtype=np.float32).reshape(shape) for name, shape in shapes.items()
    }
    exe = xrelay.build(text, targets=tuple(header["targets"].split(",")), default_device=header["default-device"])
    np.testing.assert_array_equal(exe.run(inputs), xrelay.interpret(text, inputs))


@pytest.mark.parametrize("path", OPEN, ids=[p.stem for p in OPEN])
@pytest.mark.xfail(reason="open: see the reproducer's header (found by bench/fuzz.py)", strict=True)
def test_open_fuzz_findings(path: Path) -> None:
    """Strict: once a finding is fixed this fails, and it moves to FIXED."""
    run_finding(path)


@pytest.mark.parametrize("name", sorted(FIXED))
def test_fixed_fuzz_findings(name: str) -> None:
    run_finding(Path(__file__).parents[1] / "Inputs" / "fuzz" / f"{name}.mlir")


def test_a_nan_against_an_infinity_is_order_dependent_but_not_against_a_number():
    """Fuzz seed 1, program 713: batch_matmul of a row with 1e30 and -3 against one with 1e30
    and inf. With FMA (numpy's BLAS) 1e30 * 1e30 + -inf is -inf; PoCL rounds the product to
    inf first and gets NaN. Both are IEEE sums in some order; a NaN for a finite value is not."""
    x = np.array([[[0.1, -1e-30, -3.0, 0.0, 1e30], [0.3, -1e-30, np.inf, -0.09, 1e30]]], np.float32)
    module = xrelay.parse(
        "func.func @main(%x: tensor<1x2x5xf32>) -> tensor<1x2x2xf32> {\n"
        "  %0 = relay.nn.batch_matmul %x, %x : (tensor<1x2x5xf32>, tensor<1x2x5xf32>) -> tensor<1x2x2xf32>\n"
        "  func.return %0 : tensor<1x2x2xf32>\n}"
    )
    ref = np.array([[[np.inf, -np.inf], [-np.inf, np.inf]]], np.float32)
    nan_for_inf = ref.copy()
    nan_for_inf[0, 0, 1] = np.nan
    bad = checks.compare(nan_for_inf, ref)
    assert isinstance(bad, list)
    assert checks.unstable(module, {"x": x}, nan_for_inf, ref, bad)
    number_for_inf = ref.copy()
    number_for_inf[0, 0, 1] = 1.0
    bad = checks.compare(number_for_inf, ref)
    assert isinstance(bad, list)
    assert not checks.unstable(module, {"x": x}, number_for_inf, ref, bad)
