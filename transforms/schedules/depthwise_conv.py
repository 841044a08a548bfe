"""
depthwise_conv: a depthwise convolution (one input and one output channel per conv group:
MobileNet's, EfficientNet's, ShuffleNet's, RegNet's 3 x 3 and 5 x 5, ConvNeXt's 7 x 7), of any
stride, dilation and padding, in vectors along the output rows, on cpu and on opencl.

The nest spans (image, channel, block of `Plan.rows` output rows). A work item:

1. packs the input rows its windows read, of its one channel, with the padding as zeros,
   into scratch by column phases: with a stride sw, packed[b][k][t] is the padded input at
   row k of the block's rows, column t * sw + b, for each residue b modulo sw that a tap
   reads (`packed_conv.phases`), so that output column ow at tap j reads phase (j dw) % sw
   at column ow + (j dw) // sw and every load is unit-stride, as at stride 1;
2. for each output row and each chunk of `Plan.vectors` vectors of the target's lanes along
   it (the last chunk ending at the row's end and recomputing a few columns; a row shorter
   than the chunk computes lanes past it, from the packed zeros, and drops them), sums every
   tap, unrolled, in registers: per tap one broadcast of the weight and one FMA per vector
   (`micro_kernel.accumulate` with a tile of one row);
3. stores the chunk's outputs with the group's epilogue, reading the conv from the sums,
   when they are all finite (as packed_conv: 0 x w = 0 on a padded tap is exact unless w is
   NaN or infinite); else computes them output by output (`GroupEmitter.conv2d`, which skips
   the padding), as `xrelay.interpret` does.

packed_conv computed these as a conv with register blocks of one channel and three vectors,
packing every channel of a work item's rows: MobileNetV2's depthwise convs ran at 2-17
GFLOP/s with AVX-512 and 0.7-2.8 with AVX2 (bench/zoo_ops.py, load 4-6).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import f32
from xdsl.ir import SSAValue

from xrelay.dialects import relay
from xrelay.transforms.kernel_builder import shape_of
from xrelay.transforms.scalar_ops import GroupEmitter
from xrelay.transforms.schedules import (
    Schedule,
    anchor_of,
    features_of,
    group_root,
    kind_of,
    one_group_per_item,
    result_shape,
)
from xrelay.transforms.schedules import micro_kernel as mk
from xrelay.transforms.schedules.packed_conv import block_probe, phases

# A chunk: up to VECTORS vectors of one output row, its sums in registers (4 independent
# FMA chains per tap; with AVX2's 16 registers 4 sums, 4 loads and a broadcast fit).
VECTORS = 4
# A work item's rows: the largest divisor of the output height whose packed rows (every
# phase) hold at most PACK_MAX_FLOATS (64 KiB: within L2, far under PoCL's stack).
PACK_MAX_FLOATS = 1 << 14


@dataclass(frozen=True)
class Plan:
    """The shapes of a depthwise conv's work item: its output rows, the packed rows and
    width (of one column phase) they read, the column phases and the chunk's vectors."""

    conv: relay.Conv2DOp
    rows: int
    packed_rows: int
    packed_width: int
    column_phases: tuple[int, ...]
    tile: mk.Tile  # one row of `vectors` vectors of the target's lanes

    @property
    def chunk(self) -> int:
        return self.tile.columns

    @property
    def pack_floats(self) -> int:
        return len(self.column_phases) * self.packed_rows * self.packed_width


def depthwise_anchor(group: relay.FusedOp) -> relay.Conv2DOp | None:
    """The group's conv2d of the result's shape when each conv group is one input and one
    output channel."""
    conv = anchor_of(group, relay.Conv2DOp)
    if conv is None:
        return None
    out_c, in_per_group = shape_of(conv.weight)[:2]
    return conv if in_per_group == 1 and conv.group_count == out_c == shape_of(conv.data)[1] else None


def plan_of(group: relay.FusedOp) -> Plan | None:
    conv = depthwise_anchor(group)
    if conv is None or group.se_scope is None or not kind_of(group).generates_kernels:
        return None
    lanes = features_of(group).vector_floats
    _, _, out_h, out_w = shape_of(conv.res)
    _, _, kh, kw = shape_of(conv.weight)
    (sh, sw), (dh, dw) = conv.stride_values, conv.dilation_values
    vectors = min(VECTORS, math.ceil(out_w / lanes))
    column_phases = phases(kw, dw, sw)
    packed_width = max(out_w, vectors * lanes) + (kw - 1) * dw // sw
    fits = [
        rows
        for rows in range(1, out_h + 1)
        if out_h % rows == 0
        and len(column_phases) * ((rows - 1) * sh + (kh - 1) * dh + 1) * packed_width <= PACK_MAX_FLOATS
    ]
    if not fits:
        return None
    rows = max(fits)
    tile = mk.Tile(rows=1, vectors=vectors, lanes=lanes)
    return Plan(conv, rows, (rows - 1) * sh + (kh - 1) * dh + 1, packed_width, column_phases, tile)


def matches(group: relay.FusedOp) -> bool:
    return plan_of(group) is not None


def build(emitter: GroupEmitter, group: relay.FusedOp, out: SSAValue) -> scf.ParallelOp:
    plan = plan_of(group)
    assert plan is not None
    batch, channels, out_h, _ = result_shape(group)
    root = group_root(group)
    nest = emitter.parallel_nest(
        (batch, channels, out_h // plan.rows), lambda tile: work_item(emitter, plan, root, tile, out)
    )
    return one_group_per_item(nest, group)


def work_item(e: GroupEmitter, plan: Plan, root: SSAValue, tile: list[SSAValue], out: SSAValue) -> None:
    """Output rows tile[2] * rows + r of channel tile[1] of image tile[0]."""
    packed = pack(e, plan, tile)
    out_w = shape_of(plan.conv.res)[3]
    chunks = math.ceil(out_w / plan.chunk)
    e.loops([plan.rows, chunks], [], lambda ivs, _: chunk(e, plan, root, tile, packed, ivs, out))


def pack(e: GroupEmitter, plan: Plan, tile: list[SSAValue]) -> SSAValue:
    """The packed rows of the work item's channel (see the module docstring), zeros where
    they are padding."""
    op = plan.conv
    n, c, block = tile
    _, _, height, width = shape_of(op.data)
    top, left = op.padding_values[0], op.padding_values[1]
    sh, sw = op.stride_values
    packed = e.emit(memref.AllocaOp.get(f32, shape=[plan.pack_floats]))
    e.loops([plan.pack_floats], [], lambda ivs, _: e.store(e.f32(0.0), packed, ivs))
    row0 = e.add_const(e.mul_const(block, plan.rows * sh), -top)  # the input row of packed row 0
    rows = e.window_range(row0, 1, height, plan.packed_rows)
    for b, p in enumerate(plan.column_phases):
        first = (p - left) % sw  # the first input column of phase p
        offset = (first + left - p) // sw  # its packed column
        count = min(math.ceil((width - first) / sw), plan.packed_width - offset)
        if count <= 0:
            continue

        def copy(
            ivs: list[SSAValue], _: list[SSAValue], b: int = b, first: int = first, offset: int = offset
        ) -> list[SSAValue]:
            k, t = ivs
            at = e.add(e.mul_const(e.add_const(k, b * plan.packed_rows), plan.packed_width), e.add_const(t, offset))
            value = e.value_at(op.data, [n, c, e.add(row0, k), e.add_const(e.mul_const(t, sw), first)])
            return e.store(value, packed, [at])

        e.loops([rows, count], [], copy)
    return packed


def chunk(
    e: GroupEmitter,
    plan: Plan,
    root: SSAValue,
    tile: list[SSAValue],
    packed: SSAValue,
    ivs: list[SSAValue],
    out: SSAValue,
) -> list[SSAValue]:
    """The outputs of row ivs[0] of the work item at the vectors of chunk ivs[1]."""
    op = plan.conv
    n, c, block = tile
    r, index = ivs
    _, _, kh, kw = shape_of(op.weight)
    out_w = shape_of(op.res)[3]
    sh, dh = op.stride_values[0], op.dilation_values[0]
    start = e.min_index(e.mul_const(index, plan.chunk), e.index(max(out_w - plan.chunk, 0)))
    sums = mk.zeros(e, plan.tile)
    for i in range(kh):
        for j in range(kw):
            sums = one_tap(e, plan, (c, i, j), e.add_const(e.mul_const(r, sh), i * dh), start, packed, sums)
    acc = e.emit(memref.AllocaOp.get(f32, shape=[plan.chunk]))
    mk.store_block(e, plan.tile, sums, acc, lambda _, v: [e.index(v * plan.tile.lanes)])
    finite = e.emit(arith.CmpfOp(block_probe(e, sums, plan.tile.lanes), e.f32(0.0), "oeq"))
    oh = e.add(e.mul_const(block, plan.rows), r)
    columns = (start, e.min_index(e.add_const(start, plan.chunk), e.index(out_w)))

    def store(from_sums: bool) -> list[SSAValue]:
        def output(ws: list[SSAValue], _: list[SSAValue]) -> list[SSAValue]:
            idx = [n, c, oh, ws[0]]
            if from_sums:
                e.remember(op.res, idx, e.emit(memref.LoadOp.get(acc, [e.sub(ws[0], start)])))
            return e.store(e.value_at(root, idx), out, idx)

        return e.loops([columns], [], output)

    e.if_else(finite, [], lambda: store(True), lambda: store(False))
    return []


def one_tap(
    e: GroupEmitter,
    plan: Plan,
    tap: tuple[SSAValue, int, int],
    row: SSAValue,
    start: SSAValue,
    packed: SSAValue,
    sums: list[SSAValue],
) -> list[SSAValue]:
    """`sums` plus tap (channel c, window row i, column j) of the chunk's outputs from column
    `start`, whose window row i is packed row `row`: the weight times the packed input."""
    c, i, j = tap
    sw, dw = plan.conv.stride_values[1], plan.conv.dilation_values[1]
    b = plan.column_phases.index(j * dw % sw)
    line = e.mul_const(e.add_const(row, b * plan.packed_rows), plan.packed_width)
    base = e.add(line, e.add_const(start, j * dw // sw))
    weight = e.value_at(plan.conv.weight, [c, e.index(0), e.index(i), e.index(j)])
    lanes = plan.tile.lanes
    return mk.accumulate(
        e,
        plan.tile,
        [],
        sums,
        lambda _, __: weight,
        lambda _, v: mk.load(e, packed, [e.add_const(base, v * lanes)], lanes),
    )


SCHEDULE = Schedule("depthwise_conv", matches, build)
