"""The hardening sweep's battery (issue 33, last item): bad and edge inputs against the int64
and bool surfaces, as a new user writes them, each an `xrelay.Error` subclass naming what is
wrong. (The ONNX ops' bad attributes are in test_onnx_zoo_ops; opt-tool's exits in
test_opt_tool.)"""

from __future__ import annotations

import os

os.environ.setdefault("POCL_DEVICES", "pthread pthread")

from functools import cache
from typing import Any

import numpy as np
import pytest
from onnx import ModelProto, TensorProto, helper, numpy_helper

import xrelay
from xrelay.frontend.builder import Builder
from xrelay.runtime.executable import Executable

TABLE = np.arange(40, dtype=np.float32).reshape(10, 4)


@cache
def embedding(target: str) -> Executable:
    """`take(table, ids)` with int64 ids [2, 3], and `where(mask, ...)` with a bool mask [2, 3]."""
    b = Builder()
    table, ids, mask = b.input("table", (10, 4)), b.input("ids", (2, 3), "int64"), b.input("mask", (2, 3), "bool")
    rows = b.sum(b.take(table, ids, axis=0), axis=2)
    return xrelay.build(b.finish(b.where(mask, rows, 0.0)), targets=(target,))


GOOD_IDS = np.array([[0, 1, 2], [3, 4, 9]], np.int64)
GOOD_MASK = np.array([[1, 0, 1], [1, 1, 0]], np.bool_)

BAD_RUNS: dict[str, tuple[dict[str, Any], str]] = {
    "float ids": ({"ids": GOOD_IDS.astype(np.float32)}, r"ids must have dtype int64, but has dtype float32"),
    "int32 ids": ({"ids": GOOD_IDS.astype(np.int32)}, r"ids must have dtype int64, but has dtype int32"),
    "bool ids": ({"ids": GOOD_IDS.astype(np.bool_)}, r"ids must have dtype int64, but has dtype bool"),
    "int64 mask": ({"mask": GOOD_MASK.astype(np.int64)}, r"mask must have dtype bool, but has dtype int64"),
    "uint8 mask": ({"mask": GOOD_MASK.astype(np.uint8)}, r"mask must have dtype bool, but has dtype uint8"),
    "mask shape": ({"mask": np.ones((3, 2), np.bool_)}, r"mask must have shape \[2, 3\], but has shape \[3, 2\]"),
    "big-endian ids": (
        {"ids": GOOD_IDS.astype(">i8")},
        r"ids must have dtype int64, but has dtype >i8; convert it with \.astype\(np\.int64\)",
    ),
    "empty ids": ({"ids": np.zeros((0, 3), np.int64)}, r"ids must have shape \[2, 3\], but has shape \[0, 3\]"),
}


@pytest.mark.parametrize("target", ["c", "opencl"])
@pytest.mark.parametrize("case", list(BAD_RUNS))
def test_a_bad_run_time_input_is_an_input_error(case: str, target: str) -> None:
    changed, message = BAD_RUNS[case]
    inputs = {"table": TABLE, "ids": GOOD_IDS, "mask": GOOD_MASK, **changed}
    with pytest.raises(xrelay.InputError, match=message):
        embedding(target).run(**inputs)


EDGE_IDS: dict[str, Any] = {
    "python lists": GOOD_IDS.tolist(),
    "non-contiguous": np.stack([GOOD_IDS, GOOD_IDS], axis=2)[:, :, 0],
    "negative (from the end)": GOOD_IDS - 10,
    "out of range (clipped)": GOOD_IDS * 100,
}


@pytest.mark.parametrize("target", ["c", "opencl"])
@pytest.mark.parametrize("case", list(EDGE_IDS))
def test_edge_ids_give_the_interpreters_answer(case: str, target: str) -> None:
    b = Builder()
    module = b.finish(b.take(b.input("table", (10, 4)), b.input("ids", (2, 3), "int64"), axis=0))
    ids = EDGE_IDS[case]
    want = xrelay.interpret(module, {"table": TABLE, "ids": np.asarray(ids, np.int64)})
    want_np = np.take(TABLE, np.clip(np.where(np.asarray(ids) < 0, np.asarray(ids) + 10, ids), 0, 9), axis=0)
    np.testing.assert_array_equal(want, want_np)
    np.testing.assert_array_equal(xrelay.build(module, targets=(target,)).run(table=TABLE, ids=ids), want)


BAD_MLIR: dict[str, tuple[str, str]] = {
    "int32 ids": (
        "func.func @main(%i: tensor<4xi32>, %e: tensor<10x8xf32>) -> tensor<4x8xf32> {\n"
        "  %0 = relay.take %e, %i {axis = 0 : i64} : (tensor<10x8xf32>, tensor<4xi32>) -> tensor<4x8xf32>\n"
        "  func.return %0 : tensor<4x8xf32>\n}",
        r"'relay.take' takes int64 tensors, but operand 1 is tensor<4xi32>",
    ),
    "cast result typed wrong": (
        "func.func @main(%m: tensor<4xi64>) -> tensor<4xi64> {\n"
        '  %0 = relay.cast %m {dtype = "float32"} : (tensor<4xi64>) -> tensor<4xi64>\n'
        "  func.return %0 : tensor<4xi64>\n}",
        r"expected result type tensor<4xf32> for 'relay.cast', but found tensor<4xi64>",
    ),
    "cast to float16": (
        "func.func @main(%m: tensor<4xi64>) -> tensor<4xf32> {\n"
        '  %0 = relay.cast %m {dtype = "float16"} : (tensor<4xi64>) -> tensor<4xf32>\n'
        "  func.return %0 : tensor<4xf32>\n}",
        r"expected dtype to be one of float32, int64, bool, but found 'float16'",
    ),
    "where on int64": (
        "func.func @main(%m: tensor<4xi64>, %x: tensor<4xf32>) -> tensor<4xf32> {\n"
        "  %0 = relay.where %m, %x, %x : (tensor<4xi64>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>\n"
        "  func.return %0 : tensor<4xf32>\n}",
        r"'relay.where' takes bool tensors, but operand 0 is tensor<4xi64>",
    ),
    "compare typed i64": (
        "func.func @main(%m: tensor<4xi64>) -> tensor<4xi64> {\n"
        "  %0 = relay.less %m, %m : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>\n"
        "  func.return %0 : tensor<4xi64>\n}",
        r"expected result type tensor<4xi1> for 'relay.less', but found tensor<4xi64>",
    ),
    "exp of int64": (
        "func.func @main(%m: tensor<4xi64>) -> tensor<4xi64> {\n"
        "  %0 = relay.exp %m : tensor<4xi64>\n  func.return %0 : tensor<4xi64>\n}",
        r"'relay.exp' takes float32 tensors, but operand 0 is tensor<4xi64>",
    ),
}


@pytest.mark.parametrize("case", list(BAD_MLIR))
def test_mistyped_int_ir_is_a_verify_error(case: str) -> None:
    text, message = BAD_MLIR[case]
    with pytest.raises(xrelay.VerifyError, match=message):
        xrelay.parse(text)


def onnx_model(node: Any, inputs: list[Any], inits: dict[str, np.ndarray] | None = None) -> ModelProto:
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    initializers = [numpy_helper.from_array(v, k) for k, v in (inits or {}).items()]
    graph = helper.make_graph([node], "g", inputs, [out], initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def vi(name: str, elem: int, shape: list[int]) -> Any:
    return helper.make_tensor_value_info(name, elem, shape)


W_LSTM = {"W": np.ones((1, 12, 2), np.float32), "R": np.ones((1, 12, 3), np.float32)}
BAD_ONNX: dict[str, tuple[ModelProto, str]] = {
    "int32 gather ids": (
        onnx_model(helper.make_node("Gather", ["e", "i"], ["y"]), [vi("i", TensorProto.INT32, [4])], {"e": TABLE}),
        r"input 'i' is of element type int32; xrelay takes float32, int64 and bool inputs",
    ),
    "where on int64": (
        onnx_model(
            helper.make_node("Where", ["c", "x", "x"], ["y"]),
            [vi("c", TensorProto.INT64, [2]), vi("x", TensorProto.FLOAT, [2])],
        ),
        r"ONNX node Where .*'relay.where' takes bool tensors",
    ),
    "cast to int32": (
        onnx_model(helper.make_node("Cast", ["x"], ["y"], to=TensorProto.INT32), [vi("x", TensorProto.FLOAT, [2])]),
        r"ONNX node Cast .*casting a tensor to int32 is not supported",
    ),
    "LSTM sequence_lens input": (
        onnx_model(
            helper.make_node("LSTM", ["x", "W", "R", "", "sl"], ["y"], hidden_size=3),
            [vi("x", TensorProto.FLOAT, [4, 2, 2])],
            {**W_LSTM, "sl": np.array([4, 2], np.int32)},
        ),
        r"ONNX node LSTM .*variable sequence lengths are not supported",
    ),
    "Resize with run-time scales": (
        onnx_model(
            helper.make_node("Resize", ["x", "", "s"], ["y"]),
            [vi("x", TensorProto.FLOAT, [1, 1, 2, 2]), vi("s", TensorProto.FLOAT, [4])],
        ),
        r"ONNX node Resize .*input 2 \(scales\) must be known at import",
    ),
}


@pytest.mark.parametrize("case", list(BAD_ONNX))
def test_a_bad_onnx_int_model_is_an_import_error(case: str) -> None:
    model, message = BAD_ONNX[case]
    with pytest.raises(xrelay.OnnxImportError, match=message):
        xrelay.from_onnx(model)


BAD_INT_CONSTANTS: dict[str, tuple[Any, str]] = {
    "a fraction added to int64": (
        lambda b: b.add(b.input("ids", (3,), "int64"), 1.5),
        r"constant 1.5 is not an int64: the other operand is int64; cast one of them \(b.cast\)",
    ),
    "take of fractional indices": (
        lambda b: b.take(b.input("e", (10, 4)), [0.5, 1.2], 0),
        r"take indices \[0.5, 1.2\] are not int64 integers: give integers within int64",
    ),
    "take of an index beyond int64": (
        lambda b: b.take(b.input("e", (10, 4)), [2**70], 0),
        r"take indices \[1180591620717411303424\] are not int64 integers: give integers within int64",
    ),
}


@pytest.mark.parametrize("case", list(BAD_INT_CONSTANTS))
def test_a_constant_that_is_not_an_int64_is_refused(case: str) -> None:
    """Before: 1.5 became 1 and [0.5, 1.2] became [0, 1] silently; 2**70 an OverflowError."""
    build, message = BAD_INT_CONSTANTS[case]
    with pytest.raises(xrelay.UsageError, match=message):
        build(Builder())


def test_an_integral_constant_still_joins_int64() -> None:
    b = Builder()
    module = b.finish(b.add(b.input("ids", (3,), "int64"), 2.0))
    ids = np.array([1, 2, 3], np.int64)
    np.testing.assert_array_equal(xrelay.interpret(module, {"ids": ids}), ids + 2)
