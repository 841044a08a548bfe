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
