"""packed_gemv (a dense below packed_matmul's tile rows, read from the pre-packed panels)
against what those rows took before (matmul_block on the plain [N, K] weight), issue 31.

1. Layers: dense + bias + relu at the MLP's shapes 784->512 and 512->512, batch 1, 4, 8, the
   weight a bound param: "plain" (the param marked held as it is, `batching.hold_as_is`: the
   schedule rows below the tile took before) against "panels" (packed_gemv), per `--targets`.
2. The MLP 784-512-512-10 built for batch sizes (1, 4, 8, 16): per-size run time of that
   size's graph (its executor: `exe.run` may split a batch by measured run times) "before"
   (convert-relay-to-loops without packed_gemv: the larger sizes read the weights held as
   they are) against "after", and the params each stores.

Each pair interleaved in one process (`timing.interleaved_times`, blocks of runs, medians),
1 thread, the 1-minute load printed before and after.

Run of 2026-11-28 (AMD EPYC with AVX-512, 2 cores shared with two other helpers, load 4.5-4.7,
21 rounds, wall time; panels / plain, then after / before):
- native: 1x784.512x784 19.4 / 23.1 us (0.84), 4x 0.55, 8x 0.32; 1x512.512x512 13.9 / 15.6
  (0.89), 4x 0.45, 8x 0.33. MLP batch 1 34.5 / 39.9 us (0.86), 4 41.5 / 116.1 (0.36), 8 90.7 /
  226.6 (0.40), 16 146.5 / 239.8 (0.61); params 2.68 MB both.
- x86-64-v3: 1x784 20.1 / 21.2 (0.95), 4x 0.61, 8x (packed_matmul: pre-packed against packed
  per item) 0.65; 1x512 13.3 / 13.7 (0.98), 4x 0.61, 8x 0.63. MLP batch 1 0.89, 4 0.56, 8 0.60,
  16 259.2 / 362.9 (0.71); params 2.68 MB both.

    .venv/bin/python bench/gemv.py [--rounds 15] [--targets "c,c -march=x86-64-v3"] [--cpu-time]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
os.environ.setdefault("XRELAY_BUILD_CACHE", "0")
from models import mlp_relay, random_inputs
from timing import interleaved_times

import xrelay
from xrelay.batching import hold_as_is
from xrelay.transforms import convert_relay_to_loops as crl
from xrelay.transforms.schedules import packed_gemv

SIZES = (1, 4, 8, 16)
CPU_TIME = False  # --cpu-time: the calling thread's CPU time (1 thread: the kernels run in it)


def load() -> str:
    return Path("/proc/loadavg").read_text().split()[0]


def dense_text(m: int, k: int, n: int) -> str:
    t = lambda *s: f"tensor<{'x'.join(map(str, s))}xf32>"  # noqa: E731
    return (
        f"func.func @main(%x: {t(m, k)}, %w: {t(n, k)}, %b: {t(n)}) -> {t(m, n)} {{\n"
        f"  %d = relay.nn.dense %x, %w : ({t(m, k)}, {t(n, k)}) -> {t(m, n)}\n"
        f"  %e = relay.nn.bias_add %d, %b : ({t(m, n)}, {t(n)}) -> {t(m, n)}\n"
        f"  %y = relay.nn.relu %e : {t(m, n)}\n"
        f"  func.return %y : {t(m, n)}\n}}"
    )


def block(fn: Callable[[], object], calls: int) -> Callable[[], float]:
    def run() -> float:
        for _ in range(calls):
            fn()
        return 0.0

    return run


def medians_us(fns: dict[str, Callable[[], object]], rounds: int, calls: int) -> dict[str, float]:
    clock = time.thread_time if CPU_TIME else time.perf_counter
    times = interleaved_times({name: block(fn, calls) for name, fn in fns.items()}, rounds, clock=clock)
    return {name: statistics.median(ts) / calls * 1e6 for name, ts in times.items()}


def layers(targets: Sequence[str], rounds: int) -> None:
    rng = np.random.default_rng(0)
    for target in targets:
        for k, n in ((784, 512), (512, 512)):
            for m in (1, 4, 8):
                text = dense_text(m, k, n)
                w = rng.standard_normal((n, k)).astype(np.float32)
                b = rng.standard_normal(n).astype(np.float32)
                x = rng.standard_normal((m, k)).astype(np.float32)
                plain = xrelay.parse(text)
                hold_as_is(plain, {"w"})
                exes = {
                    "plain": xrelay.build(plain, targets=(target,), params={"w": w, "b": b}, num_threads=1),
                    "panels": xrelay.build(text, targets=(target,), params={"w": w, "b": b}, num_threads=1),
                }
                got = {name: np.asarray(exe.run(x=x)) for name, exe in exes.items()}
                assert np.allclose(got["plain"], got["panels"], rtol=1e-4, atol=1e-3)
                us = medians_us({name: partial(exe.run, x=x) for name, exe in exes.items()}, rounds, 200)
                print(
                    f"{target:22} {m:2}x{k}.{n}x{k}: plain {us['plain']:7.1f} us  panels {us['panels']:7.1f} us"
                    f"  ratio {us['panels'] / us['plain']:.2f}  (load {load()})",
                    flush=True,
                )


@contextmanager
def without_gemv() -> Iterator[None]:
    kept = crl.SCHEDULES
    crl.SCHEDULES = tuple(s for s in kept if s is not packed_gemv.SCHEDULE)
    try:
        yield
    finally:
        crl.SCHEDULES = kept


def params_bytes(exe: Any) -> int:
    return sum(int(np.asarray(a).nbytes) for a in exe.params.values())


def mlp(targets: Sequence[str], rounds: int) -> None:
    text = mlp_relay(batch=1)
    arrays = random_inputs(text)
    params = {k: v for k, v in arrays.items() if k != "x"}
    rng = np.random.default_rng(1)
    for target in targets:
        with without_gemv():
            before = xrelay.build(text, targets=(target,), params=params, batch_sizes=SIZES, num_threads=1)
        after = xrelay.build(text, targets=(target,), params=params, batch_sizes=SIZES, num_threads=1)
        print(f"{target}: params before {params_bytes(before) / 1e6:.2f} MB, after {params_bytes(after) / 1e6:.2f} MB")
        for size in SIZES:
            x = rng.standard_normal((size, 784)).astype(np.float32)
            a, b = np.asarray(before.run(x)), np.asarray(after.run(x))
            assert np.allclose(a, b, rtol=1e-4, atol=1e-5)
            # the size's own graph (the batched runtime may split a batch by measured times)
            run_b, run_a = before.batched.executors[size].run, after.batched.executors[size].run
            us = medians_us({"before": partial(run_b, {"x": x}), "after": partial(run_a, {"x": x})}, rounds, 100)
            print(
                f"{target:22} MLP batch {size:2}: before {us['before']:7.1f} us  after {us['after']:7.1f} us"
                f"  ratio {us['after'] / us['before']:.2f}  (load {load()})",
                flush=True,
            )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--targets", default="c,c -march=x86-64-v3")
    parser.add_argument("--parts", default="layers,mlp")
    parser.add_argument("--cpu-time", action="store_true")
    args = parser.parse_args(argv)
    global CPU_TIME
    CPU_TIME = args.cpu_time
    targets = args.targets.split(",")
    print(f"load before {Path('/proc/loadavg').read_text().strip()}")
    if "layers" in args.parts:
        layers(targets, args.rounds)
    if "mlp" in args.parts:
        mlp(targets, args.rounds)
    print(f"load after {Path('/proc/loadavg').read_text().strip()}")


if __name__ == "__main__":
    main()
