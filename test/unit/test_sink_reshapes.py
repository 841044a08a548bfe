"""sink-reshapes: the rewritten program computes what it did (`xrelay.interpret` before and
after); GPT-2's MLP shape (matmul + bias, reshape to [1, m, n], the tanh GELU with `power(x,
3)`, reshape back, matmul) loses both reshapes and its power, and its GELU becomes the first
matmul's epilogue (one kernel fewer), built on C at each ISA level and on OpenCL equal to the
interpreter; what the rules must not take stays."""

from __future__ import annotations

import numpy as np
import pytest
from isa_levels import isa_params
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation

import xrelay
from xrelay.dialects import relay
from xrelay.transforms.sink_reshapes import SinkReshapesPass

OPENCL = {"targets": ("c", "opencl"), "default_device": "opencl"}


def gpt2_mlp(m: int, d: int, f: int) -> str:
    """GPT-2's MLP as its export writes it (transformers' Conv1D: 2-D matmuls between
    reshapes to [1, m, .])."""
    x, h, h3, y = f"tensor<{m}x{d}xf32>", f"tensor<{m}x{f}xf32>", f"tensor<1x{m}x{f}xf32>", f"tensor<{m}x{d}xf32>"
    c = "tensor<1xf32>"
    return f"""func.func @main(%x: {x}, %w1: tensor<{d}x{f}xf32>, %b1: tensor<{f}xf32>, %w2: tensor<{f}x{d}xf32>) -> {y} {{
  %a = relay.nn.matmul %x, %w1 : ({x}, tensor<{d}x{f}xf32>) -> {h}
  %b = relay.add %a, %b1 : ({h}, tensor<{f}xf32>) -> {h}
  %r = relay.reshape %b : ({h}) -> {h3}
  %half = relay.constant {{value = dense<5.0e-01> : {c}}} : {c}
  %p0 = relay.multiply %r, %half : ({h3}, {c}) -> {h3}
  %three = relay.constant {{value = dense<3.0> : {c}}} : {c}
  %p1 = relay.power %r, %three : ({h3}, {c}) -> {h3}
  %k = relay.constant {{value = dense<4.471500e-02> : {c}}} : {c}
  %p2 = relay.multiply %p1, %k : ({h3}, {c}) -> {h3}
  %p3 = relay.add %r, %p2 : ({h3}, {h3}) -> {h3}
  %s = relay.constant {{value = dense<0.797884583> : {c}}} : {c}
  %p4 = relay.multiply %p3, %s : ({h3}, {c}) -> {h3}
  %p5 = relay.tanh %p4 : {h3}
  %one = relay.constant {{value = dense<1.0> : {c}}} : {c}
  %p6 = relay.add %p5, %one : ({h3}, {c}) -> {h3}
  %g = relay.multiply %p0, %p6 : ({h3}, {h3}) -> {h3}
  %back = relay.reshape %g : ({h3}) -> {h}
  %y = relay.nn.matmul %back, %w2 : ({h}, tensor<{f}x{d}xf32>) -> {y}
  func.return %y : {y}
}}"""


def mlp_inputs(m: int, d: int, f: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        "x": rng.standard_normal((m, d)).astype(np.float32),
        "w1": (rng.standard_normal((d, f)) / np.sqrt(d)).astype(np.float32),
        "b1": rng.standard_normal(f).astype(np.float32),
        "w2": (rng.standard_normal((f, d)) / np.sqrt(f)).astype(np.float32),
    }


def count(module: ModuleOp, kind: type[Operation]) -> int:
    return sum(isinstance(op, kind) for op in module.walk())


def rewritten(text: str) -> ModuleOp:
    module = xrelay.parse(text)
    SinkReshapesPass().apply(xrelay.context(), module)
    module.verify()
    return module


def test_gpt2s_mlp_loses_its_reshapes_and_power() -> None:
    text = gpt2_mlp(8, 16, 40)
    module = rewritten(text)
    assert count(module, relay.ReshapeOp) == 0 and count(module, relay.PowerOp) == 0
    values = mlp_inputs(8, 16, 40, 0)
    np.testing.assert_allclose(xrelay.interpret(module, values), xrelay.interpret(text, values), rtol=1e-5, atol=1e-5)
    again = str(module)
    SinkReshapesPass().apply(xrelay.context(), module)
    assert str(module) == again


def test_the_gelu_becomes_the_matmuls_epilogue() -> None:
    """Two kernels (each matmul with its epilogue), not three."""
    names = [k.name for k in xrelay.build(gpt2_mlp(32, 16, 64), targets=("c",)).kernels]
    assert len(names) == 2 and any("tanh" in name for name in names), names


@pytest.mark.parametrize("target", isa_params())
@pytest.mark.parametrize("m,d,f", [(1, 16, 40), (37, 24, 72), (64, 32, 100)])
def test_built_on_c_equals_the_interpreter(m: int, d: int, f: int, target: str) -> None:
    text, values = gpt2_mlp(m, d, f), mlp_inputs(m, d, f, 1)
    got = xrelay.build(text, targets=(target,)).run(values)
    np.testing.assert_allclose(got, xrelay.interpret(text, values), rtol=1e-4, atol=1e-4)


def test_built_on_opencl_equals_the_interpreter() -> None:
    text, values = gpt2_mlp(37, 24, 72), mlp_inputs(37, 24, 72, 2)
    got = xrelay.build(text, **OPENCL).run(values)  # type: ignore[arg-type]
    np.testing.assert_allclose(got, xrelay.interpret(text, values), rtol=1e-4, atol=1e-4)


# What the rules leave: a reshape that moves a non-unit axis, an operand that would broadcast
# against the leading axis the reshape adds, a power by another exponent.
UNTOUCHED = {
    "a real reshape": """func.func @main(%x: tensor<4x6xf32>) -> tensor<2x12xf32> {
  %r = relay.reshape %x : (tensor<4x6xf32>) -> tensor<2x12xf32>
  %y = relay.tanh %r : tensor<2x12xf32>
  func.return %y : tensor<2x12xf32>
}""",
    "a leading-axis operand": """func.func @main(%x: tensor<4x6xf32>, %z: tensor<3x4x6xf32>) -> tensor<3x4x6xf32> {
  %r = relay.reshape %x : (tensor<4x6xf32>) -> tensor<1x4x6xf32>
  %y = relay.add %r, %z : (tensor<1x4x6xf32>, tensor<3x4x6xf32>) -> tensor<3x4x6xf32>
  func.return %y : tensor<3x4x6xf32>
}""",
    "a power of 2.5": """func.func @main(%x: tensor<4x6xf32>) -> tensor<4x6xf32> {
  %c = relay.constant {value = dense<2.5> : tensor<f32>} : tensor<f32>
  %y = relay.power %x, %c : (tensor<4x6xf32>, tensor<f32>) -> tensor<4x6xf32>
  func.return %y : tensor<4x6xf32>
}""",
}


@pytest.mark.parametrize("name", UNTOUCHED)
def test_what_the_rules_do_not_take_stays(name: str) -> None:
    text = UNTOUCHED[name]
    assert str(rewritten(text)) == str(xrelay.parse(text))


def test_a_square_and_a_reshape_to_its_own_type() -> None:
    text = """func.func @main(%x: tensor<3x5xf32>) -> tensor<3x5xf32> {
  %c = relay.constant {value = dense<2.0> : tensor<f32>} : tensor<f32>
  %r = relay.reshape %x : (tensor<3x5xf32>) -> tensor<1x3x5xf32>
  %b = relay.reshape %r : (tensor<1x3x5xf32>) -> tensor<3x5xf32>
  %y = relay.power %b, %c : (tensor<3x5xf32>, tensor<f32>) -> tensor<3x5xf32>
  func.return %y : tensor<3x5xf32>
}"""
    module = rewritten(text)
    assert count(module, relay.ReshapeOp) == 0 and count(module, relay.PowerOp) == 0
    x = np.random.default_rng(3).standard_normal((3, 5)).astype(np.float32)
    np.testing.assert_allclose(xrelay.interpret(module, {"x": x}), x * x, rtol=1e-6)
