"""Per kernel of a reference model: its time on one thread against its time shared by N threads,
beside its estimated work, the numbers behind the C target's thread rule (targets/c.py:
`parallel_threshold`, the target's `Features.min_parallel_work()`; `parallel_work`).

The model (bench/models.py's relay text, its weights bound) is built three times in one
process at --threads N: with every top-level nest the C target can share across threads
shared (a threshold of 0), with none shared (a 1-thread kernel), and as the C target
chooses. The three are profiled in one interleaved run (`exe.profile` once each per round,
in a shuffled order, --rounds rounds), and each node's median is reported: its time on one thread, shared,
their ratio, and the chosen build's. The kernel's estimated work is `parallel_work` of its
top-level nest ("-" where threads cannot share it: one iteration, or a reduction across
them). A kernel gains from threads where its ratio is well under 1; the rule should share it
exactly there.

Like bench/models.py, idle OpenMP threads sleep between kernels (OMP_WAIT_POLICY=passive,
unless --spin), so a shared kernel pays for waking them. The load average before and after
is printed: on a shared machine a busy second core makes every shared kernel slower.

    .venv/bin/python bench/thread_gain.py transformer [--threads 2] [--rounds 21] [--spin]
"""

from __future__ import annotations

import argparse
import os
import statistics
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
from models import MODELS, random_inputs
from timing import round_orders
from xdsl.dialects import func, scf

import xrelay
from xrelay import driver
from xrelay.runtime.machine import target_features
from xrelay.targets import c
from xrelay.targets.c_style import lowered_kernels

# A work estimate above any kernel's: no nest is shared.
NEVER = 1 << 62


@contextmanager
def parallel_work_at(threshold: int) -> Iterator[None]:
    """The C target's thread threshold set to `threshold` for the builds inside."""
    saved = c.parallel_threshold

    def fixed(kernel: func.FuncOp) -> int:
        return threshold

    c.parallel_threshold = fixed
    try:
        yield
    finally:
        c.parallel_threshold = saved


def kernel_work(text: str, params: dict[str, np.ndarray]) -> dict[str, int | None]:
    """Each C kernel's `parallel_work` (None: not shareable), by kernel name, lowered as
    `xrelay.build` lowers it."""
    module = xrelay.parse(text)
    driver.bind_params(module, params)
    driver.lower(module, ("c",), None, "c")
    work: dict[str, int | None] = {}
    for kernel in lowered_kernels(module, "c"):
        nests = [op for op in kernel.body.block.ops if isinstance(op, scf.ParallelOp)]
        work[kernel.sym_name.data] = c.parallel_work(nests[0]) if nests else None
    return work


def node_medians(exes: dict[str, Any], x: np.ndarray, rounds: int) -> dict[str, dict[str, float]]:
    """Per build, each node's median time (seconds) and the run's ("total"), in one
    interleaved run."""
    samples: dict[str, dict[str, list[float]]] = {name: {} for name in exes}
    names = list(exes)
    for name in names:
        exes[name].profile(x)  # warm up
    for order in round_orders(names, rounds):
        for name in order:
            profile = exes[name].profile(x)
            for node, _, seconds in profile.nodes:
                samples[name].setdefault(node, []).append(seconds)
            samples[name].setdefault("total", []).append(profile.total_seconds)
    return {name: {node: statistics.median(s) for node, s in nodes.items()} for name, nodes in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("model", choices=list(MODELS))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--spin", action="store_true", help="let idle OpenMP threads spin (libgomp's default)")
    args = parser.parse_args()
    # read by libgomp once, when it loads with the first C library built below
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    if not args.spin:
        os.environ["OMP_WAIT_POLICY"] = "passive"
    model = MODELS[args.model]
    text = model.text()
    params = random_inputs(text)
    x = params.pop("x")
    load = [os.getloadavg()[0]]
    exes: dict[str, Any] = {}
    chosen = target_features("c").min_parallel_work() or NEVER
    for name, threshold in (("one", NEVER), ("shared", 0), ("chosen", chosen)):
        with parallel_work_at(threshold):
            exes[name] = xrelay.build(text, params=params, num_threads=args.threads)
    expected = exes["one"].run(x)
    for name, exe in exes.items():
        np.testing.assert_allclose(exe.run(x), expected, rtol=1e-5, atol=1e-6, err_msg=name)
    work = kernel_work(text, params)
    times = node_medians(exes, x, args.rounds)
    load.append(os.getloadavg()[0])
    print(f"{model.label}: {args.threads} threads, medians of {args.rounds} interleaved profiled runs, "
          f"threshold {chosen / 1e6:g}M, OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', 'unset')}")  # fmt: skip
    print(f"| kernel | work (M) | chosen | 1 thread us | {args.threads} threads us | ratio | chosen us |")
    print("| --- | ---: | :---: | ---: | ---: | ---: | ---: |")
    for node in times["one"]:
        one, shared, chosen = (times[name][node] * 1e6 for name in ("one", "shared", "chosen"))
        estimate = work.get(node)
        shares = estimate is not None and estimate >= chosen
        cells = [node[:60], "-" if estimate is None else f"{estimate / 1e6:.2f}", "threads" if shares else "",
                 f"{one:.1f}", f"{shared:.1f}", f"{shared / one:.2f}", f"{chosen:.1f}"]  # fmt: skip
        print("| " + " | ".join(cells) + " |")
    print(f"load average {load[0]:.1f} to {load[1]:.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
