"""
fuse-conv-pool: a conv2d group and the max_pool2d or global_avg_pool2d group that reads it
become one group, whose kernel stores the pooled result.

fuse-ops leaves an image model's `conv2d + bias + relu` and the `max_pool2d` after it in two
groups: conv2d and max_pool2d are both OutEWiseFusable (DESIGN.md's table), and TVM's rules
fuse neither into the other. So the conv's whole result goes through memory (4x the pooled
one at 2x2) and the pool is a kernel and a launch of its own. A schedule that computes the
conv a block of outputs at a time can take the pool's windows from the block before it
stores it: this pass makes those groups, and leaves the others alone.

Words: a *conv group* is a `relay.fused` whose first op is a conv2d of the group's result
shape, followed by elementwise and broadcast ops only (its epilogue: bias, relu, ...); a
*pool group* is a `relay.fused` whose first op is a `relay.nn.max_pool2d` or a
`relay.nn.global_avg_pool2d` of one of its inputs, used by the pool alone, followed by elementwise and broadcast ops only (a relu
after the pool, as `relu(max_pool2d(conv(x)))` writes it). The input is fuse-ops output.

Phase 1, match: each pool group whose pooled input is the result of a conv group that
  nothing else uses, both with the same se_scope (or both without).
Phase 2, merge (`group_chains.merge_where`, as fuse-attention merges): a new `relay.fused`
  of the conv group's inputs and the pool group's others (each value once), holding a copy of
  the conv group's ops, then of the pool group's (the pool reading the value the conv group
  yielded), yielding what the pool group yielded; the pair's se_scope; `kernel_name` named as
  fuse-ops names groups (`fused_` and the op names), unique in the module.
Phase 3, decide: the merged group replaces the two only where convert-relay-to-loops would
  lower it with a schedule that pools in the conv's epilogue (`POOLING`: the schedules that
  take such a group and compute each pooled output from the conv outputs of their block,
  asked through their own test). Elsewhere the merged group is dropped: the elementwise nest
  or pool_windows would compute each conv output again for every window that reads it.

The result is the same values as the two kernels': the conv outputs are the schedule's, the
max is taken tap after tap as the pool's kernel takes it, NaN winning (see
winograd_conv.py's store step); a global average is summed pixel after pixel from 0.0 and
divided by H * W, as the pool's kernel does (pointwise_conv, whose work items hold all of an
image's pixels for their channels). Running the pass twice changes nothing (a merged group
yields a pool, so it is no conv group). Not yet: a global pool after a conv that is not
1 x 1 (ResNet-18's 3 x 3; packed_conv and winograd_conv do not sum their blocks) or that
pointwise_conv leaves to packed_conv (ResNet-50's last, 512 -> 2048 at 7 x 7, with AVX-512's
32 registers: pointwise_conv's fused kernel took 778 us against 646 + 16), or whose
result something else reads too (the squeeze-excite pools of EfficientNet and MobileNetV3,
which would need a group with two results); avg_pool2d, pools with padding or
`ceil_mode` windows past the conv's result, pooling in packed_conv, and in conv_taps on the
cpu. (conv_taps pooling two output rows' sums through a scratch, its pooled rows in loops
gcc vectorised, took 0.040 ms for the CNN's first conv and pool against 0.037 ms as two
kernels, C at 1 thread, per-node medians: the pool's kernel is cheap there and the
epilogue's stores were already vectors; C's vectors have no lane access to pool in
registers. On opencl conv_taps pools in registers, its vectors' even and odd lanes: see its
docstring.)

The CNN of bench/models.py (batch 8), its second conv and pool in one kernel: C 0.119 ms
against 0.123 + 0.007 ms, OpenCL (PoCL) 0.150 against 0.165 + 0.024 ms (1 thread, per-node
medians of 15 profiled runs, interleaved with the two kernels, load 4.1). Its first conv and
pool on opencl (conv_taps): 0.029 ms device time against 0.027 + 0.011 ms and a launch; the
whole CNN on OpenCL 0.89-0.93x the time (runs of the two builds alternating in one process,
medians of 1200, PoCL on 1 and 2 threads).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import BlockArgument, SSAValue
from xdsl.passes import ModulePass

from xrelay.dialects import relay
from xrelay.transforms.convert_relay_to_loops import pick_schedule
from xrelay.transforms.fuse_ops import KernelNames, existing_symbols
from xrelay.transforms.group_chains import anchored, is_elementwise, merge_where
from xrelay.transforms.schedules import conv_taps, pointwise_conv, winograd_conv

# The schedules that pool in a conv's epilogue, by name, each with its test of a merged
# group (whether it takes the group and computes the pool from its blocks).
POOLING: dict[str, Callable[[relay.FusedOp], bool]] = {
    winograd_conv.SCHEDULE.name: winograd_conv.pools_in_epilogue,
    conv_taps.SCHEDULE.name: conv_taps.pools_in_epilogue,
    pointwise_conv.SCHEDULE.name: pointwise_conv.pools_in_epilogue,
}
POOLS = (relay.MaxPool2DOp, relay.GlobalAvgPool2DOp)


@dataclass(frozen=True)
class FuseConvPoolPass(ModulePass):
    name = "fuse-conv-pool"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        names = KernelNames(taken=existing_symbols(op))
        for pair in matches(op):
            merge_where(pair, names, pools_in_epilogue)


# --- Phase 1: match -----------------------------------------------------------------------------


def matches(module: ModuleOp) -> list[tuple[relay.FusedOp, relay.FusedOp]]:
    """(conv group, pool group) for each pool group that reads a conv group's result, its
    only use, on the same scope."""
    found: list[tuple[relay.FusedOp, relay.FusedOp]] = []
    for pool_group in [op for op in module.walk() if isinstance(op, relay.FusedOp)]:
        if not is_pool_group(pool_group):
            continue
        conv_group = pooled_input(pool_group).owner
        if not isinstance(conv_group, relay.FusedOp) or anchored(conv_group, relay.Conv2DOp) is None:
            continue
        if conv_group.res.has_one_use() and conv_group.se_scope == pool_group.se_scope:
            found.append((conv_group, pool_group))
    return found


def is_pool_group(group: relay.FusedOp) -> bool:
    """A max_pool2d or global_avg_pool2d of a group input that nothing else in the group
    reads, then elementwise and broadcast ops only."""
    pool, *tail = list(group.body.block.ops)[:-1]
    if not isinstance(pool, POOLS) or not isinstance(pool.data, BlockArgument):
        return False
    return pool.data.has_one_use() and all(is_elementwise(op) for op in tail)


def pooled_input(group: relay.FusedOp) -> SSAValue:
    """The input a pool group pools."""
    pool = group.body.block.first_op
    assert isinstance(pool, POOLS) and isinstance(pool.data, BlockArgument)
    return group.inputs[pool.data.index]


# --- Phase 3: decide ----------------------------------------------------------------------------


def pools_in_epilogue(merged: relay.FusedOp) -> bool:
    """Whether convert-relay-to-loops lowers `merged` with a schedule that pools in the conv's
    epilogue."""
    test = POOLING.get(pick_schedule(merged).name)
    return test is not None and test(merged)
