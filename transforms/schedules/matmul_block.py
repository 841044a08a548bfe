"""
matmul_block: a block of outputs per work item (register blocking) of a group whose anchor is
a dense, batch_matmul or matmul of the result's shape.

Up to ROW_BLOCK x COLUMN_BLOCK outputs of the result's last two axes, each dividing its
axis; the nest's last two axes are the result's divided by the block. One loop over k sums
the block's dot products, an accumulator each, then the group's result is stored at each
output, inline. On cpu, an epilogue with a maths call (EPILOGUE_MATHS: tanh, exp, ...)
instead runs in a loop nest over the sums, stored in a scratch block (`memref.alloca`), so
gcc vectorises it along the block's columns with libmvec's functions: the transformer's
dense + bias + GELU took 2.8-4.1x the time of dense + bias inline, 1.1-1.6x in the loop (C, 1
thread, kernels called directly, interleaved medians on a machine loaded 8-20 deep; inline,
each tanhf was a scalar call).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from xdsl.dialects import memref, scf
from xdsl.dialects.builtin import f32
from xdsl.ir import SSAValue

from xrelay.dialects import relay
from xrelay.transforms.kernel_builder import shape_of
from xrelay.transforms.scalar_ops import GroupEmitter
from xrelay.transforms.schedules import (
    Schedule,
    group_root,
    kind_of,
    largest_power_of_two_dividing,
    result_shape,
)

Matmul = relay.DenseOp | relay.BatchMatmulOp | relay.MatmulOp

# A dense or batch_matmul work item computes a block of outputs (register blocking): up to
# COLUMN_BLOCK along the result's last axis (j), and up to ROW_BLOCK along the one before (i)
# when the dot products are at least ROW_BLOCK_MIN_DEPTH long; each the largest power of two
# that divides the axis. Every x[i, k] load then feeds 4 outputs and every w[j, k] load 4
# (bench/kernels.py, dense 32x784 . 256x784: C 18 -> 42-50, OpenCL 22 -> 44-52 GFLOP/s). In
# short dot products (batch_matmul 8x64x64) the 16 sums' final lane folds cost as much as the
# rows save (C 9-12 with rows, 13 without), so they block columns only.
COLUMN_BLOCK = 4
ROW_BLOCK = 4
ROW_BLOCK_MIN_DEPTH = 256

# Epilogue ops whose C code is a maths library call (libmvec has vector variants).
EPILOGUE_MATHS = (
    relay.TanhOp,
    relay.ExpOp,
    relay.LogOp,
    relay.ErfOp,
    relay.SigmoidOp,
    relay.PowerOp,
    relay.SqrtOp,
    relay.RsqrtOp,
)


def matmul_anchor(group: relay.FusedOp) -> Matmul | None:
    """The group's dense, batch_matmul or matmul, if it has one of the result's shape."""
    shape = result_shape(group)
    for op in group.body.block.ops:
        if isinstance(op, Matmul) and shape_of(op.res) == shape:
            return op
    return None


def dot_depth(matmul: Matmul) -> int:
    """The length of `matmul`'s dot products (k)."""
    return shape_of(matmul.weight if isinstance(matmul, relay.DenseOp) else matmul.lhs)[-1]


def matmul_block(matmul: Matmul) -> tuple[int, ...] | None:
    """The outputs a work item of `matmul` computes along each result axis, or None for one."""
    shape = shape_of(matmul.res)
    rows = ROW_BLOCK if dot_depth(matmul) >= ROW_BLOCK_MIN_DEPTH else 1
    block = [1] * len(shape)
    for axis, most in ((-1, COLUMN_BLOCK), (-2, rows)):
        if len(shape) >= -axis:
            block[axis] = largest_power_of_two_dividing(shape[axis], most)
    return tuple(block) if any(b > 1 for b in block) else None


def matches(group: relay.FusedOp) -> bool:
    matmul = matmul_anchor(group)
    return matmul is not None and matmul_block(matmul) is not None


def build(emitter: GroupEmitter, group: relay.FusedOp, out: SSAValue) -> scf.ParallelOp:
    matmul = matmul_anchor(group)
    block = matmul_block(matmul) if matmul is not None else None
    assert matmul is not None and block is not None
    root = group_root(group)
    tiles = tuple(extent // b for extent, b in zip(result_shape(group), block))
    loop = loops_epilogue(group)
    return emitter.parallel_nest(tiles, lambda tile: store_block(emitter, matmul, root, tile, out, block, loop))


def loops_epilogue(group: relay.FusedOp) -> bool:
    """Whether the group's epilogue runs in a loop over the block's sums: on cpu, when it
    calls a maths function (EPILOGUE_MATHS), which gcc vectorises in a loop (libmvec) and
    leaves a scalar call per output in straight-line code. A cheap epilogue (bias, relu) stays
    inline: through scratch, dense + bias took 1.4-1.6x the time. PoCL vectorises neither
    (the work item has loops), so a device of work groups (opencl) keeps it inline too."""
    if group.se_scope is None or kind_of(group).work_groups:
        return False
    return any(isinstance(op, EPILOGUE_MATHS) for op in group.body.block.ops)


def store_block(
    e: GroupEmitter,
    op: Matmul,
    root: SSAValue,
    tile: list[SSAValue],
    out: SSAValue,
    block: Sequence[int],
    epilogue_loop: bool,
) -> None:
    """The work item of output block `tile` of a group whose anchor `op` has the shape of
    its result `root`: the outputs tile[a] * block[a] + o[a] for every offset o < block
    (register blocking). Their dot products share one loop over k, one accumulator each,
    so each x[i, k] (and each w[j, k]) is loaded once per block row (column) instead of
    once per output; then `root` is stored at each, reading the anchor from its sum (through
    the scratch block and a loop over it when `epilogue_loop`). A
    consumer reading the anchor at another index (a transpose of a square result)
    recomputes that element with `dot_products`.
    """
    firsts = [e.mul_const(t, b) for t, b in zip(tile, block)]
    offsets = list(itertools.product(*(range(b) for b in block)))
    idxs = [[e.add_const(f, o) for f, o in zip(firsts, offset)] for offset in offsets]
    totals = e.dot_products(op, idxs)
    if not epilogue_loop:
        for idx, total in zip(idxs, totals):
            e.remember(op.res, idx, total)
        for idx in idxs:
            e.store(e.value_at(root, idx), out, idx)
        return
    sums = e.emit(memref.AllocaOp.get(f32, shape=list(block)))
    for offset, total in zip(offsets, totals):
        e.store(total, sums, [e.index(o) for o in offset])

    def epilogue(ivs: list[SSAValue], _: list[SSAValue]) -> list[SSAValue]:
        offset = [e.index(0)] * len(block)
        for axis, iv in zip(blocked, ivs):
            offset[axis] = iv
        idx = [e.add(f, o) for f, o in zip(firsts, offset)]
        e.remember(op.res, idx, e.emit(memref.LoadOp.get(sums, offset)))
        return e.store(e.value_at(root, idx), out, idx)

    blocked = [axis for axis, b in enumerate(block) if b > 1]
    e.loops([block[axis] for axis in blocked], [], epilogue)


SCHEDULE = Schedule("matmul_block", matches, build)
