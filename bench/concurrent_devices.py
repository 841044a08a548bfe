"""Devices at the same time (issue 30 item 2): the concurrent executor against the serial one
it replaced, and the branchy model split across cpu and PoCL against each device alone.

1. `sequential`: bench/onnx_zoo.py's four reference models (mlp, cnn, resnet, transformer),
   each built three ways: all on cpu (targets c), its hand split across cpu and OpenCL (the
   zoo's placement rules), and all on OpenCL (default device opencl); each run by this
   executor and by the serial one of `--baseline` (runtime/executor.py at that git revision,
   on a queue without profiling events, as it was; the devices are this tree's), all six in
   one interleaved run (`timing.interleaved_times`): medians, and the ratio of the 10th
   percentiles (steadier on a shared machine). The goal: new / old <= 1.03.
2. `branchy`: bench/branchy.py's two towers. The thread counts of PoCL's pool are fixed when
   its platform starts, so each configuration runs in a process of its own, and this one
   interleaves them: every round asks each process for one timed run, in a shuffled order.
   - all-cpu: targets c, num_threads=2;
   - all-opencl: PoCL with 2 threads (POCL_MAX_PTHREAD_COUNT=2), every op on opencl;
   - split: tower a on cpu with num_threads=1, tower b on PoCL with 1 thread, concurrent;
   - split-serial: the same build run by the serial executor of `--baseline`.
   The goal: split >= 1.3x faster than the best single device (the same 2 threads). The
   split's profile then says how much of a run the two devices overlap (from its trace).

Measured on the 2-core EPYC (AVX-512) shared with other sessions, load 8-10:
- sequential, 40 rounds: the p10 ratio new/old <= 1.031 in 23 of 24 cells (1 and 2 threads),
  0.89-0.96 for the splits (copies are started, not waited); the CNN all on OpenCL at 2
  threads 1.051 (300 rounds of it alone: 0.097 / 0.097 ms). Medians swing up to +-15% both
  ways with the load.
- branchy 64x28x28, join=concat, 60 rounds: all-cpu 1.186 ms, all-opencl 1.581, split 0.971
  (1.22x the best single device; p10 1.32x), split on the serial executor 1.469. join=add:
  the split's median swings (0.64x-0.94x), p10 1.02-1.08x: tower a's last conv waits for b.

    .venv/bin/python bench/concurrent_devices.py [sequential|branchy|both] [--rounds 30]
        [--threads 2] [--models mlp,cnn,resnet,transformer] [--baseline f2d7829] [--gap 0] [--size 28]
        [--join add|concat]
"""

from __future__ import annotations

import os

os.environ.setdefault("POCL_DEVICES", "pthread")

import argparse
import copy
import importlib.util
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

BENCH = Path(__file__).parent
sys.path.insert(0, str(BENCH))
from timing import interleaved_times

BASELINE = "f2d7829"  # main before the concurrent executor


def load_baseline(revision: str) -> Any:
    """runtime/executor.py at `revision` as a module of its own."""
    source = subprocess.run(
        ["git", "show", f"{revision}:runtime/executor.py"], cwd=BENCH.parent, check=True, capture_output=True, text=True
    ).stdout
    path = Path(tempfile.mkdtemp()) / "baseline_executor.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("baseline_executor", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # (its dataclasses look their module up)
    spec.loader.exec_module(module)
    return module


def unprofiled(device: Any) -> Any:
    """`device`, but an OpenCL device gets a queue without profiling events (the baseline's)."""
    if device.host_memory or not hasattr(device, "queue"):
        return device
    clone = copy.copy(device)
    clone.queue = device.cl.CommandQueue(device.context, device.device)
    return clone


def baseline_run(exe: Any, revision: str) -> Callable[[Mapping[str, np.ndarray]], Any]:
    """The `run` of `revision`'s executor on `exe`'s graph, kernels and params."""
    module = load_baseline(revision)
    devices = [unprofiled(d) for d in exe.devices]
    executor = module.GraphExecutor(exe.graph, devices, [k.kernels for k in exe.loaded], exe.params)
    return executor.run


def load() -> str:
    return open("/proc/loadavg").read().split()[0]


# --- 1. sequential models -----------------------------------------------------------------


def sequential(names: list[str], threads: int, rounds: int, revision: str) -> None:
    import onnx_zoo

    import xrelay

    print(f"# sequential models, {threads} threads (C num_threads and POCL_MAX_PTHREAD_COUNT), {rounds} rounds")
    print(f"{'model':<12} {'build':<8} {'old ms':>8} {'new ms':>8} {'new/old':>8} {'p10 ratio':>9}   load")
    for name in names:
        model = onnx_zoo.MODELS[name]
        proto = model.onnx()
        inputs = onnx_zoo.random_inputs(proto)
        builds = {
            "c": (xrelay.from_onnx(proto), ("c",), None),
            "split": (xrelay.from_onnx(proto, placement=dict(model.placement)), ("c", "opencl"), None),
            "opencl": (xrelay.from_onnx(proto), ("c", "opencl"), "opencl"),
        }
        fns: dict[str, Callable[[], object]] = {}
        for build, ((module, params), targets, default) in builds.items():
            exe = xrelay.build(module, targets=targets, default_device=default, params=params, num_threads=threads)
            old = baseline_run(exe, revision)
            np.testing.assert_allclose(exe.executor.run(inputs)[0], old(inputs)[0], rtol=1e-5, atol=1e-6)
            fns[f"{build} old"] = partial(old, inputs)
            fns[f"{build} new"] = partial(exe.executor.run, inputs)
        before = load()
        times = interleaved_times(fns, rounds)
        medians = {k: statistics.median(v) for k, v in times.items()}
        fastest = {k: statistics.quantiles(v, n=10)[0] for k, v in times.items()}  # the 10th percentile
        for build in builds:
            o, n = medians[f"{build} old"], medians[f"{build} new"]
            p10 = fastest[f"{build} new"] / fastest[f"{build} old"]
            print(
                f"{name:<12} {build:<8} {o * 1e3:>8.3f} {n * 1e3:>8.3f} {n / o:>8.3f} {p10:>9.3f}   {before} -> {load()}"
            )


# --- 2. the branchy model ------------------------------------------------------------------

CONFIGS = {  # name -> (threads of C kernels, PoCL's threads, tower devices, default device, serial)
    "all-cpu": (2, 2, (None, None), None, False),
    "all-opencl": (2, 2, (None, None), "opencl", False),
    "split": (1, 1, ("cpu", "opencl"), None, False),
    "split-serial": (1, 1, ("cpu", "opencl"), None, True),
}


def serve(config: str, revision: str, trace: str | None, size: int, join: str) -> None:
    """One configuration in this process: builds, checks against the interpreter, then times
    one run per line read from stdin and prints its seconds."""
    from branchy import branchy_input, branchy_module

    import xrelay

    threads, _, devices, default, serial = CONFIGS[config]
    text, params = branchy_module(devices, size=size, join=join)
    targets = ("c",) if config == "all-cpu" else ("c", "opencl")
    exe = xrelay.build(text, targets=targets, default_device=default, params=params, num_threads=threads)
    x = branchy_input(size=size)
    np.testing.assert_allclose(exe.run(x=x), xrelay.interpret(text, {"x": x, **params}), rtol=1e-4, atol=1e-4)
    run = baseline_run(exe, revision) if serial else exe.executor.run
    for _ in range(3):
        run({"x": x})
    if trace:
        report_overlap(exe, x, Path(trace))
    print("ready", flush=True)
    for _ in sys.stdin:
        start = time.perf_counter()
        run({"x": x})
        print(time.perf_counter() - start, flush=True)


def report_overlap(exe: Any, x: np.ndarray, path: Path) -> None:
    """Per profiled run, how long the cpu and the OpenCL device were busy at the same time
    (the intersection of their kernels' and copies' spans), written with the trace."""
    profile = exe.profile(x=x, runs=20)
    profile.save_trace(path)
    overlaps, walls = [], []
    for spans in profile.spans:
        busy: dict[int, list[tuple[float, float]]] = {}
        for t, span in zip(profile.timings, spans):
            busy.setdefault(t.step.device, []).append(span)
        (_, a), (_, b) = sorted(busy.items())[:2]
        overlaps.append(sum(max(0.0, min(e1, e2) - max(s1, s2)) for s1, e1 in a for s2, e2 in b))
        walls.append(max(e for s in spans for _, e in [s]) - min(s for s, _ in spans))
    overlapped = [o for o in overlaps if o > 0]
    summary = {
        "runs": len(walls),
        "runs_that_overlap": len(overlapped),
        "median_overlap_us_of_those": statistics.median(overlapped) * 1e6 if overlapped else 0.0,
        "median_wall_us": statistics.median(walls) * 1e6,
        "min_wall_us": min(walls) * 1e6,
        "trace": str(path),
    }
    print(json.dumps(summary), file=sys.stderr, flush=True)


def branchy(rounds: int, revision: str, trace: str, gap: float, size: int, join: str) -> None:
    workers: dict[str, subprocess.Popen[str]] = {}
    for config, (_, pocl, _, _, _) in CONFIGS.items():
        env = {**os.environ, "POCL_MAX_PTHREAD_COUNT": str(pocl), "OMP_WAIT_POLICY": "passive"}
        args = [sys.executable, __file__, "serve", config, "--baseline", revision, "--size", str(size), "--join", join]
        if config == "split":
            args += ["--trace", trace]
        workers[config] = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    for config, worker in workers.items():
        assert worker.stdout is not None
        if worker.stdout.readline().strip() != "ready":
            raise SystemExit(f"{config} did not start")
    before = load()
    times: dict[str, list[float]] = {c: [] for c in workers}
    order, shuffle = list(workers), random.Random(0)
    for _ in range(rounds):
        shuffle.shuffle(order)
        for config in order:
            time.sleep(gap)  # (--gap: the previous process's pools go to sleep first, PoCL's, OpenMP's)
            worker = workers[config]
            assert worker.stdin is not None and worker.stdout is not None
            worker.stdin.write("\n")
            worker.stdin.flush()
            times[config].append(float(worker.stdout.readline()))
    for worker in workers.values():
        assert worker.stdin is not None
        worker.stdin.close()
        worker.wait()
    medians = {c: statistics.median(t) for c, t in times.items()}
    fastest = {c: statistics.quantiles(t, n=10)[0] for c, t in times.items()}  # the 10th percentile
    best, best_p10 = (min(d["all-cpu"], d["all-opencl"]) for d in (medians, fastest))
    shape = f"64 x {size} x {size}, join={join}"
    print(f"# branchy model (bench/branchy.py, {shape}), {rounds} rounds, load {before} -> {load()}")
    print(f"{'':<13} {'threads':<18} {'median ms':>9} {'best/this':>9} {'p10 ms':>8} {'best/this':>9}")
    for config, seconds in medians.items():
        threads, pocl, *_ = CONFIGS[config]
        p10 = fastest[config]
        print(
            f"{config:<13} C {threads}, PoCL {pocl}{'':<7} {seconds * 1e3:>9.3f} {best / seconds:>8.2f}x"
            f" {p10 * 1e3:>8.3f} {best_p10 / p10:>8.2f}x"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", nargs="?", default="both", choices=["sequential", "branchy", "both", "serve"])
    parser.add_argument("config", nargs="?", help="(serve) the configuration this process runs")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--models", default="mlp,cnn,resnet,transformer")
    parser.add_argument("--baseline", default=BASELINE, help="the git revision of the serial executor")
    parser.add_argument("--size", type=int, default=28, help="(branchy) the image's height and width")
    parser.add_argument("--join", default="add", choices=["add", "concat"], help="(branchy) how the towers join")
    parser.add_argument("--gap", type=float, default=0.0, help="seconds between two timed runs (branchy)")
    parser.add_argument("--trace", default=str(Path(tempfile.gettempdir()) / "branchy_split_trace.json"))
    args = parser.parse_args()
    if args.what == "serve":
        serve(args.config, args.baseline, args.trace if args.config == "split" else None, args.size, args.join)
        return
    if args.what in ("sequential", "both"):
        os.environ["POCL_MAX_PTHREAD_COUNT"] = str(args.threads)
        sequential(args.models.split(","), args.threads, args.rounds, args.baseline)
    if args.what in ("branchy", "both"):
        branchy(args.rounds, args.baseline, args.trace, args.gap, args.size, args.join)


if __name__ == "__main__":
    main()
