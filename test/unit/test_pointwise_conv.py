"""pointwise_conv: 1 x 1 convolutions as packed matmuls over the NCHW image.

Each case is a 1 x 1 conv2d (with a bias, relu and residual epilogue where said) built for C
and for OpenCL and checked against `xrelay.interpret` on random inputs, and built for each
ISA level (SSE4.2, AVX2, the native machine) against `interpret` within the error bound of
its sums: output channels and pixels that are not whole blocks or tiles (odd counts, not a
multiple of the vector width), stride 2 with odd sizes, batch 2 at strides 1 and 2, a dot product deeper than
one k-block; and the convs it leaves to others (a 1 x 1 image, padding, groups).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import numpy as np
import pytest
from isa_levels import OPENCL_PLANNED, assembly, isa_params
from test_depthwise_conv import EPILOGUES, t
from test_packed_conv import check_everywhere, check_isa_level, conv_program, inputs, schedules, terms_of
from tolerances import EPS32, assert_within, sum_of_products_bound

import xrelay
from xrelay.runtime.c_library import C_BASE_FLAGS, c_flags
from xrelay.transforms.schedules import pointwise_conv

S2 = "strides = array<i64: 2, 2>"

CASES = {
    # name: data, weight, attrs, result, epilogue (bias, + x when the shapes allow, relu)
    "odd_channels": ((1, 37, 15, 13), (35, 37, 1, 1), "{}", (1, 35, 15, 13), False),
    "residual_epilogue": ((1, 32, 14, 14), (32, 32, 1, 1), "{}", (1, 32, 14, 14), True),
    "stride2_odd_batch": ((2, 48, 15, 17), (40, 48, 1, 1), f"{{{S2}}}", (2, 40, 8, 9), False),
    "deep_k_blocks": ((1, 1100, 4, 5), (17, 1100, 1, 1), "{}", (1, 17, 4, 5), False),
    "squeezenet_last": ((1, 64, 13, 13), (100, 64, 1, 1), "{}", (1, 100, 13, 13), False),
    # stride 1 reads pixel p of a plane as [n, k, 0, p]: the second image, 299 pixels (whole
    # blocks packed unclamped, then a last block clamped at the edge), blocks spanning rows
    "batch2_odd_pixels": ((2, 40, 13, 23), (36, 40, 1, 1), "{}", (2, 36, 13, 23), True),
}  # fmt: skip


@pytest.fixture(autouse=True)
def without_packed_conv_hand_off(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """The cases below exercise this schedule: on AVX-512, packed_conv would take the strided
    and small ones (`leaves_to_packed_conv`, tested on its own in the hand-off test)."""
    if "hand_off" not in request.node.name:
        monkeypatch.setattr(pointwise_conv, "PACKED_MIN_REGISTERS", 1 << 20)


def program(name: str) -> str:
    data, weight, attrs, result, epilogue = CASES[name]
    return conv_program(data, weight, attrs, result, epilogue, residual=data == result)


@pytest.mark.parametrize("name", sorted(CASES))
def test_pointwise_conv_agrees_with_interpret(name: str) -> None:
    text = program(name)
    assert schedules(text) == ["pointwise_conv"]
    assert schedules(text, OPENCL_PLANNED) == ["pointwise_conv"]
    check_everywhere(text, inputs(CASES[name], np.random.default_rng(0)))


@pytest.mark.parametrize("target", isa_params())
@pytest.mark.parametrize("name", sorted(CASES))
def test_pointwise_conv_at_every_isa_level(name: str, target: str) -> None:
    case = CASES[name]
    check_isa_level(program(name), inputs(case, np.random.default_rng(3)), target, "pointwise_conv", terms_of(case))


def test_nan_and_inf_inputs_stay_where_they_are_read() -> None:
    case = CASES["stride2_odd_batch"]
    arrays = inputs(case, np.random.default_rng(1))
    arrays["x"][0, 3, 4, 6] = np.nan  # read by output (0, :, 2, 3)
    arrays["x"][1, 5, 1, 1] = np.inf  # between the stride's pixels: read by none
    arrays["x"][1, 7, 14, 16] = -np.inf  # the last pixel read, output (1, :, 7, 8)
    expected = check_everywhere(program("stride2_odd_batch"), arrays)
    assert np.isnan(expected[0, :, 2, 3]).all() and np.isfinite(expected[1]).sum() == 40 * 72 - 40


@pytest.mark.parametrize(
    ("data", "weight", "attrs", "result"),
    [((1, 512, 1, 1), (600, 512, 1, 1), "{}", (1, 600, 1, 1)),
     ((1, 32, 14, 14), (32, 32, 1, 1), "{padding = array<i64: 1, 1, 1, 1>}", (1, 32, 16, 16)),
     ((1, 32, 14, 14), (32, 16, 1, 1), "{groups = 2 : i64}", (1, 32, 14, 14))],
)  # fmt: skip
def test_leaves_one_pixel_padded_and_grouped_convs_to_others(
    data: tuple[int, ...], weight: tuple[int, ...], attrs: str, result: tuple[int, ...]
) -> None:
    text = conv_program(data, weight, attrs, result)
    assert schedules(text) != ["pointwise_conv"]
    check_everywhere(text, inputs((data, weight, attrs, result, False), np.random.default_rng(2)))


# name: data, output channels, stride, epilogue after the bias (test_depthwise_conv.EPILOGUES)
MOBILE_CASES = {
    "hardswish_7x7": ((1, 80, 7, 7), 67, 1, "hardswish"),
    "swish_odd_batch2": ((2, 72, 9, 11), 40, 1, "swish"),
    "relu6_stride2": ((1, 48, 29, 27), 37, 2, "relu6"),
    "relu6_wide_rows": ((1, 64, 3, 40), 40, 1, "relu6"),
    "relu6_mobilenet_v2_expansion": ((1, 160, 7, 7), 960, 1, "relu6"),  # AVX2's 6 x 2 tile: no stack sum
}


def mobile_program(name: str) -> str:
    data, out_c, s, epilogue = MOBILE_CASES[name]
    n, c, h, w = data
    result = (n, out_c, (h - 1) // s + 1, (w - 1) // s + 1)
    lines = [
        f"%c = relay.nn.conv2d %x, %w {{strides = array<i64: {s}, {s}>}} : ({t(data)}, {t((out_c, c, 1, 1))}) -> T",
        f"%d = relay.nn.bias_add %c, %b : (T, {t((out_c,))}) -> T",
        "%sixth = relay.constant {value = dense<0.1666666716337204> : tensor<f32>} : tensor<f32>",
        "%half = relay.constant {value = dense<0.5> : tensor<f32>} : tensor<f32>",
        *EPILOGUES[epilogue],
    ]
    body = "\n  ".join(line.replace("T", t(result)) for line in lines)
    params = f"%x: {t(data)}, %w: {t((out_c, c, 1, 1))}, %b: {t((out_c,))}"
    return f"func.func @main({params}) -> {t(result)} {{\n  {body}\n  func.return %e : {t(result)}\n}}"


@pytest.mark.parametrize("target", [*isa_params(), "opencl"])
@pytest.mark.parametrize("name", sorted(MOBILE_CASES))
def test_mobile_epilogues_with_constant_weights(name: str, target: str) -> None:
    """Bias and relu6, hardswish or swish after the conv, the weights constants: the epilogue
    in one loop over each channel's sums where rows are at most two vectors long (7 x 7 and
    9 x 11 at every level), else along each output row (40 wide with SSE's and AVX2's lanes)."""
    data, out_c, _, _ = MOBILE_CASES[name]
    text = mobile_program(name)
    rng = np.random.default_rng(10)
    x = (2 * rng.standard_normal(data)).astype(np.float32)
    params = {
        "w": rng.standard_normal((out_c, data[1], 1, 1)).astype(np.float32),
        "b": rng.standard_normal(out_c).astype(np.float32),
    }
    assert schedules(text) == ["pointwise_conv"]
    built = xrelay.build(text, targets=(target,), params=params, num_threads=1)
    expected = xrelay.interpret(xrelay.parse(text), {"x": x, **params})
    magnitude = xrelay.interpret(xrelay.parse(text), {"x": np.abs(x), **{k: np.abs(v) for k, v in params.items()}})
    bound = sum_of_products_bound(magnitude, data[1] + 2, c=4.0) + 4 * EPS32 * np.abs(expected)
    assert_within(built.run(x), expected, bound, name)


def test_avx2_tile_keeps_its_sums_in_registers(tmp_path: Path) -> None:
    """MobileNetV2's 160 -> 960 expansion at 7 x 7 with AVX2: the 6 x 2 tile's 12 sums, 2 rhs
    vectors and a broadcast take 15 of the 16 ymm registers. With the broadcast as each FMA's
    first operand gcc 12 kept one sum in a stack slot (an FMA on `N(%rsp)` and a store every
    step: 0.30 ms, twice the kernel's time with the sums in registers); the rhs vector first,
    it keeps them all in registers (micro_kernel.accumulate)."""
    target = "c -march=x86-64-v3"
    text = mobile_program("relu6_mobilenet_v2_expansion")
    rng = np.random.default_rng(11)
    params = {"w": rng.standard_normal((960, 160, 1, 1)).astype(np.float32), "b": np.zeros(960, np.float32)}
    (source,) = [k.source for k in xrelay.build(text, targets=(target,), params=params, num_threads=1).kernels]
    asm = assembly(source, target, tmp_path)
    fmas = [line for line in asm.splitlines() if re.search(r"\bvfmadd\d+ps\b", line)]
    assert len(fmas) == 12
    assert not [line for line in fmas if re.search(r"-?\d*\(%rsp\)", line)]


def test_avx2_hardswish_epilogue_vectorises(tmp_path: Path) -> None:
    """The hardswish epilogue (x * min(max(x/6 + 1/2, 0), 1)) of a 1 x 1 conv for AVX2: with
    partial redundancy elimination on, gcc 12 moved the multiply into the clamp's arms and left
    the loop a branch per element ("control flow in loop"; targets/c.py NO_PRE)."""
    target = "c -march=x86-64-v3"
    data, out_c, _, _ = MOBILE_CASES["hardswish_7x7"]
    rng = np.random.default_rng(12)
    params = {
        "w": rng.standard_normal((out_c, data[1], 1, 1)).astype(np.float32),
        "b": rng.standard_normal(out_c).astype(np.float32),
    }
    built = xrelay.build(mobile_program("hardswish_7x7"), targets=(target,), params=params, num_threads=1)
    (source,) = [k.source for k in built.kernels]
    path = tmp_path / "kernel.c"
    path.write_text(source)
    flags = [f for f in C_BASE_FLAGS if f not in ("-shared", "-fPIC")]
    report = subprocess.run(
        ["gcc", *flags, *c_flags(target), "-fopt-info-vec-all", "-c", "-o", str(tmp_path / "k.o"), str(path)],
        capture_output=True,
        text=True,
        check=True,
    ).stderr
    assert "loop vectorized" in report
    assert "control flow in loop" not in report


@pytest.mark.parametrize(
    ("data", "weight", "attrs", "result", "native"),
    [((2, 48, 15, 17), (40, 48, 1, 1), f"{{{S2}}}", (2, 40, 8, 9), "packed_conv"),  # strided
     ((1, 96, 7, 7), (64, 96, 1, 1), "{}", (1, 64, 7, 7), "packed_conv"),  # ResNet's last stage, narrowing
     ((1, 336, 13, 13), (400, 336, 1, 1), "{}", (1, 400, 13, 13), "packed_conv"),  # SqueezeNet's last: deep
     ((1, 64, 7, 7), (96, 64, 1, 1), "{}", (1, 96, 7, 7), "pointwise_conv"),  # a mobile net's expansion
     ((1, 32, 28, 28), (48, 32, 1, 1), "{}", (1, 48, 28, 28), "pointwise_conv"),  # 784 pixels
     ((1, 1100, 4, 5), (17, 1100, 1, 1), "{}", (1, 17, 4, 5), "pointwise_conv")],  # packed_conv declines
)  # fmt: skip
def test_hand_off_of_strided_and_small_images_to_packed_conv(
    data: tuple[int, ...], weight: tuple[int, ...], attrs: str, result: tuple[int, ...], native: str
) -> None:
    """On AVX-512 (32 registers) packed_conv takes strided 1 x 1 convs and those under 28 x 28
    pixels, unless they widen with at most WIDENING_MAX_DEPTH input channels; AVX2's and SSE's
    kernels and opencl's keep pointwise_conv. Both agree with interpret."""
    text = conv_program(data, weight, attrs, result)
    assert schedules(text) == [native]
    assert schedules(text, "c -march=x86-64-v3") == ["pointwise_conv"]
    assert schedules(text, OPENCL_PLANNED) == ["pointwise_conv"]
    check_everywhere(text, inputs((data, weight, attrs, result, False), np.random.default_rng(6)))
