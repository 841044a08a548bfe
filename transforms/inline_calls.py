"""
inline-calls: inline every `func.call` into @main, so the executor sees one flat graph.

The graph executor runs @main's body node by node; it has no notion of calls. plan-devices
and fuse-ops keep functions and calls (functions are not device-polymorphic, so every value
of a callee already has its scope when this pass runs, and inlining cannot change a
placement). `xrelay.build` runs this pass after `convert-relay-to-loops` and before
`plan-memory`; it works as well before lowering.

Phase 1, inline: each `func.call` in @main is replaced by a copy of the callee's body, the
call's operands standing for the callee's parameters and the returned values for the call's
results; the copies may contain calls again, which are inlined in turn.
Phase 2, clean up: functions other than @main that no call, launch or symbol refers to any
more are erased. Kernels (the `func.func`s that `relay.launch` names) are never erased.

A call to a missing function, to a kernel, or a recursive call is an error at the call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NoReturn

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import MemRefType, ModuleOp, SymbolRefAttr
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from xrelay.diagnostics import LoweringError, location_of


@dataclass(frozen=True)
class InlineCallsPass(ModulePass):
    name = "inline-calls"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        functions = {f.sym_name.data: f for f in op.ops if isinstance(f, func.FuncOp)}
        main = functions.get("main")
        if main is None:
            return
        inline_calls(main, functions)
        erase_unreferenced(op, main)


# --- Phase 1: inline ---------------------------------------------------------------------


def inline_calls(main: func.FuncOp, functions: dict[str, func.FuncOp]) -> None:
    """Inlines calls until none is left: a worklist of the calls in `main` and of those each
    inlined body brings, so a chain of n calls costs n inlinings, not n walks of `main`. A
    call nested deeper than there are functions is recursion."""
    work = [(call, 0) for call in main.walk() if isinstance(call, func.CallOp)]
    while work:
        call, depth = work.pop()
        if depth > len(functions):
            _fail(call, f"cannot inline the call to @{call.callee.string_value()}: the functions are recursive")
        work.extend((inner, depth + 1) for inner in inline_call(call, _callee(call, functions)))


def _callee(call: func.CallOp, functions: dict[str, func.FuncOp]) -> func.FuncOp:
    name = call.callee.string_value()
    callee = functions.get(name)
    if callee is None or callee.body.blocks.first is None:
        _fail(call, f"cannot inline the call to @{name}: the module has no function @{name} with a body")
    if is_kernel(callee):
        _fail(call, f"cannot inline the call to @{name}: it is a kernel; launch it with relay.launch")
    return callee


def inline_call(call: func.CallOp, callee: func.FuncOp) -> list[func.CallOp]:
    """Clones the callee's body before `call` and forwards its returned values; returns the
    calls the clone holds."""
    block = callee.body.block
    mapping: dict[SSAValue, SSAValue] = dict(zip(block.args, call.arguments))
    before_call = InsertPoint.before(call)
    calls: list[func.CallOp] = []
    for op in block.ops:
        if isinstance(op, func.ReturnOp):
            results = [mapping.get(v, v) for v in op.arguments]
            break
        clone = op.clone(mapping)
        Rewriter.insert_op(clone, before_call)
        calls += [inner for inner in clone.walk() if isinstance(inner, func.CallOp)]
    else:
        _fail(call, f"cannot inline @{callee.sym_name.data}: its body does not end in func.return")
    for old, new in zip(call.results, results):
        old.replace_all_uses_with(new)
    call.detach()
    call.erase()
    return calls


# --- Phase 2: clean up ---------------------------------------------------------------------


def erase_unreferenced(module: ModuleOp, main: func.FuncOp) -> None:
    """Erases the functions that `main`, the kernels and the module's other ops do not
    reach through symbol references (one walk of the module; a chain of functions each
    referring to the next goes at once). Kernels always stay."""
    functions = {f.sym_name.data: f for f in module.ops if isinstance(f, func.FuncOp)}
    refers = {op: _referenced_symbols(op) for op in module.ops}
    reached = {name for name, f in functions.items() if f is main or is_kernel(f)}
    work = [name for op, names in refers.items() if not isinstance(op, func.FuncOp) for name in names]
    work += list(reached)
    while work:
        name = work.pop()
        fn = functions.get(name)
        if fn is None:
            continue
        reached.add(name)
        work += [n for n in refers[fn] if n not in reached and n in functions]
    for name, fn in functions.items():
        if name not in reached:
            fn.detach()
            fn.erase()


def _referenced_symbols(root: Operation) -> set[str]:
    referenced: set[str] = set()
    for op in root.walk():
        for attr in (*op.properties.values(), *op.attributes.values()):
            if isinstance(attr, SymbolRefAttr):
                referenced.add(attr.string_value())
    return referenced


def is_kernel(fn: func.FuncOp) -> bool:
    """Kernels (made by convert-relay-to-loops) take buffers; relay functions take tensors."""
    return any(isinstance(t, MemRefType) for t in fn.function_type.inputs.data)


def _fail(op: Operation, message: str) -> NoReturn:
    message = f"{location_of(op)}: {message}"
    op.emit_error(message, LoweringError(message))
