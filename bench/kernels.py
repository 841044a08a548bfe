"""GFLOP/s of the anchor kernels xrelay generates, C and OpenCL (PoCL), against numpy.

Each case is one relay op lowered as `xrelay.build` lowers it (plan-devices, fuse-ops,
convert-relay-to-loops, dce, licm, cse, split-reductions) for one target, built as
the runtime builds it, checked against numpy, and timed as the median of several calls (an
OpenCL call is one launch, waited for; buffers stay on the device). numpy runs in the same
process with one BLAS thread (OPENBLAS_NUM_THREADS=1, the environment's OPENBLAS_CORETYPE
left as it is): `np.dot` for dense and batch_matmul, an im2col (sliding_window_view +
tensordot) for conv2d.

    POCL_DEVICES="pthread pthread" .venv/bin/python bench/kernels.py [--runs N] [--only NAME]

`--conv` prints instead the C conv2d schedules at 1 thread against OpenBLAS sgemm of the
conv's im2col matrix (the matrix built beforehand: sgemm alone), interleaved in one run:
packed_conv, conv_rows (packed_conv left out of the schedule list), sgemm. For numpy at its
best, run it with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset:

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 \\
        .venv/bin/python bench/kernels.py --conv
"""

from __future__ import annotations

import os

os.environ.setdefault("POCL_DEVICES", "pthread pthread")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from timing import interleaved_medians, median_seconds
from xdsl.passes import PassPipeline

import xrelay
from xrelay.driver import all_passes
from xrelay.runtime.c_library import build_c
from xrelay.runtime.kernels import KernelSource
from xrelay.runtime.opencl import build_opencl, default_opencl_context, import_pyopencl
from xrelay.targets.kernels import kernel_sources
from xrelay.transforms import convert_relay_to_loops


def t(shape: tuple[int, ...]) -> str:
    return f"tensor<{'x'.join(map(str, shape))}xf32>"


@dataclass(frozen=True)
class Case:
    name: str
    inputs: tuple[tuple[int, ...], ...]
    output: tuple[int, ...]
    op: str  # the relay op line, over %a and %b
    flops: int
    reference: Callable[..., np.ndarray]

    def module_text(self) -> str:
        params = ", ".join(f"%{n}: {t(s)}" for n, s in zip("ab", self.inputs))
        return (f"func.func @main({params}) -> {t(self.output)} {{\n  %0 = {self.op}\n"
                f"  func.return %0 : {t(self.output)}\n}}")  # fmt: skip


def dense(m: int, k: int, n: int) -> Case:
    return Case(f"dense {m}x{k} . {n}x{k}", ((m, k), (n, k)), (m, n),
                f"relay.nn.dense %a, %b : ({t((m, k))}, {t((n, k))}) -> {t((m, n))}",
                2 * m * n * k, lambda a, b: np.dot(a, b.T))  # fmt: skip


def batch_matmul(batch: int, m: int, k: int, n: int) -> Case:
    shapes = ((batch, m, k), (batch, n, k))
    return Case(f"batch_matmul {batch}x{m}x{k} . {batch}x{n}x{k}", shapes, (batch, m, n),
                f"relay.nn.batch_matmul %a, %b : ({t(shapes[0])}, {t(shapes[1])}) -> {t((batch, m, n))}",
                2 * batch * m * n * k, lambda a, b: np.matmul(a, b.transpose(0, 2, 1)))  # fmt: skip


def conv2d(n: int, c: int, hw: int, filters: int, k: int, pad: int) -> Case:
    out = hw + 2 * pad - k + 1
    data, weight, result = (n, c, hw, hw), (filters, c, k, k), (n, filters, out, out)

    def reference(x: np.ndarray, w: np.ndarray) -> np.ndarray:
        padded = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
        cols = sliding_window_view(padded, (k, k), axis=(2, 3))  # n, c, oh, ow, kh, kw
        return np.tensordot(cols, w, axes=((1, 4, 5), (1, 2, 3))).transpose(0, 3, 1, 2)

    return Case(f"conv2d {n}x{c}x{hw}x{hw}, {filters}x{c}x{k}x{k}, pad {pad}", (data, weight), result,
                f"relay.nn.conv2d %a, %b {{padding = array<i64: {pad}, {pad}, {pad}, {pad}>}} : "
                f"({t(data)}, {t(weight)}) -> {t(result)}",
                2 * n * filters * out * out * c * k * k, reference)  # fmt: skip


CASES = [
    dense(32, 784, 256),
    dense(64, 512, 512),
    batch_matmul(8, 64, 64, 64),
    conv2d(1, 32, 28, 32, 3, 1),
    conv2d(1, 64, 14, 64, 3, 1),
    conv2d(1, 64, 56, 64, 3, 1),  # a ResNet basic block's conv (performance.md)
]


def kernel_for(case: Case, target: str) -> KernelSource:
    module = xrelay.parse(case.module_text())
    lowering = "convert-relay-to-loops,dce,licm,cse,split-reductions"
    spec = f"plan-devices{{targets={target}}},fuse-ops,{lowering}"
    PassPipeline.parse_spec(all_passes(), spec).apply(xrelay.context(), module)
    (source,) = kernel_sources(module)
    return source


def run_c(case: Case, arrays: list[np.ndarray], runs: int) -> tuple[float, np.ndarray]:
    source = kernel_for(case, "c")
    kernel = build_c([source])[source.name]
    out = np.zeros(case.output, np.float32)
    addresses = [a.ctypes.data for a in (*arrays, out)]
    return median_seconds(lambda: kernel.function(*addresses), runs), out


def run_opencl(case: Case, arrays: list[np.ndarray], runs: int, context) -> tuple[float, np.ndarray]:
    cl = import_pyopencl()
    source = kernel_for(case, "opencl")
    kernel = build_opencl(context, [source])[source.name]
    queue = cl.CommandQueue(context)
    mf = cl.mem_flags
    buffers = [cl.Buffer(context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a) for a in arrays]
    out = np.zeros(case.output, np.float32)
    buffers.append(cl.Buffer(context, mf.READ_WRITE, out.nbytes))
    seconds = median_seconds(lambda: kernel(queue, *buffers).wait(), runs)
    cl.enqueue_copy(queue, out, buffers[-1])
    return seconds, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--only", default="", help="run the cases whose name contains this")
    parser.add_argument("--conv", action="store_true", help="the conv2d schedules against sgemm instead")
    args = parser.parse_args()
    if args.conv:
        conv_schedules(args.runs)
        return
    context = default_opencl_context()
    print(f"GFLOP/s, median of {args.runs} calls (OpenCL: {context.devices[0].name})")
    print(f"  {'case':<40} {'numpy':>8} {'c':>8} {'opencl':>8}")
    for case in CASES:
        if args.only not in case.name:
            continue
        rng = np.random.default_rng(0)
        arrays = [rng.standard_normal(s).astype(np.float32) for s in case.inputs]
        expected = case.reference(*arrays)
        numpy_s = median_seconds(lambda case=case, arrays=arrays: case.reference(*arrays), args.runs)
        c_s, c_out = run_c(case, arrays, args.runs)
        cl_s, cl_out = run_opencl(case, arrays, args.runs, context)
        for out in (c_out, cl_out):
            np.testing.assert_allclose(out, expected, rtol=1e-3, atol=1e-3)
        rates = [case.flops / s / 1e9 for s in (numpy_s, c_s, cl_s)]
        print(f"  {case.name:<40} " + " ".join(f"{r:8.1f}" for r in rates))


# --- conv2d schedules against sgemm (--conv) ------------------------------------------------

CONV_CASES = [
    conv2d(1, 64, 56, 64, 3, 1),  # the ResNet basic block's convs (bench/models.py)
    conv2d(1, 16, 28, 32, 3, 1),
    conv2d(8, 16, 14, 32, 3, 1),  # the CNN's second conv (bench/models.py, batch 8)
]


def c_kernel_without(case: Case, left_out: str) -> Callable[..., object]:
    """The case's C kernel built at 1 thread, with the schedule `left_out` not on the list."""
    kept = tuple(s for s in convert_relay_to_loops.SCHEDULES if s.name != left_out)
    saved, convert_relay_to_loops.SCHEDULES = convert_relay_to_loops.SCHEDULES, kept
    try:
        source = kernel_for(case, "c")
    finally:
        convert_relay_to_loops.SCHEDULES = saved
    return build_c([source], num_threads=1)[source.name].function


def im2col_sgemm(case: Case, x: np.ndarray, w: np.ndarray) -> Callable[[], np.ndarray]:
    """sgemm of the conv as a matrix product: (pixels x c*k*k) . (c*k*k x filters)."""
    n, c, hw, _ = x.shape
    filters, _, k, _ = w.shape
    out = case.output[2]
    pad = (out - hw + k - 1) // 2
    padded = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    cols = sliding_window_view(padded, (k, k), axis=(2, 3)).transpose(0, 2, 3, 1, 4, 5)
    a = np.ascontiguousarray(cols.reshape(n * out * out, c * k * k))
    b = np.ascontiguousarray(w.reshape(filters, c * k * k).T)
    return lambda: a @ b


def conv_schedules(rounds: int) -> None:
    print(f"conv2d, C at 1 thread, GFLOP/s: medians of {rounds} interleaved rounds")
    print(f"  {'case':<40} {'packed':>8} {'rows':>8} {'sgemm':>8} {'packed/sgemm':>13}")
    for case in CONV_CASES:
        rng = np.random.default_rng(0)
        arrays = [rng.standard_normal(s).astype(np.float32) for s in case.inputs]
        expected = case.reference(*arrays)
        fns: dict[str, Callable[[], object]] = {}
        for name, left_out in (("packed", ""), ("rows", "packed_conv")):
            out = np.zeros(case.output, np.float32)
            kernel, addresses = c_kernel_without(case, left_out), [a.ctypes.data for a in (*arrays, out)]
            kernel(*addresses)
            np.testing.assert_allclose(out, expected, rtol=1e-3, atol=1e-3)
            fns[name] = lambda kernel=kernel, addresses=addresses, out=out: (
                kernel(*addresses),
                out,
            )  # (out kept alive)
        fns["sgemm"] = im2col_sgemm(case, *arrays)
        seconds = interleaved_medians(fns, rounds)
        rates = {name: case.flops / s / 1e9 for name, s in seconds.items()}
        print(f"  {case.name:<40} {rates['packed']:8.1f} {rates['rows']:8.1f} {rates['sgemm']:8.1f} "
              f"{rates['packed'] / rates['sgemm']:13.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
