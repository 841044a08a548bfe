"""
Worker processes with a watchdog: each case runs in a worker that has imported the compiler
once (a case costs its own time, not an interpreter start), and a case that runs past its
time limit is a hang: the worker's process group (with any gcc it started) is killed and a
fresh worker takes its place. A worker that dies (a segfault, the OOM killer) is a crash.

    with Pool(jobs=2) as pool:
        for task, outcome in pool.map(tasks):     # tasks: dicts with "kind" and "timeout"
            ...
        outcome = pool.run(task)                   # one task (the shrinker's)

Tasks are plain dicts (see `run_task`); outcomes are `checks.Outcome`s.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import random
import resource
import shutil
import signal
import sys
import tempfile
import time
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

from fuzzing.checks import Outcome

STARTUP_SECONDS = 180  # importing xrelay and xDSL on a loaded machine
MEMORY_LIMIT = 8 << 30  # address space per worker: a huge tensor is a MemoryError, not the OOM killer


# --- in the worker ----------------------------------------------------------------------------


def worker_main(conn: Connection, env: dict[str, str]) -> None:
    os.setsid()  # a process group of its own: killing it kills the compilers it started
    os.environ.update(env)
    with contextlib.suppress(ValueError, OSError):  # where the limit cannot be set, run without
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    warnings.simplefilter("ignore")
    workdir = tempfile.mkdtemp(prefix="xrelay-fuzz-")
    os.environ["XDG_CACHE_HOME"] = os.path.join(workdir, "cache")  # gcc's libraries, not the user's cache
    import xrelay
    import xrelay.driver  # noqa: F401
    from xrelay.tools import opt_tool  # noqa: F401

    conn.send("ready")
    done = 0
    try:
        while True:
            task = conn.recv()
            if task is None:
                break
            outcome = run_task(task, workdir)
            if not outcome.failed and task["kind"] in ("program", "mutant"):
                outcome.case, outcome.detail = {}, ""  # nothing to keep: less to send
            conn.send(outcome)
            done += 1
            if done % 100 == 0:  # gcc's libraries; not PoCL's directory, which it made once at start
                shutil.rmtree(os.path.join(os.environ["XDG_CACHE_HOME"], "xrelay"), ignore_errors=True)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def run_task(task: dict[str, Any], workdir: str) -> Outcome:
    from fuzzing import checks, mutants, programs

    kind = task["kind"]
    rng = random.Random(task.get("rng", 0))
    if kind == "program":
        case = programs.program_case(task["seed"], task["index"], programs.Options(**task.get("options", {})))
        return checks.check_program(case, rng)
    if kind == "mutant":
        return mutants.check_mutant(task["seed"], task["index"], workdir, task.get("options", {}))
    if kind == "mutant-case":  # the case alone, to shrink a mutant that hung or crashed
        return Outcome(
            "ok", case={**mutants.mutant_case(task["seed"], task["index"], workdir, task["options"]), "check": "opt"}
        )
    if kind == "program-case":
        return checks.check_program(task["case"], rng)
    if kind == "opt-case":
        return checks.check_opt_tool(task["case"], workdir)
    if kind == "api-case":
        return checks.check_api(task["case"], rng)
    if kind == "subprocess-case":
        return mutants.check_subprocess(task["case"], workdir)
    if kind == "sleep":  # for the watchdog's own test
        time.sleep(task["seconds"])
        return Outcome("ok")
    if kind == "exit":  # likewise: a worker that dies
        os._exit(task["status"])
    raise ValueError(f"unknown task kind {kind!r}")


# --- in the parent ----------------------------------------------------------------------------


@dataclass
class Worker:
    process: multiprocessing.process.BaseProcess
    conn: Connection
    task: dict[str, Any] | None = None
    deadline: float = 0.0


class Pool:
    def __init__(self, jobs: int = 2, env: dict[str, str] | None = None):
        self.jobs = jobs
        self.env = {"POCL_DEVICES": "pthread pthread", "POCL_KERNEL_CACHE": "0", "OMP_NUM_THREADS": "1",
                    "OPENBLAS_NUM_THREADS": "1", **(env or {})}  # fmt: skip
        self.context = multiprocessing.get_context("spawn")  # no fork of a process that holds OpenCL
        self.workers: list[Worker] = []
        self.restarts = 0

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start_worker(self) -> Worker:
        ours, theirs = self.context.Pipe()
        bench = str(Path(__file__).resolve().parents[1])
        if bench not in sys.path:
            sys.path.insert(0, bench)
        process = self.context.Process(target=worker_main, args=(theirs, self.env), daemon=True)
        process.start()
        theirs.close()
        if not ours.poll(STARTUP_SECONDS):
            kill(process)
            raise RuntimeError("a fuzz worker did not start")
        ours.recv()
        return Worker(process, ours)

    def ensure_workers(self, count: int) -> None:
        while len(self.workers) < count:
            self.workers.append(self.start_worker())

    def replace(self, worker: Worker) -> None:
        kill(worker.process)
        self.workers.remove(worker)
        self.restarts += 1
        self.workers.append(self.start_worker())

    def map(self, tasks: Iterable[dict[str, Any]]) -> Iterator[tuple[dict[str, Any], Outcome]]:
        """Runs `tasks` on all workers; yields each with its outcome as it finishes."""
        self.ensure_workers(self.jobs)
        pending = iter(tasks)
        exhausted = False
        while True:
            for worker in list(self.workers):
                if worker.task is None and not exhausted:
                    task = next(pending, None)
                    if task is None:
                        exhausted = True
                    else:
                        self.assign(worker, task)
            busy = [w for w in self.workers if w.task is not None]
            if not busy:
                return
            timeout = max(0.0, min(w.deadline for w in busy) - time.monotonic())
            ready = wait([w.conn for w in busy], timeout)
            for worker in busy:
                if worker.conn in ready:
                    yield self.collect(worker)
                elif time.monotonic() >= worker.deadline:
                    yield self.timed_out(worker)

    def run(self, task: dict[str, Any]) -> Outcome:
        """One task, on the first worker."""
        return next(self.map_one(task))[1]

    def map_one(self, task: dict[str, Any]) -> Iterator[tuple[dict[str, Any], Outcome]]:
        jobs, self.jobs = self.jobs, 1
        try:
            yield from self.map([task])
        finally:
            self.jobs = jobs

    def assign(self, worker: Worker, task: dict[str, Any]) -> None:
        worker.task = task
        worker.deadline = time.monotonic() + task.get("timeout", 60)
        worker.conn.send(task)

    def collect(self, worker: Worker) -> tuple[dict[str, Any], Outcome]:
        task = worker.task
        assert task is not None
        worker.task = None
        try:
            return task, worker.conn.recv()
        except (EOFError, OSError):
            code = worker.process.exitcode
            self.replace(worker)
            reason = f"signal {-code}" if code is not None and code < 0 else f"exit status {code}"
            return task, Outcome("crash", f"crash: {reason}", f"the worker died ({reason})", case=task)

    def timed_out(self, worker: Worker) -> tuple[dict[str, Any], Outcome]:
        task = worker.task
        assert task is not None
        self.replace(worker)
        seconds = task.get("timeout", 60)
        return task, Outcome("hang", "hang", f"no result after {seconds} s", case=task)

    def close(self) -> None:
        for worker in self.workers:
            try:
                if worker.task is None:
                    worker.conn.send(None)
                    worker.process.join(5)
            except (OSError, BrokenPipeError):
                pass
            kill(worker.process)
        self.workers = []


def kill(process: multiprocessing.process.BaseProcess) -> None:
    if process.pid is None or process.exitcode is not None:
        return
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        process.kill()
    process.join(5)
