"""fuse-attention: which scores, softmax and output groups become one (the pass's decisions),
and the transformer block with its attention in one kernel, built for C and for OpenCL,
against `xrelay.interpret`; q, k and v as moves (slices, reshapes, transposes) of one tensor,
taken into the group, on both targets with edge shapes, NaN and inf, and ASan. The merged
kernel's own cases (edge shapes, batches, NaN and inf, ASan) are in test_attention_rows.py."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from test_attention_rows import attention, inputs, t
from test_bench_models import models
from test_c_library import run_programs_under_asan
from test_winograd_conv import OPENCL

import xrelay
from xrelay.dialects import relay
from xrelay.transforms.convert_relay_to_loops import pick_schedule
from xrelay.transforms.fuse_attention import FuseAttentionPass
from xrelay.transforms.fuse_ops import FuseOpsPass
from xrelay.transforms.plan_devices import PlanDevicesPass

MERGED = "fused_nn_batch_matmul_multiply_nn_softmax_nn_batch_matmul"


def fused(text: str, targets: tuple[str, ...] = ("c",), device: str | None = None) -> list[relay.FusedOp]:
    """The groups after plan-devices, fuse-ops and fuse-attention."""
    module = xrelay.parse(text)
    ctx = xrelay.context()
    PlanDevicesPass(targets=targets, default_device=device).apply(ctx, module)
    FuseOpsPass().apply(ctx, module)
    FuseAttentionPass().apply(ctx, module)
    return [op for op in module.walk() if isinstance(op, relay.FusedOp)]


def names(text: str, targets: tuple[str, ...] = ("c",), device: str | None = None) -> list[str | None]:
    return [group.kernel for group in fused(text, targets, device)]


@pytest.mark.parametrize(("targets", "device"), [(("c",), None), (OPENCL, "opencl")])
def test_transformer_attention_is_one_group(targets: tuple[str, ...], device: str | None) -> None:
    groups = fused(models.transformer_relay(), targets, device)
    merged = [group for group in groups if group.kernel == MERGED]
    assert len(merged) == 1 and pick_schedule(merged[0]).name == "attention_rows"
    assert not any(group.kernel in ("fused_nn_softmax", "fused_nn_batch_matmul") for group in groups)


def test_running_twice_changes_nothing() -> None:
    module = xrelay.parse(models.transformer_relay())
    ctx = xrelay.context()
    PlanDevicesPass(targets=("c",)).apply(ctx, module)
    FuseOpsPass().apply(ctx, module)
    FuseAttentionPass().apply(ctx, module)
    once = str(module)
    FuseAttentionPass().apply(ctx, module)
    assert str(module) == once


@pytest.mark.parametrize(
    ("text", "merged"),
    [
        (attention((2, 40, 24), (2, 50, 24), (2, 20, 50)), True),
        # ops after the product join it; a scale of one value per row too
        (attention((2, 40, 24), (2, 50, 24), (2, 20, 50), "row", "bias_relu"), True),
        # the product's batch broadcast by v's: attention_rows declines, the groups stay
        (attention((1, 24, 8), (1, 40, 8), (2, 16, 40)), False),
        # a work item's scratch past 320 KiB (4096 keys): the groups stay
        (attention((1, 64, 16), (1, 4096, 16), (1, 16, 4096)), False),
    ],
)
def test_merged_only_where_attention_rows_takes_it(text: str, merged: bool) -> None:
    kernels = names(text)
    assert (len(kernels) == 1) == merged, kernels
    if not merged:
        assert len(kernels) == 3


def test_an_attention_of_an_attention_merges_the_first() -> None:
    """The first attention's output group is the second's scores group: the first three
    groups merge, the second softmax and product stay two groups; built, as `interpret`."""
    s3, p3, o3 = "tensor<1x32x32xf32>", "tensor<1x32x16xf32>", "tensor<1x16x32xf32>"
    text = f"""func.func @main(%q: {p3}, %k: {p3}, %v: {o3}, %w: {p3}) -> {p3} {{
  %a = relay.nn.batch_matmul %q, %k : ({p3}, {p3}) -> {s3}
  %p = relay.nn.softmax %a : ({s3}) -> {s3}
  %o = relay.nn.batch_matmul %p, %v : ({s3}, {o3}) -> {p3}
  %p2 = relay.nn.softmax %o : ({p3}) -> {p3}
  %o2 = relay.nn.batch_matmul %p2, %w : ({p3}, {p3}) -> {s3}
  func.return %o2 : {s3}
}}""".replace(f"-> {p3} {{", f"-> {s3} {{")
    assert names(text) == [
        "fused_nn_batch_matmul_nn_softmax_nn_batch_matmul",
        "fused_nn_softmax_1",
        "fused_nn_batch_matmul_2",
    ]
    arrays = inputs(text, seed=6)
    got = xrelay.build(text, targets=("c",)).run(**arrays)
    np.testing.assert_allclose(got, xrelay.interpret(xrelay.parse(text), arrays), rtol=1e-4, atol=1e-5)


def test_a_mask_of_every_score_is_taken_in() -> None:
    """An add of a [b, m, n] mask before the softmax (BERT's padding mask, GPT-2's causal
    one): attention_rows computes it per score, so the three groups are one
    (test_masked_attention.py has torch's form of it)."""
    text = attention((1, 24, 8), (1, 40, 8), (1, 16, 40), "row")
    text = text.replace("tensor<1x24x1xf32>", "tensor<1x24x40xf32>")
    assert len(names(text)) == 1
    arrays = inputs(text, seed=7)
    got = xrelay.build(text, targets=("c",)).run(**arrays)
    np.testing.assert_allclose(got, xrelay.interpret(xrelay.parse(text), arrays), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(("targets", "device"), [(("c",), None), (OPENCL, "opencl")])
def test_transformer_against_interpret(targets: tuple[str, ...], device: str | None) -> None:
    text = models.transformer_relay()
    arrays = models.random_inputs(text, seed=4)
    built = xrelay.build(text, targets=targets, default_device=device)
    assert MERGED in [k.name for k in built.kernels]
    got, want = built.run(**arrays), xrelay.interpret(xrelay.parse(text), arrays)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_small_attention_against_interpret() -> None:
    text = attention((2, 40, 24), (2, 50, 24), (2, 20, 50), "row", "bias_relu")
    arrays = inputs(text, seed=5)
    got = xrelay.build(text, targets=("c",)).run(**arrays)
    np.testing.assert_allclose(got, xrelay.interpret(xrelay.parse(text), arrays), rtol=1e-4, atol=1e-5)


def heads_attention(seq: int, heads: int, head: int, k_also_returned: bool = False) -> str:
    """Attention over the heads of one [seq, 3 heads head] tensor (a Q/K/V dense's result):
    strided slices, reshapes to [seq, heads, head] and transposes to q [heads, seq, head],
    k [heads, seq, head] and v [heads, head, seq], as the transformer with its Q/K/V denses
    combined. With `k_also_returned`, k is a second result."""
    width = heads * head
    qkv, sliced, split = t((seq, 3 * width)), t((seq, width)), t((seq, heads, head))
    qk, vt, scores, out = t((heads, seq, head)), t((heads, head, seq)), t((heads, seq, seq)), t((heads, seq, head))
    lines = []
    for i, (name, perm, ty) in enumerate([("q", "1, 0, 2", qk), ("k", "1, 0, 2", qk), ("v", "1, 2, 0", vt)]):
        lines += [
            f"%{name}s = relay.strided_slice %x {{begin = array<i64: 0, {i * width}>, "
            f"end = array<i64: {seq}, {(i + 1) * width}>}} : ({qkv}) -> {sliced}",
            f"%{name}r = relay.reshape %{name}s {{newshape = array<i64: {seq}, {heads}, {head}>}} : ({sliced}) -> {split}",
            f"%{name} = relay.transpose %{name}r {{axes = array<i64: {perm}>}} : ({split}) -> {ty}",
        ]
    lines += [
        f"%a = relay.nn.batch_matmul %q, %k : ({qk}, {qk}) -> {scores}",
        f"%m = relay.multiply %a, %s : ({scores}, {t(())}) -> {scores}",
        f"%p = relay.nn.softmax %m : ({scores}) -> {scores}",
        f"%o = relay.nn.batch_matmul %p, %v : ({scores}, {vt}) -> {out}",
    ]
    results, types = ("%o, %k", f"{out}, {qk}") if k_also_returned else ("%o", out)
    body = "\n  ".join(lines)
    return f"func.func @main(%x: {qkv}, %s: {t(())}) -> ({types}) {{\n  {body}\n  func.return {results} : {types}\n}}"


@pytest.mark.parametrize(("targets", "device"), [(("c",), None), (OPENCL, "opencl")])
def test_the_heads_moves_are_read_inside_the_attention(targets: tuple[str, ...], device: str | None) -> None:
    """The slice/reshape/transpose groups of q, k and v join the attention's group (named
    after the attention's ops): one kernel."""
    assert names(heads_attention(32, 2, 16), targets, device) == [MERGED]


def test_a_move_whose_result_is_also_used_elsewhere_stays_a_group() -> None:
    groups = names(heads_attention(32, 2, 16, k_also_returned=True))
    assert MERGED in groups and len(groups) == 2  # k's moves stay a group of their own


@pytest.mark.parametrize(("targets", "device"), [(("c",), None), (OPENCL, "opencl")])
@pytest.mark.parametrize(("seq", "heads", "head"), [(37, 3, 20), (128, 4, 64), (16, 1, 16)])
@pytest.mark.parametrize("nonfinite", [None, np.nan, np.inf])
def test_attention_over_moved_heads_against_interpret(
    targets: tuple[str, ...], device: str | None, seq: int, heads: int, head: int, nonfinite: float | None
) -> None:
    """Edge shapes (37 rows: no multiple of the tile or the block of rows; 1 head), and a NaN
    or inf in one element of q, of k and of v."""
    text = heads_attention(seq, heads, head)
    rng = np.random.default_rng(seq)
    x = rng.standard_normal((seq, 3 * heads * head)).astype(np.float32)
    if nonfinite is not None:
        width = heads * head
        x[seq // 2, 1] = x[1, width + head - 1] = x[seq - 1, 2 * width + 2] = nonfinite
    arrays = {"x": x, "s": np.array(0.125, np.float32)}
    built = xrelay.build(text, targets=targets, default_device=device)
    assert [k.name for k in built.kernels] == [MERGED]
    got, want = built.run(**arrays), xrelay.interpret(xrelay.parse(text), arrays)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_attention_over_moved_heads_runs_clean_under_address_sanitizer(tmp_path: Path) -> None:
    """The reads through the moves stay inside the one input (C, ASan)."""
    run_programs_under_asan(tmp_path, [heads_attention(37, 3, 20), heads_attention(16, 1, 16)])
