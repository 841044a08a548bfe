"""Benchmark of plan-devices on long annotated chains (the pass alone; parsing excluded).

    .venv/bin/python bench/plan_devices.py [--runs 5] [--sizes 1000,3000,10000]

Each module is one @main with a chain of `size` primitive ops in segments of 8 that
alternate between cpu and opencl: pinned ops, `relay.on_device` and explicit
`relay.device_copy` annotations, and a constant used on both devices, so all the pass's
phases (solve, default, copies, constants) do real work.
Prints the median time of `runs` runs per size and the time per op, which should stay about
flat if the pass is linear.
"""

from __future__ import annotations

import argparse
import statistics
import time

import xrelay
from xrelay.transforms.plan_devices import PlanDevicesPass

T = "tensor<16xf32>"
DEVICES = ("cpu", "opencl")


def chain_module_text(size: int) -> str:
    """A chain of segments of 8 ops, alternating cpu and opencl: the first op of a segment is
    pinned, the last one is annotated with `on_device` (every 4th segment: an explicit
    `device_copy` to the next segment's device); constants feed every 6th op."""
    lines = [f"func.func @main(%a: {T}, %b: {T}) -> {T} {{"]
    lines.append(f"  %k = relay.constant {{value = dense<0.5> : {T}}} : {T}")
    prev, other = "%a", "%b"
    for i in range(size):
        segment, position = divmod(i, 8)
        device = DEVICES[segment % 2]
        name = f"%v{i}"
        pin = f" {{se_scope = #relay.se_scope<device = {device}>}}" if position == 0 else ""
        if i % 3 == 0:
            rhs = "%k" if i % 6 == 0 or position == 0 else other
            lines.append(f"  {name} = relay.add {prev}, {rhs}{pin} : ({T}, {T}) -> {T}")
        else:
            op = ("relay.negative", "relay.tanh")[i % 2]
            lines.append(f"  {name} = {op} {prev}{pin} : {T}")
        other, prev = prev, name
        if position == 7:
            prev = other = _segment_end(lines, name, segment)
    lines.append(f"  func.return {prev} : {T}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _segment_end(lines: list[str], name: str, segment: int) -> str:
    here = f"#relay.se_scope<device = {DEVICES[segment % 2]}>"
    there = f"#relay.se_scope<device = {DEVICES[(segment + 1) % 2]}>"
    if segment % 4 == 3:
        copy = f"{{src_se_scope = {here}, dst_se_scope = {there}}}"
        lines.append(f"  {name}_copy = relay.device_copy {name} {copy} : {T}")
        return f"{name}_copy"
    lines.append(f"  {name}_on = relay.on_device {name} {{se_scope = {here}}} : {T}")
    return f"{name}_on"


def time_pass(text: str, runs: int) -> tuple[float, int]:
    """Median seconds of the pass over `runs` freshly parsed modules, and the copies made."""
    ctx = xrelay.context()
    plan = PlanDevicesPass(targets=("c", "opencl"))
    times, copies = [], 0
    for _ in range(runs):
        module = xrelay.parse(text, ctx=ctx)
        start = time.perf_counter()
        plan.apply(ctx, module)
        times.append(time.perf_counter() - start)
        copies = sum(op.name == "relay.device_copy" for op in module.walk())
    return statistics.median(times), copies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--sizes", default="1000,3000,10000")
    args = parser.parse_args()
    print(f"{'ops':>7} {'annotations':>12} {'copies':>7} {'median s':>9} {'us/op':>7}")
    for size in map(int, args.sizes.split(",")):
        text = chain_module_text(size)
        annotations = text.count("relay.on_device") + text.count("relay.device_copy")
        seconds, copies = time_pass(text, args.runs)
        per_op = seconds / size * 1e6
        print(f"{size:>7} {annotations:>12} {copies:>7} {seconds:>9.3f} {per_op:>7.1f}")


if __name__ == "__main__":
    main()
