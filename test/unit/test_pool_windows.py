"""The pool_windows schedule (opencl max/avg pool2d, the taps of windows inside the input
unrolled, padded pools' border outputs clipped): which groups get it, and its results against `xrelay.interpret` on PoCL, with
odd sizes, dilation, unreached padding, size-1 dims, an epilogue and NaN inputs. A pool alone
with windows 2 wide at stride 2 computes its rows in vectors: rows of a multiple of the
vector and not (the last vector overlapping), 8, 4 and 2 lanes, taller windows, a row
stride of 1, dilated rows, max and average, NaN and inf.

On the cpu (rows of at least 8 outputs, in chunks of 8): against `xrelay.interpret` on C,
with and without an epilogue, rows of one chunk, of several and not a multiple of 8 (the last
chunk overlapping), 3x3 windows (an odd number of taps to pair), dilation, unreached padding,
NaN and inf; the max bit for bit the chain of the elementwise schedule (NaN, +0 and -0 in
windows); the pools it declines (7-wide rows, no interior); and AddressSanitizer.

Padded pools (max and avg, 3x3, 3x2 and 2x2 windows, strides 1 and 2, paddings 1 and
uneven, count_include_pad, ceil_mode, one interior row, wide rows in one loop) on opencl and
at every ISA level, with and without an epilogue, NaN and inf; tiny inputs without an
interior stay elementwise."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from isa_levels import OPENCL_PLANNED, isa_params
from test_c_library import run_programs_under_asan
from test_packed_conv import check_isa_level
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
    "no_interior": ("max_pool2d", (1, 2, 2, 2), (1, 2, 2, 2), "pool_size = array<i64: 3, 3>, padding = array<i64: 1, 1, 1, 1>"),
    "no_interior_row": ("avg_pool2d", (1, 2, 2, 9), (1, 2, 2, 5), f"{S2}, padding = array<i64: 1, 1, 1, 1>"),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(DECLINED))
def test_windows_without_an_interior_stay_elementwise(name: str) -> None:
    text = pool_text(*DECLINED[name])
    assert schedules(text, "opencl") == ["elementwise"]
    check_opencl(text, inputs(text, 2))


P1 = "padding = array<i64: 1, 1, 1, 1>"
PADDED = {
    # name: op, data, result, attrs (interior rows and columns, the border around them)
    "resnet_max_3x3_stride_2": ("max_pool2d", (1, 3, 24, 40), (1, 3, 12, 20), f"pool_size = array<i64: 3, 3>, strides = array<i64: 2, 2>, {P1}"),
    "avg_3x3_stride_1": ("avg_pool2d", (1, 2, 10, 19), (1, 2, 10, 19), f"pool_size = array<i64: 3, 3>, {P1}"),
    "avg_counting_padding": ("avg_pool2d", (1, 2, 17, 35), (1, 2, 9, 18), f"pool_size = array<i64: 3, 3>, strides = array<i64: 2, 2>, {P1}, count_include_pad = true"),
    "max_3x2_uneven_padding": ("max_pool2d", (1, 2, 11, 33), (1, 2, 6, 17), "pool_size = array<i64: 3, 2>, strides = array<i64: 2, 2>, padding = array<i64: 1, 0, 2, 1>"),
    "avg_3x2_uneven_padding": ("avg_pool2d", (1, 2, 11, 33), (1, 2, 6, 17), "pool_size = array<i64: 3, 2>, strides = array<i64: 2, 2>, padding = array<i64: 1, 0, 2, 1>"),
    "max_2x2_stride_1_padding": ("max_pool2d", (2, 2, 6, 20), (2, 2, 7, 21), f"pool_size = array<i64: 2, 2>, {P1}"),
    "ceil_mode_past_the_end": ("max_pool2d", (1, 2, 7, 35), (1, 2, 4, 18), f"{S2}, ceil_mode = true"),
    "one_interior_row": ("max_pool2d", (1, 2, 4, 40), (1, 2, 2, 20), f"pool_size = array<i64: 3, 3>, strides = array<i64: 2, 2>, {P1}"),
    "wide_rows_one_loop": ("max_pool2d", (1, 2, 9, 140), (1, 2, 5, 70), f"pool_size = array<i64: 3, 3>, strides = array<i64: 2, 2>, {P1}"),
    # SqueezeNet's 3x3 pools of rows 27 and 13 wide: one loop each (windows wider than 2)
    "squeezenet_27_wide_one_loop": ("max_pool2d", (1, 3, 55, 55), (1, 3, 27, 27), "pool_size = array<i64: 3, 3>, strides = array<i64: 2, 2>, ceil_mode = true"),
    "squeezenet_13_wide_one_loop": ("max_pool2d", (2, 2, 27, 27), (2, 2, 13, 13), "pool_size = array<i64: 3, 3>, strides = array<i64: 2, 2>, ceil_mode = true"),
}  # fmt: skip


def with_non_finite(arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    arrays["x"].flat[::13] = np.nan
    arrays["x"].flat[5::17] = np.inf
    arrays["x"].flat[7::19] = -np.inf
    return arrays


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
@pytest.mark.parametrize("name", sorted(PADDED))
def test_padded_windows_agree_with_the_interpreter_on_opencl(name: str) -> None:
    """Interior outputs unrolled, the border's windows clipped: with and without an
    epilogue, NaN and inf."""
    for text in (pool_text(*PADDED[name]), bare_pool_text(*PADDED[name])):
        assert schedules(text, "opencl") == ["pool_windows"]
        expected = check_opencl(text, with_non_finite(inputs(text, 8)))
        assert np.isnan(expected).any() and not np.isnan(expected).all()


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
@pytest.mark.parametrize("target", isa_params())
@pytest.mark.parametrize("name", sorted(PADDED))
def test_padded_windows_at_every_isa_level(name: str, target: str) -> None:
    """On the cpu at each ISA level (rows in chunks of the target's vector, or one loop where
    wide), with and without an epilogue; an average's sum within its bound."""
    op, data, result, attrs = PADDED[name]
    kh, kw = (3, 2) if "3x2" in name else (2, 2) if "2x2" in name or "ceil" in name else (3, 3)
    for text in (pool_text(op, data, result, attrs), bare_pool_text(op, data, result, attrs)):
        check_isa_level(text, with_non_finite(inputs(text, 9)), target, "pool_windows", kh * kw + 1, vectors=False)


def bare_pool_text(op: str, data: tuple[int, ...], result: tuple[int, ...], attrs: str) -> str:
    """The pool alone: the group's result."""
    return (
        f"func.func @main(%x: {t(data)}) -> {t(result)} {{\n"
        f"  %0 = relay.nn.{op} %x {{{attrs}}} : ({t(data)}) -> {t(result)}\n"
        f"  func.return %0 : {t(result)}\n}}"
    )


def vector_widths(text: str) -> set[int]:
    """The widths of the vectors the opencl kernel's shuffles pick (none: scalar taps), on
    the OpenCL device the plan tests state their numbers for (OPENCL_PLANNED)."""
    module = xrelay.parse(text)
    lower(module, (OPENCL_PLANNED,), "opencl", "c")
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


CPU_TAKEN = {
    # name: op, data, result, attrs
    "cnn_pool1_14_wide": ("max_pool2d", (8, 16, 28, 28), (8, 16, 14, 14), S2),
    "one_chunk_8_wide": ("max_pool2d", (1, 2, 4, 16), (1, 2, 2, 8), S2),
    "17_wide_odd_floor": ("max_pool2d", (2, 3, 7, 35), (2, 3, 3, 17), S2),
    "16_wide_avg": ("avg_pool2d", (1, 3, 4, 32), (1, 3, 2, 16), S2),
    "max_3x3_stride_2": ("max_pool2d", (1, 2, 9, 21), (1, 2, 4, 10), "pool_size = array<i64: 3, 3>, strides = array<i64: 2, 2>"),
    "max_3x3_27_wide": ("max_pool2d", (1, 3, 55, 55), (1, 3, 27, 27), "pool_size = array<i64: 3, 3>, strides = array<i64: 2, 2>, ceil_mode = true"),
    "avg_3x3_stride_1": ("avg_pool2d", (1, 4, 6, 12), (1, 4, 4, 10), "pool_size = array<i64: 3, 3>"),
    "dilated": ("max_pool2d", (1, 3, 7, 12), (1, 3, 5, 10), "pool_size = array<i64: 2, 2>, dilation = array<i64: 2, 2>"),
    "avg_counting_unreached_padding": (
        "avg_pool2d",
        (1, 2, 9, 19),
        (1, 2, 4, 9),
        "pool_size = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 1, 1>, "
        "count_include_pad = true",
    ),
    "one_row": ("max_pool2d", (1, 1, 2, 18), (1, 1, 1, 9), S2),
}  # fmt: skip


def check_c(text: str, arrays: dict[str, np.ndarray]) -> np.ndarray:
    expected = xrelay.interpret(xrelay.parse(text), arrays)
    got = xrelay.build(text, targets=("c",)).run(**arrays)
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)  # NaN where NaN
    return got


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
@pytest.mark.parametrize("name", sorted(CPU_TAKEN))
def test_cpu_rows_in_chunks_agree_with_the_interpreter(name: str) -> None:
    for text in (pool_text(*CPU_TAKEN[name]), bare_pool_text(*CPU_TAKEN[name])):
        assert schedules(text, "c") == ["pool_windows"]
        arrays = inputs(text, 5)
        arrays["x"].flat[::13] = np.nan
        arrays["x"].flat[5::17] = np.inf
        arrays["x"].flat[7::19] = -np.inf
        got = check_c(text, arrays)
        assert np.isnan(got).any() and not np.isnan(got).all()


def chained_max(x: np.ndarray, kh: int, kw: int, sh: int, sw: int) -> np.ndarray:
    """A max pool (no padding) as the elementwise schedule computes it: the taps in row-major
    order, each step `a != a ? a : (a > b ? a : b)`."""
    n, c, height, width = x.shape
    out_h, out_w = (height - kh) // sh + 1, (width - kw) // sw + 1
    taps = [x[:, :, i : i + sh * out_h : sh, j : j + sw * out_w : sw] for i in range(kh) for j in range(kw)]
    peak = taps[0]
    for tap in taps[1:]:
        peak = np.where(np.isnan(peak), peak, np.where(peak > tap, peak, tap))
    return peak


@pytest.mark.parametrize("name", ["17_wide_odd_floor", "max_3x3_stride_2", "max_3x3_27_wide"])
def test_cpu_pairs_of_taps_give_the_chain_bit_for_bit(name: str) -> None:
    """Windows of NaN, +0, -0 and ties: the tree of adjacent pairs picks the same float as
    the chain (the first NaN, else the last of the largest), signs of zero included."""
    op, data, result, attrs = CPU_TAKEN[name]
    text = bare_pool_text(op, data, result, attrs)
    assert schedules(text, "c") == ["pool_windows"]
    values = np.array([np.nan, 0.0, -0.0, 1.0, -1.0, np.inf, -np.inf], dtype=np.float32)
    x = np.random.default_rng(6).choice(values, size=data, p=[0.04, 0.3, 0.3, 0.12, 0.12, 0.06, 0.06])
    kh = 3 if "3x3" in name else 2
    expected = chained_max(x, kh, kh, 2, 2)
    got = xrelay.build(text, targets=("c",)).run(x=x)
    np.testing.assert_array_equal(got.view(np.uint32), expected.view(np.uint32))
    assert np.signbit(got[got == 0]).any() and not np.signbit(got[got == 0]).all()


CPU_DECLINED = {
    "7_wide_cnn_pool2": ("max_pool2d", (8, 32, 14, 14), (8, 32, 7, 7), S2),
    "interior_7_wide": ("max_pool2d", (1, 2, 9, 9), (1, 2, 9, 9), "pool_size = array<i64: 3, 3>, padding = array<i64: 1, 1, 1, 1>"),
    "no_interior": ("avg_pool2d", (1, 2, 2, 2), (1, 2, 2, 2), "pool_size = array<i64: 3, 3>, padding = array<i64: 1, 1, 1, 1>"),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(CPU_DECLINED))
def test_cpu_declined_pools_stay_elementwise(name: str) -> None:
    text = pool_text(*CPU_DECLINED[name])
    assert schedules(text, "c") == ["elementwise"]
    check_c(text, inputs(text, 7))


def test_cpu_rows_run_clean_under_address_sanitizer(tmp_path: Path) -> None:
    """The kernels of every cpu case, padded or not, built with -fsanitize=address and run on
    arrays of exactly their sizes: the overlapping last chunks and the taps stay in bounds."""
    cases = [CPU_TAKEN[name] for name in sorted(CPU_TAKEN)] + [PADDED[name] for name in sorted(PADDED)]
    run_programs_under_asan(tmp_path, [pool_text(*case) for case in cases])


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
@pytest.mark.parametrize("target", isa_params())
@pytest.mark.parametrize("name", ["17_wide_odd_floor", "16_wide_avg", "max_3x3_stride_2", "one_row"])
def test_cpu_rows_at_every_isa_level(name: str, target: str) -> None:
    """Rows in chunks of a vector of the target's (4, 8, at most 8 outputs), not a multiple of
    them (17, 10, 9), NaN and inf inputs; an average's sum within its bound."""
    op, data, result, attrs = CPU_TAKEN[name]
    text = bare_pool_text(op, data, result, attrs)
    arrays = inputs(text, 11)
    arrays["x"].flat[::13] = np.nan
    arrays["x"].flat[5::17] = np.inf
    kh = 3 if "3x3" in name else 2
    check_isa_level(text, arrays, target, "pool_windows", kh * kh + 1, vectors=False)


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
@pytest.mark.parametrize("target", isa_params())
def test_probed_rows_bit_for_bit(target: str) -> None:
    """SqueezeNet's first pool, scaled down (3x3 stride 2, rows 27 wide: one loop, probed for
    NaN): rows without a non-finite tap take the fast max, a row with a NaN, one with inf and
    -inf in a window (their sum NaN) and one with inf alone (sum inf) each theirs; all equal
    to `interpret` bit for bit, +0 and -0 included (the last of the largest, as the chain)."""
    pool = "pool_size = array<i64: 3, 3>, strides = array<i64: 2, 2>, ceil_mode = true"
    text = bare_pool_text("max_pool2d", (2, 3, 55, 55), (2, 3, 27, 27), pool)
    arrays = inputs(text, 10)
    x = arrays["x"]
    x[0, 0, 4, 7], x[1, 2, 40, 54] = np.nan, np.nan  # output rows 1-2 and 19-20
    x[0, 1, 20, 30], x[0, 1, 20, 31] = np.inf, -np.inf  # output rows 9-10: the sum NaN, no NaN tap
    x[1, 0, 33, 3] = np.inf  # output row 16: the sum inf
    x[0, 2, 10:13, 10:13] = 0.0
    x[0, 2, 10:13, 10:13:2] = -0.0  # output (5, 5): nine zeros, -0 and +0 taps, the last +0
    x[0, 2, 12, 12] = 0.0
    x[0, 2, 30:33, 0:3] = -np.abs(x[0, 2, 30:33, 0:3]) - 1.0
    x[0, 2, 32, 2] = -0.0  # output (15, 0): a -0 the largest, the last tap
    expected = xrelay.interpret(xrelay.parse(text), arrays)
    got = xrelay.build(text, targets=(target,)).run(**arrays)
    assert schedules(text, target) == ["pool_windows"]
    np.testing.assert_array_equal(got.view(np.uint32), expected.view(np.uint32))
    assert np.isnan(got).sum() >= 4 and np.signbit(got[0, 2, 15, 0]) and not np.signbit(got[0, 2, 5, 5])
