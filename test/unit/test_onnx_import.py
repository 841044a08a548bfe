"""xrelay.from_onnx: the contract (signature, params, input names, results), static shapes,
placement rules and clean errors; imported models built on C and OpenCL against onnx's
reference evaluator. The per-op conformance cases are in test_onnx_conformance.py."""

from __future__ import annotations

import os

os.environ.setdefault("POCL_DEVICES", "pthread pthread")

from pathlib import Path

import numpy as np
import pytest
from isa_levels import isa_params
from onnx import ModelProto, TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import xrelay

RNG = np.random.default_rng(0)


def cnn(batch: int | str = 2, opset: int = 17) -> ModelProto:
    """conv (bias) -> relu -> maxpool -> shape arithmetic -> reshape -> gemm -> softmax; two outputs."""
    nodes = [
        helper.make_node("Conv", ["input.1", "conv.w", "conv.b"], ["c"], name="layer1/conv", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"], name="layer1/relu"),
        helper.make_node("MaxPool", ["r"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Shape", ["p"], ["s"], name="shape"),
        helper.make_node("Constant", [], ["k"], value=numpy_helper.from_array(np.array([0], np.int64))),
        helper.make_node("Gather", ["s", "k"], ["n0"]),
        helper.make_node("Concat", ["n0", "minus_one"], ["shp"], axis=0),
        helper.make_node("Reshape", ["p", "shp"], ["f"], name="flatten"),
        helper.make_node("Gemm", ["f", "onnx::Gemm_7", "fc.b"], ["g"], transB=1, name="fc"),
        helper.make_node("Softmax", ["g"], ["out"], axis=1, name="softmax"),
    ]
    initializers = [
        numpy_helper.from_array(RNG.standard_normal((8, 3, 3, 3)).astype(np.float32), "conv.w"),
        numpy_helper.from_array(RNG.standard_normal(8).astype(np.float32), "conv.b"),
        numpy_helper.from_array(RNG.standard_normal((10, 128)).astype(np.float32), "onnx::Gemm_7"),
        numpy_helper.from_array(RNG.standard_normal(10).astype(np.float32), "fc.b"),
        numpy_helper.from_array(np.array([-1], np.int64), "minus_one"),
    ]
    graph = helper.make_graph(
        nodes,
        "cnn",
        [helper.make_tensor_value_info("input.1", TensorProto.FLOAT, [batch, 3, 8, 8])],
        [
            helper.make_tensor_value_info("out", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("r", TensorProto.FLOAT, None),
        ],
        initializers,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def expected(model: ModelProto, **inputs: np.ndarray) -> list[np.ndarray]:
    return list(ReferenceEvaluator(model).run(None, inputs))  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]


def test_signature_params_and_results() -> None:
    module, params = xrelay.from_onnx(cnn())
    text = str(module)
    assert (
        "func.func @main(%input.1: tensor<2x3x8x8xf32>, %conv.w: tensor<8x3x3x3xf32>, %conv.b: tensor<8xf32>, " in text
    )
    assert '%onnx__Gemm.7: tensor<10x128xf32> {relay.input_name = "onnx::Gemm_7"}, %fc.b: tensor<10xf32>)' in text
    assert "-> (tensor<2x10xf32>, tensor<2x8x8x8xf32>)" in text
    assert list(params) == ["conv.w", "conv.b", "onnx__Gemm.7", "fc.b"]  # integer initializers are shape data
    assert str(xrelay.parse(text)) == text


@pytest.mark.parametrize("targets", [("c",), ("c", "opencl")])
def test_built_model_matches_onnx(targets: tuple[str, ...]) -> None:
    model = cnn()
    placement = {"layer1/*": "opencl:1", "Softmax": "opencl"} if "opencl" in targets else None
    module, params = xrelay.from_onnx(model, placement=placement)
    exe = xrelay.build(module, targets=targets, params=params)
    x = RNG.standard_normal((2, 3, 8, 8)).astype(np.float32)
    want = expected(model, **{"input.1": x})
    for got in (exe.run(x), exe.run({"input.1": x})):
        assert isinstance(got, tuple) and len(got) == 2
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(xrelay.interpret(module, {"input.1": x, **params})[0], want[0], rtol=1e-4, atol=1e-6)


def test_placement_rules_become_on_device() -> None:
    module, _ = xrelay.from_onnx(cnn(), placement={"layer1/*": "opencl:1", "Gemm": "#relay.se_scope<device = cpu>"})
    text = str(module)
    assert text.count("#relay.se_scope<device = opencl, id = 1>") == 2
    assert text.count("#relay.se_scope<device = cpu>") == 1
    with pytest.raises(xrelay.UsageError, match="placement rules 'layer9/\\*' match no node"):
        xrelay.from_onnx(cnn(), placement={"layer9/*": "opencl"})


def test_dynamic_dims_name_the_input_and_shapes_fix_them(tmp_path: Path) -> None:
    from xrelay.frontend.onnx_import import DynamicShapeWarning

    with pytest.warns(DynamicShapeWarning, match=r"input 'input.1' has a dynamic shape \[N, 3, 8, 8\].*shapes="):
        module, _ = xrelay.from_onnx(cnn(batch="N"))
    assert "tensor<1x10xf32>" in str(module)  # N taken as 1
    path = tmp_path / "cnn.onnx"
    path.write_bytes(cnn(batch="N").SerializeToString())
    module, _ = xrelay.from_onnx(str(path), shapes={"input.1": (4, 3, 8, 8)})
    assert "tensor<4x10xf32>" in str(module)
    with pytest.raises(xrelay.UsageError, match="model says"):
        xrelay.from_onnx(cnn(batch="N"), shapes={"input.1": (4, 3, 9, 8)})
    with pytest.raises(xrelay.UsageError, match="not inputs of the model"):
        xrelay.from_onnx(cnn(), shapes={"x": (1,)})


def one_node(op: str, inputs: list[str], shape: list[int], opset: int = 21, **attrs: object) -> ModelProto:
    node = helper.make_node(op, inputs, ["y"], name="the_node", **attrs)
    ins = [helper.make_tensor_value_info(i, TensorProto.FLOAT, shape) for i in inputs]
    graph = helper.make_graph([node], "g", ins, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def test_unsupported_op_attribute_and_dtype_are_clean_errors() -> None:
    with pytest.raises(xrelay.OnnxImportError, match="ONNX node Hardmax 'the_node': op Hardmax is not supported"):
        xrelay.from_onnx(one_node("Hardmax", ["x"], [2, 3]))
    with pytest.raises(xrelay.OnnxImportError, match="ONNX node Gelu 'the_node': attribute approximate = 'fast'"):
        xrelay.from_onnx(one_node("Gelu", ["x"], [2, 3], approximate="fast"))
    with pytest.raises(xrelay.OnnxImportError, match=r"ONNX node Pad 'the_node': expected 4 pads .* but found None"):
        xrelay.from_onnx(one_node("Pad", ["x"], [2, 3], mode="reflect"))
    node = helper.make_node("Relu", ["x"], ["y"])
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.INT32, [2])],
        [helper.make_tensor_value_info("y", TensorProto.INT32, [2])],
    )
    with pytest.raises(xrelay.OnnxImportError, match="input 'x' is of element type int32"):
        xrelay.from_onnx(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)]))
    with pytest.raises(xrelay.OnnxImportError, match="opset 11"):
        xrelay.from_onnx(one_node("Relu", ["x"], [2], opset=11))
    with pytest.raises(xrelay.OnnxImportError, match="cannot read the ONNX model"):
        xrelay.from_onnx("/nonexistent/model.onnx")


def check_against_onnx(model: ModelProto, inputs: dict[str, np.ndarray], targets: tuple[str, ...]) -> None:
    module, params = xrelay.from_onnx(model)
    got = xrelay.build(module, targets=targets, default_device=targets[-1], params=params).run(inputs)
    got = got if isinstance(got, tuple) else (got,)
    for g, w in zip(got, expected(model, **inputs)):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


def pad_model(mode: str) -> ModelProto:
    pads = numpy_helper.from_array(np.array([0, 2, 1, 1], np.int64), "pads")
    node = helper.make_node("Pad", ["x", "pads"], ["y"], mode=mode)
    graph = helper.make_graph(
        [node],
        "pad",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [pads],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])


def embedding_model() -> ModelProto:
    """Gather rows of a weight by constant token ids, then a 1-D matmul and Gelu (tanh)."""
    table = numpy_helper.from_array(RNG.standard_normal((10, 4)).astype(np.float32), "table")
    ids = numpy_helper.from_array(np.array([[3, 0], [9, -1]], np.int64), "ids")
    nodes = [
        helper.make_node("Gather", ["table", "ids"], ["e"]),
        helper.make_node("MatMul", ["e", "v"], ["m"]),
        helper.make_node("Gelu", ["m"], ["y"], approximate="tanh"),
    ]
    graph = helper.make_graph(
        nodes,
        "emb",
        [helper.make_tensor_value_info("v", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [table, ids],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])


@pytest.mark.parametrize("targets", [("c",), ("c", "opencl")])
def test_pad_modes_gather_and_1d_matmul(targets: tuple[str, ...]) -> None:
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    for mode in ("constant", "edge", "reflect", "wrap"):
        check_against_onnx(pad_model(mode), {"x": x}, targets)
    check_against_onnx(embedding_model(), {"v": RNG.standard_normal(4).astype(np.float32)}, targets)


def test_inputs_by_position_and_by_onnx_name_after_save_and_load(tmp_path: Path) -> None:
    import xrelay.runtime

    nodes = [
        helper.make_node("Add", ["onnx::Conv_0", "input.1"], ["s"]),
        helper.make_node("Mul", ["s", "input.1"], ["y"]),
    ]
    inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [3]) for n in ("onnx::Conv_0", "input.1")]
    graph = helper.make_graph(nodes, "g", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])])
    module, params = xrelay.from_onnx(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)]))
    assert params == {}
    xrelay.build(module, targets=("c", "opencl"), default_device="opencl").save(tmp_path / "m.xrelay")
    exe = xrelay.runtime.load(tmp_path / "m.xrelay")
    a, b = np.ones(3, np.float32), np.arange(3, dtype=np.float32)
    assert exe.input_names == ["onnx::Conv_0", "input.1"]
    np.testing.assert_allclose(exe.run(a, b), (a + b) * b)
    np.testing.assert_allclose(exe.run({"input.1": b, "onnx::Conv_0": a}), (a + b) * b)
    with pytest.raises(xrelay.InputError, match="onnx::Conv_0"):
        exe.run({"input.1": b})


def attention_model(seq: int = 8, hidden: int = 16, heads: int = 4) -> ModelProto:
    """One encoder block as exporters write it: head shapes computed with Shape, Gather,
    Unsqueeze and Concat (folded at import), batched MatMuls, Softmax, LayerNormalization, Gelu."""
    dh = hidden // heads
    w = {n: RNG.standard_normal((hidden, hidden)).astype(np.float32) * 0.3 for n in ("wq", "wk", "wv")}
    c = {
        "zero": np.array(0, np.int64),
        "one": np.array(1, np.int64),
        "axes0": np.array([0], np.int64),
        "heads": np.array([heads], np.int64),
        "dh": np.array([dh], np.int64),
        "hid": np.array([hidden], np.int64),
        "scale": np.array(1 / np.sqrt(dh), np.float32),
        "gamma": RNG.standard_normal(hidden).astype(np.float32),
        "beta": RNG.standard_normal(hidden).astype(np.float32),
    }
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Gather", ["shape", "zero"], ["b"], axis=0),
        helper.make_node("Gather", ["shape", "one"], ["s"], axis=0),
        helper.make_node("Unsqueeze", ["b", "axes0"], ["b1"]),
        helper.make_node("Unsqueeze", ["s", "axes0"], ["s1"]),
        helper.make_node("Concat", ["b1", "s1", "heads", "dh"], ["split_shape"], axis=0),
        helper.make_node("Concat", ["b1", "s1", "hid"], ["merge_shape"], axis=0),
    ]
    for name in ("q", "k", "v"):
        nodes += [
            helper.make_node("MatMul", ["x", f"w{name}"], [f"{name}0"]),
            helper.make_node("Reshape", [f"{name}0", "split_shape"], [f"{name}1"]),
            helper.make_node(
                "Transpose", [f"{name}1"], [f"{name}h"], perm=[0, 2, 3, 1] if name == "k" else [0, 2, 1, 3]
            ),
        ]
    nodes += [
        helper.make_node("MatMul", ["qh", "kh"], ["scores"]),
        helper.make_node("Mul", ["scores", "scale"], ["scaled"]),
        helper.make_node("Softmax", ["scaled"], ["probs"], axis=-1, name="attn/softmax"),
        helper.make_node("MatMul", ["probs", "vh"], ["ctx"]),
        helper.make_node("Transpose", ["ctx"], ["ctx_t"], perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["ctx_t", "merge_shape"], ["merged"]),
        helper.make_node("Add", ["merged", "x"], ["res"]),
        helper.make_node("LayerNormalization", ["res", "gamma", "beta"], ["ln"], axis=-1, name="attn/ln"),
        helper.make_node("Gelu", ["ln"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "encoder",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", seq, hidden])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(v, k) for k, v in {**w, **c}.items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])


@pytest.mark.parametrize("targets", [("c",), ("c", "opencl")])
def test_attention_block(targets: tuple[str, ...]) -> None:
    model = attention_model()
    placement = {"attn/*": "opencl"} if "opencl" in targets else None
    module, params = xrelay.from_onnx(model, placement=placement, shapes={"x": (2, 8, 16)})
    assert "relay.nn.matmul" in str(module) and "relay.reshape" in str(module)
    x = RNG.standard_normal((2, 8, 16)).astype(np.float32)
    got = xrelay.build(module, targets=targets, params=params).run(x)
    np.testing.assert_allclose(got, expected(model, x=x)[0], rtol=1e-4, atol=1e-5)


def if_model(condition: bool | None) -> ModelProto:
    """`y = If(c, then: relu(x), else: -x)`; `c` an initializer, or an input (`None`)."""
    out = helper.make_tensor_value_info
    then_branch = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["t"])], "then", [], [out("t", TensorProto.FLOAT, [2, 3])]
    )
    else_branch = helper.make_graph(
        [helper.make_node("Neg", ["x"], ["e"])], "else", [], [out("e", TensorProto.FLOAT, [2, 3])]
    )
    node = helper.make_node("If", ["c"], ["y"], name="the_if", then_branch=then_branch, else_branch=else_branch)
    inputs = [out("x", TensorProto.FLOAT, [2, 3])]
    inits = []
    if condition is None:
        inputs.append(out("c", TensorProto.FLOAT, []))
    else:
        inits.append(numpy_helper.from_array(np.array(condition), "c"))
    graph = helper.make_graph([node], "g", inputs, [out("y", TensorProto.FLOAT, [2, 3])], initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("condition", [True, False])
def test_an_if_with_a_known_condition_is_its_branch(condition: bool) -> None:
    """It failed with the reference evaluator's internal message ("Unable to find input 'x'")."""
    x = np.array([[1, -2, 3], [-4, 5, -6]], np.float32)
    check_against_onnx(if_model(condition), {"x": x}, ("c",))


def test_an_if_with_a_run_time_condition_is_not_supported() -> None:
    with pytest.raises(
        xrelay.OnnxImportError,
        match=r"ONNX node If 'the_if': op If is not supported by the importer: xrelay programs have no control flow "
        r"\(an If is imported only when its condition is known at import\)",
    ):
        xrelay.from_onnx(if_model(None))


def aliased_weights_model() -> ModelProto:
    """BatchNormalization -> Relu -> Conv as torch exports DenseNet: the scale, bias and conv
    weight reach their nodes through Identity nodes of initializers (the exporter's copies of
    an initializer equal to an earlier one)."""
    channels = 5
    inits = [
        numpy_helper.from_array(RNG.uniform(0.5, 2, channels).astype(np.float32), name) for name in ("scale", "var")
    ] + [numpy_helper.from_array(RNG.standard_normal(channels).astype(np.float32), name) for name in ("bias", "mean")]
    inits.append(numpy_helper.from_array(RNG.standard_normal((3, channels, 1, 1)).astype(np.float32), "w"))
    nodes = [
        helper.make_node("Identity", ["scale"], ["scale.copy"]),
        helper.make_node("Identity", ["bias"], ["bias.copy"]),
        helper.make_node("Identity", ["w"], ["w.copy"]),
        helper.make_node("BatchNormalization", ["x", "scale.copy", "bias.copy", "mean", "var"], ["n"], epsilon=1e-5),
        helper.make_node("Relu", ["n"], ["r"]),
        helper.make_node("Conv", ["r", "w.copy"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "aliased",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, channels, 7, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializer=inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_an_identity_of_a_weight_is_the_weight_and_batch_norm_folds_through_it() -> None:
    """DenseNet-121's 31 norms whose scale and bias came through an Identity computed
    scale / sqrt(var + eps) per element at run time: the Identity hid that they are known."""
    module, params = xrelay.from_onnx(aliased_weights_model())
    text = str(module)
    assert "relay.sqrt" not in text and "relay.divide" not in text and "relay.subtract" not in text
    assert sorted(params) == ["bias", "mean", "scale", "var", "w"]


@pytest.mark.parametrize("target", [*isa_params(), "opencl"])
def test_aliased_weights_built_match_onnx(target: str) -> None:
    x = RNG.standard_normal((1, 5, 7, 3)).astype(np.float32)
    targets = ("c", target) if target == "opencl" else (target,)
    check_against_onnx(aliased_weights_model(), {"x": x}, targets)
