"""plan-devices on chains of annotations, against a reference planner written from DESIGN.md.

A generated program is one straight line: a source (a parameter, a primitive op over it, or a
constant, pinned or not), a chain of `relay.on_device` (every flag combination) and
`relay.device_copy` links, then a consumer (a primitive op, or `func.return` directly); any of
them may carry a scope, full or partial (`id` only, `memory` only, `target` only, ...).

The reference below plans such a chain by DESIGN.md's rules (section 3, plan-devices) with
its own union-find over plain tuples, not with the pass's code: each link of the chain is its
own copy point, a copy from its operand's scope to its use's scope where they differ, and an
explicit copy's source is its `src_se_scope`. The pass must agree with it on every scope, on
the copies (in chain order), and on whether the program conflicts; planning must not change
what `xrelay.interpret` computes, and planning again changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.dialects import func

import xrelay
from xrelay.dialects import relay
from xrelay.dialects.se_scope import SEScopeAttr
from xrelay.transforms.plan_devices import PlanDevicesPass

T = "tensor<4xf32>"
TARGETS = {"cpu": "c", "opencl": "opencl"}  # the config under test: targets=c,opencl
KIND_DEVICES = {"c": "cpu", "opencl": "opencl"}

Scope = tuple[str | None, int | None, str | None, str | None]  # device, id, target, memory
EMPTY: Scope = (None, None, None, None)

SCOPES: list[Scope] = [
    ("cpu", None, None, None),
    ("opencl", None, None, None),
    ("opencl", 1, None, None),
    (None, 1, None, None),  # id only
    (None, 0, None, None),
    (None, None, None, "global"),  # memory only
    (None, None, None, "texture"),
    ("cpu", None, None, "texture"),
    (None, None, "opencl", None),  # target only: the device follows from it
    EMPTY,
    ("cpu", 0, "c", "global"),  # canonical
]


# --- the programs ---------------------------------------------------------------------------


@dataclass(frozen=True)
class OnDevice:
    scope: Scope
    body: bool
    result: bool
    spell_defaults: bool  # print flags that have their default value, or leave them out


@dataclass(frozen=True)
class Copy:
    src: Scope
    dst: Scope


Link = OnDevice | Copy


@dataclass(frozen=True)
class Chain:
    source: str  # "param", "op" or "constant"
    source_pin: Scope | None  # an se_scope on the source op or constant
    param_attr: Scope | None
    links: tuple[Link, ...]
    consumer: str  # "op" or "return"
    consumer_pin: Scope | None
    result_attr: Scope | None
    default_device: str | None


def scope_text(scope: Scope) -> str:
    device, id, target, memory = scope
    fields = []
    if device is not None:
        fields.append(f"device = {device}")
    if id is not None:
        fields.append(f"id = {id}")
    if target is not None:
        fields.append(f'target = "{target}"')
    if memory is not None:
        fields.append(f'memory = "{memory}"')
    return f"#relay.se_scope<{', '.join(fields)}>"


def _attrs(entries: list[str]) -> str:
    return f" {{{', '.join(entries)}}}" if entries else ""


def _pin(scope: Scope | None) -> list[str]:
    return [] if scope is None else [f"se_scope = {scope_text(scope)}"]


def _link_text(link: Link, operand: str) -> str:
    if isinstance(link, Copy):
        scopes = f"src_se_scope = {scope_text(link.src)}, dst_se_scope = {scope_text(link.dst)}"
        return f"relay.device_copy {operand} {{{scopes}}} : {T}"
    entries = [f"se_scope = {scope_text(link.scope)}"]
    if link.spell_defaults or not link.body:
        entries.append(f"constrain_body = {str(link.body).lower()}")
    if link.spell_defaults or link.result:
        entries.append(f"constrain_result = {str(link.result).lower()}")
    return f"relay.on_device {operand}{_attrs(entries)} : {T}"


def chain_text(chain: Chain) -> str:
    def signature_attr(scope: Scope | None) -> str:
        return "" if scope is None else f" {{relay.se_scope = {scope_text(scope)}}}"

    lines = [
        f"func.func @main(%a: {T}{signature_attr(chain.param_attr)}) -> ({T}{signature_attr(chain.result_attr)}) {{"
    ]
    value = "%a"
    if chain.source == "op":
        lines.append(f"  %x = relay.tanh %a{_attrs(_pin(chain.source_pin))} : {T}")
        value = "%x"
    elif chain.source == "constant":
        entries = [f"value = dense<[1.0, -2.0, 3.5, 0.25]> : {T}", *_pin(chain.source_pin)]
        lines.append(f"  %x = relay.constant{_attrs(entries)} : {T}")
        value = "%x"
    for i, link in enumerate(chain.links):
        lines.append(f"  %l{i} = {_link_text(link, value)}")
        value = f"%l{i}"
    if chain.consumer == "op":
        lines.append(f"  %y = relay.negative {value}{_attrs(_pin(chain.consumer_pin))} : {T}")
        value = "%y"
    lines += [f"  func.return {value} : {T}", "}"]
    return "\n".join(lines) + "\n"


# --- the reference planner (DESIGN.md section 3), on plain tuples ---------------------------


def normalise(scope: Scope) -> Scope:
    """A scope as the config reads it: a target without a device implies the device."""
    device, id, target, memory = scope
    if device is None and target is not None:
        device = KIND_DEVICES[target]
    return (device, id, target, memory)


def join(a: Scope, b: Scope) -> Scope | None:
    """Field by field; None when both sides constrain a field differently."""
    if any(x is not None and y is not None and x != y for x, y in zip(a, b)):
        return None
    return tuple(x if x is not None else y for x, y in zip(a, b))  # type: ignore[return-value]


def default(a: Scope, b: Scope) -> Scope:
    """`a`'s fields, the missing ones from `b`; `b`'s target only when the devices agree."""
    device = a[0] if a[0] is not None else b[0]
    id = a[1] if a[1] is not None else b[1]
    target = a[2] if a[2] is not None else (b[2] if device == b[0] else None)
    memory = a[3] if a[3] is not None else b[3]
    return (device, id, target, memory)


class Conflict(Exception):
    pass


class Domains:
    """Union-find over named domains, each class holding its joined scope."""

    def __init__(self) -> None:
        self.parent: dict[str, str] = {}
        self.scopes: dict[str, Scope] = {}

    def fresh(self, name: str, scope: Scope | None = None) -> str:
        self.parent[name] = name
        self.scopes[name] = normalise(scope) if scope is not None else EMPTY
        return name

    def find(self, name: str) -> str:
        while self.parent[name] != name:
            name = self.parent[name]
        return name

    def scope(self, name: str) -> Scope:
        return self.scopes[self.find(name)]

    def unify(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return
        joined = join(self.scopes[ra], self.scopes[rb])
        if joined is None:
            raise Conflict
        self.parent[rb] = ra
        self.scopes[ra] = joined

    def constrain(self, name: str, scope: Scope) -> None:
        joined = join(self.scope(name), normalise(scope))
        if joined is None:
            raise Conflict
        self.scopes[self.find(name)] = joined

    def default(self, name: str, fallback: Scope) -> None:
        root = self.find(name)
        self.scopes[root] = default(self.scopes[root], fallback)


@dataclass(frozen=True)
class Plan:
    param: Scope
    result: Scope
    source: Scope  # where the chain's source value is computed (or materialised)
    copies: tuple[tuple[Scope, Scope], ...]  # (src, dst) of each copy, in chain order


def reference_plan(chain: Chain) -> Plan | None:
    """The plan DESIGN.md asks for, or None when the program conflicts."""
    device = chain.default_device or "cpu"  # the device of the first target
    default_scope: Scope = (device, 0, TARGETS[device], None)
    d = Domains()
    param = d.fresh("param", chain.param_attr)
    result = d.fresh("result", chain.result_attr)
    consumer = result
    ins: list[str] = []
    outs: dict[int, str] = {}
    try:
        # Where each element of the chain reads its operand.
        source: str | None = None
        if chain.source == "param":
            source = param
        elif chain.source == "op":
            source = d.fresh("source", chain.source_pin)
            d.unify(source, param)  # a primitive op shares one domain with its operands
        elif chain.source_pin is not None:
            source = d.fresh("source", chain.source_pin)  # a pinned constant
        for i, link in enumerate(chain.links):
            if isinstance(link, Copy):
                ins.append(d.fresh(f"in{i}", link.src))
                outs[i] = d.fresh(f"out{i}", link.dst)
            else:
                ins.append(d.fresh(f"in{i}", link.scope if link.body else None))
        if chain.consumer == "op":
            consumer = d.fresh("consumer", chain.consumer_pin)
            d.unify(consumer, result)
        readers = [*ins, consumer]  # readers[i] reads the output of element i - 1
        if source is not None:
            d.unify(source, readers[0])
        for i, link in enumerate(chain.links):
            reader = readers[i + 1]
            if isinstance(link, Copy):
                d.unify(outs[i], reader)  # a copy's result is an ordinary value
                continue
            returned = chain.consumer == "return" and i == len(chain.links) - 1
            if link.result or (returned and link.body):
                d.constrain(reader, link.scope)  # the use, planned on its own
    except Conflict:
        return None

    # Defaulting: free on_devices in program order, then results, parameters, the rest.
    for i, link in enumerate(chain.links):
        if isinstance(link, OnDevice) and not link.body and not link.result:
            d.default(readers[i + 1], d.scope(ins[i]))
            d.default(ins[i], d.scope(readers[i + 1]))
    d.default(result, default_scope)
    d.default(param, d.scope(result))
    for name in d.parent:
        d.default(name, default_scope)

    def canonical(name: str) -> Scope:
        device, id, target, memory = d.scope(name)
        assert device is not None
        return (device, id or 0, target or TARGETS[device], memory or "global")

    copies = []
    for i, link in enumerate(chain.links):
        src = canonical(ins[i])
        dst = canonical(outs[i] if isinstance(link, Copy) else readers[i + 1])
        if src != dst:
            copies.append((src, dst))
    return Plan(
        param=canonical(param),
        result=canonical(result),
        source=canonical(source if source is not None else readers[0]),
        copies=tuple(copies),
    )


# --- reading the pass's plan ----------------------------------------------------------------


def _fields(scope: SEScopeAttr) -> Scope:
    return scope.fields()


def read_plan(module, chain: Chain) -> Plan:
    """The plan the pass wrote: signature scopes, the source's scope and the copies between
    the source and its consumer (which must be all the copies of the function)."""
    fn = next(op for op in module.ops if isinstance(op, func.FuncOp))
    body = list(fn.body.block.ops)
    assert not any(isinstance(op, relay.OnDeviceOp) for op in body)
    ret = body[-1]
    assert isinstance(ret, func.ReturnOp)
    value = ret.operands[0]
    result = _fields(fn.res_attrs.data[0].data["relay.se_scope"])
    if chain.consumer == "op":
        assert isinstance(value.owner, relay.NegativeOp)
        assert _fields(value.owner.se_scope) == result
        value = value.owner.operands[0]
    copies = []
    while isinstance(value.owner, relay.DeviceCopyOp):
        copy = value.owner
        copies.append((_fields(copy.src_se_scope), _fields(copy.dst_se_scope)))
        value = copy.data
    assert len(copies) == sum(isinstance(op, relay.DeviceCopyOp) for op in body)
    param = _fields(fn.arg_attrs.data[0].data["relay.se_scope"])
    if chain.source == "param":
        assert value is fn.args[0]
        source = param
    else:
        assert isinstance(value.owner, relay.TanhOp if chain.source == "op" else relay.ConstantOp)
        source = _fields(value.owner.se_scope)
    return Plan(param, result, source, tuple(reversed(copies)))


# --- the property ---------------------------------------------------------------------------


scopes = st.sampled_from(SCOPES)
links = st.one_of(
    st.builds(OnDevice, scopes, st.booleans(), st.booleans(), st.booleans()),
    st.builds(Copy, scopes, scopes),
)
chains = st.builds(
    Chain,
    source=st.sampled_from(["param", "op", "constant"]),
    source_pin=st.none() | scopes,
    param_attr=st.none() | scopes,
    links=st.lists(links, max_size=4).map(tuple),
    consumer=st.sampled_from(["op", "return"]),
    consumer_pin=st.none() | scopes,
    result_attr=st.none() | scopes,
    default_device=st.sampled_from([None, "opencl"]),
)

INPUT = {"a": np.array([0.5, -1.0, 2.0, -3.0], np.float32)}


def plan_module(module, chain: Chain) -> None:
    pass_ = PlanDevicesPass(targets=("c", "opencl"), default_device=chain.default_device)
    pass_.apply(xrelay.context(), module)


@settings(max_examples=400, deadline=None)
@given(chain=chains)
def test_chains_plan_as_the_reference_does(chain: Chain) -> None:
    text = chain_text(chain)
    expected = reference_plan(chain)
    module = xrelay.parse(text)
    before = xrelay.interpret(module, INPUT)
    if expected is None:
        try:
            plan_module(module, chain)
        except xrelay.PlacementError as e:
            assert str(e).startswith("conflicting scopes for ")
            return
        raise AssertionError(f"the reference finds a conflict, the pass planned:\n{module}")
    plan_module(module, chain)
    module.verify()
    assert read_plan(module, chain) == expected, f"input:\n{text}\nplanned:\n{module}"
    np.testing.assert_array_equal(xrelay.interpret(module, INPUT), before)
    once = str(module)
    plan_module(module, chain)
    assert str(module) == once, "planning again changes nothing"


def test_the_issue_chain() -> None:
    """The chain of issue 13: an on_device whose result is constrained to opencl under an
    explicit copy from opencl; the value is computed on cpu. Two copies: cpu -> opencl at the
    on_device, opencl -> cpu at the device_copy."""
    chain = Chain(
        source="op",
        source_pin=("cpu", None, None, None),
        param_attr=None,
        links=(
            OnDevice(("opencl", None, None, None), body=False, result=True, spell_defaults=True),
            Copy(("opencl", None, None, None), EMPTY),
        ),
        consumer="op",
        consumer_pin=("cpu", None, None, None),
        result_attr=None,
        default_device="opencl",
    )
    cpu, opencl = ("cpu", 0, "c", "global"), ("opencl", 0, "opencl", "global")
    expected = Plan(cpu, cpu, cpu, ((cpu, opencl), (opencl, cpu)))
    assert reference_plan(chain) == expected
    module = xrelay.parse(chain_text(chain))
    plan_module(module, chain)
    assert read_plan(module, chain) == expected


def test_the_generator_covers_the_cases() -> None:
    """The property is not vacuous: the reference plans most generated chains, with copies
    from several links, and finds conflicts in some."""
    from hypothesis import find

    find(chains, lambda c: (p := reference_plan(c)) is not None and len(p.copies) >= 3)
    find(chains, lambda c: reference_plan(c) is None)
