"""conv_taps: the conv2d schedule of few input channels, each output vector's taps in
registers and a chain of multiply-adds per output channel.

Each case is a conv2d (with an epilogue where said) that the schedule takes on the cpu and on
opencl, built with `xrelay.build` for C and for OpenCL and checked against
`xrelay.interpret` on random inputs:
rows of one vector and of several (the last overlapping the one before), rows shorter than a
vector (lanes past the row dropped), 1 to 3 input channels, batch > 1, several row blocks a
image, dilation and uneven padding, the epilogues, NaN and inf inputs, NaN and inf weights
(the slow path), two threads, and AddressSanitizer.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from isa_levels import OPENCL_PLANNED, PLANNED, isa_params
from test_c_library import run_programs_under_asan
from test_packed_conv import check_everywhere, check_isa_level, inputs, terms_of
from test_packed_conv import conv_program as packed_conv_program
from test_winograd_conv import after_pool_program, check, group_of
from test_winograd_conv import conv_program as winograd_conv_program
from test_winograd_conv import inputs as winograd_inputs
from test_winograd_conv import schedules as winograd_schedules

import xrelay
from xrelay.runtime.machine import target_features
from xrelay.transforms.convert_relay_to_loops import pick_schedule
from xrelay.transforms.schedules import conv_taps

PAD1 = "{padding = array<i64: 1, 1, 1, 1>}"
OPENCL = ("c", OPENCL_PLANNED)


def conv_program(data: tuple[int, ...], weight: tuple[int, ...], attrs: str, result: tuple[int, ...],
                 epilogue: bool = False) -> str:  # fmt: skip
    """@main(x, w[, b]) = conv2d(x, w) (+ b and relu when `epilogue`: no residual, the result
    has more channels than x)."""
    return packed_conv_program(data, weight, attrs, result, epilogue, residual=False)


CASES = {
    # name: data, weight, attrs, result, epilogue
    # the CNN's first conv: 28 wide, two vectors a row (the second from column 12)
    "cnn_first": ((2, 1, 28, 28), (16, 1, 3, 3), PAD1, (2, 16, 28, 28), True),
    # three channels (27 taps), 5 output channels, rows of 16: one vector each
    "rgb_one_vector_rows": ((3, 3, 9, 16), (5, 3, 3, 3), PAD1, (3, 5, 9, 16), True),
    # rows of 10 (lanes past them read the next packed row and are dropped), no padding
    "short_rows_no_padding": ((1, 2, 16, 12), (7, 2, 3, 3), "", (1, 7, 14, 10), False),
    # dilated, uneven padding, a 3 x 2 window, 35 wide (three vectors a row)
    "dilated_uneven": ((1, 2, 11, 33), (6, 2, 3, 2), "{dilation = array<i64: 2, 1>, padding = array<i64: 2, 1, 0, 2>}",
                       (1, 6, 9, 35), False),
    # 64 x 64 from 3 channels: several row blocks an image (PACK_MAX_FLOATS)
    "row_blocks": ((1, 3, 64, 64), (8, 3, 3, 3), PAD1, (1, 8, 64, 64), True),
}  # fmt: skip


def case_text(name: str) -> str:
    return conv_program(*CASES[name])


@pytest.mark.parametrize("name", sorted(CASES))
def test_conv_taps_agrees_with_interpret(name: str) -> None:
    text = case_text(name)
    assert pick_schedule(group_of(text)).name == "conv_taps"
    assert pick_schedule(group_of(text, OPENCL, "opencl")).name == "conv_taps"
    check_everywhere(text, inputs(CASES[name], np.random.default_rng(0)))


def test_row_blocks_fit_the_packed_tile() -> None:
    """A 28 x 28 image is one work item (its 30 x 30 padded rows); 64 x 64 from 3 channels
    is cut into blocks of rows whose packed tile stays within PACK_MAX_FLOATS."""
    cnn = conv_taps.plan_of(group_of(case_text("cnn_first")))
    assert cnn is not None and (cnn.row_block, cnn.row_vectors) == (28, 2)
    blocks = conv_taps.plan_of(group_of(case_text("row_blocks")))
    assert blocks is not None and blocks.row_block < 64 and blocks.pack_floats <= conv_taps.PACK_MAX_FLOATS


@pytest.mark.parametrize("name", ["cnn_first", "short_rows_no_padding"])
def test_nan_and_inf_inputs_stay_where_they_are_read(name: str) -> None:
    arrays = inputs(CASES[name], np.random.default_rng(1))
    arrays["x"][0, 0, 3, 4] = np.nan
    arrays["x"][0, -1, -1, -1] = np.inf
    expected = check_everywhere(case_text(name), arrays)
    assert np.isnan(expected).any() and not np.isnan(expected).all()


@pytest.mark.parametrize("name", ["cnn_first", "rgb_one_vector_rows", "short_rows_no_padding"])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_nonfinite_weight_takes_the_slow_path(name: str, bad: float) -> None:
    """A NaN or inf weight: the work items compute every output as `interpret` does, so
    where its tap reads the padding the outputs stay finite (the tap adds nothing there)."""
    arrays = inputs(CASES[name], np.random.default_rng(2))
    arrays["w"][1, 0, 0, 0] = bad  # reads input row oh - 1, column ow - 1 (padding at the border)
    expected = check_everywhere(case_text(name), arrays)
    assert not np.isfinite(expected[:, 1, 1:, 1:]).all()
    if CASES[name][2] == PAD1:
        assert np.isfinite(expected[:, 1, 0, :]).all() and np.isfinite(expected[:, 1, :, 0]).all()


@pytest.mark.parametrize(
    ("data", "weight", "attrs", "result"),
    [
        ((1, 4, 16, 16), (8, 4, 3, 3), PAD1, (1, 8, 16, 16)),  # 36 taps: packed_conv's
        ((1, 2, 16, 16), (4, 2, 3, 3), "{strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>}", (1, 4, 8, 8)),
        ((1, 2, 16, 16), (4, 1, 3, 3), "{groups = 2 : i64, padding = array<i64: 1, 1, 1, 1>}", (1, 4, 16, 16)),
        ((1, 1, 16, 6), (4, 1, 3, 3), PAD1, (1, 4, 16, 6)),  # rows of 6: mostly dropped lanes
    ],
)  # fmt: skip
def test_declines_many_taps_strides_groups_and_short_rows(
    data: tuple[int, ...], weight: tuple[int, ...], attrs: str, result: tuple[int, ...]
) -> None:
    text = conv_program(data, weight, attrs, result)
    assert not conv_taps.matches(group_of(text))
    rng = np.random.default_rng(3)
    check_everywhere(
        text, {"x": rng.standard_normal(data).astype(np.float32), "w": rng.standard_normal(weight).astype(np.float32)}
    )


def test_opencl_takes_it_a_work_group_per_item() -> None:
    """On opencl too, each work item (image, block of rows) a work group of its own, so that
    PoCL's threads share them; a C kernel has no work groups."""
    text = case_text("cnn_first")
    assert pick_schedule(group_of(text, OPENCL, "opencl")).name == "conv_taps"
    exe = xrelay.build(text, targets=OPENCL, default_device="opencl")
    (kernel,) = [k for k in exe.kernels if k.language == "opencl"]
    assert kernel.local_size is not None and set(kernel.local_size) == {1}
    (c_kernel,) = xrelay.build(text, targets=("c",)).kernels
    assert c_kernel.local_size is None


def test_work_items_on_two_threads() -> None:
    """Work items (image, block of rows) split across two OpenMP threads, each with its own
    packed tile and sums, give the one-thread result."""
    text = conv_program((4, 3, 96, 96), (16, 3, 3, 3), PAD1, (4, 16, 96, 96), True)
    assert conv_taps.matches(group_of(text))
    arrays = inputs(((4, 3, 96, 96), (16, 3, 3, 3), PAD1, (4, 16, 96, 96), True), np.random.default_rng(4))
    two = xrelay.build(text, targets=("c",), num_threads=2)
    assert all("omp for schedule(dynamic)" in k.source for k in two.kernels)
    one = xrelay.build(text, targets=("c",), num_threads=1).run(**arrays)
    np.testing.assert_array_equal(two.run(**arrays), one)
    np.testing.assert_allclose(one, xrelay.interpret(xrelay.parse(text), arrays), rtol=1e-4, atol=1e-4)


def test_runs_clean_under_address_sanitizer(tmp_path: Path) -> None:
    """The kernels of every case, built with -fsanitize=address and run on arrays of exactly
    their sizes: the packed tiles, the overlapping last vectors and the lanes past short rows
    stay in bounds."""
    run_programs_under_asan(tmp_path, [case_text(name) for name in sorted(CASES)])


# --- a conv and its 2 x 2 max_pool2d in one group (fuse-conv-pool), on opencl ------------------

POOLED = {
    # name: data, weight, attrs, conv result, epilogue (test_winograd_conv's), pool size
    # the CNN's first conv and pool: two vectors a row, the second from conv column 12 (its
    # first windows computed twice)
    "cnn_first_pool": ((2, 1, 28, 28), (16, 1, 3, 3), PAD1, (2, 16, 28, 28), "bias_relu", 2),
    # odd sizes (the last conv row and column dropped), 3 channels, rows narrower than a
    # vector (7 windows of its 8)
    "odd_pool": ((1, 3, 13, 15), (5, 3, 3, 3), PAD1, (1, 5, 13, 15), "bias_relu", 2),
    # 40 wide: three vectors a row, no epilogue, no padding
    "wide_pool": ((1, 2, 12, 42), (4, 2, 3, 3), "", (1, 4, 10, 40), "", 2),
    # 64 x 64 from 3 channels: several blocks of an even number of rows an image
    "row_blocks_pool": ((1, 3, 64, 64), (8, 3, 3, 3), PAD1, (1, 8, 64, 64), "bias_relu", 2),
}  # fmt: skip


def pooled_text(name: str) -> str:
    return winograd_conv_program(*POOLED[name])


def pooled_inputs(name: str, seed: int) -> dict[str, np.ndarray]:
    return winograd_inputs(POOLED[name][:5], np.random.default_rng(seed))


@pytest.mark.parametrize("name", sorted(POOLED))
def test_pooled_group_agrees_with_interpret(name: str) -> None:
    """On opencl the conv and its pool are one group, conv_taps pooling in its stores, one
    kernel; on the cpu they stay two groups (POOLING_DEVICES)."""
    text = pooled_text(name)
    assert winograd_schedules(text, OPENCL, "opencl") == ["conv_taps"]
    assert conv_taps.pools_in_epilogue(group_of(text, OPENCL, "opencl"))
    on_cpu = winograd_schedules(text)
    assert on_cpu[0] == "conv_taps" and len(on_cpu) == 2
    check(text, pooled_inputs(name, 0), device="opencl")


def test_pooled_rows_are_whole_windows() -> None:
    """A work item's rows are an even count, so that no window straddles two of them."""
    plan = conv_taps.plan_of(group_of(pooled_text("row_blocks_pool"), OPENCL, "opencl"))
    assert plan is not None and plan.row_block % 2 == 0 and plan.row_block < 64
    odd = conv_taps.plan_of(group_of(pooled_text("odd_pool"), OPENCL, "opencl"))
    assert odd is not None and odd.row_block % 2 == 0 and 12 % odd.row_block == 0  # conv row 12 dropped


@pytest.mark.parametrize("name", ["cnn_first_pool", "odd_pool"])
def test_pooled_nan_and_inf_inputs(name: str) -> None:
    """A NaN input spreads to the windows whose conv outputs read it, NaN winning the max; an
    inf input makes inf or NaN where it is read: as `interpret` computes them."""
    arrays = pooled_inputs(name, 1)
    arrays["x"][0, 0, 3, 4] = np.nan
    arrays["x"][-1, -1, -1, 0] = np.inf
    expected = check(pooled_text(name), arrays, device="opencl")
    assert np.isnan(expected).any() and not np.isnan(expected).all()


@pytest.mark.parametrize("name", ["cnn_first_pool", "odd_pool"])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_pooled_nonfinite_weight_takes_the_slow_path(name: str, bad: float) -> None:
    """A NaN or inf weight on a tap that reads the padding at the top-left border: the work
    items compute every pooled output as `interpret` does, so the windows at the border
    whose conv outputs read only padding through that tap stay finite where relu allows."""
    arrays = pooled_inputs(name, 2)
    arrays["w"][1, 0, 0, 0] = bad
    expected = check(pooled_text(name), arrays, device="opencl")
    assert not np.isfinite(expected[:, 1, 1:, 1:]).all()


def test_pool_stays_apart_where_the_epilogue_varies_within_a_window() -> None:
    """A conv whose epilogue adds a value that varies within a window (+ x, before the relu)
    does not commute with the max: the pool keeps a kernel of its own on opencl too."""
    case = ((1, 3, 16, 32), (3, 3, 3, 3), PAD1, (1, 3, 16, 32), "residual", 2)
    text = winograd_conv_program(*case)
    assert winograd_schedules(text, OPENCL, "opencl") == ["conv_taps", "pool_windows"]
    arrays = winograd_inputs(case[:5], np.random.default_rng(5))
    got = xrelay.build(text, targets=OPENCL, default_device="opencl").run(**arrays)
    np.testing.assert_allclose(got, xrelay.interpret(xrelay.parse(text), arrays), rtol=1e-4, atol=1e-4)


def test_ops_after_the_pool() -> None:
    """An add of another input and a relu after the pool (`relu(max_pool2d(conv(x) + b) +
    s)`): one kernel, the ops after the pool applied to each pooled value; NaN and inf in %x
    and %s where `interpret` has them."""
    text = after_pool_program((2, 3, 14, 20), 6)
    assert winograd_schedules(text, OPENCL, "opencl") == ["conv_taps"]
    rng = np.random.default_rng(9)
    arrays = {a.name_hint: rng.standard_normal(a.type.get_shape()).astype(np.float32) for a in xrelay.parse(text).ops.first.args}  # fmt: skip
    arrays["x"][0, 2, 3, 4] = np.nan
    arrays["s"][0, 1, 2, 2] = np.inf
    check(text, arrays, device="opencl")


# --- ISA levels: SSE4.2 (4 lanes), AVX2 (8) and the native machine ---------------------------


@pytest.mark.parametrize("target", isa_params())
@pytest.mark.parametrize("name", ["cnn_first", "short_rows_one_channel", "dilated_uneven"])
def test_conv_taps_at_every_isa_level(name: str, target: str) -> None:
    """Rows of 28, 12 and 35 (not multiples of 8 or 16; 12 below a vector of 16), dilation,
    uneven padding, no padding, batch 2. (short_rows_no_padding's 18 taps exceed 16 registers.)"""
    case = ISA_CASES.get(name) or CASES[name]
    check_isa_level(conv_program(*case), inputs(case, np.random.default_rng(8)), target, "conv_taps", terms_of(case))


ISA_CASES = {"short_rows_one_channel": ((1, 1, 14, 14), (16, 1, 3, 3), "", (1, 16, 12, 12), True)}


@pytest.mark.parametrize("target", isa_params())
def test_conv_taps_nonfinite_on_two_threads_at_every_isa_level(target: str) -> None:
    """A NaN input, an inf weight on a tap that reaches the padding (the slow path), 2 threads."""
    case = CASES["cnn_first"]
    arrays = inputs(case, np.random.default_rng(9))
    arrays["x"][1, 0, 5, 7] = np.nan
    arrays["w"][3, 0, 0, 0] = np.inf
    expected = check_isa_level(case_text("cnn_first"), arrays, target, "conv_taps", terms_of(case), num_threads=2)
    assert np.isfinite(expected).any() and not np.isfinite(expected).all()


@pytest.mark.parametrize("target", isa_params((PLANNED, "c -march=x86-64-v3")))
def test_taps_beyond_the_registers_go_to_packed_conv(target: str) -> None:
    """27 taps (3 channels x 3 x 3) and a sum and a weight fit AVX-512's 32 registers, not
    AVX2's 16 (at most 14 taps there): packed_conv takes that conv."""
    taken = "conv_taps" if target_features(target).vector_registers == 32 else "packed_conv"
    text = conv_program((1, 3, 32, 32), (16, 3, 3, 3), PAD1, (1, 16, 32, 32), True)
    arrays = inputs(((1, 3, 32, 32), (16, 3, 3, 3), PAD1, (1, 16, 32, 32), True), np.random.default_rng(10))
    check_isa_level(text, arrays, target, taken, 29)
