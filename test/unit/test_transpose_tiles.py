"""transpose_tiles: groups that only move data and transpose an input's last axis away,
built for C in 8 x 8 tiles and for OpenCL (PoCL) in 16 x 16 and run against
`xrelay.interpret`: the transformer's heads, sizes that are not a multiple of the tile (edge
tiles), reshapes before and after the transpose, size-1 axes, squeeze, expand_dims and a
strided_slice (the transformer's v heads cut from its combined q, k, v dense), and NaN
and inf inputs; which groups take it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from test_c_library import run_under_asan
from xdsl.dialects import func
from xdsl.dialects.builtin import StringAttr

import xrelay
from xrelay.driver import lower

Shape = tuple[int, ...]


def t(shape: Shape) -> str:
    return f"tensor<{''.join(f'{d}x' for d in shape)}f32>"


def moves(data: Shape, steps: list[tuple[str, Shape, str]]) -> str:
    """@main(%x) applying `steps` (op, result shape, attributes) in turn: one group."""
    lines, value, shape = [], "%x", data
    for number, (op, result, attrs) in enumerate(steps):
        spelled = f" {{{attrs}}}" if attrs else ""
        lines.append(f"%{number} = relay.{op} {value}{spelled} : ({t(shape)}) -> {t(result)}")
        value, shape = f"%{number}", result
    body = "\n  ".join(lines)
    return f"func.func @main(%x: {t(data)}) -> {t(shape)} {{\n  {body}\n  func.return {value} : {t(shape)}\n}}"


def transpose(result: Shape, *axes: int) -> tuple[str, Shape, str]:
    return ("transpose", result, f"axes = array<i64: {', '.join(map(str, axes))}>")


def reshape(result: Shape) -> tuple[str, Shape, str]:
    return ("reshape", result, "")


def schedules(text: str, targets: tuple[str, ...] = ("c",), default_device: str | None = None) -> list[str]:
    module = xrelay.parse(text)
    lower(module, targets, default_device, "c")
    names = [op.attributes.get("relay.schedule") for op in module.ops if isinstance(op, func.FuncOp)]
    return [name.data for name in names if isinstance(name, StringAttr)]


CASES = {
    "the transformer's v heads": ((128, 256), [reshape((128, 4, 64)), transpose((4, 64, 128), 1, 2, 0)]),
    "v heads sliced from q, k, v": (
        (128, 768),
        [("strided_slice", (128, 256), "begin = array<i64: 0, 512>, end = array<i64: 128, 768>"),
         reshape((128, 4, 64)), transpose((4, 64, 128), 1, 2, 0)],
    ),
    "a matrix, edge tiles both ways": ((13, 21), [transpose((21, 13), 1, 0)]),
    "a strided slice, edge tiles": (
        (10, 30),
        [("strided_slice", (8, 14), "begin = array<i64: 1, 3>, end = array<i64: 9, 30>, strides = array<i64: 1, 2>"),
         transpose((14, 8), 1, 0)],
    ),
    "rows of 2": ((2, 9), [transpose((9, 2), 1, 0)]),
    "a reshape after": ((6, 20), [transpose((20, 6), 1, 0), reshape((4, 5, 6))]),
    "size-1 axes": ((1, 10, 1, 12), [transpose((1, 12, 10, 1), 0, 3, 1, 2), reshape((12, 10))]),
    "squeeze and expand_dims": (
        (1, 9, 11),
        [("squeeze", (9, 11), "axis = array<i64: 0>"), transpose((11, 9), 1, 0),
         ("expand_dims", (1, 11, 9), "axis = 0 : i64")],
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("device", ["cpu", "opencl"])
def test_copies_agree_with_the_interpreter(case: str, device: str) -> None:
    data, steps = CASES[case]
    text = moves(data, steps)
    targets = ("c",) if device == "cpu" else ("c", "opencl")
    assert schedules(text, targets, device) == ["transpose_tiles"]
    x = np.random.default_rng(0).standard_normal(data).astype(np.float32)
    x.flat[::7] = np.nan
    x.flat[3::11] = np.inf
    got = xrelay.build(text, targets=targets, default_device=device).run(x)
    np.testing.assert_array_equal(got, xrelay.interpret(text, {"x": x}))


def test_opencl_tiles_are_16_wide() -> None:
    """A 24 x 40 matrix transposed: 3 x 2 tiles of 16 on opencl, the last ones cut (its
    NDRange lists the innermost axis first)."""
    text = moves((24, 40), [transpose((40, 24), 1, 0)])
    exe = xrelay.build(text, targets=("c", "opencl"), default_device="opencl")
    (kernel,) = exe.kernels
    assert kernel.global_size == (2, 3)
    x = np.random.default_rng(2).standard_normal((24, 40)).astype(np.float32)
    np.testing.assert_array_equal(exe.run(x), xrelay.interpret(text, {"x": x}))


def test_kept_last_axes_keep_a_work_item_per_element() -> None:
    """Where the input's last axis stays last (the q and k heads), no tiles."""
    q_heads = moves((128, 256), [reshape((128, 4, 64)), transpose((4, 128, 64), 1, 0, 2)])
    assert schedules(q_heads) == ["elementwise"]
    assert schedules(q_heads, ("c", "opencl"), "opencl") == ["elementwise"]


def test_a_copy_with_arithmetic_is_not_tiled() -> None:
    text = moves((8, 9), [transpose((9, 8), 1, 0)]).replace(
        "  func.return %0", "  %1 = relay.exp %0 : tensor<9x8xf32>\n  func.return %1"
    )
    assert schedules(text) == ["elementwise"]


def test_every_case_runs_clean_under_address_sanitizer(tmp_path: Path) -> None:
    """The edge tiles' clamped bounds stay inside arrays of exactly the kernels' sizes."""
    lowered = []
    for number, (data, steps) in enumerate(CASES.values()):
        module = xrelay.parse(moves(data, steps))
        lower(module, ("c",), None, "c")
        lowered.append(str(module).replace("@fused_", f"@case{number}_fused_"))
    result = run_under_asan(tmp_path, lowered)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.startswith("ran ")
