"""
The lowered graph: what a lowered @main and the kernels it launches carry for the targets and
the runtime, and how to read it.

After convert-relay-to-loops and inline-calls, @main holds only `relay.launch`,
`relay.device_copy`, `relay.constant` and `func.return`. Its *tensors* are its parameters and
the results of those ops; each is stored on one *scope* and, once plan-memory ran, in one
*storage*. The passes write these as attributes, and the targets read them here (the graph
JSON, and through it the runtime; the DOT picture):

- `relay.se_scope` (`SCOPE_ATTR`, defined with `SEScopeAttr`), argument attribute of a parameter (and result attribute of
  a function); an op's scope is its `se_scope` (a copy's `dst_se_scope`). Written by
  plan-devices, canonical after it.
- `relay.storage_id = N : i64` (`STORAGE_ID_ATTR`), on each op of @main and as an argument
  attribute on each parameter. Written by plan-memory; the graph JSON's `storage_id`.
- `relay.input_name = "..."` (`INPUT_NAME_ATTR`), argument attribute of a parameter whose
  source model's name is not a valid SSA name (`onnx::Conv_0`). Written by the frontend's
  builder; the graph JSON's input name.
- `relay.reshape_only` (`RESHAPE_ONLY_ATTR`), a unit attribute on the launch of a group of
  reshapes only. Written by convert-relay-to-loops (`transforms/reshape_only.py`); its result is
  its input's storage read with another shape: plan-memory aliases the two, the graph JSON makes
  its node `__nop`.
- `relay.concat_axis = N : i64` (`CONCAT_AXIS_ATTR`), on the launch of a group that only
  concatenates its inputs (each once, in order) along axis N. Written by convert-relay-to-loops
  (`transforms/in_place_concat.py`); plan-memory may store each input in a slice of its storage,
  and then (`is_in_place_concat`) the graph JSON makes its node `__nop`.
- `relay.storage_offset = N : i64` (`STORAGE_OFFSET_ATTR`), on each op whose result is stored at
  byte N of its storage rather than at its start (an input of an in-place concatenation, and
  its aliases). Written by plan-memory; the graph JSON's `storage_offset` (0 where absent).

and on a kernel (a `func.func` a launch calls):

- `relay.work_group_per_item` (`WORK_GROUP_PER_ITEM_ATTR`), a unit attribute: its work items
  are few and heavy, each launched as a work group of its own. Written by
  convert-relay-to-loops from a schedule's `one_group_per_item` (`transforms/schedules/`); the
  C-style targets make it the kernel's `local_size`.

Nothing here changes IR. A missing @main or scope is an error that names plan-memory: it reads
these first and checks every tensor of @main (targets read a planned @main only).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NoReturn, TypeGuard, cast

from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, TensorType
from xdsl.ir import Attribute, BlockArgument, Operation, SSAValue

from xrelay.diagnostics import LoweringError, location_of
from xrelay.dialects import relay
from xrelay.dialects.se_scope import SCOPE_ATTR, SEScopeAttr

STORAGE_ID_ATTR = "relay.storage_id"
# The @main argument attribute naming an input as its source model did (an importer's name
# that is not a valid SSA name): the graph JSON's input name.
INPUT_NAME_ATTR = "relay.input_name"
RESHAPE_ONLY_ATTR = "relay.reshape_only"
CONCAT_AXIS_ATTR = "relay.concat_axis"
STORAGE_OFFSET_ATTR = "relay.storage_offset"
# A work group per work item, because an OpenCL device spreads work groups over its threads
# (PoCL's pthread device otherwise runs a small NDRange as one work group, on one thread).
WORK_GROUP_PER_ITEM_ATTR = "relay.work_group_per_item"


def main_function(module: ModuleOp) -> func.FuncOp:
    """The module's @main (the program the executor runs)."""
    for op in module.ops:
        if isinstance(op, func.FuncOp) and op.sym_name.data == "main":
            return op
    raise LoweringError("plan-memory expects a function @main (the program the executor runs), but the module has none")


def tensors(main: func.FuncOp) -> Iterator[SSAValue]:
    """@main's parameters, then the result of each op, in program order."""
    yield from main.args
    for op in main.body.block.ops:
        yield from op.results


def arg_attrs(fn: func.FuncOp, index: int) -> dict[str, Attribute]:
    """The argument attributes of `fn`'s parameter `index` (none: empty)."""
    if fn.arg_attrs is None:
        return {}
    return dict(fn.arg_attrs.data[index].data)


def nbytes(ty: Attribute) -> int:
    """The bytes a tensor of type `ty` takes in its storage."""
    assert isinstance(ty, TensorType)
    ty = cast(TensorType[Attribute], ty)  # isinstance leaves the element type unknown
    count = 1
    for dim in ty.get_shape():
        count *= dim
    width = getattr(ty.element_type, "bitwidth", 32)
    return count * max(width // 8, 1)


# --- scopes ----------------------------------------------------------------------------------


def scope_of(value: SSAValue) -> SEScopeAttr:
    """Where a tensor of a lowered @main is stored (see the module docstring)."""
    if isinstance(value, BlockArgument):
        anchor = value.owner.parent_op()
        assert isinstance(anchor, func.FuncOp)
        scope = arg_attrs(anchor, value.index).get(SCOPE_ATTR)
        what, attr = f"parameter %{value.name_hint or value.index} of @main", f"{SCOPE_ATTR} attribute"
    else:
        anchor = value.owner
        assert isinstance(anchor, Operation), "only a block argument belongs to a block"
        scope = _result_scope(anchor)
        what, attr = anchor.name, "se_scope"
    if isinstance(scope, SEScopeAttr) and scope.is_fully_constrained:
        return scope
    found = f"has the partial {attr} {scope}" if isinstance(scope, SEScopeAttr) else f"has no {attr}"
    _fail(anchor, f"needs the canonical scope of every tensor, but {what} {found}; run plan-devices first")


def _result_scope(op: Operation) -> Attribute | None:
    if isinstance(op, relay.DeviceCopyOp):
        return op.dst_se_scope
    if isinstance(op, (relay.RelayOp, relay.LaunchOp, relay.OnDeviceOp, relay.FusedOp)):
        return op.se_scope
    return None


def _fail(op: Operation, message: str) -> NoReturn:
    message = f"{location_of(op)}: plan-memory {message}"
    op.emit_error(message, LoweringError(message))


# --- storages --------------------------------------------------------------------------------


def storage_id(value: SSAValue) -> int | None:
    """The storage id plan-memory recorded for a tensor of @main, or None."""
    if isinstance(value, BlockArgument):
        fn = value.owner.parent_op()
        attr = arg_attrs(fn, value.index).get(STORAGE_ID_ATTR) if isinstance(fn, func.FuncOp) else None
    else:
        owner = value.owner
        attr = owner.attributes.get(STORAGE_ID_ATTR) if isinstance(owner, Operation) else None
    return attr.value.data if isinstance(attr, IntegerAttr) else None


def is_reshape_only_launch(op: Operation) -> TypeGuard[relay.LaunchOp]:
    """A launch whose result is its input read with another shape (`RESHAPE_ONLY_ATTR`)."""
    return isinstance(op, relay.LaunchOp) and RESHAPE_ONLY_ATTR in op.attributes and len(op.inputs) == 1


def storage_offset(value: SSAValue) -> int:
    """The byte in its storage at which plan-memory put a tensor of @main (0: its start)."""
    owner = value.owner
    attr = owner.attributes.get(STORAGE_OFFSET_ATTR) if isinstance(owner, Operation) else None
    return attr.value.data if isinstance(attr, IntegerAttr) else 0


def concat_axis(op: Operation) -> int | None:
    """The axis of a launch of a concatenation alone (`CONCAT_AXIS_ATTR`), else None."""
    attr = op.attributes.get(CONCAT_AXIS_ATTR) if isinstance(op, relay.LaunchOp) else None
    return attr.value.data if isinstance(attr, IntegerAttr) else None


def is_in_place_concat(op: Operation) -> TypeGuard[relay.LaunchOp]:
    """A concatenation whose inputs plan-memory stored in its own storage: nothing to copy."""
    if concat_axis(op) is None or storage_id(op.results[0]) is None:
        return False
    return all(storage_id(v) == storage_id(op.results[0]) for v in op.operands)
