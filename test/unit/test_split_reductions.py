"""split-reductions: which loops it splits and how (read in the IR), and what the split
loops compute once printed as OpenCL C and run on PoCL, against numpy.

Every lowered group of `kernel_cases.GROUP_CASES` also runs split on OpenCL in
test_targets.py; here are the edges: trip counts around LANES and WIDE_MIN_TRIPS, offsets
and steps, each combine, NaN, several accumulators, bodies over the budget.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
import pytest
from kernel_cases import GROUP_CASES, SCOPES, GroupCase, random_inputs
from xdsl.dialects import arith, scf, vector
from xdsl.dialects.builtin import ModuleOp, VectorType
from xdsl.passes import PassPipeline

import xrelay
from xrelay.dialects.reductions import REDUCTION_OPERATORS
from xrelay.driver import all_passes
from xrelay.runtime.opencl import build_opencl, default_opencl_context, run_opencl_kernel
from xrelay.targets.kernels import kernel_sources
from xrelay.transforms.split_reductions import COMBINING_KINDS, SPLIT_BODY_BUDGET, SplitReductionsPass

# A loop over in0[lb:ub:step] combining each element (times {scale} plus {offset}, so a
# product stays near 1) into %init; with `second`, a max of the elements in the same loop.
LOOP = """
func.func @k_loop(%in0: memref<{n}xf32>, %out0: memref<2xf32>) attributes {{relay.se_scope = {scope}}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %lb = arith.constant {lb} : index
  %ub = arith.constant {ub} : index
  %st = arith.constant {step} : index
  %init = arith.constant {init} : f32
  %ninf = arith.constant 0xFF800000 : f32
  %s = arith.constant {scale} : f32
  %o = arith.constant {offset} : f32
  "scf.parallel"(%c0, %c1, %c1) <{{operandSegmentSizes = array<i32: 1, 1, 1, 0>}}> ({{
  ^bb0(%i: index):
    {results} = scf.for %j = %lb to %ub step %st iter_args({iter_args}) -> ({types}) {{
      %x = memref.load %in0[%j] : memref<{n}xf32>
      %y = arith.mulf %x, %s : f32
      %z = arith.addf %y, %o : f32
      %n = {combine} %acc, %z : f32
      {second}
      scf.yield {yielded} : {types}
    }}
    memref.store %r, %out0[%c0] : memref<2xf32>
    memref.store {peak}, %out0[%c1] : memref<2xf32>
    scf.reduce
  }}) : (index, index, index) -> ()
  func.return
}}"""

# combine -> (initial value, scale, offset, numpy reduction)
COMBINES: dict[str, tuple[str, float, float, Any]] = {
    "arith.addf": ("0.5", 1.0, 0.0, lambda init, z: init + z.sum()),
    "arith.mulf": ("1.0", 0.01, 1.0, lambda init, z: init * z.prod()),
    "arith.maximumf": ("0xFF800000", 1.0, 0.0, lambda init, z: max(init, z.max(initial=-np.inf))),
    "arith.minimumf": ("0x7F800000", 1.0, 0.0, lambda init, z: min(init, z.min(initial=np.inf))),
}


# The cases below count loops for kernels of 16-float vectors; their target pins that width,
# whatever the OpenCL device's own (PoCL's is the host's register: 8 floats on AVX2).
LANES = 16


def pinned(text: str, lanes: int = LANES) -> str:
    """`text` with its opencl scopes' target pinned to vectors of `lanes` floats."""
    return text.replace('target = "opencl"', f'target = "opencl -vector-width={lanes}"')


def loop_text(
    n: int, lb: int, ub: int, step: int, combine: str, second: bool, scope: str = "opencl", lanes: int = LANES
) -> str:
    init, scale, offset, _ = COMBINES[combine]
    both = [("%r", "%acc = %init", "%n"), ("%m", "%peak = %ninf", "%q")][: 1 + second]
    results, iter_args, yielded = (", ".join(parts) for parts in zip(*both))
    return pinned(LOOP.format(
        n=n, lb=lb, ub=ub, step=step, init=init, scale=scale, offset=offset, combine=combine,
        scope=SCOPES[scope], results=results, iter_args=iter_args, yielded=yielded,
        types=", ".join(["f32"] * len(both)), peak="%m" if second else "%ninf",
        second="%q = arith.maximumf %peak, %x : f32" if second else "",
    ), lanes)  # fmt: skip


def split(text: str) -> ModuleOp:
    module = xrelay.parse(text)
    SplitReductionsPass().apply(xrelay.context(), module)
    module.verify()
    return module


def for_loops(module: ModuleOp) -> list[tuple[int, int, int, int]]:
    """(lb, ub, step, vector iter_args) of each scf.for, in program order."""

    def const(v: Any) -> int:
        return v.owner.value.value.data

    return [
        (const(op.lb), const(op.ub), const(op.step), sum(isinstance(a.type, VectorType) for a in op.iter_args))
        for op in module.walk()
        if isinstance(op, scf.ForOp)
    ]


# --- what is split, and how -----------------------------------------------------------------


def test_cpu_kernels_are_left_alone() -> None:
    text = loop_text(300, 0, 300, 1, "arith.addf", False, scope="c")
    assert str(split(text)) == str(xrelay.parse(text))


@pytest.mark.parametrize(
    "lb, ub, step, loops",
    [
        (0, 15, 1, [(0, 15, 1, 0)]),  # shorter than LANES: as it is
        (0, 16, 1, [(0, 16, 16, 1)]),  # one vector trip, no remainder
        (1, 40, 2, [(1, 33, 32, 1), (33, 40, 2, 0)]),  # 20 trips: 16, then a remainder of 4
        (0, 255, 1, [(0, 240, 16, 1), (240, 255, 1, 0)]),
        (0, 256, 1, [(0, 256, 64, 4)]),  # from WIDE_MIN_TRIPS: four vectors
        (0, 276, 1, [(0, 256, 64, 4), (256, 272, 16, 1), (272, 276, 1, 0)]),
    ],
)
def test_loops_after_the_split(lb: int, ub: int, step: int, loops: list[tuple[int, int, int, int]]) -> None:
    assert for_loops(split(loop_text(ub, lb, ub, step, "arith.addf", False))) == loops


def test_the_lanes_are_vector_ops() -> None:
    module = split(loop_text(276, 0, 276, 1, "arith.maximumf", False))
    ops = [op for op in module.walk() if isinstance(op, vector.BroadcastOp | vector.InsertOp | vector.ReductionOp)]
    # one start vector; per wide trip four gathers, per narrow trip one; one lane fold
    assert sum(isinstance(op, vector.BroadcastOp) for op in ops) == 1 + 4 + 1
    assert sum(isinstance(op, vector.InsertOp) for op in ops) == (4 + 1) * (LANES - 1)
    (fold,) = [op for op in ops if isinstance(op, vector.ReductionOp)]
    assert fold.kind.data == vector.CombiningKindFlag.MAXIMUMF
    assert arith.FastMathFlag.REASSOC not in fold.fastmath.data  # max needs no reordering licence
    start = next(op for op in ops if isinstance(op, vector.BroadcastOp))
    assert start.source.name_hint == "init"  # max starts its lanes from the initial value
    sums = split(loop_text(276, 0, 276, 1, "arith.addf", False))
    (fold,) = [op for op in sums.walk() if isinstance(op, vector.ReductionOp)]
    assert fold.kind.data == vector.CombiningKindFlag.ADD and arith.FastMathFlag.REASSOC in fold.fastmath.data


def test_several_accumulators_share_the_vectors() -> None:
    """Two reductions in one loop of 300: two vectors each (VECTORS // 2), so 32 iterations a
    trip, one body copy per iteration feeding both."""
    module = split(loop_text(300, 0, 300, 1, "arith.addf", True))
    assert for_loops(module) == [(0, 288, 32, 2 * 2), (288, 300, 1, 0)]
    wide = next(op for op in module.walk() if isinstance(op, scf.ForOp))
    loads = [op for op in wide.body.block.ops if op.name == "memref.load"]
    assert len(loads) == 2 * LANES  # the body once per iteration, not once per sum


def _group_loops(name: str) -> list[tuple[int, int, int, int]]:
    case = next(c for c in GROUP_CASES if c.name == name)
    spec = "convert-relay-to-loops,dce,licm,cse,split-reductions"
    module = xrelay.parse(pinned(case.module_text("opencl")))
    PassPipeline.parse_spec(all_passes(), spec).apply(xrelay.context(), module)
    return for_loops(module)


def test_dense_reductions_are_split() -> None:
    """A 37-long dot product takes one vector per sum (a block of 4 columns: 4 sums); a
    300-long one (no block) four vectors, then one, then 12 alone."""
    assert _group_loops("dense_long") == [(0, 32, 16, 4), (32, 37, 1, 0)]
    assert _group_loops("dense_wide") == [(0, 256, 64, 4), (256, 288, 16, 1), (288, 300, 1, 0)]


def test_register_block_sums_take_one_vector_each() -> None:
    """The 16 sums of a 4 x 4 dense block are independent already: one vector each, not four."""
    assert _group_loops("dense_blocks_bias_relu") == [(0, 288, 16, 16), (288, 300, 1, 0)]


def test_a_long_body_is_not_split() -> None:
    """A body of more than SPLIT_BODY_BUDGET / (2 * LANES) ops stays one loop."""
    ops = SPLIT_BODY_BUDGET // (2 * LANES)
    chain = [f"%n{i} = relay.negative %n{i - 1} : tensor<2x20xf32>" for i in range(1, ops)]
    body = "\n".join(
        [
            "%n0 = relay.exp %x : tensor<2x20xf32>",
            *chain,
            f"%r = relay.sum %n{ops - 1} {{axis = array<i64: 1>}} : (tensor<2x20xf32>) -> tensor<2xf32>",
        ]
    )
    module = xrelay.parse(pinned(GroupCase("long_body", "x:2x20", body).module_text("opencl")))
    PassPipeline.parse_spec(all_passes(), "convert-relay-to-loops,split-reductions").apply(xrelay.context(), module)
    assert [loop[3] for loop in for_loops(module)] == [0]


# --- what the split loops compute on OpenCL -------------------------------------------------


@functools.cache
def opencl_queue() -> Any:
    import pyopencl as cl

    return cl.CommandQueue(default_opencl_context())


def run_split(text: str, x: np.ndarray) -> np.ndarray:
    (source,) = kernel_sources(split(text))
    kernel = build_opencl(opencl_queue().context, [source]).kernels[source.name]
    return run_opencl_kernel(opencl_queue(), kernel, [x], (2,))


def expected(x: np.ndarray, lb: int, ub: int, step: int, combine: str) -> float:
    init, scale, offset, reduce = COMBINES[combine]
    start = {"0x7F800000": math.inf, "0xFF800000": -math.inf}.get(init)
    z = x[lb:ub:step].astype(np.float64) * scale + offset
    return reduce(float(init) if start is None else start, z)


def test_every_reduction_operator_has_a_vector_kind_and_a_case() -> None:
    """A loop the targets take for a reduction is one split-reductions can split, and the
    cases below run each."""
    assert set(COMBINING_KINDS) == set(REDUCTION_OPERATORS)
    assert {op.name for op in REDUCTION_OPERATORS} == set(COMBINES)


@pytest.mark.parametrize("combine", list(COMBINES))
@pytest.mark.parametrize("lb, ub, step", [(0, 15, 1), (0, 16, 1), (1, 40, 2), (0, 255, 1), (3, 790, 1), (0, 1030, 3)])
def test_split_loops_compute_the_reduction(combine: str, lb: int, ub: int, step: int) -> None:
    x = random_inputs([(ub,)], lb + ub, positive=False)[0]
    got = run_split(loop_text(ub, lb, ub, step, combine, True), x)
    np.testing.assert_allclose(got[0], expected(x, lb, ub, step, combine), rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(got[1], x[lb:ub:step].max())


@pytest.mark.parametrize("lanes", [4, 8])
def test_lanes_follow_the_device_vector_width(lanes: int) -> None:
    """A kernel for a device of `lanes`-float vectors accumulates in vector<lanes x f32>
    (4 per sum in the wide loop), and computes the same reduction."""
    text = loop_text(300, 0, 300, 1, "arith.addf", False, lanes=lanes)
    module = split(text)
    widths = {op.vector.type.get_shape()[0] for op in module.walk() if isinstance(op, vector.BroadcastOp)}
    assert widths == {lanes}
    chunk = 4 * lanes
    assert for_loops(module)[0] == (0, 300 // chunk * chunk, chunk, 4)
    x = random_inputs([(300,)], lanes, positive=False)[0]
    np.testing.assert_allclose(run_split(text, x)[0], expected(x, 0, 300, 1, "arith.addf"), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("combine", list(COMBINES))
@pytest.mark.parametrize("where", [0, 17, 260, 299])  # a lane of the wide, narrow, remainder loop
def test_a_nan_wins(combine: str, where: int) -> None:
    x = random_inputs([(300,)], where, positive=False)[0]
    x[where] = np.nan
    got = run_split(loop_text(300, 0, 300, 1, combine, True), x)
    assert np.isnan(got).all()
