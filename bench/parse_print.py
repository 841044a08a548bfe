"""Parse and print a module of 10,000 relay ops (custom syntax), in `opt-tool` and in-process.

    .venv/bin/python bench/parse_print.py [--ops 10000] [--runs 5]

The module is one @main made of residual CNN-style blocks (conv2d, bias_add, relu, pooling,
broadcast arithmetic, reductions, reshapes, transposes, slices, concatenation, dense,
softmax, constants and on_device annotations), so every op kind's custom syntax and verifier
are exercised. Prints the median of several runs for each stage.
"""

from __future__ import annotations

import argparse
import io
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from xdsl.printer import Printer

import xrelay
from xrelay.ir import LocParser

X = "tensor<1x8x16x16xf32>"
POOLED = "tensor<1x8x1x1xf32>"
FLAT = "tensor<8x256xf32>"
HALF = "tensor<1x8x8x16xf32>"


def block(i: int, x: str) -> tuple[list[str], str]:
    """One residual block on `x` (a value of type X); returns its lines and its output."""
    v = lambda name: f"%b{i}_{name}"  # noqa: E731
    scope = "cpu" if i % 2 else "opencl"
    lines = [
        f"{v('conv')} = relay.nn.conv2d {x}, %w {{padding = array<i64: 1, 1, 1, 1>}} : ({X}, tensor<8x8x3x3xf32>) -> {X}",
        f"{v('bias')} = relay.nn.bias_add {v('conv')}, %bias : ({X}, tensor<8xf32>) -> {X}",
        f"{v('relu')} = relay.nn.relu {v('bias')} : {X}",
        f"{v('pool')} = relay.nn.max_pool2d {v('relu')} {{pool_size = array<i64: 3, 3>, padding = array<i64: 1, 1, 1, 1>}} : ({X}) -> {X}",
        f"{v('res')} = relay.add {v('pool')}, {x} : ({X}, {X}) -> {X}",
        f"{v('mean')} = relay.mean {v('res')} {{axis = array<i64: 2, 3>, keepdims = true}} : ({X}) -> {POOLED}",
        f"{v('gate')} = relay.sigmoid {v('mean')} : {POOLED}",
        f"{v('scaled')} = relay.multiply {v('res')}, {v('gate')} : ({X}, {POOLED}) -> {X}",
        f"{v('flat')} = relay.reshape {v('scaled')} : ({X}) -> {FLAT}",
        f"{v('dense')} = relay.nn.dense {v('flat')}, %proj : ({FLAT}, tensor<256x256xf32>) -> {FLAT}",
        f"{v('soft')} = relay.nn.softmax {v('dense')} : ({FLAT}) -> {FLAT}",
        f"{v('back')} = relay.reshape {v('soft')} : ({FLAT}) -> {X}",
        f"{v('t')} = relay.transpose {v('back')} {{axes = array<i64: 0, 1, 3, 2>}} : ({X}) -> {X}",
        f"{v('top')} = relay.strided_slice {v('t')} {{begin = array<i64: 0, 0, 0>, end = array<i64: 1, 8, 8>}} : ({X}) -> {HALF}",
        f"{v('bottom')} = relay.strided_slice {v('t')} {{begin = array<i64: 0, 0, 15>, end = array<i64: 1, 8, 7>, strides = array<i64: 1, 1, -1>}} : ({X}) -> {HALF}",
        f"{v('cat')} = relay.concatenate {v('top')}, {v('bottom')} {{axis = 2 : i64}} : ({HALF}, {HALF}) -> {X}",
        f"{v('half')} = relay.constant {{value = dense<5.000000e-01> : tensor<8x1x1xf32>}} : tensor<8x1x1xf32>",
        f"{v('mix')} = relay.multiply {v('cat')}, {v('half')} : ({X}, tensor<8x1x1xf32>) -> {X}",
        f"{v('clip')} = relay.clip {v('mix')} {{a_min = -6.000000e+00 : f32, a_max = 6.000000e+00 : f32}} : {X}",
        f"{v('out')} = relay.on_device {v('clip')} {{se_scope = #relay.se_scope<device = {scope}>}} : {X}",
    ]
    return lines, v("out")


def module_text(num_ops: int) -> tuple[str, int]:
    lines: list[str] = []
    x = "%x"
    i = 0
    while len(lines) < num_ops:
        body, x = block(i, x)
        lines += body
        i += 1
    lines = lines[:num_ops]
    x = lines[-1].split(" = ")[0]
    header = (
        f"func.func @main(%x: {X}, %w: tensor<8x8x3x3xf32>, %bias: tensor<8xf32>, %proj: tensor<256x256xf32>) -> {X} {{"
    )
    text = "\n".join([header, *("  " + line for line in lines), f"  func.return {x} : {X}", "}", ""])
    return text, len(lines)


def median_time(fn: Callable[[], object], runs: int) -> tuple[float, float]:
    """Median wall-clock and CPU seconds (this process and its children) of `fn`.

    The CPU time is the steadier figure on a shared machine: it does not count waiting for
    a core.
    """
    walls, cpus = [], []
    for _ in range(runs):
        cpu = _cpu_seconds()
        start = time.perf_counter()
        fn()
        walls.append(time.perf_counter() - start)
        cpus.append(_cpu_seconds() - cpu)
    return statistics.median(walls), statistics.median(cpus)


def _cpu_seconds() -> float:
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def opt_tool(*args: str) -> None:
    tool = Path(sys.executable).with_name("opt-tool")
    subprocess.run([str(tool), *args], check=True, stdout=subprocess.DEVNULL)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ops", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()

    text, count = module_text(args.ops)
    ctx = xrelay.context()
    module = LocParser(ctx, text, "bench.mlir").parse_module()
    module.verify()
    assert sum(1 for op in module.walk() if op.name.startswith("relay.")) == count

    def print_module(generic: bool) -> str:
        stream = io.StringIO()
        Printer(stream=stream, print_generic_format=generic).print_op(module)
        return stream.getvalue()

    generic_text = print_module(True)

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "bench.mlir"
        path.write_text(text)
        generic_path = Path(folder) / "bench_generic.mlir"
        generic_path.write_text(generic_text)
        tiny = Path(folder) / "tiny.mlir"
        tiny.write_text(module_text(1)[0])
        rows = [
            ("opt-tool start-up (1 op)", median_time(lambda: opt_tool(str(tiny)), args.runs)),
            ("opt-tool parse + verify + print", median_time(lambda: opt_tool(str(path)), args.runs)),
            (
                "opt-tool ... --print-op-generic",
                median_time(lambda: opt_tool(str(path), "--print-op-generic"), args.runs),
            ),
            ("opt-tool on the generic form", median_time(lambda: opt_tool(str(generic_path)), args.runs)),
        ]
    rows += [
        ("in-process parse (custom syntax)", median_time(lambda: LocParser(ctx, text, "b").parse_module(), args.runs)),
        (
            "in-process parse (generic syntax)",
            median_time(lambda: LocParser(ctx, generic_text, "b").parse_module(), args.runs),
        ),
        ("in-process verify", median_time(module.verify, args.runs)),
        ("in-process print (custom syntax)", median_time(lambda: print_module(False), args.runs)),
        ("in-process print (generic syntax)", median_time(lambda: print_module(True), args.runs)),
    ]
    print(f"{count} relay ops, {len(text) / 1024:.0f} KiB of custom syntax; median of {args.runs} runs")
    print(f"  {'':<36} {'wall':>8} {'cpu':>8} {'cpu/op':>10}")
    for name, (wall, cpu) in rows:
        per_op = "" if "start-up" in name else f"{cpu / count * 1e6:7.0f} us"
        print(f"  {name:<36} {wall:7.2f}s {cpu:7.2f}s {per_op:>10}")


if __name__ == "__main__":
    main()
