"""fuse-layer-norm: the rewritten program computes what the ops it replaces compute
(`xrelay.interpret` before and after), and `xrelay.build` (whose pipeline runs it) agrees with
the interpreter on C and OpenCL: both forms of the normalisation, one and two normalised
axes, rows of equal values, and rows with NaN, inf and -inf."""

from __future__ import annotations

import numpy as np
import pytest
from bench_models import models

import xrelay
from xrelay.dialects import relay
from xrelay.transforms.fuse_layer_norm import FuseLayerNormPass

Shape = tuple[int, ...]
TARGETS = {"c": {"targets": ("c",)}, "opencl": {"targets": ("c", "opencl"), "default_device": "opencl"}}


def t(shape: Shape) -> str:
    return f"tensor<{''.join(f'{d}x' for d in shape)}f32>"


def norm(shape: Shape, axes: int, form: str) -> str:
    """A layer norm of `x + r` over the last `axes` axes: `rsqrt` (x * rsqrt(var + eps)) or
    `sqrt` (x / sqrt(var + eps))."""
    rows = shape[:-axes] + (1,) * axes
    inner = shape[-axes:]
    axis = ", ".join(str(len(shape) - a) for a in range(axes, 0, -1))
    x, s, g = t(shape), t(rows), t(inner)
    scale = (
        f"%r2 = relay.rsqrt %e : {s}\n  %n = relay.multiply %c, %r2 : ({x}, {s}) -> {x}"
        if form == "rsqrt"
        else f"%r2 = relay.sqrt %e : {s}\n  %n = relay.divide %c, %r2 : ({x}, {s}) -> {x}"
    )
    return f"""func.func @main(%x: {x}, %r: {x}, %gamma: {g}, %beta: {g}) -> {x} {{
  %h = relay.add %x, %r : ({x}, {x}) -> {x}
  %m = relay.mean %h {{axis = array<i64: {axis}>, keepdims = true}} : ({x}) -> {s}
  %c = relay.subtract %h, %m : ({x}, {s}) -> {x}
  %q = relay.multiply %c, %c : ({x}, {x}) -> {x}
  %v = relay.mean %q {{axis = array<i64: {axis}>, keepdims = true}} : ({x}) -> {s}
  %eps = relay.constant {{value = dense<1.0e-05> : tensor<f32>}} : tensor<f32>
  %e = relay.add %v, %eps : ({s}, tensor<f32>) -> {s}
  {scale}
  %y = relay.multiply %n, %gamma : ({x}, {g}) -> {x}
  %z = relay.add %y, %beta : ({x}, {g}) -> {x}
  func.return %z : {x}
}}"""


def inputs(shape: Shape, axes: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(np.float32)
    rows = x.reshape(-1, int(np.prod(shape[-axes:])))
    rows[0, :] = 0.75  # a row of equal values: variance 0, the output beta
    if len(rows) > 4:
        rows[1, min(3, rows.shape[1] - 1)] = np.nan
        rows[2, 0] = np.inf
        rows[3, -1] = -np.inf
    inner = shape[-axes:]
    return {
        "x": x,
        "r": rng.standard_normal(shape).astype(np.float32),
        "gamma": (1 + 0.1 * rng.standard_normal(inner)).astype(np.float32),
        "beta": (0.1 * rng.standard_normal(inner)).astype(np.float32),
    }


CASES = [((6, 40), 1, "rsqrt"), ((6, 40), 1, "sqrt"), ((3, 4, 5, 6), 2, "rsqrt"), ((5, 1), 1, "sqrt")]


@pytest.mark.parametrize("shape,axes,form", CASES)
def test_the_rewrite_computes_what_the_ops_did(shape: Shape, axes: int, form: str) -> None:
    text = norm(shape, axes, form)
    module = xrelay.parse(text)
    FuseLayerNormPass().apply(xrelay.context(), module)
    module.verify()
    assert sum(isinstance(op, relay.LayerNormOp) for op in module.walk()) == 1
    assert not any(isinstance(op, (relay.MeanOp, relay.RsqrtOp, relay.SqrtOp)) for op in module.walk())
    values = inputs(shape, axes, 0)
    np.testing.assert_allclose(
        xrelay.interpret(module, values), xrelay.interpret(text, values), rtol=1e-4, atol=1e-5, equal_nan=True
    )


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("shape,axes,form", CASES)
def test_built_programs_agree_with_the_interpreter(shape: Shape, axes: int, form: str, target: str) -> None:
    text = norm(shape, axes, form)
    values = inputs(shape, axes, 1)
    got = xrelay.build(text, **TARGETS[target]).run(values)  # type: ignore[arg-type]
    np.testing.assert_allclose(got, xrelay.interpret(text, values), rtol=1e-4, atol=1e-5, equal_nan=True)


def test_the_transformers_two_norms_become_two_kernels() -> None:
    """bench/models.py's transformer: each norm was four kernels (mean, subtract, square and
    mean, the rest), now one."""
    module = xrelay.parse(models.transformer_relay(seq=8, d_model=16, heads=2, ffn=32))
    FuseLayerNormPass().apply(xrelay.context(), module)
    assert sum(isinstance(op, relay.LayerNormOp) for op in module.walk()) == 2
    assert not any(isinstance(op, relay.MeanOp) for op in module.walk())
