"""Writes a small ONNX model for the opt-tool tests: `make_model.py OUT.onnx [KIND]`.

KIND `cnn` (default): Conv (a 4x1x3x3 weight, large enough to be elided) and Relu, the input
named `input.1`; `bad`: an op the importer does not take; `dynamic`: a dynamic batch."""

import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper, save

out, kind = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "cnn"
weight = numpy_helper.from_array(np.linspace(-1, 1, 36, dtype=np.float32).reshape(4, 1, 3, 3), "conv.weight")
nodes = [
    helper.make_node("Conv", ["input.1", "conv.weight"], ["c"], name="conv1", pads=[1, 1, 1, 1]),
    helper.make_node("Hardmax" if kind == "bad" else "Relu", ["c"], ["y"], name="act"),
]
batch = "N" if kind == "dynamic" else 1
graph = helper.make_graph(
    nodes,
    "cnn",
    [helper.make_tensor_value_info("input.1", TensorProto.FLOAT, [batch, 1, 5, 5])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    [weight],
)
save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), out)
