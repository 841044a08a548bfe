"""The graph executor's overhead per node, in microseconds.

A chain of N tiny kernels (softmax on 4 floats: opaque, so fuse-ops keeps one kernel per op)
is built with xrelay.build and run with `Executable.run`; the same kernels are also called
raw: (1) the bound calls alone (ctypes with cached buffer addresses / a preset OpenCL kernel),
(2) `CKernel.__call__` on numpy arrays, what a runtime without binding would pay.
Overhead per node = (executor run - raw bound calls) / N. Median of several runs.

    .venv/bin/python bench/executor_overhead.py [N]
"""

from __future__ import annotations

import os

os.environ.setdefault("POCL_DEVICES", "pthread pthread")

import statistics
import sys
import time
from collections.abc import Callable

import numpy as np

import xrelay


def chain(n: int, device: str) -> str:
    ty = "tensor<4xf32>"
    lines = [f"func.func @main(%v0: {ty}) -> {ty} {{"]
    for i in range(n):
        lines.append(f"  %v{i + 1} = relay.nn.softmax %v{i} : ({ty}) -> {ty}")
    lines.append(
        f"  %r = relay.on_device %v{n} {{se_scope = #relay.se_scope<device = {device}>, constrain_result = true}} : {ty}"
    )
    lines.append(f"  func.return %r : {ty}\n}}")
    return "\n".join(lines)


def median_us(fn: Callable[[], object], runs: int = 15, inner: int = 10) -> float:
    fn()
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        for _ in range(inner):
            fn()
        samples.append((time.perf_counter() - start) / inner)
    return statistics.median(samples) * 1e6


def bench(n: int, device: str, targets: tuple[str, ...]) -> None:
    exe = xrelay.build(chain(n, device), targets=targets, default_device=device)
    x = np.random.default_rng(0).standard_normal(4).astype(np.float32)
    ex = exe.executor
    with ex.workspace() as workspace:  # held by the bench; exe.run takes another
        pass
    steps = workspace.steps
    sync = exe.devices[0].sync

    def raw() -> None:
        for step in steps:
            step()
        sync()

    def executor_only() -> None:
        workspace.run()
        sync()

    run_us = median_us(lambda: exe.run(v0=x))
    exec_us = median_us(executor_only)
    raw_us = median_us(raw)
    print(
        f"{device:>7}, {n} nodes: run() {run_us:8.1f} us | executor loop {exec_us:8.1f} us | "
        f"raw bound calls {raw_us:8.1f} us ({raw_us / n:.2f} us/kernel) | "
        f"overhead {(exec_us - raw_us) / n:+.3f} us/node; inputs and outputs {run_us - exec_us:.1f} us per run"
    )
    if device == "cpu":
        kernels = exe.loaded[0].kernels
        tensors = workspace.tensors
        calls = [
            (kernels[ex.nodes[i]["attrs"]["func_name"]], tensors[ex.nodes[i]["inputs"][0][0]], tensors[i])
            for _, i in ex.steps
        ]

        def unbound() -> None:
            for kernel, a, out in calls:
                kernel(a, out)

        unbound_us = median_us(unbound)
        print(f"{'':>7}  CKernel.__call__ on numpy arrays (no binding): {unbound_us / n:.2f} us/kernel")


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    bench(n, "cpu", ("c",))
    bench(n, "opencl", ("opencl", "c"))


if __name__ == "__main__":
    main()
