"""
concat_slices: a group whose result is a concatenate followed by elementwise ops (DenseNet's
concat -> batch norm -> relu before each 1 x 1 conv), one input's slice at a time.

The elementwise schedule picks a concatenate's input per element (`GroupEmitter.concat_value`:
an `scf.if` chain as deep as the inputs), so its loops neither vectorise nor hoist the chain:
DenseNet-121's 58 concat kernels (up to 25 inputs) took 24% of its run (11.4 of 47 ms,
`exe.profile()`, AVX-512, 1 thread). Here a work item is one index of the result's axes up to
and including the concatenation axis (an image's channel, for NCHW at axis 1); it picks the
input holding its index once, by a binary tree of `scf.if` on that axis (depth log2 of the
inputs), and in that branch runs a plain loop nest over the axes after it: the concatenate at
each index is that input's element (`GroupEmitter.remember`), and the group's result is
stored there, with the epilogue (bias, scale, relu, ...) computed from it.

It takes a group (on any device kind with kernels) whose concatenate has the result's shape,
joins along an axis before the last, and is read only by elementwise or broadcast ops of the
result's shape (each reading it at the output's index), with at least MIN_INNER elements per
work item.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable

from xdsl.dialects import scf
from xdsl.ir import SSAValue

from xrelay.dialects import relay
from xrelay.transforms.kernel_builder import shape_of
from xrelay.transforms.scalar_ops import GroupEmitter, reshape_groups
from xrelay.transforms.schedules import (
    Schedule,
    anchor_of,
    group_root,
    is_elementwise,
    kind_of,
    result_shape,
)

# The elements of a work item (the axes after the concatenation axis) below which picking
# the input per work item saves too little over picking it per element (the elementwise
# schedule): a concatenation along the last axis, or of rows shorter than a vector.
MIN_INNER = 8
# The most phases a row's loop unrolls (`interleave_factor`): a 2x or 4x upsampling's.
MAX_PHASES = 4


def concat_of(group: relay.FusedOp) -> relay.ConcatenateOp | None:
    """The group's concatenate of the result's shape that this schedule takes, or None."""
    concat = anchor_of(group, relay.ConcatenateOp)
    if concat is None or group.se_scope is None or not kind_of(group).generates_kernels:
        return None
    shape = result_shape(group)
    axis = concat.axis_value
    if axis >= len(shape) - 1 or math.prod(shape[axis + 1 :]) < MIN_INNER:
        return None
    return concat if read_at_its_index(concat.res, shape) else None


def read_at_its_index(value: SSAValue, shape: tuple[int, ...]) -> bool:
    """Whether every op reading `value`, and every op reading those in turn, is elementwise
    or broadcast of result shape `shape`: each reads `value` at the output's index."""
    for use in value.uses:
        op = use.operation
        if isinstance(op, relay.YieldOp):
            continue
        if not is_elementwise(op) or shape_of(op.results[0]) != shape:
            return False
        if not read_at_its_index(op.results[0], shape):
            return False
    return True


def matches(group: relay.FusedOp) -> bool:
    return concat_of(group) is not None


def build(emitter: GroupEmitter, group: relay.FusedOp, out: SSAValue) -> scf.ParallelOp:
    concat = concat_of(group)
    assert concat is not None
    shape, axis = result_shape(group), concat.axis_value
    inputs = list(concat.inputs)
    starts = [0]
    for x in inputs:
        starts.append(starts[-1] + shape_of(x)[axis])
    slices = [(x, start) for x, start in zip(inputs, starts) if shape_of(x)[axis] > 0]
    root = group_root(group)

    def work_item(idx: list[SSAValue]) -> None:
        pick(emitter, concat, slices, idx, lambda x, start: store_slice(emitter, (concat, root, out), x, start, idx))

    return emitter.parallel_nest(shape[: axis + 1], work_item)


def pick(
    e: GroupEmitter,
    concat: relay.ConcatenateOp,
    slices: list[tuple[SSAValue, int]],
    idx: list[SSAValue],
    leaf: Callable[[SSAValue, int], None],
) -> list[SSAValue]:
    """Runs `leaf(input, start)` for the input among `slices` (input, first index along the
    axis) that holds `idx`, found by a binary tree of `scf.if` on the axis' index."""
    if len(slices) == 1:
        leaf(*slices[0])
        return []
    half = len(slices) // 2
    below = e.compare("slt", idx[concat.axis_value], e.index(slices[half][1]))
    e.if_else(
        below, [], lambda: pick(e, concat, slices[:half], idx, leaf), lambda: pick(e, concat, slices[half:], idx, leaf)
    )
    return []


def store_slice(
    e: GroupEmitter,
    group_values: tuple[relay.ConcatenateOp, SSAValue, SSAValue],
    x: SSAValue,
    start: int,
    outer: list[SSAValue],
) -> None:
    """The result at every index below `outer` (the work item's index up to the axis), where
    the concatenate is input `x`'s element at the axis' index minus `start`."""
    concat, root, out = group_values
    axis = concat.axis_value
    inner = list(shape_of(concat.res)[axis + 1 :])
    at_x = [*outer[:axis], e.add_const(outer[axis], -start)]

    def element(ivs: list[SSAValue], _: list[SSAValue]) -> list[SSAValue]:
        idx = [*outer, *ivs]
        e.remember(concat.res, idx, e.value_at(x, [*at_x, *ivs]))
        return e.store(e.value_at(root, idx), out, idx)

    factors = interleave_factors(concat, inner)

    def phases(ivs: list[SSAValue], _: list[SSAValue]) -> list[SSAValue]:
        for phase in itertools.product(*(range(f) for f in factors)):
            element([e.phase_index(i, f, p) if f > 1 else i for i, f, p in zip(ivs, factors, phase)], [])
        return []

    e.loops([extent // f for extent, f in zip(inner, factors)], [], phases)


def interleave_factors(concat: relay.ConcatenateOp, inner: list[int]) -> list[int]:
    """The phases to unroll each of the `inner` axes (those after the concatenation axis) by
    (`KernelBuilder.phase_index`): per axis, the largest factor, dividing its extent and of at
    most MAX_PHASES phases in all, of the reshapes in the concatenate's group that merge input
    axes, the last of `factor` elements, into that axis of their result of the concatenate's
    rank (an interleave: Resize's linear phases, nearest's repeats), whose index division then
    folds; 1 where there is none."""
    rank, block = len(shape_of(concat.res)), concat.parent_block()
    first = rank - len(inner)
    found: list[set[int]] = [{1} for _ in inner]
    for op in block.ops if block is not None else ():
        if not isinstance(op, relay.ReshapeOp) or len(shape_of(op.res)) != rank:
            continue
        src, dst = shape_of(op.data), shape_of(op.res)
        for (s0, s1), (d0, d1) in reshape_groups(src, dst):
            if d1 - d0 == 1 and s1 - s0 > 1 and d0 >= first and dst[d0] == inner[d0 - first]:
                found[d0 - first].add(math.prod(src[s0 + 1 : s1]))
    factors: list[int] = []
    for extent, options in reversed(list(zip(inner, found))):  # the innermost axes first
        budget = MAX_PHASES // math.prod(factors)
        factors.append(max(f for f in options if f <= budget and extent % f == 0))
    return factors[::-1]


SCHEDULE = Schedule("concat_slices", matches, build)
