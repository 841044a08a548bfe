"""concat_slices: a concatenate and the elementwise ops after it, one input's slice per branch.

Each case is a concatenate (followed, where said, by DenseNet's batch norm and relu: a
per-channel multiply and add, then relu) that the schedule takes, built for C at each ISA
level and for OpenCL and checked against `xrelay.interpret` on random inputs: an odd number
of inputs of odd sizes (the binary tree's uneven halves), batch > 1, a size-0 input, a
concatenation along the height (work items of two axes), an input computed inside the group,
and 25 inputs (DenseNet's largest). And the groups it leaves to others: a concatenation
along the last axis, and one read at other indices (a transpose after it).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from isa_levels import OPENCL_PLANNED, isa_params
from onnx import TensorProto, helper, numpy_helper
from test_packed_conv import schedules

import xrelay

Shape = tuple[int, ...]


def t(shape: Shape) -> str:
    return f"tensor<{'x'.join(map(str, shape))}xf32>"


def concat_program(inputs: list[Shape], axis: int, epilogue: bool = True, relu_first: bool = False) -> str:
    """@main(x0, .., s, b) = relu(concat(x0, ..) * s + b) with s, b per index of `axis` (without
    `epilogue`: the concatenate alone; with `relu_first`: x0 goes through a relu first)."""
    result = list(inputs[0])
    result[axis] = sum(shape[axis] for shape in inputs)
    out = tuple(result)
    per = (out[axis],) + (1,) * (len(out) - axis - 1)
    params = [f"%x{i}: {t(shape)}" for i, shape in enumerate(inputs)]
    names = [f"%x{i}" for i in range(len(inputs))]
    lines: list[str] = []
    if relu_first:
        lines.append(f"%r0 = relay.nn.relu %x0 : {t(inputs[0])}")
        names[0] = "%r0"
    types = ", ".join(t(shape) for shape in inputs)
    lines.append(f"%c = relay.concatenate {', '.join(names)} {{axis = {axis} : i64}} : ({types}) -> {t(out)}")
    last = "%c"
    if epilogue:
        params += [f"%s: {t(per)}", f"%b: {t(per)}"]
        lines += [
            f"%m = relay.multiply %c, %s : ({t(out)}, {t(per)}) -> {t(out)}",
            f"%a = relay.add %m, %b : ({t(out)}, {t(per)}) -> {t(out)}",
            f"%r = relay.nn.relu %a : {t(out)}",
        ]
        last = "%r"
    body = "\n  ".join(lines)
    return f"func.func @main({', '.join(params)}) -> {t(out)} {{\n  {body}\n  func.return {last} : {t(out)}\n}}"


def arrays_for(text: str, inputs: list[Shape], axis: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    arrays = {f"x{i}": rng.standard_normal(shape).astype(np.float32) for i, shape in enumerate(inputs)}
    if "%s:" in text:
        total = sum(shape[axis] for shape in inputs)
        per = (total,) + (1,) * (len(inputs[0]) - axis - 1)
        arrays["s"] = rng.standard_normal(per).astype(np.float32)
        arrays["b"] = rng.standard_normal(per).astype(np.float32)
    return arrays


CASES: dict[str, tuple[list[Shape], int, bool, bool]] = {
    # name: inputs, axis, epilogue, relu_first
    "densenet_layer": ([(1, 64, 14, 14), (1, 32, 14, 14), (1, 32, 14, 14)], 1, True, False),
    "odd_inputs_batch": ([(2, 5, 7, 9), (2, 3, 7, 9), (2, 1, 7, 9), (2, 6, 7, 9), (2, 2, 7, 9)], 1, True, False),
    "empty_input": ([(1, 4, 5, 6), (1, 0, 5, 6), (1, 3, 5, 6)], 1, True, False),
    "along_height": ([(2, 3, 4, 10), (2, 3, 3, 10)], 2, True, False),
    "alone_relu_inside": ([(1, 16, 13, 13), (1, 16, 13, 13)], 1, False, True),
    "densenet_25_inputs": ([(1, 24, 7, 7)] + [(1, 8, 7, 7)] * 24, 1, True, False),
}


def program(name: str) -> str:
    inputs, axis, epilogue, relu_first = CASES[name]
    return concat_program(inputs, axis, epilogue, relu_first)


def check(text: str, arrays: dict[str, np.ndarray], targets: tuple[str, ...], device: str) -> None:
    expected = xrelay.interpret(xrelay.parse(text), arrays)
    got = xrelay.build(text, targets=targets, default_device=device).run(**arrays)
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", sorted(CASES))
def test_concat_slices_agrees_with_interpret_on_opencl(name: str) -> None:
    inputs, axis, _, _ = CASES[name]
    text = program(name)
    assert schedules(text, OPENCL_PLANNED) == ["concat_slices"]
    check(text, arrays_for(text, inputs, axis, 0), ("c", "opencl"), "opencl")


@pytest.mark.parametrize("target", isa_params())
@pytest.mark.parametrize("name", sorted(CASES))
def test_concat_slices_at_every_isa_level(name: str, target: str) -> None:
    inputs, axis, _, _ = CASES[name]
    text = program(name)
    assert schedules(text, target) == ["concat_slices"]
    check(text, arrays_for(text, inputs, axis, 1), (target,), "cpu")


def test_nan_and_inf_inputs_land_where_they_are() -> None:
    inputs, axis, _, _ = CASES["odd_inputs_batch"]
    text = program("odd_inputs_batch")
    arrays = arrays_for(text, inputs, axis, 2)
    arrays["x2"][1, 0, 3, 4] = np.nan  # channel 8 of the result
    arrays["x4"][0, 1, 6, 8] = -np.inf  # channel 16
    arrays["s"][16] = -1.0  # relu(-(-inf) * 1 + b) = inf
    expected = xrelay.interpret(xrelay.parse(text), arrays)
    assert np.isnan(expected[1, 8, 3, 4]) and expected[0, 16, 6, 8] == np.inf
    check(text, arrays, ("c",), "cpu")


@pytest.mark.parametrize(
    "text",
    [concat_program([(1, 4, 6), (1, 4, 9)], 2),  # along the last axis
     concat_program([(1, 3, 2, 3), (1, 3, 2, 3)], 1, epilogue=False)],  # 6 elements per work item
)  # fmt: skip
def test_leaves_last_axis_and_short_rows_to_elementwise(text: str) -> None:
    assert schedules(text) == ["elementwise"]


def test_leaves_a_concatenate_read_at_other_indices() -> None:
    """A transpose after the concatenate reads it at transposed indices: not this schedule's."""
    a, out = (1, 8, 8, 8), (1, 16, 8, 8)
    text = f"""func.func @main(%x0: {t(a)}, %x1: {t(a)}) -> {t(out)} {{
  %c = relay.concatenate %x0, %x1 {{axis = 1 : i64}} : ({t(a)}, {t(a)}) -> {t(out)}
  %p = relay.transpose %c {{axes = array<i64: 0, 1, 3, 2>}} : ({t(out)}) -> {t(out)}
  %r = relay.nn.relu %p : {t(out)}
  func.return %r : {t(out)}
}}"""
    assert "concat_slices" not in schedules(text)
    arrays = {"x0": np.ones(a, np.float32), "x1": -np.arange(512, dtype=np.float32).reshape(a)}
    check(text, arrays, ("c",), "cpu")


# Resize then concatenate (UNet's decoder): mode, its coordinate mode, scales (n, c, h, w),
# the resized input's and the skip's shapes. The 2x and 4x upsamplings interleave phases
# along the rows and columns (a reshape merging an axis of 2 or 4), which the schedule's loops
# unroll (`interleave_factors`); 3x is more phases than MAX_PHASES along a row.
RESIZES: dict[str, tuple[str, str, tuple[float, ...], Shape, Shape]] = {
    "linear_2x_odd": ("linear", "half_pixel", (1, 1, 2, 2), (2, 3, 5, 7), (2, 5, 10, 14)),
    "linear_4x": ("linear", "half_pixel", (1, 1, 4, 4), (1, 4, 3, 5), (1, 3, 12, 20)),
    "linear_3x": ("linear", "half_pixel", (1, 1, 3, 3), (1, 2, 4, 6), (1, 3, 12, 18)),
    "nearest_2x_batch": ("nearest", "asymmetric", (1, 1, 2, 2), (3, 5, 6, 9), (3, 2, 12, 18)),
    "linear_rows_only": ("linear", "half_pixel", (1, 1, 1, 2), (1, 3, 4, 17), (1, 2, 4, 34)),
}


def resize_concat(name: str) -> tuple[Any, dict[str, np.ndarray], dict[str, np.ndarray]]:
    """The ONNX Resize -> Concat(axis 1) of `RESIZES[name]`: (module, params, random inputs)."""
    mode, coordinates, scales, shape, skip = RESIZES[name]
    scales_init = numpy_helper.from_array(np.array(scales, np.float32), "scales")
    nodes = [
        helper.make_node("Resize", ["x", "", "scales"], ["r"], mode=mode, coordinate_transformation_mode=coordinates),
        helper.make_node("Concat", ["r", "s"], ["y"], axis=1),
    ]
    graph = helper.make_graph(
        nodes,
        "resize_concat",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(s)) for n, s in (("x", shape), ("s", skip))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [scales_init],
    )
    module, params = xrelay.from_onnx(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    rng = np.random.default_rng(3)
    inputs = {"x": rng.standard_normal(shape).astype(np.float32), "s": rng.standard_normal(skip).astype(np.float32)}
    return module, params, inputs


def check_resize(name: str, target: str, device: str) -> xrelay.Executable:
    module, params, inputs = resize_concat(name)
    expected = xrelay.interpret(module, {**inputs, **params})
    targets = (target,) if device == "cpu" else ("c", target)
    exe = xrelay.build(module, targets=targets, default_device=device, params=params)
    np.testing.assert_allclose(exe.run(inputs), expected, rtol=1e-6, atol=1e-6)
    return exe


@pytest.mark.parametrize("target", isa_params())
@pytest.mark.parametrize("name", sorted(RESIZES))
def test_resize_concat_at_every_isa_level(name: str, target: str) -> None:
    check_resize(name, target, "cpu")


@pytest.mark.parametrize("name", sorted(RESIZES))
def test_resize_concat_on_opencl(name: str) -> None:
    check_resize(name, "opencl", "opencl")


@pytest.mark.parametrize(
    ("name", "divisions"), [("linear_2x_odd", False), ("linear_rows_only", False), ("linear_3x", True)]
)
def test_interleaved_rows_unrolled_without_divisions(name: str, divisions: bool) -> None:
    """The 2x upsamplings' loops (rows and columns: 4 phases) run over groups of phases, so
    no kernel divides an index by the upsampling factor; the 3x one (9 phases, beyond
    MAX_PHASES: its columns' 3 unrolled, its rows' not) still does."""
    factor = int(RESIZES[name][2][-1])
    sources = [k.source for k in check_resize(name, "c", "cpu").kernels]
    assert any(f" / {factor};" in s or f" % {factor};" in s for s in sources) == divisions
