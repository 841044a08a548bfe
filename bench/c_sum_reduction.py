"""Does the C emitter's `omp simd reduction` pragma pay? A dense+bias_add+relu kernel.

The kernel of a 64x784 · 512x784 dense layer (the lowering's i-j-k order: each output is a
sum over k in an innermost scf.for) is built twice: as emitted, and with the pragma lines
turned into comments. Prints GFLOP/s, median of several calls.

    .venv/bin/python bench/c_sum_reduction.py [--runs N]
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import time

import numpy as np
from xdsl.passes import PassPipeline

import xrelay
from xrelay.driver import all_passes
from xrelay.runtime.c_library import build_c
from xrelay.runtime.kernels import KernelSource
from xrelay.targets.kernels import kernel_sources

M, K, N = 64, 784, 512
MODEL = f"""func.func @main(%x: tensor<{M}x{K}xf32>, %w: tensor<{N}x{K}xf32>, %b: tensor<{N}xf32>) -> tensor<{M}x{N}xf32> {{
  %0 = relay.nn.dense %x, %w : (tensor<{M}x{K}xf32>, tensor<{N}x{K}xf32>) -> tensor<{M}x{N}xf32>
  %1 = relay.nn.bias_add %0, %b : (tensor<{M}x{N}xf32>, tensor<{N}xf32>) -> tensor<{M}x{N}xf32>
  %2 = relay.nn.relu %1 : tensor<{M}x{N}xf32>
  func.return %2 : tensor<{M}x{N}xf32>
}}"""


def emitted() -> KernelSource:
    module = xrelay.parse(MODEL)
    PassPipeline.parse_spec(all_passes(), "plan-devices,fuse-ops,convert-relay-to-loops,dce,licm,cse").apply(
        xrelay.context(), module
    )
    (source,) = kernel_sources(module)
    return source


def gflops(source: KernelSource, runs: int) -> float:
    kernel = build_c([source])[source.name]
    rng = np.random.default_rng(0)
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((M, K), (N, K), (N,)))
    out = np.zeros((M, N), np.float32)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        kernel(x, w, b, out)
        times.append(time.perf_counter() - start)
    np.testing.assert_allclose(out, np.maximum(x @ w.T + b, 0), rtol=1e-3, atol=1e-3)
    return 2 * M * N * K / statistics.median(times) / 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    source = emitted()
    plain = dataclasses.replace(source, source=source.source.replace("#pragma omp simd", "// "))
    print(f"dense {M}x{K} . {N}x{K} + bias + relu, C kernel")
    print(f"  with the simd reduction pragma   {gflops(source, args.runs):6.1f} GFLOP/s")
    print(f"  without                          {gflops(plain, args.runs):6.1f} GFLOP/s")


if __name__ == "__main__":
    main()
