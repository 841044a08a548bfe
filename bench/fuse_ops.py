"""Time of the fuse-ops pass on generated modules of about 1,000 and 10,000 ops.

The module is one function: a stack of small blocks as plan-devices leaves them (every op
with a canonical se_scope), cycling through dense+bias_add+relu, an elementwise diamond, a
softmax written out (exp, max, subtract, sum, divide), a concatenate of two branches, a
reshape/transpose chain and an opaque softmax; every few blocks the value is copied to the
other device. Each run applies the pass to a fresh clone of the parsed module, after a full
garbage collection; parsing and cloning are not timed. Reported: the median of the runs, per
module and per op, with Python's cyclic garbage collector on, and off (as `timeit` times):
the collector's passes over the large heap of a 10,000-op module are a large share.

    .venv/bin/python bench/fuse_ops.py [--runs N] [--sizes 1000 10000]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time

import xrelay
from xrelay.dialects.relay import FusedOp
from xrelay.transforms.fuse_ops import FuseOpsPass

SCOPES = {
    "cpu": '#relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">',
    "opencl": '#relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">',
}
M = "tensor<8x16xf32>"


class Writer:
    """Emits ops on the current scope; each block reads the previous block's result."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.count = 0
        self.device = "cpu"

    def op(self, text: str, result_type: str = M) -> str:
        self.count += 1
        name = f"%v{self.count}"
        head, _, types = text.rpartition(" : ")
        scope = f"se_scope = {SCOPES[self.device]}"
        if head.endswith("}"):  # the op has attributes: the scope joins them
            head = f"{head[:-1]}, {scope}}}"
        else:
            head = f"{head} {{{scope}}}"
        self.lines.append(f"  {name} = {head} : {types or result_type}")
        return name

    def copy(self, x: str) -> str:
        other = "opencl" if self.device == "cpu" else "cpu"
        self.count += 1
        name = f"%v{self.count}"
        self.lines.append(
            f"  {name} = relay.device_copy {x} {{src_se_scope = {SCOPES[self.device]}, "
            f"dst_se_scope = {SCOPES[other]}}} : {M}"
        )
        self.device = other
        return name


def dense_block(w: Writer, x: str) -> str:
    d = w.op(f"relay.nn.dense {x}, %w : ({M}, tensor<16x16xf32>) -> {M}")
    b = w.op(f"relay.nn.bias_add {d}, %b : ({M}, tensor<16xf32>) -> {M}")
    return w.op(f"relay.nn.relu {b} : {M}")


def diamond_block(w: Writer, x: str) -> str:
    e = w.op(f"relay.exp {x} : {M}")
    t = w.op(f"relay.tanh {e} : {M}")
    s = w.op(f"relay.sigmoid {e} : {M}")
    return w.op(f"relay.add {t}, {s} : ({M}, {M}) -> {M}")


def softmax_block(w: Writer, x: str) -> str:
    r = "tensor<8x1xf32>"
    m = w.op(f"relay.max {x} {{axis = array<i64: 1>, keepdims = true}} : ({M}) -> {r}")
    d = w.op(f"relay.subtract {x}, {m} : ({M}, {r}) -> {M}")
    e = w.op(f"relay.exp {d} : {M}")
    s = w.op(f"relay.sum {e} {{axis = array<i64: 1>, keepdims = true}} : ({M}) -> {r}")
    return w.op(f"relay.divide {e}, {s} : ({M}, {r}) -> {M}")


def concat_block(w: Writer, x: str) -> str:
    a = w.op(f"relay.negative {x} : {M}")
    b = w.op(f"relay.abs {x} : {M}")
    c = w.op(f"relay.concatenate {a}, {b} {{axis = 1 : i64}} : ({M}, {M}) -> tensor<8x32xf32>")
    return w.op(
        f"relay.strided_slice {c} {{begin = array<i64: 0, 8>, end = array<i64: 8, 24>}} : (tensor<8x32xf32>) -> {M}"
    )


def injective_block(w: Writer, x: str) -> str:
    r = w.op(f"relay.reshape {x} : ({M}) -> tensor<16x8xf32>")
    t = w.op(f"relay.transpose {r} : (tensor<16x8xf32>) -> {M}")
    return w.op(f"relay.multiply {t}, %b : ({M}, tensor<16xf32>) -> {M}")


def opaque_block(w: Writer, x: str) -> str:
    return w.op(f"relay.nn.softmax {x} : ({M}) -> {M}")


BLOCKS = (dense_block, diamond_block, softmax_block, concat_block, injective_block, opaque_block)


def module_text(num_ops: int) -> str:
    w = Writer()
    x = "%x"
    block = 0
    while w.count < num_ops:
        if block and block % 7 == 0:
            x = w.copy(x)
        x = BLOCKS[block % len(BLOCKS)](w, x)
        block += 1
    body = "\n".join(w.lines)
    return (
        f"func.func @main(%x: {M}, %w: tensor<16x16xf32>, %b: tensor<16xf32>) -> {M} {{\n"
        f"{body}\n  func.return {x} : {M}\n}}\n"
    ), w.count


def time_pass(text: str, runs: int, collect: bool) -> tuple[float, int]:
    parsed = xrelay.parse(text)
    ctx = xrelay.context()
    times, groups = [], 0
    for _ in range(runs):
        module = parsed.clone()
        gc.collect()
        if not collect:
            gc.disable()
        start = time.perf_counter()
        FuseOpsPass().apply(ctx, module)
        times.append(time.perf_counter() - start)
        gc.enable()
        groups = sum(isinstance(op, FusedOp) for op in module.walk())
    return statistics.median(times), groups


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    args = parser.parse_args()
    print(
        f"{'ops':>7} {'groups':>7} {'gc on':>10} {'per op':>9} {'gc off':>10} {'per op':>9}"
        f"  (fuse-ops, median of {args.runs} runs)"
    )
    for size in args.sizes:
        text, count = module_text(size)
        on, groups = time_pass(text, args.runs, collect=True)
        off, _ = time_pass(text, args.runs, collect=False)
        print(
            f"{count:>7} {groups:>7} {on * 1e3:>7.0f} ms {on / count * 1e6:>6.0f} us"
            f" {off * 1e3:>7.0f} ms {off / count * 1e6:>6.0f} us"
        )


if __name__ == "__main__":
    main()
