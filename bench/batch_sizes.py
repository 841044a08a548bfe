"""One executable for several batch sizes against one executable per size (issue 31 item 1).

For each model (the MLP of bench/models.py, 784-512-512-10, and the zoo's ResNet-18,
/work/zoo-models/resnet18.onnx, imported at batch 1):
- build: `xrelay.build(m, params=params, batch_sizes=(1, 4, 16, 64))` against four builds
  `xrelay.build(m_b, params=params)`, one per size (the module re-typed at b), each in a fresh
  process with an empty kernel cache and the build cache off, alternating (`--build-rounds`): the build's seconds, the bytes
  of the params the executable(s) hold (`exe.params`: each distinct array once in a batched
  one; a weight that one size's schedule pre-packs and another's reads as it is, e.g. a
  dense's below and above the packed micro-kernel's tile rows, is two arrays), the resident
  memory they hold after it (RSS after minus before, the model and params already loaded),
  and the process's peak RSS;
- run: per-sample time of `exe.run(x[:n])` for n = 1, 4, 16, 64 on the batched executable and
  on the executable of size n, in blocks of 64 / n runs (`run_times`), interleaved in one
  process (`timing.interleaved_times`), medians; both at `--threads` threads. They run the same kernels, so they should be equal
  within noise (the batched run checks the input and picks the graph: a few microseconds).

The machine is shared: the 1-minute load average is printed before and after; compare ratios
measured in one run.

Runs of 2026-11-28 (AMD EPYC with AVX-512, 2 cores shared with four other builds, load 6-16,
so every time swings by tens of percent; 1 thread), batched against separate:
- MLP: params 5.1 vs 10.2 MB (weights 2.6: its two large weights are read as they are at 1
  and 4 and pre-packed at 16 and 64, two layouts), RSS held 8.5 vs 13.6 MB, build 5.7 vs 4.9 s
  (3 alternating processes each: 5.0/5.7/5.7 vs 6.1/4.4/4.9); per-sample run ratio at n = 1, 4,
  16, 64: 1.77, 1.54, 1.04, 1.07 at load 13-16, 0.89, 0.92, 1.01, 0.98 in an earlier run at
  load 5.5-6 (single runs interleaved then).
- ResNet-18: params 46.6 vs 178.4 MB (weights 44.6; the fc weight in two layouts), RSS held
  77 vs 205 MB, peak 222 vs 310 MB, build 71.4 vs 78.5 s in the quieter round (252 vs 239 s
  in the other, under another build); per-sample run ratio 1.24, 1.09, 0.94, 1.12 at load 8-10.
Each size runs the same kernels in both (their content digests, in graph order, are equal for
every size of both models), so the run ratios are the machine's noise plus the batched
wrapper's own work: 3 us a run at an exact size, 12 us with padding (n = 3), 6 us at 64
(timeit of its checks, pieces and padding alone).

    .venv/bin/python bench/batch_sizes.py [--models mlp,resnet18] [--rounds 7] [--build-rounds 2] [--threads 1]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from timing import interleaved_times, round_orders

SIZES = (1, 4, 16, 64)
ZOO = Path("/work/zoo-models")


def model(name: str) -> tuple[Any, dict[str, np.ndarray]]:
    """The module (batch 1) and params of `name`."""
    import xrelay

    if name == "mlp":
        from models import mlp_relay, random_inputs

        text = mlp_relay(batch=1)
        arrays = random_inputs(text)
        return xrelay.parse(text), {k: v for k, v in arrays.items() if k != "x"}
    return xrelay.from_onnx(ZOO / f"{name}.onnx")


def at_batch(module: Any, params: dict[str, np.ndarray], size: int) -> Any:
    """`module` re-typed at batch `size`, as a module of one size for a separate build."""
    from xrelay.batching import rebatch

    sized = module.clone()
    rebatch(sized, size, params.keys())
    return sized


def build(module: Any, params: dict[str, np.ndarray], variant: str, threads: int) -> dict[int, Any]:
    """The executable per batch size: one for all (`batched`) or one each (`separate`)."""
    import xrelay

    if variant == "batched":
        exe = xrelay.build(module, params=params, batch_sizes=SIZES, num_threads=threads)
        return dict.fromkeys(SIZES, exe)
    return {s: xrelay.build(at_batch(module, params, s), params=params, num_threads=threads) for s in SIZES}


def resident_bytes() -> int:
    return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def child(name: str, variant: str, threads: int) -> None:
    """Builds in this (fresh) process and prints seconds, held and peak memory as JSON."""
    import resource
    import time

    import xrelay  # noqa: F401 (the compiler imported before the clock starts)

    module, params = model(name)
    before = resident_bytes()
    start = time.perf_counter()
    exes = build(module, params, variant, threads)
    seconds = time.perf_counter() - start
    held = resident_bytes() - before
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    weights = sum(a.nbytes for a in params.values())
    distinct = {id(e): e for e in exes.values()}.values()
    kernels = sum(len(e.kernels) for e in distinct)
    stored = sum(a.nbytes for e in distinct for a in e.params.values())
    result = {"seconds": seconds, "held": held, "peak": peak, "weights": weights, "stored": stored, "kernels": kernels}
    print(json.dumps(result))


def measure_build(name: str, variant: str, threads: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "XDG_CACHE_HOME": cache, "XRELAY_BUILD_CACHE": "0"}
        args = [sys.executable, __file__, "--child", name, variant, "--threads", str(threads)]
        done = subprocess.run(args, capture_output=True, text=True, env=env, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def run_times(name: str, threads: int, rounds: int) -> dict[int, tuple[float, float]]:
    """Per-sample median seconds at each n: (batched, separate). Each timed call is a block of
    max(SIZES) / n runs of one executable, so that each runs with its own weights in the
    caches, as a server does: interleaved single runs favoured the batched executable, whose
    sizes share their weights (MLP n=1: 0.51-0.89x the time)."""
    module, params = model(name)
    batched, separate = build(module, params, "batched", threads), build(module, params, "separate", threads)
    shape = tuple(next(a for a in module.ops.first.args if a.name_hint not in params).type.get_shape())
    x = np.random.default_rng(0).standard_normal((max(SIZES), *shape[1:])).astype(np.float32)
    for n in SIZES:  # the same results
        np.testing.assert_allclose(batched[n].run(x[:n]), separate[n].run(x[:n]), rtol=1e-5, atol=1e-5)

    def block(exe: Any, n: int) -> None:
        for _ in range(max(SIZES) // n):
            exe.run(x[:n])

    fns = {
        f"{v} {n}": (lambda e=exes[n], n=n: block(e, n))
        for v, exes in (("batched", batched), ("separate", separate))
        for n in SIZES
    }
    times = interleaved_times(fns, rounds)
    per_sample = {key: statistics.median(samples) / max(SIZES) for key, samples in times.items()}
    return {n: (per_sample[f"batched {n}"], per_sample[f"separate {n}"]) for n in SIZES}


def load() -> str:
    return Path("/proc/loadavg").read_text().split()[0]


def report(name: str, threads: int, rounds: int, build_rounds: int) -> None:
    print(f"\n{name}, {threads} thread(s), load {load()}")
    samples: dict[str, list[dict[str, Any]]] = {"batched": [], "separate": []}
    for order in round_orders(list(samples), build_rounds):
        for variant in order:
            samples[variant].append(measure_build(name, variant, threads))
    builds = {v: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for v, rs in samples.items()}
    print(f"  build: medians of {build_rounds} fresh processes each, interleaved")
    mb = 1 / 2**20
    print(f"  weights {builds['batched']['weights'] * mb:.1f} MB")
    print("  build      seconds  params MB  held MB  peak MB  kernels")
    for v, b in builds.items():
        row = f"{b['seconds']:8.2f} {b['stored'] * mb:10.1f} {b['held'] * mb:8.1f} {b['peak'] * mb:8.1f} {b['kernels']:8.0f}"
        each = ", ".join(f"{r['seconds']:.1f}" for r in samples[v])
        print(f"  {v:9s} {row}   (seconds: {each})")
    print("  run: per-sample ms (median of the interleaved rounds)")
    print("     n   batched  separate  ratio")
    for n, (b, s) in run_times(name, threads, rounds).items():
        print(f"  {n:4d} {b * 1e3:9.3f} {s * 1e3:9.3f}  {b / s:5.2f}")
    print(f"  load after {load()}")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1] if __doc__ else None)
    parser.add_argument("--models", default="mlp,resnet18")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--build-rounds", type=int, default=2)
    parser.add_argument("--child", nargs=2, metavar=("MODEL", "VARIANT"))
    args = parser.parse_args(argv)
    os.environ["XRELAY_NUM_THREADS"] = str(args.threads)
    if args.child:
        child(args.child[0], args.child[1], args.threads)
        return
    print(f"batch sizes {SIZES}; machine {os.uname().machine}, {os.cpu_count()} cores")
    for name in args.models.split(","):
        report(name, args.threads, args.rounds, args.build_rounds)


if __name__ == "__main__":
    main()
