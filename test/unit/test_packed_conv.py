"""packed_conv: the cpu conv2d schedule of packed input tiles and register blocks.

Each case is a conv2d (with an epilogue where said) that the schedule takes on the cpu,
built with `xrelay.build` for C and for OpenCL (where conv_rows takes it) and checked against
`xrelay.interpret` on random inputs: edge blocks of channels and positions, batch > 1,
size-1 dims, groups, dilation and uneven padding, NaN inputs, and NaN or inf weights at taps
that fall on the padding (the slow path). A slice of them is also built for each ISA level
(`ISA_TARGETS`: SSE4.2, AVX2 and the native machine), whose kernels take vectors of that
level's width, against `interpret` within the error bound of their sums (`check_isa_level`).
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from isa_levels import OPENCL_PLANNED, PLANNED, isa_params
from test_c_library import run_programs_under_asan

import xrelay
from xrelay.dialects import relay
from xrelay.runtime.machine import target_features
from xrelay.transforms import convert_relay_to_loops
from xrelay.transforms.convert_relay_to_loops import pick_schedule
from xrelay.transforms.fuse_ops import FuseOpsPass
from xrelay.transforms.plan_devices import PlanDevicesPass
from xrelay.transforms.schedules import conv_taps, packed_conv, pointwise_conv, winograd_conv


@pytest.fixture(autouse=True)
def without_winograd_conv(monkeypatch: pytest.MonkeyPatch) -> None:
    """winograd_conv, first in line, takes most 3x3 convs here, conv_taps those of few
    input channels and pointwise_conv the unpadded 1x1 ones: leave them out, so that each
    case exercises packed_conv as it is named for (test_winograd_conv, test_conv_taps and
    test_pointwise_conv cover the others)."""
    earlier = (winograd_conv.SCHEDULE, conv_taps.SCHEDULE, pointwise_conv.SCHEDULE)
    schedules = tuple(s for s in convert_relay_to_loops.SCHEDULES if s not in earlier)
    monkeypatch.setattr(convert_relay_to_loops, "SCHEDULES", schedules)


def t(shape: tuple[int, ...]) -> str:
    return f"tensor<{'x'.join(map(str, shape))}xf32>"


def conv_program(data: tuple[int, ...], weight: tuple[int, ...], attrs: str, result: tuple[int, ...],
                 epilogue: bool = False, residual: bool = True) -> str:  # fmt: skip
    """@main(x, w[, b]) = conv2d(x, w) (+ b, relu when `epilogue`; with `residual`, + x before
    the relu: the ResNet block's second conv, whose result has x's shape)."""
    params = [f"%x: {t(data)}", f"%w: {t(weight)}"]
    lines = [f"%c = relay.nn.conv2d %x, %w {attrs} : ({t(data)}, {t(weight)}) -> {t(result)}"]
    last = "%c"
    if epilogue:
        params.append(f"%b: {t(result[1:2])}")
        lines += [
            f"%d = relay.nn.bias_add %c, %b : ({t(result)}, {t(result[1:2])}) -> {t(result)}",
        ]
        if residual:
            lines.append(f"%s = relay.add %d, %x : ({t(result)}, {t(data)}) -> {t(result)}")
        lines.append(f"%r = relay.nn.relu {'%s' if residual else '%d'} : {t(result)}")
        last = "%r"
    body = "\n  ".join(lines)
    return f"func.func @main({', '.join(params)}) -> {t(result)} {{\n  {body}\n  func.return {last} : {t(result)}\n}}"


def schedules(text: str, target: str = PLANNED) -> list[str]:
    """The schedules convert-relay-to-loops picks for the program's groups on the cpu."""
    module = xrelay.parse(text)
    ctx = xrelay.context()
    PlanDevicesPass(targets=(target,)).apply(ctx, module)
    FuseOpsPass().apply(ctx, module)
    return [pick_schedule(op).name for op in module.walk() if isinstance(op, relay.FusedOp)]


CASES = {
    # name: data, weight, attrs, result, epilogue
    "resnet_block_small": ((1, 8, 12, 12), (8, 8, 3, 3), "{padding = array<i64: 1, 1, 1, 1>}", (1, 8, 12, 12), True),
    "edge_blocks_batch": ((2, 3, 9, 14), (10, 3, 3, 3), "{padding = array<i64: 1, 1, 1, 1>}", (2, 10, 9, 14), False),
    "wide_rows": ((1, 11, 6, 40), (11, 11, 3, 3), "{padding = array<i64: 1, 1, 1, 1>}", (1, 11, 6, 40), True),
    "grouped_dilated_uneven": ((1, 8, 12, 16), (20, 4, 3, 2), "{groups = 2 : i64, dilation = array<i64: 1, 2>, padding = array<i64: 2, 0, 1, 3>}", (1, 20, 13, 17), False),
    "size_one": ((1, 256, 1, 64), (1, 256, 1, 3), "{padding = array<i64: 0, 1, 0, 1>}", (1, 1, 1, 64), False),
    "no_padding_one_block": ((3, 32, 8, 8), (16, 32, 3, 3), "", (3, 16, 6, 6), False),
    # row-aligned vectors: the CNN's first conv (one input channel, 28 wide: two vectors a
    # row, the second overlapping the first) and its second (14 wide: one vector a row, two
    # lanes dropped, blocks of 2 vectors), a row of 20 in a padded row of 22
    "cnn_first_one_channel": ((2, 1, 28, 28), (16, 1, 3, 3), "{padding = array<i64: 1, 1, 1, 1>}", (2, 16, 28, 28), False),
    "cnn_second_short_rows": ((2, 16, 14, 14), (32, 16, 3, 3), "{padding = array<i64: 1, 1, 1, 1>}", (2, 32, 14, 14), False),
    "row_aligned_overlap": ((1, 4, 6, 30), (8, 4, 3, 3), "{padding = array<i64: 1, 1, 1, 1>}", (1, 8, 6, 30), False),
    # flat blocks of 4 vectors (6 channels on AVX-512): ResNet's last stage, 7 x 7 (61 positions
    # in padded rows of 9: one block of 64, not two of 48), and its stride-2 conv into it
    "last_stage_7x7": ((1, 20, 7, 7), (20, 20, 3, 3), "{padding = array<i64: 1, 1, 1, 1>}", (1, 20, 7, 7), True),
    "stride2_to_7x7_batch": ((2, 16, 14, 13), (13, 16, 3, 3), "{strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>}", (2, 13, 7, 7), False),
    # 1 x 1 convs pointwise_conv leaves to it on AVX-512: strided (one phase), and at 7 x 7
    "pointwise_stride2_batch": ((2, 40, 13, 14), (36, 40, 1, 1), "{strides = array<i64: 2, 2>}", (2, 36, 7, 7), False),
    "pointwise_7x7_residual": ((1, 48, 7, 7), (48, 48, 1, 1), "{}", (1, 48, 7, 7), True),
}  # fmt: skip


def inputs(case: tuple, rng: np.random.Generator) -> dict[str, np.ndarray]:
    data, weight, _, result, epilogue = case
    arrays = {"x": rng.standard_normal(data).astype(np.float32), "w": rng.standard_normal(weight).astype(np.float32)}
    if epilogue:
        arrays["b"] = rng.standard_normal(result[1:2]).astype(np.float32)
    return arrays


def check_everywhere(text: str, arrays: dict[str, np.ndarray]) -> np.ndarray:
    expected = xrelay.interpret(xrelay.parse(text), arrays)
    for targets, device in ((("c",), "cpu"), (("c", "opencl"), "opencl")):
        got = xrelay.build(text, targets=targets, default_device=device).run(**arrays)
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)  # NaN where NaN
    return expected


@pytest.mark.parametrize("name", sorted(CASES))
def test_packed_conv_agrees_with_interpret(name: str) -> None:
    data, weight, attrs, result, epilogue = CASES[name]
    text = conv_program(data, weight, attrs, result, epilogue)
    assert schedules(text) == ["packed_conv"]
    check_everywhere(text, inputs(CASES[name], np.random.default_rng(0)))


@pytest.mark.parametrize(
    ("name", "aligned", "vectors"),
    [("cnn_first_one_channel", True, 2), ("cnn_second_short_rows", True, 2), ("row_aligned_overlap", True, 3),
     ("resnet_block_small", True, 3), ("wide_rows", False, 3), ("grouped_dilated_uneven", False, 3),
     ("last_stage_7x7", False, 4), ("stride2_to_7x7_batch", False, 4)],
)  # fmt: skip
def test_row_aligned_layout_where_rows_fill_vectors(name: str, aligned: bool, vectors: int) -> None:
    """Vectors along output rows where they compute at most ROW_SLACK more columns a row than
    the padded row (28 in 2 x 16 for 30, 14 in 16 for 16, 12 in 16 for 14; not 40 in 48 for
    42, nor 17 in 32 for 19)."""
    plan = plan_of(conv_program(*CASES[name]))
    assert plan is not None and (plan.row_aligned, plan.vectors) == (aligned, vectors)


def test_flat_blocks_of_four_vectors_where_they_compute_fewer() -> None:
    """7 x 7 outputs: 61 flat positions, one block of 4 vectors x 6 channels on AVX-512 (64
    positions) instead of two of 3 x 8 (96); wide rows keep 3 (8 vectors for 9: too small a saving)."""
    plan = plan_of(conv_program(*CASES["last_stage_7x7"]))
    assert plan is not None and (plan.vectors, plan.channels, plan.positions) == (4, 6, 61)
    wide = plan_of(conv_program(*CASES["wide_rows"]))
    assert wide is not None and (wide.vectors, wide.channels) == (3, 8)


def plan_of(text: str, target: str = PLANNED) -> packed_conv.Plan | None:
    module = xrelay.parse(text)
    ctx = xrelay.context()
    PlanDevicesPass(targets=(target,)).apply(ctx, module)
    FuseOpsPass().apply(ctx, module)
    (group,) = [op for op in module.walk() if isinstance(op, relay.FusedOp)]
    return packed_conv.plan_of(group)


@pytest.mark.parametrize(
    ("data", "row_block"),
    [((1, 64, 56, 56), 7), ((2, 64, 56, 56), 8), ((1, 16, 28, 28), 14), ((1, 4, 9, 40), 9)],
)
def test_row_blocks_split_evenly_over_two_threads(data: tuple[int, ...], row_block: int) -> None:
    """The ResNet block's conv: 8 blocks of 7 rows, not 7 of 8 (4 + 3 on two threads); with
    2 images, 14 of 8; 1 block of 9 rows, not 9 of 1 (blocks of at least half the largest)."""
    n, c, h, w = data
    text = conv_program(data, (c, c, 3, 3), "{padding = array<i64: 1, 1, 1, 1>}", (n, c, h, w))
    plan = plan_of(text)
    assert plan is not None and plan.row_block == row_block


@pytest.mark.parametrize("name", ["cnn_second_short_rows", "row_aligned_overlap"])
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_row_aligned_nonfinite_weight_on_padding(name: str, bad: float) -> None:
    """The row-aligned store's slow path: a NaN or inf weight on a padding tap (the lanes past
    a short row read the next row, and are dropped)."""
    case = CASES[name]
    data, weight, attrs, result, epilogue = case
    text = conv_program(data, weight, attrs, result, epilogue)
    arrays = inputs(case, np.random.default_rng(5))
    arrays["w"][2, 0, 2, 2] = bad  # reads input row oh + 1, column ow + 1
    expected = check_everywhere(text, arrays)
    assert np.isfinite(expected[0, 2, -1, :]).all() and np.isfinite(expected[0, 2, :, -1]).all()


def test_nan_inputs_stay_where_they_are_read() -> None:
    data, weight, attrs, result, epilogue = CASES["edge_blocks_batch"]
    text = conv_program(data, weight, attrs, result, epilogue)
    arrays = inputs(CASES["edge_blocks_batch"], np.random.default_rng(1))
    arrays["x"][1, 2, 4, 6] = np.nan
    arrays["x"][0, 0, 0, 13] = np.nan
    expected = check_everywhere(text, arrays)
    assert np.isnan(expected).any() and not np.isnan(expected).all()


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_nonfinite_weight_on_padding_is_never_multiplied(bad: float) -> None:
    """A NaN or inf weight at a tap that reads the padding of the border outputs: they stay
    finite (the tap adds nothing there), as in `xrelay.interpret`."""
    case = CASES["resnet_block_small"]
    data, weight, attrs, result, epilogue = case
    text = conv_program(data, weight, attrs, result, epilogue)
    arrays = inputs(case, np.random.default_rng(2))
    arrays["w"][3, 1, 0, 0] = bad  # reads input row oh - 1, column ow - 1
    expected = check_everywhere(text, arrays)
    assert np.isfinite(expected[0, 3, 0, :]).all() and np.isfinite(expected[0, 3, :, 0]).all()
    assert not np.isfinite(expected[0, 3, 1:, 1:]).all()


@pytest.mark.parametrize(
    ("attrs", "data", "result"),
    [
        ("{strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>}", (1, 4, 16, 16), (1, 4, 8, 8)),  # little
        ("{padding = array<i64: 1, 1, 1, 1>}", (1, 4, 4, 4), (1, 4, 4, 4)),  # fewer pixels than a block
        ("{padding = array<i64: 1, 1, 1, 1>}", (1, 4, 8, 8), (1, 4, 8, 8)),  # little work
    ],
)
def test_declines_small_and_tiny_convs(attrs: str, data: tuple[int, ...], result: tuple[int, ...]) -> None:
    text = conv_program(data, (4, 4, 3, 3), attrs, result)
    assert "packed_conv" not in schedules(text)
    rng = np.random.default_rng(3)
    check_everywhere(text, {"x": rng.standard_normal(data).astype(np.float32),
                            "w": rng.standard_normal((4, 4, 3, 3)).astype(np.float32)})  # fmt: skip


def test_takes_opencl_groups_and_declines_big_packed_tiles() -> None:
    text = conv_program((1, 8, 12, 12), (8, 8, 3, 3), "{padding = array<i64: 1, 1, 1, 1>}", (1, 8, 12, 12))
    module = xrelay.parse(text)
    ctx = xrelay.context()
    PlanDevicesPass(targets=("c", OPENCL_PLANNED), default_device="opencl").apply(ctx, module)
    FuseOpsPass().apply(ctx, module)
    (group,) = [op for op in module.walk() if isinstance(op, relay.FusedOp)]
    assert packed_conv.matches(group)  # the OpenCL kernel is the same micro-kernel, in float16
    kernels = xrelay.build(text, targets=("c", OPENCL_PLANNED), default_device="opencl").kernels
    assert [k.language for k in kernels] == ["opencl"] and "float16" in kernels[0].source
    huge = conv_program((1, 512, 8, 200), (8, 512, 3, 3), "{padding = array<i64: 1, 1, 1, 1>}", (1, 8, 8, 200))
    assert "packed_conv" not in schedules(huge)  # one packed row block would exceed PACK_MAX_FLOATS


def opencl_group(text: str) -> relay.FusedOp:
    module = xrelay.parse(text)
    ctx = xrelay.context()
    PlanDevicesPass(targets=("c", "opencl"), default_device="opencl").apply(ctx, module)
    FuseOpsPass().apply(ctx, module)
    (group,) = [op for op in module.walk() if isinstance(op, relay.FusedOp)]
    return group


def test_opencl_batch_over_one_stack_runs_in_work_groups_of_one_item() -> None:
    """A batch of 64 64-channel 32x32 images (21 MiB of packed tiles) segfaulted PoCL as one
    work group on one thread's 8 MiB stack. Launched a work group per work item, each tile
    on its own stack, a batch of 24 (over 8 MiB of tiles together) runs and agrees with
    `interpret`. (Dilated: winograd_conv takes the plain 3x3 conv.)"""
    case = ((24, 64, 32, 32), (64, 64, 3, 3), "{dilation = array<i64: 2, 2>, padding = array<i64: 2, 2, 2, 2>}",
            (24, 64, 32, 32), False)  # fmt: skip
    text = conv_program(*case)
    group = opencl_group(text)
    plan = packed_conv.plan_of(group)
    assert plan is not None and 24 * (32 // plan.row_block) * plan.pack_floats * 4 > 8 << 20
    exe = xrelay.build(text, targets=("c", "opencl"), default_device="opencl")
    (source,) = [k for k in exe.kernels if k.language == "opencl"]
    assert source.local_size == (1, 1)
    arrays = inputs(case, np.random.default_rng(7))
    np.testing.assert_allclose(exe.run(**arrays), xrelay.interpret(xrelay.parse(text), arrays), rtol=1e-4, atol=1e-4)


def test_work_items_on_two_threads() -> None:
    """Work items (image, block of rows) split across two OpenMP threads, each with its own
    packed tile and sums (the nest does enough work for an `omp parallel` region). (Dilated:
    winograd_conv takes the plain 3x3 conv.)"""
    case = ((2, 64, 32, 32), (64, 64, 3, 3), "{dilation = array<i64: 2, 2>, padding = array<i64: 2, 2, 2, 2>}",
            (2, 64, 32, 32), True)  # fmt: skip
    text = conv_program(*case)
    assert schedules(text) == ["packed_conv"]
    two = xrelay.build(text, targets=("c",), num_threads=2)
    assert all("omp for schedule(dynamic)" in k.source for k in two.kernels)
    arrays = inputs(case, np.random.default_rng(4))
    expected = xrelay.interpret(xrelay.parse(text), arrays)
    np.testing.assert_array_equal(two.run(**arrays), xrelay.build(text, targets=("c",), num_threads=1).run(**arrays))
    np.testing.assert_allclose(two.run(**arrays), expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(("cores", "parts"), [(1, 1), (2, 2), (3, 3)])
def test_one_row_block_splits_its_channels_over_the_cores(
    monkeypatch: pytest.MonkeyPatch, cores: int, parts: int
) -> None:
    """A 7x7 output is one row block: its 136 channels (23 register blocks of 6) are split
    into a part per core (12 + 11 blocks on two), each packing its rows, so that a second
    thread has work (one part is one work item: no thread to share it); on two threads the
    result is the one thread's, and `interpret`'s."""
    features_of = packed_conv.features_of
    monkeypatch.setattr(packed_conv, "features_of", lambda group: replace(features_of(group), cores=cores))
    case = ((1, 256, 7, 7), (136, 256, 3, 3), "{padding = array<i64: 1, 1, 1, 1>}", (1, 136, 7, 7), False)
    text = conv_program(*case)
    plan = plan_of(text, "c")
    assert plan is not None and (plan.row_block, plan.channel_parts) == (7, parts)
    two = xrelay.build(text, targets=("c",), num_threads=2)
    assert all(("omp for schedule(dynamic)" in k.source) == (parts > 1) for k in two.kernels)
    arrays = inputs(case, np.random.default_rng(5))
    one = xrelay.build(text, targets=("c",), num_threads=1).run(**arrays)
    np.testing.assert_array_equal(two.run(**arrays), one)
    np.testing.assert_allclose(one, xrelay.interpret(xrelay.parse(text), arrays), rtol=1e-4, atol=1e-4)


# --- ISA levels: each built for SSE4.2 (4 lanes), AVX2 (8) and the native machine ---------

EPS32 = float(np.finfo(np.float32).eps)


def check_isa_level(
    text: str,
    arrays: dict[str, np.ndarray],
    target: str,
    schedule: str | None,
    terms: int,
    num_threads: int = 1,
    vectors: bool = True,
) -> np.ndarray:
    """The program built for `target`, its group taking `schedule` (unless None: the caller
    checks), against `interpret`:
    NaN and inf where `interpret` has them, elsewhere |got - expected| <= 2 terms eps32 m +
    1e-30, where m is the program run by `interpret` on the inputs' magnitudes (the sum of
    |x||w| of each output, plus |b| and the residual's |x|: every op is monotone in them) and
    `terms` the products of each sum: each of the two results rounds a sum of `terms`
    products at most terms x eps32 x m away from the exact one. Its kernels use vectors of
    the target's width (with `vectors`; none else) and none wider."""
    assert schedule is None or schedules(text, target) == [schedule]
    built = xrelay.build(text, targets=(target,), num_threads=num_threads)
    got = built.run(**arrays)
    parsed = xrelay.parse(text)
    expected = xrelay.interpret(parsed, arrays)
    magnitude = xrelay.interpret(xrelay.parse(text), {k: np.abs(v) for k, v in arrays.items()})
    assert_within_bound(got, expected, magnitude, terms)
    lanes = target_features(target).vector_floats
    widths = {int(w) for k in built.kernels for w in re.findall(r"xr_f32x(\d+)", k.source)}
    assert widths == ({lanes} if vectors else set()), f"{target}: vectors of {sorted(widths)} floats ({lanes} lanes)"
    return expected


def assert_within_bound(got: np.ndarray, expected: np.ndarray, magnitude: np.ndarray, terms: int) -> None:
    finite = np.isfinite(expected)
    np.testing.assert_array_equal(got[~finite], expected[~finite])  # NaN where NaN, inf where inf
    bound = 2 * terms * EPS32 * np.where(finite, magnitude, 0) + 1e-30
    with np.errstate(invalid="ignore"):
        excess = np.abs(np.where(finite, got - expected, 0)) - bound
    worst = np.unravel_index(int(np.argmax(excess)), excess.shape)
    assert excess[worst] <= 0, f"|{got[worst]} - {expected[worst]}| > {bound[worst]} at {worst}"


def terms_of(case: tuple) -> int:
    """The products of each output's sum (input channels of a conv group x taps), plus the
    epilogue's adds (bias, residual)."""
    weight = case[1]
    return weight[1] * weight[2] * weight[3] + 2


ISA_CASES = ("edge_blocks_batch", "grouped_dilated_uneven", "size_one", "no_padding_one_block", "cnn_second_short_rows",
             "row_aligned_overlap", "resnet_block_small", "last_stage_7x7", "stride2_to_7x7_batch",
             "pointwise_stride2_batch", "pointwise_7x7_residual")  # fmt: skip


@pytest.mark.parametrize("target", isa_params())
@pytest.mark.parametrize("name", ISA_CASES)
def test_packed_conv_at_every_isa_level(name: str, target: str) -> None:
    """Edge blocks of channels and positions, widths not a multiple of the lanes (14, 17, 30)
    and below a vector (6), size-1 dims, groups, dilation, uneven padding, both layouts."""
    case = CASES[name]
    text = conv_program(*case)
    check_isa_level(text, inputs(case, np.random.default_rng(3)), target, "packed_conv", terms_of(case))


@pytest.mark.parametrize("target", isa_params())
def test_packed_conv_nonfinite_at_every_isa_level(target: str) -> None:
    """NaN and inf inputs, a NaN and an inf weight on taps that reach the padding, 2 threads."""
    case = CASES["edge_blocks_batch"]
    arrays = inputs(case, np.random.default_rng(4))
    arrays["x"][0, 1, 4, 5], arrays["x"][1, 2, 0, 13] = np.nan, np.inf
    arrays["w"][3, 0, 0, 0], arrays["w"][7, 2, 2, 2] = np.nan, -np.inf
    expected = check_isa_level(conv_program(*case), arrays, target, "packed_conv", terms_of(case), num_threads=2)
    assert np.isfinite(expected).any() and not np.isfinite(expected).all()


@pytest.mark.parametrize(
    ("target", "tiles"), [("c -march=x86-64-v3", {(3, 3), (5, 2)}), ("c -march=x86-64-v2", {(3, 3), (5, 2)})]
)
def test_register_blocks_fit_sixteen_registers(target: str, tiles: set[tuple[int, int]]) -> None:
    """With 16 vector registers a block's sums, its loaded vectors and two broadcasts leave
    one spare."""
    features = target_features(target)
    for name in ("resnet_block_small", "wide_rows", "cnn_second_short_rows"):
        plan = plan_of(conv_program(*CASES[name]), target)
        assert plan is not None and (plan.channels, plan.vectors) in tiles and plan.lanes == features.vector_floats
        assert plan.channels * plan.vectors + plan.vectors + 2 < features.vector_registers


# --- strides: the packed tile holds the phases of the padded input the taps read ---------

S2 = "strides = array<i64: 2, 2>"
STRIDED = {
    # name: data, weight, attrs, result, epilogue (no residual: the result is smaller)
    # ResNet's 3x3 downsampling conv at odd sizes, batch 2 (2 x 2 phases)
    "s2_3x3_odd": ((2, 16, 15, 17), (24, 16, 3, 3), f"{{{S2}, padding = array<i64: 1, 1, 1, 1>}}", (2, 24, 8, 9), True),
    # its 1 x 1 downsample: one phase, the subsampled input; an odd input (15 -> 8)
    "s2_1x1": ((1, 32, 14, 14), (40, 32, 1, 1), f"{{{S2}}}", (1, 40, 7, 7), False),
    "s2_1x1_odd": ((1, 24, 15, 15), (32, 24, 1, 1), f"{{{S2}}}", (1, 32, 8, 8), True),
    # the first conv: 7 x 7 (a loop over the window's rows, the row phase from its variable)
    "s2_7x7_first": ((1, 3, 40, 37), (16, 3, 7, 7), f"{{{S2}, padding = array<i64: 3, 3, 3, 3>}}", (1, 16, 20, 19), True),
    "s3_uneven": ((1, 8, 20, 23), (12, 8, 3, 3), "{strides = array<i64: 3, 3>, padding = array<i64: 2, 0, 1, 3>}",
                  (1, 12, 7, 8), False),
    # dilation 2 with stride 2 rows: one row phase; groups
    "s21_grouped_dilated": ((1, 8, 17, 19), (16, 4, 3, 3), "{strides = array<i64: 2, 1>, groups = 2 : i64, "
                            "dilation = array<i64: 2, 2>, padding = array<i64: 2, 2, 2, 2>}", (1, 16, 9, 19), False),
    "s2_5x3_looped": ((1, 6, 21, 20), (16, 6, 5, 3), f"{{{S2}, padding = array<i64: 2, 1, 2, 1>}}", (1, 16, 11, 10),
                      False),
    # row phases 0 and 3 of 4 (not every one): the 10 taps unrolled instead of a row loop
    "s4_dilated_rows_unrolled": ((1, 8, 30, 24), (16, 8, 2, 5), "{strides = array<i64: 4, 1>, "
                                 "dilation = array<i64: 3, 1>}", (1, 16, 7, 20), False),
}  # fmt: skip


def strided_text(name: str) -> str:
    return conv_program(*STRIDED[name], residual=False)


@pytest.mark.parametrize(
    ("name", "row_phases", "column_phases"),
    [("s2_3x3_odd", (0, 1), (0, 1)), ("s2_1x1", (0,), (0,)), ("s2_7x7_first", (0, 1), (0, 1)),
     ("s3_uneven", (0, 1, 2), (0, 1, 2)), ("s21_grouped_dilated", (0,), (0,)), ("s4_dilated_rows_unrolled", (0, 3), (0,))],
)  # fmt: skip
def test_strided_convs_pack_the_phases_their_taps_read(
    name: str, row_phases: tuple[int, ...], column_phases: tuple[int, ...]
) -> None:
    """A packed row is the output width plus the taps' reach in phase columns."""
    plan = plan_of(strided_text(name))
    assert plan is not None and (plan.row_phases, plan.column_phases) == (row_phases, column_phases)
    (_, sw), (_, dw) = plan.conv.stride_values, plan.conv.dilation_values
    kw = STRIDED[name][1][3]
    assert plan.padded_width == STRIDED[name][3][3] + (kw - 1) * dw // sw


@pytest.mark.parametrize("name", sorted(STRIDED))
def test_strided_packed_conv_agrees_with_interpret(name: str) -> None:
    """On C and on OpenCL (the same work items in float16)."""
    text = strided_text(name)
    assert schedules(text) == ["packed_conv"]
    check_everywhere(text, inputs(STRIDED[name], np.random.default_rng(8)))


@pytest.mark.parametrize("target", isa_params())
@pytest.mark.parametrize("name", sorted(STRIDED))
def test_strided_packed_conv_at_every_isa_level(name: str, target: str) -> None:
    case = STRIDED[name]
    check_isa_level(strided_text(name), inputs(case, np.random.default_rng(9)), target, "packed_conv", terms_of(case))


@pytest.mark.parametrize("target", isa_params())
@pytest.mark.parametrize("name", ["s2_3x3_odd", "s2_7x7_first"])
def test_strided_nonfinite_at_every_isa_level(name: str, target: str) -> None:
    """NaN and inf inputs in either phase, a NaN and an inf weight on taps that read the
    padding of the border outputs (the first row and column, the last), 2 threads."""
    case = STRIDED[name]
    arrays = inputs(case, np.random.default_rng(10))
    kh, kw = case[1][2:]
    arrays["x"][0, 1, 4, 5], arrays["x"][0, 2, 7, 10] = np.nan, np.inf
    arrays["w"][3, 0, 0, 0], arrays["w"][7, 2, kh - 1, kw - 1] = np.nan, -np.inf
    expected = check_isa_level(strided_text(name), arrays, target, "packed_conv", terms_of(case), num_threads=2)
    assert np.isfinite(expected[0, 3, 0, :]).all() and np.isfinite(expected).any() and not np.isfinite(expected).all()


def test_strided_resnet_convs_plan_whole_blocks() -> None:
    """ResNet-18's strided convs (PLANNED): the first conv in row-aligned blocks of 8 x 2 of 7
    vectors a row; the 3x3 of 256 -> 512 channels at 14 -> 7 in work items of all 7 rows (its
    4 phases of 256 channels' 8 x 8 rows fill the packed tile exactly)."""
    first = conv_program((1, 3, 224, 224), (64, 3, 7, 7), f"{{{S2}, padding = array<i64: 3, 3, 3, 3>}}",
                         (1, 64, 112, 112))  # fmt: skip
    plan = plan_of(first)
    assert plan is not None and plan.row_aligned and (plan.channels, plan.vectors, plan.row_vectors) == (8, 2, 7)
    last = conv_program(
        (1, 256, 14, 14), (512, 256, 3, 3), f"{{{S2}, padding = array<i64: 1, 1, 1, 1>}}", (1, 512, 7, 7)
    )
    plan = plan_of(last)
    assert plan is not None and plan.row_block == 7 and plan.packed_rows * plan.padded_width * 1024 == 1 << 16


def test_strided_runs_clean_under_address_sanitizer(tmp_path: Path) -> None:
    """The phase images' copies and the blocks' loads past the last phase stay in bounds."""
    run_programs_under_asan(tmp_path, [strided_text(name) for name in sorted(STRIDED)])
