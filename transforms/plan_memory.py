"""
plan-memory: give every tensor of the lowered @main a storage id, shared only where safe.

Words: a *tensor* is an SSA value of @main (a parameter, a `relay.constant`, the result of a
`relay.launch` or a `relay.device_copy`); its *scope* is where it is stored: a parameter's
`relay.se_scope` argument attribute, a constant's or launch's `se_scope`, a copy's
`dst_se_scope` (all canonical after plan-devices). A *storage* is one buffer on one scope;
the executor allocates one pool entry per storage id, sized for the largest tensor in it.
Scopes and storage ids are read through `dialects/lowered_graph.py`, as the targets read
them.

Input: @main after convert-relay-to-loops (and inline-calls): only relay.launch,
relay.device_copy, relay.constant and func.return. Other functions (the kernels) are not
touched.

The result of a launch marked `relay.reshape_only` (`transforms/reshape_only.py`) is an
*alias* of its input: it is stored in the input's storage (its kernel never runs), so the
two share one storage and one lifetime. The inputs of a concatenation planned *in place*
(`transforms/in_place_concat.py` says which: a concatenation alone, contiguous per input,
of intermediates on its scope that nothing else stores) are stored in the concatenation's
storage, each at its byte offset (its slice of the result), so each producer writes its
slice and the concatenation's kernel never runs; the storage lives from the first of them
to the last use of any.

Phase 1, check: @main holds only those ops, and every tensor has a scope (an alias the
scope of its operand).
Phase 2, lifetimes: a tensor lives from the op that defines it to its last use; returned
tensors live to the end. A storage lives as long as any of the tensors in it (a tensor and
its aliases): nothing else is written to it while one of them may still be read.
Phase 3, assign, in program order (a storage when the first tensor stored in it is defined):
parameters, constants and returned tensors get storages
of their own, never shared (the caller writes and reads them), but with their aliases (the
executor copies inputs in and results out, so a returned alias of an input or of a constant
never hands the caller a buffer it owns). An alias takes its operand's storage. An intermediate tensor takes a
released storage of *its own scope* (the smallest one large enough, else the largest, which
grows), or a new one. After an op, the storages of the intermediates whose last use (with their aliases') it was
are released — after its result was assigned, so a kernel never writes over its own inputs.
Phase 4, write back: `relay.storage_id = N : i64` on each op of @main and as an argument
attribute on each parameter, and `relay.storage_offset = N : i64` (bytes) on each op whose
result is stored in a slice of an in-place concatenation, so `opt-tool` shows the plan.

A storage id belongs to exactly one scope; running the pass twice changes nothing.
Not yet: in-place kernels (but for aliases and concatenations), a concatenation in place in
another's storage, sharing across the storages of two scopes on one physical device.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NoReturn

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    IntegerAttr,
    ModuleOp,
    TensorType,
    i64,
)
from xdsl.ir import BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass

from xrelay.diagnostics import LoweringError, location_of
from xrelay.dialects import relay
from xrelay.dialects.lowered_graph import (
    STORAGE_ID_ATTR,
    STORAGE_OFFSET_ATTR,
    arg_attrs,
    is_reshape_only_launch,
    main_function,
    nbytes,
    scope_of,
    tensors,
)
from xrelay.dialects.se_scope import SEScopeAttr
from xrelay.transforms.in_place_concat import Slice, in_place_slices

GRAPH_OPS = (relay.LaunchOp, relay.DeviceCopyOp, relay.ConstantOp)


@dataclass(frozen=True)
class PlanMemoryPass(ModulePass):
    name = "plan-memory"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        main = main_function(op)
        check_lowered(main)
        plan = plan_storage(main)
        write_back(main, plan)


# --- Phase 1: check ----------------------------------------------------------------------


def check_lowered(main: func.FuncOp) -> None:
    """@main holds only launches, copies, constants and the return; every tensor has a scope."""
    for op in main.body.block.ops:
        if isinstance(op, func.CallOp):
            _fail(
                op,
                f"expects no calls in @main, but found a call to @{op.callee.string_value()}; run inline-calls first",
            )
        if not isinstance(op, (*GRAPH_OPS, func.ReturnOp)):
            _fail(
                op,
                "expects a lowered @main (relay.launch, relay.device_copy, relay.constant, "
                f"func.return), but found {op.name}; run convert-relay-to-loops first",
            )
    for value in tensors(main):
        _check_tensor(main, value)
        scope_of(value)
    for op in main.body.block.ops:
        if is_reshape_only_launch(op) and scope_of(op.inputs[0]) != scope_of(op.res):
            _fail(op, "expects a reshape-only launch on its input's scope (it is stored in the input's storage)")


def _check_tensor(main: func.FuncOp, value: SSAValue) -> None:
    if isinstance(value.type, TensorType):
        return
    op, what = main, f"parameter %{value.name_hint or value.index}" if isinstance(value, BlockArgument) else ""
    if isinstance(value.owner, Operation):
        op, what = value.owner, f"the result of {value.owner.name}"
    _fail(
        op,
        f"expects @main's values to be tensors (the executor's buffers), but {what} is "
        f"{value.type}; @main takes and returns tensors, memrefs belong to kernels",
    )


# --- Phase 2: lifetimes ------------------------------------------------------------------


def last_uses(main: func.FuncOp) -> dict[SSAValue, int]:
    """The index of the op that uses each tensor last (returned tensors: past the end)."""
    last: dict[SSAValue, int] = {}
    ops = list(main.body.block.ops)
    for index, op in enumerate(ops):
        end = len(ops) if isinstance(op, func.ReturnOp) else index
        for operand in op.operands:
            last[operand] = end
    return last


def alias_roots(main: func.FuncOp, slices: dict[SSAValue, Slice] | None = None) -> dict[SSAValue, SSAValue]:
    """The tensor whose storage each tensor is in: an alias's operand's, an in-place
    concatenation's input's the concatenation's (`slices`), else its own."""
    slices = slices or {}
    roots: dict[SSAValue, SSAValue] = {arg: arg for arg in main.args}
    for op in main.body.block.ops:
        for result in op.results:
            if result in slices:
                roots[result] = slices[result].concat
            else:
                roots[result] = roots[op.operands[0]] if is_reshape_only_launch(op) else result
    return roots


def storage_offsets(main: func.FuncOp, slices: dict[SSAValue, Slice]) -> dict[SSAValue, int]:
    """The byte offset of each tensor in a slice of its storage (its aliases' too)."""
    offsets: dict[SSAValue, int] = {}
    for op in main.body.block.ops:
        for result in op.results:
            if result in slices:
                offsets[result] = slices[result].offset
            elif is_reshape_only_launch(op) and op.operands[0] in offsets:
                offsets[result] = offsets[op.operands[0]]
    return offsets


def storage_last_uses(main: func.FuncOp, roots: dict[SSAValue, SSAValue]) -> dict[SSAValue, int]:
    """Per root tensor: the last use of it or of any alias of it (an unused one: its definition)."""
    last = last_uses(main)
    defined: dict[SSAValue, int] = {r: i for i, op in enumerate(main.body.block.ops) for r in op.results}
    lives: dict[SSAValue, int] = {}
    for value, root in roots.items():
        end = last.get(value, defined.get(value, -1))
        lives[root] = max(lives.get(root, end), end)
    return lives


# --- Phase 3: assign ---------------------------------------------------------------------


@dataclass
class StoragePlan:
    """Storage id per tensor, and each storage's scope and size in bytes."""

    ids: dict[SSAValue, int] = field(default_factory=dict[SSAValue, int])
    offsets: dict[SSAValue, int] = field(default_factory=dict[SSAValue, int])  # the tensors in a slice
    scopes: list[SEScopeAttr] = field(default_factory=list[SEScopeAttr])
    sizes: list[int] = field(default_factory=list[int])
    free: dict[SEScopeAttr, list[int]] = field(default_factory=dict[SEScopeAttr, list[int]])

    def fresh(self, scope: SEScopeAttr, size: int) -> int:
        self.scopes.append(scope)
        self.sizes.append(size)
        return len(self.sizes) - 1

    def reuse(self, scope: SEScopeAttr, size: int) -> int:
        """The smallest released storage of `scope` that fits, else the largest (grown)."""
        free = self.free.get(scope, [])
        if not free:
            return self.fresh(scope, size)
        fitting = [sid for sid in free if self.sizes[sid] >= size]
        sid = min(fitting, key=lambda s: self.sizes[s]) if fitting else max(free, key=lambda s: self.sizes[s])
        free.remove(sid)
        self.sizes[sid] = max(self.sizes[sid], size)
        return sid

    def release(self, sid: int) -> None:
        self.free.setdefault(self.scopes[sid], []).append(sid)


def plan_storage(main: func.FuncOp) -> StoragePlan:
    slices = in_place_slices(main)
    plan = StoragePlan(offsets=storage_offsets(main, slices))
    roots = alias_roots(main, slices)
    last = storage_last_uses(main, roots)
    end = len(list(main.body.block.ops))
    for arg in main.args:
        plan.ids[arg] = plan.fresh(scope_of(arg), nbytes(arg.type))
    for index, op in enumerate(main.body.block.ops):
        if isinstance(op, func.ReturnOp):
            break
        result, root = op.results[0], roots[op.results[0]]
        if root not in plan.ids:  # (an in-place concatenation's storage: at its first input)
            _assign(plan, root, pinned=isinstance(root.owner, relay.ConstantOp) or last[root] == end)
        plan.ids[result] = plan.ids[root]
        for root in dict.fromkeys(roots[v] for v in [*op.operands, result]):  # ordered: deterministic ids
            if last[root] == index and _is_intermediate(root, last, end):
                plan.release(plan.ids[root])
    return plan


def _assign(plan: StoragePlan, value: SSAValue, pinned: bool) -> None:
    scope, size = scope_of(value), nbytes(value.type)
    plan.ids[value] = plan.fresh(scope, size) if pinned else plan.reuse(scope, size)


def _is_intermediate(value: SSAValue, last: dict[SSAValue, int], end: int) -> bool:
    if isinstance(value, BlockArgument) or isinstance(value.owner, relay.ConstantOp):
        return False
    return last.get(value) != end


# --- Phase 4: write back -----------------------------------------------------------------


def write_back(main: func.FuncOp, plan: StoragePlan) -> None:
    for op in main.body.block.ops:
        if op.results:
            op.attributes[STORAGE_ID_ATTR] = IntegerAttr(plan.ids[op.results[0]], i64)
        if op.results and op.results[0] in plan.offsets:
            op.attributes[STORAGE_OFFSET_ATTR] = IntegerAttr(plan.offsets[op.results[0]], i64)
        else:
            op.attributes.pop(STORAGE_OFFSET_ATTR, None)
    attrs = [arg_attrs(main, i) | {STORAGE_ID_ATTR: IntegerAttr(plan.ids[a], i64)} for i, a in enumerate(main.args)]
    main.arg_attrs = ArrayAttr([DictionaryAttr(a) for a in attrs])


def _fail(op: Operation, message: str) -> NoReturn:
    message = f"{location_of(op)}: plan-memory {message}"
    op.emit_error(message, LoweringError(message))
