"""The conv_vectors schedule (opencl conv2d, sums in float8 vectors): which groups get it,
its channel blocks, and its results against `xrelay.interpret` on PoCL, including widths
that are not a multiple of the vector, size-1 dims, NaN inputs and NaN or inf weights at
taps that fall on padding. packed_conv and conv_taps, which take the stride-1 convs with
enough work on opencl too, are left out of the schedule list here, so that each case
exercises conv_vectors."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.passes import PassPipeline

import xrelay
from xrelay.driver import all_passes
from xrelay.transforms import convert_relay_to_loops
from xrelay.transforms.schedules import conv_taps, conv_vectors, packed_conv, winograd_conv


@pytest.fixture(autouse=True)
def without_packed_conv(monkeypatch: pytest.MonkeyPatch) -> None:
    """packed_conv, conv_taps (few input channels) and winograd_conv (which takes a batch of
    small 3x3 convs on opencl as one work item) come first in line: leave them out, so that
    each case exercises conv_vectors."""
    earlier = (packed_conv.SCHEDULE, conv_taps.SCHEDULE, winograd_conv.SCHEDULE)
    schedules = tuple(s for s in convert_relay_to_loops.SCHEDULES if s not in earlier)
    monkeypatch.setattr(convert_relay_to_loops, "SCHEDULES", schedules)


def t(shape: tuple[int, ...]) -> str:
    return f"tensor<{'x'.join(map(str, shape))}xf32>"


def conv_text(
    data: tuple[int, ...], weight: tuple[int, ...], attrs: dict[str, tuple[int, ...]], groups: int = 1
) -> tuple[str, tuple[int, ...]]:
    """`relu(conv2d(x, w) + bias + r)`, and the result's shape."""
    n, _, h, w = data
    o, _, kh, kw = weight
    top, left, bottom, right = attrs.get("padding", (0, 0, 0, 0))
    sh, sw = attrs.get("strides", (1, 1))
    dh, dw = attrs.get("dilation", (1, 1))
    res = (n, o, (h + top + bottom - dh * (kh - 1) - 1) // sh + 1, (w + left + right - dw * (kw - 1) - 1) // sw + 1)
    parts = [f"{k} = array<i64: {', '.join(map(str, v))}>" for k, v in attrs.items()]
    spelled = ", ".join([*parts, f"groups = {groups} : i64"])
    text = (
        f"func.func @main(%x: {t(data)}, %w: {t(weight)}, %b: {t((o,))}, %r: {t(res)}) -> {t(res)} {{\n"
        f"  %0 = relay.nn.conv2d %x, %w {{{spelled}}} : ({t(data)}, {t(weight)}) -> {t(res)}\n"
        f"  %1 = relay.nn.bias_add %0, %b : ({t(res)}, {t((o,))}) -> {t(res)}\n"
        f"  %2 = relay.add %1, %r : ({t(res)}, {t(res)}) -> {t(res)}\n"
        f"  %3 = relay.nn.relu %2 : {t(res)}\n"
        f"  func.return %3 : {t(res)}\n}}"
    )
    return text, res


def schedules(text: str, target: str) -> list[str]:
    """The `relay.schedule` of each kernel of `text` lowered for `target`."""
    module = xrelay.parse(text)
    spec = f"plan-devices{{targets={target}}},fuse-ops,convert-relay-to-loops"
    PassPipeline.parse_spec(all_passes(), spec).apply(xrelay.context(), module)
    return [
        op.attributes["relay.schedule"].data
        for op in module.ops
        if isinstance(op, func.FuncOp) and "relay.schedule" in op.attributes
    ]


PAD1 = {"padding": (1, 1, 1, 1)}

CASES = [
    ((1, 2, 5, 6), (4, 2, 3, 3), PAD1, 1),  # one vector, part of it
    ((2, 3, 7, 9), (8, 3, 3, 3), {"padding": (1, 1, 1, 1), "strides": (2, 1)}, 1),  # a tap past the vector
    ((1, 4, 5, 18), (8, 2, 3, 3), PAD1, 2),  # conv groups
    ((1, 2, 6, 9), (2, 2, 2, 3), {"padding": (1, 2, 1, 2), "dilation": (2, 3)}, 1),
    ((1, 1, 3, 4), (2, 1, 2, 2), {"padding": (3, 4, 3, 4)}, 1),  # rows and columns of padding only
    ((1, 3, 4, 1), (5, 3, 1, 1), {}, 1),  # width 1, odd channels: a block of 1
    ((1, 1, 1, 1), (1, 1, 1, 1), {}, 1),  # all size 1
    ((1, 8, 5, 37), (6, 8, 3, 5), {"padding": (2, 2, 2, 2)}, 1),  # 5 vectors, blocks of 2
    ((1, 2, 3, 70), (8, 2, 3, 3), PAD1, 1),  # 9 vectors a row: blocks of 2 (the register budget)
    ((2, 16, 12, 16), (32, 16, 3, 3), PAD1, 1),  # whole vectors, blocks of 8
]


@pytest.mark.parametrize("data,weight,attrs,groups", CASES)
def test_conv_vectors_agrees_with_the_interpreter(data, weight, attrs, groups) -> None:
    text, res = conv_text(data, weight, attrs, groups)
    assert schedules(text, "opencl") == ["conv_vectors"]
    rng = np.random.default_rng(0)
    inputs = {
        "x": rng.standard_normal(data).astype(np.float32),
        "w": rng.standard_normal(weight).astype(np.float32),
        "b": rng.standard_normal(weight[0]).astype(np.float32),
        "r": rng.standard_normal(res).astype(np.float32),
    }
    exe = xrelay.build(text, targets=("c", "opencl"), default_device="opencl")
    np.testing.assert_allclose(exe.run(**inputs), xrelay.interpret(xrelay.parse(text), inputs), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("data,weight,attrs,groups", [CASES[0], CASES[3], CASES[7], CASES[8]])
def test_conv_vectors_nan_inputs_and_weights_on_padding(data, weight, attrs, groups) -> None:
    """NaN and inf weights at the corner taps (on padding for the border outputs only) and a
    NaN input: NaN where the interpreter has NaN, the same finite values elsewhere."""
    text, res = conv_text(data, weight, attrs, groups)
    rng = np.random.default_rng(1)
    x = rng.standard_normal(data).astype(np.float32)
    x[0, 0, 0, -1] = np.nan
    w = rng.standard_normal(weight).astype(np.float32)
    w[:, :, 0, 0] = np.nan
    w[:, :, -1, -1] = np.inf
    inputs = {"x": x, "w": w, "b": np.zeros(weight[0], np.float32), "r": np.zeros(res, np.float32)}
    expected = xrelay.interpret(xrelay.parse(text), inputs)
    assert np.isfinite(expected).any() and not np.isfinite(expected).all()
    got = xrelay.build(text, targets=("c", "opencl"), default_device="opencl").run(**inputs)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)  # NaN where NaN


def test_conv_vectors_is_opencl_only_and_unit_stride_across() -> None:
    text, _ = conv_text((1, 2, 5, 6), (4, 2, 3, 3), PAD1)
    assert schedules(text, "c") == ["conv_rows"]
    strided, _ = conv_text((1, 2, 5, 9), (4, 2, 3, 3), {"padding": (1, 1, 1, 1), "strides": (1, 2)})
    assert schedules(strided, "opencl") == ["conv_rows"]


@pytest.mark.parametrize(
    "out_c,width,groups,block",
    [(64, 56, 1, 4), (64, 14, 1, 8), (32, 28, 1, 8), (6, 37, 1, 2), (8, 70, 1, 2), (8, 18, 2, 4), (5, 4, 1, 1)],
)
def test_conv_vectors_channel_block(out_c: int, width: int, groups: int, block: int) -> None:
    """A power of two dividing a conv group's channels, up to 8, with at most 32 sum vectors."""
    text, _ = conv_text((1, 2 * groups, 3, width), (out_c, 2, 1, 1), {}, groups)
    module = xrelay.parse(text)
    conv = next(op for op in module.walk() if op.name == "relay.nn.conv2d")
    assert conv_vectors.channel_block(conv, conv_vectors.Plan(lanes=8, accumulators=32)) == block  # type: ignore[arg-type]
