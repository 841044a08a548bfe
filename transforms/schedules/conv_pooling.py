"""
conv_pooling: a conv2d group that ends in a max_pool2d (made by fuse-conv-pool), for a
schedule that pools in its stores (winograd_conv).

`pooling_of(group)` finds the pool (`Pooling`): square windows at their own size as stride,
no padding or dilation, over a value of the conv's shape, the pool's result the group's or
what its last ops (a relu, say) compute from; an odd last row or column of the conv's result
is dropped. A schedule that has a window's conv outputs at hand (in a scratch
block, or in registers) hands them over with `remember_pooled`, which gives the pooled value
for `GroupEmitter.value_at` to find (or, having taken their max itself, hands that over with
`remember_peak`):

- where every op from the conv to the pool is non-decreasing in the conv's value and reads
  nothing else that varies within a window (`Pooling.before_epilogue`: bias, relu, clip,
  adds of one value per channel), the epilogue of the window's largest conv output, exact
  since max(f(a), f(b)) = f(max(a, b)) for f non-decreasing (and a NaN stays a NaN through
  each of those ops): the epilogue once per window, not once per tap; where those ops read
  nothing that varies along the batch either (`Pooling.per_channel`), a schedule may compute
  them with the max, at any index of the channel;
- else the epilogue at every tap, then their max.

The max is `arith.maximumf` (a NaN wins, as `xrelay.interpret`'s np.max lets it), or where
the schedule knows the conv outputs finite, a compare and a select.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import arith
from xdsl.ir import SSAValue

from xrelay.dialects import relay
from xrelay.transforms.kernel_builder import shape_of
from xrelay.transforms.scalar_ops import GroupEmitter
from xrelay.transforms.schedules import anchor_of, from_outside


@dataclass(frozen=True)
class Pooling:
    """The max_pool2d a group yields over its conv's epilogue (a group of fuse-conv-pool):
    size x size windows at stride size, without padding, so that each conv output is in one
    window at most."""

    op: relay.MaxPool2DOp
    conv: relay.Conv2DOp
    size: int

    @property
    def before_epilogue(self) -> bool:
        """Whether every op from the conv to the pool is non-decreasing in the conv's value
        and reads nothing else that varies within a window (`window_step`): then the pooled
        value is the epilogue of the window's largest conv output, exactly (for f
        non-decreasing, max(f(a), f(b)) = f(max(a, b))), and the epilogue is computed once
        per window instead of once per tap."""
        value = self.op.data
        while value != self.conv.res:
            step = window_step(value.owner) if isinstance(value.owner, relay.RelayOp) else None
            if step is None:
                return False
            value = step
        return True

    @property
    def per_channel(self) -> bool:
        """Whether, besides `before_epilogue`, every op from the conv to the pool reads
        nothing else that varies along the batch either (a bias, a constant): the pool's
        input at a window's largest conv output is then a function of that output and the
        channel alone, which a schedule may compute at any index of the channel."""
        if not self.before_epilogue:
            return False
        value = self.op.data
        while value != self.conv.res:
            op = value.owner
            assert isinstance(op, relay.RelayOp)
            step = window_step(op)
            others = [v for v in op.operands if v is not step]
            if any(len(shape_of(v)) == 4 and shape_of(v)[0] != 1 for v in others):
                return False
            assert step is not None
            value = step
        return True


def window_step(op: relay.RelayOp) -> SSAValue | None:
    """The operand of `op` that carries the conv's value, if `op` is non-decreasing in it and
    its other operand is one value per window (a group input or a constant of size 1 along
    H and W): relu, clip, bias_add along channels, add, maximum and minimum (either operand),
    subtract (of the conv's value)."""
    if isinstance(op, (relay.ReluOp, relay.ClipOp)):
        return op.operands[0]
    if isinstance(op, relay.BiasAddOp):  # one value per channel
        return op.data if op.axis_value == 1 and from_outside(op.bias) else None
    pairs = ((op.operands[0], op.operands[1]), (op.operands[1], op.operands[0]))
    if isinstance(op, relay.SubtractOp):
        pairs = pairs[:1]
    elif not isinstance(op, (relay.AddOp, relay.MaximumOp, relay.MinimumOp)):
        return None
    return next((value for value, other in pairs if uniform_in_window(other)), None)


def uniform_in_window(value: SSAValue) -> bool:
    """A group input or a constant that broadcasts along H and W (size 1 there, or absent)."""
    return from_outside(value) and all(d == 1 for d in shape_of(value)[-2:])


def pooling_of(group: relay.FusedOp) -> Pooling | None:
    """The group's pooling, when its anchor is a max_pool2d (of the result's shape; ops after
    it compute the result from it, a relu say) of square windows at their own size as
    stride, without padding or dilation, over a value of one of its conv2d's shape; the last
    row and column of an odd size are dropped (no `ceil_mode` window)."""
    pool = anchor_of(group, relay.MaxPool2DOp)
    if pool is None:
        return None
    size = pool.window[0]
    if pool.window != (size, size) or pool.stride_values != pool.window or pool.dilation_values != (1, 1):
        return None
    height, width = shape_of(pool.data)[2:]
    if any(pool.padding_values) or shape_of(pool.res)[2:] != (height // size, width // size):
        return None
    convs = (op for op in group.body.block.ops if isinstance(op, relay.Conv2DOp))
    conv = next((op for op in convs if shape_of(op.res) == shape_of(pool.data)), None)
    return Pooling(pool, conv, size) if conv is not None else None


def remember_pooled(
    e: GroupEmitter, pool: Pooling, idx: list[SSAValue], taps: list[tuple[list[SSAValue], SSAValue]], finite: bool
) -> None:
    """Makes the pool's value at `idx` known, from the conv outputs of its window (`taps`:
    each one's index and value, row by row; `finite`: the schedule knows them finite)."""
    values = [value for _, value in taps]
    if pool.before_epilogue:
        peak = finite_maximum(e, values) if finite else maximum(e, values)
        remember_peak(e, pool, idx, taps[0][0], peak)
        return
    for tap, value in taps:
        e.remember(pool.conv.res, tap, value)
    e.remember(pool.op.res, idx, maximum(e, [e.value_at(pool.op.data, tap) for tap, _ in taps]))


def remember_peak(e: GroupEmitter, pool: Pooling, idx: list[SSAValue], tap: list[SSAValue], peak: SSAValue) -> None:
    """Makes the pool's value at `idx` known from `peak`, the largest conv output of its
    window (`tap`: the index of the window's first), where `Pooling.before_epilogue`: the
    first tap's conv output stands for the window's largest (only the pool reads it), and the
    epilogue up to the pool is computed once, from it."""
    assert pool.before_epilogue
    e.remember(pool.conv.res, tap, peak)
    e.remember(pool.op.res, idx, e.value_at(pool.op.data, tap))


def finite_maximum(e: GroupEmitter, values: list[SSAValue]) -> SSAValue:
    """The largest of finite `values`: a compare and a select each (no NaN to let win)."""
    peak = values[0]
    for value in values[1:]:
        larger = e.emit(arith.CmpfOp(value, peak, "ogt"))
        peak = e.emit(arith.SelectOp(larger, value, peak))
    return peak


def maximum(e: GroupEmitter, values: list[SSAValue]) -> SSAValue:
    """The largest of `values`, left to right, a NaN winning (`arith.maximumf`)."""
    peak = values[0]
    for value in values[1:]:
        peak = e.emit(arith.MaximumfOp(peak, value))
    return peak
