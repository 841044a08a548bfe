"""The C kernels of padded pools: pool_windows (interior outputs unrolled and vectorised,
border outputs clipped) against the elementwise schedule (every output's window clipped to
the input, what main used for a pool whose windows reach the padding), at 1 thread, timed
interleaved in one run (medians of --rounds rounds of --calls calls), for the host's C and
`c -march=x86-64-v3`; both kernels' outputs checked against `xrelay.interpret`.

    OMP_NUM_THREADS=1 .venv/bin/python bench/pool_windows.py [--rounds N] [--calls N]
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable

import numpy as np
from timing import interleaved_medians
from xdsl.dialects.builtin import StringAttr

import xrelay
from xrelay.driver import lower
from xrelay.runtime.c_library import build_c
from xrelay.targets.kernels import kernel_sources
from xrelay.transforms import convert_relay_to_loops
from xrelay.transforms.convert_relay_to_loops import SCHEDULE_ATTR

TARGETS = ("c", "c -march=x86-64-v3")


def t(shape: tuple[int, ...]) -> str:
    return f"tensor<{'x'.join(map(str, shape))}xf32>"


def pool(op: str, data: tuple[int, ...], result: tuple[int, ...], attrs: str) -> str:
    return (
        f"func.func @main(%x: {t(data)}) -> {t(result)} {{\n"
        f"  %0 = relay.nn.{op} %x {{{attrs}}} : ({t(data)}) -> {t(result)}\n"
        f"  func.return %0 : {t(result)}\n}}"
    )


P3S2 = "pool_size = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>"
CASES = {
    "resnet18_max_3x3_s2_p1": pool("max_pool2d", (1, 64, 112, 112), (1, 64, 56, 56), P3S2),
    "avg_3x3_s1_p1": pool(
        "avg_pool2d", (1, 64, 56, 56), (1, 64, 56, 56), "pool_size = array<i64: 3, 3>, padding = array<i64: 1, 1, 1, 1>"
    ),
}


def kernel(text: str, target: str, schedule: str) -> Callable[..., object]:
    """`text`'s one C kernel for `target` at 1 thread, lowered with `schedule` (pool_windows,
    or elementwise: pool_windows left off the list)."""
    saved = convert_relay_to_loops.SCHEDULES
    if schedule == "elementwise":
        convert_relay_to_loops.SCHEDULES = tuple(s for s in saved if s.name != "pool_windows")
    try:
        module = xrelay.parse(text)
        lower(module, (target,), None, target)
    finally:
        convert_relay_to_loops.SCHEDULES = saved
    got = [op.attributes[SCHEDULE_ATTR] for op in module.ops if SCHEDULE_ATTR in op.attributes]
    assert got == [StringAttr(schedule)], (schedule, got)
    (source,) = kernel_sources(module)
    return build_c([source], num_threads=1)[source.name].function


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--calls", type=int, default=20)
    args = parser.parse_args()
    print(f"load {os.getloadavg()[0]:.1f}; us per call, medians of {args.rounds} rounds of {args.calls} calls")
    for name, text in CASES.items():
        main_fn = next(op for op in xrelay.parse(text).ops if hasattr(op, "args"))
        shapes = [tuple(a.type.get_shape()) for a in main_fn.args]  # type: ignore[attr-defined]
        x = np.random.default_rng(0).standard_normal(shapes[0]).astype(np.float32)
        expected = xrelay.interpret(xrelay.parse(text), {"x": x})
        fns: dict[str, Callable[[], object]] = {}
        for target in TARGETS:
            for schedule in ("elementwise", "pool_windows"):
                fn, out = kernel(text, target, schedule), np.zeros(expected.shape, np.float32)
                fn(x.ctypes.data, out.ctypes.data)
                np.testing.assert_allclose(out, expected, rtol=1e-6, atol=1e-6)
                fns[f"{target} {schedule}"] = lambda fn=fn, out=out, x=x: [
                    fn(x.ctypes.data, out.ctypes.data) for _ in range(args.calls)
                ]
        medians = interleaved_medians(fns, args.rounds)
        for target in TARGETS:
            before, after = (medians[f"{target} {s}"] / args.calls * 1e6 for s in ("elementwise", "pool_windows"))
            print(f"{name:26} {target:20} elementwise {before:8.1f}  pool_windows {after:7.1f}  {before / after:5.1f}x")


if __name__ == "__main__":
    main()
