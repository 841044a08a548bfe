"""xrelay.Builder: inferred result types, text that opt-tool reads back, placement, errors,
and built programs against the interpreter on C and OpenCL."""

from __future__ import annotations

import os

os.environ.setdefault("POCL_DEVICES", "pthread pthread")

import numpy as np
import pytest
from xdsl.ir import SSAValue

import xrelay
from xrelay.frontend.builder import parse_scope, value_name


def small_cnn(place: bool = True) -> tuple[xrelay.Builder, SSAValue]:
    rng = np.random.default_rng(0)
    b = xrelay.Builder()
    x = b.input("x", (2, 1, 6, 6))
    y = b.nn.relu(b.nn.conv2d(x, rng.standard_normal((4, 1, 3, 3)), padding=(1, 1)))
    y = b.nn.max_pool2d(y, (2, 2))
    if place:
        y = b.on_device(y, "opencl")
    y = b.nn.dense(b.reshape(y, (2, -1)), rng.standard_normal((5, 36)))
    return b, b.nn.softmax(b.add(y, 0.5))


def test_result_types_are_inferred() -> None:
    b, y = small_cnn()
    module = b.finish(y)
    text = str(module)
    assert "-> tensor<2x4x6x6xf32>" in text
    assert "relay.nn.max_pool2d" in text and "-> tensor<2x4x3x3xf32>" in text
    assert "relay.on_device" in text and "#relay.se_scope<device = opencl>" in text
    assert "func.return" in text and "-> tensor<2x5xf32>" in text


def test_text_is_what_opt_tool_reads() -> None:
    b, y = small_cnn()
    module = b.finish(y)
    assert str(xrelay.parse(str(module))) == str(module)


@pytest.mark.parametrize("targets", [("c",), ("c", "opencl")])
def test_built_program_matches_interpreter(targets: tuple[str, ...]) -> None:
    b, y = small_cnn(place="opencl" in targets)
    module = b.finish(y, b.sum(y, axis=1, keepdims=True))
    x = np.random.default_rng(1).standard_normal((2, 1, 6, 6)).astype(np.float32)
    expected = xrelay.interpret(module, {"x": x})
    got = xrelay.build(module, targets=targets, default_device=targets[-1]).run(x)
    for e, g in zip(expected, got):
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)


def test_numpy_names_and_scalars() -> None:
    b = xrelay.Builder()
    x = b.input("x", (2, 3))
    y = b.transpose(b.multiply(x, 2.0), (1, 0))
    z = b.concatenate([b.strided_slice(y, [0], [2]), b.expand_dims(b.mean(y, 0), 0)], axis=0)
    module = b.finish(b.squeeze(b.broadcast_to(b.reshape(z, (3, 1, 2)), (3, 1, 2)), [1]))
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = (a * 2).T
    expected = np.concatenate([t[:2], t.mean(0, keepdims=True)])
    np.testing.assert_allclose(xrelay.interpret(module, {"x": a}), expected)


def test_wrong_shapes_raise_verify_error_naming_the_op() -> None:
    b = xrelay.Builder()
    x = b.input("x", (2, 3))
    with pytest.raises(xrelay.VerifyError, match=r"'relay.add' on \(tensor<2x3xf32>, tensor<4xf32>\).*broadcast"):
        b.add(x, np.ones(4))
    with pytest.raises(xrelay.VerifyError, match="relay.reshape.*cannot reshape"):
        b.reshape(x, (4, 2))


def test_scopes() -> None:
    assert parse_scope("opencl:1").id == 1 and parse_scope("cpu").device == "cpu"
    full = parse_scope('#relay.se_scope<device = opencl, id = 1, target = "opencl">')
    assert full.target == "opencl"
    with pytest.raises(xrelay.UsageError, match="unknown scope 'gpu'"):
        parse_scope("gpu")


@pytest.mark.parametrize("trailing", [" garbage", ", id = 1>", " {}"])
def test_a_full_scope_with_trailing_text_is_refused(trailing: str) -> None:
    """It was cut silently at the end of the attribute (issue 33, item 7), in Builder.on_device
    and in ONNX placement rules alike; the short form was already refused."""
    text = f"#relay.se_scope<device = opencl>{trailing}"
    with pytest.raises(xrelay.UsageError, match="cannot parse the scope (.|\n)*nothing after the attribute"):
        parse_scope(text)
    b = xrelay.Builder()
    x = b.input("x", (2,))
    with pytest.raises(xrelay.UsageError, match="cannot parse the scope"):
        b.on_device(b.exp(x), text)
    with pytest.raises(xrelay.UsageError, match="unknown scope 'opencl garbage'"):
        parse_scope("opencl garbage")


def test_names_that_are_not_ssa_names_are_kept_as_input_names() -> None:
    assert value_name("onnx::Conv_0") == "onnx__Conv.0"
    assert value_name("0x") == "v0x"
    b = xrelay.Builder()
    first, second = b.input("a:b", (1,)), b.input("a_b", (1,))
    assert (first.name_hint, second.name_hint) == ("a_b", "a_b.1")
    with pytest.raises(xrelay.UsageError, match="already has an input named 'a_b'"):
        b.input("a_b", (1,))
    b = xrelay.Builder()
    x = b.input("onnx::Conv_0", (2,))
    module = b.finish(b.exp(x))
    assert 'relay.input_name = "onnx::Conv_0"' in str(module)
    exe = xrelay.build(module)
    assert exe.input_names == ["onnx::Conv_0"]
    np.testing.assert_allclose(exe.run({"onnx::Conv_0": np.zeros(2, np.float32)}), np.ones(2))
