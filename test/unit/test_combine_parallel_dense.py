"""combine-parallel-dense: the rewritten program computes what the denses and followers it
replaces compute (`xrelay.interpret` before and after, on random weights bound as params), and
`xrelay.build` (whose pipeline runs it) agrees with the interpreter on C and OpenCL: the
transformer's Q, K and V, branches of different units, a dense whose result is also used
elsewhere, a bias on some branches only, broadcast followers, data of rank 3; which ops it
leaves, and which schedules the transformer's combined kernels get."""

from __future__ import annotations

import numpy as np
import pytest
from bench_models import models
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr, TensorType

import xrelay
from xrelay.dialects import relay
from xrelay.driver import bind_params, lower
from xrelay.transforms.combine_parallel_dense import CombineParallelDensePass

Shape = tuple[int, ...]
TARGETS = {"c": {"targets": ("c",)}, "opencl": {"targets": ("c", "opencl"), "default_device": "opencl"}}


def t(shape: Shape) -> str:
    return f"tensor<{''.join(f'{d}x' for d in shape)}f32>"


# Each case: @main's text (weights w*, b*, c* are params) and how many denses remain.
QKV = """func.func @main(%x: tensor<6x8xf32>, %wq: tensor<8x8xf32>, %bq: tensor<8xf32>, %wk: tensor<8x8xf32>,
                 %bk: tensor<8xf32>, %wv: tensor<8x8xf32>, %bv: tensor<8xf32>) -> tensor<6x8xf32> {
  %0 = relay.nn.dense %x, %wq : (tensor<6x8xf32>, tensor<8x8xf32>) -> tensor<6x8xf32>
  %q = relay.nn.bias_add %0, %bq : (tensor<6x8xf32>, tensor<8xf32>) -> tensor<6x8xf32>
  %1 = relay.nn.dense %x, %wk : (tensor<6x8xf32>, tensor<8x8xf32>) -> tensor<6x8xf32>
  %k = relay.nn.bias_add %1, %bk : (tensor<6x8xf32>, tensor<8xf32>) -> tensor<6x8xf32>
  %2 = relay.nn.dense %x, %wv : (tensor<6x8xf32>, tensor<8x8xf32>) -> tensor<6x8xf32>
  %v = relay.nn.bias_add %2, %bv : (tensor<6x8xf32>, tensor<8xf32>) -> tensor<6x8xf32>
  %3 = relay.multiply %q, %k : (tensor<6x8xf32>, tensor<6x8xf32>) -> tensor<6x8xf32>
  %4 = relay.add %3, %v : (tensor<6x8xf32>, tensor<6x8xf32>) -> tensor<6x8xf32>
  func.return %4 : tensor<6x8xf32>
}"""

# Units 5, 3 and 20 (not multiples of a micro-kernel's 16 columns); the first dense is also
# exp'd; a bias on two branches of three; the third branch adds a scalar, then relu.
MIXED = """func.func @main(%x: tensor<7x12xf32>, %w0: tensor<5x12xf32>, %b0: tensor<5xf32>,
                 %w1: tensor<3x12xf32>, %w2: tensor<20x12xf32>, %b2: tensor<20xf32>)
    -> (tensor<7x5xf32>, tensor<7x5xf32>, tensor<7x3xf32>, tensor<7x20xf32>) {
  %c = relay.constant {value = dense<0.25> : tensor<f32>} : tensor<f32>
  %0 = relay.nn.dense %x, %w0 : (tensor<7x12xf32>, tensor<5x12xf32>) -> tensor<7x5xf32>
  %1 = relay.nn.bias_add %0, %b0 : (tensor<7x5xf32>, tensor<5xf32>) -> tensor<7x5xf32>
  %2 = relay.exp %0 : tensor<7x5xf32>
  %3 = relay.nn.dense %x, %w1 : (tensor<7x12xf32>, tensor<3x12xf32>) -> tensor<7x3xf32>
  %4 = relay.nn.dense %x, %w2 : (tensor<7x12xf32>, tensor<20x12xf32>) -> tensor<7x20xf32>
  %5 = relay.nn.bias_add %4, %b2 : (tensor<7x20xf32>, tensor<20xf32>) -> tensor<7x20xf32>
  %6 = relay.add %5, %c : (tensor<7x20xf32>, tensor<f32>) -> tensor<7x20xf32>
  %7 = relay.nn.relu %6 : tensor<7x20xf32>
  func.return %1, %2, %3, %7 : tensor<7x5xf32>, tensor<7x5xf32>, tensor<7x3xf32>, tensor<7x20xf32>
}"""

# Data of rank 3; every branch: bias_add on the last axis, multiply by a row of its units
# (a weight) or by a scalar, tanh.
FOLLOWERS = """func.func @main(%x: tensor<2x3x4xf32>, %w0: tensor<6x4xf32>, %b0: tensor<6xf32>, %c0: tensor<1x6xf32>,
                 %w1: tensor<2x4xf32>, %b1: tensor<2xf32>, %c1: tensor<f32>) -> (tensor<2x3x6xf32>, tensor<2x3x2xf32>) {
  %0 = relay.nn.dense %x, %w0 : (tensor<2x3x4xf32>, tensor<6x4xf32>) -> tensor<2x3x6xf32>
  %1 = relay.nn.bias_add %0, %b0 {axis = 2 : i64} : (tensor<2x3x6xf32>, tensor<6xf32>) -> tensor<2x3x6xf32>
  %2 = relay.multiply %1, %c0 : (tensor<2x3x6xf32>, tensor<1x6xf32>) -> tensor<2x3x6xf32>
  %3 = relay.tanh %2 : tensor<2x3x6xf32>
  %4 = relay.nn.dense %x, %w1 : (tensor<2x3x4xf32>, tensor<2x4xf32>) -> tensor<2x3x2xf32>
  %5 = relay.nn.bias_add %4, %b1 {axis = -1 : i64} : (tensor<2x3x2xf32>, tensor<2xf32>) -> tensor<2x3x2xf32>
  %6 = relay.multiply %5, %c1 : (tensor<2x3x2xf32>, tensor<f32>) -> tensor<2x3x2xf32>
  %7 = relay.tanh %6 : tensor<2x3x2xf32>
  func.return %3, %7 : tensor<2x3x6xf32>, tensor<2x3x2xf32>
}"""

CASES = {"qkv": QKV, "mixed": MIXED, "followers": FOLLOWERS}


def random_arrays(text: str, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    main = xrelay.parse(text).ops.first
    assert isinstance(main, func.FuncOp)
    arrays: dict[str, np.ndarray] = {}
    for arg in main.args:
        assert isinstance(arg.type, TensorType) and arg.name_hint is not None
        arrays[arg.name_hint] = rng.standard_normal(tuple(arg.type.get_shape())).astype(np.float32)
    return arrays


def split(arrays: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """(the inputs, the params): every array but %x is a weight."""
    return {"x": arrays["x"]}, {name: value for name, value in arrays.items() if name != "x"}


def combined(text: str, params: dict[str, np.ndarray]) -> ModuleOp:
    module = xrelay.parse(text)
    bind_params(module, params)
    CombineParallelDensePass().apply(Context(), module)
    module.verify()
    return module


def op_names(module: ModuleOp) -> list[str]:
    return [op.name for op in module.walk() if isinstance(op, relay.RelayOp)]


def as_tuple(value: np.ndarray | tuple[np.ndarray, ...]) -> tuple[np.ndarray, ...]:
    return value if isinstance(value, tuple) else (value,)


@pytest.mark.parametrize("case", CASES)
def test_the_rewrite_computes_the_same(case: str) -> None:
    inputs, params = split(random_arrays(CASES[case], seed=1))
    before = xrelay.parse(CASES[case])
    bind_params(before, params)
    after = combined(CASES[case], params)
    assert op_names(after).count("relay.nn.dense") == 1
    for want, got in zip(as_tuple(xrelay.interpret(before, inputs)), as_tuple(xrelay.interpret(after, inputs))):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("target", TARGETS)
def test_build_agrees_with_the_interpreter(case: str, target: str) -> None:
    inputs, params = split(random_arrays(CASES[case], seed=2))
    reference = xrelay.parse(CASES[case])
    bind_params(reference, params)
    want = as_tuple(xrelay.interpret(reference, inputs))
    got = as_tuple(xrelay.build(CASES[case], params=params, **TARGETS[target]).run(**inputs))
    for w, g in zip(want, got, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)


def test_followers_combine_up_to_the_first_that_differs() -> None:
    """MIXED: the denses combine; a bias on two branches of three does not."""
    after = combined(MIXED, split(random_arrays(MIXED, seed=3))[1])
    names = op_names(after)
    assert names.count("relay.nn.dense") == 1
    assert names.count("relay.strided_slice") == 3
    assert names.count("relay.nn.bias_add") == 2
    follows = combined(FOLLOWERS, split(random_arrays(FOLLOWERS, seed=3))[1])
    assert [n for n in op_names(follows) if n != "relay.constant"] == [
        "relay.nn.dense", "relay.nn.bias_add", "relay.multiply", "relay.tanh",
        "relay.strided_slice", "relay.strided_slice",
    ]  # fmt: skip


def test_weights_not_bound_are_left_alone() -> None:
    module = xrelay.parse(QKV)
    CombineParallelDensePass().apply(Context(), module)
    assert op_names(module).count("relay.nn.dense") == 3


def test_min_num_branches() -> None:
    module = xrelay.parse(QKV)
    bind_params(module, split(random_arrays(QKV, seed=4))[1])
    CombineParallelDensePass(min_num_branches=4).apply(Context(), module)
    assert op_names(module).count("relay.nn.dense") == 3


@pytest.mark.parametrize("target", TARGETS)
def test_the_transformer(target: str) -> None:
    """bench/models.py's transformer: Q, K and V one pre-packed dense, whose slices (each
    with its reshape and transpose) the attention's kernel reads where they lie
    (fuse-attention takes them in); the whole agrees with the interpreter."""
    text = models.transformer_relay(seq=32, d_model=64, heads=4, ffn=128)
    inputs, params = split(models.random_inputs(text))
    module = xrelay.parse(text)
    bind_params(module, params)
    options = TARGETS[target]
    lower(module, options["targets"], options.get("default_device"), "c")
    kernels = {
        op.sym_name.data: op.attributes.get("relay.schedule") for op in module.ops if isinstance(op, func.FuncOp)
    }
    schedules = {name: s.data for name, s in kernels.items() if isinstance(s, StringAttr)}
    prepacked = "packed_matmul_prepacked" if target == "c" else "packed_matmul_opencl_prepacked"
    assert schedules["fused_nn_dense_nn_bias_add"] == prepacked
    assert "fused_nn_dense_nn_bias_add_2" not in schedules  # three denses became one
    assert schedules["fused_nn_batch_matmul_multiply_nn_softmax_nn_batch_matmul"] == "attention_rows"
    assert not [name for name in schedules if "strided_slice" in name]  # no copies of the heads
    reference = xrelay.interpret(text, {**inputs, **params})
    got = xrelay.build(text, params=params, **TARGETS[target]).run(**inputs)
    np.testing.assert_allclose(got, reference, rtol=1e-4, atol=1e-4)
