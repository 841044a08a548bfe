"""attention_rows: fuse-attention's group (q . k^T, a scale, softmax, . v) in one kernel,
built for C and for OpenCL and run against `xrelay.interpret`: the transformer's shapes,
shapes that are not multiples of the tile or the block of rows, one head, broadcast batches,
ops after the scale and after the product, NaN and inf in q, k and v (with keys a multiple
of 16 too: OpenCL's softmax in float16s), rows of -inf, and ASan (C)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from test_c_library import run_programs_under_asan
from xdsl.dialects import func

import xrelay
from xrelay.driver import lower

SCHEDULE_ATTR = "relay.schedule"
OPENCL = ("c", "opencl")
DEVICES = ["cpu", "opencl"]


def t(shape: tuple[int, ...]) -> str:
    return f"tensor<{''.join(f'{d}x' for d in shape)}f32>"


def attention(
    q: tuple[int, int, int], k: tuple[int, int, int], v: tuple[int, int, int], scale: str = "scalar", tail: str = ""
) -> str:
    """batch_matmul(softmax(batch_matmul(q, k) op s), v), then `tail`. `scale`: "scalar" (a
    tensor<f32> input multiplies), "constant" (0.125, a splat), "row" (an input of one value
    per row is added: -inf makes a row of -inf), "none". `tail`: "" or "bias_relu" (+ a
    vector along the last axis, then relu)."""
    batch = max(q[0], k[0])
    scores, out = (batch, q[1], k[1]), (max(batch, v[0]), q[1], v[1])
    params = {"q": t(q), "k": t(k), "v": t(v)}
    lines = [f"%a = relay.nn.batch_matmul %q, %k : ({t(q)}, {t(k)}) -> {t(scores)}"]
    if scale == "scalar":
        params["s"] = t(())
        lines.append(f"%m = relay.multiply %a, %s : ({t(scores)}, {t(())}) -> {t(scores)}")
    elif scale == "constant":
        lines.append(f"%c = relay.constant {{value = dense<0.125> : {t(())}}} : {t(())}")
        lines.append(f"%m = relay.multiply %a, %c : ({t(scores)}, {t(())}) -> {t(scores)}")
    elif scale == "row":
        params["s"] = t((1, q[1], 1))
        lines.append(f"%m = relay.add %a, %s : ({t(scores)}, {t((1, q[1], 1))}) -> {t(scores)}")
    else:
        lines.append(f"%m = relay.nn.relu %a : {t(scores)}")
    lines.append(f"%p = relay.nn.softmax %m : ({t(scores)}) -> {t(scores)}")
    lines.append(f"%o = relay.nn.batch_matmul %p, %v : ({t(scores)}, {t(v)}) -> {t(out)}")
    if tail == "bias_relu":
        params["b"] = t((v[1],))
        lines.append(f"%r = relay.add %o, %b : ({t(out)}, {t((v[1],))}) -> {t(out)}")
        lines.append(f"%y = relay.nn.relu %r : {t(out)}")
    args = ", ".join(f"%{name}: {ty}" for name, ty in params.items())
    last = lines[-1].split("=")[0].strip()
    body = "\n  ".join(lines)
    return f"func.func @main({args}) -> {t(out)} {{\n  {body}\n  func.return {last} : {t(out)}\n}}"


def inputs(text: str, seed: int = 0) -> dict[str, np.ndarray]:
    module = xrelay.parse(text)
    main = next(op for op in module.ops if isinstance(op, func.FuncOp))
    rng = np.random.default_rng(seed)
    arrays: dict[str, np.ndarray] = {}
    for arg, ty in zip(main.body.block.args, main.function_type.inputs.data, strict=True):
        name = arg.name_hint
        assert name is not None
        shape = tuple(ty.get_shape())  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType, reportUnknownArgumentType]
        arrays[name] = rng.standard_normal(shape).astype(np.float32)
    if "s" in arrays and arrays["s"].ndim == 0:
        arrays["s"] = np.array(0.125, dtype=np.float32)
    return arrays


def schedules(text: str, device: str = "cpu") -> list[str]:
    module = xrelay.parse(text)
    if device == "cpu":
        lower(module, ("c",), None, "c")
    else:
        lower(module, OPENCL, device, "c")
    kernels = [op for op in module.ops if isinstance(op, func.FuncOp) and SCHEDULE_ATTR in op.attributes]
    return [str(op.attributes[SCHEDULE_ATTR]).strip('"') for op in kernels]


def check(text: str, arrays: dict[str, np.ndarray], device: str = "cpu", fused: bool = True, target: str = "c") -> None:
    """Built for C (device "cpu", for `target`) or OpenCL ("opencl"), `text` computes what the
    interpreter does (NaN where it has NaN), in one attention_rows kernel where `fused`."""
    assert (schedules(text, device) == ["attention_rows"]) == fused, schedules(text, device)
    if device == "cpu":
        built = xrelay.build(text, targets=(target,))
    else:
        built = xrelay.build(text, targets=OPENCL, default_device=device)
    got = built.run(**arrays)
    want = xrelay.interpret(xrelay.parse(text), arrays)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5, equal_nan=True)


@pytest.mark.parametrize(
    ("q", "k", "v"),
    [
        ((4, 128, 64), (4, 128, 64), (4, 64, 128)),  # the transformer's 4 heads
        ((1, 128, 64), (1, 128, 64), (1, 64, 128)),  # one head
        ((2, 37, 19), (2, 45, 19), (2, 23, 45)),  # no extent a multiple of a tile
        ((1, 70, 16), (1, 17, 16), (1, 33, 17)),  # a partial block of rows, a key past a tile
        ((1, 1, 1), (1, 1, 1), (1, 1, 1)),
        ((1, 24, 8), (3, 40, 8), (3, 16, 40)),  # q's batch broadcast
        ((3, 24, 8), (1, 40, 8), (3, 16, 40)),  # k's batch broadcast
        ((3, 24, 8), (3, 40, 8), (1, 16, 40)),  # v's batch broadcast
    ],
)
@pytest.mark.parametrize("device", DEVICES)
def test_against_interpret(
    q: tuple[int, int, int], k: tuple[int, int, int], v: tuple[int, int, int], device: str
) -> None:
    text = attention(q, k, v)
    check(text, inputs(text), device)


@pytest.mark.parametrize("target", ["c -march=x86-64-v2", "c -march=x86-64-v3"])
@pytest.mark.parametrize(
    ("q", "k", "v"),
    [
        ((4, 128, 64), (4, 128, 64), (4, 64, 128)),  # the transformer's 4 heads
        ((2, 37, 19), (2, 45, 19), (2, 23, 45)),  # no extent a multiple of a tile (6 x 2 or 16 x 1)
        ((1, 1, 1), (1, 1, 1), (1, 1, 1)),
        ((3, 24, 8), (1, 40, 8), (3, 16, 40)),  # k's batch broadcast
    ],
)
def test_at_every_isa_level(
    q: tuple[int, int, int], k: tuple[int, int, int], v: tuple[int, int, int], target: str
) -> None:
    """The kernel with SSE's and AVX2's tiles (6 x 2 vectors of 4 and 8 floats)."""
    text = attention(q, k, v)
    check(text, inputs(text), target=target)


@pytest.mark.parametrize(("scale", "tail"), [("constant", ""), ("row", "bias_relu"), ("none", "bias_relu")])
@pytest.mark.parametrize("device", DEVICES)
def test_ops_before_the_softmax_and_after_the_product(scale: str, tail: str, device: str) -> None:
    text = attention((2, 40, 24), (2, 50, 24), (2, 20, 50), scale, tail)
    check(text, inputs(text, seed=1), device)


def test_scores_broadcast_by_v_stay_three_kernels() -> None:
    """v's batch broadcasting the scores' (1 against 2): attention_rows does not take it."""
    text = attention((1, 24, 8), (1, 40, 8), (2, 16, 40))
    check(text, inputs(text), fused=False)


@pytest.mark.parametrize("keys", [48, 64])
@pytest.mark.parametrize("device", DEVICES)
def test_nan_and_inf(keys: int, device: str) -> None:
    """NaN in q (its row NaN), inf in k (NaN rows, or 0 and 1 weights), NaN and inf in v (its
    column), a row of -inf scores (NaN, as numpy's exp(-inf - -inf)): as the interpreter."""
    text = attention((2, 40, 16), (2, keys, 16), (2, 20, keys), "row", "")
    arrays = inputs(text, seed=2)
    arrays["q"][0, 3, 5] = np.nan
    arrays["k"][1, 7, 2] = np.inf
    arrays["k"][0, 9, 1] = -np.inf
    arrays["v"][0, 4, 30] = np.nan
    arrays["v"][1, 6, 11] = np.inf
    arrays["s"][0, 10, 0] = -np.inf
    arrays["s"][0, 20, 0] = np.inf
    check(text, arrays, device)
    want = xrelay.interpret(xrelay.parse(text), arrays)
    assert np.isnan(want[:, 10]).all() and np.isnan(want[0, 3]).all()  # the cases happen


def test_runs_clean_under_address_sanitizer(tmp_path: Path) -> None:
    programs = [
        attention((2, 37, 19), (2, 45, 19), (2, 23, 45)),
        attention((1, 70, 16), (1, 17, 16), (1, 33, 17), "row", "bias_relu"),
        attention((3, 24, 8), (1, 40, 8), (3, 16, 40), "constant"),
        attention((1, 1, 1), (1, 1, 1), (1, 1, 1)),
    ]
    assert all(schedules(text) == ["attention_rows"] for text in programs)
    run_programs_under_asan(tmp_path, programs)
