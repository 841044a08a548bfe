"""The ops added for imported models (matmul, layer_norm, leaky_relu, pad, take), built with
`xrelay.build` for c and for opencl and run against `xrelay.interpret` on random inputs, with
size-1 axes and NaN among the inputs. Each op's scalar meaning at an index is
`scalar_ops.GroupEmitter`'s; the schedules that take them are checked by name."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import cast

import numpy as np
import pytest
from xdsl.dialects.builtin import StringAttr

import xrelay
from xrelay.transforms.convert_relay_to_loops import ConvertRelayToLoopsPass
from xrelay.transforms.fuse_ops import FuseOpsPass
from xrelay.transforms.plan_devices import PlanDevicesPass
from xrelay.transforms.scalar_ops import reshape_groups

Shape = tuple[int, ...]
TARGETS = ("c", "opencl")


def t(shape: Sequence[int]) -> str:
    return "tensor<" + "".join(f"{d}x" for d in shape) + "f32>"


def program(params: dict[str, Shape], body: str, result: Shape) -> str:
    """@main over `params`; `body` is its ops, the last one's result %r is returned."""
    args = ", ".join(f"%{name}: {t(shape)}" for name, shape in params.items())
    lines = "\n  ".join(line.strip() for line in body.strip().splitlines())
    return f"func.func @main({args}) -> {t(result)} {{\n  {lines}\n  func.return %r : {t(result)}\n}}"


def inputs_for(params: dict[str, Shape], seed: int, nan: bool) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    arrays = {name: rng.standard_normal(shape).astype(np.float32) for name, shape in params.items()}
    if nan:
        first = next(iter(arrays.values()))
        if first.size:
            first.flat[rng.integers(first.size)] = np.nan
    return arrays


def check_built(params: dict[str, Shape], body: str, result: Shape, rtol: float = 1e-4, selects: bool = False) -> None:
    """Built for each target alone, on two random inputs (the second with a NaN, which must
    reach the result unless the op `selects` elements), equal to the interpreter (NaN where
    it has NaN)."""
    text = program(params, body, result)
    for target in TARGETS:
        exe = xrelay.build(text, targets=(target,))
        for seed, nan in ((0, False), (1, True)):
            inputs = inputs_for(params, seed, nan)
            expected = xrelay.interpret(text, inputs)
            got = exe.run(inputs)
            assert got.shape == expected.shape
            np.testing.assert_allclose(got, expected, rtol=rtol, atol=1e-5, err_msg=f"target {target}")
            if nan and not selects:
                assert np.isnan(expected).any() or not math.prod(result), "the NaN input reaches no output"


def schedules_of(text: str, target: str = "c") -> list[str]:
    """The schedule of each kernel of `text`, placed on `target` and fused."""
    module = xrelay.parse(text)
    device = "cpu" if target == "c" else "opencl"
    PlanDevicesPass(targets=(target,), default_device=device).apply(xrelay.context(), module)
    FuseOpsPass().apply(xrelay.context(), module)
    ConvertRelayToLoopsPass().apply(xrelay.context(), module)
    return [
        cast(StringAttr, op.attributes["relay.schedule"]).data
        for op in module.walk()
        if "relay.schedule" in op.attributes
    ]


# --- relay.nn.matmul --------------------------------------------------------------------------


def matmul_shape(a: Shape, b: Shape) -> Shape:
    return (*np.broadcast_shapes(a[:-2], b[:-2]), a[-2], b[-1])


MATMULS = [
    ((3, 5), (5, 4)),
    ((1, 1), (1, 1)),
    ((2, 3, 5), (5, 4)),
    ((3, 5), (2, 5, 1)),
    ((2, 1, 3, 5), (4, 5, 7)),
    ((1, 3, 8), (2, 8, 8)),
    ((2, 6, 260), (260, 8)),
]


@pytest.mark.parametrize("a, b", MATMULS)
def test_matmul_add_tanh(a: Shape, b: Shape) -> None:
    out = matmul_shape(a, b)
    body = f"""
    %m = relay.nn.matmul %a, %b : ({t(a)}, {t(b)}) -> {t(out)}
    %s = relay.add %m, %c : ({t(out)}, {t(out[-1:])}) -> {t(out)}
    %r = relay.tanh %s : {t(out)}
    """
    check_built({"a": a, "b": b, "c": out[-1:]}, body, out)


@pytest.mark.parametrize(
    "a, b, target, schedule",
    [
        ((2, 8, 300), (300, 8), "c", "matmul_rows"),
        ((64, 300), (300, 64), "c", "packed_matmul"),  # enough work: its [k, n] rhs packed into panels
        ((3, 5), (5, 3), "c", "matmul_rows"),
        ((2, 8, 300), (300, 8), "opencl", "matmul_block"),
        ((16, 20), (20, 12), "c", "transposed_rows"),
        ((3, 5), (5, 3), "opencl", "elementwise"),
    ],
)
def test_matmul_takes_the_dot_product_schedules(a: Shape, b: Shape, target: str, schedule: str) -> None:
    out = matmul_shape(a, b)
    text = program({"a": a, "b": b}, f"%r = relay.nn.matmul %a, %b : ({t(a)}, {t(b)}) -> {t(out)}", out)
    assert schedules_of(text, target) == [schedule]
    check_built({"a": a, "b": b}, f"%r = relay.nn.matmul %a, %b : ({t(a)}, {t(b)}) -> {t(out)}", out)


# --- relay.nn.layer_norm ----------------------------------------------------------------------

LAYER_NORMS = [
    ((4, 8), -1, ""),
    ((2, 3, 5), 1, "{axis = 1 : i64, epsilon = 1.0e-3 : f32}"),
    ((3, 1), -1, ""),
    ((1, 1, 6), 0, "{axis = 0 : i64}"),
    ((2, 128), 1, "{axis = -1 : i64, epsilon = 0.0 : f32}"),
]


@pytest.mark.parametrize("shape, axis, attrs", LAYER_NORMS)
def test_layer_norm_of_a_residual_add(shape: Shape, axis: int, attrs: str) -> None:
    inner = shape[axis:]
    body = f"""
    %s = relay.add %x, %y : ({t(shape)}, {t(shape)}) -> {t(shape)}
    %r = relay.nn.layer_norm %s, %g, %b {attrs} : ({t(shape)}, {t(inner)}, {t(inner)}) -> {t(shape)}
    """
    check_built({"x": shape, "y": shape, "g": inner, "b": inner}, body, shape)


def test_layer_norm_computes_a_row_per_work_item() -> None:
    """The residual add fuses into the layer_norm (CommReduce takes elementwise producers),
    and the group gets a work item per row; its consumer is a kernel of its own."""
    shape, inner = (6, 32), (32,)
    body = f"""
    %s = relay.add %x, %y : ({t(shape)}, {t(shape)}) -> {t(shape)}
    %n = relay.nn.layer_norm %s, %g, %b : ({t(shape)}, {t(inner)}, {t(inner)}) -> {t(shape)}
    %r = relay.tanh %n : {t(shape)}
    """
    params = {"x": shape, "y": shape, "g": inner, "b": inner}
    for target in TARGETS:
        assert schedules_of(program(params, body, shape), target) == ["layer_norm_rows", "elementwise"]
    check_built(params, body, shape)


# --- relay.nn.leaky_relu ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "shape, attrs", [((3, 1, 5), "{alpha = 0.1 : f32}"), ((1,), ""), ((7, 300), "{alpha = -2.0 : f32}")]
)
def test_leaky_relu_after_a_subtract(shape: Shape, attrs: str) -> None:
    body = f"""
    %d = relay.subtract %x, %y : ({t(shape)}, {t(shape)}) -> {t(shape)}
    %r = relay.nn.leaky_relu %d {attrs} : {t(shape)}
    """
    check_built({"x": shape, "y": shape}, body, shape)


def test_leaky_relu_keeps_zeros_infinities_and_nan() -> None:
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -3.0, 2.0, 1e-40], np.float32)
    text = program({"x": x.shape}, f"%r = relay.nn.leaky_relu %x {{alpha = 0.5 : f32}} : {t(x.shape)}", x.shape)
    expected = xrelay.interpret(text, {"x": x})
    np.testing.assert_array_equal(expected, np.where(x > 0, x, x * np.float32(0.5)))
    for target in TARGETS:
        got = xrelay.build(text, targets=(target,)).run(x)
        np.testing.assert_array_equal(got, expected)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(expected))


# --- relay.nn.pad -----------------------------------------------------------------------------

PADS = [
    ((3, 4), (1, 2, 0, 3), "constant"),
    ((2, 1, 5), (0, 1, 2, 2, 4, 0), "constant"),
    ((3, 4), (2, 1, 3, 3), "edge"),
    ((1, 5), (0, 0, 4, 4), "reflect"),
    ((4, 3), (3, 2, 1, 2), "reflect"),
    ((5, 6), (-1, 2, 1, -2), "constant"),
    ((5, 6), (-2, 3, 2, -1), "reflect"),
    ((5, 6), (1, -3, -1, 2), "edge"),
    ((1,), (2, 3), "edge"),
    ((3, 4), (5, 1, 2, 9), "wrap"),
    ((2, 5), (-1, 1, 3, -2), "wrap"),
]


def pad_shape(shape: Shape, width: Sequence[int]) -> Shape:
    return tuple(d + width[2 * i] + width[2 * i + 1] for i, d in enumerate(shape))


@pytest.mark.parametrize("shape, width, mode", PADS)
def test_pad_of_an_exp(shape: Shape, width: tuple[int, ...], mode: str) -> None:
    out = pad_shape(shape, width)
    attrs = f"pad_width = array<i64: {', '.join(map(str, width))}>, pad_mode = {mode!r}, pad_value = -1.5 : f32"
    attrs = attrs.replace("'", '"')
    body = f"""
    %e = relay.exp %x : {t(shape)}
    %r = relay.nn.pad %e {{{attrs}}} : ({t(shape)}) -> {t(out)}
    """
    check_built({"x": shape}, body, out, selects=True)


def test_pad_of_an_empty_axis_is_the_pad_value() -> None:
    text = program(
        {"x": (0, 2)},
        f"%r = relay.nn.pad %x {{pad_width = array<i64: 1, 1, 0, 0>}} : ({t((0, 2))}) -> {t((2, 2))}",
        (2, 2),
    )
    x = np.zeros((0, 2), np.float32)
    np.testing.assert_array_equal(xrelay.interpret(text, {"x": x}), np.zeros((2, 2)))
    for target in TARGETS:
        np.testing.assert_array_equal(xrelay.build(text, targets=(target,)).run(x), np.zeros((2, 2)))


# --- relay.take -------------------------------------------------------------------------------


def dense_i64(values: np.ndarray) -> str:
    shape = "".join(f"{d}x" for d in values.shape)
    body = np.array2string(values, separator=", ") if values.ndim else str(int(values))
    return f"dense<{body}> : tensor<{shape}i64>"


TAKES = [
    ((5, 4), np.array([0, 1, 2, 3], np.int64), 0),
    ((5, 4), np.array([[0, 1, 2], [3, -1, 0]], np.int64), 1),
    ((3, 1, 6), np.array(-1, np.int64), -1),
    ((2, 7), np.array([6, 4, 2, 0, 5, 5, 5, -7, 1], np.int64), 1),
    ((4, 1), np.array([[0]], np.int64), 1),
]


@pytest.mark.parametrize("shape, indices, axis", TAKES)
def test_take_of_a_sigmoid(shape: Shape, indices: np.ndarray, axis: int) -> None:
    a = axis % len(shape)
    out = (*shape[:a], *indices.shape, *shape[a + 1 :])
    body = f"""
    %s = relay.sigmoid %x : {t(shape)}
    %r = relay.take %s {{indices = {dense_i64(indices)}, axis = {axis} : i64}} : ({t(shape)}) -> {t(out)}
    """
    check_built({"x": shape}, body, out, selects=True)
    expected = np.take(np.arange(math.prod(shape), dtype=np.float32).reshape(shape), indices, axis=axis)
    text = program({"x": shape}, body.replace("relay.sigmoid", "relay.abs"), out)
    got = xrelay.build(text, targets=("c",)).run(np.arange(math.prod(shape), dtype=np.float32).reshape(shape))
    np.testing.assert_array_equal(got, expected)


def test_layer_norm_of_equal_values_is_beta_whatever_the_summation_order() -> None:
    """A row of equal values (a broadcast) has variance 0 and normalises to exactly beta on
    both targets (OpenCL sums in vector lanes, C in order, numpy pairwise)."""
    shape, inner = (3, 100), (100,)
    body = f"""
    %x = relay.broadcast_to %c : ({t((3, 1))}) -> {t(shape)}
    %r = relay.nn.layer_norm %x, %g, %b : ({t(shape)}, {t(inner)}, {t(inner)}) -> {t(shape)}
    """
    text = program({"c": (3, 1), "g": inner, "b": inner}, body, shape)
    inputs = {"c": np.array([[0.1], [1e-3], [-7.3]], np.float32), **inputs_for({"g": inner, "b": inner}, 0, False)}
    expected = xrelay.interpret(text, inputs)
    np.testing.assert_array_equal(expected, np.broadcast_to(inputs["b"], shape))
    for target in TARGETS:
        np.testing.assert_array_equal(xrelay.build(text, targets=(target,)).run(inputs), expected)


# --- pooling: dilation, ceil_mode, count_include_pad ------------------------------------------

POOLS = [
    ("relay.nn.max_pool2d", (1, 2, 7, 7), "pool_size = array<i64: 3, 3>, strides = array<i64: 2, 2>, ceil_mode = true"),
    ("relay.nn.max_pool2d", (2, 1, 6, 5), "pool_size = array<i64: 2, 3>, dilation = array<i64: 2, 1>, padding = array<i64: 1, 2, 1, 0>"),
    ("relay.nn.avg_pool2d", (1, 3, 5, 6), "pool_size = array<i64: 3, 2>, strides = array<i64: 2, 3>, padding = array<i64: 1, 1, 2, 1>, ceil_mode = true, count_include_pad = true"),
    ("relay.nn.avg_pool2d", (1, 1, 8, 8), "pool_size = array<i64: 2, 2>, dilation = array<i64: 3, 2>, strides = array<i64: 2, 2>, ceil_mode = true"),
    ("relay.nn.avg_pool2d", (1, 2, 4, 4), "pool_size = array<i64: 3, 3>, padding = array<i64: 1, 1, 1, 1>, count_include_pad = true"),
]  # fmt: skip


def pool_axis(size: int, before: int, after: int, k: int, s: int, d: int, ceil: bool) -> int:
    """ONNX's output size: rounded up in ceil mode, less a last window starting in the padding after."""
    span = d * (k - 1) + 1
    out = -(-(size + before + after - span) // s) + 1 if ceil else (size + before + after - span) // s + 1
    return out - 1 if ceil and (out - 1) * s >= size + before else out


@pytest.mark.parametrize("op, shape, attrs", POOLS)
def test_pool2d_with_the_onnx_attributes(op: str, shape: Shape, attrs: str) -> None:
    def ints(name: str, default: tuple[int, ...]) -> tuple[int, ...]:
        found = re.search(name + r" = array<i64: ([^>]*)>", attrs)
        return tuple(int(v) for v in found.group(1).split(", ")) if found else default

    (kh, kw), (sh, sw), (dh, dw) = ints("pool_size", ()), ints("strides", (1, 1)), ints("dilation", (1, 1))
    top, left, bottom, right = ints("padding", (0, 0, 0, 0))
    ceil = "ceil_mode = true" in attrs
    out = (
        *shape[:2],
        pool_axis(shape[2], top, bottom, kh, sh, dh, ceil),
        pool_axis(shape[3], left, right, kw, sw, dw, ceil),
    )
    check_built({"x": shape}, f"%r = {op} %x {{{attrs}}} : ({t(shape)}) -> {t(out)}", out, selects=True)


# --- relay.reshape: linearised and delinearised per group of axes ------------------------------


@pytest.mark.parametrize(
    "src,dst,groups",
    [
        ((128, 256), (128, 4, 64), [((0, 1), (0, 1)), ((1, 2), (1, 3))]),
        ((4, 128, 64), (4, 8192), [((0, 1), (0, 1)), ((1, 3), (1, 2))]),
        ((2, 3), (3, 2), [((0, 2), (0, 2))]),
        ((1, 6), (2, 3, 1), [((0, 1), (0, 0)), ((1, 2), (0, 3))]),
        ((4, 1, 1, 3), (4, 3, 1), [((0, 3), (0, 1)), ((3, 4), (1, 3))]),
        ((), (1, 1), [((0, 0), (0, 2))]),
        ((2, 0), (0, 5), [((0, 2), (0, 2))]),
    ],
)
def test_reshape_groups(src: Shape, dst: Shape, groups: list[tuple[tuple[int, int], tuple[int, int]]]) -> None:
    assert reshape_groups(src, dst) == groups


@pytest.mark.parametrize(
    "src,dst",
    [((6, 20), (6, 4, 5)), ((3, 4, 5), (3, 20)), ((2, 3, 4), (4, 3, 2)), ((1, 6, 1), (2, 1, 3)), ((5, 1), (1, 5))],
)
def test_reshape_by_groups_agrees_with_the_interpreter(src: Shape, dst: Shape) -> None:
    """A reshape feeding a transpose (so the group reads the input at reshaped indices)."""
    axes = ", ".join(str(a) for a in reversed(range(len(dst))))
    body = f"""
        %y = relay.reshape %x : ({t(src)}) -> {t(dst)}
        %r = relay.transpose %y {{axes = array<i64: {axes}>}} : ({t(dst)}) -> {t(dst[::-1])}"""
    check_built({"x": src}, body, dst[::-1])
