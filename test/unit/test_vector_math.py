"""The maths functions of the generated kernels against numpy in float64, in ULP, on both targets.

Each function is one relay op of a tiny program (all of them in one program, so one build per
target), run through `xrelay.build` on inputs spanning ±0, subnormals, normal values from the
smallest to the largest, values near where the result overflows or underflows, ±inf and NaN,
and compared with numpy's float64 result. The error of a float32 result is counted in float32
ULPs at the reference value (the spacing of float32 there, 2^-149 among subnormals; an
infinite result where the reference is finite counts as 2^128). A NaN must come out exactly
where the reference is NaN, an infinity exactly where it is that infinity.

    .venv/bin/python test/unit/test_vector_math.py      # the README's table of max ULP
"""

from __future__ import annotations

import math
import sys
import warnings
from collections.abc import Callable
from functools import cache

import numpy as np
import pytest

import xrelay

F32 = np.finfo(np.float32)
TINY = float(np.float32(2.0**-149))  # the smallest subnormal

# The goal for every function and target (issue 11); `BOUNDS` says where a function misses it.
GOAL_ULP = 4.0


def special_values() -> np.ndarray:
    edges = [0.0, -0.0, TINY, -TINY, 1e-40, -1e-40, float(F32.tiny), -float(F32.tiny), float(F32.max), -float(F32.max)]
    edges += [np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, 2.0, 1e-7, -1e-7]
    # exp overflows above 88.72 and is subnormal below -87.34; tanh is 1 above 9.01
    edges += [88.0, 88.7, 88.72, 88.73, 89.0, -87.0, -87.4, -100.0, -103.9, -104.0, 9.0, 9.1, -9.1, 0.625, -0.625]
    return np.array(edges, dtype=np.float32)


def wide_values(count: int = 4000, seed: int = 0) -> np.ndarray:
    """Magnitudes log-uniform over all of float32 (subnormals included), both signs, plus a
    dense sample of [-12, 12] where most of the functions' shape is."""
    rng = np.random.default_rng(seed)
    magnitudes = 2.0 ** rng.uniform(-149, 128, count)
    signs = rng.choice([-1.0, 1.0], count)
    near = rng.uniform(-12, 12, count)
    return np.concatenate([special_values(), (magnitudes * signs), near]).astype(np.float32)


def exponents(count: int, seed: int = 1) -> np.ndarray:
    """Second operands of power: integers (for negative bases), halves, small and large."""
    rng = np.random.default_rng(seed)
    choices = np.array([0.0, -0.0, 1.0, -1.0, 2.0, 3.0, 0.5, -0.5, -2.0, 10.0, 1e-3, np.inf, -np.inf, np.nan])
    picked = rng.choice(choices, count)
    random = rng.uniform(-30, 30, count)
    return np.where(rng.random(count) < 0.5, picked, random).astype(np.float32)


def erf64(x: np.ndarray) -> np.ndarray:
    return np.vectorize(math.erf, otypes=[np.float64])(x)


def sigmoid64(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-x))


# op -> (the relay op, the float64 reference of it, the number of operands)
FUNCTIONS: dict[str, tuple[str, Callable[..., np.ndarray], int]] = {
    "exp": ("relay.exp", np.exp, 1),
    "log": ("relay.log", np.log, 1),
    "tanh": ("relay.tanh", np.tanh, 1),
    "sigmoid": ("relay.sigmoid", sigmoid64, 1),
    "erf": ("relay.erf", erf64, 1),
    "sqrt": ("relay.sqrt", np.sqrt, 1),
    "rsqrt": ("relay.rsqrt", lambda x: 1.0 / np.sqrt(x), 1),
    "power": ("relay.power", np.power, 2),
}

# Functions whose results are checked in ULP only where the reference is a normal float; a
# subnormal result must then be within FLT_MIN (absolute). sigmoid is lowered (in
# transforms/) as 1 / (1 + exp(-x)): below x = -88.72, exp(-x) overflows and the subnormal
# result comes out 0 (an absolute error below 1.2e-38, but up to 2^23 subnormal ULPs).
NORMAL_ONLY = {"sigmoid"}


def program(size: int) -> str:
    t = f"tensor<{size}xf32>"
    lines, results = [], []
    for index, (op, _, arity) in enumerate(FUNCTIONS.values()):
        if arity == 1:
            lines.append(f"  %r{index} = {op} %x : {t}")
        else:
            lines.append(f"  %r{index} = {op} %x, %y : ({t}, {t}) -> {t}")
        results.append(f"%r{index}")
    types = ", ".join([t] * len(results))
    body = "\n".join(lines)
    return (
        f"func.func @main(%x: {t}, %y: {t}) -> ({types}) {{\n{body}\n  func.return {', '.join(results)} : {types}\n}}"
    )


def ulp_errors(out: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """The error of each float32 result in ULPs of float32 at the float64 reference; inf
    where the result is NaN and the reference is not (or the other way), or an infinity is
    wrong."""
    out64 = out.astype(np.float64)
    nan_ok = np.isnan(out64) == np.isnan(ref)
    both_inf = np.isinf(out64) & np.isinf(ref) & (out64 == ref)
    finite_ref = np.abs(np.nan_to_num(ref, nan=0.0, posinf=0.0, neginf=0.0))
    exponent = np.frexp(np.maximum(finite_ref, float(F32.tiny)))[1] - 1  # |ref| in [2^e, 2^(e+1))
    spacing = np.ldexp(1.0, np.minimum(exponent, 127) - 23)
    # beyond FLT_MAX, float32's next value would be 2^128: infinities and references beyond
    # it count as 2^128
    clip = lambda v: np.sign(v) * np.minimum(np.abs(v), 2.0**128)  # noqa: E731
    with np.errstate(invalid="ignore"):
        error = np.abs(clip(out64) - clip(ref)) / spacing
    error = np.where(np.isnan(ref) & np.isnan(out64), 0.0, error)
    error = np.where(both_inf, 0.0, error)
    return np.where(nan_ok, np.nan_to_num(error, nan=np.inf), np.inf)


@cache
def inputs() -> tuple[np.ndarray, np.ndarray]:
    x = wide_values()
    return x, exponents(x.size)


@cache
def results(target: str) -> dict[str, np.ndarray]:
    x, y = inputs()
    exe = xrelay.build(program(x.size), targets=(target,))
    outs = exe.run(x=x, y=y)
    assert isinstance(outs, tuple)
    return dict(zip(FUNCTIONS, outs))


def references() -> dict[str, np.ndarray]:
    x, y = (v.astype(np.float64) for v in inputs())
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return {name: ref(*((x, y)[:arity])) for name, (_, ref, arity) in FUNCTIONS.items()}


def max_ulp(target: str, name: str) -> tuple[float, float, float]:
    """(max ULP error, the input x at it, y at it)."""
    ref = references()[name]
    errors = ulp_errors(results(target)[name], ref)
    if name in NORMAL_ONLY:
        errors = np.where(np.abs(ref) < float(F32.tiny), 0.0, errors)
    worst = int(np.argmax(errors))
    x, y = inputs()
    return float(errors[worst]), float(x[worst]), float(y[worst])


@pytest.mark.parametrize("target", ["c", "opencl"])
@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_ulp_error(target: str, name: str) -> None:
    error, x, y = max_ulp(target, name)
    where = f"x={x!r}" + (f", y={y!r}" if FUNCTIONS[name][2] == 2 else "")
    assert error <= GOAL_ULP, f"{name} on {target}: {error} ULP at {where}"


@pytest.mark.parametrize("target", ["c", "opencl"])
def test_subnormal_sigmoid_within_flt_min(target: str) -> None:
    ref, out = references()["sigmoid"], results(target)["sigmoid"].astype(np.float64)
    tail = np.abs(ref) < float(F32.tiny)
    assert tail.any()
    assert np.abs(out[tail] - ref[tail]).max() < float(F32.tiny)


@pytest.mark.parametrize("target", ["c", "opencl"])
def test_nan_stays_nan(target: str) -> None:
    x, _ = inputs()
    for name, out in results(target).items():
        assert np.isnan(out[np.isnan(x)]).all(), name


def table() -> str:
    rows = ["| function | C (max ULP) | OpenCL (max ULP) |", "| --- | --- | --- |"]
    for name in FUNCTIONS:
        cells = [f"{max_ulp(target, name)[0]:.2f}" for target in ("c", "opencl")]
        note = " (normal results; subnormal ones within FLT_MIN)" if name in NORMAL_ONLY else ""
        rows.append(f"| {name}{note} | {' | '.join(cells)} |")
    return "\n".join(rows)


if __name__ == "__main__":
    print(table())
    for target in ("c", "opencl"):
        for name in FUNCTIONS:
            error, x, y = max_ulp(target, name)
            print(f"{target:<7} {name:<8} {error:12.3g} ULP at x={x!r} y={y!r}", file=sys.stderr)


EDGE = """
func.func @main(%x: tensor<1x3x1xf32>, %y: tensor<1x3x1xf32>) -> tensor<1x3x1xf32> {
  %0 = relay.log %x : tensor<1x3x1xf32>
  %1 = relay.erf %0 : tensor<1x3x1xf32>
  %2 = relay.power %1, %y : (tensor<1x3x1xf32>, tensor<1x3x1xf32>) -> tensor<1x3x1xf32>
  %3 = relay.tanh %2 : tensor<1x3x1xf32>
  %4 = relay.nn.relu %3 : tensor<1x3x1xf32>
  func.return %4 : tensor<1x3x1xf32>
}
"""


@pytest.mark.parametrize("target", ["c", "opencl"])
def test_size_one_dims_and_nan_against_the_interpreter(target: str) -> None:
    x = np.array([2.5, np.nan, 7.0], np.float32).reshape(1, 3, 1)
    y = np.array([2.0, 1.0, np.nan], np.float32).reshape(1, 3, 1)
    expected = xrelay.interpret(xrelay.parse(EDGE), {"x": x, "y": y})
    out = xrelay.build(EDGE, targets=(target,)).run(x=x, y=y)
    np.testing.assert_allclose(out, expected, rtol=1e-6, equal_nan=True)
    assert np.isnan(out).sum() == 2


def test_fast_math_builds_and_loads() -> None:
    """`c -ffast-math` makes gcc call libmvec as well: the library links it, so it loads."""
    x, _ = inputs()
    finite = x[np.isfinite(x) & (np.abs(x) < 80)][:256].copy()
    text = f"""
func.func @main(%x: tensor<{finite.size}xf32>) -> tensor<{finite.size}xf32> {{
  %0 = relay.exp %x : tensor<{finite.size}xf32>
  %1 = relay.tanh %0 : tensor<{finite.size}xf32>
  func.return %1 : tensor<{finite.size}xf32>
}}"""
    out = xrelay.build(text, targets=("c -ffast-math",)).run(x=finite)
    np.testing.assert_allclose(out, np.tanh(np.exp(finite.astype(np.float64))), rtol=1e-5, atol=1e-6)
