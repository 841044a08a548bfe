"""
combine-parallel-dense: relay.nn.dense ops that share their data and have constant weights
become one dense over the weights concatenated along the units axis, then one
relay.strided_slice per branch (TVM's CombineParallelDense, in its dense-to-dense form).

bench/models.py's transformer computes its queries, keys and values from one %x:

    %q = relay.nn.bias_add (relay.nn.dense %x, %wq), %bq      # and %k, %v alike
becomes
    %wq_wk_wv = relay.constant <wq, wk, wv stacked: [768, 256]>
    %bq_bk_bv = relay.constant <bq, bk, bv end to end: [768]>
    %qkv = relay.nn.bias_add (relay.nn.dense %x, %wq_wk_wv), %bq_bk_bv
    %q = relay.strided_slice %qkv {begin = [0, 0], end = [128, 256]}      # %k, %v: 256.., 512..

Three kernels of 17 MFLOP become one of 50: one launch (each costs tens of us on OpenCL) and
one OpenMP region (50-70 us of thread wake-up each at 2 threads), split over more blocks of
columns. The weights and the followers' operands are concatenated here, at compile time, into
new constants (packed_matmul_prepacked then packs the combined weight at build time as
before): a relay.concatenate would copy them on every run. Measured on that transformer (runs
with and without the pass interleaved in one process, medians of 30 rounds, eight runs at
load 1.9-3.2 on 2 cores): C at 2 threads 0.92-1.00x (median 0.94x, and 0.92-0.93x in the
runs that had both cores; the three denses 0.42-0.49 ms, the one 0.37-0.40), at 1 thread
0.93-1.01x (median 0.99x); OpenCL 0.95-1.04x (median 1.00x) at 1 and 2 threads. The kernels
of the slices take what the reshape + transpose kernels took before (0.028-0.034 ms for the
three in C).

Words: a *group* is the denses of one function body that read the same data, run on the same
se_scope, and have relay.constant weights; a *branch* is one of them and the chain of
elementwise ops after it, each the only user of the value before it (unary elementwise ops,
the numpy-broadcasting binary ops, relay.nn.bias_add along the last axis); *level* d is the
d-th op of every branch (level 0: the denses).

Phase 1, group: the denses of each body by (data, se_scope), those with constant weights, in
program order; groups of fewer than `min-num-branches` are left alone.
Phase 2, levels: the deepest level d such that at every level 1..d all branches have an op
of one name and the same properties, reading the previous level at the same operand, with a
result of that operand's shape, and with constants for its other operands that fit along the
units axis (each broadcast to its branch's units, then equal outside the last axis).
Phase 3, rewrite: before the group's first dense, the combined constants (the weights stacked
along axis 0; each other operand of a level, broadcast to [..., units], along its last axis),
the combined dense and the combined ops of levels 1..d, all on the group's se_scope; then a
strided_slice of the last axis per branch stands in for the branch's op at level d (with its
name). The branches' ops up to level d go, and their constants when nothing else uses them.

It runs after plan-devices (every op has its se_scope then, and each constant is the one of
its scope) and before fuse-ops, which makes the combined dense and its followers one kernel
and each slice a kernel with what follows it (in the transformer, slice + reshape + transpose).
Each output element is the same dot product and the same follower arithmetic as before, so
results agree with the uncombined ops up to the kernel's order of summation. The transformer
imported from ONNX (denses, each + a relay.add of its bias) combines the same way.
Not handled: weights that are not constants (a per-run concatenation), followers with
operands that are not constants, TVM's other form (a batch_matmul over stacked weights of one
shape), denses of different data.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    DenseArrayBase,
    Float32Type,
    ModuleOp,
    TensorType,
    f32,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from xrelay.diagnostics import ConfigError
from xrelay.dialects import relay
from xrelay.dialects.se_scope import SEScopeAttr
from xrelay.transforms.kernel_builder import shape_of
from xrelay.values import constant_value

Branch = list[Operation]  # a dense, then its followers


@dataclass(frozen=True)
class CombineParallelDensePass(ModulePass):
    """Combines denses of one data and constant weights into one dense and slices."""

    name = "combine-parallel-dense"
    min_num_branches: int = 2

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        check_min_num_branches(self.min_num_branches)
        for body in function_bodies(op):
            for denses in parallel_groups(body, self.min_num_branches):
                branches = [branch_of(dense) for dense in denses]
                combine(branches, combined_depth(branches))


def check_min_num_branches(count: int) -> None:
    if count < 2:
        raise ConfigError(
            f"combine-parallel-dense expects min-num-branches >= 2 (the fewest denses it combines), "
            f"but found {count}; leave the pass out of the pipeline to combine none"
        )


def function_bodies(module: ModuleOp) -> list[Block]:
    return [f.body.block for f in module.ops if isinstance(f, func.FuncOp) and f.body.blocks]


# --- Phase 1: group ---------------------------------------------------------------------------


def parallel_groups(body: Block, minimum: int) -> list[list[relay.DenseOp]]:
    """The denses of `body` with constant weights by (data, se_scope), in program order."""
    groups: dict[tuple[SSAValue, SEScopeAttr | None], list[relay.DenseOp]] = {}
    for op in body.ops:
        if isinstance(op, relay.DenseOp) and isinstance(op.weight.owner, relay.ConstantOp):
            groups.setdefault((op.data, op.se_scope), []).append(op)
    return [denses for denses in groups.values() if len(denses) >= minimum]


def branch_of(dense: relay.DenseOp) -> Branch:
    """`dense` and the followers after it, each the only user of the value before it."""
    branch: Branch = [dense]
    while True:
        uses = list(branch[-1].results[0].uses)
        if len(uses) != 1 or not is_follower(uses[0].operation):
            return branch
        branch.append(uses[0].operation)


def is_follower(op: Operation) -> bool:
    """An op that acts on each element of its chain operand on its own."""
    if isinstance(op, relay.BiasAddOp):
        return op.axis_value == len(shape_of(op.data)) - 1
    return isinstance(op, (relay.UnaryElemwiseOp, relay.BinaryBroadcastOp))


# --- Phase 2: levels --------------------------------------------------------------------------


def combined_depth(branches: Sequence[Branch]) -> int:
    """The deepest level d such that levels 1..d all combine."""
    depth = 0
    while all(len(branch) > depth + 1 for branch in branches) and level_combines(branches, depth + 1):
        depth += 1
    return depth


def level_combines(branches: Sequence[Branch], depth: int) -> bool:
    ops = [branch[depth] for branch in branches]
    first = ops[0]
    position = chain_position(branches[0], depth)
    same_kind = all(kind_of(op) == kind_of(first) for op in ops)
    if position is None or not same_kind or first.properties.get("se_scope") != group_scope(branches):
        return False
    if any(chain_position(branch, depth) != position for branch in branches):
        return False
    return all(
        folded_operands(branches, depth, index) is not None for index in range(len(first.operands)) if index != position
    )


def kind_of(op: Operation) -> tuple[str, dict[str, Attribute], dict[str, Attribute]]:
    """What must agree across a level: the name and attributes (a bias_add's axis is the
    last one already, however it is spelled)."""
    properties = {k: v for k, v in op.properties.items() if not (isinstance(op, relay.BiasAddOp) and k == "axis")}
    return op.name, properties, dict(op.attributes)


def chain_position(branch: Branch, depth: int) -> int | None:
    """Which operand of the op at `depth` is the value of the level before, if exactly one
    is and the op's result has its shape."""
    op, previous = branch[depth], branch[depth - 1].results[0]
    positions = [index for index, operand in enumerate(op.operands) if operand == previous]
    if len(positions) != 1 or shape_of(op.results[0]) != shape_of(previous):
        return None
    return positions[0]


def folded_operands(branches: Sequence[Branch], depth: int, index: int) -> list[np.ndarray] | None:
    """Operand `index` of each branch's op at `depth` as an array of its branch's units on
    the last axis (a bias as it is, a broadcast operand padded to a common rank and broadcast
    along the last axis), if all are constants and agree outside the last axis."""
    arrays: list[np.ndarray] = []
    for branch in branches:
        owner = branch[depth].operands[index].owner
        if not isinstance(owner, relay.ConstantOp):
            return None
        arrays.append(constant_value(owner))
    rank = max(1, *(array.ndim for array in arrays))
    folded = [broadcast_units(array, rank, units_of(branch)) for array, branch in zip(arrays, branches)]
    leading = {array.shape[:-1] for array in folded}
    return folded if len(leading) == 1 else None


def broadcast_units(array: np.ndarray, rank: int, units: int) -> np.ndarray:
    padded = array.reshape((1,) * (rank - array.ndim) + array.shape)
    return np.broadcast_to(padded, padded.shape[:-1] + (units,))


def units_of(branch: Branch) -> int:
    return shape_of(branch[0].results[0])[-1]


# --- Phase 3: rewrite -------------------------------------------------------------------------


def combine(branches: Sequence[Branch], depth: int) -> None:
    """Inserts the combined ops before the first dense and slices them for each branch."""
    first = branches[0][0]
    assert isinstance(first, relay.DenseOp)
    scope, point = first.se_scope, InsertPoint.before(first)
    weights = [branch[0].operands[1] for branch in branches]
    stacked = new_constant(np.concatenate([constant_of(w) for w in weights], axis=0), scope, weights, point)
    value = insert(
        relay.DenseOp.create(
            operands=[first.data, stacked],
            result_types=[combined_type(first, branches)],
            properties=scope_properties(scope),
        ),
        point,
    )
    for level in range(1, depth + 1):
        value = insert_level(branches, level, value, point)
    insert_slices(branches, depth, value, point)
    erase_branches(branches, depth)


def insert_level(branches: Sequence[Branch], depth: int, chain: SSAValue, point: InsertPoint) -> SSAValue:
    """The combined op of level `depth`, reading `chain` and the combined constants."""
    first = branches[0][depth]
    position = chain_position(branches[0], depth)
    operands: list[SSAValue] = []
    for index in range(len(first.operands)):
        if index == position:
            operands.append(chain)
            continue
        folded = folded_operands(branches, depth, index)
        assert folded is not None
        originals = [branch[depth].operands[index] for branch in branches]
        operands.append(
            new_constant(np.concatenate(folded, axis=-1), first.properties.get("se_scope"), originals, point)
        )
    op = type(first).create(
        operands=operands,
        result_types=[chain.type],
        properties=dict(first.properties),
        attributes=dict(first.attributes),
    )
    return insert(op, point)


def insert_slices(branches: Sequence[Branch], depth: int, combined: SSAValue, point: InsertPoint) -> None:
    """A strided_slice of `combined`'s last axis per branch, in place of its op at `depth`."""
    shape = shape_of(combined)
    scope = group_scope(branches)
    offset = 0
    for branch in branches:
        replaced = branch[depth].results[0]
        units = units_of(branch)
        properties: dict[str, Attribute] = {
            "begin": i64_array([0] * (len(shape) - 1) + [offset]),
            "end": i64_array([*shape[:-1], offset + units]),
            **scope_properties(scope),
        }
        sliced = relay.StridedSliceOp.create(operands=[combined], result_types=[replaced.type], properties=properties)
        insert(sliced, point)
        sliced.results[0].name_hint = replaced.name_hint
        replaced.replace_all_uses_with(sliced.results[0])
        offset += units


def erase_branches(branches: Sequence[Branch], depth: int) -> None:
    """The branches' ops up to `depth`, last first, then their constants left unused."""
    for branch in branches:
        for op in reversed(branch[: depth + 1]):
            operands = list(op.operands)
            Rewriter.erase_op(op)
            for operand in operands:
                if isinstance(operand.owner, relay.ConstantOp) and not operand.uses:
                    Rewriter.erase_op(operand.owner)


def group_scope(branches: Sequence[Branch]) -> SEScopeAttr | None:
    dense = branches[0][0]
    assert isinstance(dense, relay.DenseOp)
    return dense.se_scope


def combined_type(dense: relay.DenseOp, branches: Sequence[Branch]) -> TensorType[Float32Type]:
    shape = shape_of(dense.results[0])
    return TensorType(f32, [*shape[:-1], sum(units_of(branch) for branch in branches)])


def new_constant(
    values: np.ndarray, scope: Attribute | None, originals: Sequence[SSAValue], point: InsertPoint
) -> SSAValue:
    """A relay.constant of `values` at `point`, named after the constants it joins."""
    constant = relay.ConstantOp(relay.f32_elements(values), scope if isinstance(scope, SEScopeAttr) else None)
    insert(constant, point)
    names = [value.name_hint for value in originals]
    if all(names):
        constant.res.name_hint = "_".join(name for name in names if name)
    return constant.res


def constant_of(value: SSAValue) -> np.ndarray:
    owner = value.owner
    assert isinstance(owner, relay.ConstantOp)
    return constant_value(owner)


def insert(op: Operation, point: InsertPoint) -> SSAValue:
    Rewriter.insert_op(op, point)
    return op.results[0]


def scope_properties(scope: SEScopeAttr | None) -> dict[str, Attribute]:
    return {"se_scope": scope} if scope is not None else {}


def i64_array(values: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, list(values))
