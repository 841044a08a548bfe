"""Throughput of one shared executable called from 1, 2 and 4 threads (a server sharing one
model between request threads), against its own single-thread rate measured in the same run.

The demo MLP (examples/mlp.mlir, weights bound with `params=`) all on the host (`c`) and with
its first layer on OpenCL (`c`, `opencl`); each setting runs CALLS calls spread over the
threads, median of ROUNDS rounds, and checks every result against the single-thread one.

    .venv/bin/python bench/concurrent_runs.py [calls]
"""

from __future__ import annotations

import os

os.environ.setdefault("POCL_DEVICES", "pthread pthread")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import pathlib
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from models import random_inputs

import xrelay

MODEL = pathlib.Path(__file__).parents[1] / "examples" / "mlp.mlir"

ROUNDS = 5
THREADS = (1, 2, 4)


def throughput(exe: xrelay.Executable, xs: list[np.ndarray], threads: int, expected: list[np.ndarray]) -> float:
    """Calls per second over one round of `len(xs)` calls on `threads` threads."""
    with ThreadPoolExecutor(threads) as pool:
        start = time.perf_counter()
        outs = list(pool.map(exe.run, xs))
        seconds = time.perf_counter() - start
    wrong = sum(not np.array_equal(a, b) for a, b in zip(outs, expected))
    if wrong:
        raise SystemExit(f"{wrong} of {len(xs)} results on {threads} threads differ from the single-thread ones")
    return len(xs) / seconds


def main() -> None:
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 400
    text = MODEL.read_text()
    arrays = random_inputs(text)
    weights = {k: v for k, v in arrays.items() if k != "x"}
    rng = np.random.default_rng(1)
    xs = [rng.standard_normal(arrays["x"].shape).astype(np.float32) for _ in range(calls)]
    print(f"{MODEL.name}, weights bound, {calls} calls per round, median of {ROUNDS} rounds (calls/s)")
    for label, program, targets in (
        ("all on cpu", text.replace("device = opencl", "device = cpu"), ("c",)),
        ("layer 1 on opencl:0", text, ("c", "opencl")),
    ):
        exe = xrelay.build(program, targets=targets, params=weights)
        expected = [exe.run(x) for x in xs]
        rates = {t: statistics.median(throughput(exe, xs, t, expected) for _ in range(ROUNDS)) for t in THREADS}
        cells = "  ".join(f"{t} threads {rates[t]:8.0f} ({rates[t] / rates[1]:.2f}x)" for t in THREADS)
        print(f"  {label:<20} {cells}")


if __name__ == "__main__":
    main()
