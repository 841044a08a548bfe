"""xrelay.explain and plan-devices' remarks: the chain that fixed each value's scope.

On the issue's cpu:1 case (examples/three_scopes.mlir), on the TVM ports of the seeds'
examples, and on conflicts (both chains). On random graphs, every remark's scope is the scope
the pass writes back for that value: the remarks are read off the same solution.
"""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from random_graphs import random_inputs, random_module_text
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import BlockArgument, Operation, SSAValue

import xrelay
from xrelay.dialects import relay
from xrelay.dialects.se_scope import FIELDS, SEScopeAttr
from xrelay.placement import Remark, Step
from xrelay.transforms.compilation_config import CompilationConfig
from xrelay.transforms.plan_devices import WriteBack, remark_for, solve

ROOT = Path(__file__).resolve().parents[2]
THREE_SCOPES = ROOT / "examples" / "three_scopes.mlir"
TVM_PORTS = ROOT / "test" / "transforms" / "plan_devices" / "tvm_ports.mlir"
TARGETS = ("c", "opencl")
OPTIONS = {"targets": TARGETS, "default_device": "opencl"}
DEFAULT = 'the default scope (opencl, id = 0, target = "opencl")'


def _loc(line: int, col: int) -> str:
    return f"{THREE_SCOPES}:{line}:{col}"


def _one(program: str | Path | ModuleOp, name: str) -> Remark:
    remarks = xrelay.explain(program, name, **OPTIONS)
    assert len(remarks) == 1, remarks
    return remarks[0]


# --- the case: two values annotated cpu, one lands on cpu:1 ------------------------


def test_parameter_takes_its_id_from_the_first_result() -> None:
    remark = _one(THREE_SCOPES, "%h")
    assert remark.scope == SEScopeAttr("cpu", 1, "c", "global")
    assert remark.location == _loc(7, 1) and not remark.local
    device, id, canonical = remark.steps
    assert device == Step(("device",), "relay.on_device", _loc(8, 3), "constraint")
    first_result = '@main result 0 (opencl, id = 1, target = "opencl")'
    returned = Step(("id",), "relay.on_device", _loc(12, 3), "constraint", note=", whose result the function returns")
    assert id == Step(("id",), first_result, _loc(7, 1), "default", (returned,))
    assert canonical == Step(("target", "memory"), "the canonical form", None, "canonical")
    assert str(remark) == (
        f"%h: cpu:1 — device from relay.on_device at {_loc(8, 3)}; id from {first_result} at {_loc(7, 1)} "
        f"by defaulting, whose id came from relay.on_device at {_loc(12, 3)}, whose result the function returns"
    )


def test_the_other_cpu_value_takes_id_0_from_the_default_scope() -> None:
    remark = _one(THREE_SCOPES, "%e")
    assert remark.scope == SEScopeAttr("cpu", 0, "c", "global")
    assert [(s.fields, s.origin, s.how) for s in remark.steps] == [
        (("device",), "relay.on_device", "constraint"),
        (("id",), DEFAULT, "default"),
        (("target", "memory"), "the canonical form", "canonical"),
    ]
    assert remark.steps[0].location == _loc(10, 3)


def test_remarks_are_what_opt_tool_prints() -> None:
    """The transcript next to the example is the pass's stderr; explain gives the same text."""
    transcript = (ROOT / "examples" / "three_scopes.remarks").read_text().splitlines()
    text = THREE_SCOPES.read_text()
    module = xrelay.parse(text, "three_scopes.mlir")
    remarks = [r for name in ("%h", "%w", "%e", "%r") for r in xrelay.explain(module, name, **OPTIONS)]
    assert [f"{r.location}: remark: {r}" for r in remarks if not r.local] == transcript


def test_three_scopes_runs_as_interpreted() -> None:
    """The example is a real program: built on cpu:0, cpu:1 and opencl:1, it computes what
    the interpreter computes."""
    module = xrelay.parse(THREE_SCOPES.read_text())
    inputs = random_inputs(module, 0)
    exe = xrelay.build(module, targets=TARGETS, default_device="opencl")
    devices = {(d["kind"], d["id"]) for d in exe.graph["devices"]}
    assert devices == {("cpu", 0), ("cpu", 1), ("opencl", 1)}
    np.testing.assert_allclose(exe.run(**inputs), xrelay.interpret(module, inputs), rtol=1e-6)


# --- naming what to explain -----------------------------------------------------------------


def test_an_op_name_explains_every_result_of_that_op() -> None:
    text = """
    func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
      %x = relay.exp %a {se_scope = #relay.se_scope<device = cpu>} : tensor<4xf32>
      %y = relay.exp %x : tensor<4xf32>
      func.return %y : tensor<4xf32>
    }"""
    remarks = xrelay.explain(text, "relay.exp", **OPTIONS)
    assert [r.value for r in remarks] == ["%x", "%y"]
    assert all(r.scope.device == "cpu" for r in remarks), "one domain: the operand joins the pinned op"
    assert remarks[1].steps[0].origin == "se_scope of 'relay.exp'"


def test_explain_answers_for_a_value_its_own_annotation_explains() -> None:
    text = """
    func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
      %x = relay.exp %a {se_scope = #relay.se_scope<device = cpu, id = 1>} : tensor<4xf32>
      func.return %x : tensor<4xf32>
    }"""
    remark = _one(text, "%x")
    assert remark.local and str(remark).startswith("%x: cpu:1 — device and id from se_scope of 'relay.exp' at")


def test_explain_leaves_the_module_unchanged() -> None:
    module = xrelay.parse(THREE_SCOPES.read_text())
    before = str(module)
    xrelay.explain(module, "%h", **OPTIONS)
    assert str(module) == before


def test_an_unknown_name_is_an_error_listing_the_names() -> None:
    with pytest.raises(xrelay.UsageError, match=r"no value '%nope' in the module; give a value name such as %e, %h"):
        xrelay.explain(THREE_SCOPES, "%nope", **OPTIONS)


def test_an_annotation_result_has_no_remark_of_its_own() -> None:
    text = """
    func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
      %o = relay.on_device %a {se_scope = #relay.se_scope<device = cpu>} : tensor<4xf32>
      func.return %o : tensor<4xf32>
    }"""
    assert xrelay.explain(text, "%o", **OPTIONS) == []


# --- the seeds' examples (TVM's plan-devices tests, ported) -----------------------------------


def _tvm_case(name: str) -> str:
    chunks = TVM_PORTS.read_text().split("// -----")
    return next(c for c in chunks if f"func.func @{name}(" in c)


def test_left_add_on_cpu() -> None:
    """TVM's test_left_add_on_cpu: the add's operands take the annotation's device; the
    parameters' id comes from the (default) result; the other add takes the default scope."""
    text = _tvm_case("test_left_add_on_cpu")
    a = _one(text, "%a")
    assert (a.scope.device, a.scope.id) == ("cpu", 0)
    assert a.steps[0].fields == ("device",) and a.steps[0].origin == "relay.on_device"
    assert a.steps[1].how == "default" and a.steps[1].origin.startswith("@test_left_add_on_cpu result 0")
    assert a.steps[1].via == (Step(("id",), DEFAULT, None, "default"),)
    c = _one(text, "%c")
    assert c.scope.device == "opencl" and [s.origin for s in c.steps] == [DEFAULT, "the canonical form"]


def test_device_copy_fixes_both_sides() -> None:
    text = _tvm_case("test_left_add_on_cpu_via_copy")
    a, c = _one(text, "%a"), _one(text, "%c")
    assert a.steps[0].origin == "src_se_scope of 'relay.device_copy'"
    assert c.steps[0].origin == "dst_se_scope of 'relay.device_copy'"


def test_free_on_device_takes_the_first_use() -> None:
    """TVM's free on_device (test_free_on_device): %a takes its memory scope from its first
    use, a call whose parameter attribute names it."""
    a = _one(_tvm_case("test_free_on_device"), "%a")
    memory = next(s for s in a.steps if "memory" in s.fields)
    assert memory.origin == "the first use of the free relay.on_device, in 'func.call'"
    assert memory.how == "default" and memory.via[0].origin == "relay.se_scope of argument %x of @on_scope_b"
    assert a.scope.memory == "scopeB"


# --- conflicts carry both chains --------------------------------------------------------------


def test_a_conflict_carries_both_chains() -> None:
    text = """
    func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
      %x = relay.exp %a : tensor<4xf32>
      %0 = relay.on_device %x {se_scope = #relay.se_scope<device = opencl, id = 1>} : tensor<4xf32>
      %n = relay.negative %0 : tensor<4xf32>
      %y = relay.abs %x {se_scope = #relay.se_scope<id = 0>} : tensor<4xf32>
      %s = relay.add %n, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      func.return %s : tensor<4xf32>
    }"""
    with pytest.raises(xrelay.PlacementError) as caught:
        xrelay.explain(text, "%x", **OPTIONS)
    error = caught.value
    mine, use = error.chains
    assert (mine.value, use.value) == ("%x", "its use in 'relay.abs'")
    assert mine.scope == SEScopeAttr("opencl", 1) and use.scope == SEScopeAttr(id=0)
    assert [(s.fields, s.origin) for s in mine.steps] == [(("device", "id"), "relay.on_device")]
    assert [(s.fields, s.origin) for s in use.steps] == [(("id",), "se_scope of 'relay.abs'")]
    lines = str(error).splitlines()
    assert "opencl:1 (relay.on_device at <input>:4:7) and ?:0 (se_scope of 'relay.abs' at <input>:6:7)" in lines[0]
    assert lines[1:3] == [f"  {mine}", f"  {use}"]
    assert lines[1] == "  %x: opencl:1 — device and id from relay.on_device at <input>:4:7"


def test_opt_tool_prints_both_chains(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Under opt-tool the conflict is one error with both chains, and no traceback."""
    from xrelay.tools.opt_tool import main

    path = tmp_path / "conflict.mlir"
    path.write_text(
        "func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
        "  %x = relay.exp %a {se_scope = #relay.se_scope<device = cpu>} : tensor<4xf32>\n"
        "  %y = relay.abs %x {se_scope = #relay.se_scope<device = opencl>} : tensor<4xf32>\n"
        "  func.return %y : tensor<4xf32>\n}\n"
    )
    with pytest.raises(SystemExit) as exit:
        main([str(path), "-p", "plan-devices{targets=c,opencl}"])
    assert exit.value.code == 1
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("opt-tool: error: conflicting scopes for %x at its use in 'relay.abs'")
    assert lines[1:3] == [
        f"  %x: cpu:? — device from se_scope of 'relay.exp' at {path}:2:3",
        f"  its use in 'relay.abs': opencl:? — device from se_scope of 'relay.abs' at {path}:3:3",
    ]
    assert not any("Traceback" in line for line in lines)


# --- remarks never disagree with the plan ------------------------------------------------------


def _written_scope(value: SSAValue) -> SEScopeAttr | None:
    """The scope plan-devices wrote for `value`: its parameter attribute or its op's se_scope."""
    if isinstance(value, BlockArgument):
        fn = value.block.parent_op()
        assert isinstance(fn, func.FuncOp) and fn.arg_attrs is not None
        scope = fn.arg_attrs.data[value.index].data["relay.se_scope"]
        assert isinstance(scope, SEScopeAttr)
        return scope
    owner = value.owner
    assert isinstance(owner, Operation)
    if isinstance(owner, relay.DeviceCopyOp):
        return owner.dst_se_scope if owner.parent is not None else None
    return owner.properties.get("se_scope")  # pyright: ignore[reportReturnType]


@pytest.mark.parametrize("seed", range(40))
def test_remarks_agree_with_the_plan(seed: int) -> None:
    rng = random.Random(seed)
    devices = rng.choice([("cpu", "opencl"), ("cpu", "opencl", "opencl:1"), ("cpu:1", "opencl")])
    module = xrelay.parse(random_module_text(rng, num_ops=rng.randint(3, 14), devices=devices))
    constraints = solve(module, CompilationConfig.from_options(TARGETS, rng.choice([None, "opencl"])))
    values = [v for op in module.walk() for v in (*_block_args(op), *op.results)]
    remarks = {v: r for v in values if (r := remark_for(constraints, v)) is not None}
    assert remarks, "every graph has parameters"
    WriteBack(constraints).run()
    compared = 0
    for value, remark in remarks.items():
        fields = [f for step in remark.steps for f in step.fields]
        assert sorted(fields) == sorted(FIELDS), f"each field is fixed by exactly one step: {remark}"
        written = _written_scope(value)
        if written is not None:
            assert remark.scope == written, f"{remark} but plan-devices wrote {written.short_str()}"
            compared += 1
    assert compared >= len(remarks) // 2, "most values keep an op or attribute that says where they are"


def _block_args(op: Operation) -> list[SSAValue]:
    return [arg for region in op.regions for block in region.blocks for arg in block.args]


def test_without_targets_the_module_is_planned_for_the_targets_its_scopes_name() -> None:
    """DESIGN.md §5's `xrelay.explain(module, "%h")` on a model with opencl scopes: planned
    for "c" and opencl (it raised a ConfigError naming plan-devices' targets before)."""
    module = xrelay.parse(THREE_SCOPES.read_text())
    (remark,) = xrelay.explain(module, "%h")
    assert str(remark.scope) == str(xrelay.explain(module, "%h", targets=("c", "opencl"))[0].scope)
    assert remark.scope.device == "cpu" and remark.scope.id == 1
