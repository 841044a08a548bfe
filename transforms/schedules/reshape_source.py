"""
reshape_source: a group whose result is a reshape that only merges axes, a work item per
element of the reshape's input.

The parallel nest spans the reshape's input shape; each work item stores the input's value
at the output position it linearises to, group of axes by group (`scalar_ops.reshape_groups`:
a merge is one output axis, so its index is a sum of products). Nested over the output, each
element would divide its merged index back into the input's axes: the transformer's merged
heads (`[4, 128, 64] -> transpose(1, 0, 2) -> [128, 256]`) read `in[j / 64, i, j % 64]`,
which gcc leaves scalar; over the input's axes the innermost loop is unit-stride on both
sides. The elements are stored in the same order either way.
"""

from __future__ import annotations

import math

from xdsl.dialects import scf
from xdsl.ir import SSAValue

from xrelay.dialects import relay
from xrelay.transforms.kernel_builder import shape_of
from xrelay.transforms.scalar_ops import GroupEmitter, reshape_groups
from xrelay.transforms.schedules import Schedule, group_root


def merging_reshape(group: relay.FusedOp) -> relay.ReshapeOp | None:
    """The group's result, if it is a reshape that merges axes and splits none: each group
    of its output axes has at most one axis longer than 1, and some group of input axes has
    two."""
    op = group_root(group).owner
    if not isinstance(op, relay.ReshapeOp):
        return None
    src, dst = shape_of(op.data), shape_of(op.res)
    if math.prod(src) == 0:
        return None
    groups = reshape_groups(src, dst)
    splits = any(longer_than_one(dst[d0:d1]) > 1 for _, (d0, d1) in groups)
    merges = any(longer_than_one(src[s0:s1]) > 1 for (s0, s1), _ in groups)
    return op if merges and not splits else None


def longer_than_one(extents: tuple[int, ...]) -> int:
    return sum(1 for extent in extents if extent != 1)


def matches(group: relay.FusedOp) -> bool:
    return merging_reshape(group) is not None


def build(emitter: GroupEmitter, group: relay.FusedOp, out: SSAValue) -> scf.ParallelOp:
    op = merging_reshape(group)
    assert op is not None
    src, dst = shape_of(op.data), shape_of(op.res)
    groups = reshape_groups(src, dst)

    def store(idx: list[SSAValue]) -> None:
        out_idx: list[SSAValue] = []
        for (s0, s1), (d0, d1) in groups:
            out_idx += emitter.delinearize(emitter.linearize(idx[s0:s1], src[s0:s1]), dst[d0:d1])
        emitter.store(emitter.value_at(op.data, idx), out, out_idx)

    return emitter.parallel_nest(src, store)


SCHEDULE = Schedule("reshape_source", matches, build)
