"""
Reshape-only groups: a `relay.fused` whose ops only reshape lowers to no kernel.

Tensors are stored row-major, so `relay.reshape`, `relay.squeeze` and `relay.expand_dims`
never move data: their result is their operand's buffer read with another shape. As in TVM
(a fused function of reshapes only is marked reshape-only, the graph codegen emits it as a
`tvm_op` with `func_name = "__nop"`, and the memory planner gives its output its input's
storage), convert-relay-to-loops replaces such a group by one *lowered reshape* in @main:

    %r = relay.reshape %x {kernel_name = "fused_reshape", se_scope = #relay.se_scope<...>}
        : (tensor<8x32x7x7xf32>) -> tensor<8x1568xf32>

a `relay.reshape` that carries its group's `kernel_name` and `se_scope` (a reshape that fuse-ops
left outside any group carries no kernel_name and is still an error for the lowering). Then
plan-memory gives `%r` the storage of `%x` and keeps it alive while either lives, the graph
JSON marks its node `__nop`, and the executor only views the storage with the new shape.

Operand and result share one scope: a group never spans a `relay.device_copy`.
"""

from __future__ import annotations

from typing import TypeGuard

from xdsl.dialects.builtin import StringAttr
from xdsl.ir import Operation, SSAValue

from xrelay.dialects import relay

KERNEL_NAME = "kernel_name"
RESHAPES = (relay.ReshapeOp, relay.SqueezeOp, relay.ExpandDimsOp)


def is_reshape_only(group: relay.FusedOp) -> bool:
    """Every op of the group (but the yield) only reshapes."""
    ops = [op for op in group.body.block.ops if not isinstance(op, relay.YieldOp)]
    return bool(ops) and all(isinstance(op, RESHAPES) for op in ops)


def group_operand(group: relay.FusedOp) -> SSAValue:
    """The group input that its chain of reshapes starts from."""
    last = group.body.block.last_op
    assert isinstance(last, relay.YieldOp)
    value = last.operands[0]
    while isinstance(value.owner, RESHAPES):
        value = value.owner.operands[0]
    index = group.body.block.args.index(value)
    return group.inputs[index]


def lowered_reshape(group: relay.FusedOp) -> relay.ReshapeOp:
    """The reshape of the group's operand to its result type, carrying its kernel_name and scope."""
    assert group.kernel is not None and group.se_scope is not None
    return relay.ReshapeOp.create(
        operands=[group_operand(group)],
        result_types=[group.res.type],
        properties={"se_scope": group.se_scope},
        attributes={KERNEL_NAME: StringAttr(group.kernel)},
    )


def is_lowered_reshape(op: Operation) -> TypeGuard[relay.ReshapeOp]:
    """A reshape-only group after convert-relay-to-loops (see the module docstring)."""
    return isinstance(op, relay.ReshapeOp) and isinstance(op.attributes.get(KERNEL_NAME), StringAttr)


def node_name(op: relay.ReshapeOp) -> str:
    """The lowered reshape's group name, which the executor graph shows for its node."""
    name = op.attributes[KERNEL_NAME]
    assert isinstance(name, StringAttr)
    return name.data
