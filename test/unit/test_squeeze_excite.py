"""The squeeze-excite block of MobileNetV3 and EfficientNet: global average pool, a 1 x 1 conv
down (bias, relu), a 1 x 1 conv up (bias, hardsigmoid as the ONNX importer writes it), and the
image multiplied by the result, with constant weights as a model has them.

Its 1 x 1 convs see one pixel: the elementwise schedule computes each output's sum over the
input channels, which must be the innermost loop (the C target's vectorised reduction). Each
case is checked against `xrelay.interpret` within the error bound of its sums at every ISA
level and on OpenCL: channel counts not a multiple of a vector, batch 2.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from isa_levels import isa_params
from tolerances import EPS32, assert_within, sum_of_products_bound

import xrelay


def t(shape: tuple[int, ...]) -> str:
    return f"tensor<{'x'.join(map(str, shape))}xf32>"


def se_block(n: int, c: int, squeezed: int, size: int) -> str:
    image, pixel, small = (n, c, size, size), (n, c, 1, 1), (n, squeezed, 1, 1)
    lines = [
        f"%p = relay.nn.global_avg_pool2d %x : ({t(image)}) -> {t(pixel)}",
        f"%c1 = relay.nn.conv2d %p, %w1 {{}} : ({t(pixel)}, {t((squeezed, c, 1, 1))}) -> {t(small)}",
        f"%d1 = relay.nn.bias_add %c1, %b1 : ({t(small)}, {t((squeezed,))}) -> {t(small)}",
        f"%r1 = relay.nn.relu %d1 : {t(small)}",
        f"%c2 = relay.nn.conv2d %r1, %w2 {{}} : ({t(small)}, {t((c, squeezed, 1, 1))}) -> {t(pixel)}",
        f"%d2 = relay.nn.bias_add %c2, %b2 : ({t(pixel)}, {t((c,))}) -> {t(pixel)}",
        f"%s = relay.multiply %d2, %sixth : ({t(pixel)}, tensor<f32>) -> {t(pixel)}",
        f"%h = relay.add %s, %half : ({t(pixel)}, tensor<f32>) -> {t(pixel)}",
        f"%g = relay.clip %h {{a_min = 0.0 : f32, a_max = 1.0 : f32}} : {t(pixel)}",
        f"%e = relay.multiply %x, %g : ({t(image)}, {t(pixel)}) -> {t(image)}",
    ]
    params = f"%x: {t(image)}, %w1: {t((squeezed, c, 1, 1))}, %b1: {t((squeezed,))}, %w2: {t((c, squeezed, 1, 1))}, %b2: {t((c,))}"
    constants = [
        "%sixth = relay.constant {value = dense<0.1666666716337204> : tensor<f32>} : tensor<f32>",
        "%half = relay.constant {value = dense<0.5> : tensor<f32>} : tensor<f32>",
    ]
    body = "\n  ".join([*constants, *lines])
    return f"func.func @main({params}) -> {t(image)} {{\n  {body}\n  func.return %e : {t(image)}\n}}"


CASES = {"mobilenet_v3": (1, 40, 10, 7), "odd_batch2": (2, 19, 5, 3)}


@pytest.mark.parametrize("target", [*isa_params(), "opencl"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_squeeze_excite_agrees_with_interpret(name: str, target: str) -> None:
    n, c, squeezed, size = CASES[name]
    text = se_block(n, c, squeezed, size)
    rng = np.random.default_rng(9)
    x = rng.standard_normal((n, c, size, size)).astype(np.float32)
    params = {
        "w1": rng.standard_normal((squeezed, c, 1, 1)).astype(np.float32),
        "b1": rng.standard_normal(squeezed).astype(np.float32),
        "w2": rng.standard_normal((c, squeezed, 1, 1)).astype(np.float32),
        "b2": rng.standard_normal(c).astype(np.float32),
    }
    built = xrelay.build(text, targets=(target,), params=params, num_threads=1)
    got = built.run(x)
    expected = xrelay.interpret(xrelay.parse(text), {"x": x, **params})
    magnitude = xrelay.interpret(xrelay.parse(text), {"x": np.abs(x), **{k: np.abs(v) for k, v in params.items()}})
    terms = size * size + c + squeezed + 4
    assert_within(got, expected, sum_of_products_bound(magnitude, terms) + 4 * EPS32 * np.abs(expected), name)


def test_one_pixel_convs_sum_channels_innermost() -> None:
    """The C kernel of a 1 x 1 conv of one pixel sums the input channels in its innermost loop,
    under the reduction pragma, with no loops over the (single) tap around it."""
    text = se_block(1, 40, 10, 7)
    built = xrelay.build(text, targets=("c",), num_threads=1)
    sources = [k.source for k in built.kernels if "conv2d" in k.source]
    assert sources
    for source in sources:
        for kernel in re.split(r"\nvoid ", source)[1:]:
            if "conv2d" not in kernel.split("(")[0]:
                continue
            loop = re.search(
                r"#pragma omp simd reduction\(\+:\w+\)\s*#endif\s*for \(long \w+ = 0; \w+ < (\d+);", kernel
            )
            assert loop is not None and loop.group(1) in ("40", "10"), kernel
