"""
packed_matmul_maths: packed_matmul's work item on opencl, over blocks of 128 x 128 outputs,
for a dense, batch_matmul or matmul whose epilogue calls a maths function (tanh, exp, erf,
...: matmul_block.EPILOGUE_MATHS).

matmul_block, which takes the other opencl matmuls, computes its epilogue inline, output by
output after the k-loop: each `xr_tanhf` (and the `exp` inside it) stays scalar there, as no
vectoriser sees a loop around it. packed_matmul's work item (`packed_matmul.Block`: packing,
micro-kernel, epilogue) applies the epilogue in a unit-stride loop over a block of sums,
which PoCL's LLVM vectorises, maths included; its micro-kernel is the same zmm broadcast-FMA
loop gcc makes of it. Its packing is what PoCL does worst: LLVM makes gathers of the strided
loads, slow on this AMD CPU (perf: 38-45% of the kernel's time), where gcc transposes 16 x 16
floats in registers. So without a maths epilogue matmul_block (with split-reductions) stays
the faster on PoCL, and here a work item's block is ROWS x COLUMNS = 128 x 128 outputs
(packed_matmul's C blocks are 64 x 64), which packs each float for more multiply-adds.

Measured on PoCL with POCL_MAX_PTHREAD_COUNT=1 against the C kernel of the same group (C at
1 thread, interleaved medians of 7, load 3-7 on 2 cores), the transformer's dense + bias +
GELU (128x256 . 1024x256): matmul_block 2.5-2.8 ms (waited launches; 3.5x the C kernel's
time); device time (profiling events) in blocks of 64 x 64 1.81, 128 x 128 1.28-1.44 (C
0.81-0.84), 128 x 256 1.28 (4 work items, too few for more threads), 128 x 64 or k-blocks of
128 1.50-1.59. Dense + bias alone (128x256 . 256x256) took 1.4x the C kernel's time in
matmul_block, 1.6-2.0x packed in 64 x 64 blocks.

The test that picks it is packed_matmul's (its minimum work and tile) on an opencl scope.
"""

from __future__ import annotations

from xdsl.dialects import scf
from xdsl.ir import SSAValue

from xrelay.dialects import relay
from xrelay.transforms.kernel_builder import shape_of
from xrelay.transforms.scalar_ops import GroupEmitter
from xrelay.transforms.schedules import Schedule, group_root, one_group_per_item, packed_matmul, result_shape
from xrelay.transforms.schedules.matmul_block import EPILOGUE_MATHS, Matmul, dot_depth, matmul_anchor

ROWS = 128
COLUMNS = 128


def calls_maths(group: relay.FusedOp) -> bool:
    """Whether the group's epilogue calls a maths function."""
    return any(isinstance(op, EPILOGUE_MATHS) for op in group.body.block.ops)


def big_enough(matmul: Matmul) -> bool:
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


def build(emitter: GroupEmitter, group: relay.FusedOp, out: SSAValue) -> scf.ParallelOp:
    """packed_matmul's nest over blocks of ROWS x COLUMNS."""
    matmul = matmul_anchor(group)
    assert matmul is not None
    shape = result_shape(group)
    tiles = (*shape[:-2], -(-shape[-2] // ROWS), -(-shape[-1] // COLUMNS))
    root = group_root(group)
    return one_group_per_item(emitter.parallel_nest(tiles, lambda tile: Block(emitter, matmul, tile).emit(root, out)))


class Block(packed_matmul.Block):
    """packed_matmul's work item, over the ROWS x COLUMNS outputs of block `tile`."""

    def __init__(self, e: GroupEmitter, op: Matmul, tile: list[SSAValue]):
        super().__init__(e, op, tile)
        self.row0 = e.mul_const(tile[-2], ROWS)
        self.col0 = e.mul_const(tile[-1], COLUMNS)
        self.rows = min(ROWS, packed_matmul.round_up(self.shape[-2], packed_matmul.TILE.rows))
        self.columns = min(COLUMNS, packed_matmul.round_up(self.shape[-1], packed_matmul.TILE.columns))


SCHEDULE = Schedule("packed_matmul_maths", matches, build)
