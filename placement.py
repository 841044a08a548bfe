"""
`xrelay.explain`: why a value is on its scope, as data.

    remarks = xrelay.explain(module, "%h", targets=("c", "opencl"), default_device="opencl")
    print(remarks[0])   # %h: cpu:1 — device from relay.on_device at model.mlir:8:3; id from ...
    remarks[0].steps    # (Step(fields=("device",), origin="relay.on_device", ...), ...)

It runs plan-devices' solving phases (collect, solve, default) on the module, which it does
not change, and reads the remarks off the solution: the same remarks
`plan-devices{explain=true}` prints, built from the same domain history
(`transforms/device_remarks.py`), so an explanation cannot disagree with the plan. Unlike the
pass, which prints remarks only for values whose scope is not all from their own annotation,
`explain` answers for every value it is asked about.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue

from xrelay.errors import UsageError
from xrelay.ir import Program, as_module, context
from xrelay.transforms.compilation_config import CompilationConfig, targets_named_in
from xrelay.transforms.device_remarks import Remark, Step
from xrelay.transforms.place_by_cost import PlaceByCostPass
from xrelay.transforms.plan_devices import remark_for, solve

__all__ = ["Remark", "Step", "explain"]


def explain(
    program: Program,
    value_or_op_name: str,
    targets: str | Sequence[str] | None = None,
    default_device: str | None = None,
    host_target: str = "c",
    placement: str = "annotated",
) -> list[Remark]:
    """The remarks for the values named `value_or_op_name` in `program` (relay text, a .mlir
    path or a module, before plan-devices), planned with plan-devices' options: `"%h"` names
    the values printed as `%h` (in any function), `"relay.exp"` the results of every
    `relay.exp`. Without `targets`, "c" and the targets the module's scopes name. An
    on_device result and an unpinned constant are planned per use and have no
    remark of their own (ask about the value under the annotation, or its users).
    With `placement="auto"`, the module (a copy) is placed by place-by-cost first, as
    `xrelay.build` places it, and the remarks of the values it placed give its reasons."""
    from xrelay.driver import check_placement

    module = as_module(program, "xrelay.explain")
    if targets is None:
        targets = targets_named_in(module)
    elif isinstance(targets, str):
        targets = [t.strip() for t in targets.split(",")]
    if check_placement(placement) == "auto":
        module = module.clone()
        PlaceByCostPass(tuple(targets), default_device, host_target).apply(context(), module)
    values = _named(module, value_or_op_name)
    constraints = solve(module, CompilationConfig.from_options(tuple(targets), default_device, host_target))
    found = [remark_for(constraints, value) for value in values]
    return [remark for remark in found if remark is not None]


def _named(module: ModuleOp, name: str) -> list[SSAValue]:
    """The values `name` refers to, in program order, or an error listing the names there are."""
    if not isinstance(name, str):  # pyright: ignore[reportUnnecessaryIsInstance]  (callers may pass anything)
        raise UsageError(
            f"xrelay.explain takes a value name such as '%h' or an op name such as 'relay.exp', not {name!r}"
        )
    values = _values(module)
    if name.startswith("%"):
        found = [v for v in values if v.name_hint == name[1:]]
    else:
        found = [v for v in values if isinstance(v.owner, Operation) and v.owner.name == name]
    if not found:
        names = sorted({f"%{v.name_hint}" for v in values if v.name_hint})
        raise UsageError(
            f"xrelay.explain found no value {name!r} in the module; give a value name such as "
            f"{', '.join(names[:8]) or '%0'} or an op name such as 'relay.add'"
        )
    return found


def _values(module: ModuleOp) -> list[SSAValue]:
    values: list[SSAValue] = []
    for fn in module.ops:
        if not isinstance(fn, func.FuncOp) or fn.is_declaration:
            continue
        values += fn.args
        values += [result for op in fn.body.walk() for result in op.results]
    return values
