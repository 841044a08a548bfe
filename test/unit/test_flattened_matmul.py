"""
A MatMul of a batch of matrices by one matrix, as torch exports Linear on [seq, batch, d]
(ViT's attention) or [n, h, w, c] (ConvNeXt's MLP): imported as one 2-D matmul of the batch's
rows (`Builder.unflatten`), its bias and GELU built on the 2-D product so that they stay its
epilogue. Checked against xrelay.interpret and numpy at edge shapes on the C ISA levels and
OpenCL, and the kernels it becomes.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from isa_levels import isa_params
from onnx import ModelProto, TensorProto, helper, numpy_helper
from tolerances import assert_close_to_sum_of_products

import xrelay

RNG = np.random.default_rng(3)
erf = np.vectorize(math.erf)


def linear(lead: list[int], k: int, n: int, epilogue: str) -> ModelProto:
    """MatMul(x [*lead, k], w [k, n]) + b [n], then `epilogue`: "" (none), "gelu" (Div, Erf,
    Add, Mul, Mul as torch writes it) or "residual" (+ x's own shape, which is not per column)."""
    inits = {
        "w": RNG.standard_normal((k, n)).astype(np.float32) / np.sqrt(k),
        "b": RNG.standard_normal(n).astype(np.float32),
        "s2": np.array(np.sqrt(2.0), np.float32),
        "one": np.array(1.0, np.float32),
        "half": np.array(0.5, np.float32),
    }
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Add", ["m", "b"], ["a"])]
    if epilogue == "gelu":
        nodes += [
            helper.make_node("Div", ["a", "s2"], ["d"]),
            helper.make_node("Erf", ["d"], ["e"]),
            helper.make_node("Add", ["e", "one"], ["e1"]),
            helper.make_node("Mul", ["a", "e1"], ["g"]),
            helper.make_node("Mul", ["g", "half"], ["y"]),
        ]
    elif epilogue == "residual":
        assert k == n
        nodes.append(helper.make_node("Add", ["a", "x"], ["y"]))
    else:
        nodes.append(helper.make_node("Identity", ["a"], ["y"]))
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [*lead, k])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(v, name) for name, v in inits.items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def reference(x: np.ndarray, proto: ModelProto, epilogue: str) -> np.ndarray:
    v = {t.name: numpy_helper.to_array(t).astype(np.float64) for t in proto.graph.initializer}
    a = x.astype(np.float64) @ v["w"] + v["b"]
    if epilogue == "gelu":
        return a * (1 + erf(a / np.sqrt(2.0))) * 0.5
    return a + x if epilogue == "residual" else a


# (lead axes, k, n, epilogue): rows of one (ViT's [197, 1, 768]), a spatial batch of rows
# fewer than a tile (ConvNeXt's late stages), odd sizes, a residual that is not per column
CASES = {
    "seq_batch1": ([37, 1], 64, 96, ""),
    "nhwc_gelu": ([1, 7, 7], 48, 80, "gelu"),
    "odd_gelu": ([3, 5], 33, 17, "gelu"),
    "residual": ([2, 9], 40, 40, "residual"),
}


def check(case: str, targets: tuple[str, ...]) -> None:
    lead, k, n, epilogue = CASES[case]
    proto = linear(lead, k, n, epilogue)
    x = RNG.standard_normal((*lead, k)).astype(np.float32)
    module, params = xrelay.from_onnx(proto)
    interpreted = np.asarray(xrelay.interpret(module, {"x": x, **params}))
    got = xrelay.build(module, targets=targets, default_device=targets[-1], params=params).run({"x": x})
    want = reference(x, proto, epilogue)
    w = numpy_helper.to_array(next(t for t in proto.graph.initializer if t.name == "w"))
    terms = np.abs(x.astype(np.float64)) @ np.abs(w.astype(np.float64)) + 1.0  # + bias, GELU, residual
    assert_close_to_sum_of_products(interpreted, want, terms, k, c=4.0, what=f"{case} interpreted")
    assert_close_to_sum_of_products(np.asarray(got), interpreted, terms, k, c=4.0, what=f"{case} on {targets}")


@pytest.mark.parametrize("target", isa_params())
@pytest.mark.parametrize("case", list(CASES))
def test_batch_of_rows_by_one_matrix_on_c(case: str, target: str) -> None:
    check(case, (target,))


@pytest.mark.parametrize("case", list(CASES))
def test_batch_of_rows_by_one_matrix_on_opencl(case: str) -> None:
    check(case, ("c", "opencl"))


def test_it_is_one_2d_matmul_with_its_epilogue() -> None:
    """ViT's shape: [197, 1, 768] rows by [768, 2304] would be 197 products of one row each;
    imported, it is one [197, 768] matmul, its bias and GELU in its kernel (the reshapes
    around it cost no kernel)."""
    module, params = xrelay.from_onnx(linear([197, 1], 64, 128, "gelu"))
    text = str(module)
    assert "tensor<197x64xf32>, tensor<64x128xf32>) -> tensor<197x128xf32>" in text, text
    exe = xrelay.build(module, targets=("c",), params=params)
    assert [node for node, _ in exe.placement()] == ["fused_nn_matmul_add_divide_erf_add_multiply_multiply"]


def test_a_residual_of_the_result_shape_joins_the_epilogue() -> None:
    """x + matmul(x, w) + b: x is reshaped to the product's rows (a view), so the residual is
    the matmul kernel's too."""
    module, params = xrelay.from_onnx(linear([6, 2], 16, 16, "residual"))
    exe = xrelay.build(module, targets=("c",), params=params)
    assert [node for node, _ in exe.placement()] == ["fused_nn_matmul_add_add"]


def test_a_batch_of_one_matrix_is_left_as_it_is() -> None:
    """[1, m, k] by [k, n] is already one matrix's rows: no reshapes around it."""
    module, _ = xrelay.from_onnx(linear([1, 9], 8, 16, ""))
    assert "relay.reshape" not in str(module)
