"""SSA dominance: a use before its definition (or a cycle) is a verification error at the use,
from `xrelay.parse`, `xrelay.build` (text or a module that was never verified) and
plan-devices, never a hang, a KeyError or an AssertionError in a pass."""

from __future__ import annotations

import re

import pytest
from random_graphs import random_module_text
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser
from xdsl.passes import PassPipeline

import xrelay
from xrelay.dialects.dominance import verify_dominance
from xrelay.transforms import get_all_passes
from xrelay.transforms.plan_devices import PlanDevicesPass

T = "tensor<4xf32>"
CYCLE = f"""func.func @main(%a: {T}) -> {T} {{
  %0 = relay.add %a, %1 : ({T}, {T}) -> {T}
  %1 = relay.exp %0 : {T}
  func.return %1 : {T}
}}
"""
OUT_OF_ORDER = f"""func.func @main(%a: {T}) -> {T} {{
  %0 = relay.exp %1 : {T}
  %1 = relay.negative %a : {T}
  func.return %0 : {T}
}}
"""


def unverified(text: str) -> ModuleOp:
    """A module as Python code may build it: parsed, but never verified, without locations."""
    return Parser(xrelay.context(), text).parse_module()


@pytest.mark.parametrize(
    "text, use, definition",
    [(CYCLE, "relay.add", "relay.exp"), (OUT_OF_ORDER, "relay.exp", "relay.negative")],
)
def test_parse_reports_the_first_use(text: str, use: str, definition: str) -> None:
    with pytest.raises(xrelay.VerifyError) as info:
        xrelay.parse(text, "m.mlir")
    assert str(info.value).splitlines()[0] == (
        f"m.mlir:2:3: operand %1 of '{use}' is used before its definition at m.mlir:3:3 ('{definition}')"
    )


@pytest.mark.parametrize("text", [CYCLE, OUT_OF_ORDER])
def test_build_of_text_reports_it(text: str) -> None:
    with pytest.raises(xrelay.VerifyError, match="is used before its definition"):
        xrelay.build(text)


@pytest.mark.parametrize("text", [CYCLE, OUT_OF_ORDER])
def test_build_of_an_unverified_module_reports_it(text: str) -> None:
    """`build` plans devices on a module it was given as is: plan-devices checks dominance
    first, so the error names the op even without a location."""
    module = unverified(text)
    pattern = r"^operand #\d of 'relay\.\w+' is used before its definition by 'relay\.\w+'"
    with pytest.raises(xrelay.VerifyError, match=pattern):
        xrelay.build(module)


def test_plan_devices_checks_first() -> None:
    module = unverified(CYCLE)
    before = str(module)
    with pytest.raises(xrelay.VerifyError):
        PlanDevicesPass(targets=("c", "opencl")).apply(xrelay.context(), module)
    assert str(module) == before, "nothing changes before the check"


def test_the_error_underlines_the_use() -> None:
    with pytest.raises(xrelay.VerifyError) as info:
        xrelay.parse(CYCLE)
    lines = str(info.value).splitlines()
    underlined = next(i for i, line in enumerate(lines) if re.fullmatch(r"\s*\^+-*", line))
    assert '"relay.add"' in lines[underlined - 1]


@pytest.mark.parametrize("seed", range(4))
def test_every_stage_of_the_pipeline_is_in_order(seed: int) -> None:
    """No false alarm on programs in order, at any stage down to loops and memory planning
    (nested regions: fused bodies, loops)."""
    module = xrelay.parse(random_module_text(seed, num_ops=10, devices=("cpu", "opencl")))
    spec = "plan-devices{targets=c,opencl},fuse-ops,convert-relay-to-loops,inline-calls,plan-memory"
    for pass_ in PassPipeline.parse_spec(get_all_passes(), spec).passes:
        pass_.apply(xrelay.context(), module)
        verify_dominance(module)
