"""
Schedules: how a fused group's kernel lays out its work items, one module each.

A schedule module holds the test that picks it (`matches(group)`), its tile constants with
the measurements behind them, and its body (`build(emitter, group, out)`: the kernel's one
`scf.parallel` nest storing the group's result into `out`), and ends with

    SCHEDULE = Schedule("conv_rows", matches, build)

A schedule whose work items are few and heavy (the micro-kernels on opencl) marks its nest
`one_group_per_item`: convert-relay-to-loops moves the mark onto the kernel as the unit
attribute `relay.work_group_per_item`, and the kernel is launched in work groups of one work
item, which PoCL spreads over its threads.

A schedule may also `prepare` the group before its kernel is built, rewriting the group's
inputs in @main (packed_matmul_prepacked: a constant weight replaced by its packed form).

convert-relay-to-loops tries its ordered list of schedules on each group, the first that
matches wins (the elementwise nest, which matches every group, last), and writes the
winner's name on the kernel as `relay.schedule`. The scalar meaning of each op at an index
is `scalar_ops.GroupEmitter.value_at`; the index arithmetic and the loops are
`kernel_builder.KernelBuilder`'s. A new schedule is a new module and a line in the pass's list.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from xdsl.dialects import scf
from xdsl.dialects.builtin import UnitAttr
from xdsl.ir import BlockArgument, Operation, SSAValue

from xrelay.dialects import relay
from xrelay.dialects.lowered_graph import WORK_GROUP_PER_ITEM_ATTR
from xrelay.runtime.device_kinds import DeviceKind, device_kind
from xrelay.runtime.machine import Features, target_features
from xrelay.transforms.kernel_builder import shape_of
from xrelay.transforms.scalar_ops import GroupEmitter


def one_group_per_item(nest: scf.ParallelOp, group: relay.FusedOp) -> scf.ParallelOp:
    """Marks `nest`, the work items of an opencl `group`, for launches in work groups of one
    work item each: its work items are heavy (a micro-kernel's blocks), and an OpenCL device
    spreads work groups, not items, over its threads. A cpu group's nest is left as it is (a
    C kernel has no work groups). convert-relay-to-loops moves the mark onto the kernel, where
    targets/c_style.py reads it (`dialects/lowered_graph.py`)."""
    if kind_of(group).work_groups:
        nest.attributes[WORK_GROUP_PER_ITEM_ATTR] = UnitAttr()
    return nest


def kind_of(group: relay.FusedOp) -> DeviceKind:
    """The device kind `group` runs on (its planned scope's)."""
    scope = group.se_scope
    kind = device_kind(scope.device or "") if scope is not None else None
    assert kind is not None, "convert-relay-to-loops runs on planned groups, whose scopes name a device"
    return kind


def features_of(group: relay.FusedOp) -> Features:
    """What the machine `group` runs on can do (its scope's target's features): the vector
    width, registers and caches a schedule sizes its tiles by. A scope without a target is
    its device kind's plain target ("c", "opencl")."""
    scope = group.se_scope
    target = scope.target if scope is not None else None
    return target_features(target if target is not None else kind_of(group).target_kinds[0])


@dataclass(frozen=True)
class Schedule:
    """A way to lay out a group's kernel: its name (shown on the kernel), its test, its body,
    and what it rewrites of the group's inputs first (if anything)."""

    name: str
    matches: Callable[[relay.FusedOp], bool]
    build: Callable[[GroupEmitter, relay.FusedOp, SSAValue], scf.ParallelOp]
    prepare: Callable[[relay.FusedOp], None] | None = None


def group_root(group: relay.FusedOp) -> SSAValue:
    """The value the group yields (its result)."""
    last = group.body.block.last_op
    assert isinstance(last, relay.YieldOp)
    return last.operands[0]


def result_shape(group: relay.FusedOp) -> tuple[int, ...]:
    return shape_of(group.res)


T = TypeVar("T", bound=Operation)


def anchor_of(group: relay.FusedOp, kind: type[T]) -> T | None:
    """The group's first op of `kind` whose result has the group result's shape."""
    shape = result_shape(group)
    for op in group.body.block.ops:
        if isinstance(op, kind) and shape_of(op.results[0]) == shape:
            return op
    return None


def channel_epilogue(group: relay.FusedOp, anchor: SSAValue) -> bool:
    """Whether the group's ops after `anchor` (an NCHW conv's result) are elementwise ops whose
    other operands are the same at every pixel of a channel (a bias, a scalar): then the
    epilogue of a sum does not depend on where in the image it lies, and a schedule may apply
    it to the sums of a channel in one flat loop (at any index of the channel)."""
    after: set[SSAValue] = {anchor}
    for op in group.body.block.ops:
        if isinstance(op, relay.YieldOp) or not any(operand in after for operand in op.operands):
            continue
        if not (along_channels(op) if isinstance(op, relay.BiasAddOp) else pixel_independent(op, after)):
            return False
        after.update(op.results)
    return True


def along_channels(op: relay.BiasAddOp) -> bool:
    return op.axis_value == 1


def pixel_independent(op: Operation, computed: set[SSAValue]) -> bool:
    """An elementwise op whose operands not in `computed` have one element per image (the
    last two axes of size 1, or fewer axes)."""
    if not isinstance(op, relay.UnaryElemwiseOp | relay.BinaryBroadcastOp):
        return False
    return all(v in computed or all(d == 1 for d in (1, 1, *shape_of(v))[-2:]) for v in op.operands)


def is_elementwise(op: Operation) -> bool:
    """An elementwise or broadcast relay op (an epilogue's: bias, relu, a scale)."""
    return isinstance(op, relay.RelayOp) and op.PATTERN <= relay.OpPatternKind.BROADCAST


def from_outside(value: SSAValue) -> bool:
    """A group input or a constant: nothing the group computes."""
    return isinstance(value, BlockArgument) or isinstance(value.owner, relay.ConstantOp)


# The ops that only move data: each output element is one element of the op's one operand.
MOVES = (relay.ReshapeOp, relay.TransposeOp, relay.SqueezeOp, relay.ExpandDimsOp, relay.StridedSliceOp)


def moved_from_outside(value: SSAValue) -> bool:
    """`from_outside`, or moves (MOVES) of a value from outside, each read by nothing else."""
    if from_outside(value):
        return True
    op = value.owner
    return isinstance(op, MOVES) and value.has_one_use() and moved_from_outside(op.operands[0])


def round_up(n: int, multiple: int) -> int:
    return -(-n // multiple) * multiple


def largest_power_of_two_dividing(extent: int, most: int) -> int:
    """The largest power of two up to `most` (itself a power of two) dividing `extent`."""
    size = most
    while extent % size:
        size //= 2
    return size
