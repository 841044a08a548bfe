"""pool-before-conv: an average pool of a 1 x 1 conv (DenseNet's transition) pools the conv's
input instead; the rewritten program computes what the original did (`xrelay.interpret`
before and after, and built on C at each ISA level and on OpenCL), with padding, counted
padding, ceil_mode and conv groups; what the rule must not take stays."""

from __future__ import annotations

import numpy as np
import pytest
from isa_levels import isa_params
from xdsl.dialects.builtin import ModuleOp

import xrelay
from xrelay.dialects import relay
from xrelay.transforms.pool_before_conv import PoolBeforeConvPass

Shape = tuple[int, ...]


def t(shape: Shape) -> str:
    return "tensor<" + "".join(f"{d}x" for d in shape) + "f32>"


def conv_pool(
    x: Shape,
    weight: Shape,
    shapes: tuple[Shape, Shape],
    conv_attrs: str,
    pool_attrs: str,
    pool: str = "avg_pool2d",
    twice: bool = False,
) -> str:
    """pool(conv2d(x, w)), the conv's and the pool's result `shapes`; `twice`: the conv read
    by a second pool too, the two pools added."""
    conv_shape, pool_shape = shapes
    lines = [
        f"%c = relay.nn.conv2d %x, %w {conv_attrs} : ({t(x)}, {t(weight)}) -> {t(conv_shape)}",
        f"%r = relay.nn.{pool} %c {pool_attrs} : ({t(conv_shape)}) -> {t(pool_shape)}",
    ]
    out = "%r"
    if twice:
        lines.append(f"%s = relay.nn.{pool} %c {pool_attrs} : ({t(conv_shape)}) -> {t(pool_shape)}")
        lines.append(f"%out = relay.add %r, %s : ({t(pool_shape)}, {t(pool_shape)}) -> {t(pool_shape)}")
        out = "%out"
    body = "\n  ".join(lines)
    return (
        f"func.func @main(%x: {t(x)}, %w: {t(weight)}) -> {t(pool_shape)} {{\n  {body}\n"
        f"  func.return {out} : {t(pool_shape)}\n}}"
    )


def inputs(x: Shape, weight: Shape, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"x": rng.standard_normal(x).astype(np.float32), "w": rng.standard_normal(weight).astype(np.float32)}


def rewritten(text: str) -> ModuleOp:
    module = xrelay.parse(text)
    PoolBeforeConvPass().apply(xrelay.context(), module)
    return module


def first_op(module: ModuleOp) -> type:
    """The type of the first relay op of @main."""
    return type(next(op for op in module.walk() if isinstance(op, (relay.Conv2DOp, relay.Pool2DOp))))


TRANSITION = "{pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>}"
PAD_3 = "pool_size = array<i64: 3, 3>, padding = array<i64: 1, 1, 1, 1>"
TAKEN = [
    ((1, 8, 6, 6), (4, 8, 1, 1), ((1, 4, 6, 6), (1, 4, 3, 3)), "", TRANSITION),  # DenseNet's transition
    (
        (2, 6, 7, 5),
        (3, 6, 1, 1),
        ((2, 3, 7, 5), (2, 3, 3, 2)),
        "",
        "{pool_size = array<i64: 3, 3>, strides = array<i64: 2, 2>, ceil_mode = true}",
    ),
    ((1, 4, 5, 5), (6, 4, 1, 1), ((1, 6, 5, 5), (1, 6, 5, 5)), "", "{" + PAD_3 + "}"),
    ((1, 4, 5, 5), (6, 4, 1, 1), ((1, 6, 5, 5), (1, 6, 5, 5)), "", "{" + PAD_3 + ", count_include_pad = true}"),
    ((1, 6, 4, 4), (4, 3, 1, 1), ((1, 4, 4, 4), (1, 4, 2, 2)), "{groups = 2 : i64}", TRANSITION),  # grouped
]


@pytest.mark.parametrize(("x", "weight", "shapes", "conv_attrs", "pool_attrs"), TAKEN)
def test_pools_first_and_computes_the_same(
    x: Shape, weight: Shape, shapes: tuple[Shape, Shape], conv_attrs: str, pool_attrs: str
) -> None:
    text = conv_pool(x, weight, shapes, conv_attrs, pool_attrs)
    module = rewritten(text)
    assert first_op(module) is relay.AvgPool2DOp
    for seed in (0, 1):
        values = inputs(x, weight, seed)
        expected = xrelay.interpret(text, values)
        np.testing.assert_allclose(xrelay.interpret(module, values), expected, rtol=1e-5, atol=1e-5)
    again = str(module)
    PoolBeforeConvPass().apply(xrelay.context(), module)
    assert str(module) == again  # a second run changes nothing


@pytest.mark.parametrize("target", [*isa_params(), "opencl"])
def test_transition_built_equals_the_interpreter(target: str) -> None:
    """DenseNet's transition at a small size: on each C ISA level and on OpenCL, through the
    whole pipeline (where the pass runs), equal to the interpreter of the original."""
    x, weight = (1, 24, 8, 8), (12, 24, 1, 1)
    text = conv_pool(x, weight, ((1, 12, 8, 8), (1, 12, 4, 4)), "", TRANSITION)
    if target == "opencl":
        exe = xrelay.build(text, targets=("c", "opencl"), default_device="opencl")
    else:
        exe = xrelay.build(text, targets=(target,))
    values = inputs(x, weight, 2)
    np.testing.assert_allclose(exe.run(values), xrelay.interpret(text, values), rtol=1e-4, atol=1e-5)


SQUARE = ((1, 4, 6, 6), (1, 4, 3, 3))
KEPT = [
    ((1, 4, 6, 6), (4, 4, 3, 3), ((1, 4, 4, 4), (1, 4, 2, 2)), "", "avg_pool2d", False),  # 3 x 3 conv
    ((1, 4, 12, 12), (4, 4, 1, 1), SQUARE, "{strides = array<i64: 2, 2>}", "avg_pool2d", False),  # strided
    ((1, 4, 4, 4), (4, 4, 1, 1), SQUARE, "{padding = array<i64: 1, 1, 1, 1>}", "avg_pool2d", False),  # padded
    ((1, 4, 6, 6), (4, 4, 1, 1), SQUARE, "", "max_pool2d", False),  # a max does not commute with a sum
    ((1, 4, 6, 6), (4, 4, 1, 1), SQUARE, "", "avg_pool2d", True),  # the conv is read twice
]


@pytest.mark.parametrize(("x", "weight", "shapes", "conv_attrs", "pool", "twice"), KEPT)
def test_leaves_what_the_rule_does_not_take(
    x: Shape, weight: Shape, shapes: tuple[Shape, Shape], conv_attrs: str, pool: str, twice: bool
) -> None:
    text = conv_pool(x, weight, shapes, conv_attrs, TRANSITION, pool, twice)
    assert str(rewritten(text)) == str(xrelay.parse(text))
