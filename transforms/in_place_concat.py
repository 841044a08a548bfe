"""
In-place concatenations: the producers of a concatenation's inputs write straight into its
result, and the concatenation costs nothing at run time.

A group that only concatenates its inputs is a copy kernel (`schedules/concat_slices.py`, or the
elementwise schedule): SqueezeNet's fire modules, `concat(relu(conv1x1(s)), relu(conv3x3(s)))`
along the channels, pay one per module. As TVM's and XLA's memory planners do, when every axis
before the concatenation's has extent 1 (NCHW at batch 1 along the channels), each input is one
contiguous byte range of the result, so it can be *stored* there: its producer's kernel writes
its slice, and the concatenation has nothing left to do.

convert-relay-to-loops marks the launch of a group that is one `relay.concatenate` of its
inputs, each once and in order (`concat_only_axis`), with `relay.concat_axis = N`. plan-memory
asks `in_place_slices` which inputs to store in a slice of a concatenation's storage, at which
byte offset. A marked launch is planned in place when all of these hold:

- the result is contiguous per input: every axis before the concatenation's has extent 1;
- its scope's device kind takes a tensor at an offset in a buffer, and each input's offset is
  a multiple of the kind's `offset_alignment` (`runtime/device_kinds.py`: OpenCL sub-buffers);
- each input is the result of a kernel launch (not a parameter, constant, copy, or an alias:
  a reshape-only launch or another in-place concatenation), on the concatenation's scope, not
  returned (a returned tensor has a storage of its own), passed to it once, and not an input
  of another in-place concatenation (a tensor has one place).

Otherwise it stays a copy kernel. Other readers of an input (a pool reading one of the convs)
read its slice. The graph JSON then makes the launch a `__nop` node (`is_in_place_concat`).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerAttr, TensorType, i64
from xdsl.ir import Attribute, SSAValue

from xrelay.dialects import relay
from xrelay.dialects.lowered_graph import (
    CONCAT_AXIS_ATTR,
    concat_axis,
    is_reshape_only_launch,
    nbytes,
    scope_of,
)
from xrelay.runtime.device_kinds import device_kind


def concat_only_axis(group: relay.FusedOp) -> int | None:
    """The axis of a group that is one concatenate of its inputs, each once and in order."""
    ops = [op for op in group.body.block.ops if not isinstance(op, relay.YieldOp)]
    if len(ops) != 1 or not isinstance(ops[0], relay.ConcatenateOp):
        return None
    if list(ops[0].inputs) != list(group.body.block.args) or ops[0].res.uses.get_length() != 1:
        return None
    return ops[0].axis_value


def mark(launch: relay.LaunchOp, axis: int) -> None:
    """Marks the launch of a concatenate-only group with its axis."""
    launch.attributes[CONCAT_AXIS_ATTR] = IntegerAttr(axis, i64)


@dataclass(frozen=True)
class Slice:
    """Where an input of an in-place concatenation is stored: in `concat`'s storage, at `offset`."""

    concat: SSAValue
    offset: int


def in_place_slices(main: func.FuncOp) -> dict[SSAValue, Slice]:
    """The inputs of @main's concatenations that are planned in place, and their slices."""
    ret = main.body.block.last_op
    returned = set(ret.operands) if isinstance(ret, func.ReturnOp) else set[SSAValue]()
    slices: dict[SSAValue, Slice] = {}
    for op in main.body.block.ops:
        if concat_axis(op) is None:
            continue
        assert isinstance(op, relay.LaunchOp)
        offsets = _offsets(op)
        if offsets is not None and all(_may_be_stored_in(v, op, slices, returned) for v in op.inputs):
            slices.update({v: Slice(op.res, offset) for v, offset in zip(op.inputs, offsets)})
    return slices


def _offsets(op: relay.LaunchOp) -> list[int] | None:
    """The byte offset of each input in the result, where each is one aligned byte range of it."""
    axis, shape = concat_axis(op), _shape(op.res.type)
    kind = device_kind(scope_of(op.res).device or "")
    if axis is None or any(extent != 1 for extent in shape[:axis]) or kind is None:
        return None
    offsets = [0]
    for value in op.inputs:
        offsets.append(offsets[-1] + nbytes(value.type))
    if offsets[-1] != nbytes(op.res.type) or kind.offset_alignment is None:
        return None
    return offsets[:-1] if all(o % kind.offset_alignment == 0 for o in offsets[:-1]) else None


def _may_be_stored_in(
    value: SSAValue, op: relay.LaunchOp, slices: dict[SSAValue, Slice], returned: set[SSAValue]
) -> bool:
    producer = value.owner
    if not isinstance(producer, relay.LaunchOp) or is_reshape_only_launch(producer):
        return False
    chosen = {s.concat for s in slices.values()}
    if value in chosen or value in slices or value in returned or list(op.inputs).count(value) != 1:
        return False
    return scope_of(value) == scope_of(op.res)


def _shape(ty: Attribute) -> tuple[int, ...]:
    assert isinstance(ty, TensorType)
    return tuple(ty.get_shape())  # pyright: ignore[reportUnknownArgumentType, reportUnknownMemberType]
