"""Vector maths: the elementwise chain with a tanh, each maths function, and dense + bias + GELU.

Kernels are lowered as `xrelay.build` lowers them (plan-devices, fuse-ops,
convert-relay-to-loops, dce, licm, cse, split-reductions), built as the runtime builds them
(C: gcc with the runtime's flags, one thread unless said; OpenCL: PoCL), and timed as kernel calls (an OpenCL call is
one launch, waited for; buffers stay on the device), all in one interleaved run (medians).

- chain: an 8-op elementwise chain with a tanh on 4M floats, against a hand-written fused C
  loop whose tanh is vectorised (built by the same builder, so with the same flags) and numpy.
- functions: ns per element of each maths op on 4M floats, C and OpenCL.
- gelu: the transformer's feed-forward dense (128x256 . 1024x256) + bias, with and without
  the tanh GELU after it.

    POCL_DEVICES="pthread pthread" .venv/bin/python bench/vector_math.py [--rounds N] [--threads N]
"""

from __future__ import annotations

import os

os.environ.setdefault("POCL_DEVICES", "pthread pthread")

import argparse
import math
from collections.abc import Callable

import numpy as np
from timing import interleaved_medians, round_orders
from xdsl.passes import PassPipeline

import xrelay
from xrelay.driver import all_passes
from xrelay.runtime.c_library import build_c
from xrelay.runtime.kernels import KernelSource
from xrelay.runtime.opencl import build_opencl, default_opencl_context, import_pyopencl
from xrelay.targets.kernels import kernel_sources

N = 4 * 1024 * 1024

HAND_CHAIN = f"""
#include <math.h>
float tanhf(float) __attribute__((simd("notinbranch")));
void hand_chain(const float *restrict a, const float *restrict b, float *restrict out) {{
  for (long i = 0; i < {N}; i++) {{
    float x = a[i], y = b[i];
    float t = tanhf(x * y + x) - y;
    float v = -(t * t + y);
    out[i] = v > 0.0f ? v : 0.0f;
  }}
}}
"""


def t(shape: tuple[int, ...]) -> str:
    return f"tensor<{''.join(f'{d}x' for d in shape)}f32>"


class Text:
    """A relay @main built op by op."""

    def __init__(self, **params: tuple[int, ...]) -> None:
        self.params = params
        self.lines: list[str] = []
        self.types: dict[str, tuple[int, ...]] = {f"%{n}": s for n, s in params.items()}

    def op(self, op: str, *args: str, shape: tuple[int, ...] | None = None, attrs: str = "") -> str:
        shape = shape or max((self.types[a] for a in args), key=len)
        name = f"%{len(self.lines)}"
        ins = ", ".join(t(self.types[a]) for a in args)
        types = t(shape) if len(args) == 1 else f"({ins}) -> {t(shape)}"  # unary ops print one type
        self.lines.append(f"  {name} = {op} {', '.join(args)}{attrs} : {types}")
        self.types[name] = shape
        return name

    def const(self, value: float) -> str:
        name = f"%{len(self.lines)}"
        self.lines.append(f"  {name} = relay.constant {{value = dense<{value:.9e}> : tensor<f32>}} : tensor<f32>")
        self.types[name] = ()
        return name

    def text(self, result: str) -> str:
        params = ", ".join(f"%{n}: {t(s)}" for n, s in self.params.items())
        body = "\n".join(self.lines)
        return f"func.func @main({params}) -> {t(self.types[result])} {{\n{body}\n  func.return {result} : {t(self.types[result])}\n}}"


def chain_text() -> str:
    p = Text(a=(N,), b=(N,))
    v = p.op("relay.add", p.op("relay.multiply", "%a", "%b"), "%a")
    v = p.op("relay.subtract", p.op("relay.tanh", v), "%b")
    v = p.op("relay.add", p.op("relay.multiply", v, v), "%b")
    return p.text(p.op("relay.nn.relu", p.op("relay.negative", v)))


def chain_numpy(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    v = np.tanh(a * b + a) - b
    return np.maximum(-(v * v + b), 0)


def function_text(name: str) -> str:
    p = Text(a=(N,), b=(N,))
    if name == "power":
        return p.text(p.op("relay.power", "%a", "%b"))
    if name == "gelu":
        return p.text(gelu(p, "%a"))
    return p.text(p.op(f"relay.{name}", "%a"))


def gelu(p: Text, x: str) -> str:
    """0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), as bench/models.py writes it."""
    cube = p.op("relay.multiply", p.op("relay.multiply", x, x), x)
    inner = p.op("relay.add", x, p.op("relay.multiply", cube, p.const(0.044715)))
    th = p.op("relay.tanh", p.op("relay.multiply", inner, p.const(math.sqrt(2 / math.pi))))
    return p.op("relay.multiply", p.op("relay.multiply", x, p.const(0.5)), p.op("relay.add", th, p.const(1.0)))


def dense_text(with_gelu: bool, m: int = 128, k: int = 256, n: int = 1024) -> str:
    p = Text(x=(m, k), w=(n, k), bias=(n,))
    v = p.op("relay.nn.bias_add", p.op("relay.nn.dense", "%x", "%w", shape=(m, n)), "%bias")
    return p.text(gelu(p, v) if with_gelu else v)


def kernel_for(text: str, target: str) -> KernelSource:
    module = xrelay.parse(text)
    lowering = "convert-relay-to-loops,dce,licm,cse,split-reductions"
    spec = f"plan-devices{{targets={target}}},fuse-ops,{lowering}"
    PassPipeline.parse_spec(all_passes(), spec).apply(xrelay.context(), module)
    (source,) = [s for s in kernel_sources(module)]
    return source


class Runner:
    """Builds one kernel on a target and gives a call that runs it on fixed arrays."""

    def __init__(self, context) -> None:
        self.context = context
        self.cl = import_pyopencl()
        self.queue = self.cl.CommandQueue(context)

    def c(
        self, source: KernelSource, arrays: list[np.ndarray], out: np.ndarray, threads: int = 1
    ) -> Callable[[], None]:
        kernel = build_c([source], num_threads=threads)[source.name]
        addresses = [a.ctypes.data for a in (*arrays, out)]
        return lambda: kernel.function(*addresses)

    def opencl(self, source: KernelSource, arrays: list[np.ndarray], out: np.ndarray) -> Callable[[], None]:
        cl = self.cl
        kernel = build_opencl(self.context, [source])[source.name]
        mf = cl.mem_flags
        buffers = [cl.Buffer(self.context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a) for a in arrays]
        buffers.append(cl.Buffer(self.context, mf.READ_WRITE, out.nbytes))
        queue = self.queue

        def call() -> None:
            kernel(queue, *buffers).wait()

        def fetch() -> np.ndarray:
            cl.enqueue_copy(queue, out, buffers[-1])
            return out

        call.fetch = fetch  # type: ignore[attr-defined]
        return call


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--only", default="", help="chain, functions or gelu")
    args = parser.parse_args()
    runner = Runner(default_opencl_context())
    rng = np.random.default_rng(0)
    a = rng.uniform(-2, 2, N).astype(np.float32)
    b = rng.uniform(0.5, 2, N).astype(np.float32)
    if args.only in ("", "chain"):
        chain(runner, a, b, args.rounds)
    if args.only in ("", "functions"):
        functions(a, b, args.rounds)
    if args.only in ("", "gelu"):
        gelu_cost(rng, args.rounds)


def chain(runner: Runner, a: np.ndarray, b: np.ndarray, rounds: int) -> None:
    text = chain_text()
    outs = {k: np.zeros(N, np.float32) for k in ("hand", "c", "c2", "opencl")}
    hand = KernelSource("hand_chain", "c", HAND_CHAIN, (N,), 2)
    fns = {
        "hand C loop (vector tanhf)": runner.c(hand, [a, b], outs["hand"]),
        "xrelay C": runner.c(kernel_for(text, "c"), [a, b], outs["c"]),
        "xrelay C, 2 threads": runner.c(kernel_for(text, "c"), [a, b], outs["c2"], threads=2),
        "xrelay OpenCL": runner.opencl(kernel_for(text, "opencl"), [a, b], outs["opencl"]),
        "numpy": lambda: chain_numpy(a, b),
    }
    times = interleaved_medians(fns, rounds)
    fns["xrelay OpenCL"].fetch()  # type: ignore[attr-defined]
    expected = chain_numpy(a.astype(np.float64), b.astype(np.float64))
    for out in outs.values():
        np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)
    base = times["hand C loop (vector tanhf)"]
    print(f"8-op chain with a tanh, {N} floats, median of {rounds} interleaved rounds:")
    for name, s in times.items():
        print(f"  {name:<28} {s * 1e3:8.2f} ms   {base / s:6.1%} of the hand loop's speed")


def kernel_seconds(exe: xrelay.runtime.Executable, inputs: dict[str, np.ndarray]) -> float:
    """The time of the program's kernels in one profiled run (copies left out)."""
    return sum(seconds for name, _, seconds in exe.profile(inputs).nodes if name.startswith("fused"))


def interleaved_kernel_medians(
    cases: dict[str, tuple[xrelay.runtime.Executable, dict[str, np.ndarray]]], rounds: int
) -> dict[str, float]:
    """Like `timing.interleaved_medians`, of `kernel_seconds` of each case."""
    for case in cases.values():
        kernel_seconds(*case)  # warms up
    times: dict[str, list[float]] = {name: [] for name in cases}
    for order in round_orders(list(cases), rounds):
        for name in order:
            times[name].append(kernel_seconds(*cases[name]))
    return {name: float(np.median(samples)) for name, samples in times.items()}


def functions(a: np.ndarray, b: np.ndarray, rounds: int) -> None:
    names = ["exp", "log", "tanh", "sigmoid", "erf", "sqrt", "rsqrt", "power", "gelu"]
    x = np.abs(a) + 0.1  # log, sqrt, rsqrt, power want positive inputs
    cases = {}
    for name in names:
        text = function_text(name)
        inputs = {"a": x, "b": b}
        for target in ("c", "opencl"):
            cases[f"{name} {target}"] = (xrelay.build(text, targets=(target,), num_threads=1), inputs)
    times = interleaved_kernel_medians(cases, rounds)
    print(f"ns per element on {N} floats (the kernel node), median of {rounds} interleaved rounds:")
    print(f"  {'function':<10} {'c':>7} {'opencl':>7}")
    for name in names:
        print(f"  {name:<10} " + " ".join(f"{times[f'{name} {tg}'] / N * 1e9:7.2f}" for tg in ("c", "opencl")))


def gelu_cost(rng: np.random.Generator, rounds: int) -> None:
    x = rng.standard_normal((128, 256)).astype(np.float32)
    weights = {
        "w": (rng.standard_normal((1024, 256)) / 16).astype(np.float32),
        "bias": rng.standard_normal(1024).astype(np.float32),
    }
    cases = {}
    for target in ("c", "opencl"):
        for with_gelu in (False, True):
            exe = xrelay.build(dense_text(with_gelu), targets=(target,), params=weights, num_threads=1)
            cases[f"{target} {'+ gelu' if with_gelu else 'only'}"] = (exe, {"x": x})
    times = interleaved_kernel_medians(cases, rounds)
    print(f"dense 128x256 . 1024x256 + bias (the kernel node), median of {rounds} interleaved rounds:")
    for target in ("c", "opencl"):
        plain, fused = times[f"{target} only"], times[f"{target} + gelu"]
        print(f"  {target:<7} dense+bias {plain * 1e3:7.3f} ms, + gelu {fused * 1e3:7.3f} ms: {fused / plain:5.2f}x")


if __name__ == "__main__":
    main()
