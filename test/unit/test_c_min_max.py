"""The C target's max and min (`targets/c.py`: `maximum_expr`, `minimum_expr`): against a
constant, one comparison instead of two selects, with the values of the general form kept
exactly: a NaN on either side wins, else `a > b ? a : b` (numpy's maximum: a tie of -0 and +0
gives the second). Checked bit for bit (sign of zero included) against numpy at every ISA
level on NaN, infinities, signed zeros, subnormals and ordinary values, the constant on
either side, in loops gcc vectorises (the input is longer than a vector).
"""

from __future__ import annotations

import numpy as np
import pytest
from isa_levels import isa_params

import xrelay
from xrelay.targets.c import maximum_expr, minimum_expr

SPECIAL = np.array([-0.0, 0.0, np.nan, np.inf, -np.inf, 5, 7, -3, 1e-40, -1e-40, -0.5, 0.5, 6, -1], np.float32)


def program(op: str, constant: float, n: int, constant_first: bool) -> str:
    t = f"tensor<{n}xf32>"
    name = "maximum" if op == "max" else "minimum"
    operands = f"%c, %x : (tensor<f32>, {t})" if constant_first else f"%x, %c : ({t}, tensor<f32>)"
    return (
        f"func.func @main(%x: {t}) -> {t} {{\n"
        f"  %c = relay.constant {{value = dense<{constant!r}> : tensor<f32>}} : tensor<f32>\n"
        f"  %r = relay.{name} {operands} -> {t}\n"
        f"  func.return %r : {t}\n}}"
    )


@pytest.mark.parametrize("target", isa_params())
@pytest.mark.parametrize("constant", [0.0, -0.0, 6.0, -1.0, 3.5])
@pytest.mark.parametrize("first", [False, True])
@pytest.mark.parametrize("op", ["max", "min"])
def test_max_and_min_with_a_constant_bit_for_bit(op: str, first: bool, constant: float, target: str) -> None:
    x = np.tile(SPECIAL, 5)  # 70 values: whole vectors and a remainder at every width
    got = np.asarray(xrelay.build(program(op, constant, x.size, first), targets=(target,)).run(x))
    c = np.full_like(x, constant)
    want = (np.maximum if op == "max" else np.minimum)(*((c, x) if first else (x, c)))
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    finite = ~np.isnan(want)
    np.testing.assert_array_equal(got[finite], want[finite])
    np.testing.assert_array_equal(np.signbit(got[finite]), np.signbit(want[finite]))


def general(op: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The general form's values: `a != a ? a : (a > b ? a : b)` (or `<`)."""
    better = a > b if op == "max" else a < b
    return np.where(np.isnan(a), a, np.where(better, a, b)).astype(np.float32)


@pytest.mark.parametrize("target", isa_params())
@pytest.mark.parametrize("bounds", [(0.0, 6.0), (-1.0, 0.0), (-0.0, 2.0), (-3.0, -0.0)])
def test_relu_and_clip_against_literals_bit_for_bit(bounds: tuple[float, float], target: str) -> None:
    """relu and clip lower to max and min against literals (the one-comparison forms): their
    values are the general form's, bit for bit."""
    x = np.tile(SPECIAL, 5)
    t = f"tensor<{x.size}xf32>"
    low, high = bounds
    text = (
        f"func.func @main(%x: {t}) -> ({t}, {t}) {{\n"
        f"  %r = relay.nn.relu %x : {t}\n"
        f"  %c = relay.clip %x {{a_min = {low!r} : f32, a_max = {high!r} : f32}} : {t}\n"
        f"  func.return %r, %c : {t}, {t}\n}}"
    )
    relu, clip = (np.asarray(v) for v in xrelay.build(text, targets=(target,)).run(x))
    sources = "".join(k.source for k in xrelay.build(text, targets=(target,)).kernels)
    assert "(0.0f >= " in sources  # relu's one-comparison form
    c = np.full_like(x, low), np.full_like(x, high)
    for got, want in (
        (relu, general("max", x, np.zeros_like(x))),
        (clip, general("min", general("max", x, c[0]), c[1])),
    ):
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        finite = ~np.isnan(want)
        np.testing.assert_array_equal(got[finite], want[finite])
        np.testing.assert_array_equal(np.signbit(got[finite]), np.signbit(want[finite]))


def test_forms() -> None:
    """One comparison against a constant (`>=` or `<=` when it is second, so that a tie gives
    it), two selects between two variables and against NaN."""
    assert maximum_expr("v1", "0.0f") == "(0.0f >= v1 ? 0.0f : v1)"
    assert maximum_expr("6.0f", "v1") == "(6.0f > v1 ? 6.0f : v1)"
    assert minimum_expr("v1", "6.0f") == "(6.0f <= v1 ? 6.0f : v1)"
    assert minimum_expr("(-0.0f)", "v1") == "((-0.0f) < v1 ? (-0.0f) : v1)"
    assert minimum_expr("v1", "(-0.0f)") == "((-0.0f) <= v1 ? (-0.0f) : v1)"
    assert maximum_expr("v1", "v2") == "v1 != v1 ? v1 : (v1 > v2 ? v1 : v2)"
    assert maximum_expr("v1", "NAN") == "v1 != v1 ? v1 : (v1 > NAN ? v1 : NAN)"
