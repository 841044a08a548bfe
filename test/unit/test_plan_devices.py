"""plan-devices: the domain store, and differential tests on random graphs.

On random programs, planning must not change what `xrelay.interpret` computes, must leave no
`relay.on_device`, must keep every edge reading the same value, directly or through copies (at
most one per annotation on the edge: each is its own copy point), with a copy on exactly the
edges whose two ends are on different scopes (and a value copied to a scope at most once), and
must be idempotent. Chains of annotations are checked against a reference planner in
test_plan_devices_chains.py.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from random_graphs import random_inputs, random_module_text
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import BlockArgument, Operation, SSAValue

import xrelay
from xrelay.dialects import relay
from xrelay.dialects.se_scope import FIELDS, SEScopeAttr
from xrelay.transforms.compilation_config import CompilationConfig
from xrelay.transforms.device_domains import DeviceDomains, Origin
from xrelay.transforms.plan_devices import PlanDevicesPass

TARGETS = ("c", "opencl")
CONFIG = CompilationConfig.from_options(TARGETS)
CPU, OPENCL = SEScopeAttr("cpu"), SEScopeAttr("opencl")


# --- the domain store -----------------------------------------------------------------------


def test_unify_joins_fields() -> None:
    domains = DeviceDomains()
    a = domains.fresh(SEScopeAttr(device="opencl"), Origin("a"))
    b = domains.fresh(SEScopeAttr(id=1), Origin("b"))
    c = domains.fresh()
    assert domains.unify(a, b) is None
    assert domains.unify(b, c) is None
    assert domains.find(a) is domains.find(c)
    assert domains.scope(c) == SEScopeAttr("opencl", 1)
    assert [s.origin.what if s is not None else None for s in domains.sources(c)] == ["a", "b", None, None]


def test_unify_reports_both_sides_of_a_conflict() -> None:
    domains = DeviceDomains()
    a = domains.fresh(CPU, Origin("from a"))
    b = domains.fresh(OPENCL, Origin("from b"))
    conflict = domains.unify(a, b)
    assert conflict is not None
    assert (conflict.first, conflict.first_origin.what) == (CPU, "from a")
    assert (conflict.second, conflict.second_origin.what) == (OPENCL, "from b")
    assert domains.find(a) is not domains.find(b), "a failed join must not merge"


def test_constrain_keeps_each_fields_first_origin() -> None:
    """The conflict names where the field in dispute came from, not the class's first constraint."""
    domains = DeviceDomains()
    d = domains.fresh()
    assert domains.constrain(d, SEScopeAttr(device="cpu"), Origin("first")) is None
    assert domains.constrain(d, SEScopeAttr("cpu", memory="x"), Origin("second")) is None
    assert domains.scope(d) == SEScopeAttr("cpu", memory="x")
    conflict = domains.constrain(d, SEScopeAttr(memory="y"), Origin("third"))
    assert conflict is not None and conflict.field == FIELDS.index("memory")
    assert (conflict.first_origin.what, conflict.second_origin.what) == ("second", "third")
    device = domains.sources(d)[0]
    assert device is not None and device.origin.what == "first", "agreeing constraints keep the first source"


def test_default_records_the_fallback_and_its_sources() -> None:
    domains = DeviceDomains()
    result = domains.fresh(SEScopeAttr("opencl", 1), Origin("result annotation"))
    param = domains.fresh(CPU, Origin("param annotation"))
    domains.default_from(param, result, Origin("@main result 0"))
    assert domains.scope(param) == SEScopeAttr("cpu", 1), "the target comes only on its own device"
    device, id, target, memory = domains.sources(param)
    assert device is not None and device.origin.what == "param annotation" and device.fallback is None
    assert id is not None and id.origin.what == "@main result 0" and id.fallback == SEScopeAttr("opencl", 1)
    assert id.via is not None and id.via.origin.what == "result annotation"
    assert target is None and memory is None


def test_default_fills_only_missing_fields() -> None:
    domains = DeviceDomains()
    d = domains.fresh(SEScopeAttr(id=2))
    domains.default(d, SEScopeAttr("opencl", 0, "opencl"), Origin("default"))
    assert domains.scope(d) == SEScopeAttr("opencl", 2, "opencl")
    e = domains.fresh(SEScopeAttr(device="cpu"))
    domains.default(e, SEScopeAttr("opencl", 0, "opencl"), Origin("default"))
    assert domains.scope(e) == SEScopeAttr("cpu", 0), "the target comes only on its own device"


def test_long_chains_stay_shallow() -> None:
    """Union by size and path halving: finding the root of a long chain is cheap afterwards."""
    domains = DeviceDomains()
    nodes = [domains.fresh() for _ in range(10_000)]
    for left, right in zip(nodes, nodes[1:]):
        assert domains.unify(left, right) is None
    root = domains.find(nodes[0])
    assert all(domains.find(n) is root for n in nodes)
    depth = 0
    node = nodes[-1]
    while node.parent is not node:
        node, depth = node.parent, depth + 1
    assert depth <= 2


# --- checking a plan ------------------------------------------------------------------------


def _functions(module: ModuleOp) -> dict[str, func.FuncOp]:
    return {f.sym_name.data: f for f in module.ops if isinstance(f, func.FuncOp)}


def _attr_scope(attrs, index: int) -> SEScopeAttr:
    assert attrs is not None
    scope = attrs.data[index].data["relay.se_scope"]
    assert isinstance(scope, SEScopeAttr) and CONFIG.canonical(scope) == scope
    return scope


def _value_scope(value: SSAValue, functions: dict[str, func.FuncOp]) -> SEScopeAttr:
    if isinstance(value, BlockArgument):
        fn = value.block.parent_op()
        assert isinstance(fn, func.FuncOp)
        return _attr_scope(fn.arg_attrs, value.index)
    owner = value.owner
    if isinstance(owner, relay.DeviceCopyOp):
        return owner.dst_se_scope
    if isinstance(owner, func.CallOp):
        return _attr_scope(functions[owner.callee.string_value()].res_attrs, value.index)
    assert isinstance(owner, relay.RelayOp), owner.name
    return owner.se_scope


def _required_scope(consumer: Operation, index: int, functions: dict[str, func.FuncOp]) -> SEScopeAttr:
    if isinstance(consumer, relay.DeviceCopyOp):
        return consumer.src_se_scope
    if isinstance(consumer, func.CallOp):
        return _attr_scope(functions[consumer.callee.string_value()].arg_attrs, index)
    if isinstance(consumer, func.ReturnOp):
        fn = consumer.parent_op()
        assert isinstance(fn, func.FuncOp)
        return _attr_scope(fn.res_attrs, index)
    assert isinstance(consumer, relay.RelayOp), consumer.name
    return consumer.se_scope


def check_plan(module: ModuleOp) -> int:
    """Asserts the invariants of a planned module; returns its number of copies."""
    functions = _functions(module)
    copies: set[tuple[SSAValue, SEScopeAttr]] = set()
    for op in module.walk():
        assert not isinstance(op, relay.OnDeviceOp), "no relay.on_device after plan-devices"
        if isinstance(op, relay.RelayOp):
            assert op.se_scope is not None and CONFIG.canonical(op.se_scope) == op.se_scope
        if isinstance(op, relay.DeviceCopyOp):
            assert op.src_se_scope != op.dst_se_scope, "a copy between equal scopes is redundant"
            assert (op.data, op.dst_se_scope) not in copies, "a value is copied to a scope once"
            copies.add((op.data, op.dst_se_scope))
        if isinstance(op, (relay.RelayOp, relay.DeviceCopyOp, func.CallOp, func.ReturnOp)):
            for i, operand in enumerate(op.operands):
                # Every edge either joins two ends on one scope, or is a copy between two.
                assert _value_scope(operand, functions) == _required_scope(op, i, functions)
    for fn in functions.values():
        for i in range(len(fn.function_type.inputs.data)):
            _attr_scope(fn.arg_attrs, i)
        for i in range(len(fn.function_type.outputs.data)):
            _attr_scope(fn.res_attrs, i)
    return len(copies)


def plan(module: ModuleOp, default_device: str | None = None) -> None:
    PlanDevicesPass(targets=TARGETS, default_device=default_device).apply(xrelay.context(), module)


def assert_same_results(before, after) -> None:
    before = before if isinstance(before, tuple) else (before,)
    after = after if isinstance(after, tuple) else (after,)
    assert len(before) == len(after)
    for b, a in zip(before, after):
        np.testing.assert_array_equal(a, b)


CONSUMERS = (relay.RelayOp, func.CallOp, func.ReturnOp)


def _through_annotations(value: SSAValue) -> tuple[SSAValue, int]:
    """The value under a chain of annotations, and how many annotations the chain has."""
    links = 0
    while isinstance(value.owner, (relay.OnDeviceOp, relay.DeviceCopyOp)):
        value, links = value.owner.operands[0], links + 1
    return value, links


def edges(module: ModuleOp) -> dict[tuple[Operation, int], tuple[SSAValue, int]]:
    """Each consumer operand, the value it reads once annotations are seen through, and the
    number of annotations in between."""
    return {
        (op, i): _through_annotations(operand)
        for op in module.walk()
        if isinstance(op, CONSUMERS)
        for i, operand in enumerate(op.operands)
    }


def check_edges(before: dict[tuple[Operation, int], tuple[SSAValue, int]]) -> None:
    """Every edge of the input reads the same value after planning, directly or through a
    chain of copies, at most one per annotation it read through (each annotation is its own
    copy point); a constant may be read from its copy on some scope."""
    for (op, i), (source, links) in before.items():
        operand, copies = op.operands[i], 0
        while isinstance(operand.owner, relay.DeviceCopyOp):
            operand, copies = operand.owner.data, copies + 1
        assert not isinstance(operand.owner, relay.OnDeviceOp)
        assert copies <= links, "a copy without an annotation asking for it"
        if isinstance(source.owner, relay.ConstantOp):
            assert isinstance(operand.owner, relay.ConstantOp)
            assert operand.owner.value == source.owner.value
        else:
            assert operand is source


def plan_and_check(text: str, default_device: str | None) -> int:
    module = xrelay.parse(text)
    inputs = random_inputs(module, 0)
    expected = xrelay.interpret(module, inputs)
    before = edges(module)
    plan(module, default_device)
    module.verify()
    check_edges(before)
    copies = check_plan(module)
    assert_same_results(expected, xrelay.interpret(module, inputs))
    once = str(module)
    plan(module, default_device)
    assert str(module) == once, "running plan-devices again changes nothing"
    return copies


# --- differential tests on the shared random graphs (conflict-free by construction) ----------


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    num_ops=st.integers(1, 16),
    default_device=st.sampled_from([None, "opencl"]),
)
def test_random_graphs_plan_consistently(seed: int, num_ops: int, default_device: str | None) -> None:
    text = random_module_text(seed, num_ops=num_ops, devices=("cpu", "opencl", "opencl:1"))
    plan_and_check(text, default_device)


def test_random_graphs_do_copy() -> None:
    """The property tests above are not vacuous: annotated graphs do get copies."""
    copies = [plan_and_check(random_module_text(seed, num_ops=12), None) for seed in range(12)]
    assert sum(c > 0 for c in copies) >= 6


# --- differential tests with unconstrained annotations (conflicts allowed) -----------------


HOMES = [
    "#relay.se_scope<device = cpu>",
    "#relay.se_scope<device = opencl>",
    "#relay.se_scope<device = opencl, id = 1>",
    '#relay.se_scope<device = cpu, memory = "scopeA">',
]
T = "tensor<4xf32>"


@dataclass
class Program:
    """A random body in which every value has an intended home scope (None: planned per use).

    Annotations follow the homes, except with probability `noise`, when they name a random
    scope: only those can make the program conflict."""

    rng: random.Random
    noise: float
    lines: list[str] = field(default_factory=list)
    home: dict[str, str | None] = field(default_factory=dict)

    def scope(self, home: str) -> str:
        return self.rng.choice(HOMES) if self.rng.random() < self.noise else home

    def emit(self, text: str, home: str | None) -> str:
        name = f"%v{len(self.lines)}"
        self.lines.append(f"  {name} = {text}")
        self.home[name] = home
        return name

    def pick(self, placed: bool = False) -> str:
        names = [n for n, h in self.home.items() if h is not None] if placed else list(self.home)
        return self.rng.choice(names[-3:] if self.rng.random() < 0.6 else names)

    def on(self, value: str, home: str, returned: bool = False) -> tuple[str, bool]:
        """`value` readable on `home`: itself, or through an annotation; and whether an
        annotation free of `home` was used (so the reader must be pinned). A returned
        on_device with the default flags would fix the result, so returns use the others."""
        source = self.home[value]
        if source is None or source == home:
            return value, source is None
        roll = self.rng.random()
        if roll < 0.4 and not returned:
            attrs = f"se_scope = {self.scope(source)}"
            return self.emit(f"relay.on_device {value} {{{attrs}}} : {T}", None), True
        if roll < 0.7:
            flags = "constrain_body = false, constrain_result = false"
            attrs = f"se_scope = {self.scope(source)}, {flags}"
            return self.emit(f"relay.on_device {value} {{{attrs}}} : {T}", None), True
        copy = f"src_se_scope = {self.scope(source)}, dst_se_scope = {self.scope(home)}"
        return self.emit(f"relay.device_copy {value} {{{copy}}} : {T}", home), False

    def op(self, name: str, arity: int) -> None:
        home = self.rng.choice(HOMES)
        operands, needs_pin = [], False
        for _ in range(arity):
            value, free = self.on(self.pick(), home)
            operands.append(value)
            needs_pin |= free
        forced = any(self.home[v] == home for v in operands)
        pinned = needs_pin or not forced or self.rng.random() < 0.3
        attrs = f" {{se_scope = {self.scope(home)}}}" if pinned else ""
        types = T if arity == 1 else f"({', '.join([T] * arity)}) -> {T}"
        self.emit(f"{name} {', '.join(operands)}{attrs} : {types}", home)

    def constant(self) -> None:
        value = f"dense<{self.rng.uniform(-1, 1):.2f}> : {T}"
        self.emit(f"relay.constant {{value = {value}}} : {T}", None)

    def call(self, params: list[str], result: str) -> None:
        operands = [self.on(self.pick(), home)[0] for home in params]
        self.emit(f"func.call @helper({', '.join(operands)}) : ({T}, {T}) -> {T}", result)

    def ret(self, homes: list[str]) -> None:
        # A returned annotation would fix the result: return placed values only.
        values = [self.on(self.pick(placed=True), home, returned=True)[0] for home in homes]
        self.lines.append(f"  func.return {', '.join(values)} : {', '.join([T] * len(values))}")


def annotated_module_text(seed: int, num_ops: int = 10, noise: float = 0.01) -> str:
    """A @helper and a @main calling it, with every kind of annotation (pinned ops, on_device
    with its flags, explicit copies, constants, function attributes) placed to follow each
    value's intended home; `noise` makes a few annotations wrong, which may conflict."""
    rng = random.Random(seed)
    helper_params, helper_result = [rng.choice(HOMES) for _ in range(2)], rng.choice(HOMES)
    helper = _random_body(rng, noise, dict(zip(["%x", "%y"], helper_params)), num_ops // 3, None)
    main_homes = {name: rng.choice(HOMES) for name in ("%a", "%b", "%c")}
    main = _random_body(rng, noise, main_homes, num_ops, (helper_params, helper_result))

    def attr(home: str) -> str:
        return f" {{relay.se_scope = {home}}}"

    return (
        f"func.func @helper(%x: {T}{attr(helper_params[0])}, %y: {T}{attr(helper_params[1])}) "
        f"-> ({T}{attr(helper_result)}) {{\n{_body_text(helper, [helper_result])}}}\n"
        f"func.func @main(%a: {T}{attr(main_homes['%a'])}, %b: {T}{attr(main_homes['%b'])}, "
        f"%c: {T}{attr(main_homes['%c'])}) -> ({T}, {T}) "
        f"{{\n{_body_text(main, [rng.choice(HOMES), rng.choice(HOMES)])}}}\n"
    )


def _random_body(rng, noise, params, num_ops, callee) -> Program:
    program = Program(rng, noise)
    program.home.update(params)
    for _ in range(num_ops):
        roll = rng.random()
        if roll < 0.1:
            program.constant()
        elif roll < 0.45:
            program.op(rng.choice(["relay.negative", "relay.tanh", "relay.abs", "relay.erf"]), 1)
        elif roll < 0.85 or callee is None:
            program.op(rng.choice(["relay.add", "relay.multiply", "relay.maximum"]), 2)
        else:
            program.call(*callee)
    return program


def _body_text(program: Program, result_homes: list[str]) -> str:
    program.ret(result_homes)
    return "\n".join(program.lines) + "\n"


def plan_or_conflict(seed: int, default_device: str | None, noise: float = 0.01) -> str | None:
    """The conflict message, or None after checking the plan."""
    try:
        plan_and_check(annotated_module_text(seed, noise=noise), default_device)
    except xrelay.PlacementError as e:
        return str(e)
    return None


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), default_device=st.sampled_from([None, "opencl"]))
def test_annotated_programs_plan_or_conflict(seed: int, default_device: str | None) -> None:
    message = plan_or_conflict(seed, default_device)
    if message is not None:
        assert message.startswith("conflicting scopes for ")
        assert "insert relay.on_device or relay.device_copy" in message


def test_conflicts_are_rare_and_come_from_noise() -> None:
    """Annotations that follow the homes never conflict; a little noise conflicts rarely."""
    assert all(plan_or_conflict(seed, None, noise=0.0) is None for seed in range(20))
    outcomes = [plan_or_conflict(seed, None) for seed in range(30)]
    conflicts = [m for m in outcomes if m is not None]
    assert len(conflicts) <= len(outcomes) // 4, conflicts[:3]


# --- options --------------------------------------------------------------------------------


def test_cli_options_parse() -> None:
    from xdsl.passes import PassPipeline

    from xrelay.transforms import get_all_passes

    pipeline = PassPipeline.parse_spec(
        get_all_passes(), "plan-devices{targets=c,opencl default-device=opencl host-target=c}"
    )
    assert pipeline.passes == (PlanDevicesPass(("c", "opencl"), "opencl", "c"),)


@pytest.mark.parametrize("default_device, device", [(None, "cpu"), ("opencl", "opencl")])
def test_default_device_option(default_device: str | None, device: str) -> None:
    module = xrelay.parse(f"func.func @main(%a: {T}) -> {T} {{\n  %0 = relay.exp %a : {T}\n  func.return %0 : {T}\n}}")
    plan(module, default_device)
    exp = next(op for op in module.walk() if isinstance(op, relay.ExpOp))
    assert exp.se_scope == CONFIG.canonical(SEScopeAttr(device))


def test_call_to_unknown_function_is_an_error() -> None:
    """The verifier rejects such calls; an unverified module built in Python still gets a
    clear error rather than a KeyError."""
    from xdsl.parser import Parser

    call = f"%0 = func.call @nowhere(%a) : ({T}) -> {T}"
    text = f"func.func @main(%a: {T}) -> {T} {{\n  {call}\n  func.return %0 : {T}\n}}"
    module = Parser(xrelay.context(), text).parse_module()
    with pytest.raises(xrelay.PlacementError, match="cannot place a call to @nowhere"):
        plan(module)


# --- idempotence on every lit input -----------------------------------------------------------

LIT_DIR = Path(__file__).parent.parent / "transforms" / "plan_devices"


def _lit_cases() -> list[tuple[str, int, str, str]]:
    """(file, chunk, pass spec, text) of every chunk of the lit tests that plans without errors."""
    cases = []
    for path in sorted(LIT_DIR.glob("*.mlir")):
        run = path.read_text().splitlines()[0]
        spec = re.search(r"-p '([^']*)'", run)
        if spec is None or "verify-diagnostics" in run or run.startswith("// RUN: not"):
            continue
        for index, chunk in enumerate(path.read_text().split("// -----")):
            cases.append((path.name, index, spec.group(1), chunk))
    return cases


@pytest.mark.parametrize("name, index, spec, text", _lit_cases(), ids=lambda v: str(v)[:24])
def test_lit_inputs_are_idempotent(name: str, index: int, spec: str, text: str) -> None:
    from xdsl.passes import PassPipeline

    from xrelay.transforms import get_all_passes

    planner = PassPipeline.parse_spec(get_all_passes(), spec).passes[0]
    assert isinstance(planner, PlanDevicesPass)
    module = xrelay.parse(text, f"{name}#{index}")
    planner.apply(xrelay.context(), module)
    once = str(module)
    planner.apply(xrelay.context(), module)
    assert str(module) == once
    check_plan_with(module, planner.targets)


def check_plan_with(module: ModuleOp, targets: tuple[str, ...]) -> None:
    """No on_device, and every relay op but device_copy placed on a canonical scope."""
    config = CompilationConfig.from_options(targets)
    for op in module.walk():
        assert not isinstance(op, relay.OnDeviceOp)
        if isinstance(op, relay.RelayOp):
            assert op.se_scope is not None and config.canonical(op.se_scope) == op.se_scope


def test_stack_overflow() -> None:
    """TVM's test_stack_overflow: a chain of 1555 adds, each reading the two before it, plans
    without recursion trouble, all on the default device and without copies."""
    lines = [f"func.func @main(%a: {T}, %b: {T}, %c: {T}, %d: {T}) -> {T} {{"]
    lines += [f"  %0 = relay.add %a, %b : ({T}, {T}) -> {T}"]
    lines += [f"  %1 = relay.add %c, %d : ({T}, {T}) -> {T}"]
    lines += [f"  %{i} = relay.add %{i - 1}, %{i - 2} : ({T}, {T}) -> {T}" for i in range(2, 1555)]
    lines += [f"  func.return %1554 : {T}", "}"]
    module = xrelay.parse("\n".join(lines))
    plan(module, "opencl")
    assert check_plan(module) == 0
    assert {op.se_scope for op in module.walk() if isinstance(op, relay.AddOp)} == {CONFIG.canonical(OPENCL)}
