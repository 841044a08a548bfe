"""Attention as torch's exports write it (BERT, DistilBERT, GPT-2, ViT): q and k each scaled
by a scalar, k transposed by a move, 4-D `relay.nn.matmul`s, a boolean mask added as
`where(mask, 0, -inf)` (GPT-2's causal mask, BERT's padding mask), the softmax, then
`where(p != p, 0, p)` (a row whose keys are all masked is NaN after the softmax and 0 after
it): fuse-attention makes it one attention_rows kernel, which computes the mask per score
instead of materialising the scores. Built on C at each ISA level and on OpenCL, equal to
`xrelay.interpret`: edge sizes, one query row, batch > 1, rows with every key masked."""

from __future__ import annotations

import numpy as np
import pytest
from isa_levels import isa_params
from test_fuse_attention import fused

import xrelay

OPENCL = {"targets": ("c", "opencl"), "default_device": "opencl"}


def t(shape: tuple[int, ...], element: str = "f32") -> str:
    return f"tensor<{''.join(f'{d}x' for d in shape)}{element}>"


Shape = tuple[int, int, int, int, int, int]  # b, h, m, n, d, e


def sdpa(shape: Shape, masked: bool = True) -> str:
    """torch's scaled dot-product attention export: q [b, h, m, d], k [b, h, n, d], v
    [b, h, n, e], mask [b, 1, m, n] (true: attend)."""
    b, h, m, n, d, e = shape
    q, k, kt, v = (b, h, m, d), (b, h, n, d), (b, h, d, n), (b, h, n, e)
    s, o, c = (b, h, m, n), (b, h, m, e), (1,)
    args = f"%q: {t(q)}, %k: {t(k)}, %v: {t(v)}" + (f", %mask: {t((b, 1, m, n), 'i1')}" if masked else "")
    lines = [
        f"%c = relay.constant {{value = dense<0.5> : {t(c)}}} : {t(c)}",
        f"%kt = relay.transpose %k {{axes = array<i64: 0, 1, 3, 2>}} : ({t(k)}) -> {t(kt)}",
        f"%qs = relay.multiply %q, %c : ({t(q)}, {t(c)}) -> {t(q)}",
        f"%ks = relay.multiply %kt, %c : ({t(kt)}, {t(c)}) -> {t(kt)}",
        f"%a = relay.nn.matmul %qs, %ks : ({t(q)}, {t(kt)}) -> {t(s)}",
    ]
    scores = "%a"
    if masked:
        lines += [
            f"%zero = relay.constant {{value = dense<0.0> : {t(c)}}} : {t(c)}",
            f"%ninf = relay.constant {{value = dense<0xFF800000> : {t(c)}}} : {t(c)}",
            f"%bias = relay.where %mask, %zero, %ninf : ({t((b, 1, m, n), 'i1')}, {t(c)}, {t(c)}) -> {t((b, 1, m, n))}",
            f"%am = relay.add %a, %bias : ({t(s)}, {t((b, 1, m, n))}) -> {t(s)}",
        ]
        scores = "%am"
    lines += [
        f"%p = relay.nn.softmax {scores} : ({t(s)}) -> {t(s)}",
        f"%nan = relay.not_equal %p, %p : ({t(s)}, {t(s)}) -> {t(s, 'i1')}",
        f"%z = relay.constant {{value = dense<0.0> : {t(c)}}} : {t(c)}",
        f"%pf = relay.where %nan, %z, %p : ({t(s, 'i1')}, {t(c)}, {t(s)}) -> {t(s)}",
        f"%o = relay.nn.matmul %pf, %v : ({t(s)}, {t(v)}) -> {t(o)}",
    ]
    body = "\n  ".join(lines)
    return f"func.func @main({args}) -> {t(o)} {{\n  {body}\n  func.return %o : {t(o)}\n}}"


def inputs(shape: Shape, mask: str, seed: int) -> dict[str, np.ndarray]:
    """Random q, k, v and a mask: "causal" (query i sees keys up to i + n - m), "padding"
    (the last keys of each batch masked, a different count per batch), "rows" (causal, and
    every key of some rows masked: those rows' outputs are 0)."""
    b, h, m, n, d, e = shape
    rng = np.random.default_rng(seed)
    arrays: dict[str, np.ndarray] = {
        "q": rng.standard_normal((b, h, m, d)).astype(np.float32),
        "k": rng.standard_normal((b, h, n, d)).astype(np.float32),
        "v": rng.standard_normal((b, h, n, e)).astype(np.float32),
    }
    rows, keys = np.arange(m)[:, None], np.arange(n)[None, :]
    causal = np.broadcast_to(keys <= rows + (n - m), (b, 1, m, n))
    if mask == "padding":
        arrays["mask"] = np.stack([np.broadcast_to(keys < n - i, (m, n)) for i in range(b)])[:, None].copy()
    elif mask == "rows":
        chosen = causal.copy()
        chosen[:, :, ::3, :] = False
        arrays["mask"] = chosen
    else:
        arrays["mask"] = causal.copy()
    return arrays


def check(text: str, arrays: dict[str, np.ndarray], **build: object) -> None:
    got = xrelay.build(text, **build).run(**arrays)  # type: ignore[arg-type]
    want = xrelay.interpret(xrelay.parse(text), arrays)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


# (b, h, m, n, d, e, mask)
CASES: list[tuple[Shape, str]] = [
    ((1, 2, 24, 24, 8, 8), "causal"),
    ((2, 3, 37, 37, 16, 20), "padding"),
    ((1, 2, 1, 40, 8, 8), "causal"),
    ((1, 1, 20, 20, 8, 24), "rows"),
    ((2, 2, 70, 50, 12, 16), "rows"),
]
IDS = ["causal", "padding, batch 2, edges", "one query row", "all-masked rows", "two row blocks, m > n"]


@pytest.mark.parametrize("shape,mask", CASES, ids=IDS)
def test_one_kernel(shape: Shape, mask: str) -> None:
    """The moves and scales of q and k, the scores with the mask, the softmax, the NaN fix and
    the product with v: one group lowered by attention_rows."""
    (group,) = fused(sdpa(shape))
    assert group.kernel is not None and "softmax" in group.kernel


@pytest.mark.parametrize("target", isa_params())
@pytest.mark.parametrize("shape,mask", CASES, ids=IDS)
def test_on_c_equals_the_interpreter(shape: Shape, mask: str, target: str) -> None:
    check(sdpa(shape), inputs(shape, mask, seed=1), targets=(target,))


@pytest.mark.parametrize("shape,mask", CASES[1::2], ids=IDS[1::2])
def test_on_opencl_equals_the_interpreter(shape: Shape, mask: str) -> None:
    assert len(fused(sdpa(shape), OPENCL["targets"], "opencl")) == 1  # type: ignore[arg-type]
    check(sdpa(shape), inputs(shape, mask, seed=2), **OPENCL)


def test_all_masked_rows_give_zeros() -> None:
    shape = (1, 1, 20, 20, 8, 24)
    arrays = inputs(shape, "rows", seed=3)
    got = np.asarray(xrelay.build(sdpa(shape), targets=("c",)).run(**arrays))
    assert np.all(got[:, :, ::3, :] == 0) and np.all(np.isfinite(got))


def test_without_a_mask() -> None:
    """ViT's attention: the scaled q and k, no mask, the NaN fix."""
    shape = (1, 3, 197, 197, 16, 16)
    text = sdpa(shape, masked=False)
    assert len(fused(text)) == 1
    arrays = inputs(shape, "causal", seed=4)
    del arrays["mask"]
    check(text, arrays, targets=("c",))
