"""depthwise_conv: depthwise convolutions in vectors along the output rows.

Each case is a depthwise conv2d (groups = channels; with a bias and relu epilogue where said)
built for C and for OpenCL and checked against `xrelay.interpret` on random inputs, and built
for each ISA level (SSE4.2, AVX2, the native machine) against `interpret` within the error
bound of its sums: odd channel counts, rows shorter than a vector and not a multiple of it,
a 1 x 1 image, stride 2 with odd sizes, 5 x 5 and 7 x 7 windows, dilation, batch 2; NaN and
inf inputs, and a NaN or inf weight on a tap that reads the padding (the slow path).
"""

from __future__ import annotations

import numpy as np
import pytest
from isa_levels import OPENCL_PLANNED, isa_params
from test_packed_conv import check_everywhere, check_isa_level, conv_program, inputs, schedules, terms_of
from tolerances import EPS32, assert_within, sum_of_products_bound

import xrelay
from xrelay.dialects import relay
from xrelay.driver import bind_params
from xrelay.transforms.fuse_ops import FuseOpsPass
from xrelay.transforms.kernel_builder import shape_of
from xrelay.transforms.plan_devices import PlanDevicesPass
from xrelay.transforms.schedules import depthwise_conv


def pad(n: int) -> str:
    return f"padding = array<i64: {n}, {n}, {n}, {n}>"


CASES = {
    # name: data, weight, attrs, result, epilogue (bias, relu)
    "mobilenet_3x3_odd": ((1, 13, 9, 11), (13, 1, 3, 3), f"{{groups = 13 : i64, {pad(1)}}}", (1, 13, 9, 11), True),
    "stride2_odd_batch": ((2, 6, 15, 17), (6, 1, 3, 3), f"{{groups = 6 : i64, strides = array<i64: 2, 2>, {pad(1)}}}", (2, 6, 8, 9), False),
    "efficientnet_5x5_s2": ((1, 5, 14, 35), (5, 1, 5, 5), f"{{groups = 5 : i64, strides = array<i64: 2, 2>, {pad(2)}}}", (1, 5, 7, 18), True),
    "convnext_7x7": ((1, 9, 7, 7), (9, 1, 7, 7), f"{{groups = 9 : i64, {pad(3)}}}", (1, 9, 7, 7), True),
    "one_pixel": ((1, 17, 1, 1), (17, 1, 3, 3), f"{{groups = 17 : i64, {pad(1)}}}", (1, 17, 1, 1), False),
    "dilated_uneven": ((1, 3, 12, 40), (3, 1, 3, 3), "{groups = 3 : i64, dilation = array<i64: 2, 2>, padding = array<i64: 2, 1, 0, 3>}", (1, 3, 10, 40), False),
    "wide_rows": ((1, 4, 5, 70), (4, 1, 3, 3), f"{{groups = 4 : i64, {pad(1)}}}", (1, 4, 5, 70), True),
}  # fmt: skip


def program(name: str) -> str:
    return conv_program(*CASES[name], residual=False)


@pytest.mark.parametrize("name", sorted(CASES))
def test_depthwise_conv_agrees_with_interpret(name: str) -> None:
    text = program(name)
    assert schedules(text) == ["depthwise_conv"]
    assert schedules(text, OPENCL_PLANNED) == ["depthwise_conv"]
    check_everywhere(text, inputs(CASES[name], np.random.default_rng(0)))


@pytest.mark.parametrize("target", isa_params())
@pytest.mark.parametrize("name", sorted(CASES))
def test_depthwise_conv_at_every_isa_level(name: str, target: str) -> None:
    case = CASES[name]
    check_isa_level(program(name), inputs(case, np.random.default_rng(3)), target, "depthwise_conv", terms_of(case))


@pytest.mark.parametrize("target", isa_params())
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_nonfinite_weight_on_padding_and_nonfinite_inputs(bad: float, target: str) -> None:
    """A non-finite weight at the window's corner, which the border outputs read on the
    padding (interpret skips those taps: no 0 x inf there), and a NaN and an inf input."""
    case = CASES["stride2_odd_batch"]
    arrays = inputs(case, np.random.default_rng(4))
    arrays["w"][2, 0, 0, 0] = bad
    arrays["x"][1, 4, 6, 9], arrays["x"][0, 1, 14, 16] = np.nan, np.inf
    text = program("stride2_odd_batch")
    expected = check_isa_level(text, arrays, target, "depthwise_conv", terms_of(case), num_threads=2)
    assert np.isfinite(expected[0, 2, 0, :]).all()  # the first row reads the corner tap on the padding only
    check_everywhere(text, arrays)


@pytest.mark.parametrize(
    "case",
    [((1, 4, 9, 9), (8, 1, 3, 3), f"{{groups = 4 : i64, {pad(1)}}}", (1, 8, 9, 9), False),
     ((1, 2, 3, 3), (2, 1, 3, 3), "{groups = 2 : i64, dilation = array<i64: 2, 2>, padding = array<i64: 2, 0, 0, 2>}", (1, 2, 1, 1), False)],
    ids=["channel_multiplier", "tiny"],
)  # fmt: skip
def test_leaves_channel_multipliers_and_tiny_convs_to_others(case: tuple) -> None:
    """Two output channels per input channel is a grouped conv, not this schedule's; a conv
    of 18 multiply-adds (under MIN_WORK) stays scalar."""
    text = conv_program(*case, residual=False)
    assert schedules(text) != ["depthwise_conv"]
    check_everywhere(text, inputs(case, np.random.default_rng(5)))


def t(shape: tuple[int, ...]) -> str:
    return f"tensor<{'x'.join(map(str, shape))}xf32>"


# The epilogues of the mobile nets after conv + bias: MobileNetV2's relu6 (clip), MobileNetV3's
# hardswish (x * clip(x / 6 + 1/2, 0, 1), as the ONNX importer writes it) and EfficientNet's
# swish (x * sigmoid(x)).
EPILOGUES = {
    "relu6": ["%e = relay.clip %d {a_min = 0.0 : f32, a_max = 6.0 : f32} : T"],
    "hardswish": [
        "%s = relay.multiply %d, %sixth : (T, tensor<f32>) -> T",
        "%h = relay.add %s, %half : (T, tensor<f32>) -> T",
        "%k = relay.clip %h {a_min = 0.0 : f32, a_max = 1.0 : f32} : T",
        "%e = relay.multiply %d, %k : (T, T) -> T",
    ],
    "swish": ["%g = relay.sigmoid %d : T", "%e = relay.multiply %d, %g : (T, T) -> T"],
}

# name: data, kernel size, stride, epilogue (bias first)
CONSTANT_CASES = {
    "relu6_odd_channels": ((1, 19, 11, 13), 3, 1, "relu6"),
    "hardswish_stride2_batch2": ((2, 7, 15, 9), 3, 2, "hardswish"),
    "swish_5x5_small_image": ((1, 21, 7, 7), 5, 1, "swish"),
    "swish_5x5_stride2": ((1, 5, 14, 17), 5, 2, "swish"),
    # MobileNetV2's rows of 28 (flat with 8 and 16 lanes, 838 positions summed as whole vectors)
    "relu6_rows_of_28": ((1, 5, 28, 28), 3, 1, "relu6"),
    "relu6_wide_rows": ((1, 3, 5, 61), 3, 1, "relu6"),  # along each row at every level
}


def constant_program(name: str) -> tuple[str, tuple[int, ...]]:
    """@main(x, w, b) = epilogue(conv2d(x, w) + b), a depthwise conv padded to keep the image
    (or halve it at stride 2), and the weight's shape."""
    data, k, s, epilogue = CONSTANT_CASES[name]
    n, c, h, w = data
    result = (n, c, (h + 2 * (k // 2) - k) // s + 1, (w + 2 * (k // 2) - k) // s + 1)
    weight = (c, 1, k, k)
    p = k // 2
    attrs = f"{{groups = {c} : i64, strides = array<i64: {s}, {s}>, {pad(p)}}}"
    lines = [
        f"%c = relay.nn.conv2d %x, %w {attrs} : ({t(data)}, {t(weight)}) -> T",
        f"%d = relay.nn.bias_add %c, %b : (T, {t((c,))}) -> T",
        "%sixth = relay.constant {value = dense<0.1666666716337204> : tensor<f32>} : tensor<f32>",
        "%half = relay.constant {value = dense<0.5> : tensor<f32>} : tensor<f32>",
        *EPILOGUES[epilogue],
    ]
    body = "\n  ".join(line.replace("T", t(result)) for line in lines)
    params = f"%x: {t(data)}, %w: {t(weight)}, %b: {t((c,))}"
    return f"func.func @main({params}) -> {t(result)} {{\n  {body}\n  func.return %e : {t(result)}\n}}", weight


def constant_arrays(name: str, rng: np.random.Generator) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    data = CONSTANT_CASES[name][0]
    _, weight = constant_program(name)
    x = (3 * rng.standard_normal(data)).astype(np.float32)
    params = {"w": rng.standard_normal(weight).astype(np.float32), "b": rng.standard_normal(data[1]).astype(np.float32)}
    return x, params


def constant_plan(text: str, params: dict[str, np.ndarray], target: str) -> depthwise_conv.Plan | None:
    module = xrelay.parse(text)
    bind_params(module, params)
    ctx = xrelay.context()
    PlanDevicesPass(targets=(target,)).apply(ctx, module)
    FuseOpsPass().apply(ctx, module)
    groups = [op for op in module.walk() if isinstance(op, relay.FusedOp)]
    plans = [depthwise_conv.plan_of(group) for group in groups]
    (plan,) = [plan for plan in plans if plan is not None]
    return plan


@pytest.mark.parametrize("target", [*isa_params(), "opencl"])
@pytest.mark.parametrize("name", sorted(CONSTANT_CASES))
def test_constant_weights_with_the_mobile_epilogues(name: str, target: str) -> None:
    """A model's weights are constants: finite ones are checked once when the kernel is
    planned (no check per work item); the epilogue runs over the block's sums."""
    text, _ = constant_program(name)
    x, params = constant_arrays(name, np.random.default_rng(6))
    plan = constant_plan(text, params, target)
    assert plan is not None and plan.finite_weights
    _, k, _, epilogue = CONSTANT_CASES[name]
    # swish's sigmoid runs in one loop over the sums on cpu (libmvec in C; PoCL vectorises no
    # such loop: matmul_block.loops_epilogue); otherwise only on rows of at most two vectors
    lanes = plan.tile.lanes
    maths_loop = epilogue == "swish" and target != "opencl"
    assert plan.flat_epilogue == (maths_loop or shape_of(plan.conv.res)[3] <= depthwise_conv.FLAT_ROW_VECTORS * lanes)
    assert plan.summed % lanes == 0 and plan.positions <= plan.summed < plan.positions + lanes
    expected = xrelay.interpret(xrelay.parse(text), {"x": x, **params})
    got = xrelay.build(text, targets=(target,), params=params, num_threads=1).run(x)
    magnitude = xrelay.interpret(xrelay.parse(text), {"x": np.abs(x), **{k_: np.abs(v) for k_, v in params.items()}})
    # swish and hardswish multiply the sum by a function of itself: twice the sum's error, and
    # sigmoid's own rounding (a few eps of the result)
    assert_within(
        got, expected, sum_of_products_bound(magnitude, k * k + 2, c=4.0) + 4 * EPS32 * np.abs(expected), name
    )


def test_nonfinite_constant_weight_checks_its_channel_at_run_time() -> None:
    """A constant weight with an inf is not `finite_weights`: the kernel checks each
    channel's weights and computes that channel output by output, as `interpret`, with no
    0 x inf on the padding."""
    name = "relu6_odd_channels"
    text, _ = constant_program(name)
    x, params = constant_arrays(name, np.random.default_rng(7))
    params["w"][3, 0, 0, 0] = np.inf
    plan = constant_plan(text, params, "c")
    assert plan is not None and not plan.finite_weights
    expected = xrelay.interpret(xrelay.parse(text), {"x": x, **params})
    got = xrelay.build(text, targets=("c",), params=params, num_threads=1).run(x)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    assert np.isfinite(expected[0, 3, 0, 1:]).any()


def test_an_epilogue_that_reads_other_pixels_runs_per_output_row() -> None:
    """A residual add (x at each output) is not the same at every pixel of a channel: its
    epilogue stays in the loop along each output row, even on rows shorter than a vector."""
    case = CASES["mobilenet_3x3_odd"]
    text = conv_program(*case, residual=True)
    plan = constant_plan(text, {}, "c")
    assert plan is not None and not plan.flat_epilogue and not plan.finite_weights
    check_everywhere(text, inputs(case, np.random.default_rng(8)))
