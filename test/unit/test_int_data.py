"""int64 and bool tensors through the graph (issue 32, item 2): each op on each dtype it takes,
interpreted against numpy and built on C and OpenCL against the interpreter; the ONNX patterns
transformers export (an embedding Gather of token ids, position ids, attention masks) against
onnx's reference evaluator; and the errors: an op on a dtype it does not take, a Cast to a
type relay tensors do not hold, an input of the wrong dtype, a device that cannot hold one."""

from __future__ import annotations

import os

os.environ.setdefault("POCL_DEVICES", "pthread pthread")

from collections.abc import Callable

import numpy as np
import pytest
from onnx import ModelProto, TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator
from xdsl.ir import SSAValue

import xrelay
from xrelay.frontend.builder import Builder
from xrelay.transforms.plan_devices import PlanDevicesPass

RNG = np.random.default_rng(0)
TARGETS = [("c",), ("opencl",)]
SHAPE = (3, 5)


def sample(dtype: str, shape: tuple[int, ...] = SHAPE) -> np.ndarray:
    """Random values of `dtype`: small ints of both signs (with repeats, so comparisons tie),
    floats, and bools."""
    if dtype == "int64":
        return RNG.integers(-6, 7, shape).astype(np.int64)
    if dtype == "bool":
        return RNG.integers(0, 2, shape).astype(np.bool_)
    return RNG.integers(-6, 7, shape).astype(np.float32) / np.float32(2)


def check_everywhere(build: Callable[[Builder], SSAValue], inputs: dict[str, np.ndarray], want: np.ndarray) -> None:
    """The program `build` makes, on `inputs`: the interpreter equals numpy's `want` (dtype
    and values), and C and OpenCL equal the interpreter."""
    b = Builder()
    args = {name: b.input(name, value.shape, value.dtype.name) for name, value in inputs.items()}
    module = b.finish(build_with(b, build, args))
    got = xrelay.interpret(module, inputs)
    assert isinstance(got, np.ndarray)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    for targets in TARGETS:
        out = xrelay.build(module, targets=targets).run(**inputs)
        assert isinstance(out, np.ndarray)
        assert out.dtype == want.dtype, targets
        np.testing.assert_array_equal(out, got, err_msg=str(targets))


def build_with(b: Builder, build: Callable[..., SSAValue], args: dict[str, SSAValue]) -> SSAValue:
    return build(b, *args.values())


BINARY: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "add": np.add,
    "subtract": np.subtract,
    "multiply": np.multiply,
    "maximum": np.maximum,
    "minimum": np.minimum,
}
COMPARE: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "equal": np.equal,
    "not_equal": np.not_equal,
    "less": np.less,
    "less_equal": np.less_equal,
    "greater": np.greater,
    "greater_equal": np.greater_equal,
}


@pytest.mark.parametrize("name", BINARY)
def test_int64_arithmetic_broadcasts(name: str) -> None:
    a, c = sample("int64"), sample("int64", (1, SHAPE[1]))
    check_everywhere(lambda b, x, y: getattr(b, name)(x, y), {"a": a, "c": c}, BINARY[name](a, c))


def test_int64_divide_truncates_toward_zero_and_by_zero_gives_zero() -> None:
    """C's division by zero would trap (SIGFPE); relay's int64 division gives 0 there."""
    a, c = sample("int64"), sample("int64")
    c[0, :2] = 0
    want = np.where(c == 0, 0, np.sign(a) * np.sign(c) * (np.abs(a) // np.where(c == 0, 1, np.abs(c))))
    check_everywhere(lambda b, x, y: b.divide(x, y), {"a": a, "c": c}, want)


@pytest.mark.parametrize("name", ["sum", "max", "min"])
def test_int64_reductions(name: str) -> None:
    """attention_mask.sum(-1) and the like: int64 sums, maxima and minima stay int64."""
    a = sample("int64", (3, 4, 5))
    want = getattr(np, name)(a, axis=(0, 2), keepdims=True)
    check_everywhere(lambda b, x: getattr(b, name)(x, axis=[0, 2], keepdims=True), {"a": a}, want)


@pytest.mark.parametrize("name", ["negative", "abs", "relu"])
def test_int64_unary(name: str) -> None:
    a = sample("int64")
    want = {"negative": -a, "abs": np.abs(a), "relu": np.maximum(a, 0)}[name]
    check_everywhere(lambda b, x: b.nn.relu(x) if name == "relu" else getattr(b, name)(x), {"a": a}, want)


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool"])
@pytest.mark.parametrize("name", COMPARE)
def test_comparisons_give_bool(name: str, dtype: str) -> None:
    a, c = sample(dtype), sample(dtype, (SHAPE[0], 1))
    check_everywhere(lambda b, x, y: getattr(b, name)(x, y), {"a": a, "c": c}, COMPARE[name](a, c))


def test_not_equal_of_nan_is_true_as_isnan() -> None:
    a = sample("float32")
    a[0, 1] = a[2, 3] = np.nan
    check_everywhere(lambda b, x: b.not_equal(x, x), {"a": a}, np.isnan(a))


def test_logic() -> None:
    p, q = sample("bool"), sample("bool", (1, SHAPE[1]))

    def build(b: Builder, x: SSAValue, y: SSAValue) -> SSAValue:
        return b.logical_or(b.logical_and(b.logical_not(x), y), b.logical_and(x, b.logical_not(y)))

    check_everywhere(build, {"p": p, "q": q}, np.logical_xor(p, q))


@pytest.mark.parametrize("source", ["float32", "int64", "bool"])
@pytest.mark.parametrize("target", ["float32", "int64", "bool"])
def test_cast(source: str, target: str) -> None:
    a = sample(source)
    if source == "float32":
        a = a * np.float32(1.7)  # fractions of both signs: float to int64 truncates toward zero
    check_everywhere(lambda b, x: b.cast(x, target), {"a": a}, a.astype(target))


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool"])
def test_where_broadcasts_its_three_operands(dtype: str) -> None:
    cond, x, y = sample("bool", (SHAPE[0], 1)), sample(dtype, (1, SHAPE[1])), sample(dtype)
    check_everywhere(lambda b, c, u, v: b.where(c, u, v), {"cond": cond, "x": x, "y": y}, np.where(cond, x, y))


@pytest.mark.parametrize("dtype", ["int64", "bool"])
def test_data_movement_of_integers(dtype: str) -> None:
    """Transpose, reshape, slices, concatenation and broadcasts move int64 and bool elements
    like float ones (in one fused kernel)."""
    a = sample(dtype, (2, 3, 4))
    want_t = a.transpose(0, 2, 1).reshape(2, 12)[:, 1:12:2]
    want = np.concatenate([want_t, want_t[:, :1]], 1)
    check_everywhere(build_concat, {"a": a}, want)


def build_concat(b: Builder, x: SSAValue) -> SSAValue:
    t = b.reshape(b.transpose(x, (0, 2, 1)), (2, 12))
    s = b.strided_slice(t, [0, 1], [2, 12], [1, 2])
    first = b.squeeze(b.broadcast_to(b.expand_dims(b.take(s, [0], axis=1), 1), (2, 1, 1)), [2])
    return b.concatenate([s, first], 1)


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool"])
def test_take_of_run_time_indices(dtype: str) -> None:
    """Negative indices count from the end; out-of-range ones are clipped (TVM's mode=clip)."""
    table = sample(dtype, (7, 4))
    ids = np.array([[0, 6, -1, 3], [-7, 2, 9, -12]], np.int64)
    want = np.take(table, np.where(ids < 0, ids + 7, ids), axis=0, mode="clip")
    check_everywhere(lambda b, t, i: b.take(t, i, axis=0), {"table": table, "ids": ids}, want)


def test_take_along_an_inner_axis_fuses_with_int_arithmetic() -> None:
    table = sample("float32", (2, 9, 3))
    ids = RNG.integers(0, 5, (4,)).astype(np.int64)
    want = np.take(table, ids * 2 - 1 + 1, axis=1) + np.float32(1)

    def build(b: Builder, t: SSAValue, i: SSAValue) -> SSAValue:
        return b.add(b.take(t, b.add(b.subtract(b.multiply(i, 2), 1), 1), axis=1), 1.0)

    check_everywhere(build, {"table": table, "ids": ids}, want)


def test_int_ops_fuse_into_one_kernel() -> None:
    """The mask path `(1 - float(mask)) * -10000 + where(ids == 0, -1, 0)` is one kernel."""
    b = Builder()
    mask, ids = b.input("mask", SHAPE, "int64"), b.input("ids", SHAPE, "int64")
    bias = b.multiply(b.subtract(1.0, b.cast(mask, "float32")), -10000.0)
    module = b.finish(b.add(bias, b.where(b.equal(ids, 0), -1.0, 0.0)))
    kernels = [op for op in xrelay.build(module, targets=("c",)).graph["nodes"] if op["op"] == "tvm_op"]
    assert len(kernels) == 1


# --- errors -----------------------------------------------------------------------------------


def test_an_op_names_the_dtypes_it_takes() -> None:
    b = Builder()
    ids = b.input("ids", SHAPE, "int64")
    with pytest.raises(
        xrelay.VerifyError, match=r"'relay.exp' takes float32 tensors, but operand 0 is tensor<3x5xi64>"
    ):
        b.exp(ids)
    with pytest.raises(xrelay.VerifyError, match="one element type"):
        b.add(ids, b.input("x", SHAPE))
    with pytest.raises(xrelay.VerifyError, match="'relay.logical_not' takes bool tensors"):
        b.logical_not(ids)


def test_cast_to_an_unknown_dtype_is_a_verification_error() -> None:
    b = Builder()
    with pytest.raises(
        xrelay.VerifyError, match="expected dtype to be one of float32, int64, bool, but found 'float16'"
    ):
        b.cast(b.input("x", SHAPE), "float16")


def test_run_rejects_an_input_of_the_wrong_dtype() -> None:
    b = Builder()
    module = b.finish(b.cast(b.input("ids", SHAPE, "int64"), "float32"))
    exe = xrelay.build(module, targets=("c",))
    with pytest.raises(xrelay.Error, match=r"ids must have dtype int64, but has dtype float32"):
        exe.run(ids=np.zeros(SHAPE, np.float32))
    with pytest.raises(xrelay.Error, match=r"must be int64 .* but has dtype int32"):
        xrelay.interpret(module, {"ids": np.zeros(SHAPE, np.int32)})


def test_a_device_that_cannot_hold_a_dtype_is_a_placement_error() -> None:
    """Vulkan's 64-bit integers are an optional feature: its row of device_kinds holds no int64."""
    b = Builder()
    module = b.finish(b.cast(b.add(b.input("ids", SHAPE, "int64"), 1), "float32"))
    with pytest.raises(
        xrelay.Error, match=r"computes tensor<.*xi64> \(int64\) on .*vulkan devices hold only float32, bool"
    ):
        PlanDevicesPass(targets=("c", "vulkan"), default_device="vulkan").apply(xrelay.context(), module)


# --- ONNX: the patterns transformers export ------------------------------------------------------

S, VOCAB, D = 6, 20, 8


def transformer_inputs() -> dict[str, np.ndarray]:
    mask = np.ones((2, S), np.int64)
    mask[0, 4:] = 0
    return {"input_ids": RNG.integers(0, VOCAB, (2, S)).astype(np.int64), "attention_mask": mask}


def model(nodes: list[object], outputs: list[tuple[str, int]], initializers: list[object]) -> ModelProto:
    graph = helper.make_graph(
        nodes,  # pyright: ignore[reportArgumentType]
        "transformer_data",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, [2, S]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, [2, S]),
        ],
        [helper.make_tensor_value_info(name, ty, None) for name, ty in outputs],
        initializers,  # pyright: ignore[reportArgumentType]
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def const(name: str, value: np.ndarray) -> object:
    return numpy_helper.from_array(value, name)


def embeddings_and_masks() -> ModelProto:
    """BERT's and GPT-2's embeddings (token Gather, position ids by Range/Expand), BERT's
    extended mask `(1 - Cast(mask)) * min`, and the Equal/Not/And/Where mask path of torch's
    scaled dot-product attention, with int64 arithmetic on masks."""
    n = helper.make_node
    nodes = [
        n("Gather", ["wte", "input_ids"], ["tok"], axis=0),
        n("Shape", ["input_ids"], ["shape"]),
        n("Gather", ["shape", "one"], ["seq"], axis=0),
        n("Range", ["zero", "seq", "one"], ["range"]),
        n("Unsqueeze", ["range", "zero1"], ["range2"]),
        n("Expand", ["range2", "shape"], ["position_ids"]),
        n("Gather", ["wpe", "position_ids"], ["pos"], axis=0),
        n("Add", ["tok", "pos"], ["embeddings"]),
        n("Unsqueeze", ["attention_mask", "axes12"], ["mask4"]),
        n("Cast", ["mask4"], ["maskf"], to=TensorProto.FLOAT),
        n("Sub", ["onef", "maskf"], ["inverted"]),
        n("Mul", ["inverted", "lowest"], ["extended"]),
        n("Equal", ["attention_mask", "zero"], ["masked"]),
        n("Not", ["masked"], ["kept"]),
        n("GreaterOrEqual", ["position_ids", "zero"], ["causal"]),
        n("And", ["kept", "causal"], ["allowed"]),
        n("Where", ["allowed", "zerof", "lowest"], ["bias"]),
        n("IsNaN", ["extended"], ["nan"]),
        n("Cast", ["allowed"], ["allowed64"], to=TensorProto.INT64),
        n("Mul", ["allowed64", "input_ids"], ["kept_ids"]),
        n("Sub", ["kept_ids", "one"], ["shifted_ids"]),
        n("ConstantOfShape", ["shape"], ["ones"], value=numpy_helper.from_array(np.array([1], np.int64))),
        n("Add", ["shifted_ids", "ones"], ["ids_again"]),
    ]
    f32 = np.float32
    initializers = [
        const("wte", RNG.standard_normal((VOCAB, D)).astype(f32)),
        const("wpe", RNG.standard_normal((16, D)).astype(f32)),
        const("zero", np.array(0, np.int64)),
        const("one", np.array(1, np.int64)),
        const("zero1", np.array([0], np.int64)),
        const("axes12", np.array([1, 2], np.int64)),
        const("onef", np.array(1.0, f32)),
        const("zerof", np.array(0.0, f32)),
        const("lowest", np.array(np.finfo(f32).min, f32)),
    ]
    outputs = [
        ("embeddings", TensorProto.FLOAT),
        ("extended", TensorProto.FLOAT),
        ("bias", TensorProto.FLOAT),
        ("nan", TensorProto.BOOL),
        ("ids_again", TensorProto.INT64),
    ]
    return model(nodes, outputs, initializers)


@pytest.mark.parametrize("targets", [("c",), ("c", "opencl")])
def test_transformer_embeddings_and_masks_match_onnx(targets: tuple[str, ...]) -> None:
    onnx_model = embeddings_and_masks()
    inputs = transformer_inputs()
    want = ReferenceEvaluator(onnx_model).run(None, inputs)  # pyright: ignore[reportUnknownMemberType]
    module, params = xrelay.from_onnx(onnx_model)
    assert "tensor<2x6xi64>" in str(module)
    default = "opencl" if "opencl" in targets else None
    got = xrelay.build(module, targets=targets, params=params, default_device=default).run(**inputs)
    assert isinstance(got, tuple)
    for name, g, w in zip(["embeddings", "extended", "bias", "nan", "ids_again"], got, want):
        w = np.asarray(w)
        assert g.dtype == w.dtype, name
        np.testing.assert_allclose(g, w, rtol=1e-6, err_msg=name)


@pytest.mark.parametrize(
    ("to", "name"), [(TensorProto.FLOAT16, "float16"), (TensorProto.STRING, "string"), (TensorProto.INT32, "int32")]
)
def test_cast_to_an_unsupported_type_names_it(to: int, name: str) -> None:
    nodes = [helper.make_node("Cast", ["attention_mask"], ["m"], name="to_other", to=to)]
    onnx_model = model(nodes, [("m", to)], [])
    with pytest.raises(xrelay.OnnxImportError, match=f"Cast 'to_other': casting a tensor to {name} is not supported"):
        xrelay.from_onnx(onnx_model)


def test_an_input_of_an_unsupported_type_names_it() -> None:
    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT16, None)],
    )
    onnx_model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(
        xrelay.OnnxImportError, match="input 'x' is of element type float16; xrelay takes float32, int64"
    ):
        xrelay.from_onnx(onnx_model)


# --- memory, graph JSON and artifacts ---------------------------------------------------------------


def test_graph_records_dtypes_and_storage_holds_their_sizes(tmp_path: object) -> None:
    """The graph JSON's dltype names each tensor's dtype; storage is sized by element size (8
    bytes an int64, 1 a bool); an artifact saved and loaded takes and gives them alike."""
    from pathlib import Path

    b = Builder()
    ids = b.input("ids", (2, 8), "int64")
    kept = b.not_equal(ids, 0)
    module = b.finish(kept, b.cast(kept, "int64"))
    exe = xrelay.build(module, targets=("c",))
    dltypes = exe.graph["attrs"]["dltype"][1]
    assert dltypes == ["int64", "int64", "bool", "int64"]  # ids, the constant 0, the two results
    sizes = sorted(exe.executor.storage_sizes.values())
    assert 16 in sizes and 128 in sizes  # a 2x8 bool tensor and a 2x8 int64 one
    values = np.array([[0, 3, -1, 0, 5, 0, 0, 2]] * 2, np.int64)
    path = Path(str(tmp_path)) / "mask.xrelay"
    exe.save(path)
    for runner in (exe, xrelay.load(path)):
        kept_out, ints = runner.run(ids=values)
        np.testing.assert_array_equal(kept_out, values != 0)
        assert kept_out.dtype == np.bool_ and ints.dtype == np.int64


# --- onnx's node tests of these ops, every input computed at run time ---------------------------

DATA_OPS = frozenset(
    [
        "Equal",
        "Less",
        "LessOrEqual",
        "Greater",
        "GreaterOrEqual",
        "And",
        "Or",
        "Not",
        "Where",
        "IsNaN",
        "Cast",
        "CastLike",
        "Gather",
    ]
)
DATA_TYPES = frozenset({TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL})


def data_cases() -> list[object]:
    """onnx's single-node cases of DATA_OPS whose inputs and outputs are all float32, int64 or
    bool (test_onnx_conformance.py makes integer inputs initializers; here they stay inputs)."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from onnx_node_cases import cases

    selected: list[object] = []
    for case in cases():
        graph = case.model().graph
        values = [*graph.input, *graph.output]
        one_op = len(graph.node) == 1 and graph.node[0].op_type in DATA_OPS
        if one_op and all(v.type.tensor_type.elem_type in DATA_TYPES for v in values):
            selected.append(case)
    return selected


@pytest.mark.parametrize("case", data_cases(), ids=lambda c: getattr(c, "name", "?"))
@pytest.mark.parametrize("targets", [("c",), ("opencl",)])
def test_onnx_node_case_with_run_time_data(case: object, targets: tuple[str, ...]) -> None:
    from onnx_node_cases import NodeCase

    assert isinstance(case, NodeCase)
    model = case.model()
    for opset in model.opset_import:  # And, Or, Not (opsets 1, 7) and the comparisons are
        opset.version = max(opset.version, 13)  # unchanged since: the same models at opset 13
    module, params = xrelay.from_onnx(model)
    exe = xrelay.build(module, targets=targets, params=params)
    for inputs, outputs in case.data_sets():
        got = exe.run(*inputs)
        got = got if isinstance(got, tuple) else (got,)
        for g, want in zip(got, outputs):
            assert g.dtype == want.dtype
            np.testing.assert_array_equal(g, want)


@pytest.mark.parametrize("targets", TARGETS)
def test_params_keep_their_dtype_when_bound(targets: tuple[str, ...]) -> None:
    """An int64 or bool parameter bound with `params=` becomes a constant of its own dtype
    (it was once written as float32 bytes under the parameter's int type)."""
    b = Builder()
    table, ids, keep = b.input("table", (7, 4)), b.input("ids", (2, 3), "int64"), b.input("keep", (2, 3, 4), "bool")
    module = b.finish(b.where(keep, b.take(table, ids, axis=0), 0.0))
    inputs = {"table": sample("float32", (7, 4)), "ids": RNG.integers(0, 7, (2, 3)), "keep": sample("bool", (2, 3, 4))}
    want = xrelay.interpret(module, inputs)
    params = {"ids": inputs["ids"], "keep": inputs["keep"]}
    out = xrelay.build(module, targets=targets, params=params).run(inputs["table"])
    np.testing.assert_array_equal(out, want)
