"""The demo: an MLP with its first layer pinned to OpenCL, compiled by xrelay and run across
the host and an OpenCL device, checked against the reference interpreter and timed against
the same model in eager numpy.

    make demo            # or: .venv/bin/python examples/demo.py
"""

from __future__ import annotations

import os

os.environ.setdefault("POCL_DEVICES", "pthread pthread")
# One BLAS thread: the C kernels run on one thread, and on this 2-core machine a threaded
# OpenBLAS competing with PoCL's threads is many times slower, not faster.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import pathlib
import statistics
import sys
import time
from collections.abc import Callable

import numpy as np
from xdsl.dialects.builtin import ModuleOp

import xrelay
from xrelay.dialects import relay
from xrelay.transforms import get_all_passes

MODEL = pathlib.Path(__file__).with_name("mlp.mlir")
TARGETS = ("c", "opencl")


def random_weights(module: ModuleOp, seed: int = 0) -> dict[str, np.ndarray]:
    """Inputs and weights, scaled like a trained layer (variance ~ 1 / fan-in)."""
    rng = np.random.default_rng(seed)
    main = module.ops.first
    arrays = {}
    for arg in main.args:
        shape = tuple(arg.type.get_shape())
        scale = 1.0 / np.sqrt(shape[-1]) if arg.name_hint.startswith("w") else 1.0
        arrays[arg.name_hint] = (rng.standard_normal(shape) * scale).astype(np.float32)
    return arrays


def fused_groups(text: str) -> dict[str, list[str]]:
    """kernel name -> the relay ops fused into it (plan-devices and fuse-ops, as build runs them)."""
    module = xrelay.parse(text)
    passes = get_all_passes()
    passes["plan-devices"]()(targets=TARGETS).apply(xrelay.context(), module)
    passes["fuse-ops"]()().apply(xrelay.context(), module)
    return {
        op.kernel: [
            inner.name.removeprefix("relay.") for inner in op.body.block.ops if not isinstance(inner, relay.YieldOp)
        ]
        for op in module.walk()
        if isinstance(op, relay.FusedOp) and op.kernel is not None
    }


def save_pictures(module: ModuleOp, exe: xrelay.Executable, *inputs: np.ndarray) -> None:
    """demo.svg, the placement and fusion picture (Graphviz), and demo_trace.json, the timeline
    of 3 profiled runs (open it in https://ui.perfetto.dev), next to this script."""
    try:
        print(f"picture: {xrelay.render(module, MODEL.with_name('demo.svg'), targets=TARGETS)}")
    except xrelay.RenderError as e:
        print(f"no picture: {e}")
    print(f"timeline: {exe.profile(*inputs, runs=3).save_trace(MODEL.with_name('demo_trace.json'))}\n")


def numpy_eager(
    x: np.ndarray, w1: np.ndarray, b1: np.ndarray, w2: np.ndarray, b2: np.ndarray, w3: np.ndarray, b3: np.ndarray
) -> np.ndarray:
    """The MLP op by op in numpy, as a user would write it."""
    h = np.maximum(x @ w1.T + b1, 0)
    h = np.maximum(h @ w2.T + b2, 0)
    z = h @ w3.T + b3
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def median_ms(fn: Callable[[], object], runs: int = 50) -> float:
    fn()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def main() -> None:
    text = MODEL.read_text()
    module = xrelay.parse(text, MODEL.name)
    inputs = random_weights(module)
    print(f"model {MODEL.name}: " + ", ".join(f"%{n} {list(a.shape)}" for n, a in inputs.items()))

    # The weights are bound at build time: they become constants, written to their devices
    # once; each run passes only the batch %x.
    weights = {name: array for name, array in inputs.items() if name != "x"}
    start = time.perf_counter()
    exe = xrelay.build(text, targets=TARGETS, params=weights)
    print(
        f"xrelay.build(targets={TARGETS}, params=<the weights>) in {time.perf_counter() - start:.2f} s "
        f"on {', '.join(d.name for d in exe.devices)} (primary: {exe.devices[0].name})\n"
    )

    groups = fused_groups(text)
    x = inputs["x"]
    exe.run(x=x)  # warm-up: PoCL finishes compiling a kernel at its first launch
    save_pictures(module, exe, x)
    profile = exe.profile(x=x)
    print("placement (kernels and copies in execution order, times of one run after a warm-up):")
    for (name, device), (_, _, seconds) in zip(exe.placement(), profile.nodes):
        ops = " + ".join(groups.get(name, ["device_copy"]))
        print(f"  {device:<18} {name:<38} {seconds * 1e3:7.3f} ms  {ops}")
    print("\ncopies:")
    for (src, dst), (count, nbytes) in profile.copies.items():
        print(f"  {src} -> {dst}: {count} copy, {nbytes} bytes")
    print("pools: " + ", ".join(f"{dev} {nbytes} bytes" for dev, nbytes in profile.pool_bytes.items()))

    out = exe.run(x=x)
    ref = xrelay.interpret(module, inputs)
    diff = float(np.max(np.abs(out - ref)))
    ok = np.allclose(out, ref, rtol=1e-4, atol=1e-5)
    print(f"\ncheck against xrelay.interpret: max |difference| {diff:.2e} -> {'OK' if ok else 'MISMATCH'}")

    eager_ms = median_ms(lambda: numpy_eager(**inputs))
    xrelay_ms = median_ms(lambda: exe.run(x=x))
    print(
        f"latency (median of 50 runs): xrelay {xrelay_ms:.3f} ms, numpy eager (1 BLAS thread) {eager_ms:.3f} ms "
        f"(xrelay/numpy {xrelay_ms / eager_ms:.2f}x)"
    )
    if not ok:
        sys.exit(1)


if __name__ == "__main__":
    main()
