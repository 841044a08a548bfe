"""Time to lower and build the kernels of a model of about 50 fused groups.

The model is a stack of blocks (conv2d+bias_add+relu, dense+bias_add+tanh, softmax, a
reduction fed by elementwise ops), placed on one device. Measured, each as the median of
several runs:

  lower      parse, plan-devices, fuse-ops, convert-relay-to-loops, and the kernel sources
  c cold     build_c of every kernel into one shared library, with an empty xrelay cache
  c warm     the same build again: the library comes from the on-disk cache
  cl cold    build_opencl of every kernel into one program, with empty xrelay and PoCL caches
  cl warm    the same build again: device binaries from the xrelay cache (PoCL's cache on)

    .venv/bin/python bench/build_kernels.py [--runs N]

PoCL reads its cache directory once per process, so each cold OpenCL build runs in a fresh
subprocess with empty XDG_CACHE_HOME and POCL_CACHE_DIR (only the build itself is timed).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from xdsl.passes import PassPipeline

import xrelay
from xrelay.targets.build import build_c, build_opencl, default_opencl_context
from xrelay.targets.kernels import KernelSource, kernel_sources
from xrelay.transforms import get_all_passes


def model_text(blocks: int = 8) -> str:
    """About 4 groups a block: conv block, dense block, softmax, a reduction of elementwise ops;
    each block feeds the next, so nothing is dead."""
    t = lambda shape: f"tensor<{'x'.join(map(str, shape))}xf32>"  # noqa: E731
    params, lines = ["%x: tensor<1x8x12x12xf32>"], []
    v = "%x"
    for i in range(blocks):
        params += [f"%w{i}: {t((8, 8, 3, 3))}", f"%b{i}: {t((8,))}", f"%d{i}: {t((96, 128))}",
                   f"%e{i}: {t((96,))}"]  # fmt: skip
        lines += [
            f"%c{i} = relay.nn.conv2d {v}, %w{i} {{padding = array<i64: 1, 1, 1, 1>}} : ({t((1, 8, 12, 12))}, {t((8, 8, 3, 3))}) -> {t((1, 8, 12, 12))}",
            f"%a{i} = relay.nn.bias_add %c{i}, %b{i} : ({t((1, 8, 12, 12))}, {t((8,))}) -> {t((1, 8, 12, 12))}",
            f"%r{i} = relay.nn.relu %a{i} : {t((1, 8, 12, 12))}",
            f"%f{i} = relay.reshape %r{i} : ({t((1, 8, 12, 12))}) -> {t((9, 128))}",
            f"%g{i} = relay.nn.dense %f{i}, %d{i} : ({t((9, 128))}, {t((96, 128))}) -> {t((9, 96))}",
            f"%h{i} = relay.add %g{i}, %e{i} : ({t((9, 96))}, {t((96,))}) -> {t((9, 96))}",
            f"%k{i} = relay.tanh %h{i} : {t((9, 96))}",
            f"%s{i} = relay.nn.softmax %k{i} : ({t((9, 96))}) -> {t((9, 96))}",
            f"%m{i} = relay.multiply %s{i}, %s{i} : ({t((9, 96))}, {t((9, 96))}) -> {t((9, 96))}",
            f"%q{i} = relay.sum %m{i} {{axis = array<i64: 0>, keepdims = true}} : ({t((9, 96))}) -> {t((1, 96))}",
            f"%p{i} = relay.reshape %q{i} : ({t((1, 96))}) -> {t((1, 8, 12, 1))}",
            f"%u{i} = relay.add %r{i}, %p{i} : ({t((1, 8, 12, 12))}, {t((1, 8, 12, 1))}) -> {t((1, 8, 12, 12))}",
        ]  # fmt: skip
        v = f"%u{i}"
    outs = v
    body = "\n  ".join(lines)
    return f"func.func @main({', '.join(params)}) -> {t((1, 8, 12, 12))} {{\n  {body}\n  func.return {outs} : {t((1, 8, 12, 12))}\n}}\n"


def lower(text: str, device: str) -> list[KernelSource]:
    target = "c" if device == "cpu" else "opencl"
    spec = f"plan-devices{{targets={target}}},fuse-ops,convert-relay-to-loops"
    module = xrelay.parse(text)
    PassPipeline.parse_spec(get_all_passes(), spec).apply(xrelay.context(), module)
    return kernel_sources(module)


def median_time(fn: Callable[[], object], runs: int, setup: Callable[[], None] = lambda: None) -> float:
    times = []
    for _ in range(runs):
        setup()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def fresh_cache(root: Path) -> Callable[[], None]:
    counter = iter(range(10**6))

    def setup() -> None:
        os.environ["XDG_CACHE_HOME"] = str(root / f"cold{next(counter)}")

    return setup


def cold_opencl_build() -> None:
    """One cold OpenCL build in this (fresh) process; prints its time in seconds."""
    sources = lower(model_text(), "opencl")
    context = default_opencl_context()
    start = time.perf_counter()
    program = build_opencl(context, sources)
    elapsed = time.perf_counter() - start
    assert not program.cached
    print(elapsed)


def cold_opencl_times(root: Path, runs: int) -> list[float]:
    times = []
    for run in range(runs):
        env = dict(os.environ)
        env["XDG_CACHE_HOME"] = str(root / f"clcold{run}")
        env["POCL_CACHE_DIR"] = str(root / f"pocl{run}")
        out = subprocess.run([sys.executable, __file__, "--cold-opencl-build"], env=env,
                             capture_output=True, text=True, check=True)  # fmt: skip
        times.append(float(out.stdout.strip().splitlines()[-1]))
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--cold-opencl-build", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.cold_opencl_build:
        cold_opencl_build()
        return
    text = model_text()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        os.environ["POCL_CACHE_DIR"] = str(root / "pocl-warm")
        c_sources = lower(text, "cpu")
        cl_sources = lower(text, "opencl")
        print(f"model: {len(c_sources)} fused groups ({text.count('= relay.')} relay ops)")
        print(f"lower (cpu)     {median_time(lambda: lower(text, 'cpu'), args.runs) * 1e3:8.1f} ms")
        print(f"lower (opencl)  {median_time(lambda: lower(text, 'opencl'), args.runs) * 1e3:8.1f} ms")
        cold = fresh_cache(root)
        print(f"c cold          {median_time(lambda: build_c(c_sources), args.runs, cold) * 1e3:8.1f} ms")
        os.environ["XDG_CACHE_HOME"] = str(root / "warm")
        build_c(c_sources)
        print(f"c warm          {median_time(lambda: build_c(c_sources), args.runs) * 1e3:8.1f} ms")
        cl_runs = max(1, args.runs // 2)
        t_cold = statistics.median(cold_opencl_times(root, cl_runs))
        print(f"cl cold         {t_cold * 1e3:8.1f} ms   (median of {cl_runs})")
        context = default_opencl_context()
        os.environ["XDG_CACHE_HOME"] = str(root / "warm")
        build_opencl(context, cl_sources)
        print(f"cl warm         {median_time(lambda: build_opencl(context, cl_sources), args.runs) * 1e3:8.1f} ms")


if __name__ == "__main__":
    main()
