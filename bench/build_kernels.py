"""Time to lower and build the kernels of a model of about 50 fused groups.

The model is a stack of blocks (conv2d+bias_add+relu, dense+bias_add+tanh, softmax, a
reduction fed by elementwise ops), placed on one device. Measured, each as the median of
several runs:

  lower      parse, the passes xrelay.build runs up to split-reductions, and the kernel
             sources
  c cold       build_c of every kernel into one shared library, with an empty xrelay cache
  c warm       the same: the library comes from the on-disk cache and is loaded
  opencl cold  build_opencl of every kernel into one program, then one launch of each (PoCL
               compiles a kernel's work-group function at its first launch), empty caches
  opencl warm  the same, from PoCL's own cache (xrelay does not cache OpenCL programs)

    .venv/bin/python bench/build_kernels.py [--runs N]

Every build runs in a fresh process (a loaded library or PoCL's in-memory state would make a
second build in one process look free), with its own XDG_CACHE_HOME and POCL_CACHE_DIR: empty
for a cold run, shared and filled by an untimed first run for warm ones. Only the build (and
for OpenCL the first launches) is timed, not the imports or the lowering.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from timing import median_seconds
from xdsl.passes import PassPipeline

import xrelay
from xrelay.driver import all_passes
from xrelay.runtime.c_library import build_c
from xrelay.runtime.kernels import KernelSource
from xrelay.runtime.opencl import build_opencl, default_opencl_context
from xrelay.targets.kernels import kernel_sources


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
    lowering = "convert-relay-to-loops,dce,licm,cse,split-reductions"
    spec = f"plan-devices{{targets={target}}},fuse-ops,{lowering}"
    module = xrelay.parse(text)
    PassPipeline.parse_spec(all_passes(), spec).apply(xrelay.context(), module)
    return kernel_sources(module)


def c_build() -> None:
    """Builds (or loads) the model's C kernels in this (fresh) process; prints seconds."""
    sources = lower(model_text(), "cpu")
    start = time.perf_counter()
    build_c(sources)
    print(time.perf_counter() - start)


def opencl_build_and_launch() -> None:
    """Builds the model's OpenCL kernels and launches each once, in this (fresh) process;
    prints the time in seconds. Buffers are big enough for any kernel's arguments."""
    import pyopencl as cl

    sources = lower(model_text(), "opencl")
    context = default_opencl_context()
    queue = cl.CommandQueue(context)
    buffer = cl.Buffer(context, cl.mem_flags.READ_WRITE, 1 << 20)
    start = time.perf_counter()
    program = build_opencl(context, sources)
    for s in sources:
        program[s.name](queue, *([buffer] * (s.num_inputs + 1)))
    queue.finish()
    print(time.perf_counter() - start)


def subprocess_times(language: str, root: Path, runs: int, cold: bool) -> list[float]:
    """Each run in a fresh process: cold runs get empty caches, warm ones share a warm one."""
    times = []
    for run in range(runs if cold else runs + 1):
        env = dict(os.environ)
        name = f"{language}-cold{run}" if cold else f"{language}-warm"
        env["XDG_CACHE_HOME"] = str(root / name)
        env["POCL_CACHE_DIR"] = str(root / name / "pocl")
        out = subprocess.run([sys.executable, __file__, "--build", language], env=env,
                             capture_output=True, text=True, check=True)  # fmt: skip
        times.append(float(out.stdout.strip().splitlines()[-1]))
    return times if cold else times[1:]  # the first warm-cache run fills the cache


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--build", choices=("c", "opencl"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.build is not None:
        c_build() if args.build == "c" else opencl_build_and_launch()
        return
    text = model_text()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        c_sources = lower(text, "cpu")
        print(f"model: {len(c_sources)} fused groups ({text.count('= relay.')} relay ops)")
        print(f"lower (cpu)     {median_seconds(lambda: lower(text, 'cpu'), args.runs, warmup=False) * 1e3:8.1f} ms")
        print(f"lower (opencl)  {median_seconds(lambda: lower(text, 'opencl'), args.runs, warmup=False) * 1e3:8.1f} ms")
        for language in ("c", "opencl"):
            runs = args.runs if language == "c" else max(1, args.runs // 2)
            t_cold = statistics.median(subprocess_times(language, root, runs, cold=True))
            t_warm = statistics.median(subprocess_times(language, root, args.runs, cold=False))
            print(f"{language + ' cold':16s}{t_cold * 1e3:8.1f} ms   (median of {runs})")
            print(f"{language + ' warm':16s}{t_warm * 1e3:8.1f} ms   (median of {args.runs})")


if __name__ == "__main__":
    main()
