"""
conv_vectors: an OpenCL work item per output row of a block of output channels, its sums in
vector registers, for a group whose anchor is a conv2d of the result's shape with unit
stride across. packed_conv, earlier in the pass's list, takes the stride-1 convs with enough
work on opencl too (0.45-0.6x this schedule's time at the shapes below); this one keeps the
others (strided down, few pixels or little work).

PoCL vectorises across the work items of a work group only when their code has no inner
loop, which a convolution's work item has; so this schedule writes the vectors itself, as a
CPU micro-kernel would. The parallel nest spans (n, output channel block, output row), as in
conv_rows. A work item holds the sums of its CHANNELS output rows in `vector<LANESxf32>`
values, ceil(width / LANES) per row, carried through the loops over input channels and
window rows (`scf.for` iter_args):

    row = zeros                                   (a private scratch row: `memref.alloca`)
    for c, for i in <the window rows inside the input>:
        row[left:left + width] = data[n, c, ih, :]
        for j:                                    (unrolled)
            x[r] = vector.load row[r * LANES + j * dw]          for each vector r of the row
            for o:                                (unrolled)
                w = broadcast(weight[o_b, c, i, j])             (0 in padded lanes: below)
                acc[o][r] = fma(x[r], w, acc[o][r])
    vector.store acc[o][r] -> sums[o, r * LANES]; then the group's result at each output,
    reading the conv from `sums` (its epilogue, as conv_rows does)

Padding is never read: where tap j falls on a padded column for some lanes of vector r,
its weight vector has 0 in those lanes (`vector.insert`s into the broadcast, printed as one
constructor `(float8)(0.0f, w, ...)`), which meet the row's padding zeros: 0 x 0 adds
nothing, where a NaN or inf weight would have made 0 x NaN = NaN. Padded rows are skipped
by the loop bounds. Lanes past the row's width compute on zeros and are never stored.

CHANNELS is the largest power of two up to MAX_CHANNELS that divides the output channels
of a conv group, with CHANNELS x vectors per row at most the device's vector registers (the
sums stay in registers: `Plan.accumulators`). LANES is the device's vector width, at most
MAX_LANES.

Measured against conv_rows on PoCL and the C kernel of the same group (bench/opencl_kernels.py
and bench/kernels.py's shapes; C on 1 thread, PoCL with POCL_MAX_PTHREAD_COUNT=1, medians of
15 interleaved rounds on a machine loaded 5-20 deep, so +-30%): conv2d 3x3 pad 1,
1x64x14x14 -> 64: conv_rows 0.8, this 9-24, C 15 GFLOP/s; 1x32x28x28 -> 32: 2-4, 40-47,
C 26-31; 8x16x28x28 -> 32 (the CNN's): 3, 11-22, C 30; 1x64x56x56 -> 64: 5.4-5.8, 8-10,
C 11-13. LANES 16, or ACCUMULATORS 16 or 24, were no faster.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import memref, scf, vector
from xdsl.dialects.builtin import DenseArrayBase, VectorType, f32, i64
from xdsl.ir import SSAValue

from xrelay.dialects import relay
from xrelay.runtime.machine import Features
from xrelay.transforms.kernel_builder import shape_of
from xrelay.transforms.scalar_ops import GroupEmitter
from xrelay.transforms.schedules import Schedule, anchor_of, features_of, group_root, kind_of, result_shape

# At most this many lanes a vector (the device's own width when narrower): a vector<8xf32>
# per 8 output columns (16: 0.8-1.0x the speed at 14, 28, 56 wide on PoCL, which reports 16).
MAX_LANES = 8
MAX_CHANNELS = 8  # output channels per work item: each loaded row vector feeds that many fmas


@dataclass(frozen=True)
class Plan:
    """A work item's vectors: `lanes` floats each, at most `accumulators` sum vectors."""

    lanes: int
    accumulators: int  # the device's vector registers (24 or 16 of 32 were no faster)


def plan_of(features: Features) -> Plan:
    return Plan(min(MAX_LANES, features.vector_floats), features.vector_registers)


def conv_anchor(group: relay.FusedOp) -> relay.Conv2DOp | None:
    """The group's conv2d of the result's shape, on a device whose compiler vectorises across
    work items, not a work item's loops (`explicit_vectors`: OpenCL), of unit stride across."""
    if group.se_scope is None or not kind_of(group).explicit_vectors:
        return None
    conv = anchor_of(group, relay.Conv2DOp)
    return conv if conv is not None and conv.stride_values[1] == 1 else None


def matches(group: relay.FusedOp) -> bool:
    return conv_anchor(group) is not None


def vectors_per_row(conv: relay.Conv2DOp, plan: Plan) -> int:
    return -(-shape_of(conv.res)[3] // plan.lanes)


def channel_block(conv: relay.Conv2DOp, plan: Plan) -> int:
    """How many output channels a work item computes (a power of two dividing a conv
    group's output channels, within MAX_CHANNELS and the plan's accumulators)."""
    per_group = shape_of(conv.res)[1] // conv.group_count
    block = MAX_CHANNELS
    while block > 1 and (per_group % block or block * vectors_per_row(conv, plan) > plan.accumulators):
        block //= 2
    return block


def build(emitter: GroupEmitter, group: relay.FusedOp, out: SSAValue) -> scf.ParallelOp:
    conv = conv_anchor(group)
    assert conv is not None
    plan = plan_of(features_of(group))
    root, shape, block = group_root(group), result_shape(group), channel_block(conv, plan)
    rows = (shape[0], shape[1] // block, shape[2])
    return emitter.parallel_nest(rows, lambda row: store_rows(emitter, conv, plan, root, row, out, block))


def padding_mask(j: int, r: int, conv: relay.Conv2DOp, lanes: int) -> list[bool] | None:
    """For tap j and row vector r, which lanes read a padded column (True), or None when no
    lane of an output column does."""
    _, _, _, width = shape_of(conv.data)
    out_w = shape_of(conv.res)[3]
    dw, left = conv.dilation_values[1], conv.padding_values[1]
    columns = [r * lanes + lane for lane in range(lanes)]
    mask = [ow < out_w and not 0 <= ow + j * dw - left < width for ow in columns]
    return mask if any(mask) else None


def store_rows(
    e: GroupEmitter, op: relay.Conv2DOp, plan: Plan, root: SSAValue, row: list[SSAValue], out: SSAValue, block: int
) -> None:
    """The work item of output rows `row` = (n, ob, oh): see the module's docstring."""
    n, ob, oh = row
    _, _, height, width = shape_of(op.data)
    _, in_c, kh, kw = shape_of(op.weight)
    sh, (dh, dw) = op.stride_values[0], op.dilation_values
    top, left, _, _ = op.padding_values
    out_w = shape_of(op.res)[3]
    count, lane_count = vectors_per_row(op, plan), plan.lanes
    padded_w = count * lane_count + (kw - 1) * dw  # every lane's taps
    copied = max(0, min(width, padded_w - left))
    lanes = VectorType(f32, [lane_count])
    scratch = e.emit(memref.AllocaOp.get(f32, shape=[padded_w]))
    zero = e.f32(0.0)
    e.loops([padded_w], [], lambda qs, _: e.store(zero, scratch, qs))
    first_o = e.mul_const(ob, block)
    channel_base = e.conv_channel_base(op, first_o)
    row0 = e.add_const(e.mul_const(oh, sh), -top)
    masks = {
        (j, r): mask
        for j in range(kw)
        for r in range(count)
        if (mask := padding_mask(j, r, op, lane_count)) is not None
    }
    zeros = e.emit(vector.BroadcastOp(zero, lanes))

    def weight_lanes(weight: SSAValue, mask: list[bool] | None) -> SSAValue:
        """The weight in every lane, but 0 in the lanes of `mask`."""
        w = e.emit(vector.BroadcastOp(weight, lanes))
        for lane, padded in enumerate(mask or []):
            if padded:
                insert = vector.InsertOp.create(
                    operands=[zero, w],
                    result_types=[lanes],
                    properties={"static_position": DenseArrayBase.from_list(i64, [lane])},
                )
                w = e.emit(insert)
        return w

    def window_row(ivs: list[SSAValue], accs: list[SSAValue]) -> list[SSAValue]:
        c, i = ivs
        ih = e.add(row0, e.mul_const(i, dh))
        channel = e.add(channel_base, c)
        e.loops(
            [copied], [],
            lambda qs, _: e.store(e.value_at(op.data, [n, channel, ih, qs[0]]), scratch, [e.add_const(qs[0], left)]),
        )  # fmt: skip
        sums = list(accs)
        for j in range(kw):
            xs = [e.emit(vector.LoadOp(scratch, [e.index(r * lane_count + j * dw)], lanes)) for r in range(count)]
            for o in range(block):
                weight = e.value_at(op.weight, [e.add_const(first_o, o), c, i, e.index(j)])
                for r, x in enumerate(xs):
                    w = weight_lanes(weight, masks.get((j, r)))  # (memoised across r by cse)
                    sums[o * count + r] = e.emit(vector.FMAOp(x, w, sums[o * count + r]))
        return sums

    def channel(cs: list[SSAValue], accs: list[SSAValue]) -> list[SSAValue]:
        return e.loops([e.window_range(row0, dh, height, kh)], accs, lambda ivs, a: window_row([cs[0], ivs[0]], a))

    totals = e.loops([in_c], [zeros] * (block * count), channel)
    sums = e.emit(memref.AllocaOp.get(f32, shape=[block, count * lane_count]))
    for o in range(block):
        for r in range(count):
            e.builder.insert(vector.StoreOp(totals[o * count + r], sums, [e.index(o), e.index(r * lane_count)]))

    def store(ivs: list[SSAValue], _: list[SSAValue]) -> list[SSAValue]:
        b, ow = ivs
        idx = [n, e.add(first_o, b), oh, ow]
        e.remember(op.res, idx, e.emit(memref.LoadOp.get(sums, [b, ow])))
        return e.store(e.value_at(root, idx), out, idx)

    e.loops([block, out_w], [], store)


SCHEDULE = Schedule("conv_vectors", matches, build)
