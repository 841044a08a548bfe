"""softmax_row: a softmax result a row per work item (a max gcc vectorises on C, exp stored once,
sum, scale; OpenCL rows of whole vectors in float16), built for C and for OpenCL and run against `xrelay.interpret`: rows shorter than the
lanes, a whole number of lane steps and a remainder past them, a softmax axis that is not the
last, size-1 axes, large values, and rows with NaN, inf and -inf at the first element, inside
a lane step and in the remainder."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from test_c_library import run_under_asan
from xdsl.dialects import func
from xdsl.dialects.builtin import StringAttr

import xrelay
from xrelay.driver import lower

TARGETS = {"c": {"targets": ("c",)}, "opencl": {"targets": ("c", "opencl"), "default_device": "opencl"}}


def t(shape: tuple[int, ...]) -> str:
    return f"tensor<{''.join(f'{d}x' for d in shape)}f32>"


def softmax(shape: tuple[int, ...], axis: int = -1) -> str:
    """`softmax(x * 1.5, axis)`: the scale is a group of its own (softmax is Opaque)."""
    ty, s = t(shape), t(())
    return (
        f"func.func @main(%x: {ty}) -> {ty} {{\n"
        f"  %c = relay.constant {{value = dense<1.5> : {s}}} : {s}\n"
        f"  %y = relay.multiply %x, %c : ({ty}, {s}) -> {ty}\n"
        f"  %r = relay.nn.softmax %y {{axis = {axis} : i64}} : ({ty}) -> {ty}\n"
        f"  func.return %r : {ty}\n}}"
    )


def schedules(text: str, targets: tuple[str, ...], default_device: str | None) -> list[str]:
    module = xrelay.parse(text)
    lower(module, targets, default_device, "c")
    names = [op.attributes.get("relay.schedule") for op in module.ops if isinstance(op, func.FuncOp)]
    return [name.data for name in names if isinstance(name, StringAttr)]


def check(text: str, x: np.ndarray, target: str) -> None:
    """Built for `target`, `text` computes what the interpreter does (NaN where it gives NaN)."""
    options = TARGETS[target]
    assert "softmax_row" in schedules(text, options["targets"], options.get("default_device"))
    expected = xrelay.interpret(xrelay.parse(text), {"x": x})
    got = xrelay.build(text, **options).run(x)  # type: ignore[arg-type]
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6, equal_nan=True)


SHAPES = [
    ((4, 128, 128), -1, "the transformer's attention: 8 lane steps"),
    ((3, 7), -1, "rows shorter than the lanes"),
    ((2, 16), -1, "one lane step, nothing past it"),
    ((5, 17), -1, "one lane step and one element past it"),
    ((3, 50), -1, "three lane steps and two elements past them"),
    ((40, 3), 0, "along axis 0: strided rows"),
    ((2, 37, 3), 1, "along a middle axis"),
    ((1, 1, 33), -1, "size-1 leading axes"),
    ((4, 1), -1, "rows of one element"),
]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("shape,axis", [(s, a) for s, a, _ in SHAPES], ids=[w for _, _, w in SHAPES])
def test_shapes(shape: tuple[int, ...], axis: int, target: str) -> None:
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    check(softmax(shape, axis), x, target)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("width", [35, 48])
@pytest.mark.parametrize("position", [0, 5, 20, 33])
def test_the_peak_is_found_wherever_it_is(position: int, width: int, target: str) -> None:
    """One value 200 above the rest of its row (the first element, in the first lane step, in
    a later step, past the steps; OpenCL's vectors for rows of 48): exp of the others less a
    missed peak overflows."""
    x = np.random.default_rng(1).standard_normal((3, width)).astype(np.float32)
    x[:, position] = 200.0
    check(softmax((3, width)), x, target)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("width", [35, 48, 128])
def test_nan_and_infinities(width: int, target: str) -> None:
    """A NaN anywhere (first element, inside a lane step, past the steps; C's max, reordered in
    vectors, may drop it or return it) makes its row NaN, as does +inf (inf - inf); -inf gives 0 in a row with finite values, NaN in a row of -inf."""
    x = np.random.default_rng(2).standard_normal((9, width)).astype(np.float32)
    x[0, 0] = x[1, 20] = x[2, 33] = np.nan
    x[3, 5] = np.inf
    x[4, width - 1] = -np.inf
    x[5, :] = -np.inf
    x[6, 0] = x[6, 17] = np.inf
    x[7, 3] = -np.inf
    x[7, 18] = np.nan
    check(softmax((9, width)), x, target)


def test_every_shape_runs_clean_under_address_sanitizer(tmp_path: Path) -> None:
    """The C kernels of every shape above, built with -fsanitize=address and run on arrays of
    exactly their sizes: every pass over a row stays in it."""
    lowered = []
    for number, (shape, axis, _) in enumerate(SHAPES):
        module = xrelay.parse(softmax(shape, axis))
        lower(module, ("c",), None, "c")
        lowered.append(str(module).replace("@fused_", f"@case{number}_fused_"))
    result = run_under_asan(tmp_path, lowered)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.startswith("ran ")
