"""
Reshape-only groups: a `relay.fused` whose ops only reshape costs nothing at run time.

Tensors are stored row-major, so `relay.reshape`, `relay.squeeze` and `relay.expand_dims`
never move data: their result is their operand's buffer read with another shape. As in TVM
(a fused function of reshapes only is marked reshape-only, the graph codegen emits its call
as a `tvm_op` with `func_name = "__nop"`, and the memory planner gives its output the storage
of its input), convert-relay-to-loops lowers such a group like any other (its kernel, a copy,
is still printed by `-t c` / `-t opencl`) but marks its launch:

    %r = relay.launch @fused_reshape(%x) {relay.reshape_only, se_scope = #relay.se_scope<...>}
        : (tensor<8x32x7x7xf32>) -> tensor<8x1568xf32>

Then plan-memory gives `%r` the storage of `%x` and keeps it alive while either lives, the
graph JSON makes its node `__nop`, and the executor runs nothing for it: the node's tensor is
a view of its input's storage with its own shape.

Operand and result share one scope: a group never spans a `relay.device_copy`. Plan-memory and
the graph JSON find the mark with `dialects/lowered_graph.py`'s `is_reshape_only_launch`.
"""

from __future__ import annotations

from xdsl.dialects.builtin import UnitAttr

from xrelay.dialects import relay
from xrelay.dialects.lowered_graph import RESHAPE_ONLY_ATTR

RESHAPES = (relay.ReshapeOp, relay.SqueezeOp, relay.ExpandDimsOp)


def is_reshape_only(group: relay.FusedOp) -> bool:
    """The group has one input and every op of it (but the yield) only reshapes."""
    ops = [op for op in group.body.block.ops if not isinstance(op, relay.YieldOp)]
    return len(group.inputs) == 1 and bool(ops) and all(isinstance(op, RESHAPES) for op in ops)


def mark(launch: relay.LaunchOp) -> None:
    """Marks the launch of a reshape-only group."""
    launch.attributes[RESHAPE_ONLY_ATTR] = UnitAttr()
