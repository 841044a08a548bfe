"""End-to-end latency of examples/mlp.mlir (the demo's model before the demo imported ONNX)
against numpy eager.

Builds the model as its annotation says (first layer on OpenCL, the rest on the host) and also all
on the host (targets c only: the on_device annotation then has no opencl target, so the
opencl pin is dropped from a copy of the text), each with the weights bound at build time
(`params=`, as the demo does: a run passes only %x) and with the weights passed as inputs on
every run; reports the median of several runs of `Executable.run` (inputs in, outputs out)
next to the same model in numpy with one BLAS thread, plus the per-node profile of one run.

    .venv/bin/python bench/demo_latency.py [runs]
"""

from __future__ import annotations

import os

os.environ.setdefault("POCL_DEVICES", "pthread pthread")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import pathlib
import sys
from collections.abc import Callable

import numpy as np
from timing import median_seconds
from xdsl.dialects.builtin import ModuleOp

import xrelay

MODEL = pathlib.Path(__file__).parents[1] / "examples" / "mlp.mlir"


def random_weights(module: ModuleOp, seed: int = 0) -> dict[str, np.ndarray]:
    """Inputs and weights, scaled like a trained layer (variance ~ 1 / fan-in)."""
    rng = np.random.default_rng(seed)
    arrays = {}
    for arg in module.ops.first.args:
        shape = tuple(arg.type.get_shape())
        scale = 1.0 / np.sqrt(shape[-1]) if arg.name_hint.startswith("w") else 1.0
        arrays[arg.name_hint] = (rng.standard_normal(shape) * scale).astype(np.float32)
    return arrays


def numpy_eager(
    x: np.ndarray, w1: np.ndarray, b1: np.ndarray, w2: np.ndarray, b2: np.ndarray, w3: np.ndarray, b3: np.ndarray
) -> np.ndarray:
    """The MLP op by op in numpy, as a user would write it."""
    h = np.maximum(x @ w1.T + b1, 0)
    h = np.maximum(h @ w2.T + b2, 0)
    z = h @ w3.T + b3
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def median_ms(fn: Callable[[], object], runs: int) -> float:
    return median_seconds(fn, runs) * 1e3


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    text = MODEL.read_text()
    inputs = random_weights(xrelay.parse(text))
    host_only = text.replace("#relay.se_scope<device = opencl>", "#relay.se_scope<device = cpu>")
    eager = median_ms(lambda: numpy_eager(**inputs), runs)
    print(f"{MODEL.name}, median of {runs} runs")
    print(f"  numpy eager (1 BLAS thread)      {eager:8.3f} ms")
    weights = {name: array for name, array in inputs.items() if name != "x"}
    x = {"x": inputs["x"]}
    for label, program, targets, params, run_inputs in (
        ("xrelay, layer 1 on opencl:0", text, ("c", "opencl"), weights, x),
        ("  the same, weights as inputs", text, ("c", "opencl"), None, inputs),
        ("xrelay, all on cpu", host_only, ("c",), weights, x),
        ("  the same, weights as inputs", host_only, ("c",), None, inputs),
    ):
        exe = xrelay.build(program, targets=targets, params=params)
        ms = median_ms(lambda exe=exe, run_inputs=run_inputs: exe.run(run_inputs), runs)
        print(f"  {label:<32} {ms:8.3f} ms  ({ms / eager:.2f}x numpy)")
        profile = exe.profile(run_inputs)
        for name, device, seconds in profile.nodes:
            print(f"      {device:<9} {name:<40} {seconds * 1e3:8.3f} ms")


if __name__ == "__main__":
    main()
