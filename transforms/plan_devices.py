"""
plan-devices: give every relay value an SEScope (where its result is stored and computed).

Words: a *domain* is a set of values that must share one scope (`device_domains.py`); a
*consumer* is an op that reads a value where it is (a primitive op, `func.call`,
`func.return`); an *annotation* is `relay.on_device` or `relay.device_copy`, a *copy point*:
it reads its operand on one scope (its operand domain) and its result may be read on
another. A *reader* is a consumer or an annotation. Ordinary values (parameters, primitive and
call results, device_copy results, pinned constants) have one domain that every use shares;
an `on_device` result and an unpinned constant are planned per use. No reader sees through an
annotation: in a chain of them, each link reads the link before it.

Constraints come from `relay.on_device` (`se_scope` on its operand with `constrain_body`, on
each use of its result with `constrain_result`, and on the function result when returned),
`relay.device_copy` (`src_se_scope`/`dst_se_scope`), `relay.se_scope` argument/result
attributes of functions, and `se_scope` already on relay ops (pinned ops, earlier runs).

Phase 0, check: every value is defined before its use (SSA dominance, which xDSL's `verify()`
  does not check, and which write-back's walk in program order relies on; a module built in
  Python reaches this pass unverified); build the CompilationConfig; every scope in the input
  must name a device with a target and that device's configured target (checked as phase 1
  reads each scope, so all errors come before the IR changes); fused or lowered ops are
  rejected.
Phase 1, collect and solve: functions' parameter and result domains first, then every op in
  program order. A primitive op, its operands and its result share one domain; calls share
  the callee's domains; `func.return` shares the function's result domains. Domains are
  joined as constraints are found, so a conflict is reported at the op that raises it, with
  the chain that fixed each side's scope. Each constraint carries its `Origin` (what it is,
  where it is written), and the store records it as the source of the fields it fixes.
Phase 2, default: free on_devices (both flags false) first, in program order: each use takes
  Default(use, operand), then the operand Default(operand, first use). Then, functions in
  module order, results take Default(result, default scope) and parameters
  Default(parameter, first result). Every other domain takes Default(domain, default scope).
  Each Default step records its fallback (and why the fallback had those fields) as the
  source of the fields it fills.
Remarks (option `explain=true`), between phases 2 and 3: for every value with a domain of
  its own, a `Remark` (`device_remarks.py`) read off its domain's sources: each field, the
  constraint or Default step that fixed it, or the canonical form. Those whose fields are
  not all fixed by the value's own annotations are printed to stderr as
  `file:line:col: remark: ...`. `solve` and `remark_for` give `xrelay.explain` the same.
  An op place-by-cost placed carries its reason (`relay.cost_placement`: measured times, the
  runner-up): that is the origin of its scope and its remark, always printed; write-back
  drops the attribute.
Phase 3, write back, ops in program order: canonical `se_scope` on every relay op but
  device_copy, canonical `relay.se_scope` on every function argument and result. Every
  reader's operand is rewired to what the link under it produced: an on_device's operand
  (as the on_device read it) when the two scopes agree, else a `relay.device_copy` from the
  on_device's operand scope to the reader's scope, made where the on_device stood; an
  explicit device_copy reads its operand on its source scope and stays, canonical, unless
  its two scopes agree. So each link of a chain is its own copy point, and a chain of k
  annotations costs up to k copies. A value is copied to a scope at most once: a second
  copy of one value to one scope, explicit or not, reads the first. Unpinned constants are
  materialised once per scope they are used on. `relay.on_device` and redundant copies
  disappear; an explicit copy that nobody reads stays unless it is redundant.

Invariants: input and output verify; the output has no `relay.on_device`; running the pass on
its own output changes nothing; interpretation results are unchanged; a remark's scope is the
scope written back for its value.
Not handled: control flow (functions are single blocks), host-only ops (there are none yet),
device polymorphism of functions.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import cast

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, MemRefType, ModuleOp, StringAttr, TensorType
from xdsl.ir import Attribute, BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from xrelay.diagnostics import ConfigError, PlacementError, VerifyError, emit_remark, location_of
from xrelay.dialects import relay
from xrelay.dialects.dominance import verify_dominance
from xrelay.dialects.dtypes import dtype_of
from xrelay.dialects.se_scope import FIELDS, SCOPE_ATTR, SEScopeAttr
from xrelay.runtime.device_kinds import device_kind
from xrelay.transforms.compilation_config import TARGET_KIND_DEVICES, CompilationConfig, target_kind
from xrelay.transforms.device_domains import Conflict, DeviceDomains, Domain, Origin
from xrelay.transforms.device_remarks import Remark, Step, describe_scope, steps_of

COST_ATTR = "relay.cost_placement"  # place-by-cost's reason for an op's se_scope (transforms/place_by_cost.py)
PASS_ORDER = "plan-devices, fuse-ops, convert-relay-to-loops"
PRIMITIVES = frozenset(relay.PRIMITIVE_OPS)  # exact types: much cheaper than isinstance on 37


@dataclass(frozen=True)
class PlanDevicesPass(ModulePass):
    """Plans a canonical SEScope for every value; inserts the copies the plan needs."""

    name = "plan-devices"

    targets: tuple[str, ...] = ("c",)
    default_device: str | None = None
    host_target: str = "c"
    explain: bool = False
    """Print a remark to stderr for each value whose scope is not all from its own annotation."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        config = CompilationConfig.from_options(self.targets, self.default_device, self.host_target)
        constraints = solve(op, config)
        if self.explain:
            for remark in remarks(constraints):
                if not remark.local:
                    emit_remark(remark.location, str(remark))
        WriteBack(constraints).run()
        check_dtypes_held(op)


def check_dtypes_held(module: ModuleOp) -> None:
    """Every value is planned on a device whose kind holds its element type (the kind's
    `dtypes` in runtime/device_kinds.py): an int64 value on a device without 64-bit integers
    is an error at the op that computes it (or copies it there)."""
    for op in module.walk():
        scope = op.dst_se_scope if isinstance(op, relay.DeviceCopyOp) else getattr(op, "se_scope", None)
        if not isinstance(op, (relay.RelayOp, relay.DeviceCopyOp)) or not isinstance(scope, SEScopeAttr):
            continue
        kind = device_kind(scope.device or "")
        dtype = dtype_of(op.results[0].type)
        if kind is None or dtype is None or dtype.name in kind.dtypes:
            continue
        msg = (
            f"'{op.name}' at {location_of(op)} computes {op.results[0].type} ({dtype.name}) on {scope}, but "
            f"{kind.name} devices hold only {', '.join(kind.dtypes)}; place it on the host with relay.on_device"
        )
        op.emit_error(msg, PlacementError(msg))


def solve(module: ModuleOp, config: CompilationConfig) -> Constraints:
    """Phases 0 to 2: the domains of every value, solved and defaulted; the IR is unchanged."""
    verify_dominance(module, VerifyError)
    functions = [f for f in module.ops if isinstance(f, func.FuncOp)]
    constraints = collect_constraints(config, functions)
    apply_defaults(constraints)
    return constraints


# --- Phase 0 and 1: check, collect and solve ----------------------------------------------------


@dataclass
class Constraints:
    """The domains of one module and what they belong to."""

    config: CompilationConfig
    functions: list[func.FuncOp]
    domains: DeviceDomains = field(default_factory=DeviceDomains)
    values: dict[SSAValue, Domain] = field(default_factory=dict[SSAValue, Domain])
    """Values whose uses all share one domain."""
    ops: dict[Operation, Domain] = field(default_factory=dict[Operation, Domain])
    """A primitive op's domain, an on_device's operand domain, a device_copy's source domain."""
    params: dict[str, list[Domain]] = field(default_factory=dict[str, list[Domain]])
    results: dict[str, list[Domain]] = field(default_factory=dict[str, list[Domain]])
    free: list[relay.OnDeviceOp] = field(default_factory=list[relay.OnDeviceOp])
    annotations: dict[relay.OnDeviceOp, SEScopeAttr] = field(default_factory=dict[relay.OnDeviceOp, SEScopeAttr])
    """Each on_device's scope, checked, for the uses its result constrains."""
    order: dict[Operation, int] = field(default_factory=dict[Operation, int])
    own: dict[SSAValue, frozenset[str]] = field(default_factory=dict[SSAValue, frozenset[str]])
    """The fields each value's own annotations set (its op's se_scope, its parameter attribute,
    an on_device or copy of it), for remarks: a value they fully explain gets none."""
    placed: dict[SSAValue, Origin] = field(default_factory=dict[SSAValue, Origin])
    """The results of ops place-by-cost placed, with its reason: their remarks give it."""

    def annotate(self, value: SSAValue | None, scope: SEScopeAttr) -> None:
        """Records that `value` carries an annotation of `scope` (it already joined its domain)."""
        if value is not None:
            fields = _fields_set(scope)
            known = self.own.get(value)
            self.own[value] = fields if known is None else known | fields

    def demand(self, consumer: Operation, index: int) -> Domain:
        """The domain in which `consumer` reads its operand `index`."""
        if isinstance(consumer, func.CallOp):
            return self.params[consumer.callee.string_value()][index]
        if isinstance(consumer, func.ReturnOp):
            parent = consumer.parent_op()
            assert isinstance(parent, func.FuncOp)
            return self.results[parent.sym_name.data][index]
        return self.ops[consumer]


def collect_constraints(config: CompilationConfig, functions: list[func.FuncOp]) -> Constraints:
    c = Constraints(config, functions)
    for fn in functions:
        _collect_signature(c, fn)
    for fn in functions:
        for op in _body_ops(fn):
            c.order[op] = len(c.order)
            _collect_op(c, op)
    return c


def _body_ops(fn: func.FuncOp) -> list[Operation]:
    return [op for block in fn.body.blocks for op in block.ops]


def _collect_signature(c: Constraints, fn: func.FuncOp) -> None:
    name = fn.sym_name.data
    ins, outs = fn.function_type.inputs.data, fn.function_type.outputs.data
    for i, ty in enumerate(ins):
        _check_tensor_type(fn, f"argument {_arg_name(fn, i)}", ty)
    for i, ty in enumerate(outs):
        _check_tensor_type(fn, f"result #{i}", ty)
    args: list[SSAValue | None] = [None] * len(ins) if fn.is_declaration else list(fn.args)
    c.params[name] = [
        _attr_domain(c, fn, fn.arg_attrs, i, f"argument {_arg_name(fn, i)} of @{name}", args[i])
        for i in range(len(ins))
    ]
    c.results[name] = [_attr_domain(c, fn, fn.res_attrs, i, f"result #{i} of @{name}", None) for i in range(len(outs))]
    if not fn.is_declaration:
        for arg, domain in zip(fn.args, c.params[name]):
            c.values[arg] = domain


def _check_tensor_type(fn: func.FuncOp, what: str, ty: Attribute) -> None:
    """Every value of a relay program is a static tensor of f32, i64 or i1 (`dialects/dtypes.py`),
    also a parameter no op uses
    (whose type nothing else checks, and the executor would meet at run time). Memrefs are
    a lowered kernel's, whose launch is the error (`_reject`)."""
    if isinstance(ty, MemRefType):
        return
    if isinstance(ty, TensorType):
        tensor = cast(TensorType[Attribute], ty)  # isinstance leaves the element type unknown
        if dtype_of(tensor) is not None and all(d >= 0 for d in tensor.get_shape()):
            return
    msg = (
        f"{what} of @{fn.sym_name.data} at {location_of(fn)} has type {ty}, but relay values are "
        "tensors of f32, i64 or i1 with a static shape (e.g. tensor<2x3xf32>); change its type"
    )
    fn.emit_error(msg, VerifyError(msg))


def _arg_name(fn: func.FuncOp, index: int) -> str:
    if not fn.is_declaration and fn.args[index].name_hint:
        return f"%{fn.args[index].name_hint}"
    return f"#{index}"


def _attr_domain(
    c: Constraints,
    fn: func.FuncOp,
    attrs: ArrayAttr[DictionaryAttr] | None,
    index: int,
    what: str,
    arg: SSAValue | None,
) -> Domain:
    scope = attrs.data[index].data.get(SCOPE_ATTR) if attrs is not None else None
    if scope is None:
        return c.domains.fresh()
    if not isinstance(scope, SEScopeAttr):
        msg = f"expected {SCOPE_ATTR} of {what} ({location_of(fn)}) to be a #relay.se_scope, but found {scope}"
        fn.emit_error(msg, PlacementError(msg))
    origin = Origin(f"{SCOPE_ATTR} of {what}", location_of(fn))
    scope = _checked(c, fn, scope, f"{origin.what} ({location_of(fn)})")
    c.annotate(arg, scope)
    return c.domains.fresh(scope, origin)


def _collect_op(c: Constraints, op: Operation) -> None:
    if isinstance(op, relay.ConstantOp):
        _collect_constant(c, op)
    elif type(op) in PRIMITIVES and isinstance(op, relay.RelayOp):
        _collect_primitive(c, op)
    elif isinstance(op, relay.OnDeviceOp):
        _collect_on_device(c, op)
    elif isinstance(op, relay.DeviceCopyOp):
        _collect_device_copy(c, op)
    elif isinstance(op, func.CallOp):
        _collect_call(c, op)
    elif isinstance(op, func.ReturnOp):
        for i in range(len(op.operands)):
            _consume(c, op, i, c.demand(op, i))
    else:
        _reject(op)


def _collect_constant(c: Constraints, op: relay.ConstantOp) -> None:
    """A pinned constant is an ordinary value; an unpinned one is planned per use."""
    if op.se_scope is None:
        return
    origin = Origin("se_scope of 'relay.constant'", location_of(op))
    scope = _checked(c, op, op.se_scope, str(origin))
    domain = c.domains.fresh(scope, origin)
    c.annotate(op.res, scope)
    c.ops[op] = c.values[op.res] = domain


def _collect_primitive(c: Constraints, op: relay.RelayOp) -> None:
    """One domain for the op, its operands and its result."""
    if op.se_scope is None:
        domain = c.domains.fresh()
    elif isinstance(why := op.attributes.get(COST_ATTR), StringAttr):  # place-by-cost's choice
        origin = Origin("place-by-cost", location_of(op), note=f" ({why.data})")
        domain = c.domains.fresh(_checked(c, op, op.se_scope, str(origin)), origin)
        c.placed.update((result, origin) for result in op.results)
    else:
        origin = Origin(f"se_scope of '{op.name}'", location_of(op))
        scope = _checked(c, op, op.se_scope, str(origin))
        domain = c.domains.fresh(scope, origin)
        for result in op.results:
            c.annotate(result, scope)
    c.ops[op] = domain
    for i in range(len(op.operands)):
        _consume(c, op, i, domain)
    for result in op.results:
        c.values[result] = domain


def _collect_on_device(c: Constraints, op: relay.OnDeviceOp) -> None:
    scope = _checked(c, op, op.se_scope, f"se_scope of 'relay.on_device' at {location_of(op)}")
    c.annotations[op] = scope
    if op.constrains_body:
        c.ops[op] = c.domains.fresh(scope, Origin("relay.on_device", location_of(op)))
        c.annotate(op.data, scope)
    else:
        c.ops[op] = c.domains.fresh()
    if not op.constrains_body and not op.constrains_result:
        c.free.append(op)
    _consume(c, op, 0, c.ops[op])


def _collect_device_copy(c: Constraints, op: relay.DeviceCopyOp) -> None:
    loc = location_of(op)
    src_origin = Origin("src_se_scope of 'relay.device_copy'", loc)
    dst_origin = Origin("dst_se_scope of 'relay.device_copy'", loc)
    src = _checked(c, op, op.src_se_scope, str(src_origin))
    dst = _checked(c, op, op.dst_se_scope, str(dst_origin))
    c.annotate(op.data, src)
    c.annotate(op.res, dst)
    c.ops[op] = c.domains.fresh(src, src_origin)
    _consume(c, op, 0, c.ops[op])
    c.values[op.res] = c.domains.fresh(dst, dst_origin)


def _collect_call(c: Constraints, op: func.CallOp) -> None:
    callee = op.callee.string_value()
    if callee not in c.params:
        msg = f"plan-devices cannot place a call to @{callee}: it is not a function of this module"
        op.emit_error(msg, PlacementError(msg))
    for i in range(len(op.operands)):
        _consume(c, op, i, c.params[callee][i])
    for result, domain in zip(op.results, c.results[callee]):
        c.values[result] = domain


def _consume(c: Constraints, consumer: Operation, index: int, demand: Domain) -> None:
    """`consumer` reads operand `index` in `demand`: tie the operand's domain to it."""
    value = consumer.operands[index]
    domain = c.values.get(value)
    if domain is not None:
        _report(consumer, value, c.domains.unify(domain, demand), value_first=True)
        return
    annotation = value.owner
    if not isinstance(annotation, relay.OnDeviceOp):
        return  # an unpinned constant: materialised on whatever scope this use needs
    returned = isinstance(consumer, func.ReturnOp) and annotation.constrains_body
    if annotation.constrains_result or returned:
        note = ", whose result the function returns" if returned else ""
        origin = Origin("relay.on_device", location_of(annotation), note=note)
        scope = c.annotations[annotation]
        _report(consumer, value, c.domains.constrain(demand, scope, origin), value_first=False)


def _report(consumer: Operation, value: SSAValue, conflict: Conflict | None, value_first: bool) -> None:
    """A failed Join at `consumer`: the message names both scopes and the origins of the
    field they disagree on, and shows (and carries) each side's chain (the value's side and
    its use's side, in the order they were joined)."""
    if conflict is None:
        return
    location = location_of(consumer)
    use = f"its use in '{consumer.name}'"
    sides = (_describe(value), use) if value_first else (use, _describe(value))
    chains = (
        Remark(sides[0], conflict.first, steps_of(conflict.first_sources, canonical=False), location),
        Remark(sides[1], conflict.second, steps_of(conflict.second_sources, canonical=False), location),
    )
    msg = (
        f"conflicting scopes for {_describe(value)} at its use in '{consumer.name}' "
        f"({location}): {conflict.first.short_str()} ({conflict.first_origin}) and "
        f"{conflict.second.short_str()} ({conflict.second_origin}); insert relay.on_device or "
        "relay.device_copy to say where the copy goes\n" + "\n".join(f"  {chain}" for chain in chains)
    )
    consumer.emit_error(msg, PlacementError(msg, chains))


def _describe(value: SSAValue) -> str:
    if value.name_hint:
        return f"%{value.name_hint}"
    if isinstance(value, BlockArgument):
        fn = value.block.parent_op()
        name = fn.sym_name.data if isinstance(fn, func.FuncOp) else "?"
        return f"argument #{value.index} of @{name}"
    owner = value.owner
    assert isinstance(owner, Operation)
    return f"the result of '{owner.name}' ({location_of(owner)})"


def _checked(c: Constraints, op: Operation, scope: SEScopeAttr, what: str) -> SEScopeAttr:
    """`scope` (named `what` in messages) checked against the config, with the device its
    target implies filled in."""
    problem = c.config.check(scope)
    if problem is not None:
        msg = f"{what}: {problem}; add the target to plan-devices' targets option or change the scope"
        op.emit_error(msg, ConfigError(msg))
    if scope.device is None and scope.target is not None:
        device = TARGET_KIND_DEVICES.get(target_kind(scope.target))
        return SEScopeAttr(device, scope.id, scope.target, scope.memory)
    return scope


def _reject(op: Operation) -> None:
    if isinstance(op, (relay.FusedOp, relay.LaunchOp, relay.YieldOp)):
        msg = (
            f"'{op.name}' at {location_of(op)} may not appear in the input of plan-devices, "
            f"which runs before fusion and lowering (pass order: {PASS_ORDER})"
        )
    else:
        msg = (
            f"plan-devices cannot place '{op.name}' at {location_of(op)}; expected relay ops, "
            "func.call and func.return in function bodies"
        )
    op.emit_error(msg, PlacementError(msg))


# --- Phase 2: default ---------------------------------------------------------------------------


def apply_defaults(c: Constraints) -> None:
    """Free on_devices, then results, then parameters from the first result, then the rest.
    Each Default step records its fallback as the origin of the fields it fills."""
    for op in c.free:
        _default_free(c, op)
    default = c.config.default_scope
    by_default = Origin(f"the default scope ({describe_scope(default)})")
    for fn in c.functions:
        name = fn.sym_name.data
        results, params = c.results[name], c.params[name]
        for result in results:
            c.domains.default(result, default, by_default)
        if not results:
            for param in params:
                c.domains.default(param, default, by_default)
            continue
        first = Origin(f"@{name} result 0 ({describe_scope(c.domains.scope(results[0]))})", location_of(fn))
        for param in params:
            c.domains.default_from(param, results[0], first)
    for domain in c.domains.roots():
        c.domains.default(domain, default, by_default)


def _default_free(c: Constraints, op: relay.OnDeviceOp) -> None:
    """TVM's free on_device: uses and operand default from each other; copy only if they differ."""
    body = c.ops[op]
    uses = sorted(op.res.uses, key=lambda use: (c.order[use.operation], use.index))
    demands = [c.demand(use.operation, use.index) for use in uses]
    operand = Origin("the operand of the free relay.on_device", location_of(op))
    for demand in demands:
        c.domains.default_from(demand, body, operand)
    if demands:
        reader = uses[0].operation
        first = Origin(f"the first use of the free relay.on_device, in '{reader.name}'", location_of(reader))
        c.domains.default_from(body, demands[0], first)


# --- Remarks: why each value has its scope ------------------------------------------------------


def remarks(c: Constraints) -> list[Remark]:
    """A remark for every value with a domain of its own (parameters, results of primitive
    ops, calls and copies, pinned constants), functions in module order, values in program
    order. An on_device result and an unpinned constant are planned per use: no remark."""
    found: list[Remark] = []
    for fn in c.functions:
        values: list[SSAValue] = [] if fn.is_declaration else list(fn.args)
        values += [result for op in _body_ops(fn) for result in op.results]
        found += [remark for value in values if (remark := remark_for(c, value)) is not None]
    return found


def remark_for(c: Constraints, value: SSAValue) -> Remark | None:
    """Why `value` has its scope: the sources of its domain's fields, as steps."""
    domain = c.values.get(value)
    if domain is None:
        return None
    root = c.domains.find(domain)
    scope = c.config.canonical(root.scope)
    owner = value.owner
    where = (
        owner if isinstance(owner, Operation) else value.block.parent_op() if isinstance(value, BlockArgument) else None
    )
    location = location_of(where) if where is not None else "unknown location"
    steps = steps_of(root.sources)
    if (placed := c.placed.get(value)) is not None:  # its op's own reason, not its domain's first
        steps = (Step(FIELDS, placed.what, placed.location, "constraint", note=placed.note),)
    local = placed is None and _is_local(steps, c.own.get(value))
    return Remark(_describe(value), scope, steps, location, local)


def _is_local(steps: tuple[Step, ...], own: frozenset[str] | None) -> bool:
    """Whether `own` (the fields a value's own annotations set) covers every field the steps
    fix other than by the canonical form."""
    fixed = own or frozenset[str]()
    return all(step.how == "canonical" or fixed.issuperset(step.fields) for step in steps)


@lru_cache(maxsize=256)
def _fields_set(scope: SEScopeAttr) -> frozenset[str]:
    """The names of the fields `scope` constrains (few distinct scopes: computed once each)."""
    return frozenset(name for name, value in zip(FIELDS, scope.fields()) if value is not None)


# --- Phase 3: write back ------------------------------------------------------------------------


class WriteBack:
    """Writes the solution into the IR: scopes, rewired operands, copies, constants.

    Ops are visited in program order, so every value a reader asks for has been written
    already; a copy is made right before the annotation it stands for, after the value it
    copies and before every reader that asks for it."""

    def __init__(self, c: Constraints):
        self.c = c
        self.canonical_of: dict[Domain, SEScopeAttr] = {}  # by root: scopes are final now
        self.canonical_forms: dict[SEScopeAttr, SEScopeAttr] = {}
        self.link_inputs: dict[relay.OnDeviceOp, tuple[SSAValue, SEScopeAttr]] = {}
        """Each on_device's operand as the annotation reads it, and on which scope."""
        self.copy_results: dict[SSAValue, SSAValue] = {}
        """What each explicit device_copy's result became: the copy itself, an equal copy made
        earlier, or its operand when the two scopes agree."""
        self.copies: dict[tuple[SSAValue, SEScopeAttr], SSAValue] = {}
        self.constants: dict[tuple[relay.ConstantOp, SEScopeAttr], SSAValue] = {}
        self.last_constant: dict[relay.ConstantOp, Operation] = {}
        self.kept: set[relay.DeviceCopyOp] = set()

    def run(self) -> None:
        for fn in self.c.functions:
            self.write_signature(fn)
        for fn in self.c.functions:
            ops = _body_ops(fn)
            for op in ops:
                self.write_op(op)
            self.erase_annotations(ops)

    def scope(self, domain: Domain) -> SEScopeAttr:
        root = self.c.domains.find(domain)
        if root not in self.canonical_of:
            self.canonical_of[root] = self.canonical(root.scope)
        return self.canonical_of[root]

    def canonical(self, scope: SEScopeAttr) -> SEScopeAttr:
        """The canonical form, one attribute object per distinct scope (cheap comparisons)."""
        if scope not in self.canonical_forms:
            self.canonical_forms[scope] = self.c.config.canonical(scope)
        return self.canonical_forms[scope]

    def write_signature(self, fn: func.FuncOp) -> None:
        name = fn.sym_name.data
        fn.arg_attrs = _with_scopes(fn.arg_attrs, [self.scope(d) for d in self.c.params[name]])
        fn.res_attrs = _with_scopes(fn.res_attrs, [self.scope(d) for d in self.c.results[name]])

    def write_op(self, op: Operation) -> None:
        if isinstance(op, relay.ConstantOp):
            if op in self.c.ops:
                op.properties["se_scope"] = self.scope(self.c.ops[op])
        elif type(op) in PRIMITIVES:
            op.properties["se_scope"] = self.scope(self.c.ops[op])
            op.attributes.pop(COST_ATTR, None)
            self.rewire_operands(op)
        elif isinstance(op, (func.CallOp, func.ReturnOp)):
            self.rewire_operands(op)
        elif isinstance(op, relay.OnDeviceOp):
            scope = self.scope(self.c.ops[op])
            self.link_inputs[op] = (self.value_on(op.data, scope), scope)
        elif isinstance(op, relay.DeviceCopyOp):
            self.write_device_copy(op)

    def rewire_operands(self, consumer: Operation) -> None:
        for i, operand in enumerate(consumer.operands):
            value = self.value_on(operand, self.scope(self.c.demand(consumer, i)))
            if value is not operand:
                consumer.operands[i] = value

    def write_device_copy(self, op: relay.DeviceCopyOp) -> None:
        """The copy reads its operand on its source scope and stays, canonical, unless it is
        redundant: equal scopes, or that value already has a copy on the destination."""
        src, dst = self.scope(self.c.ops[op]), self.scope(self.c.values[op.res])
        value = self.value_on(op.data, src)
        key = (value, dst)
        if src == dst:
            self.copy_results[op.res] = value
        elif key in self.copies:
            self.copy_results[op.res] = self.copies[key]
        else:
            if value is not op.data:
                op.operands[0] = value
            op.properties["src_se_scope"], op.properties["dst_se_scope"] = src, dst
            self.kept.add(op)
            self.copies[key] = self.copy_results[op.res] = op.res

    def value_on(self, value: SSAValue, scope: SEScopeAttr) -> SSAValue:
        """`value` as a reader on `scope` (its operand's domain, canonical) should read it. An
        on_device is a copy point: its operand as it read it, copied here if the scopes
        differ. Any other value is already on `scope`: the domains agree."""
        owner = value.owner
        if isinstance(owner, relay.OnDeviceOp):
            inner, inner_scope = self.link_inputs[owner]
            if inner_scope == scope:
                return inner
            return self.copy(inner, inner_scope, scope, owner)
        if isinstance(owner, relay.DeviceCopyOp):
            return self.copy_results[value]
        if isinstance(owner, relay.ConstantOp) and owner not in self.c.ops:
            return self.constant_on(owner, scope)
        return value

    def copy(self, value: SSAValue, src: SEScopeAttr, dst: SEScopeAttr, at: Operation) -> SSAValue:
        """`value` (on `src`) on `dst`: the copy made earlier, or a new one before `at`."""
        key = (value, dst)
        if key not in self.copies:
            new = relay.DeviceCopyOp(value, src, dst)
            new.res.name_hint = at.results[0].name_hint
            Rewriter.insert_op(new, InsertPoint.before(at))
            self.kept.add(new)
            self.copies[key] = new.res
        return self.copies[key]

    def constant_on(self, op: relay.ConstantOp, scope: SEScopeAttr) -> SSAValue:
        """The constant materialised on `scope`: the op itself first, then one clone per scope."""
        key = (op, scope)
        if key in self.constants:
            return self.constants[key]
        if op not in self.last_constant:
            op.properties["se_scope"] = scope
            self.last_constant[op] = op
            self.constants[key] = op.res
            return op.res
        clone = op.clone()
        clone.properties["se_scope"] = scope
        Rewriter.insert_op(clone, InsertPoint.after(self.last_constant[op]))
        self.last_constant[op] = clone
        self.constants[key] = clone.results[0]
        return clone.results[0]

    def erase_annotations(self, ops: list[Operation]) -> None:
        """Drop on_device ops and the copies that were merged or redundant; unused constants
        get the default scope."""
        for op in reversed(ops):
            if isinstance(op, relay.OnDeviceOp) or (isinstance(op, relay.DeviceCopyOp) and op not in self.kept):
                assert not op.res.uses, "every reader was rewired to the annotation's source"
                Rewriter.erase_op(op)
            elif isinstance(op, relay.ConstantOp) and op.se_scope is None:
                op.properties["se_scope"] = self.c.config.canonical(self.c.config.default_scope)


def _with_scopes(attrs: ArrayAttr[DictionaryAttr] | None, scopes: list[SEScopeAttr]) -> ArrayAttr[DictionaryAttr]:
    old: list[Mapping[str, Attribute]] = [d.data for d in attrs.data] if attrs is not None else [{} for _ in scopes]
    merged: list[DictionaryAttr] = []
    for entries, scope in zip(old, scopes):
        updated = dict(entries)
        updated[SCOPE_ATTR] = scope
        merged.append(DictionaryAttr(updated))
    return ArrayAttr(merged)
