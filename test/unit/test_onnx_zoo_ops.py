"""The ops the zoo's exporters write (issue 32: bench/zoo_export.py), as small onnx.helper graphs:
each imported model is checked against onnx's reference evaluator, and built on C and on OpenCL
against `xrelay.interpret` of the same module. Also: shape computations folded at import, and
symbolic input dims defaulted to 1 with a warning."""

from __future__ import annotations

import os

os.environ.setdefault("POCL_DEVICES", "pthread pthread")

import math
from collections.abc import Callable, Sequence

import numpy as np
import pytest
from isa_levels import isa_params
from onnx import ModelProto, TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import xrelay
from xrelay.frontend.onnx_import import DynamicShapeWarning

RNG = np.random.default_rng(0)
TARGETS = [("c",), ("c", "opencl")]


def model(
    nodes: Sequence[object],
    inputs: dict[str, Sequence[int]],
    outputs: Sequence[str],
    initializers: dict[str, np.ndarray] | None = None,
    opset: int = 17,
) -> ModelProto:
    graph = helper.make_graph(
        list(nodes),  # pyright: ignore[reportArgumentType]
        "g",
        [helper.make_tensor_value_info(name, TensorProto.FLOAT, list(shape)) for name, shape in inputs.items()],
        [helper.make_tensor_value_info(name, TensorProto.FLOAT, None) for name in outputs],
        [numpy_helper.from_array(value, name) for name, value in (initializers or {}).items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def weights(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


Reference = Callable[[dict[str, np.ndarray]], Sequence[np.ndarray]]


def check(
    proto: ModelProto,
    targets: tuple[str, ...],
    reference: Reference | None = None,
    rtol: float = 1e-4,
    atol: float = 1e-5,
) -> None:
    """The reference (onnx's evaluator unless given: a numpy function of the inputs and
    initializers) == xrelay.interpret == the build on `targets`, on random inputs."""
    initializers = {t.name: numpy_helper.to_array(t) for t in proto.graph.initializer}
    inputs = {
        i.name: weights(*(d.dim_value for d in i.type.tensor_type.shape.dim))
        for i in proto.graph.input
        if i.name not in initializers
    }
    if reference is None:
        want = ReferenceEvaluator(proto).run(None, inputs)  # pyright: ignore[reportUnknownMemberType]
    else:
        want = reference({**initializers, **inputs})
    module, params = xrelay.from_onnx(proto)
    interpreted = xrelay.interpret(module, {**inputs, **params})
    got = xrelay.build(module, targets=targets, default_device=targets[-1], params=params).run(inputs)
    interpreted = interpreted if isinstance(interpreted, tuple | list) else (interpreted,)
    got = got if isinstance(got, tuple) else (got,)
    assert len(got) == len(want)
    for g, i, w in zip(got, interpreted, want):  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
        np.testing.assert_allclose(i, w, rtol=rtol, atol=atol)
        np.testing.assert_allclose(g, i, rtol=rtol, atol=atol)


@pytest.mark.parametrize("targets", TARGETS)
def test_hard_sigmoid_and_hard_swish(targets: tuple[str, ...]) -> None:
    nodes = [
        helper.make_node("HardSigmoid", ["x"], ["s"], alpha=0.3, beta=0.4),
        helper.make_node("HardSwish", ["x"], ["w"]),
        helper.make_node("HardSigmoid", ["x"], ["d"]),
    ]
    check(model(nodes, {"x": (2, 3, 5, 7)}, ["s", "w", "d"]), targets)


def resize(
    shape: Sequence[int], scales: Sequence[float] | None = None, sizes: Sequence[int] | None = None, **attrs: object
) -> ModelProto:
    inits = {"roi": np.zeros(0, np.float32), "scales": np.array(scales or [], np.float32)}
    names = ["x", "roi", "scales"]
    if sizes is not None:
        inits["sizes"] = np.array(sizes, np.int64)
        names.append("sizes")
    return model([helper.make_node("Resize", names, ["y"], **attrs)], {"x": shape}, ["y"], inits, opset=19)


RESIZES = {
    # torch's nearest (F.interpolate(mode="nearest")) and bilinear, align_corners False and True
    "torch_nearest_x2": ((1, 2, 3, 4), [1, 1, 2, 2], None, {"coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"}),
    "torch_bilinear_x2": ((1, 2, 3, 4), [1, 1, 2, 2], None, {"mode": "linear", "coordinate_transformation_mode": "pytorch_half_pixel"}),
    "torch_bilinear_corners": ((1, 2, 3, 4), None, [1, 2, 5, 9], {"mode": "linear", "coordinate_transformation_mode": "align_corners"}),
    "nearest_down_half_pixel": ((1, 1, 7, 9), [1, 1, 0.5, 0.7], None, {"coordinate_transformation_mode": "half_pixel"}),
    "nearest_ceil_sizes": ((2, 3, 4), None, [2, 3, 7], {"nearest_mode": "ceil"}),
    "linear_down_half_pixel": ((1, 2, 8, 8), [1, 1, 0.375, 0.5], None, {"mode": "linear"}),
    "linear_3d_axes": ((1, 2, 3, 4, 5), [2.0, 1.5], None, {"mode": "linear", "axes": [2, 4]}),
    "linear_asymmetric_x3": ((1, 2, 3, 4), [1, 1, 3, 3], None, {"mode": "linear", "coordinate_transformation_mode": "asymmetric"}),
    "linear_not_larger": ((1, 1, 4, 6), None, [8, 8], {"mode": "linear", "axes": [2, 3], "keep_aspect_ratio_policy": "not_larger"}),
}  # fmt: skip


@pytest.mark.parametrize("targets", TARGETS)
@pytest.mark.parametrize("case", list(RESIZES))
def test_resize(case: str, targets: tuple[str, ...]) -> None:
    shape, scales, sizes, attrs = RESIZES[case]
    check(resize(shape, scales, sizes, **attrs), targets)


def test_integer_upsampling_needs_no_gather() -> None:
    """torch's nearest and bilinear (align_corners False) upsampling by an integer factor are
    broadcasts and phase blends of shifted slices: `relay.take` (a gather) would be slower."""
    for case in ("torch_nearest_x2", "torch_bilinear_x2", "linear_asymmetric_x3"):
        shape, scales, sizes, attrs = RESIZES[case]
        module, _ = xrelay.from_onnx(resize(shape, scales, sizes, **attrs))
        assert "relay.take" not in str(module), case
    module, _ = xrelay.from_onnx(resize(*RESIZES["torch_bilinear_corners"][:3], **RESIZES["torch_bilinear_corners"][3]))
    assert "relay.take" in str(module)  # align_corners: the weights differ per output


def test_resize_modes_it_does_not_take_are_clean_errors() -> None:
    for attrs, message in [
        ({"mode": "cubic"}, "attribute mode = 'cubic' is not supported"),
        ({"mode": "linear", "antialias": 1}, "attribute antialias = 1 is not supported"),
        ({"coordinate_transformation_mode": "tf_crop_and_resize"}, "tf_crop_and_resize' is not supported"),
    ]:
        with pytest.raises(xrelay.OnnxImportError, match="ONNX node Resize .*" + message):
            xrelay.from_onnx(resize((1, 1, 4, 4), [1, 1, 2, 2], **attrs))
    run_time_scales = model(
        [helper.make_node("Resize", ["x", "", "s"], ["y"])], {"x": (1, 1, 4, 4), "s": (4,)}, ["y"], opset=19
    )
    with pytest.raises(xrelay.OnnxImportError, match=r"input 2 \(scales\) must be known at import"):
        xrelay.from_onnx(run_time_scales)


@pytest.mark.parametrize("targets", TARGETS)
def test_gather_elements_with_constant_indices(targets: tuple[str, ...]) -> None:
    nodes = [
        helper.make_node("GatherElements", ["x", "i0"], ["a"], axis=0),
        helper.make_node("GatherElements", ["x", "i2"], ["b"], axis=2),
    ]
    inits = {
        "i0": RNG.integers(-3, 3, (2, 4, 5)).astype(np.int64),
        "i2": RNG.integers(0, 5, (3, 4, 2)).astype(np.int64),
    }
    check(model(nodes, {"x": (3, 4, 5)}, ["a", "b"], inits), targets)
    bad = model([nodes[0]], {"x": (3, 4, 5)}, ["a"], {"i0": np.full((1, 4, 5), 3, np.int64)})
    with pytest.raises(xrelay.OnnxImportError, match=r"GatherElements .*indices must lie in \[-3, 3\) along axis 0"):
        xrelay.from_onnx(bad)


CONV_TRANSPOSES = {
    "unet_k2_s2": ((1, 4, 3, 5), (4, 3, 2, 2), {"strides": [2, 2]}),
    "pads_output_padding": ((2, 3, 4, 4), (3, 2, 3, 3), {"strides": [2, 2], "pads": [1, 1, 1, 1], "output_padding": [1, 0]}),
    "groups_dilation": ((1, 4, 5, 4), (4, 3, 3, 2), {"group": 2, "dilations": [2, 1], "pads": [0, 1, 2, 0]}),
    "output_shape": ((1, 2, 3, 3), (2, 2, 3, 3), {"strides": [3, 2], "output_shape": [10, 8]}),
    "same_upper": ((1, 2, 3, 4), (2, 1, 3, 3), {"strides": [2, 2], "auto_pad": "SAME_UPPER"}),
    "same_lower_1d": ((1, 3, 6), (3, 2, 4), {"strides": [3], "auto_pad": "SAME_LOWER"}),
    "big_pads_1d": ((2, 2, 5), (2, 3, 3), {"strides": [2], "pads": [3, 2]}),
    # windows tiling the output (stride = kernel): a 1x1 conv and a reshape (`_conv_transpose_tiles`)
    "tiles_batch_odd": ((3, 5, 7, 3), (5, 7, 3, 2), {"strides": [3, 2]}),
    "tiles_wide_channels": ((1, 19, 6, 5), (19, 17, 2, 2), {"strides": [2, 2]}),
    "tiles_1d": ((2, 3, 9), (3, 4, 4), {"strides": [4]}),
}  # fmt: skip
TILED_CONV_TRANSPOSES = [case for case in CONV_TRANSPOSES if case.startswith(("unet", "tiles"))]


def conv_transpose_numpy(x: np.ndarray, w: np.ndarray, b: np.ndarray, attrs: dict[str, object]) -> np.ndarray:
    """ConvTranspose by its definition: every input element scatters its kernel window, times
    itself, into the full output (stride apart, dilated), which is then cropped by the pads
    (onnx's reference fails with groups)."""
    x4, w4 = (x[:, :, None], w[:, :, None]) if x.ndim == 3 else (x, w)
    rank = x.ndim - 2

    def get(name: str, default: list[int]) -> list[int]:
        return [int(v) for v in attrs.get(name, default)]  # pyright: ignore[reportGeneralTypeIssues]

    strides, dilations = [1] * (2 - rank) + get("strides", [1] * rank), [1] * (2 - rank) + get("dilations", [1] * rank)
    groups = int(attrs.get("group", 1))  # pyright: ignore[reportArgumentType]
    n, cin, h, wd = x4.shape
    cout_g, kh, kw = w4.shape[1:]
    full = [(s - 1) * st + (k - 1) * d + 1 for s, st, k, d in zip((h, wd), strides, (kh, kw), dilations)]
    extra = [0] * (2 - rank) + get("output_padding", [0] * rank)
    y = np.zeros((n, groups * cout_g, full[0] + extra[0], full[1] + extra[1]), np.float64)
    for g in range(groups):
        for ci in range(g * cin // groups, (g + 1) * cin // groups):
            for i, j, a, c in np.ndindex(h, wd, kh, kw):
                r, q = i * strides[0] + a * dilations[0], j * strides[1] + c * dilations[1]
                y[:, g * cout_g : (g + 1) * cout_g, r, q] += x4[:, ci, i, j, None] * w4[ci, :, a, c]
    sizes = [y.shape[2] - extra[0], y.shape[3] - extra[1]]
    auto = attrs.get("auto_pad", "NOTSET")
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        outs = [s * st for s, st in zip((h, wd), strides)]
        totals = [f + e - o for f, e, o in zip(sizes, extra, outs)]
        begins = [t // 2 if auto == "SAME_UPPER" else t - t // 2 for t in totals]
    else:
        given = get("pads", [0] * 2 * rank)
        pads = ([0, *given[:1], 0, *given[1:]]) if rank == 1 else given
        begins = pads[:2]
        outs = get("output_shape", [])
        outs = [1, *outs] if rank == 1 and outs else outs
        outs = outs or [s + e - pads[i] - pads[i + 2] for i, (s, e) in enumerate(zip(sizes, extra))]
    short = [max(0, b + o - s) for b, o, s in zip(begins, outs, y.shape[2:])]  # output_shape past the end: zeros
    y = np.pad(y, [(0, 0), (0, 0), (0, short[0]), (0, short[1])])
    y = y[:, :, begins[0] : begins[0] + outs[0], begins[1] : begins[1] + outs[1]] + b[:, None, None]
    return (y[:, :, 0] if rank == 1 else y).astype(np.float32)


@pytest.mark.parametrize("targets", TARGETS)
@pytest.mark.parametrize("case", list(CONV_TRANSPOSES))
def test_conv_transpose(case: str, targets: tuple[str, ...]) -> None:
    x, w, attrs = CONV_TRANSPOSES[case]
    out_channels = w[1] * int(attrs.get("group", 1))  # pyright: ignore[reportArgumentType]
    inits = {"w": weights(*w), "b": weights(out_channels)}
    node = helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], **attrs)
    check(
        model([node], {"x": x}, ["y"], inits),
        targets,
        lambda v: [conv_transpose_numpy(v["x"], v["w"], v["b"], attrs)],
    )


@pytest.mark.parametrize("target", isa_params())
@pytest.mark.parametrize("case", TILED_CONV_TRANSPOSES)
def test_conv_transpose_tiles_at_every_isa_level(case: str, target: str) -> None:
    """Windows that tile the output are a 1x1 convolution to C_out x kh x kw channels (no
    zeros inserted into the input), right at each ISA level."""
    x, w, attrs = CONV_TRANSPOSES[case]
    inits = {"w": weights(*w), "b": weights(w[1])}
    proto = model([helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], **attrs)], {"x": x}, ["y"], inits)
    module, _ = xrelay.from_onnx(proto)
    assert "relay.nn.pad" not in str(module) and "x1x1xf32>" in str(module)
    check(proto, (target,), lambda v: [conv_transpose_numpy(v["x"], v["w"], v["b"], attrs)])


BAD_CONV_TRANSPOSES: dict[str, tuple[tuple[int, ...], dict[str, int], str]] = {
    "group not dividing": ((1, 2, 4, 4), {"group": 3}, r"attribute group = 3 must be positive and divide .* W \(2\)"),
    "group zero": ((1, 2, 4, 4), {"group": 0}, r"attribute group = 0 must be positive"),
    "channels": ((1, 3, 4, 4), {}, r"expected an input of 2 channels \(W's first dim\), but found 3"),
}


@pytest.mark.parametrize("case", list(BAD_CONV_TRANSPOSES))
def test_conv_transpose_bad_attributes_name_the_node(case: str) -> None:
    x, attrs, message = BAD_CONV_TRANSPOSES[case]
    node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], **attrs)  # pyright: ignore[reportArgumentType]
    with pytest.raises(xrelay.OnnxImportError, match="ONNX node ConvTranspose .*" + message):
        xrelay.from_onnx(model([node], {"x": x}, ["y"], {"w": weights(2, 1, 3, 3)}))


@pytest.mark.parametrize("targets", TARGETS)
def test_split_in_every_opset_form(targets: tuple[str, ...]) -> None:
    """opset 13: sizes as an input, or equal parts; opset 18: num_outputs (the last part smaller)."""
    sizes = {"sizes": np.array([1, 4, 2], np.int64)}
    check(
        model([helper.make_node("Split", ["x", "sizes"], ["a", "b", "c"], axis=1)], {"x": (3, 7)}, "abc", sizes, 13),
        targets,
    )
    check(model([helper.make_node("Split", ["x"], ["a", "b"], axis=-1)], {"x": (2, 3, 6)}, "ab", opset=13), targets)
    check(
        model([helper.make_node("Split", ["x"], ["a", "b", "c"], num_outputs=3)], {"x": (8, 2)}, "abc", opset=18),
        targets,
    )
    check(model([helper.make_node("Split", ["x", "sizes"], ["a", "b", "c"])], {"x": (7, 2)}, "abc", sizes, 18), targets)  # fmt: skip


def recurrent(op: str, gates: int, seq: int, batch: int, size: int, hidden: int, **attrs: object) -> ModelProto:
    """An LSTM or GRU node with random W, R, B, initial states (and LSTM peepholes); Y and Y_h
    (and LSTM's Y_c) are outputs."""
    dirs = 2 if attrs.get("direction") == "bidirectional" else 1
    layout = int(attrs.get("layout", 0))  # pyright: ignore[reportArgumentType]
    state = (batch, dirs, hidden) if layout else (dirs, batch, hidden)
    inits = {
        "W": weights(dirs, gates * hidden, size) * 0.5,
        "R": weights(dirs, gates * hidden, hidden) * 0.5,
        "B": weights(dirs, 2 * gates * hidden) * 0.5,
        "lens": np.full(batch, seq, np.int32),
        "h0": weights(*state),
    }
    names = ["X", "W", "R", "B", "lens", "h0"]
    outputs = ["Y", "Y_h"]
    if op == "LSTM":
        inits |= {"c0": weights(*state), "P": weights(dirs, 3 * hidden)}
        names += ["c0", "P"]
        outputs.append("Y_c")
    x = (batch, seq, size) if layout else (seq, batch, size)
    node = helper.make_node(op, names, outputs, hidden_size=hidden, **attrs)
    return model([node], {"X": x}, outputs, inits, opset=14)


ACTIVATIONS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "Sigmoid": lambda z: 1 / (1 + np.exp(-z)),
    "Tanh": np.tanh,
    "Relu": lambda z: np.maximum(z, 0),
}


def recurrent_numpy(op: str, v: dict[str, np.ndarray], attrs: dict[str, object]) -> list[np.ndarray]:
    """onnx's LSTM and GRU equations step by step (onnx's reference ignores clip, activations
    and linear_before_reset); clip bounds the gates' inputs, as onnxruntime does."""
    layout, hidden = int(attrs.get("layout", 0)), v["R"].shape[-1]  # pyright: ignore[reportArgumentType]
    x, h0 = (v["X"].transpose(1, 0, 2), v["h0"].transpose(1, 0, 2)) if layout else (v["X"], v["h0"])
    c0 = v["c0"].transpose(1, 0, 2) if layout and op == "LSTM" else v.get("c0")
    dirs = ["forward", "reverse"] if attrs.get("direction") == "bidirectional" else [attrs.get("direction", "forward")]
    per = 3 if op == "LSTM" else 2
    names = list(attrs.get("activations", ["Sigmoid", "Tanh", "Tanh"][:per] * len(dirs)))  # pyright: ignore[reportArgumentType]
    limit = float(attrs.get("clip", math.inf))  # pyright: ignore[reportArgumentType]
    y = np.zeros((x.shape[0], len(dirs), x.shape[1], hidden))
    finals: list[list[np.ndarray]] = [[], []]
    for d, direction in enumerate(dirs):
        f, g, act_h = (ACTIVATIONS[a] for a in (names[d * per : (d + 1) * per] + ["Tanh"])[:3])
        gates = 4 if op == "LSTM" else 3
        wb, rb = np.split(v["B"][d], 2)
        h = h0[d].astype(np.float64)
        c = None if c0 is None else c0[d].astype(np.float64)
        for t in range(x.shape[0]) if direction == "forward" else reversed(range(x.shape[0])):
            xw = np.split(x[t] @ v["W"][d].T + wb, gates, axis=-1)
            hr = np.split(h @ v["R"][d].T + rb, gates, axis=-1)
            if op == "LSTM":
                assert c is not None
                p_i, p_o, p_f = np.split(v["P"][d], 3)
                i = f(np.clip(xw[0] + hr[0] + p_i * c, -limit, limit))
                fo = f(np.clip(xw[2] + hr[2] + p_f * c, -limit, limit))
                c = fo * c + i * g(np.clip(xw[3] + hr[3], -limit, limit))
                h = f(np.clip(xw[1] + hr[1] + p_o * c, -limit, limit)) * act_h(c)
            else:
                z = f(np.clip(xw[0] + hr[0], -limit, limit))
                r = f(np.clip(xw[1] + hr[1], -limit, limit))
                rh, rbh = np.split(v["R"][d], 3)[2], np.split(rb, 3)[2]
                reset = r * hr[2] if attrs.get("linear_before_reset") else (r * h) @ rh.T + rbh
                h = (1 - z) * g(np.clip(xw[2] + reset, -limit, limit)) + z * h
            y[t, d] = h
        finals[0].append(h)
        if c is not None:
            finals[1].append(c)
    states = [np.stack(s) for s in finals if s]
    if layout:
        return [y.transpose(2, 0, 1, 3), *(s.transpose(1, 0, 2) for s in states)]
    return [y, *states]


RECURRENT = {
    "lstm_forward": ("LSTM", {}),
    "lstm_bidirectional_layout1": ("LSTM", {"direction": "bidirectional", "layout": 1}),
    "lstm_reverse_clip": ("LSTM", {"direction": "reverse", "clip": 0.7}),
    "gru_forward": ("GRU", {}),
    "gru_linear_before_reset_bidirectional": ("GRU", {"linear_before_reset": 1, "direction": "bidirectional"}),
    "gru_relu_layout1": ("GRU", {"layout": 1, "activations": ["Sigmoid", "Relu"]}),
}


@pytest.mark.parametrize("targets", TARGETS)
@pytest.mark.parametrize("case", list(RECURRENT))
def test_lstm_and_gru_unrolled(case: str, targets: tuple[str, ...]) -> None:
    op, attrs = RECURRENT[case]
    proto = recurrent(op, 4 if op == "LSTM" else 3, seq=5, batch=2, size=3, hidden=4, **attrs)
    check(proto, targets, lambda v: recurrent_numpy(op, v, attrs))


@pytest.mark.parametrize(("op", "attrs", "per_step"), [("LSTM", {}, 3), ("GRU", {"linear_before_reset": 1}, 2)])
def test_recurrent_steps_are_few_kernels(op: str, attrs: dict[str, object], per_step: int) -> None:
    """Each step's recurrent dense is one kernel and its gates one (GRU) or two (LSTM: the cell
    state and the hidden state are two results): the per-step slices of the input projection
    are fused into the gates' kernels, not kernels of their own (the zoo's LSTM and GRU ran
    hundreds of such kernels, each costing a call)."""

    def kernels(seq: int) -> list[str]:
        proto = recurrent(op, 4 if op == "LSTM" else 3, seq=seq, batch=2, size=3, hidden=4, **attrs)
        module, params = xrelay.from_onnx(proto)
        return [node for node, _ in xrelay.build(module, targets=("c",), params=params).placement() if "->" not in node]

    short, long = kernels(3), kernels(7)
    assert len(long) - len(short) == per_step * 4, long


EDGE_RECURRENT = {
    "lstm_seq1": ("LSTM", {"direction": "bidirectional"}, 1, 1, 16),
    "lstm_hidden19_batch3": ("LSTM", {"direction": "bidirectional", "layout": 1}, 4, 3, 19),
    "gru_hidden19_batch3": ("GRU", {"direction": "bidirectional"}, 4, 3, 19),
    "gru_before_reset_hidden17": ("GRU", {"linear_before_reset": 1, "direction": "reverse"}, 3, 1, 17),
}


@pytest.mark.parametrize("target", ["c -march=x86-64-v2", "c -march=x86-64-v3", "c", "opencl"])
@pytest.mark.parametrize("case", list(EDGE_RECURRENT))
def test_recurrent_edge_shapes_on_each_isa(case: str, target: str) -> None:
    """The recurrent product of a known R is `h @ R.T` with R transposed once at import (a
    matmul the rows schedule vectorises along the gates): equal to the equations at one step,
    hidden sizes no vector width divides, batch > 1 and both directions, at each x86 level and
    on OpenCL."""
    op, attrs, seq, batch, hidden = EDGE_RECURRENT[case]
    proto = recurrent(op, 4 if op == "LSTM" else 3, seq=seq, batch=batch, size=5, hidden=hidden, **attrs)
    check(proto, (target,), lambda v: recurrent_numpy(op, v, attrs))


@pytest.mark.parametrize("op", ["LSTM", "GRU"])
def test_recurrent_weight_given_at_run_time(op: str) -> None:
    """An R that is a graph input (not known at import) stays a dense of each step's state."""
    attrs: dict[str, object] = {"direction": "bidirectional"}
    proto = recurrent(op, 4 if op == "LSTM" else 3, seq=3, batch=2, size=3, hidden=5, **attrs)
    r = next(t for t in proto.graph.initializer if t.name == "R")
    proto.graph.input.append(helper.make_tensor_value_info("R", TensorProto.FLOAT, list(r.dims)))
    proto.graph.initializer.remove(r)
    text = str(xrelay.from_onnx(proto)[0])
    assert "relay.nn.matmul" not in text and text.count("relay.nn.dense") > 2
    check(proto, ("c",), lambda v: recurrent_numpy(op, v, attrs))


def test_torch_style_lstm_zero_state_and_the_clean_errors() -> None:
    """torch exports zero initial states built from the input's shape (folded at import): the
    first step then has no recurrent product. Variable lengths and input_forget are refused."""
    nodes = [
        helper.make_node("Shape", ["X"], ["s"]),
        helper.make_node("Gather", ["s", "one"], ["batch"]),
        helper.make_node("Unsqueeze", ["batch", "zero"], ["b1"]),
        helper.make_node("Concat", ["dirs", "b1", "hid"], ["hshape"], axis=0),
        helper.make_node("ConstantOfShape", ["hshape"], ["h0"]),
        helper.make_node("LSTM", ["X", "W", "R", "", "", "h0", "h0"], ["Y"], hidden_size=4),
    ]
    inits = {
        "W": weights(1, 16, 3),
        "R": weights(1, 16, 4),
        "one": np.array(1, np.int64),
        "zero": np.array([0], np.int64),
        "dirs": np.array([1], np.int64),
        "hid": np.array([4], np.int64),
    }
    proto = model(nodes, {"X": (6, 2, 3)}, ["Y"], inits)
    check(proto, ("c",))
    text = str(xrelay.from_onnx(proto)[0])
    assert text.count("relay.nn.dense") == 1  # the input projection
    assert text.count("relay.nn.matmul") == 5  # steps 2 to 6: h @ R.T, R known and transposed once
    short = recurrent("GRU", 3, seq=5, batch=2, size=3, hidden=4)
    short.graph.initializer[3].CopyFrom(numpy_helper.from_array(np.array([5, 3], np.int32), "lens"))
    with pytest.raises(xrelay.OnnxImportError, match=r"GRU .*variable sequence lengths are not supported"):
        xrelay.from_onnx(short)
    with pytest.raises(xrelay.OnnxImportError, match="LSTM .*input_forget = 1 is not supported"):
        xrelay.from_onnx(recurrent("LSTM", 4, seq=2, batch=1, size=3, hidden=4, input_forget=1))


def shape_graph() -> ModelProto:
    """The shape computations transformers and torchvision exports make around their data: all
    folded at import once the input shape is known, so only float ops reach relay."""
    ints = {
        "one": np.array(1, np.int64),
        "axes0": np.array([0], np.int64),
        "one_1d": np.array([1], np.int64),
        "two_1d": np.array([2], np.int64),
        "minus_one": np.array([-1], np.int64),
    }
    floats = {"start": np.array(0.5, np.float32), "step": np.array(0.25, np.float32)}  # as torch exports Range
    one = numpy_helper.from_array(np.ones(1, np.float32))
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "one"], ["n"]),  # x.shape[1]
        helper.make_node("Cast", ["n"], ["nf"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["nf", "step"], ["span"]),
        helper.make_node("Add", ["start", "span"], ["limit"]),
        helper.make_node("Range", ["start", "limit", "step"], ["positions"]),  # n values 0.5, 0.75, ...
        helper.make_node("Unsqueeze", ["n", "axes0"], ["n1"]),
        helper.make_node("Concat", ["n1", "n1"], ["square"], axis=0),
        helper.make_node("Slice", ["s", "axes0", "one_1d", "axes0"], ["s0"]),
        helper.make_node("Equal", ["s0", "two_1d"], ["is_two"]),
        helper.make_node("Where", ["is_two", "s", "square"], ["target"]),
        helper.make_node("Expand", ["positions", "target"], ["grid"]),
        helper.make_node("ConstantOfShape", ["target"], ["ones"], value=one),
        helper.make_node("Mul", ["x", "grid"], ["y"]),
        helper.make_node("Add", ["y", "ones"], ["w"]),
        helper.make_node("Concat", ["n1", "minus_one"], ["rows"], axis=0),
        helper.make_node("Reshape", ["w", "rows"], ["z"]),
    ]
    return model(nodes, {"x": (2, 5)}, ["z"], {**ints, **floats})


@pytest.mark.parametrize("targets", TARGETS)
def test_shape_computations_fold_at_import(targets: tuple[str, ...]) -> None:
    proto = shape_graph()
    module, _ = xrelay.from_onnx(proto)
    ops = sorted({op.name for op in module.walk() if op.name.startswith("relay.")})
    assert ops == ["relay.add", "relay.constant", "relay.multiply", "relay.reshape"], ops
    check(proto, targets)
    proto.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "batch"
    with pytest.warns(DynamicShapeWarning, match=r"input 'x' has a dynamic shape \[batch, 5\].*taken as 1"):
        module, _ = xrelay.from_onnx(proto)
    assert "tensor<1x5xf32>" in str(module) and "-> tensor<5x5xf32>" in str(module)  # Where took the square


def test_symbolic_dims_default_to_one_with_a_warning_and_shapes_fix_them() -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3])
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])],
        "g",
        [x],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.warns(DynamicShapeWarning, match=r"shapes=\{'x': \(1, 3\)\}"):
        module, _ = xrelay.from_onnx(proto)
    assert "tensor<1x3xf32>" in str(module)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert "tensor<4x3xf32>" in str(xrelay.from_onnx(proto, shapes={"x": (4, 3)})[0])


def test_gather_elements_of_known_values_folds_past_onnx_reference_limit() -> None:
    """BERT's export gathers its token type ids (512 along the axis) at known positions: folded
    with numpy (onnx's reference evaluator fails beyond 32 values, np.choose's limit)."""
    nodes = [
        helper.make_node("GatherElements", ["ids", "positions"], ["picked"], axis=1),
        helper.make_node("Cast", ["picked"], ["f"], to=TensorProto.FLOAT),
        helper.make_node("Add", ["x", "f"], ["y"]),
    ]
    inits = {
        "ids": (np.arange(512, dtype=np.int64) * 3).reshape(1, 512),
        "positions": np.array([[5, -1, 40, 0]], np.int64),
    }
    proto = model(nodes, {"x": (1, 4)}, ["y"], inits)
    module, _ = xrelay.from_onnx(proto)
    assert sorted({op.name for op in module.walk() if op.name.startswith("relay.")}) == ["relay.add", "relay.constant"]
    x = weights(1, 4)
    got = xrelay.interpret(module, {"x": x})
    np.testing.assert_allclose(got, x + np.array([[15, 1533, 120, 0]]), rtol=1e-6)
