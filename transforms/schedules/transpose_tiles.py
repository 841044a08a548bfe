"""
transpose_tiles: a group that only moves data (reshapes, transposes, squeezes, expand_dims
and strided slices of one input) and transposes an input's last axis away from the last, a tile
of TILE x TILE outputs per work item (WORK_ITEM_TILE on a device with work groups: opencl).

The parallel nest spans the result's axes but the last two, and the tiles of those two
(edge tiles clamped); each work item stores its tile in row-major order. One output row per
innermost loop reads the input a row apart per element: the transformer's v heads
(`[128, 256] -> [128, 4, 64] -> transpose(1, 2, 0)`, 128 reads 1 KiB apart per row of
output) map every read to 4 of L1's 64 sets, and 128 lines do not fit their 32 ways. A tile
reads TILE lines and writes TILE lines. That copy, in C on one core: 28 us one row at a time,
16 us in tiles of 16, 10.5 us in tiles of 8 (best of 200 calls). (In the transformer itself
fuse-attention now takes those moves into the attention's group, which reads v where it lies;
this schedule serves such copies where nothing takes them in.)

On OpenCL a work item per element (the elementwise schedule) lets PoCL vectorise across
work items, but its reads are as far apart: that copy took 0.035 ms of device time on PoCL
at 1 thread against 0.012 for the C kernel in tiles of 8; in tiles of 8 on PoCL 0.021, of 16
0.016, of 32 0.015 (bench/opencl_model_kernels.py transformer, medians of 30, load 2.7).
"""

from __future__ import annotations

from xdsl.dialects import scf
from xdsl.ir import SSAValue

from xrelay.dialects import relay
from xrelay.transforms.scalar_ops import GroupEmitter
from xrelay.transforms.schedules import MOVES, Schedule, group_root, kind_of, result_shape

# Rows and columns of a tile: its input rows stay in L1 whatever their distance apart
# (measured above: tiles of 8 beat 16 and 64, and tied with 32).
TILE = 8
# A work item of a device with work groups (PoCL) takes tiles of 16: its per-item cost is larger.
WORK_ITEM_TILE = 16


def matches(group: relay.FusedOp) -> bool:
    if not kind_of(group).generates_kernels or len(group.inputs) != 1:
        return False
    ops = [op for op in group.body.block.ops if not isinstance(op, relay.YieldOp)]
    if not ops or not all(isinstance(op, MOVES) for op in ops):
        return False
    shape = result_shape(group)
    if len(shape) < 2 or min(shape[-2:]) < 2:
        return False
    return any(isinstance(op, relay.TransposeOp) and moves_last_axis(op) for op in ops)


def moves_last_axis(op: relay.TransposeOp) -> bool:
    permutation = op.permutation
    return len(permutation) >= 2 and permutation[-1] != len(permutation) - 1


def tile_size(group: relay.FusedOp) -> int:
    """The rows and columns of a tile on the group's device."""
    return WORK_ITEM_TILE if kind_of(group).work_groups else TILE


def build(emitter: GroupEmitter, group: relay.FusedOp, out: SSAValue) -> scf.ParallelOp:
    shape = result_shape(group)
    size = tile_size(group)
    tiles = (*shape[:-2], *(-(-extent // size) for extent in shape[-2:]))
    root = group_root(group)
    return emitter.parallel_nest(tiles, lambda tile: store_tile(emitter, root, shape, tile, out, size))


def store_tile(
    e: GroupEmitter, root: SSAValue, shape: tuple[int, ...], tile: list[SSAValue], out: SSAValue, size: int
) -> None:
    """The tile at `tile` (the leading indices, then the tile's row and column) of `size` x
    `size` outputs: its rows and columns clamped to the result, stored row by row."""
    *lead, row_tile, column_tile = tile
    bounds: list[tuple[SSAValue, SSAValue]] = []
    for index, extent in zip((row_tile, column_tile), shape[-2:]):
        first = e.mul_const(index, size)
        last = e.add_const(first, size)
        bounds.append((first, last if extent % size == 0 else e.min_index(last, e.index(extent))))

    def store(ivs: list[SSAValue], _: list[SSAValue]) -> list[SSAValue]:
        idx = [*lead, *ivs]
        return e.store(e.value_at(root, idx), out, idx)

    e.loops(bounds, [], store)


SCHEDULE = Schedule("transpose_tiles", matches, build)
