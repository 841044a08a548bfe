"""The pool_windows schedule (opencl max/avg pool2d whose windows lie inside the input, taps
unrolled): which groups get it, and its results against `xrelay.interpret` on PoCL, with
odd sizes, dilation, unreached padding, size-1 dims, an epilogue and NaN inputs. A pool alone
with windows 2 wide at stride 2 computes its rows in vectors: rows of a multiple of the
vector and not (the last vector overlapping), 8, 4 and 2 lanes, taller windows, a row
stride of 1, dilated rows, max and average, NaN and inf."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects import func, vector

import xrelay
from xrelay.driver import lower


def t(shape: tuple[int, ...]) -> str:
    return f"tensor<{'x'.join(map(str, shape))}xf32>"


def pool_text(op: str, data: tuple[int, ...], result: tuple[int, ...], attrs: str) -> str:
    """`relu(pool(x) + b)`, b a bias per channel: the pool, then an epilogue."""
    channels = (result[1], 1, 1)
    return (
        f"func.func @main(%x: {t(data)}, %b: {t(channels)}) -> {t(result)} {{\n"
        f"  %0 = relay.nn.{op} %x {{{attrs}}} : ({t(data)}) -> {t(result)}\n"
        f"  %1 = relay.add %0, %b : ({t(result)}, {t(channels)}) -> {t(result)}\n"
        f"  %2 = relay.nn.relu %1 : {t(result)}\n"
        f"  func.return %2 : {t(result)}\n}}"
    )


def schedules(text: str, target: str) -> list[str]:
    module = xrelay.parse(text)
    lower(module, (target,), target if target == "opencl" else None, "c")
    return [
        op.attributes["relay.schedule"].data  # type: ignore[union-attr]
        for op in module.ops
        if isinstance(op, func.FuncOp) and "relay.schedule" in op.attributes
    ]


def inputs(text: str, seed: int) -> dict[str, np.ndarray]:
    main = next(op for op in xrelay.parse(text).ops if isinstance(op, func.FuncOp))
    rng = np.random.default_rng(seed)
    return {a.name_hint or "": rng.standard_normal(tuple(a.type.get_shape())).astype(np.float32) for a in main.args}


def check_opencl(text: str, arrays: dict[str, np.ndarray]) -> np.ndarray:
    expected = xrelay.interpret(xrelay.parse(text), arrays)
    got = xrelay.build(text, targets=("c", "opencl"), default_device="opencl").run(**arrays)
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)  # NaN where NaN
    return expected


S2 = "pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>"

TAKEN = {
    # name: op, data, result, attrs
    "cnn_max_2x2": ("max_pool2d", (8, 16, 28, 28), (8, 16, 14, 14), S2),
    "odd_sizes_floor": ("max_pool2d", (2, 3, 7, 9), (2, 3, 3, 4), S2),
    "avg_3x3_stride_1": ("avg_pool2d", (1, 4, 6, 5), (1, 4, 4, 3), "pool_size = array<i64: 3, 3>"),
    "avg_counting_unreached_padding": (
        "avg_pool2d",
        (1, 2, 9, 9),
        (1, 2, 4, 4),
        "pool_size = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 1, 1>, "
        "count_include_pad = true",
    ),
    "dilated": ("max_pool2d", (1, 3, 7, 7), (1, 3, 5, 5), "pool_size = array<i64: 2, 2>, dilation = array<i64: 2, 2>"),
    "size_one_dims": ("max_pool2d", (1, 1, 5, 1), (1, 1, 4, 1), "pool_size = array<i64: 2, 1>"),
}


@pytest.mark.parametrize("name", sorted(TAKEN))
def test_pool_windows_agrees_with_the_interpreter(name: str) -> None:
    text = pool_text(*TAKEN[name])
    assert schedules(text, "opencl") == ["pool_windows"]
    check_opencl(text, inputs(text, 0))


def test_nan_inputs_stay_in_their_windows() -> None:
    for name in ("odd_sizes_floor", "avg_3x3_stride_1"):
        text = pool_text(*TAKEN[name])
        arrays = inputs(text, 1)
        arrays["x"][0, 1, 2, 3] = np.nan
        arrays["x"][0, 0, 0, 0] = -np.inf
        expected = check_opencl(text, arrays)
        assert np.isnan(expected).any() and not np.isnan(expected).all()


DECLINED = {
    "reaches_padding": ("max_pool2d", (1, 2, 6, 6), (1, 2, 6, 6), "pool_size = array<i64: 3, 3>, padding = array<i64: 1, 1, 1, 1>"),
    "ceil_mode_past_the_end": ("max_pool2d", (1, 2, 7, 7), (1, 2, 4, 4), f"{S2}, ceil_mode = true"),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(DECLINED))
def test_windows_that_leave_the_input_stay_elementwise(name: str) -> None:
    text = pool_text(*DECLINED[name])
    assert schedules(text, "opencl") == ["elementwise"]
    check_opencl(text, inputs(text, 2))


def test_cpu_pools_keep_their_schedule() -> None:
    assert schedules(pool_text(*TAKEN["cnn_max_2x2"]), "c") == ["elementwise"]


def bare_pool_text(op: str, data: tuple[int, ...], result: tuple[int, ...], attrs: str) -> str:
    """The pool alone: the group's result."""
    return (
        f"func.func @main(%x: {t(data)}) -> {t(result)} {{\n"
        f"  %0 = relay.nn.{op} %x {{{attrs}}} : ({t(data)}) -> {t(result)}\n"
        f"  func.return %0 : {t(result)}\n}}"
    )


def vector_widths(text: str) -> set[int]:
    """The widths of the vectors the opencl kernel's shuffles pick (none: scalar taps)."""
    module = xrelay.parse(text)
    lower(module, ("opencl",), "opencl", "c")
    shuffles = [op for op in module.walk() if isinstance(op, vector.ShuffleOp)]
    return {op.result.type.get_shape()[0] for op in shuffles}  # type: ignore[union-attr]


VECTOR_ROWS = {
    # name: (op, data, result, attrs), lanes
    "cnn_pool1_14_wide": (("max_pool2d", (8, 16, 28, 28), (8, 16, 14, 14), S2), 8),
    "cnn_pool2_7_wide": (("max_pool2d", (8, 32, 14, 14), (8, 32, 7, 7), S2), 4),
    "a_multiple_of_8": (("max_pool2d", (1, 2, 4, 33), (1, 2, 2, 16), S2), 8),
    "3_wide": (("avg_pool2d", (2, 3, 7, 7), (2, 3, 3, 3), S2), 2),
    "2_wide": (("max_pool2d", (1, 1, 2, 4), (1, 1, 1, 2), S2), 2),
    "avg_2x2": (("avg_pool2d", (2, 5, 10, 22), (2, 5, 5, 11), S2), 8),
    "3_tall_row_stride_1": (
        ("max_pool2d", (1, 2, 6, 10), (1, 2, 4, 5), "pool_size = array<i64: 3, 2>, strides = array<i64: 1, 2>"),
        4,
    ),
    "dilated_rows": (
        (
            "avg_pool2d",
            (1, 2, 9, 18),
            (1, 2, 4, 9),
            "pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>, dilation = array<i64: 2, 1>",
        ),
        8,
    ),
}


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
@pytest.mark.parametrize("name", sorted(VECTOR_ROWS))
def test_rows_in_vectors_agree_with_the_interpreter(name: str) -> None:
    case, lanes = VECTOR_ROWS[name]
    text = bare_pool_text(*case)
    assert schedules(text, "opencl") == ["pool_windows"]
    assert vector_widths(text) == {lanes}
    arrays = inputs(text, 3)
    arrays["x"].flat[::13] = np.nan
    arrays["x"].flat[5::17] = np.inf
    arrays["x"].flat[7::19] = -np.inf
    expected = check_opencl(text, arrays)
    assert np.isnan(expected).any() and not np.isnan(expected).all()


def test_rows_stay_scalar_with_an_epilogue_a_row_of_one_or_other_windows() -> None:
    one_wide = ("max_pool2d", (1, 2, 4, 3), (1, 2, 2, 1), S2)
    three_wide = ("max_pool2d", (1, 2, 7, 9), (1, 2, 3, 4), "pool_size = array<i64: 3, 3>, strides = array<i64: 2, 2>")
    for text in (pool_text(*TAKEN["cnn_max_2x2"]), bare_pool_text(*one_wide), bare_pool_text(*three_wide)):
        assert schedules(text, "opencl") == ["pool_windows"]
        assert vector_widths(text) == set()
        check_opencl(text, inputs(text, 4))
