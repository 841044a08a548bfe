"""
elementwise: one work item per element of the group's result (the schedule every group can take).

The parallel nest spans the result's axes (`KernelBuilder.parallel_nest`) and each work item
stores `value_at(result, idx)`: producers are recomputed inline, and a reduction, pooling or
an anchor no other schedule took is an `scf.for` nest with `iter_args` inside the work item.
"""

from __future__ import annotations

from xdsl.dialects import memref, scf
from xdsl.ir import SSAValue

from xrelay.dialects import relay
from xrelay.transforms.scalar_ops import GroupEmitter
from xrelay.transforms.schedules import Schedule, group_root, result_shape


def matches(group: relay.FusedOp) -> bool:
    return True


def build(emitter: GroupEmitter, group: relay.FusedOp, out: SSAValue) -> scf.ParallelOp:
    root = group_root(group)

    def store(idx: list[SSAValue]) -> None:
        emitter.builder.insert(memref.StoreOp.get(emitter.value_at(root, idx), out, idx))

    return emitter.parallel_nest(result_shape(group), store)


SCHEDULE = Schedule("elementwise", matches, build)
