"""Which loop dimension should be OpenCL's dimension 0? Time of one elementwise kernel on PoCL.

A 1024x4096 add-with-broadcast + relu, lowered by convert-relay-to-loops and emitted by
`-t opencl` (the innermost loop dimension is get_global_id(0)); the same kernel with the
outermost loop dimension as get_global_id(0), as a naive mapping would give, for comparison.
Median of several launches, each waited for.

    .venv/bin/python bench/opencl_ndrange.py [--runs N]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from xdsl.passes import PassPipeline

import xrelay
from xrelay.driver import all_passes
from xrelay.runtime.kernels import KernelSource
from xrelay.runtime.opencl import build_opencl, default_opencl_context, import_pyopencl
from xrelay.targets.kernels import kernel_sources

ROWS, COLS = 1024, 4096

MODEL = f"""func.func @main(%x: tensor<{ROWS}x{COLS}xf32>, %b: tensor<{COLS}xf32>) -> tensor<{ROWS}x{COLS}xf32> {{
  %0 = relay.add %x, %b : (tensor<{ROWS}x{COLS}xf32>, tensor<{COLS}xf32>) -> tensor<{ROWS}x{COLS}xf32>
  %1 = relay.nn.relu %0 : tensor<{ROWS}x{COLS}xf32>
  func.return %1 : tensor<{ROWS}x{COLS}xf32>
}}"""


def emitted_kernel() -> KernelSource:
    module = xrelay.parse(MODEL)
    spec = "plan-devices{targets=opencl},fuse-ops,convert-relay-to-loops,dce,licm,cse,split-reductions"
    PassPipeline.parse_spec(all_passes(), spec).apply(xrelay.context(), module)
    (source,) = kernel_sources(module)
    return source


def outermost_first(source: KernelSource) -> KernelSource:
    """The same kernel with get_global_id(0) and (1) swapped, and the NDRange to match."""
    text = source.source.replace("get_global_id(0)", "@").replace("get_global_id(1)", "get_global_id(0)")
    text = text.replace("@", "get_global_id(1)")
    return KernelSource(source.name + "_outer", source.language, text.replace(source.name, source.name + "_outer"),
                        tuple(reversed(source.global_size)), source.num_inputs, source.device)  # fmt: skip


def median_launch(queue, kernel, buffers, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        kernel(queue, *buffers).wait()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    cl = import_pyopencl()
    context = default_opencl_context()
    queue = cl.CommandQueue(context)
    inner = emitted_kernel()
    outer = outermost_first(inner)
    program = build_opencl(context, [inner, outer])
    mf = cl.mem_flags
    x = np.random.default_rng(0).standard_normal((ROWS, COLS)).astype(np.float32)
    b = np.random.default_rng(1).standard_normal(COLS).astype(np.float32)
    buffers = [cl.Buffer(context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a) for a in (x, b)]
    buffers.append(cl.Buffer(context, mf.READ_WRITE, x.nbytes))
    print(f"{ROWS}x{COLS} add+relu on {context.devices[0].name}")
    for label, source in (("innermost dim = id 0 (emitted)", inner), ("outermost dim = id 0", outer)):
        seconds = median_launch(queue, program[source.name], buffers, args.runs)
        print(f"  {label:32s} global_size={source.global_size}  {seconds * 1e3:8.2f} ms")


if __name__ == "__main__":
    main()
