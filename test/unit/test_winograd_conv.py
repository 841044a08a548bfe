"""winograd_conv: the cpu and opencl 3x3 conv2d schedule of Winograd F(4x4, 3x3) and
F(2x2, 3x3) tiles.

Each case is a conv2d (with an epilogue where said) that the schedule takes on the cpu,
built with `xrelay.build` for C, and on opencl (PoCL), and checked against
`xrelay.interpret` on random inputs:
odd and even sizes, sizes that are not a multiple of the tile, rows wider than a chunk,
blocks and chunks that overlap the one before, batch > 1, channels that are not a multiple
of the register block or of the vector width, uneven padding, left padding wider than a
tile's column phase (the pack's margins), NaN and inf inputs, NaN and
inf weights (on a tap that reads the padding too: the slow path), the epilogues, two
threads, and AddressSanitizer. On opencl the cases run with OPENCL_MIN_WORK lowered to the
cpu's MIN_WORK (most are smaller than what the schedule takes there), a work item per image.

Tolerance: F(2, 3)'s transforms add a few roundings per output; measured against
`interpret` they stay below 3e-7 of the largest output, so the tests allow rtol 1e-4 with an
absolute 1e-5 of the largest output (a 576-term sum's cancellation leaves small outputs with
the absolute error of the large ones).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from isa_levels import OPENCL_PLANNED, PLANNED, isa_params
from test_c_library import run_programs_under_asan
from test_packed_conv import check_isa_level
from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import MemRefType

import xrelay
from xrelay.dialects import relay
from xrelay.driver import lower
from xrelay.runtime.machine import target_features
from xrelay.transforms.convert_relay_to_loops import pick_schedule
from xrelay.transforms.fuse_conv_pool import FuseConvPoolPass
from xrelay.transforms.fuse_ops import FuseOpsPass
from xrelay.transforms.plan_devices import PlanDevicesPass
from xrelay.transforms.schedules import winograd_conv

PAD1 = "{padding = array<i64: 1, 1, 1, 1>}"


def t(shape: tuple[int, ...]) -> str:
    return f"tensor<{'x'.join(map(str, shape))}xf32>"


def conv_program(data: tuple[int, ...], weight: tuple[int, ...], attrs: str, result: tuple[int, ...],
                 epilogue: str = "", pool: int = 0) -> str:  # fmt: skip
    """@main(x, w[, b]) = conv2d(x, w), then for epilogue "bias_relu" + b and relu, for
    "residual" + b, + x and relu (the ResNet block's second conv: the result has x's shape);
    with `pool`, a max_pool2d of pool x pool windows at stride pool last."""
    params = [f"%x: {t(data)}", f"%w: {t(weight)}"]
    lines = [f"%c = relay.nn.conv2d %x, %w {attrs} : ({t(data)}, {t(weight)}) -> {t(result)}"]
    last = "%c"
    if epilogue:
        params.append(f"%b: {t(result[1:2])}")
        lines.append(f"%d = relay.nn.bias_add %c, %b : ({t(result)}, {t(result[1:2])}) -> {t(result)}")
        last = "%d"
    if epilogue == "residual":
        lines.append(f"%s = relay.add %d, %x : ({t(result)}, {t(data)}) -> {t(result)}")
        last = "%s"
    if epilogue:
        lines.append(f"%r = relay.nn.relu {last} : {t(result)}")
        last = "%r"
    if pool:
        pooled = (*result[:2], result[2] // pool, result[3] // pool)
        window = f"array<i64: {pool}, {pool}>"
        lines.append(
            f"%p = relay.nn.max_pool2d {last} {{pool_size = {window}, strides = {window}}} : ({t(result)}) -> {t(pooled)}"
        )
        last, result = "%p", pooled
    body = "\n  ".join(lines)
    return f"func.func @main({', '.join(params)}) -> {t(result)} {{\n  {body}\n  func.return {last} : {t(result)}\n}}"


def schedules(text: str, targets: tuple[str, ...] = (PLANNED,), device: str | None = None) -> list[str]:
    """The schedules convert-relay-to-loops picks for the program's groups."""
    module = xrelay.parse(text)
    ctx = xrelay.context()
    PlanDevicesPass(targets=targets, default_device=device).apply(ctx, module)
    FuseOpsPass().apply(ctx, module)
    FuseConvPoolPass().apply(ctx, module)
    return [pick_schedule(op).name for op in module.walk() if isinstance(op, relay.FusedOp)]


CASES = {
    # name: data, weight, attrs, result, epilogue
    # F(2x2, 3x3) (images of fewer than 64 4x4 tiles):
    # odd sizes: the last tile row and column are half outside (computed, not stored)
    "odd_residual": ((1, 16, 11, 13), (16, 16, 3, 3), PAD1, (1, 16, 11, 13), "residual"),
    # batch 2, 17 input channels (not a multiple of the vector width), 20 output channels
    # (the last register block of 8 starts at 12 and recomputes 4)
    "batch_edge_channels": ((2, 17, 12, 12), (20, 17, 3, 3), PAD1, (2, 20, 12, 12), "bias_relu"),
    # uneven padding, no padding on the left: a 10 x 21 result
    "uneven_padding": ((1, 18, 9, 20), (20, 18, 3, 3), "{padding = array<i64: 2, 0, 1, 3>}", (1, 20, 10, 21), ""),
    "no_padding": ((3, 16, 14, 14), (16, 16, 3, 3), "", (3, 16, 12, 12), ""),
    # 40 tiles per row: two chunks of 32 tile columns, the second starting at 8
    "wide_rows": ((1, 16, 6, 80), (16, 16, 3, 3), PAD1, (1, 16, 6, 80), "residual"),
    # left padding 3 (the pack's first 2 slots of a row are zeros in the first chunk column,
    # the input in the second) and 37 tiles per row: two chunk columns, the second at 5
    "wide_padding": ((1, 16, 7, 70), (16, 16, 3, 3), "{padding = array<i64: 2, 3, 2, 3>}", (1, 16, 9, 74), "bias_relu"),
    # the CNN's second conv: chunks of 4 rows of 7 tiles (the second starting at row 3)
    "cnn_second_conv": ((8, 16, 14, 14), (32, 16, 3, 3), PAD1, (8, 32, 14, 14), "bias_relu"),
    # 128 channels: F4's U of every output channel would not fit; the 16 channel blocks in
    # groups (`Plan.channel_groups`), work items of one group each
    "wide_channels": ((1, 128, 40, 40), (128, 128, 3, 3), PAD1, (1, 128, 40, 40), "bias_relu"),
    # F(4x4, 3x3):
    # odd sizes: 35 x 37 outputs, 9 x 10 tiles, the last ones 3 and 1 wide inside
    "f4_odd_residual": ((1, 16, 35, 37), (16, 16, 3, 3), PAD1, (1, 16, 35, 37), "residual"),
    "f4_batch_edge_channels": ((2, 17, 32, 32), (20, 17, 3, 3), PAD1, (2, 20, 32, 32), "bias_relu"),
    # 38 tiles per row: two chunks of 32 tile columns; work items of 1 and 2 tile rows
    "f4_wide_rows": ((1, 16, 10, 150), (16, 16, 3, 3), PAD1, (1, 16, 10, 150), ""),
    # left padding 3 over 36 tiles per row: two chunk columns, the second at 4
    "f4_wide_padding": ((1, 16, 20, 140), (16, 16, 3, 3), "{padding = array<i64: 2, 3, 2, 3>}", (1, 16, 22, 144), ""),
    # 13 x 13 tiles of a 49 x 49 result (uneven padding): chunks of 2 tile rows (the last
    # starting at row 11), work items of 3 and 4 of them
    "f4_blocks": ((1, 16, 48, 48), (24, 16, 3, 3), "{padding = array<i64: 2, 0, 1, 3>}", (1, 24, 49, 49), "bias_relu"),
}  # fmt: skip

# name: F(m x m, 3 x 3)'s m, tile rows, chunk rows, chunk columns, runs of chunk rows (the
# last one starting earlier where they do not divide the tile rows), work items per image
PLANS = {
    "odd_residual": (2, 6, 4, 7, 2, 2),
    "batch_edge_channels": (2, 6, 4, 6, 2, 1),
    "uneven_padding": (2, 5, 2, 11, 3, 2),
    "no_padding": (2, 6, 4, 6, 2, 1),
    "wide_rows": (2, 3, 1, 32, 3, 2),
    "wide_padding": (2, 5, 1, 32, 5, 2),
    "cnn_second_conv": (2, 7, 4, 7, 2, 1),
    "wide_channels": (4, 10, 3, 10, 4, 1),
    "f4_odd_residual": (4, 9, 3, 10, 3, 2),
    "f4_batch_edge_channels": (4, 8, 3, 8, 3, 1),
    "f4_wide_rows": (4, 3, 1, 32, 3, 2),
    "f4_wide_padding": (4, 6, 1, 32, 6, 2),
    "f4_blocks": (4, 13, 2, 13, 7, 2),
}


def inputs(case: tuple, rng: np.random.Generator) -> dict[str, np.ndarray]:
    data, weight, _, result, epilogue = case
    arrays = {"x": rng.standard_normal(data).astype(np.float32), "w": rng.standard_normal(weight).astype(np.float32)}
    if epilogue:
        arrays["b"] = rng.standard_normal(result[1:2]).astype(np.float32)
    return arrays


def assert_close(got: np.ndarray, expected: np.ndarray) -> None:
    finite = expected[np.isfinite(expected)]
    scale = max(1.0, float(np.abs(finite).max())) if finite.size else 1.0
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5 * scale)  # NaN and inf where they are


OPENCL = ("c", OPENCL_PLANNED)


def check(text: str, arrays: dict[str, np.ndarray], num_threads: int = 1, device: str = "cpu") -> np.ndarray:
    """The program built for C (device "cpu") or OpenCL (device "opencl") against `interpret`."""
    expected = xrelay.interpret(xrelay.parse(text), arrays)
    if device == "opencl":
        built = xrelay.build(text, targets=OPENCL, default_device="opencl")
        assert [k.language for k in built.kernels] == ["opencl"] and "float16" in built.kernels[0].source
    else:
        built = xrelay.build(text, targets=("c",), num_threads=num_threads)
    assert_close(built.run(**arrays), expected)
    return expected


@pytest.fixture
def small_work_on_opencl(monkeypatch: pytest.MonkeyPatch) -> None:
    """winograd_conv takes the cases on opencl too (they are below OPENCL_MIN_WORK)."""
    monkeypatch.setattr(winograd_conv, "OPENCL_MIN_WORK", winograd_conv.MIN_WORK)


def group_of(text: str, targets: tuple[str, ...] = (PLANNED,), device: str | None = None) -> relay.FusedOp:
    module = xrelay.parse(text)
    ctx = xrelay.context()
    PlanDevicesPass(targets=targets, default_device=device).apply(ctx, module)
    FuseOpsPass().apply(ctx, module)
    FuseConvPoolPass().apply(ctx, module)
    (group,) = [op for op in module.walk() if isinstance(op, relay.FusedOp)]
    return group


def case_text(name: str) -> str:
    data, weight, attrs, result, epilogue = CASES[name]
    return conv_program(data, weight, attrs, result, epilogue)


@pytest.mark.parametrize("name", sorted(CASES))
def test_winograd_conv_agrees_with_interpret(name: str) -> None:
    text = case_text(name)
    assert schedules(text) == ["winograd_conv"]
    check(text, inputs(CASES[name], np.random.default_rng(0)))


@pytest.mark.parametrize("name", sorted(CASES))
def test_work_items_per_image_agree_with_interpret(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The cases are under CPU_THREAD_WORK (one work item, the batch in it); with the work
    items a bigger conv has (a work item per image and block of tile rows at batch 1, a work
    item per core through the batch's tile rows in a batch), the results are the same."""
    monkeypatch.setattr(winograd_conv, "CPU_THREAD_WORK", 0)
    text = case_text(name)
    assert schedules(text) == ["winograd_conv"]
    check(text, inputs(CASES[name], np.random.default_rng(0)), num_threads=2)


def test_small_conv_is_one_work_item_on_one_thread() -> None:
    """The CNN's second conv (7.2M multiply-adds, under CPU_THREAD_WORK): one work item, so
    its kernel computes U once and opens no parallel region, even built for two threads."""
    text = case_text("cnn_second_conv")
    plan = winograd_conv.plan_of(group_of(text))
    assert plan is not None and plan.direct_work < winograd_conv.CPU_THREAD_WORK
    two = xrelay.build(text, targets=("c",), num_threads=2)
    assert not any("omp parallel" in k.source for k in two.kernels)
    arrays = inputs(CASES["cnn_second_conv"], np.random.default_rng(5))
    np.testing.assert_array_equal(two.run(**arrays), xrelay.build(text, targets=("c",), num_threads=1).run(**arrays))
    check(text, arrays, num_threads=2)


def test_chunks_run_on_into_the_next_image() -> None:
    """One work item (under CPU_THREAD_WORK) takes its chunks over the batch's tile rows, image
    after image: 3 images of 7 tile rows in chunks of 4 put the last rows of one image and
    the first of the next in one chunk. A NaN at the bottom of image 0 and an inf at the top
    of image 1 stay in their own images' outputs (each output reads its own image only).
    On opencl the batch's 6 runs of chunk rows are two work items (OPENCL_BATCH_ITEMS), the
    second starting at tile row 12, in image 1."""
    case = ((3, 16, 13, 11), (16, 16, 3, 3), PAD1, (3, 16, 13, 11), "bias_relu")
    text = conv_program(*case)
    plan = winograd_conv.plan_of(group_of(text))
    assert plan is not None and (plan.f.m, plan.tiles_h, plan.chunk_rows) == (2, 7, 4)
    assert plan.direct_work < winograd_conv.CPU_THREAD_WORK
    arrays = inputs(case, np.random.default_rng(8))
    arrays["x"][0, 3, 12, 5] = np.nan
    arrays["x"][1, 7, 0, 2] = np.inf
    expected = check(text, arrays)
    on_opencl = winograd_conv.plan_of(group_of(text, OPENCL, "opencl"))
    assert on_opencl is not None and on_opencl.spans_batch and (on_opencl.batch_units, on_opencl.batch_items) == (6, 2)
    check(text, arrays, device="opencl")
    assert not np.isfinite(expected[0, :, 11:, :]).all() and not np.isfinite(expected[1, :, :2, :]).all()
    assert np.isfinite(expected[0, :, :11, :]).all() and np.isfinite(expected[1, :, 2:, :]).all()
    assert np.isfinite(expected[2]).all()


# batch 3 of 12 x 12 (6 x 6 F2 tiles each), 19 -> 37 channels (the last register block
# starting at 29): 5 runs of 4 tile rows through the batch's 18, two work items on two cores
# (runs 0-1 and 2-4), the first run of each holding rows of two images
SPANNED = ((3, 19, 12, 12), (37, 19, 3, 3), PAD1, (3, 37, 12, 12), "bias_relu")


@pytest.mark.usefixtures("two_cores")
@pytest.mark.parametrize("target", isa_params())
@pytest.mark.parametrize("num_threads", [1, 2])
def test_big_conv_in_a_batch_spans_it(num_threads: int, target: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """On cpu a batch of several images runs through the batch's tile rows (U once per work
    item, not per image) even above CPU_THREAD_WORK, in a work item per core: the batch's
    runs shared between them, a run straddling two images. A NaN at the bottom of image 1
    stays in image 1's outputs."""
    monkeypatch.setattr(winograd_conv, "CPU_THREAD_WORK", 0)
    text = conv_program(*SPANNED)
    plan = winograd_conv.plan_of(group_of(text))  # AVX-512's (narrower vectors: shorter runs)
    assert plan is not None and plan.spans_batch and plan.direct_work >= winograd_conv.CPU_THREAD_WORK
    assert (plan.f.m, plan.tiles_h, plan.chunk_rows, plan.batch_units, plan.batch_items) == (2, 6, 4, 5, 2)
    at_level = winograd_conv.plan_of(group_of(text, (target,)))
    assert at_level is not None and at_level.spans_batch and at_level.batch_items == 2
    arrays = inputs(SPANNED, np.random.default_rng(11))
    arrays["x"][1, 4, 11, 6] = np.nan
    expected = check_isa_level(text, arrays, target, "winograd_conv", isa_terms(SPANNED), num_threads=num_threads)
    assert not np.isfinite(expected[1, :, 10:, 5:8]).any() and np.isfinite(expected[[0, 2]]).all()
    assert np.isfinite(expected[1, :, :10]).all()


# batch 4 of 16 x 16: 16 F4 tiles an image (under F4_MIN_TILES), 64 in the batch; 19 -> 21 channels
F4_BATCH = ((4, 19, 16, 16), (21, 19, 3, 3), PAD1, (4, 21, 16, 16), "bias_relu")


def f4_batch_text(batch: int, size: int = 16) -> str:
    data, weight, attrs, _, _ = F4_BATCH
    return conv_program((batch, *data[1:3], size), weight, attrs, (batch, weight[0], data[2], size), "bias_relu")


@pytest.mark.parametrize("target", isa_params())
def test_f4_in_a_batch_of_small_images(target: str) -> None:
    """On cpu a batch whose images' F4 tiles are fewer than F4_MIN_TILES but cover them
    exactly, and are F4_MIN_TILES in the batch, takes F4 (its chunks fill over the images);
    alone, or with tiles past the edge (16 x 18: 4 x 5 tiles), F2; on opencl F2."""
    plans = {(b, w): winograd_conv.plan_of(group_of(f4_batch_text(b, w), (target,))) for b in (1, 4) for w in (16, 18)}
    assert {key: plan.f.m for key, plan in plans.items() if plan is not None} == {
        (1, 16): 2,
        (1, 18): 2,
        (4, 16): 4,
        (4, 18): 2,
    }
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(winograd_conv, "OPENCL_MIN_WORK", winograd_conv.MIN_WORK)
        on_opencl = winograd_conv.plan_of(group_of(f4_batch_text(4), OPENCL, "opencl"))
    assert on_opencl is not None and on_opencl.f.m == 2
    arrays = inputs(F4_BATCH, np.random.default_rng(12))
    arrays["x"][2, 5, 15, 3] = np.inf  # the last row of image 2: a chunk holds image 3's first rows too
    expected = check_isa_level(f4_batch_text(4), arrays, target, "winograd_conv", isa_terms(F4_BATCH))
    assert np.isfinite(expected[[0, 1, 3]]).all() and not np.isfinite(expected[2]).all()


@pytest.mark.usefixtures("small_work_on_opencl")
@pytest.mark.parametrize("width", [4, 8])
@pytest.mark.parametrize("name", ["odd_residual", "f4_wide_rows", "batch_edge_channels"])
def test_winograd_conv_on_opencl_devices_of_narrower_vectors(name: str, width: int) -> None:
    """PoCL on an AVX2 (8 floats) or SSE (4) host: the OpenCL kernel's blocks and steps take
    the device's width, and it still computes what `interpret` does."""
    text = case_text(name)
    targets = ("c", f"opencl -vector-width={width}")
    assert schedules(text, targets, "opencl") == ["winograd_conv"]
    built = xrelay.build(text, targets=targets, default_device="opencl")
    assert f"float{width} " in built.kernels[0].source and "float16" not in built.kernels[0].source
    arrays = inputs(CASES[name], np.random.default_rng(0))
    assert_close(built.run(**arrays), xrelay.interpret(xrelay.parse(text), arrays))


@pytest.mark.usefixtures("small_work_on_opencl")
@pytest.mark.parametrize("name", sorted(CASES))
def test_winograd_conv_agrees_with_interpret_on_opencl(name: str) -> None:
    text = case_text(name)
    assert schedules(text, OPENCL, "opencl") == ["winograd_conv"]
    check(text, inputs(CASES[name], np.random.default_rng(0)), device="opencl")


# The cases whose work items on opencl (OPENCL_MIN_ITEMS per batch) differ from the cpu's.
# (More where OPENCL_MIN_ITEMS asks for them; fewer where the cpu's kernel has a work item per
# core that ITEM_PRODUCTS alone would not give: opencl keeps that rule.)
OPENCL_BLOCKS = {
    "f4_wide_padding": 3,
    "odd_residual": 1,
    "uneven_padding": 1,
    "wide_rows": 1,
    "wide_padding": 1,
    "f4_odd_residual": 1,
}
# name: groups of output channel blocks (`Plan.channel_groups`) on PLANNED where not 1 (on
# cpu under CPU_SCRATCH_MAX_FLOATS; on opencl "wide_channels" has 6, under SCRATCH_MAX_FLOATS)
CHANNEL_GROUPS = {"wide_channels": 2}


@pytest.fixture
def two_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    """The plans as on a host of two cores (work items per run follow `Features.cores`)."""
    features_of = winograd_conv.features_of
    monkeypatch.setattr(winograd_conv, "features_of", lambda group: replace(features_of(group), cores=2))


@pytest.mark.usefixtures("small_work_on_opencl", "two_cores")
@pytest.mark.parametrize("name", sorted(CASES))
def test_plans_of_the_cases(name: str) -> None:
    """The cases reach the plan's edges they are named for; on opencl the same chunks and
    work items (each a work group of its own) but as OPENCL_BLOCKS says, the input transform
    in vectors."""
    plan = winograd_conv.plan_of(group_of(case_text(name)))
    assert plan is not None
    assert (plan.f.m, plan.tiles_h, plan.chunk_rows, plan.chunk_cols, plan.units, plan.blocks) == PLANS[name]
    assert plan.channel_groups == CHANNEL_GROUPS.get(name, 1)
    on_opencl = winograd_conv.plan_of(group_of(case_text(name), OPENCL, "opencl"))
    assert on_opencl is not None
    assert (on_opencl.f, on_opencl.chunk_rows, on_opencl.units, on_opencl.blocks) == (
        plan.f,
        plan.chunk_rows,
        plan.units,
        OPENCL_BLOCKS.get(name, plan.blocks),
    )
    assert (plan.transform_lanes, on_opencl.transform_lanes) == (1, 16)  # V in float16 steps on opencl


# name: the pack's margins, the slots at the start and at the end of a packed row that some
# chunk's padding takes (F2's columns 2 q + p - 3 for q = 0 are outside for p < 2 and inside
# from q = 2; the other margins come from the last chunk column's right edge)
MARGINS = {"wide_padding": (2, 2), "f4_wide_padding": (1, 2), "cnn_second_conv": (1, 1), "no_padding": (0, 0)}


@pytest.mark.parametrize("name", sorted(CASES))
def test_pack_margins_hold_every_chunks_padding(name: str) -> None:
    """`pack` writes zeros only in a packed row's first and last `Plan.margins` slots (then
    the input over them): every column outside the input, of every chunk column and phase,
    lies there, and the margins are no wider than some chunk needs."""
    plan = winograd_conv.plan_of(group_of(case_text(name)))
    assert plan is not None
    front, back = plan.margins
    width, left, m = CASES[name][0][3], plan.conv.padding_values[1], plan.f.m
    starts = sorted({min(col, plan.tiles_w - plan.chunk_cols) for col in range(0, plan.tiles_w, plan.chunk_cols)})
    outside = [
        q for c0 in starts for p in range(m) for q in range(plan.pitch) if not 0 <= m * (c0 + q) + p - left < width
    ]
    assert all(q < front or q >= plan.pitch - back for q in outside)
    assert (front == 0 or front - 1 in outside) and (back == 0 or plan.pitch - back in outside)
    if name in MARGINS:
        assert (front, back) == MARGINS[name]


@pytest.mark.usefixtures("small_work_on_opencl")
@pytest.mark.parametrize("device", ["cpu", "opencl"])
@pytest.mark.parametrize("name", ["batch_edge_channels", "f4_batch_edge_channels"])
def test_nan_and_inf_inputs_stay_where_they_are_read(name: str, device: str) -> None:
    """A NaN or inf input makes its tiles' transforms non-finite: those blocks are computed
    again output by output, so the NaN reaches only the outputs whose windows read it."""
    case = CASES[name]
    text = case_text(name)
    arrays = inputs(case, np.random.default_rng(1))
    arrays["x"][1, 2, 4, 6] = np.nan
    arrays["x"][0, 0, 0, 11] = np.inf
    expected = check(text, arrays, device=device)
    assert np.isnan(expected).any() and not np.isnan(expected).all()
    assert np.isfinite(expected[1, :, 8:, :]).all()  # rows whose windows miss the NaN


@pytest.mark.usefixtures("small_work_on_opencl")
@pytest.mark.parametrize("device", ["cpu", "opencl"])
@pytest.mark.parametrize("name", ["odd_residual", "f4_odd_residual"])
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_nonfinite_weight_on_padding_is_never_multiplied(bad: float, name: str, device: str) -> None:
    """A NaN or inf weight at a tap that reads the padding of the border outputs: they stay
    finite (the tap adds nothing there), as in `xrelay.interpret`."""
    case = CASES[name]
    text = case_text(name)
    arrays = inputs(case, np.random.default_rng(2))
    arrays["w"][3, 1, 0, 0] = bad  # reads input row oh - 1, column ow - 1
    expected = check(text, arrays, device=device)
    assert np.isfinite(expected[0, 3, 0, :]).all() and np.isfinite(expected[0, 3, :, 0]).all()
    assert not np.isfinite(expected[0, 3, 1:, 1:]).all()
    assert np.isfinite(np.delete(expected, 3, axis=1)).all()


def test_inf_weight_reaches_its_channel_only() -> None:
    """An inf centre tap: every output of its channel that reads an input there is inf or
    NaN; the top row and the two right columns read the padding there (top 2, right 3) and
    stay finite; the other channels' blocks stay on the fast path."""
    case = CASES["uneven_padding"]
    text = case_text("uneven_padding")
    arrays = inputs(case, np.random.default_rng(3))
    arrays["w"][7, 5, 1, 1] = np.inf
    expected = check(text, arrays)
    assert not np.isfinite(expected[0, 7, 1:, :-2]).any()
    assert np.isfinite(expected[0, 7, 0, :]).all() and np.isfinite(expected[0, 7, :, -2:]).all()
    assert np.isfinite(np.delete(expected, 7, axis=1)).all()


def test_probe_finds_a_nonfinite_output_in_every_channel_of_a_block() -> None:
    """The probe sums 0 x y in one chain per channel of the register block: a NaN weight on
    a padding tap of any one channel o (each block's, then the second block's channels 8 +
    o) sends its block down the slow path, so the border outputs that tap would reach stay
    finite, as in `interpret`."""
    text = case_text("odd_residual")
    built = xrelay.build(text, targets=("c",))
    base = inputs(CASES["odd_residual"], np.random.default_rng(4))
    for channel in range(16):
        arrays = {**base, "w": base["w"].copy()}
        arrays["w"][channel, 2, 0, 0] = np.nan  # reads input row oh - 1, column ow - 1
        expected = xrelay.interpret(xrelay.parse(text), arrays)
        got = built.run(**arrays)
        assert_close(got, expected)
        assert np.isfinite(got[0, channel, 0, :]).all() and np.isfinite(got[0, channel, :, 0]).all()


def test_resnet_block_conv_on_two_threads() -> None:
    """Work items (image, block of tile rows) split across two OpenMP threads, each with its
    own scratch (F4's, 1.2 MiB of stack); the result is the one thread's, bit for bit."""
    case = ((2, 64, 32, 32), (64, 64, 3, 3), PAD1, (2, 64, 32, 32), "residual")
    text = conv_program(*case)
    assert schedules(text) == ["winograd_conv"]
    two = xrelay.build(text, targets=("c",), num_threads=2)
    assert all("omp for schedule(dynamic)" in k.source for k in two.kernels)
    arrays = inputs(case, np.random.default_rng(4))
    np.testing.assert_array_equal(two.run(**arrays), xrelay.build(text, targets=("c",), num_threads=1).run(**arrays))
    check(text, arrays, num_threads=2)


def test_a_residual_epilogue_at_batch_one_reads_the_blocks_sums() -> None:
    """The ResNet block's second conv (bias, + x, relu) at batch 1: the epilogue's add indexes
    the size-1 batch axis with the constant 0, the chunks with a computed image number; the
    block's sums must be found under either (`GroupEmitter.element`), or every block's fast
    path recomputes the convolution from the weights (77 ms for 1 ms)."""
    case = ((1, 64, 32, 32), (64, 64, 3, 3), PAD1, (1, 64, 32, 32), "residual")
    module = xrelay.parse(conv_program(*case))
    lower(module, ("c",), None, "c")
    (kernel,) = [op for op in module.walk() if isinstance(op, func.FuncOp) and op.sym_name.data != "main"]
    weights = next(a for a in kernel.args if isinstance(a.type, MemRefType) and a.type.get_shape() == (64, 64, 3, 3))
    finite = [op for op in kernel.walk() if isinstance(op, scf.IfOp) and isinstance(op.cond.owner, arith.CmpfOp)]
    assert finite, "no finite test of a block's sums"
    for branch in finite:
        fast = branch.true_region.walk()
        assert not [op for op in fast if isinstance(op, memref.LoadOp) and op.memref is weights]
    arrays = inputs(case, np.random.default_rng(5))
    check(conv_program(*case), arrays)


@pytest.mark.parametrize(
    ("data", "weight", "attrs", "result"),
    [
        ((1, 3, 28, 28), (16, 3, 3, 3), PAD1, (1, 16, 28, 28)),  # few input channels
        ((1, 16, 28, 28), (8, 16, 3, 3), PAD1, (1, 8, 28, 28)),  # few output channels
        ((1, 4, 14, 14), (16, 4, 3, 3), PAD1, (1, 16, 14, 14)),  # little work (113K multiply-adds)
        ((1, 16, 8, 8), (16, 16, 3, 3), PAD1, (1, 16, 8, 8)),  # 16 tiles: a chunk half empty
        ((1, 16, 28, 28), (16, 16, 3, 3), "{strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>}", (1, 16, 14, 14)),
        ((1, 16, 28, 28), (16, 16, 3, 3), "{dilation = array<i64: 2, 2>, padding = array<i64: 2, 2, 2, 2>}", (1, 16, 28, 28)),
        ((1, 32, 28, 28), (32, 16, 3, 3), "{groups = 2 : i64, padding = array<i64: 1, 1, 1, 1>}", (1, 32, 28, 28)),
        ((1, 16, 28, 28), (16, 16, 5, 5), "{padding = array<i64: 2, 2, 2, 2>}", (1, 16, 28, 28)),
        ((1, 16, 28, 28), (16, 16, 1, 3), "{padding = array<i64: 0, 1, 0, 1>}", (1, 16, 28, 28)),
    ],
)  # fmt: skip
def test_declines_what_it_does_not_pay_for(
    data: tuple[int, ...], weight: tuple[int, ...], attrs: str, result: tuple[int, ...]
) -> None:
    text = conv_program(data, weight, attrs, result)
    assert "winograd_conv" not in schedules(text)
    rng = np.random.default_rng(5)
    check(
        text, {"x": rng.standard_normal(data).astype(np.float32), "w": rng.standard_normal(weight).astype(np.float32)}
    )


def test_opencl_takes_enough_work_and_launches_a_work_group_per_item() -> None:
    """On opencl: the ResNet block's conv (F4, in three work items of a work group each, for
    PoCL's two threads, OPENCL_MIN_ITEMS); the CNN's second conv (below OPENCL_MIN_WORK an
    image, 8 images under OPENCL_BATCH_WORK) through the batch's tile rows in two work items
    (OPENCL_BATCH_ITEMS), a work group each. A
    batch's scratch is no longer one work group's: 16 images take F4."""
    resnet = conv_program((1, 64, 56, 56), (64, 64, 3, 3), PAD1, (1, 64, 56, 56), "residual")
    assert schedules(resnet, OPENCL, "opencl") == ["winograd_conv"]
    plan = winograd_conv.plan_of(group_of(resnet, OPENCL, "opencl"))
    assert plan is not None and (plan.f.m, plan.blocks) == (4, 3)
    (source,) = [
        k for k in xrelay.build(resnet, targets=OPENCL, default_device="opencl").kernels if k.language == "opencl"
    ]
    assert source.global_size == (3,) and source.local_size == (1,)
    cnn = case_text("cnn_second_conv")
    assert schedules(cnn, OPENCL, "opencl") == ["winograd_conv"] and schedules(cnn) == ["winograd_conv"]
    plan = winograd_conv.plan_of(group_of(cnn, OPENCL, "opencl"))
    assert plan is not None and plan.spans_batch and plan.batch_items == 2
    (source,) = [
        k for k in xrelay.build(cnn, targets=OPENCL, default_device="opencl").kernels if k.language == "opencl"
    ]
    assert source.global_size == (2,) and source.local_size == (1,)
    one_image = conv_program((1, 16, 14, 14), (32, 16, 3, 3), PAD1, (1, 32, 14, 14))
    assert schedules(one_image, OPENCL, "opencl") == ["packed_conv"]  # U for one image: not measured
    batch16 = conv_program((16, 64, 32, 32), (64, 64, 3, 3), PAD1, (16, 64, 32, 32))
    plans = [winograd_conv.plan_of(group_of(batch16, *where)) for where in [((PLANNED,), None), (OPENCL, "opencl")]]
    assert [p.f.m if p else None for p in plans] == [4, 4]


def test_opencl_batch_over_one_stack_runs_in_work_groups_of_one_item() -> None:
    """Eight images of F4 scratch (8.8 MiB of private arrays: over the 8 MiB stack of a
    PoCL thread, which segfaulted as one work group) run, a work group per work item, and
    agree with `interpret`."""
    case = ((8, 64, 32, 32), (64, 64, 3, 3), PAD1, (8, 64, 32, 32), "bias_relu")
    text = conv_program(*case)
    plan = winograd_conv.plan_of(group_of(text, OPENCL, "opencl"))
    assert plan is not None and plan.f.m == 4
    assert plan.scratch_floats * 8 * 4 > 8 << 20
    check(text, inputs(case, np.random.default_rng(6)), device="opencl")


def test_declines_big_scratch() -> None:
    """V and the packed chunk of 2048 input channels alone are over SCRATCH_MAX_FLOATS:
    no split of the output channels brings the scratch under it."""
    huge = conv_program((1, 2048, 16, 16), (32, 2048, 3, 3), PAD1, (1, 32, 16, 16))
    assert "winograd_conv" not in schedules(huge)


@pytest.mark.parametrize("device", ["cpu", "opencl"])
def test_resnet50_stage_three_splits_its_output_channels(device: str) -> None:
    """256 -> 256 at 14 x 14: U of every output channel (16 x 256 x 256 floats) is over
    the scratch's bound, so the channel blocks are split among work items, the fewest groups
    whose scratch fits, each of at least CHANNEL_GROUP_MIN_BLOCKS blocks: on opencl under
    SCRATCH_MAX_FLOATS, on cpu under CPU_SCRATCH_MAX_FLOATS (fewer groups)."""
    text = conv_program((1, 256, 14, 14), (256, 256, 3, 3), PAD1, (1, 256, 14, 14), "residual")
    plan = winograd_conv.plan_of(group_of(text, *(((PLANNED,), None) if device == "cpu" else (OPENCL, "opencl"))))
    bound = winograd_conv.CPU_SCRATCH_MAX_FLOATS if device == "cpu" else winograd_conv.SCRATCH_MAX_FLOATS
    assert plan is not None and plan.f is winograd_conv.F2
    assert plan.channel_groups > 1 and plan.scratch_floats <= bound
    fewer = replace(plan, channel_groups=plan.channel_groups - 1)
    assert fewer.scratch_floats > bound
    assert plan.group_blocks >= winograd_conv.CHANNEL_GROUP_MIN_BLOCKS
    assert (plan.channel_groups, plan.blocks) == ((2, 1) if device == "cpu" else (7, 1))


# batch 2, odd sizes, 19 input channels, 44 output channels: 6 register blocks of 8 (the last
# starting at 36), split into groups of 3 and 3 or 2, 2 and 2 blocks under a smaller scratch
GROUPED = ((2, 19, 11, 13), (44, 19, 3, 3), PAD1, (2, 44, 11, 13), "bias_relu")


def grouped_plan(monkeypatch: pytest.MonkeyPatch, target: str, groups: int) -> None:
    """SCRATCH_MAX_FLOATS as small as `groups` channel groups of GROUPED need on `target`,
    the work items as a conv this big for a split has them (on cpu, each group's items
    running through the batch's tile rows; on opencl a work item per image)."""
    monkeypatch.setattr(winograd_conv, "CPU_THREAD_WORK", 0)
    monkeypatch.setattr(winograd_conv, "OPENCL_MIN_WORK", winograd_conv.MIN_WORK)
    monkeypatch.setattr(winograd_conv, "CHANNEL_GROUP_MIN_BLOCKS", 1)
    text = conv_program(*GROUPED)
    device = "opencl" if target.startswith("opencl") else None
    whole = winograd_conv.plan_of(group_of(text, ("c", target) if device else (target,), device))
    assert whole is not None and whole.channel_groups == 1
    bound = replace(whole, channel_groups=groups).scratch_floats
    monkeypatch.setattr(winograd_conv, "SCRATCH_MAX_FLOATS", bound)
    monkeypatch.setattr(winograd_conv, "CPU_SCRATCH_MAX_FLOATS", bound)
    plan = winograd_conv.plan_of(group_of(text, ("c", target) if device else (target,), device))
    assert plan is not None and plan.channel_groups == groups


@pytest.mark.parametrize("groups", [2, 3])
@pytest.mark.parametrize("device", ["cpu", "opencl"])
def test_channel_groups_agree_with_interpret(groups: int, device: str, monkeypatch: pytest.MonkeyPatch) -> None:
    grouped_plan(monkeypatch, PLANNED if device == "cpu" else OPENCL_PLANNED, groups)
    check(conv_program(*GROUPED), inputs(GROUPED, np.random.default_rng(8)), num_threads=2, device=device)


@pytest.mark.parametrize("target", isa_params())
def test_channel_groups_at_every_isa_level(target: str, monkeypatch: pytest.MonkeyPatch) -> None:
    grouped_plan(monkeypatch, target, 3)
    arrays = inputs(GROUPED, np.random.default_rng(9))
    arrays["w"][40, 2, 1, 1] = np.nan  # the last block, which recomputes channels 36-39 of the one before
    expected = check_isa_level(
        conv_program(*GROUPED), arrays, target, "winograd_conv", isa_terms(GROUPED), num_threads=2
    )
    assert np.isnan(expected[:, 40]).all() and np.isfinite(expected[:, :40]).all()


def test_channel_groups_run_clean_under_address_sanitizer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each group's U holds its blocks only (the last group's last block starting earlier)."""
    grouped_plan(monkeypatch, "c", 3)  # the host, as run_programs_under_asan lowers for it
    run_programs_under_asan(tmp_path, [conv_program(*GROUPED)])


def test_runs_clean_under_address_sanitizer(tmp_path: Path) -> None:
    """The kernels of every case, built with -fsanitize=address and run on arrays of exactly
    their sizes: the packed chunks, the last slots and the clamped blocks stay in bounds."""
    run_programs_under_asan(tmp_path, [case_text(name) for name in sorted(CASES)])


# --- a conv and its max_pool2d in one group (fuse-conv-pool) ------------------------------------

POOLED = {
    # name: data, weight, attrs, conv result, epilogue, pool size
    # the CNN's second conv and pool: F2, one work item over the batch, a tile per window
    "cnn_second_conv_pool": ((8, 16, 14, 14), (32, 16, 3, 3), PAD1, (8, 32, 14, 14), "bias_relu", 2),
    # batch 1, odd sizes (the last conv row and column are dropped), 17 -> 20 channels
    "odd_pool": ((1, 17, 13, 15), (20, 17, 3, 3), PAD1, (1, 20, 13, 15), "bias_relu", 2),
    # chunks of 32 tile columns, the second starting at 8: its windows pooled twice, alike
    "wide_rows_pool": ((1, 16, 6, 80), (16, 16, 3, 3), PAD1, (1, 16, 6, 80), "residual", 2),
    # the same with bias and relu: the windows' maxima first (`pool_block`), the second chunk's
    # from its first tile column 9 (41 tile columns), odd sizes
    "wide_rows_pool_bias": ((1, 16, 7, 81), (16, 16, 3, 3), PAD1, (1, 16, 7, 81), "bias_relu", 2),
    # F4: 2 x 2 windows per tile, odd sizes (35 x 37 -> 17 x 18)
    "f4_odd_pool": ((1, 16, 35, 37), (16, 16, 3, 3), PAD1, (1, 16, 35, 37), "residual", 2),
    # F4 at batch 8, over CPU_THREAD_WORK: a work item per image
    "f4_batch_pool": ((8, 16, 32, 32), (16, 16, 3, 3), PAD1, (8, 16, 32, 32), "bias_relu", 2),
    # F4 with 4 x 4 windows: one window per tile
    "f4_pool4": ((2, 16, 34, 33), (24, 16, 3, 3), PAD1, (2, 24, 34, 33), "bias_relu", 4),
}  # fmt: skip


def pooled_text(name: str) -> str:
    data, weight, attrs, result, epilogue, pool = POOLED[name]
    return conv_program(data, weight, attrs, result, epilogue, pool)


def pooled_inputs(name: str, seed: int) -> dict[str, np.ndarray]:
    return inputs(POOLED[name][:5], np.random.default_rng(seed))


def check_pooled(name: str, arrays: dict[str, np.ndarray], device: str = "cpu", num_threads: int = 1) -> np.ndarray:
    """The pooled case as one winograd_conv kernel that pools in its stores, against `interpret`."""
    targets, default = (OPENCL, "opencl") if device == "opencl" else (("c",), None)
    plan = winograd_conv.plan_of(group_of(pooled_text(name), targets, default))
    assert plan is not None and plan.pool is not None and plan.window == POOLED[name][5]
    return check(pooled_text(name), arrays, num_threads=num_threads, device=device)


@pytest.mark.usefixtures("small_work_on_opencl")
@pytest.mark.parametrize("device", ["cpu", "opencl"])
@pytest.mark.parametrize("name", sorted(POOLED))
def test_pooled_group_agrees_with_interpret(name: str, device: str) -> None:
    check_pooled(name, pooled_inputs(name, 0), device=device)


@pytest.mark.parametrize("name", sorted(POOLED))
def test_pooled_work_items_per_image_agree_with_interpret(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(winograd_conv, "CPU_THREAD_WORK", 0)
    check_pooled(name, pooled_inputs(name, 1), num_threads=2)


def test_pooled_plans() -> None:
    """F2's tile is one 2 x 2 window, F4's 2 x 2 of them or one 4 x 4; a 4 x 4 pool of an F2
    conv (a window over two tiles) is not taken."""
    plans = {name: winograd_conv.plan_of(group_of(pooled_text(name))) for name in POOLED}
    assert {name: (p.f.m, p.window) for name, p in plans.items() if p is not None} == {
        "cnn_second_conv_pool": (2, 2),
        "odd_pool": (2, 2),
        "wide_rows_pool": (2, 2),
        "wide_rows_pool_bias": (2, 2),
        "f4_odd_pool": (4, 2),
        "f4_batch_pool": (4, 2),
        "f4_pool4": (4, 4),
    }
    # bias and relu commute with the max (the epilogue of each window's largest conv output);
    # a residual add reads x at each tap (the epilogue at every tap, then the max); the
    # stores take the windows' maxima of a block first where the max comes first
    assert all(p.peaks_first == p.pool.before_epilogue for p in plans.values() if p is not None and p.pool is not None)
    # bias and relu read one value per channel: the peaks go through them before the stores
    assert all(
        p.pool.per_channel == p.pool.before_epilogue for p in plans.values() if p is not None and p.pool is not None
    )
    assert {name: p.pool.before_epilogue for name, p in plans.items() if p is not None and p.pool is not None} == {
        "cnn_second_conv_pool": True,
        "odd_pool": True,
        "wide_rows_pool": False,
        "wide_rows_pool_bias": True,
        "f4_odd_pool": False,
        "f4_batch_pool": True,
        "f4_pool4": True,
    }
    f2_pool4 = conv_program((1, 16, 16, 16), (16, 16, 3, 3), PAD1, (1, 16, 16, 16), "bias_relu", 4)
    assert schedules(f2_pool4)[0] == "winograd_conv" and len(schedules(f2_pool4)) == 2  # the pool a kernel of its own


@pytest.mark.usefixtures("small_work_on_opencl")
@pytest.mark.parametrize("device", ["cpu", "opencl"])
@pytest.mark.parametrize("name", ["odd_pool", "f4_odd_pool"])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_pooled_nonfinite_inputs_and_weights(name: str, bad: float, device: str) -> None:
    """A non-finite input (one inside, one at the corner that the pool's last window reads
    through the conv's kept row and column only), a non-finite weight on a tap that reads
    the padding, and with NaN a NaN bias: the blocks whose Y is not finite are computed again
    output by output and pooled as `interpret` pools (a NaN in a window wins)."""
    arrays = pooled_inputs(name, 2)
    _, _, height, width = POOLED[name][0]
    arrays["x"][0, 3, 5, 6] = bad
    arrays["x"][0, 1, height - 1, width - 1] = bad
    arrays["w"][5, 2, 0, 0] = bad  # a tap on the padding of the top row and left column
    arrays["b"][7] = np.nan if bad != bad else arrays["b"][7]
    expected = check_pooled(name, arrays, device=device)
    assert np.isfinite(np.delete(expected[0, :, 0, 0], [5, 7])).all()  # windows that read none of them
    assert bad == -np.inf or not np.isfinite(expected).all()  # (relu may turn -inf into 0)


def test_pooled_nan_bias_through_the_fast_path() -> None:
    """Every Y finite, a NaN bias: its channel's pooled outputs are all NaN, the others finite."""
    arrays = pooled_inputs("cnn_second_conv_pool", 3)
    arrays["b"][4] = np.nan
    expected = check_pooled("cnn_second_conv_pool", arrays)
    assert np.isnan(expected[:, 4]).all() and np.isfinite(np.delete(expected, 4, axis=1)).all()


def test_pooled_groups_run_clean_under_address_sanitizer(tmp_path: Path) -> None:
    run_programs_under_asan(tmp_path, [pooled_text(name) for name in sorted(POOLED)])


@pytest.mark.parametrize(
    ("op", "operands", "other", "before"),
    [
        ("relay.add", "%c, %s", (16, 1, 1), True),
        ("relay.add", "%s, %c", (16, 1, 1), True),
        ("relay.subtract", "%c, %s", (16, 1, 1), True),
        ("relay.maximum", "%c, %s", (1,), True),
        ("relay.minimum", "%s, %c", (1, 16, 1, 1), True),
        ("relay.subtract", "%s, %c", (16, 1, 1), False),  # decreasing in the conv's value
        ("relay.multiply", "%c, %s", (16, 1, 1), False),  # decreasing where %s < 0
        ("relay.add", "%c, %s", (1, 16, 14, 14), False),  # a value per tap
    ],
)
def test_pool_before_epilogue_only_where_the_max_commutes(
    op: str, operands: str, other: tuple[int, ...], before: bool
) -> None:
    """The epilogue of the window's largest conv output where each op is non-decreasing in
    it and reads one value per window besides; else the epilogue at each tap. Either way the
    result is `interpret`'s (NaN and inf in %s included)."""
    data, weight, pooled = t((1, 16, 14, 14)), t((16, 16, 3, 3)), t((1, 16, 7, 7))
    types = ", ".join(data if name == "%c" else t(other) for name in operands.split(", "))
    window = "array<i64: 2, 2>"
    text = f"""func.func @main(%x: {data}, %w: {weight}, %s: {t(other)}) -> {pooled} {{
  %c = relay.nn.conv2d %x, %w {PAD1} : ({data}, {weight}) -> {data}
  %e = {op} {operands} : ({types}) -> {data}
  %p = relay.nn.max_pool2d %e {{pool_size = {window}, strides = {window}}} : ({data}) -> {pooled}
  func.return %p : {pooled}
}}"""
    plan = winograd_conv.plan_of(group_of(text))
    assert plan is not None and plan.pool is not None and plan.pool.before_epilogue == before
    rng = np.random.default_rng(7)
    arrays = {
        "x": rng.standard_normal((1, 16, 14, 14)).astype(np.float32),
        "w": rng.standard_normal((16, 16, 3, 3)).astype(np.float32),
        "s": rng.standard_normal(other).astype(np.float32),
    }
    arrays["s"].flat[0] = np.nan
    arrays["s"].flat[-1] = np.inf
    check(text, arrays)


def test_an_add_per_image_and_channel_before_the_pool() -> None:
    """An add of a value per image and channel (2 x 16 x 1 x 1) commutes with the max but
    varies along the batch: the peaks are taken first, and the add applied to each in the
    stores, at its image (not `Pooling.per_channel`); NaN and inf in it where `interpret` has
    them."""
    data, weight, pooled, other = t((2, 16, 14, 14)), t((16, 16, 3, 3)), t((2, 16, 7, 7)), t((2, 16, 1, 1))
    window = "array<i64: 2, 2>"
    text = f"""func.func @main(%x: {data}, %w: {weight}, %s: {other}) -> {pooled} {{
  %c = relay.nn.conv2d %x, %w {PAD1} : ({data}, {weight}) -> {data}
  %e = relay.add %c, %s : ({data}, {other}) -> {data}
  %p = relay.nn.max_pool2d %e {{pool_size = {window}, strides = {window}}} : ({data}) -> {pooled}
  func.return %p : {pooled}
}}"""
    plan = winograd_conv.plan_of(group_of(text))
    assert plan is not None and plan.pool is not None and plan.peaks_first and not plan.pool.per_channel
    rng = np.random.default_rng(8)
    arrays = {
        "x": rng.standard_normal((2, 16, 14, 14)).astype(np.float32),
        "w": rng.standard_normal((16, 16, 3, 3)).astype(np.float32),
        "s": rng.standard_normal((2, 16, 1, 1)).astype(np.float32) * 10,
    }
    arrays["s"][1, 3] = np.nan
    arrays["s"][0, 5] = -np.inf
    check(text, arrays)


def after_pool_program(data: tuple[int, ...], out_c: int) -> str:
    """relu(max_pool2d(conv(x, w) + b) + s), `relu(max_pool2d(conv(x)))` as a model may write
    it, with an input %s read after the pool."""
    batch, in_c, height, width = data
    conv, pooled = t((batch, out_c, height, width)), t((batch, out_c, height // 2, width // 2))
    window = "array<i64: 2, 2>"
    return f"""func.func @main(%x: {t(data)}, %w: {t((out_c, in_c, 3, 3))}, %b: {t((out_c,))}, %s: {pooled}) -> {pooled} {{
  %c = relay.nn.conv2d %x, %w {PAD1} : ({t(data)}, {t((out_c, in_c, 3, 3))}) -> {conv}
  %d = relay.nn.bias_add %c, %b : ({conv}, {t((out_c,))}) -> {conv}
  %p = relay.nn.max_pool2d %d {{pool_size = {window}, strides = {window}}} : ({conv}) -> {pooled}
  %a = relay.add %p, %s : ({pooled}, {pooled}) -> {pooled}
  %r = relay.nn.relu %a : {pooled}
  func.return %r : {pooled}
}}"""


AFTER_POOL = {"f2": ((2, 16, 13, 15), 20), "f4": ((1, 16, 33, 34), 16)}


@pytest.mark.usefixtures("small_work_on_opencl")
@pytest.mark.parametrize("device", ["cpu", "opencl"])
@pytest.mark.parametrize("name", sorted(AFTER_POOL))
def test_ops_after_the_pool(name: str, device: str) -> None:
    """A relu and an add of another input after the pool: one kernel, the ops after the
    pool applied to each pooled value; NaN and inf in %x and %s where `interpret` has them."""
    data, out_c = AFTER_POOL[name]
    text = after_pool_program(data, out_c)
    targets, default = (OPENCL, "opencl") if device == "opencl" else (("c",), None)
    plan = winograd_conv.plan_of(group_of(text, targets, default))
    assert plan is not None and plan.pool is not None and plan.pool.before_epilogue
    rng = np.random.default_rng(9)
    arrays = {a.name_hint: rng.standard_normal(a.type.get_shape()).astype(np.float32) for a in xrelay.parse(text).ops.first.args}  # fmt: skip
    arrays["x"][0, 2, 3, 4] = np.nan
    arrays["s"][0, 1, 2, 2] = np.inf
    check(text, arrays, device=device)


def test_ops_after_the_pool_run_clean_under_address_sanitizer(tmp_path: Path) -> None:
    run_programs_under_asan(tmp_path, [after_pool_program(*AFTER_POOL[name]) for name in sorted(AFTER_POOL)])


# --- ISA levels: SSE4.2 (4 lanes), AVX2 (8) and the native machine ---------------------------
#
# The bound is the direct sum's (`check_isa_level`: 2 terms eps32 sum|x||w|, terms = 9 input
# channels + 2). The transforms' roundings (coefficients up to 8 in F4) are not in it, but
# random data's worst error stays far below it: 6e-6 of the largest output at 64 channels is
# about a twentieth of the bound.


def isa_terms(case: tuple) -> int:
    return 9 * case[1][1] + 2


ISA_CASES = (
    "odd_residual",
    "batch_edge_channels",
    "uneven_padding",
    "cnn_second_conv",
    "f4_odd_residual",
    "f4_batch_edge_channels",
)


@pytest.mark.parametrize("target", isa_params())
@pytest.mark.parametrize("name", ISA_CASES)
def test_winograd_conv_at_every_isa_level(name: str, target: str) -> None:
    """F2 and F4, odd sizes, edge channel blocks, uneven padding, a batch through one item."""
    case = CASES[name]
    check_isa_level(
        conv_program(*case), inputs(case, np.random.default_rng(5)), target, "winograd_conv", isa_terms(case)
    )


@pytest.mark.parametrize("target", isa_params())
def test_winograd_conv_nonfinite_on_two_threads_at_every_isa_level(target: str) -> None:
    """NaN and inf inputs and weights (one on a padded tap), work items on 2 threads."""
    case = CASES["f4_blocks"]
    arrays = inputs(case, np.random.default_rng(6))
    arrays["x"][0, 3, 10, 20], arrays["x"][0, 5, 40, 0] = np.nan, -np.inf
    arrays["w"][2, 1, 0, 0], arrays["w"][17, 4, 1, 2] = np.inf, np.nan
    expected = check_isa_level(conv_program(*case), arrays, target, "winograd_conv", isa_terms(case), num_threads=2)
    assert np.isfinite(expected).any() and not np.isfinite(expected).all()


@pytest.mark.parametrize("target", isa_params())
@pytest.mark.parametrize("name", ["odd_pool", "f4_odd_pool"])
def test_pooled_at_every_isa_level(name: str, target: str) -> None:
    """A conv and its pool in one kernel (fuse-conv-pool), odd sizes."""
    plan = winograd_conv.plan_of(group_of(pooled_text(name), (target,)))
    assert plan is not None and plan.pool is not None and plan.lanes == target_features(target).vector_floats
    check_isa_level(pooled_text(name), pooled_inputs(name, 7), target, None, isa_terms(POOLED[name]))


@pytest.mark.parametrize("target", ["c -march=x86-64-v3", "c -march=x86-64-v2"])
def test_register_blocks_fit_sixteen_registers(target: str) -> None:
    """5 channels x 2 vectors of AVX2's (or SSE's) lanes: 10 sums, 2 loaded vectors and two
    broadcasts in 16 registers, one spare; 20 output channels in 4 blocks of 5."""
    features = target_features(target)
    plan = winograd_conv.plan_of(group_of(conv_program(*CASES["batch_edge_channels"]), (target,)))
    assert plan is not None and (plan.channels, plan.tile.vectors, plan.lanes) == (5, 2, features.vector_floats)
