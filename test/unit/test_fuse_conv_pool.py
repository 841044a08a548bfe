"""fuse-conv-pool: which conv and pool groups become one, and the CNN with its second conv and
pool in one kernel (C), both convs with their pools (OpenCL), against `xrelay.interpret`. The
merged kernels' own cases (odd sizes, batches, NaN and inf, AddressSanitizer) are in
test_winograd_conv.py and test_conv_taps.py."""

from __future__ import annotations

import numpy as np
import pytest
from test_bench_models import models
from test_winograd_conv import OPENCL, PAD1, assert_close, conv_program

import xrelay
from xrelay.dialects import relay
from xrelay.transforms.convert_relay_to_loops import pick_schedule
from xrelay.transforms.fuse_conv_pool import FuseConvPoolPass
from xrelay.transforms.fuse_ops import FuseOpsPass
from xrelay.transforms.plan_devices import PlanDevicesPass
from xrelay.transforms.schedules import conv_taps, winograd_conv

STRIDE2 = "{strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>}"
MERGED = "fused_nn_conv2d_nn_bias_add_nn_relu_nn_max_pool2d"


def fused(text: str, targets: tuple[str, ...] = ("c",), device: str | None = None) -> tuple[str, str]:
    """The module after plan-devices and fuse-ops, and after fuse-conv-pool too, as text."""
    module = xrelay.parse(text)
    ctx = xrelay.context()
    PlanDevicesPass(targets=targets, default_device=device).apply(ctx, module)
    FuseOpsPass().apply(ctx, module)
    before = str(module)
    FuseConvPoolPass().apply(ctx, module)
    return before, str(module)


def groups(text: str) -> list[relay.FusedOp]:
    return [op for op in xrelay.parse(text).walk() if isinstance(op, relay.FusedOp)]


def test_cnn_second_conv_and_pool_are_one_kernel() -> None:
    """bench/models.py's CNN on the cpu: the second conv (winograd_conv) takes its pool; the
    first (conv_taps, POOLING_DEVICES) keeps its pool as a kernel of its own. Built, it
    agrees with `interpret`."""
    text = models.cnn_relay()
    _, after = fused(text)
    names = [group.kernel for group in groups(after)]
    assert names == [
        "fused_nn_conv2d_nn_bias_add_nn_relu",
        "fused_nn_max_pool2d",
        MERGED,
        "fused_reshape",
        "fused_nn_dense_nn_bias_add",
        "fused_nn_softmax",
    ]
    merged = groups(after)[2]
    assert pick_schedule(merged).name == "winograd_conv" and winograd_conv.pools_in_epilogue(merged)
    arrays = models.random_inputs(text, seed=3)
    built = xrelay.build(text, targets=("c",))
    assert [k.name for k in built.kernels if k.name.startswith("fused_nn_conv2d")] == [
        "fused_nn_conv2d_nn_bias_add_nn_relu",
        MERGED,
    ]
    assert_close(built.run(**arrays), xrelay.interpret(xrelay.parse(text), arrays))


def test_cnn_both_convs_take_their_pools_on_opencl() -> None:
    """On opencl both convs take their pools: the first in conv_taps' stores, the second in
    winograd_conv's. Built, it agrees with `interpret`."""
    text = models.cnn_relay()
    _, after = fused(text, OPENCL, "opencl")
    first, second = groups(after)[:2]
    assert [first.kernel, second.kernel] == [MERGED, f"{MERGED}_1"]
    assert pick_schedule(first).name == "conv_taps" and conv_taps.pools_in_epilogue(first)
    assert pick_schedule(second).name == "winograd_conv" and winograd_conv.pools_in_epilogue(second)
    arrays = models.random_inputs(text, seed=3)
    built = xrelay.build(text, targets=OPENCL, default_device="opencl")
    assert len(built.kernels) == 5
    assert_close(built.run(**arrays), xrelay.interpret(xrelay.parse(text), arrays))


def test_running_twice_changes_nothing() -> None:
    module = xrelay.parse(fused(models.cnn_relay())[1])
    once = str(module)
    FuseConvPoolPass().apply(xrelay.context(), module)
    assert str(module) == once


@pytest.mark.parametrize(
    ("program", "merged"),
    [
        # the CNN's second conv at batch 1 and 8, and odd sizes (the last row and column dropped)
        (conv_program((1, 16, 14, 14), (32, 16, 3, 3), PAD1, (1, 32, 14, 14), "bias_relu", 2), True),
        (conv_program((8, 16, 14, 14), (32, 16, 3, 3), PAD1, (8, 32, 14, 14), "bias_relu", 2), True),
        (conv_program((1, 16, 13, 15), (16, 16, 3, 3), PAD1, (1, 16, 13, 15), "", 2), True),
        # a residual epilogue (+ x, a broadcast of the group's second input) before the pool
        (conv_program((1, 16, 14, 14), (16, 16, 3, 3), PAD1, (1, 16, 14, 14), "residual", 2), True),
        # F4's tile holds one 4 x 4 window; F2's does not
        (conv_program((1, 16, 32, 32), (16, 16, 3, 3), PAD1, (1, 16, 32, 32), "bias_relu", 4), True),
        (conv_program((1, 16, 16, 16), (16, 16, 3, 3), PAD1, (1, 16, 16, 16), "bias_relu", 4), False),
        # 3 x 3 windows split F2's and F4's tiles
        (conv_program((1, 16, 36, 36), (16, 16, 3, 3), PAD1, (1, 16, 36, 36), "bias_relu", 3), False),
        # convs winograd_conv leaves to other schedules: strided, one input channel
        (conv_program((1, 16, 28, 28), (16, 16, 3, 3), STRIDE2, (1, 16, 14, 14), "bias_relu", 2), False),
        (conv_program((1, 1, 28, 28), (16, 1, 3, 3), PAD1, (1, 16, 28, 28), "bias_relu", 2), False),
    ],
)  # fmt: skip
def test_merges_only_where_winograd_conv_pools(program: str, merged: bool) -> None:
    """A merged group is lowered by winograd_conv pooling in its stores; where it would not
    be, the pass leaves fuse-ops' groups as they were."""
    before, after = fused(program)
    if not merged:
        assert after == before
        return
    (group,) = groups(after)
    assert pick_schedule(group).name == "winograd_conv" and winograd_conv.pools_in_epilogue(group)
    assert [op.name for op in group.body.block.ops][-2:] == ["relay.nn.max_pool2d", "relay.yield"]
    rng = np.random.default_rng(4)
    arrays = {a.name_hint: rng.standard_normal(a.type.get_shape()).astype(np.float32) for a in xrelay.parse(program).ops.first.args}  # fmt: skip
    built = xrelay.build(program, targets=("c",))
    assert len(built.kernels) == 1
    assert_close(built.run(**arrays), xrelay.interpret(xrelay.parse(program), arrays))
