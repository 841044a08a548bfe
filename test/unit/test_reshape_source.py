"""reshape_source: a group whose result is a reshape that only merges axes, nested over the
reshape's input, built for C and for OpenCL and run against `xrelay.interpret`: the
transformer's merged heads, arithmetic before the reshape, size-1 axes on either side, and NaN
and inf inputs; and the reshapes that keep their old nest (a split, a size-0 tensor)."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import StringAttr

import xrelay
from xrelay.driver import lower

Shape = tuple[int, ...]
TARGETS: dict[str, tuple[tuple[str, ...], str | None]] = {"c": (("c",), None), "opencl": (("c", "opencl"), "opencl")}


def t(shape: Shape) -> str:
    return f"tensor<{''.join(f'{d}x' for d in shape)}f32>"


def reshaped(data: Shape, before: str, middle: Shape, result: Shape) -> str:
    """@main(%x): `before` ("transpose" by the axes that give `middle`, "exp", or "") then a
    reshape to `result`, one group."""
    if before == "exp":
        first = f"%0 = relay.exp %x : {t(data)}"
    elif before:
        axes = ", ".join(str(data.index(d)) for d in middle)  # (the tests' extents are distinct)
        first = f"%0 = relay.transpose %x {{axes = array<i64: {axes}>}} : ({t(data)}) -> {t(middle)}"
    else:
        first = f"%0 = relay.reshape %x : ({t(data)}) -> {t(middle)}"
    return (
        f"func.func @main(%x: {t(data)}) -> {t(result)} {{\n  {first}\n"
        f"  %1 = relay.reshape %0 : ({t(middle)}) -> {t(result)}\n  func.return %1 : {t(result)}\n}}"
    )


def schedules(text: str, target: str) -> list[str]:
    module = xrelay.parse(text)
    targets, default_device = TARGETS[target]
    lower(module, targets, default_device, "c")
    names = [op.attributes.get("relay.schedule") for op in module.ops if isinstance(op, func.FuncOp)]
    return [name.data for name in names if isinstance(name, StringAttr)]


MERGES = {
    "the transformer's merged heads": ((4, 128, 64), "transpose", (128, 4, 64), (128, 256)),
    "arithmetic before": ((3, 5, 7), "exp", (3, 5, 7), (15, 7)),
    "everything into one axis": ((2, 3, 5), "transpose", (5, 2, 3), (30,)),
    "size-1 axes on both sides": ((2, 1, 3, 5), "exp", (2, 1, 3, 5), (1, 6, 5, 1)),
    "size-1 axes inside the merge": ((4, 1, 9), "exp", (4, 1, 9), (36, 1)),
}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("case", MERGES)
def test_merges_agree_with_the_interpreter(case: str, target: str) -> None:
    data, before, middle, result = MERGES[case]
    text = reshaped(data, before, middle, result)
    assert schedules(text, target) == ["reshape_source"]
    x = np.random.default_rng(0).standard_normal(data).astype(np.float32)
    x.flat[::5] = np.nan
    x.flat[2::9] = -np.inf
    exe = xrelay.build(text, targets=TARGETS[target][0], default_device=TARGETS[target][1])
    np.testing.assert_allclose(exe.run(x), xrelay.interpret(text, {"x": x}), rtol=1e-6, equal_nan=True)


@pytest.mark.parametrize(
    "data,middle,result",
    [
        ((6, 20), (120,), (8, 15)),  # the last reshape splits (after a merge): nested over the result
        ((3, 4), (3, 4), (2, 6)),  # merges and splits at once
        ((2, 0, 3), (2, 0, 3), (0, 6)),  # no elements
    ],
)
def test_other_reshapes_keep_a_work_item_per_output(data: Shape, middle: Shape, result: Shape) -> None:
    text = reshaped(data, "", middle, result)
    assert schedules(text, "c") == ["elementwise"]
    x = np.random.default_rng(1).standard_normal(data).astype(np.float32)
    np.testing.assert_array_equal(xrelay.build(text).run(x), xrelay.interpret(text, {"x": x}))
