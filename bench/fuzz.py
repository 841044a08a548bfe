"""
Fuzzing xrelay: seeded random programs, built and run on C and OpenCL against the
interpreter, and mutants of them through opt-tool. Failures are shrunk to minimal
reproducers.

    .venv/bin/python bench/fuzz.py --seed 1 --programs 500 --mutants 2000
    .venv/bin/python bench/fuzz.py --seed 1 --time-limit 3600 --programs 100000 --mutants 400000
    .venv/bin/python bench/fuzz.py --replay .fuzz-failures/traceback-1a2b3c4d
    make fuzz N=500          # N programs and 4 N mutants

A program case (`fuzzing/programs.py`, `fuzzing/checks.py`) generates program `i` of the seed
(all relay ops, broadcasting, odd, size-1 and size-0 shapes, rank 0; on_device with every
flag combination, device_copy, helper functions called with func.call, cpu, opencl and
opencl id 1), checks that it prints and parses back, sometimes that plan-devices and fuse-ops
keep its meaning, then builds it with `xrelay.build` and compares `run` with
`xrelay.interpret`. A mutant case (`fuzzing/mutants.py`) breaks a generated program (as
written, generic, planned, fused or lowered) and runs it through an opt-tool pipeline of its
stage. Every case runs in a worker process with a time limit (`fuzzing/workers.py`).

Failures: a traceback (any exception but an `xrelay.Error` from the API; any that escapes
opt-tool), a raw Python exception that opt-tool printed as a message ("masked"), a hang, a
crash, an exit without a message, a result that differs from the interpreter, a printed
module that does not parse back the same, and an `xrelay.Error` for a generated program
that is valid. Each distinct failure (its signature: kind, exception, innermost frame) is
shrunk (`fuzzing/shrink.py`) and saved under --out as `<kind>-<hash>/`: `repro.mlir`,
`original.mlir`, `case.json` (what --replay runs) and `report.txt`. Failures that match an
open issue are tagged with it (`KNOWN`). The exit status is 1 when a failure is not known.

Counted separately and not failures: "rejected" (an `xrelay.Error` for a mutant, or for a
program with a planted conflict) and "unstable" (a mismatch only where the interpreter's own
result moves past the tolerance when the inputs move by a few ulps).
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import os
import re
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fuzzing.checks import Outcome
from fuzzing.shrink import shrink
from fuzzing.workers import Pool

# Open issues (issue 13) a failure may be an instance of: a pattern over its signature and
# detail. These are reported, counted and saved like any failure, but tagged.
KNOWN = {
    "13.3 max/min over a zero-length axis": r"relay\.(max|min)\b.*\b0x|_wrapreduction.*\n.*run_reduce|run_reduce[\s\S]*zero-size array",
    "13.6 a memref parameter on @main": r"lowered_graph\.py:nbytes",
    "13.7 huge tensor types": r"MemoryError|INVALID_BUFFER_SIZE|array is too big|Maximum allowed dimension exceeded|cannot allocate|negative dimensions",
    "13.8 an i128 array attribute": r"NotImplementedError[\s\S]*(i128|printer)|printer\.py.*NotImplementedError",
    "13.9 conv2d NaN weights on padding": r"relay\.nn\.conv2d[\s\S]*padding",
}


def known_issue(outcome: Outcome) -> str | None:
    text = f"{outcome.signature}\n{outcome.detail}"
    for issue, pattern in KNOWN.items():
        if issue.startswith(("13.3", "13.9")) and outcome.status != "mismatch" and "zero-size" not in text:
            continue
        if re.search(pattern, text):
            return issue
    return None


# --- the run ----------------------------------------------------------------------------------


@dataclass
class Stats:
    counts: collections.Counter[str] = field(default_factory=collections.Counter)
    failures: dict[str, list[tuple[dict[str, Any], Outcome]]] = field(default_factory=dict)

    def add(self, task: dict[str, Any], outcome: Outcome) -> None:
        kind = task["kind"]
        self.counts[f"{kind}s"] += 1
        self.counts[f"{kind}s {outcome.status}"] += 1
        for name, value in outcome.stats.items():
            self.counts[f"{kind}s {name}"] += value
        if outcome.failed:
            key = failure_key(outcome)
            self.failures.setdefault(key, []).append((task, outcome))

    @property
    def failure_count(self) -> int:
        return sum(len(v) for v in self.failures.values())


def failure_key(outcome: Outcome) -> str:
    """The signature, with numbers, names and locations of an error message evened out."""
    if outcome.status == "error":
        first = outcome.detail.strip().splitlines()[0] if outcome.detail.strip() else ""
        first = re.sub(r"<input>:\d+:\d+|%[\w.#-]+|\d+", "_", first)
        return f"{outcome.signature}: {first[:120]}"
    return outcome.signature or outcome.status


def tasks(args: argparse.Namespace, start: float) -> Iterator[dict[str, Any]]:
    """Programs and mutants interleaved (so a time limit cuts both), until both counts are
    reached or time is up."""
    program_options = {"known_issues": args.known_issues}
    mutant_options = {
        "api_rate": args.api_rate,
        "subprocess_rate": args.subprocess_rate,
        "program_options": program_options,
    }
    if args.only:
        for spec in args.only:
            kind, _, index = spec.partition(":")
            options = program_options if kind == "program" else mutant_options
            yield {
                "kind": kind,
                "seed": args.seed,
                "index": int(index),
                "options": options,
                "timeout": args.timeout,
                "rng": int(index),
            }
        return
    p = m = 0
    while p < args.programs or m < args.mutants:
        if args.time_limit and time.monotonic() - start > args.time_limit:
            return
        # keep the two at the ratio of their targets
        if m >= args.mutants or (p < args.programs and p * max(args.mutants, 1) <= m * max(args.programs, 1)):
            yield {
                "kind": "program",
                "seed": args.seed,
                "index": p,
                "options": program_options,
                "timeout": args.timeout,
                "rng": p,
            }
            p += 1
        else:
            yield {
                "kind": "mutant",
                "seed": args.seed,
                "index": m,
                "options": mutant_options,
                "timeout": args.timeout,
                "rng": m,
            }
            m += 1


def run(args: argparse.Namespace) -> int:
    start = time.monotonic()
    stats = Stats()
    out = Path(args.out)
    last = start
    with Pool(args.jobs) as pool:
        for task, outcome in pool.map(tasks(args, start)):
            stats.add(task, outcome)
            if outcome.failed and stats.failures[failure_key(outcome)][0][1] is outcome:
                say(args, f"new failure: {failure_key(outcome)} ({describe_task(task)})")
            if time.monotonic() - last > args.progress:
                last = time.monotonic()
                say(args, progress(stats, start))
        elapsed = time.monotonic() - start
        saved = [] if args.no_shrink else save_failures(pool, stats, out, args)
    report = summary(args, stats, elapsed, saved, pool.restarts)
    print(report)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"summary-seed{args.seed}.txt").write_text(report + "\n")
    return 1 if any(known_issue(instances[0][1]) is None for instances in stats.failures.values()) else 0


def say(args: argparse.Namespace, message: str) -> None:
    if not args.quiet:
        print(f"[fuzz seed {args.seed}] {message}", file=sys.stderr, flush=True)


def describe_task(task: dict[str, Any]) -> str:
    if "index" in task:
        return f"{task['kind']} {task['index']} of seed {task['seed']}"
    return task["kind"]


def progress(stats: Stats, start: float) -> str:
    c = stats.counts
    return (
        f"{time.monotonic() - start:.0f} s: {c['programs']} programs ({c['programs ran']} ran), "
        f"{c['mutants']} mutants, {stats.failure_count} failures in {len(stats.failures)} kinds"
    )


# --- failures -----------------------------------------------------------------------------------


CHECK_OF = {"program": "program-case", "opt": "opt-case", "api": "api-case", "subprocess": "subprocess-case"}


def case_of(pool: Pool, task: dict[str, Any], outcome: Outcome) -> dict[str, Any] | None:
    """The case behind a failure; for a hang or crash, remade from the task's seed and index."""
    if "check" in outcome.case:
        return outcome.case
    if task["kind"] == "program":
        from fuzzing.programs import Options, program_case

        return {**program_case(task["seed"], task["index"], Options(**task["options"])), "check": "program"}
    if task["kind"] == "mutant":
        made = pool.run(
            {
                "kind": "mutant-case",
                "seed": task["seed"],
                "index": task["index"],
                "options": task["options"],
                "timeout": 120,
            }
        )
        return made.case or None
    return task.get("case")


# Failures whose signature says little about the cause: several instances are shrunk, and
# reproducers that use the same ops are saved once.
VAGUE = ("mismatch", "stage-mismatch", "unstable", "error", "hang", "crash")


def save_failures(pool: Pool, stats: Stats, out: Path, args: argparse.Namespace) -> list[str]:
    saved, seen = [], set()
    for key, instances in stats.failures.items():
        tries = instances[: args.shrink_instances] if instances[0][1].status in VAGUE else instances[:1]
        for task, outcome in tries:
            case = case_of(pool, task, outcome)
            if case is None:
                continue
            say(args, f"shrinking {key} ({len(instances)} times; {describe_task(task)})")
            small, final = shrink_case(pool, case, outcome, args)
            ops = (key, tuple(sorted(set(re.findall(r"\b(?:relay|func)\.[\w.]+", small["text"])))))
            if ops in seen:
                continue
            seen.add(ops)
            origins = [describe_task(t) for t, _ in instances[:10]]
            saved.append(save(out, key, case, small, outcome, final, len(instances), origins, describe_task(task)))
    return saved


def shrink_case(
    pool: Pool, case: dict[str, Any], outcome: Outcome, args: argparse.Namespace
) -> tuple[dict[str, Any], Outcome]:
    hang = outcome.status == "hang"
    timeout = min(args.timeout, 20) if hang else args.timeout
    budget = 25 if hang else args.shrink_budget
    kind = CHECK_OF[case["check"]]
    results: dict[str, Outcome] = {}

    def fails(text: str) -> bool:
        if text not in results:
            results[text] = pool.run({"kind": kind, "case": {**case, "text": text}, "timeout": timeout})
        got = results[text]
        return got.status == outcome.status and (hang or failure_key(got) == failure_key(outcome))

    if not fails(case["text"]):  # flaky, or it needs the state of a long-running worker
        return case, results[case["text"]]
    small = shrink(case["text"], fails, budget, valid_program=case["check"] == "program")
    return {**case, "text": small}, results[small]


def save(
    out: Path,
    key: str,
    case: dict[str, Any],
    small: dict[str, Any],
    original: Outcome,
    final: Outcome,
    count: int,
    origins: list[str],
    origin: str,
) -> str:
    issue = known_issue(original)
    flaky = final.status != original.status
    name = (
        f"{'flaky-' if flaky else ''}{original.status}-{hashlib.sha1((key + small['text']).encode()).hexdigest()[:8]}"
    )
    folder = out / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "original.mlir").write_text(case["text"])
    (folder / "repro.mlir").write_text(small["text"])
    (folder / "case.json").write_text(json.dumps(small, indent=1) + "\n")
    report = [
        f"failure: {key}",
        f"known issue: {issue}" if issue else "known issue: none",
        f"flaky: a fresh worker gives {final.status!r}; the reproducer is the original"
        if flaky
        else "reproduces on a fresh worker",
        f"from {origin}; seen {count} times, in: {', '.join(origins)}",
        f"replay: .venv/bin/python bench/fuzz.py --replay {folder}",
        how_to_run(small),
        "",
        "--- the reproducer's outcome ---",
        final.detail[-6000:],
        "",
        "--- the original's outcome ---",
        original.detail[-6000:],
    ]
    (folder / "report.txt").write_text("\n".join(report) + "\n")
    return f"{name}: {key}" + (f"  [known: {issue}]" if issue else "") + ("  [flaky]" if flaky else "")


def how_to_run(case: dict[str, Any]) -> str:
    if case["check"] in ("opt", "subprocess"):
        return "by hand: .venv/bin/opt-tool repro.mlir " + " ".join(f"'{f}'" for f in case["flags"])
    if case["check"] == "program":
        return (
            f"by hand: xrelay.build(text, targets={tuple(case['targets'])}, default_device={case['default_device']!r}) "
            f"and xrelay.interpret, inputs from fuzzing.programs.make_input({case['input_seed']}, name, shape, "
            f"name in {case['special_inputs']})"
        )
    return "by hand: xrelay.parse, interpret, build and run (fuzzing.checks.check_api)"


def replay(args: argparse.Namespace) -> int:
    folder = Path(args.replay)
    case = json.loads((folder / "case.json").read_text() if folder.is_dir() else folder.read_text())
    if folder.is_dir():
        case["text"] = (folder / "repro.mlir").read_text()
    with Pool(1) as pool:
        outcome = pool.run({"kind": CHECK_OF[case["check"]], "case": case, "timeout": args.timeout})
    print(f"{outcome.status}: {outcome.signature}\n{outcome.detail}")
    return 1 if outcome.failed else 0


# --- the summary ----------------------------------------------------------------------------------


def summary(args: argparse.Namespace, stats: Stats, elapsed: float, saved: list[str], restarts: int) -> str:
    c = stats.counts
    lines = [
        f"fuzz seed {args.seed}: {elapsed:.0f} s on {args.jobs} workers",
        f"programs: {c['programs']} generated, {c['programs built']} built, {c['programs ran']} run and compared "
        f"({c['programs ok']} matched), {c['programs rejected']} rejected with a planted conflict, "
        f"{c['programs unstable']} ill-conditioned (not counted as mismatches)",
        f"mutants: {c['mutants']} through opt-tool in-process ({c['mutants ok']} exit 0, {c['mutants rejected']} exit 1 "
        f"with a message), {c['mutants subprocess']} also as an opt-tool process, {c['mutants api']} also through the API "
        f"({c['mutants built']} built, {c['mutants ran']} run)",
    ]
    by_kind = collections.Counter()
    for instances in stats.failures.values():
        for _, outcome in instances:
            by_kind[outcome.status] += 1
    lines.append(
        "failures: "
        + (", ".join(f"{n} {kind}" for kind, n in sorted(by_kind.items())) if by_kind else "none")
        + (f" ({restarts} worker restarts)" if restarts else "")
    )
    for key, instances in sorted(stats.failures.items(), key=lambda kv: -len(kv[1])):
        issue = known_issue(instances[0][1])
        first = ", ".join(describe_task(t) for t, _ in instances[:3])
        lines.append(f"  {len(instances):5d} x {key}" + (f"  [known: {issue}]" if issue else "") + f"  (e.g. {first})")
    if saved:
        lines.append(f"reproducers in {args.out}/:")
        lines += [f"  {s}" for s in saved]
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[1], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--seed", type=int, default=0, help="the run's seed: case i of a seed is always the same case")
    p.add_argument("--programs", type=int, default=40, help="random programs to build and run")
    p.add_argument("--mutants", type=int, default=400, help="mutants to run through opt-tool")
    p.add_argument("--time-limit", type=float, default=0, help="stop starting cases after this many seconds (0: none)")
    p.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="worker processes")
    p.add_argument("--timeout", type=float, default=120, help="seconds a case may take before it is a hang")
    p.add_argument("--out", default=".fuzz-failures", help="where reproducers go")
    p.add_argument(
        "--known-issues", action="store_true", help="also generate programs that hit open issues 13.3 and 13.9"
    )
    p.add_argument(
        "--api-rate", type=float, default=0.05, help="share of mutants also run through the API (build and run)"
    )
    p.add_argument(
        "--subprocess-rate", type=float, default=0.02, help="share of mutants also run as an opt-tool process"
    )
    p.add_argument("--shrink-budget", type=int, default=300, help="candidate runs per failure while shrinking")
    p.add_argument(
        "--shrink-instances", type=int, default=4, help="instances shrunk of a vague failure (a mismatch, an error)"
    )
    p.add_argument("--no-shrink", action="store_true", help="report failures without shrinking or saving them")
    p.add_argument(
        "--only", nargs="+", metavar="KIND:INDEX", help="run only these cases of the seed, e.g. program:361 mutant:12"
    )
    p.add_argument(
        "--replay", metavar="DIR", help="run a saved reproducer (a folder under --out, or a case.json) again"
    )
    p.add_argument("--progress", type=float, default=30, help="seconds between progress lines on stderr")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    bad = [spec for spec in args.only or [] if not re.fullmatch(r"(program|mutant):\d+", spec)]
    if bad:
        raise SystemExit(f"fuzz.py: error: --only takes program:N or mutant:N, not {', '.join(bad)}")
    return replay(args) if args.replay else run(args)


if __name__ == "__main__":
    sys.exit(main())
