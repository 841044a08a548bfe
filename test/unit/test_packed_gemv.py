"""packed_gemv: a cpu dense of fewer rows than packed_matmul's tile, its weight a bound param,
read from packed_matmul's pre-packed panels; built at every ISA level and run against
`xrelay.interpret`: edge rows (1, 2, 3, 5), columns not a multiple of the panel, a bias and
relu epilogue, NaN and inf; and the one packed constant a larger batch's kernel reads too."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from isa_levels import PLANNED, isa_params
from test_c_library import run_under_asan
from test_packed_matmul import (
    SCHEDULE_ATTR,
    assert_as_interpreted,
    constants_of,
    dense,
    lowered_with_params,
    prepacked_kernels,
    random_inputs,
)
from xdsl.dialects import func
from xdsl.dialects.builtin import StringAttr

import xrelay
from xrelay.runtime.machine import target_features
from xrelay.transforms.schedules import micro_kernel as mk
from xrelay.transforms.schedules.packed_gemv import panels_per_item
from xrelay.transforms.schedules.packed_matmul import PACKED_FROM_ATTR


def schedules(text: str, params: dict[str, np.ndarray], target: str) -> list[str]:
    module = lowered_with_params(text, params, target)
    kernels = [op for op in module.ops if isinstance(op, func.FuncOp) and SCHEDULE_ATTR in op.attributes]
    names = [k.attributes[SCHEDULE_ATTR] for k in kernels]
    return [name.data for name in names if isinstance(name, StringAttr)]


def check(text: str, inputs: dict[str, np.ndarray], target: str) -> None:
    """Built for `target` with the weight bound, `text` runs in a packed_gemv kernel and
    computes what the interpreter does."""
    params = {"w": inputs["w"]}
    assert "packed_gemv" in schedules(text, params, target)
    rest = {name: value for name, value in inputs.items() if name != "w"}
    got = xrelay.build(text, targets=(target,), params=params).run(**rest)
    assert isinstance(got, np.ndarray)
    assert_as_interpreted(text, inputs, got)


@pytest.mark.parametrize("target", isa_params())
@pytest.mark.parametrize("m", [1, 2, 3, 5])
@pytest.mark.parametrize("kn", [(784, 512), (160, 200), (784, 40)])
def test_edge_rows_and_columns_agree_with_interpret(m: int, kn: tuple[int, int], target: str) -> None:
    k, n = kn
    text = dense(m, k, n, "bias")
    check(text, random_inputs(text, m + n), target)


@pytest.mark.parametrize("target", isa_params())
def test_relu_epilogue_and_nan_inf(target: str) -> None:
    text = dense(3, 600, 40, "residual")
    inputs = random_inputs(text, 9)
    inputs["x"][0, 5] = np.nan
    inputs["w"][7, 3] = np.inf
    check(text, inputs, target)


@pytest.mark.parametrize(
    ("mkn", "params"),
    [
        ((1, 512, 10), ("w",)),  # narrower than a panel
        ((1, 512, 64), ()),  # the weight not bound
        ((1, 32, 64), ("w",)),  # transposed_rows' at 4 rows and more (reads it as it is)
        ((1, 64, 64), ("w",)),  # too little work for packed_matmul at a tile's rows
    ],
)
def test_what_no_larger_batch_prepacks_stays_as_it_was(mkn: tuple[int, int, int], params: tuple[str, ...]) -> None:
    text = dense(*mkn, "bias")
    inputs = random_inputs(text, 0)
    assert "packed_gemv" not in schedules(text, {name: inputs[name] for name in params}, PLANNED)


def test_panels_per_item_fit_the_registers() -> None:
    avx512 = target_features(PLANNED)
    tile = mk.register_tile(avx512)
    assert panels_per_item(avx512, tile, 1, 32) == 8
    assert panels_per_item(avx512, tile, 8, 32) == 3  # 24 sums, 3 panel vectors, a broadcast
    assert panels_per_item(avx512, tile, 1, 5) == 5
    assert panels_per_item(avx512, tile, 15, 7) == 1
    avx2 = target_features("c -march=x86-64-v3")
    tile2 = mk.register_tile(avx2)
    assert panels_per_item(avx2, tile2, 1, 32) == 7  # 14 sums (2 vectors a panel) + 2 registers of 16
    assert panels_per_item(avx2, tile2, 5, 32) == 1


def test_small_and_large_batch_read_one_packed_constant() -> None:
    """The packed weight of a batch of 2 (packed_gemv) is the one a batch of 32 reads
    (packed_matmul_prepacked): equal values, so a build of both sizes stores it once."""
    w = np.random.default_rng(0).standard_normal((96, 200)).astype(np.float32)
    packed = []
    for m in (2, 32):
        module = lowered_with_params(dense(m, 200, 96), {"w": w}, PLANNED)
        packed += [c.value for c in constants_of(module) if PACKED_FROM_ATTR in c.attributes]
    assert len(packed) == 2 and packed[0] == packed[1]


def test_kernels_run_clean_under_address_sanitizer(tmp_path: Path) -> None:
    """The kernels on arrays of exactly their sizes (the packed weight's too): items whose
    panels overrun the weight's (200 columns: 13 panels of 16, items of 8) and the stores."""
    shapes = [(1, 160, 200), (3, 784, 40), (5, 300, 520)]
    lowered = [prepacked_kernels(dense(*mkn, "bias"), "w", number) for number, mkn in enumerate(shapes)]
    result = run_under_asan(tmp_path, lowered)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.startswith("ran ")
