"""
fuse-conv-pool: a conv2d group and the max_pool2d group that reads it become one group,
whose kernel stores the pooled result.

fuse-ops leaves an image model's `conv2d + bias + relu` and the `max_pool2d` after it in two
groups: conv2d and max_pool2d are both OutEWiseFusable (DESIGN.md's table), and TVM's rules
fuse neither into the other. So the conv's whole result goes through memory (4x the pooled
one at 2x2) and the pool is a kernel and a launch of its own. A schedule that computes the
conv a block of outputs at a time can take the pool's windows from the block before it
stores it: this pass makes those groups, and leaves the others alone.

Words: a *conv group* is a `relay.fused` whose first op is a conv2d of the group's result
shape, followed by elementwise and broadcast ops only (its epilogue: bias, relu, ...); a
*pool group* is a `relay.fused` whose first op is a `relay.nn.max_pool2d` of one of its
inputs, used by the pool alone, followed by elementwise and broadcast ops only (a relu
after the pool, as `relu(max_pool2d(conv(x)))` writes it). The input is fuse-ops output.

Phase 1, match: each pool group whose pooled input is the result of a conv group that
  nothing else uses, both with the same se_scope (or both without).
Phase 2, merge: a new `relay.fused` of the conv group's inputs and the pool group's others
  (each value once), holding a copy of the conv group's ops, then of the pool group's (the
  pool reading the value the conv group yielded), yielding what the pool group yielded; the
  pair's se_scope; `kernel_name` named as fuse-ops names groups (`fused_` and the op names),
  unique in the module.
Phase 3, decide: the merged group replaces the two only where convert-relay-to-loops would
  lower it with a schedule that pools in the conv's epilogue (`POOLING`: the schedules that
  take such a group and compute each pooled output from the conv outputs of their block,
  asked through their own test). Elsewhere the merged group is dropped: the elementwise nest
  or pool_windows would compute each conv output again for every window that reads it.

The result is the same values as the two kernels': the conv outputs are the schedule's, the
max is taken tap after tap as the pool's kernel takes it, NaN winning (see
winograd_conv.py's store step). Running the pass twice changes nothing (a merged group
yields a pool, so it is no conv group). Not yet: avg_pool2d, pools with padding or
`ceil_mode` windows past the conv's result, and pooling in the schedules of the CNN's first
conv (conv_taps) and of packed_conv. (conv_taps pooling two output rows' sums through a
scratch, its pooled rows in loops gcc vectorised, took 0.040 ms for the CNN's first conv and
pool against 0.037 ms as two kernels, C at 1 thread, per-node medians: the pool's kernel is
cheap there and the epilogue's stores were already vectors; the C emitter has no vector
select or shuffle to pool in registers.)

The CNN of bench/models.py (batch 8), its second conv and pool in one kernel: C 0.119 ms
against 0.123 + 0.007 ms, OpenCL (PoCL) 0.150 against 0.165 + 0.024 ms (1 thread, per-node
medians of 15 profiled runs, interleaved with the two kernels, load 4.1).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from xrelay.dialects import relay
from xrelay.transforms.convert_relay_to_loops import pick_schedule
from xrelay.transforms.fuse_ops import KernelNames, existing_symbols, group_properties, kernel_name
from xrelay.transforms.kernel_builder import shape_of
from xrelay.transforms.schedules import winograd_conv

# The schedules that pool in a conv's epilogue, by name, each with its test of a merged
# group (whether it takes the group and computes the pool from its blocks).
POOLING: dict[str, Callable[[relay.FusedOp], bool]] = {
    winograd_conv.SCHEDULE.name: winograd_conv.pools_in_epilogue,
}


@dataclass(frozen=True)
class FuseConvPoolPass(ModulePass):
    name = "fuse-conv-pool"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        names = KernelNames(taken=existing_symbols(op))
        for conv_group, pool_group in matches(op):
            merged = merge(conv_group, pool_group)
            if not pools_in_epilogue(merged):
                merged.erase()
                continue
            merged.kernel_name = StringAttr(names.claim(kernel_name(list(merged.body.block.ops)[:-1])))
            replace(conv_group, pool_group, merged)


# --- Phase 1: match -----------------------------------------------------------------------------


def matches(module: ModuleOp) -> list[tuple[relay.FusedOp, relay.FusedOp]]:
    """(conv group, pool group) for each pool group that reads a conv group's result, its
    only use, on the same scope."""
    found: list[tuple[relay.FusedOp, relay.FusedOp]] = []
    for pool_group in [op for op in module.walk() if isinstance(op, relay.FusedOp)]:
        if not is_pool_group(pool_group):
            continue
        conv_group = pooled_input(pool_group).owner
        if not isinstance(conv_group, relay.FusedOp) or not is_conv_group(conv_group):
            continue
        if conv_group.res.has_one_use() and conv_group.se_scope == pool_group.se_scope:
            found.append((conv_group, pool_group))
    return found


def is_pool_group(group: relay.FusedOp) -> bool:
    """A max_pool2d of a group input that nothing else in the group reads, then elementwise
    and broadcast ops only."""
    pool, *tail = list(group.body.block.ops)[:-1]
    if not isinstance(pool, relay.MaxPool2DOp) or not isinstance(pool.data, BlockArgument):
        return False
    return pool.data.has_one_use() and all(is_elementwise(op) for op in tail)


def pooled_input(group: relay.FusedOp) -> SSAValue:
    """The input a pool group pools."""
    pool = group.body.block.first_op
    assert isinstance(pool, relay.MaxPool2DOp) and isinstance(pool.data, BlockArgument)
    return group.inputs[pool.data.index]


def is_elementwise(op: Operation) -> bool:
    return isinstance(op, relay.RelayOp) and op.PATTERN <= relay.OpPatternKind.BROADCAST


def is_conv_group(group: relay.FusedOp) -> bool:
    """A conv2d of the group's result shape, then elementwise and broadcast ops only."""
    first, *epilogue = list(group.body.block.ops)[:-1]
    if not isinstance(first, relay.Conv2DOp) or shape_of(first.res) != shape_of(group.res):
        return False
    return all(is_elementwise(op) for op in epilogue)


# --- Phase 2: merge -----------------------------------------------------------------------------


def merge(conv_group: relay.FusedOp, pool_group: relay.FusedOp) -> relay.FusedOp:
    """A new group (not yet in the module, named after its ops once it is kept) of the conv
    group's inputs and the pool group's others, holding a copy of the conv group's ops, then
    of the pool group's, yielding what the pool group yields."""
    body = conv_group.body.clone()
    block = body.block
    yielded = block.last_op
    assert isinstance(yielded, relay.YieldOp)
    inputs = list(conv_group.inputs)
    mapping: dict[SSAValue, SSAValue] = {}
    for arg, value in zip(pool_group.body.block.args, pool_group.inputs, strict=True):
        if value is conv_group.res:
            mapping[arg] = yielded.operands[0]
        elif value in inputs:
            mapping[arg] = block.args[inputs.index(value)]
        else:
            mapping[arg] = block.insert_arg(value.type, len(block.args))
            inputs.append(value)
    block.erase_op(yielded)
    for op in pool_group.body.block.ops:
        block.add_op(op.clone(value_mapper=mapping))
    merged = relay.FusedOp.create(
        operands=inputs,
        result_types=[pool_group.res.type],
        properties=group_properties(conv_group.se_scope, kernel_name(list(block.ops)[:-1])),
        regions=[body],
    )
    merged.location = pool_group.location
    return merged


# --- Phase 3: decide ----------------------------------------------------------------------------


def pools_in_epilogue(merged: relay.FusedOp) -> bool:
    """Whether convert-relay-to-loops lowers `merged` with a schedule that pools in the conv's
    epilogue."""
    test = POOLING.get(pick_schedule(merged).name)
    return test is not None and test(merged)


def replace(conv_group: relay.FusedOp, pool_group: relay.FusedOp, merged: relay.FusedOp) -> None:
    """`merged` where the pool group stood; the two groups go."""
    Rewriter.insert_op(merged, InsertPoint.before(pool_group))
    pool_group.res.replace_all_uses_with(merged.res)
    Rewriter.erase_op(pool_group)
    Rewriter.erase_op(conv_group)
