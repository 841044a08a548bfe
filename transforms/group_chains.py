"""
Chains of fused groups, each reading the one before, merged into one group where a schedule
lowers the merged group: what fuse-conv-pool and fuse-attention share.

fuse-ops (TVM's rules) ends a group at an anchor op the next group's anchor cannot join:
a conv2d and the max_pool2d after it, attention's batch_matmul, softmax and batch_matmul.
A pass that knows a schedule computing such a chain block by block (the next group's ops
reading the block while it is in scratch) finds its chains and hands each to `merge_where`:

1. merge (`merge_chain`): a new `relay.fused` of the chain's inputs (each value once),
   holding a copy of each group's ops in turn (each reading the values the groups before it
   yielded), yielding what the last group yields, on the first group's se_scope, its
   `kernel_name` named as fuse-ops names groups;
2. decide: the merged group replaces the chain only where the pass's test says so (its
   schedule would lower it); else it is dropped and the chain stays as fuse-ops made it;
3. replace (`replace_chain`): the merged group where the last group stood, its name made
   unique in the module, the chain's groups erased.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from xdsl.dialects.builtin import StringAttr
from xdsl.ir import Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from xrelay.dialects import relay
from xrelay.transforms.fuse_ops import KernelNames, group_properties, kernel_name
from xrelay.transforms.kernel_builder import shape_of
from xrelay.transforms.schedules import is_elementwise

T = TypeVar("T", bound=Operation)


def anchored(group: relay.FusedOp, kind: type[T]) -> T | None:
    """The group's first op, if it is a `kind` of the group's result shape followed by
    elementwise and broadcast ops only."""
    first, *epilogue = list(group.body.block.ops)[:-1]
    if not isinstance(first, kind) or shape_of(first.results[0]) != shape_of(group.res):
        return None
    return first if all(is_elementwise(op) for op in epilogue) else None


def merge_where(
    chain: Sequence[relay.FusedOp],
    names: KernelNames,
    lowered: Callable[[relay.FusedOp], bool],
    named_after: Callable[[Operation], bool] = lambda _: True,
) -> bool:
    """Merges `chain` into one group where `lowered(merged)` holds; whether it did. The group
    is named after its ops for which `named_after` holds (all, by default)."""
    merged = merge_chain(chain)
    if not lowered(merged):
        merged.erase()
        return False
    ops = [op for op in list(merged.body.block.ops)[:-1] if named_after(op)]
    merged.kernel_name = StringAttr(names.claim(kernel_name(ops)))
    replace_chain(chain, merged)
    return True


def merge_chain(chain: Sequence[relay.FusedOp]) -> relay.FusedOp:
    """A new group (not yet in the module) of the chain's inputs, holding a copy of each
    group's ops in turn, yielding what the last yields. A group may read the result of any
    group before it in `chain` (not only the one just before): it reads the value that group
    yielded."""
    first, *rest = chain
    body = first.body.clone()
    block = body.block
    inputs = list(first.inputs)
    produced: dict[SSAValue, SSAValue] = {}  # a group's result -> the value it yields in the block
    before = first
    for group in rest:
        yielded = block.last_op
        assert isinstance(yielded, relay.YieldOp)
        produced[before.res] = yielded.operands[0]
        mapping: dict[SSAValue, SSAValue] = {}
        for arg, value in zip(group.body.block.args, group.inputs, strict=True):
            if value in produced:
                mapping[arg] = produced[value]
            elif value in inputs:
                mapping[arg] = block.args[inputs.index(value)]
            else:
                mapping[arg] = block.insert_arg(value.type, len(block.args))
                inputs.append(value)
        block.erase_op(yielded)
        for op in group.body.block.ops:
            block.add_op(op.clone(value_mapper=mapping))
        before = group
    merged = relay.FusedOp.create(
        operands=inputs,
        result_types=[chain[-1].res.type],
        properties=group_properties(first.se_scope, kernel_name(list(block.ops)[:-1])),
        regions=[body],
    )
    merged.location = chain[-1].location
    return merged


def replace_chain(chain: Sequence[relay.FusedOp], merged: relay.FusedOp) -> None:
    """`merged` where the chain's last group stood; the chain's groups go, last first."""
    Rewriter.insert_op(merged, InsertPoint.before(chain[-1]))
    chain[-1].res.replace_all_uses_with(merged.res)
    for group in reversed(chain):
        Rewriter.erase_op(group)
