"""GFLOP/s of the matmul-class kernels on OpenCL (PoCL) against the C kernel of the same group.

The shapes of issue 12: dense 64x784 . 512x784 and 64x512 . 512x512, batch_matmul 4x128x64
by 4x128x64, conv2d 3x3 64 -> 64 at 56x56 and 16 -> 32 at 28x28 (batch 8, the CNN's), pad 1;
and the CNN's max_pool2d 2x2 stride 2 (its "GFLOP/s" count the three compares per output).
Each kernel is lowered as `xrelay.build` lowers it (bench/kernels.py's `kernel_for`), checked
against numpy, and timed in one interleaved run per case (`timing.interleaved_medians`): the
C kernel on one thread, and the OpenCL kernel on a PoCL device, each launch waited for. The
last columns are the OpenCL kernel's device time (its profiling event, start to end: without
the launch and the wait, 10-45 us on a loaded machine, which dominate a small kernel) and its
ratio to the C kernel's time. PoCL's pthread device uses every core unless
POCL_MAX_PTHREAD_COUNT says otherwise; on a shared machine a launch waits for its slowest
thread, so `POCL_MAX_PTHREAD_COUNT=1` gives steadier ratios against the one-thread C kernel.

    POCL_DEVICES="pthread pthread" .venv/bin/python bench/opencl_kernels.py [--rounds N] [--only NAME]
"""

from __future__ import annotations

import os

os.environ.setdefault("POCL_DEVICES", "pthread pthread")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
from collections.abc import Callable

import numpy as np
from kernels import Case, batch_matmul, conv2d, dense, kernel_for, t
from timing import interleaved_medians

from xrelay.runtime.c_library import build_c
from xrelay.runtime.opencl import build_opencl, default_opencl_context, import_pyopencl


def max_pool2d(n: int, c: int, hw: int) -> Case:
    """A 2x2 max pool of stride 2 (the CNN's)."""
    data, result = (n, c, hw, hw), (n, c, hw // 2, hw // 2)
    return Case(f"max_pool2d {n}x{c}x{hw}x{hw}, 2x2 stride 2", (data,), result,
                f"relay.nn.max_pool2d %a {{pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>}} : "
                f"({t(data)}) -> {t(result)}",
                3 * n * c * (hw // 2) ** 2,
                lambda x: x.reshape(n, c, hw // 2, 2, hw // 2, 2).max(axis=(3, 5)))  # fmt: skip


def opencl_cases() -> list[Case]:
    return [
        dense(64, 784, 512),
        dense(64, 512, 512),
        batch_matmul(4, 128, 64, 128),
        conv2d(1, 64, 56, 64, 3, 1),
        conv2d(8, 16, 28, 32, 3, 1),
        max_pool2d(8, 16, 28),
    ]


def c_call(case: Case, arrays: list[np.ndarray]) -> tuple[Callable[[], object], Callable[[], np.ndarray]]:
    source = kernel_for(case, "c")
    kernel = build_c([source], num_threads=1)[source.name]
    out = np.zeros(case.output, np.float32)
    addresses = [a.ctypes.data for a in (*arrays, out)]
    return (lambda: kernel.function(*addresses)), (lambda: out)


def opencl_call(
    case: Case, arrays: list[np.ndarray], context, device_seconds: list[float]
) -> tuple[Callable[[], object], Callable[[], np.ndarray]]:
    """A launch of the case's OpenCL kernel, waited for, which appends its device time to
    `device_seconds`; and a function fetching its output."""
    cl = import_pyopencl()
    source = kernel_for(case, "opencl")
    kernel = build_opencl(context, [source])[source.name]
    queue = cl.CommandQueue(context, properties=cl.command_queue_properties.PROFILING_ENABLE)
    mf = cl.mem_flags
    buffers = [cl.Buffer(context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a) for a in arrays]
    out = np.zeros(case.output, np.float32)
    buffers.append(cl.Buffer(context, mf.READ_WRITE, out.nbytes))

    def fetch() -> np.ndarray:
        cl.enqueue_copy(queue, out, buffers[-1])
        return out

    def launch() -> None:
        event = kernel(queue, *buffers)
        event.wait()
        device_seconds.append((event.profile.end - event.profile.start) * 1e-9)

    return launch, fetch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--only", default="", help="run the cases whose name contains this")
    args = parser.parse_args()
    context = default_opencl_context()
    threads = os.environ.get("POCL_MAX_PTHREAD_COUNT", "all cores")
    print(f"GFLOP/s, medians of {args.rounds} interleaved rounds (C: 1 thread; OpenCL: "
          f"{context.devices[0].name}, {threads} threads)")  # fmt: skip
    print(f"  {'case':<40} {'c':>8} {'opencl':>8} {'opencl time / c':>16} {'device ms':>10} {'device / c':>11}")
    for case in opencl_cases():
        if args.only not in case.name:
            continue
        rng = np.random.default_rng(0)
        arrays = [rng.standard_normal(s).astype(np.float32) for s in case.inputs]
        expected = case.reference(*arrays)
        c_run, c_out = c_call(case, arrays)
        device_seconds: list[float] = []
        cl_run, cl_out = opencl_call(case, arrays, context, device_seconds)
        times = interleaved_medians({"c": c_run, "opencl": cl_run}, args.rounds)
        device = float(np.median(device_seconds))
        for out in (c_out(), cl_out()):
            np.testing.assert_allclose(out, expected, rtol=1e-3, atol=1e-3)
        rates = [case.flops / times[k] / 1e9 for k in ("c", "opencl")]
        ratio = times["opencl"] / times["c"]
        print(f"  {case.name:<40} {rates[0]:8.1f} {rates[1]:8.1f} {ratio:15.2f}x {device * 1e3:10.3f} "
              f"{device / times['c']:10.2f}x")  # fmt: skip


if __name__ == "__main__":
    main()
