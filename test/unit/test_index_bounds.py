"""Upper bounds of loop trip counts (targets/index_bounds.py) and the C target's work estimate
built on them (targets/c.py: estimated_work), which decides the `omp parallel` region."""

from __future__ import annotations

from xdsl.dialects import func, scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

import xrelay
from xrelay.ir import context
from xrelay.targets.c import estimated_work
from xrelay.targets.index_bounds import IndexBounds


def parse(body: str, args: str = "") -> func.FuncOp:
    """A function `@f(args)` with `body`, parsed with xrelay's dialects."""
    module = Parser(context(), f"func.func @f({args}) {{\n{body}\n  func.return\n}}").parse_module()
    assert isinstance(module, ModuleOp)
    kernel = module.ops.first
    assert isinstance(kernel, func.FuncOp)
    return kernel


def loops(kernel: func.FuncOp) -> list[scf.ForOp]:
    return [op for op in kernel.walk() if isinstance(op, scf.ForOp)]


# packed_matmul's k-blocks: `for k0 in 0, 256, ... ; for k in [k0, min(k0 + 256, K))`
K_BLOCKS = """
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c256 = arith.constant 256 : index
  %c784 = arith.constant 784 : index
  scf.for %b = %c0 to %c4 step %c1 {
    %k0 = arith.muli %b, %c256 : index
    %end = arith.addi %k0, %c256 : index
    %less = arith.cmpi slt, %end, %c784 : index
    %k1 = arith.select %less, %end, %c784 : index
    scf.for %k = %k0 to %k1 step %c1 {
      %x = arith.addi %k, %k0 : index
    }
  }
"""


def test_a_k_block_is_bounded_by_its_depth_not_by_k() -> None:
    inner = loops(parse(K_BLOCKS))[1]
    assert IndexBounds().trip_count(inner.lb, inner.ub, inner.step) == 256
    assert IndexBounds().interval(inner.body.block.args[0]) == (0, 783)


def test_the_work_of_a_k_blocked_nest_counts_every_block() -> None:
    kernel = parse(K_BLOCKS)
    # 5 constants and the return; 4 blocks of 4 index ops, a yield and at most 256 trips of
    # an add and a yield (the old estimate counted 1 trip: 1 + 4 * 7)
    assert estimated_work(kernel.body.block) == 6 + 4 * (4 + 1 + 256 * 2)


def test_min_and_max_either_way_round() -> None:
    kernel = parse(
        """
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c9 = arith.constant 9 : index
  %c3 = arith.constant 3 : index
  scf.for %i = %c0 to %c9 step %c1 {
    %lo0 = arith.subi %i, %c3 : index
    %gt = arith.cmpi sgt, %lo0, %c0 : index
    %lo = arith.select %gt, %lo0, %c0 : index
    %hi0 = arith.addi %i, %c3 : index
    %ge = arith.cmpi sge, %c9, %hi0 : index
    %hi = arith.select %ge, %hi0, %c9 : index
    scf.for %t = %lo to %hi step %c1 {
    }
  }
"""
    )
    window = loops(kernel)[1]  # [max(i - 3, 0), min(i + 3, 9)): at most 6 taps
    assert IndexBounds().trip_count(window.lb, window.ub, window.step) == 6


def test_steps_divisions_and_remainders() -> None:
    kernel = parse(
        """
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c5 = arith.constant 5 : index
  %c7 = arith.constant 7 : index
  %c100 = arith.constant 100 : index
  scf.for %i = %c0 to %c100 step %c7 {
    %q = arith.divsi %i, %c5 : index
    %r = arith.remsi %i, %c5 : index
    scf.for %j = %q to %c100 step %c2 {
    }
    scf.for %k = %c0 to %r step %c2 {
    }
  }
"""
    )
    outer, by_quotient, by_remainder = loops(kernel)
    bounds = IndexBounds()
    assert bounds.trip_count(outer.lb, outer.ub, outer.step) == 15  # 0, 7, ..., 98
    assert bounds.trip_count(by_quotient.lb, by_quotient.ub, by_quotient.step) == 50
    assert bounds.trip_count(by_remainder.lb, by_remainder.ub, by_remainder.step) == 2  # r <= 4


def test_an_unbounded_loop_counts_once() -> None:
    kernel = parse(
        """
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    %x = arith.addi %i, %i : index
  }
""",
        "%n: index",
    )
    loop = loops(kernel)[0]
    assert IndexBounds().trip_count(loop.lb, loop.ub, loop.step) is None
    assert estimated_work(kernel.body.block) == 3 + (1 + 1)  # 2 constants, a return; add, yield


def test_an_unsigned_compare_is_not_a_min() -> None:
    kernel = parse(
        """
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %less = arith.cmpi ult, %n, %c8 : index
  %m = arith.select %less, %n, %c8 : index
  scf.for %i = %c0 to %m step %c1 {
  }
""",
        "%n: index",
    )
    loop = loops(kernel)[0]
    assert IndexBounds().trip_count(loop.lb, loop.ub, loop.step) is None


MLP_DENSE = """
func.func @main(%x: tensor<64x784xf32>, %w: tensor<512x784xf32>, %b: tensor<512xf32>) -> tensor<64x512xf32> {
  %0 = relay.nn.dense %x, %w : (tensor<64x784xf32>, tensor<512x784xf32>) -> tensor<64x512xf32>
  %1 = relay.nn.bias_add %0, %b : (tensor<64x512xf32>, tensor<512xf32>) -> tensor<64x512xf32>
  %2 = relay.nn.relu %1 : tensor<64x512xf32>
  func.return %2 : tensor<64x512xf32>
}
"""


def test_the_mlp_dense_is_shared_by_threads() -> None:
    """The MLP's first layer (25.7M multiply-adds in packed_matmul's k-blocks [k0, min(k0 +
    256, 784))) does more than the host's `min_parallel_work()` (12M): counting a k-block as one trip left it alone."""
    (kernel,) = xrelay.build(MLP_DENSE, num_threads=2).kernels
    assert "omp for schedule(dynamic)" in kernel.source


def test_near_quotients_cancel() -> None:
    """packed_conv's epilogue: the output rows a block of 48 pixels from p (rows of 30) meets,
    `[p / 30, min((p + 47) / 30 + 1, 14))`, are at most 3, not 14 (the intervals of the
    quotients alone)."""
    kernel = parse(
        """
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c9 = arith.constant 9 : index
  %c14 = arith.constant 14 : index
  %c30 = arith.constant 30 : index
  %c47 = arith.constant 47 : index
  %c48 = arith.constant 48 : index
  scf.for %b = %c0 to %c9 step %c1 {
    %p = arith.muli %b, %c48 : index
    %first = arith.divsi %p, %c30 : index
    %end = arith.addi %p, %c47 : index
    %last = arith.divsi %end, %c30 : index
    %after = arith.addi %last, %c1 : index
    %less = arith.cmpi slt, %after, %c14 : index
    %stop = arith.select %less, %after, %c14 : index
    scf.for %row = %first to %stop step %c1 {
      %rem = arith.remsi %p, %c30 : index
      scf.for %x = %c0 to %rem step %c1 {
      }
    }
  }
"""
    )
    _, rows, columns = loops(kernel)
    bounds = IndexBounds()
    assert bounds.trip_count(rows.lb, rows.ub, rows.step) == 3  # 47 / 30 + 1 + 29 / 30, rounded down
    assert bounds.trip_count(columns.lb, columns.ub, columns.step) == 29


def test_a_quotient_of_a_value_that_may_be_negative_is_bounded_by_intervals() -> None:
    kernel = parse(
        """
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c10 = arith.constant 10 : index
  %cm5 = arith.constant -5 : index
  scf.for %i = %cm5 to %c10 step %c1 {
    %q = arith.divsi %i, %c4 : index
    scf.for %j = %q to %c4 step %c1 {
    }
  }
"""
    )
    inner = loops(kernel)[1]
    assert IndexBounds().interval(inner.lb) == (-1, 2)  # -5 / 4 and 9 / 4, toward zero
    assert IndexBounds().trip_count(inner.lb, inner.ub, inner.step) == 5


def test_an_if_counts_its_shorter_branch() -> None:
    """A rare fallback (packed_conv recomputes a block whose sums are not finite) does not
    make a nest look big enough for threads."""
    kernel = parse(
        """
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c1000 = arith.constant 1000 : index
  scf.if %rare {
    scf.for %i = %c0 to %c1000 step %c1 {
      %x = arith.addi %i, %i : index
    }
  } else {
    %y = arith.addi %c1, %c1 : index
  }
""",
        "%rare: i1",
    )
    assert estimated_work(kernel.body.block) == 4 + 2  # 3 constants and the return; addi, yield


def test_a_vector_op_counts_its_lanes() -> None:
    """A `vector<16xf32>` FMA is 16 multiply-adds: counted as one op, the micro-kernels'
    nests looked 16 times lighter than the rows kernels' scalar loops that gcc vectorises."""
    kernel = parse(
        """
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  scf.for %i = %c0 to %c8 step %c1 {
    %a = vector.load %m[%i] : memref<24xf32>, vector<16xf32>
    %f = vector.fma %a, %a, %a : vector<16xf32>
    vector.store %f, %m[%i] : memref<24xf32>, vector<16xf32>
  }""",
        "%m: memref<24xf32>",
    )
    # 3 constants and the return; 8 trips of a load, an FMA and a store of 16 lanes, a yield
    assert estimated_work(kernel.body.block) == 4 + 8 * (3 * 16 + 1)


TRANSFORMER_DENSE = """
func.func @main(%x: tensor<128x256xf32>, %w: tensor<256x256xf32>) -> tensor<128x256xf32> {
  %0 = relay.nn.dense %x, %w : (tensor<128x256xf32>, tensor<256x256xf32>) -> tensor<128x256xf32>
  func.return %0 : tensor<128x256xf32>
}
"""


def test_the_transformer_projection_is_shared_by_threads() -> None:
    """The transformer's 128x256x256 projections (8.4M multiply-adds) gain from two threads;
    counting a micro-kernel's vector FMA as one op estimated them under `min_parallel_work()`."""
    (kernel,) = xrelay.build(TRANSFORMER_DENSE, num_threads=2).kernels
    assert "omp for schedule(dynamic)" in kernel.source
