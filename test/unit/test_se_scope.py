"""SEScopeAttr: syntax, verification, and the lattice laws of Join and Default (DESIGN.md §2)."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.utils.exceptions import VerifyException

import xrelay
from xrelay.dialects.se_scope import SEScopeAttr
from xrelay.transforms.compilation_config import CompilationConfig

laws = settings(max_examples=100, deadline=None)

FIELDS = ("device", "id", "target", "memory")

# Small value sets, so that agreements and conflicts are both common.
scopes = st.builds(
    SEScopeAttr,
    device=st.sampled_from([None, "cpu", "opencl"]),
    id=st.sampled_from([None, 0, 1]),
    target=st.sampled_from([None, "c", "opencl"]),
    memory=st.sampled_from([None, "global", "local"]),
)

CONFIG = CompilationConfig.from_options(("c", "opencl"), default_device="opencl")

# Scopes the config accepts: a target only together with its own device (or none at all).
valid_scopes = st.builds(
    SEScopeAttr,
    device=st.sampled_from([None, "cpu", "opencl"]),
    id=st.sampled_from([None, 0, 1]),
    memory=st.sampled_from([None, "global", "local"]),
).flatmap(
    lambda s: st.sampled_from([None, CONFIG.targets[s.device or "opencl"]]).map(
        lambda t: SEScopeAttr(s.device, s.id, t if s.device is not None else None, s.memory)
    )
)


CTX = xrelay.context()


def parse_scope(text: str) -> SEScopeAttr:
    from xdsl.parser import Parser

    return Parser(CTX, text).parse_attribute()


# --- syntax ---------------------------------------------------------------------------------


def test_printed_form_is_the_contract():
    scope = SEScopeAttr("opencl", 1, "opencl", "global")
    assert str(scope) == '#relay.se_scope<device = opencl, id = 1, target = "opencl", memory = "global">'
    assert str(SEScopeAttr()) == "#relay.se_scope<>"
    assert str(SEScopeAttr(id=0, memory="global")) == '#relay.se_scope<id = 0, memory = "global">'
    assert str(SEScopeAttr(target="c")) == '#relay.se_scope<target = "c">'


def test_any_key_order_parses_to_the_canonical_order():
    text = '#relay.se_scope<memory = "global", target = "c", id = 3, device = cpu>'
    assert str(parse_scope(text)) == '#relay.se_scope<device = cpu, id = 3, target = "c", memory = "global">'


def test_strings_are_escaped():
    scope = SEScopeAttr("cpu", target='c -DNAME="x\\y"', memory="glo bal")
    assert str(scope) == r'#relay.se_scope<device = cpu, target = "c -DNAME=\22x\\y\22", memory = "glo bal">'
    assert parse_scope(str(scope)) == scope


@laws
@given(scopes)
def test_print_parse_round_trip(scope):
    assert parse_scope(str(scope)) == scope


@pytest.mark.parametrize(
    "text, message",
    [
        ('#relay.se_scope<device = cpu, colour = "red">', "unknown se_scope key 'colour'"),
        ("#relay.se_scope<device = gpu>", "unknown device type 'gpu'"),
        ("#relay.se_scope<id = -1>", "se_scope id must be >= 0, but found -1"),
        ("#relay.se_scope<id = 1, id = 2>", "duplicate se_scope key 'id'"),
        ("#relay.se_scope<target = c>", "the se_scope target, a string"),
        ("#relay.se_scope<device = cpu", "Expected '>'"),
    ],
)
def test_syntax_errors(text, message):
    from xdsl.utils.exceptions import ParseError

    with pytest.raises(ParseError, match=message):
        parse_scope(text)


def test_verify_rejects_scopes_built_in_python():
    with pytest.raises(VerifyException, match="unknown device type 'gpu' in se_scope"):
        SEScopeAttr("gpu")
    with pytest.raises(VerifyException, match="se_scope id must be >= 0, but found -2"):
        SEScopeAttr("cpu", -2)


def test_field_access_and_predicates():
    scope = SEScopeAttr("cpu", 0, "c", "global")
    assert scope.fields() == ("cpu", 0, "c", "global")
    assert scope.is_fully_constrained and not scope.is_unconstrained
    assert SEScopeAttr().is_unconstrained and not SEScopeAttr(id=0).is_fully_constrained
    assert SEScopeAttr("opencl", 1).short_str() == "opencl:1"
    assert scope.short_str() == 'cpu:0 "c" global'
    assert SEScopeAttr().short_str() == "<unconstrained>"


# --- Join -----------------------------------------------------------------------------------


@laws
@given(scopes, scopes)
def test_join_is_commutative(a, b):
    assert a.join(b) == b.join(a)


@laws
@given(scopes, scopes)
def test_conflict_is_symmetric(a, b):
    assert (a.join(b) is None) == (b.join(a) is None)


@laws
@given(scopes, scopes, scopes)
def test_join_is_associative(a, b, c):
    def join(x, y):
        return None if x is None or y is None else x.join(y)

    assert join(join(a, b), c) == join(a, join(b, c))


@laws
@given(scopes)
def test_join_is_idempotent(a):
    assert a.join(a) == a
    assert a.join(SEScopeAttr()) == a


@laws
@given(scopes, scopes)
def test_join_is_the_least_common_refinement(a, b):
    joined = a.join(b)
    conflict = any(x is not None and y is not None and x != y for x, y in zip(a.fields(), b.fields()))
    assert (joined is None) == conflict
    if joined is not None:
        for field, x, y, j in zip(FIELDS, a.fields(), b.fields(), joined.fields()):
            assert j == (x if x is not None else y), field


# --- Default --------------------------------------------------------------------------------


@laws
@given(scopes, scopes)
def test_default_keeps_every_constrained_field_of_its_first_argument(a, b):
    result = a.default(b)
    for field, mine, got in zip(FIELDS, a.fields(), result.fields()):
        if mine is not None:
            assert got == mine, field


@laws
@given(scopes, scopes)
def test_default_fills_from_the_fallback(a, b):
    result = a.default(b)
    assert result.device == (a.device if a.device is not None else b.device)
    assert result.id == (a.id if a.id is not None else b.id)
    assert result.memory == (a.memory if a.memory is not None else b.memory)
    if a.target is None:
        # The fallback's target only makes sense on the fallback's device type.
        expected = b.target if result.device == b.device else None
        assert result.target == expected


@laws
@given(scopes)
def test_default_of_fully_constrained_is_itself(a):
    full = a.default(SEScopeAttr(a.device or "cpu", 0, a.target or "c", "global"))
    assert full.is_fully_constrained
    assert full.default(SEScopeAttr("opencl", 1, "opencl", "local")) == full


def test_default_takes_target_only_on_the_same_device():
    assert SEScopeAttr("cpu").default(SEScopeAttr("opencl", 1, "opencl")) == SEScopeAttr("cpu", 1)
    assert SEScopeAttr(id=2).default(SEScopeAttr("opencl", 1, "opencl")) == SEScopeAttr("opencl", 2, "opencl")


# --- canonical forms ------------------------------------------------------------------------


@laws
@given(valid_scopes)
def test_canonical_form_is_fully_constrained_refinement(a):
    assert CONFIG.check(a) is None
    canonical = CONFIG.canonical(a)
    assert canonical.is_fully_constrained
    assert a.join(canonical) == canonical  # it only adds fields
    assert CONFIG.canonical(canonical) == canonical


@laws
@given(valid_scopes, valid_scopes)
def test_canonical_forms_equal_exactly_when_placements_agree(a, b):
    # Two scopes denote the same placement when, with every unconstrained field resolved the
    # documented way (default device, id 0, the device's configured target, "global"), they agree.
    def resolved(s):
        device = s.device or CONFIG.default_scope.device
        return (device, s.id or 0, s.target or CONFIG.targets[device], s.memory or "global")

    assert (CONFIG.canonical(a) == CONFIG.canonical(b)) == (resolved(a) == resolved(b))


def test_canonical_examples():
    assert CONFIG.canonical(SEScopeAttr()) == SEScopeAttr("opencl", 0, "opencl", "global")
    assert CONFIG.canonical(SEScopeAttr("cpu", 1)) == SEScopeAttr("cpu", 1, "c", "global")
    assert CONFIG.canonical(SEScopeAttr(memory="local")) == SEScopeAttr("opencl", 0, "opencl", "local")
