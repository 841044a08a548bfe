"""onnx's backend node tests through xrelay.from_onnx, build and run.

Every generated case (see onnx_node_cases.py: made once into a cache outside the repository)
whose model is one node of an op in `OPS`, or such an op expanded into its function body (the
`_expanded` cases, which exercise folding shape computations at import), and whose tensors are
float32 is a test: integer and
bool inputs (shapes, axes, pads, split sizes, exponents, indices) become initializers, which
the importer takes as values known at import; the rest is imported, built for C and run on
every data set, compared with the expected outputs. Every fifth case also runs on OpenCL. A
case in `UNSUPPORTED` must instead fail to import with `xrelay.OnnxImportError` matching its
reason, so a case that starts to work (or fails another way) is noticed.

`python test/unit/test_onnx_conformance.py` prints pass / unsupported / total per op type.
"""

from __future__ import annotations

import os

os.environ.setdefault("POCL_DEVICES", "pthread pthread")

import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from onnx import ModelProto, TensorProto, numpy_helper

import xrelay

sys.path.insert(0, str(Path(__file__).parent))
from onnx_node_cases import NodeCase, cases

# The op types of the importer's contract (issue 15, item 2).
_OP_LIST = """
    Add Sub Mul Div Pow Sqrt Reciprocal Exp Log Tanh Sigmoid Erf Abs Neg Relu LeakyRelu Clip
    Max Min Sum ReduceSum ReduceMean ReduceMax ReduceMin Softmax MatMul Gemm Conv
    MaxPool AveragePool GlobalAveragePool BatchNormalization LayerNormalization Gelu
    Reshape Transpose Flatten Squeeze Unsqueeze Concat Slice Split Expand Pad
    Identity Dropout Constant Gather
    HardSigmoid HardSwish Resize GatherElements ConvTranspose LSTM GRU
"""
OPS = frozenset(_OP_LIST.split())

# Cases the importer declines, with the error each must raise (a regular expression).
_TRAINING = r"training_mode = (1|true) is not supported \(inference only\)"
_OPSET_11 = r"the model uses ONNX opset 11; xrelay imports opsets 13 to 21"
_RESIZE = r"ONNX node Resize \(unnamed, output 'Y'\): attribute "
_CUBIC = _RESIZE + r"mode = 'cubic' is not supported"
_ANTIALIAS = _RESIZE + r"antialias = 1 is not supported"
_CROP = _RESIZE + r"coordinate_transformation_mode = 'tf_crop_and_resize' is not supported"
UNSUPPORTED: dict[str, str] = {
    "test_convtranspose_3d": r"only 1-D and 2-D transposed convolutions \(NCL or NCHW input\) are supported",
    **{
        f"test_resize_{case}": _CUBIC
        for case in (
            "downsample_scales_cubic",
            "downsample_scales_cubic_A_n0p5_exclude_outside",
            "downsample_scales_cubic_align_corners",
            "downsample_sizes_cubic",
            "upsample_scales_cubic",
            "upsample_scales_cubic_A_n0p5_exclude_outside",
            "upsample_scales_cubic_align_corners",
            "upsample_scales_cubic_asymmetric",
            "upsample_sizes_cubic",
        )
    },
    **{
        f"test_resize_{case}": _ANTIALIAS
        for case in (
            "downsample_scales_linear_antialias",
            "downsample_sizes_linear_antialias",
        )
    },
    "test_resize_downsample_scales_cubic_antialias": _CUBIC,
    "test_resize_downsample_sizes_cubic_antialias": _CUBIC,
    **{
        f"test_resize_{case}": _CROP
        for case in (
            "tf_crop_and_resize",
            "tf_crop_and_resize_axes_2_3",
            "tf_crop_and_resize_axes_3_2",
            "tf_crop_and_resize_extrapolation_value",
        )
    },
    "test_batchnorm_epsilon_training_mode": _TRAINING,
    "test_batchnorm_example_training_mode": _TRAINING,
    "test_training_dropout": _TRAINING,
    "test_training_dropout_default": _TRAINING,
    "test_training_dropout_zero_ratio": _TRAINING,
    "test_dropout_default_old": _OPSET_11,
    "test_dropout_random_old": _OPSET_11,
}

OPENCL_EVERY = 5


def op_type(case: NodeCase) -> str | None:
    """The case's op type when it is an op in OPS, as one node or expanded into the nodes of
    its function body, with float32 tensors (integer and bool inputs aside); else None."""
    model = case.model()
    if not all(v.type.tensor_type.elem_type == TensorProto.FLOAT for v in model.graph.output):
        return None
    data = {TensorProto.FLOAT, TensorProto.INT64, TensorProto.INT32, TensorProto.BOOL}
    if not all(v.type.tensor_type.elem_type in data for v in model.graph.input):
        return None
    op = expanded_op(model) if len(model.graph.node) > 1 else model.graph.node[0].op_type
    return op if op in OPS and all(n.domain in ("", "ai.onnx") for n in model.graph.node) else None


def expanded_op(model: ModelProto) -> str | None:
    """The op whose function body a multi-node case is: its values are named `<Op>_test_...`."""
    first = model.graph.node[0].output[0]
    return first.split("_test_", 1)[0] if "_test_" in first else None


def selected() -> list[tuple[NodeCase, str]]:
    return [(case, op) for case in cases() if (op := op_type(case)) is not None]


SELECTED = selected()


# Float inputs that the importer needs known at import, as exporters write them (constants).
CONSTANT_FLOAT_INPUTS = {"Resize": {1, 2}}  # roi, scales


def with_constant_inputs(model: ModelProto, inputs: list[np.ndarray]) -> tuple[ModelProto, list[np.ndarray]]:
    """The model with its integer and bool inputs (and those of CONSTANT_FLOAT_INPUTS) as
    initializers, and the remaining inputs."""
    model = ModelProto.FromString(model.SerializeToString())
    constant = {
        node.input[i]
        for node in model.graph.node
        for i in CONSTANT_FLOAT_INPUTS.get(node.op_type, ())
        if i < len(node.input)
    }
    kept, rest = [], []
    for info, array in zip(list(model.graph.input), inputs):
        if info.type.tensor_type.elem_type == TensorProto.FLOAT and info.name not in constant:
            kept.append(info)
            rest.append(array)
        else:
            model.graph.initializer.append(numpy_helper.from_array(array, info.name))
    del model.graph.input[:]
    model.graph.input.extend(kept)
    return model, rest


def run_case(case: NodeCase, targets: tuple[str, ...]) -> None:
    data_sets = case.data_sets()
    model, _ = with_constant_inputs(case.model(), data_sets[0][0])
    module, params = xrelay.from_onnx(model)
    exe = xrelay.build(module, targets=targets, default_device=targets[-1], params=params)
    rtol, atol = case.tolerance()
    for inputs, outputs in data_sets:
        _, arrays = with_constant_inputs(case.model(), inputs)
        got = exe.run(*arrays)
        got = got if isinstance(got, tuple) else (got,)
        for g, want in zip(got, outputs):
            np.testing.assert_allclose(g, want, rtol=max(rtol, 1e-5), atol=max(atol, 1e-5))


@pytest.mark.parametrize(
    "case,targets",
    [
        pytest.param(case, targets, id=f"{case.name}-{targets[-1]}")
        for i, (case, _) in enumerate(SELECTED)
        for targets in ([("c",), ("c", "opencl")] if i % OPENCL_EVERY == 0 else [("c",)])
    ],
)
def test_node_case(case: NodeCase, targets: tuple[str, ...]) -> None:
    if case.name in UNSUPPORTED:
        with pytest.raises(xrelay.OnnxImportError, match=UNSUPPORTED[case.name]):
            run_case(case, targets)
    else:
        run_case(case, targets)


def test_unsupported_table_names_selected_cases() -> None:
    names = {case.name for case, _ in SELECTED}
    assert sorted(set(UNSUPPORTED) - names) == []


def summary() -> str:
    total, unsupported = Counter[str](), Counter[str]()
    for case, op in SELECTED:
        total[op] += 1
        unsupported[op] += case.name in UNSUPPORTED
    rows = [f"{'op':<20} {'pass':>5} {'unsup':>5} {'total':>5}"]
    for op in sorted(total):
        rows.append(f"{op:<20} {total[op] - unsupported[op]:>5} {unsupported[op]:>5} {total[op]:>5}")
    n, u = sum(total.values()), sum(unsupported.values())
    rows.append(f"{'all':<20} {n - u:>5} {u:>5} {n:>5}")
    return "\n".join(rows)


if __name__ == "__main__":
    print(summary())
