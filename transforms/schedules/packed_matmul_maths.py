"""
packed_matmul_maths: packed_matmul's nest on opencl, for a dense, batch_matmul or matmul
whose epilogue calls a maths function (tanh, exp, erf, ...: matmul_block.EPILOGUE_MATHS).

matmul_block, which takes the other opencl matmuls, computes its epilogue inline, output by
output after the k-loop: each `xr_tanhf` (and the `exp` inside it) stays scalar there, as no
vectoriser sees a loop around it. packed_matmul (transforms/schedules/packed_matmul.py, built
by its `build` unchanged) applies the epilogue in a unit-stride loop over a block of sums,
which PoCL's LLVM vectorises, maths included; its micro-kernel is the same zmm broadcast-FMA
loop gcc makes of it. Without such an epilogue matmul_block stays the faster on PoCL: its
split-reductions loops beat the packed panels, whose strided packing loops LLVM turns into
gathers, slow on this AMD CPU (perf: 45% of a packed dense's time).

Measured on PoCL with POCL_MAX_PTHREAD_COUNT=1 against the C kernel of the same group (C at
1 thread, interleaved medians of 7, load 3-7 on 2 cores): the transformer's dense + bias +
GELU (128x256 . 1024x256) took 3.5x the C kernel's time in matmul_block, 2.1x here; dense
+ bias alone (128x256 . 256x256) 1.4x in matmul_block, 1.6-2.0x packed.

The test that picks it is packed_matmul's (its minimum work and tile) on an opencl scope.
"""

from __future__ import annotations

from xrelay.dialects import relay
from xrelay.transforms.kernel_builder import shape_of
from xrelay.transforms.schedules import Schedule, packed_matmul
from xrelay.transforms.schedules.matmul_block import EPILOGUE_MATHS, dot_depth, matmul_anchor


def calls_maths(group: relay.FusedOp) -> bool:
    """Whether the group's epilogue calls a maths function."""
    return any(isinstance(op, EPILOGUE_MATHS) for op in group.body.block.ops)


def big_enough(matmul: relay.DenseOp | relay.BatchMatmulOp | relay.MatmulOp) -> bool:
    """packed_matmul's size test: at least a tile of outputs and MIN_WORK multiply-adds."""
    shape = shape_of(matmul.res)
    tile = packed_matmul.TILE
    if len(shape) < 2 or shape[-1] < tile.columns or shape[-2] < tile.rows:
        return False
    return shape[-2] * shape[-1] * dot_depth(matmul) >= packed_matmul.MIN_WORK


def matches(group: relay.FusedOp) -> bool:
    scope = group.se_scope
    matmul = matmul_anchor(group)
    if scope is None or scope.device != "opencl" or matmul is None:
        return False
    return calls_maths(group) and big_enough(matmul)


SCHEDULE = Schedule("packed_matmul_maths", matches, packed_matmul.build)
