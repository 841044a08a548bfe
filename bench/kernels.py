"""GFLOP/s of the anchor kernels xrelay generates, C and OpenCL (PoCL), against numpy.

Each case is one relay op lowered as `xrelay.build` lowers it (plan-devices, fuse-ops,
convert-relay-to-loops, dce, licm, cse, split-reductions) for one target, built as
the runtime builds it, checked against numpy, and timed as the median of several calls (an
OpenCL call is one launch, waited for; buffers stay on the device). numpy runs in the same
process with one BLAS thread (OPENBLAS_NUM_THREADS=1, the environment's OPENBLAS_CORETYPE
left as it is): `np.dot` for dense and batch_matmul, an im2col (sliding_window_view +
tensordot) for conv2d.

The second table is the cpu matmul schedules at 1 thread, interleaved in one run (medians of
--rounds rounds): packed_matmul (packed panels, vector micro-kernel) and matmul_block (forced:
lowered with the schedule list cut to it), against numpy's matmul (OpenBLAS sgemm), and the
cost of a dense's epilogue (bias, bias + GELU with tanh) in each schedule. Run it with
OpenBLAS's own core detection and 1 thread:

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 \
        POCL_DEVICES="pthread pthread" .venv/bin/python bench/kernels.py [--runs N] [--only NAME]

`--conv` prints instead the C conv2d schedules at 1 thread against OpenBLAS sgemm of the
conv's im2col matrix (the matrix built beforehand: sgemm alone), interleaved in one run: the
schedule lowering picks (its name printed: winograd_conv's GFLOP/s counted as the direct
conv's), packed_conv (winograd_conv and conv_taps left out of the schedule list), conv_rows
(all three left out), sgemm. For numpy at its
best, run it with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset:

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 \\
        .venv/bin/python bench/kernels.py --conv
"""

from __future__ import annotations

import os

os.environ.setdefault("POCL_DEVICES", "pthread pthread")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from timing import interleaved_medians, median_seconds
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.passes import PassPipeline

import xrelay
from xrelay.driver import all_passes
from xrelay.runtime.c_library import build_c
from xrelay.runtime.kernels import KernelSource
from xrelay.runtime.opencl import build_opencl, default_opencl_context, import_pyopencl
from xrelay.targets.kernels import kernel_sources
from xrelay.transforms import convert_relay_to_loops
from xrelay.transforms.convert_relay_to_loops import SCHEDULE_ATTR


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


# The cpu matmul shapes of the packed schedule's goal (issue 12): >= 50% of OpenBLAS sgemm.
MATMUL_CASES = [dense(64, 784, 512), dense(64, 512, 512), batch_matmul(4, 128, 64, 128)]
MATMUL_SCHEDULES = ("packed_matmul", "matmul_block")
EPILOGUE_SHAPE = (64, 784, 512)  # dense + bias against dense + bias + GELU (tanh)


def kernel_for(case: Case, target: str) -> KernelSource:
    return kernel_of_text(case.module_text(), target)


def kernel_of_text(text: str, target: str) -> KernelSource:
    (source,) = kernel_sources(lowered(text, target))
    return source


def lowered(text: str, target: str) -> ModuleOp:
    module = xrelay.parse(text)
    lowering = "convert-relay-to-loops,dce,licm,cse,split-reductions"
    spec = f"plan-devices{{targets={target}}},fuse-ops,{lowering}"
    PassPipeline.parse_spec(all_passes(), spec).apply(xrelay.context(), module)
    return module


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


@contextmanager
def schedules_cut_to(name: str) -> Iterator[None]:
    """Lowering picks among `name` and the schedules after it only (the elementwise nest
    stays last): how the bench forces an older schedule on a group a newer one would take."""
    saved = convert_relay_to_loops.SCHEDULES
    names = [s.name for s in saved]
    convert_relay_to_loops.SCHEDULES = saved[names.index(name) :]
    try:
        yield
    finally:
        convert_relay_to_loops.SCHEDULES = saved


def c_kernel(text: str, schedule: str) -> Callable[..., object]:
    """The C kernel of a one-group program `text` lowered with `schedule` (checked), 1 thread."""
    with schedules_cut_to(schedule):
        module = lowered(text, "c")
    got = [op.attributes[SCHEDULE_ATTR] for op in module.ops if SCHEDULE_ATTR in op.attributes]
    assert got == [StringAttr(schedule)], (schedule, got)
    (source,) = kernel_sources(module)
    return build_c([source], num_threads=1)[source.name].function


GELU_CONSTANTS = (0.044715, 0.7978845608, 1.0, 0.5)


def dense_epilogue_text(m: int, k: int, n: int, gelu: bool) -> str:
    """dense + bias_add (+ GELU with tanh, as bench/models.py's transformer writes it; its
    scalar constants are parameters %c0..%c3, kernel inputs as fuse-ops makes constants)."""
    x, w, b, y, s = t((m, k)), t((n, k)), t((n,)), t((m, n)), "tensor<f32>"
    lines = [f"%d = relay.nn.dense %x, %w : ({x}, {w}) -> {y}", f"%e = relay.nn.bias_add %d, %b : ({y}, {b}) -> {y}"]
    if gelu:
        lines += [
            f"%g0 = relay.multiply %e, %e : ({y}, {y}) -> {y}",
            f"%g1 = relay.multiply %g0, %e : ({y}, {y}) -> {y}",
            f"%g2 = relay.multiply %g1, %c0 : ({y}, {s}) -> {y}",
            f"%g3 = relay.add %e, %g2 : ({y}, {y}) -> {y}",
            f"%g4 = relay.multiply %g3, %c1 : ({y}, {s}) -> {y}",
            f"%g5 = relay.tanh %g4 : {y}",
            f"%g6 = relay.add %g5, %c2 : ({y}, {s}) -> {y}",
            f"%g7 = relay.multiply %e, %g6 : ({y}, {y}) -> {y}",
            f"%g8 = relay.multiply %g7, %c3 : ({y}, {s}) -> {y}",
        ]
    last = lines[-1].split("=")[0].strip()
    body = "\n  ".join(lines)
    constants = "".join(f", %c{i}: {s}" for i in range(len(GELU_CONSTANTS))) if gelu else ""
    return f"func.func @main(%x: {x}, %w: {w}, %b: {b}{constants}) -> {y} {{\n  {body}\n  func.return {last} : {y}\n}}"


def matmul_table(rounds: int, only: str) -> None:
    """GFLOP/s of each schedule and of OpenBLAS, interleaved, 1 thread."""
    print(f"\ncpu matmul schedules, 1 thread, GFLOP/s, medians of {rounds} interleaved rounds")
    print(f"  {'case':<40} {'numpy':>8} " + " ".join(f"{s:>14}" for s in MATMUL_SCHEDULES) + f" {'packed/numpy':>13}")
    for case in MATMUL_CASES:
        if only not in case.name:
            continue
        rng = np.random.default_rng(0)
        arrays = [rng.standard_normal(s).astype(np.float32) for s in case.inputs]
        expected = case.reference(*arrays)
        calls: dict[str, Callable[[], object]] = {"numpy": lambda c=case, a=arrays: c.reference(*a)}
        outs = {}
        for schedule in MATMUL_SCHEDULES:
            kernel = c_kernel(case.module_text(), schedule)
            out = outs[schedule] = np.zeros(case.output, np.float32)
            addresses = [a.ctypes.data for a in (*arrays, out)]
            calls[schedule] = lambda k=kernel, a=addresses: k(*a)
        seconds = interleaved_medians(calls, rounds)
        for out in outs.values():
            np.testing.assert_allclose(out, expected, rtol=1e-3, atol=1e-3)
        rates = {name: case.flops / s / 1e9 for name, s in seconds.items()}
        ratio = rates["packed_matmul"] / rates["numpy"]
        print(f"  {case.name:<40} {rates['numpy']:8.1f} " + " ".join(f"{rates[s]:14.1f}" for s in MATMUL_SCHEDULES)
              + f" {ratio:12.0%}")  # fmt: skip


def epilogue_table(rounds: int) -> None:
    """The time of dense + bias + GELU over dense + bias, per schedule, interleaved."""
    m, k, n = EPILOGUE_SHAPE
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in ((m, k), (n, k), (n,))]
    calls: dict[str, Callable[[], object]] = {}
    out = np.zeros((m, n), np.float32)  # (kept alive while the kernels write it)
    constants = [np.array(c, np.float32) for c in GELU_CONSTANTS]
    biased = arrays[0] @ arrays[1].T + arrays[2]
    c0, c1, one, half = GELU_CONSTANTS
    expected = {False: biased, True: half * biased * (one + np.tanh(c1 * (biased + c0 * biased**3)))}
    for schedule in MATMUL_SCHEDULES:
        for gelu in (False, True):
            kernel = c_kernel(dense_epilogue_text(m, k, n, gelu), schedule)
            inputs = [*arrays, *constants] if gelu else arrays
            addresses = [a.ctypes.data for a in (*inputs, out)]
            kernel(*addresses)
            np.testing.assert_allclose(out, expected[gelu], rtol=1e-3, atol=1e-3)
            calls[f"{schedule} {'gelu' if gelu else 'bias'}"] = lambda kf=kernel, a=addresses: kf(*a)
    seconds = interleaved_medians(calls, rounds)
    print(f"\ndense {m}x{k} . {n}x{k} + bias (+ GELU with tanh), 1 thread, us, medians of {rounds} interleaved rounds")
    print(f"  {'schedule':<16} {'+ bias':>9} {'+ GELU':>9} {'GELU / bias':>12}")
    for schedule in MATMUL_SCHEDULES:
        bias, gelu = seconds[f"{schedule} bias"], seconds[f"{schedule} gelu"]
        print(f"  {schedule:<16} {bias * 1e6:9.1f} {gelu * 1e6:9.1f} {gelu / bias:11.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--only", default="", help="run the cases whose name contains this")
    parser.add_argument("--rounds", type=int, default=50, help="interleaved rounds of the cpu matmul tables")
    parser.add_argument("--matmul-only", action="store_true", help="only the cpu matmul tables")
    parser.add_argument("--conv", action="store_true", help="only the conv2d schedules against sgemm (--runs rounds)")
    args = parser.parse_args()
    if args.conv:
        conv_schedules(args.runs)
        return
    if args.matmul_only:
        matmul_table(args.rounds, args.only)
        epilogue_table(args.rounds)
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
    matmul_table(args.rounds, args.only)
    epilogue_table(args.rounds)


# --- conv2d schedules against sgemm (--conv) ------------------------------------------------

CONV_CASES = [
    conv2d(1, 64, 56, 64, 3, 1),  # the ResNet basic block's convs (bench/models.py)
    conv2d(1, 16, 28, 32, 3, 1),
    conv2d(8, 16, 14, 32, 3, 1),  # the CNN's second conv (bench/models.py, batch 8)
    conv2d(8, 1, 28, 16, 3, 1),  # the CNN's first conv
]


def c_kernel_without(case: Case, left_out: tuple[str, ...]) -> Callable[..., object]:
    """The case's C kernel built at 1 thread, with the schedules `left_out` not on the list."""
    kept = tuple(s for s in convert_relay_to_loops.SCHEDULES if s.name not in left_out)
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
    print(f"  {'case':<40} {'picked':>8} {'packed':>8} {'rows':>8} {'sgemm':>8} {'packed/sgemm':>13} "
          f"{'picked/packed':>14}  picked")  # fmt: skip
    for case in CONV_CASES:
        rng = np.random.default_rng(0)
        arrays = [rng.standard_normal(s).astype(np.float32) for s in case.inputs]
        expected = case.reference(*arrays)
        fns: dict[str, Callable[[], object]] = {}
        earlier = ("winograd_conv", "conv_taps")
        variants = {"picked": (), "packed": earlier, "rows": (*earlier, "packed_conv")}
        for name, left_out in variants.items():
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
        print(f"  {case.name:<40} {rates['picked']:8.1f} {rates['packed']:8.1f} {rates['rows']:8.1f} "
              f"{rates['sgemm']:8.1f} {rates['packed'] / rates['sgemm']:13.2f} "
              f"{rates['picked'] / rates['packed']:14.2f}  {picked_schedule(case)}")  # fmt: skip


def picked_schedule(case: Case) -> str:
    """The schedule lowering picks for the case's group on the cpu."""
    module = lowered(case.module_text(), "c")
    (name,) = [op.attributes[SCHEDULE_ATTR] for op in module.ops if SCHEDULE_ATTR in op.attributes]
    assert isinstance(name, StringAttr)
    return name.data


if __name__ == "__main__":
    main()
