"""fuse-conv-pool with a global_avg_pool2d: a 1 x 1 conv group and the global pool that reads
it as one pointwise_conv kernel that stores the pooled [N, C, 1, 1].

Which groups merge (one reader on the same scope; not two readers, different scopes, a
producer that is no conv), and the merged kernel at edge shapes (channels not multiples of
the vector or tile, 7 x 7, 1 x 1, odd pixel counts, batch 2, relu6, hardswish, swish and
residual epilogues, an op after the pool) built for each ISA level and OpenCL against
`xrelay.interpret`, within the error bound of its sums.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from isa_levels import isa_params
from test_depthwise_conv import EPILOGUES, t
from tolerances import EPS32, assert_within, sum_of_products_bound

import xrelay
from xrelay.dialects import relay
from xrelay.transforms import fuse_conv_pool
from xrelay.transforms.convert_relay_to_loops import pick_schedule
from xrelay.transforms.fuse_conv_pool import FuseConvPoolPass
from xrelay.transforms.fuse_ops import FuseOpsPass
from xrelay.transforms.plan_devices import PlanDevicesPass
from xrelay.transforms.schedules import pointwise_conv

EPILOGUES = {**EPILOGUES, "residual": ["%s = relay.add %d, %x : (T, T) -> T", "%e = relay.nn.relu %s : T"]}

CASES = {
    # name: data (N, C, H, W), output channels, epilogue after conv + bias, relu after the pool
    "mobilenet_last_7x7": ((1, 32, 7, 7), 160, "relu6", False),
    "odd_channels_hardswish": ((1, 67, 7, 7), 43, "hardswish", False),
    "batch2_swish_odd_pixels": ((2, 64, 7, 9), 45, "swish", True),
    "residual_batch2": ((2, 72, 7, 7), 72, "residual", False),
    "odd_pixels_relu_after": ((1, 33, 7, 11), 70, "relu6", True),
    # fewer pixels than a tile's columns: pointwise_conv does not take the conv, no merge
    "one_pixel": ((1, 512, 1, 1), 600, "relu6", False),
}  # fmt: skip


def program(name: str, readers: int = 1) -> str:
    """@main(x, w, b) = global_avg_pool2d(epilogue(conv2d(x, w) + b)) (then relu); with two
    `readers`, the epilogue's value is a second result too."""
    data, out_c, epilogue, relu_after = CASES[name]
    n, c, h, w = data
    result, pooled = (n, out_c, h, w), (n, out_c, 1, 1)
    lines = [
        f"%c = relay.nn.conv2d %x, %w : ({t(data)}, {t((out_c, c, 1, 1))}) -> T",
        f"%d = relay.nn.bias_add %c, %b : (T, {t((out_c,))}) -> T",
        "%sixth = relay.constant {value = dense<0.1666666716337204> : tensor<f32>} : tensor<f32>",
        "%half = relay.constant {value = dense<0.5> : tensor<f32>} : tensor<f32>",
        *EPILOGUES[epilogue],
        f"%p = relay.nn.global_avg_pool2d %e : (T) -> {t(pooled)}",
    ]
    last = "%p"
    if relu_after:
        lines.append(f"%q = relay.nn.relu %p : {t(pooled)}")
        last = "%q"
    results = [(last, pooled)] + [("%e", result)] * (readers - 1)
    body = "\n  ".join(line.replace("T", t(result)) for line in lines)
    params = f"%x: {t(data)}, %w: {t((out_c, c, 1, 1))}, %b: {t((out_c,))}"
    returns = f"{', '.join(v for v, _ in results)} : {', '.join(t(s) for _, s in results)}"
    types = ", ".join(t(s) for _, s in results)
    return f"func.func @main({params}) -> ({types}) {{\n  {body}\n  func.return {returns}\n}}"


@dataclass
class Fused:
    """The kernel names after fuse-ops and after fuse-conv-pool, the schedule of fuse-ops' first
    group (the conv's), and the groups after fuse-conv-pool."""

    before: list[str | None]
    after: list[str | None]
    conv_schedule: str
    groups: list[relay.FusedOp]


def fused(text: str, target: str = "c") -> Fused:
    module = xrelay.parse(text)
    ctx = xrelay.context()
    PlanDevicesPass(targets=(target,)).apply(ctx, module)
    FuseOpsPass().apply(ctx, module)
    before = [op for op in module.walk() if isinstance(op, relay.FusedOp)]
    names, conv_schedule = [group.kernel for group in before], pick_schedule(before[0]).name
    FuseConvPoolPass().apply(ctx, module)
    after = [op for op in module.walk() if isinstance(op, relay.FusedOp)]
    return Fused(names, [group.kernel for group in after], conv_schedule, after)


@pytest.fixture
def without_packed_conv_hand_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """pointwise_conv keeps the 1 x 1 convs it would leave to packed_conv on AVX-512 (a
    residual one at 7 x 7), so the native build merges them too."""
    monkeypatch.setattr(pointwise_conv, "PACKED_MIN_REGISTERS", 1 << 20)


@pytest.mark.parametrize("target", ["c", "opencl"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_conv_and_its_global_pool_become_one_group(name: str, target: str) -> None:
    """Merged exactly where pointwise_conv computes the conv (it alone pools a global pool):
    on OpenCL all but the 1 x 1 image; on AVX-512 packed_conv takes the narrowing ones."""
    result = fused(program(name), target)
    assert len(result.before) == 2
    if result.conv_schedule != "pointwise_conv":
        assert result.after == result.before and (name == "one_pixel" or target != "opencl")
        return
    (group,) = result.groups
    assert pick_schedule(group).name == "pointwise_conv" and pointwise_conv.pools_in_epilogue(group)
    assert "relay.nn.global_avg_pool2d" in [op.name for op in group.body.block.ops]


def test_two_readers_of_the_conv_keep_two_groups() -> None:
    """The squeeze-excite shape: the epilogue's value is read by the pool and by something
    else (here the function's second result), so the conv group has another use."""
    result = fused(program("mobilenet_last_7x7", readers=2))
    assert result.conv_schedule == "pointwise_conv" and result.after == result.before


def test_different_scopes_keep_two_groups() -> None:
    """The conv group on the cpu, the pool group on OpenCL (its scope set after fuse-ops, as a
    placement with a copy between would leave it): no group spans two devices."""
    module = xrelay.parse(program("mobilenet_last_7x7"))
    ctx = xrelay.context()
    PlanDevicesPass(targets=("c",)).apply(ctx, module)
    FuseOpsPass().apply(ctx, module)
    opencl = fused(program("one_pixel"), "opencl").groups[1].se_scope
    conv_group, pool_group = [op for op in module.walk() if isinstance(op, relay.FusedOp)]
    assert opencl is not None and conv_group.se_scope != opencl
    pool_group.se_scope = opencl
    before = str(module)
    FuseConvPoolPass().apply(ctx, module)
    assert str(module) == before


def test_a_pool_of_no_conv_stays_its_own_group() -> None:
    """A global pool of a dense's reshaped result, of an input, and of a 3 x 3 conv (no
    schedule sums its blocks): fuse-ops' groups stay."""
    x, y = t((1, 64, 7, 7)), t((1, 64, 1, 1))
    text = f"""func.func @main(%x: {x}, %w: {t((64, 64, 3, 3))}) -> ({y}, {y}) {{
  %a = relay.exp %x : {x}
  %p = relay.nn.global_avg_pool2d %a : ({x}) -> {y}
  %c = relay.nn.conv2d %x, %w {{padding = array<i64: 1, 1, 1, 1>}} : ({x}, {t((64, 64, 3, 3))}) -> {x}
  %q = relay.nn.global_avg_pool2d %c : ({x}) -> {y}
  func.return %p, %q : {y}, {y}
}}"""
    result = fused(text)
    assert result.after == result.before and len(result.after) == 4


def test_mobilenet_and_residual_cases_merge_where_pointwise_conv_takes_the_conv(
    without_packed_conv_hand_off: None,
) -> None:
    """On this machine (AVX-512) MobileNetV2's shape merges; a residual 1 x 1 conv at 7 x 7
    (ResNet-50's last) merges once pointwise_conv keeps it, and the kernel agrees."""
    assert len(fused(program("mobilenet_last_7x7")).after) == 1
    assert len(fused(program("residual_batch2")).after) == 1
    check_pooled_kernel("residual_batch2", "c")


@pytest.mark.parametrize("target", [*isa_params(), "opencl"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_pooled_kernel_agrees_with_interpret(name: str, target: str) -> None:
    check_pooled_kernel(name, target)


def check_pooled_kernel(name: str, target: str) -> None:
    """One kernel, equal to `interpret` within the bound of its sums: each conv output a sum
    of C products and the bias (and the residual), the pool a sum of H * W of them."""
    data, out_c, _, _ = CASES[name]
    text = program(name)
    rng = np.random.default_rng(11)
    x = (2 * rng.standard_normal(data)).astype(np.float32)
    params = {
        "w": rng.standard_normal((out_c, data[1], 1, 1)).astype(np.float32),
        "b": rng.standard_normal(out_c).astype(np.float32),
    }
    built = xrelay.build(text, targets=(target,), params=params, num_threads=2)
    groups = fused(text, target)
    assert [k.name for k in built.kernels] == groups.after
    assert len(groups.after) == (1 if groups.conv_schedule == "pointwise_conv" else 2)
    expected = xrelay.interpret(xrelay.parse(text), {"x": x, **params})
    magnitude = xrelay.interpret(xrelay.parse(text), {"x": np.abs(x), **{k: np.abs(v) for k, v in params.items()}})
    terms = data[1] + 3 + data[2] * data[3]
    bound = sum_of_products_bound(np.abs(magnitude), terms, c=4.0) + 4 * EPS32 * np.abs(expected)
    assert_within(built.run(x), expected, bound, name)


@pytest.mark.parametrize("target", [*isa_params(), "opencl"])
@pytest.mark.parametrize("name", ["mobilenet_last_7x7", "odd_pixels_relu_after"])
def test_pooled_kernel_rounds_as_the_two_kernels(name: str, target: str) -> None:
    """The merged kernel adds each channel's pixels in the pool kernel's loops (rows, then the
    row's pixels, its reduction pragma the same), so its result is bit for bit the conv and
    pool kernels' (fuse-conv-pool's POOLING emptied)."""
    data, out_c, _, _ = CASES[name]
    rng = np.random.default_rng(12)
    x = rng.standard_normal(data).astype(np.float32)
    params = {"w": rng.standard_normal((out_c, data[1], 1, 1)).astype(np.float32)}
    params["b"] = rng.standard_normal(out_c).astype(np.float32)
    merged = xrelay.build(program(name), targets=(target,), params=params, num_threads=1)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(fuse_conv_pool, "POOLING", {})
        two = xrelay.build(program(name), targets=(target,), params=params, num_threads=1)
    assert (len(merged.kernels), len(two.kernels)) == (1, 2)
    np.testing.assert_array_equal(merged.run(x), two.run(x))
