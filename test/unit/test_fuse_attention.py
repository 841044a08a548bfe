"""fuse-attention: which scores, softmax and output groups become one (the pass's decisions),
and the transformer block with its attention in one kernel, built for C and for OpenCL,
against `xrelay.interpret`. The merged kernel's own
cases (edge shapes, batches, NaN and inf, ASan) are in test_attention_rows.py."""

from __future__ import annotations

import numpy as np
import pytest
from test_attention_rows import attention, inputs
from test_bench_models import models
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


def test_a_mask_of_every_score_is_declined() -> None:
    """An add of a [b, m, n] mask before the softmax is no scale of one value per row or a
    scalar (attention_rows' test): the groups stay."""
    text = attention((1, 24, 8), (1, 40, 8), (1, 16, 40), "row")
    text = text.replace("tensor<1x24x1xf32>", "tensor<1x24x40xf32>")
    assert len(names(text)) == 3


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
