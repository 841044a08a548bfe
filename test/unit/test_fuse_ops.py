"""fuse-ops: the graph and post-dominator tree, the union-find, names, and differential tests on
random planned graphs (fusion never changes what `xrelay.interpret` computes)."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from random_graphs import random_inputs, random_module_text
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation

import xrelay
from xrelay.diagnostics import ConfigError
from xrelay.dialects import relay
from xrelay.dialects.relay import OpPatternKind
from xrelay.dialects.se_scope import SEScopeAttr
from xrelay.transforms.fuse_ops import FuseOpsPass, KernelNames, fuse_group, kernel_name
from xrelay.transforms.fusion_graph import build_graph, post_dominator_tree
from xrelay.transforms.fusion_groups import GraphPartitioner, Group
from xrelay.transforms.plan_devices import PlanDevicesPass

T = "tensor<4xf32>"


def body_of(text: str):
    module = xrelay.parse(text)
    fn = next(op for op in module.ops if isinstance(op, func.FuncOp))
    return module, fn.body.block


def names(nodes) -> list[str]:
    return [node.op.name if node.op is not None else "tuple" for node in nodes]


def fuse(module: ModuleOp, max_depth: int = 256) -> ModuleOp:
    FuseOpsPass(max_depth=max_depth).apply(xrelay.context(), module)
    module.verify()
    return module


# --- the graph and its post-dominator tree ------------------------------------------------------

DIAMOND = f"""func.func @f(%a: {T}, %b: {T}) -> tensor<8xf32> {{
  %0 = relay.exp %a : {T}
  %1 = relay.tanh %b : {T}
  %2 = relay.nn.relu %0 : {T}
  %3 = relay.add %2, %0 : ({T}, {T}) -> {T}
  %4 = relay.concatenate %3, %1 {{axis = 0 : i64}} : ({T}, {T}) -> tensor<8xf32>
  func.return %4 : tensor<8xf32>
}}"""


def test_post_dfs_order_follows_operands_from_the_returned_value():
    _, block = body_of(DIAMOND)
    graph = build_graph(block)
    assert names(graph.post_dfs_order) == [
        "relay.exp", "relay.nn.relu", "relay.add", "relay.tanh", "tuple", "relay.concatenate",
    ]  # fmt: skip
    assert [n.index for n in graph.post_dfs_order] == list(range(6))
    assert graph.post_dfs_order[-1].extern_ref


def test_edges_carry_the_consumer_pattern():
    _, block = body_of(DIAMOND)
    exp, relu, add, tanh, tup, concat = build_graph(block).post_dfs_order
    # edges are recorded as the walk enters each consumer (add before relu); add's operands
    # have its result shape, so its Broadcast edge becomes ElemWise
    assert [(e.node, e.pattern) for e in exp.outputs] == [
        (add, OpPatternKind.ELEMWISE), (relu, OpPatternKind.ELEMWISE),
    ]  # fmt: skip
    assert [(e.node, e.pattern) for e in add.outputs] == [(tup, OpPatternKind.INJECTIVE)]
    assert [(e.node, e.pattern) for e in tup.outputs] == [(concat, OpPatternKind.INJECTIVE)]
    assert tup.pattern == OpPatternKind.TUPLE


def test_post_dominators_of_a_diamond():
    _, block = body_of(DIAMOND)
    graph = build_graph(block)
    tree = post_dominator_tree(graph)
    exp, relu, add, tanh, tup, concat = graph.post_dfs_order
    parent = {names([t.gnode])[0]: t.parent.gnode if t.parent else None for t in tree}
    assert parent["relay.exp"] is add  # the paths through relu re-join at add
    assert parent["relay.nn.relu"] is add and parent["relay.tanh"] is tup
    assert parent["relay.concatenate"] is None  # returned: extern
    assert tree[exp.index].pattern == OpPatternKind.ELEMWISE
    assert tree[tanh.index].pattern == OpPatternKind.INJECTIVE


def test_a_broadcast_that_grows_the_operand_keeps_its_pattern():
    _, block = body_of("""func.func @f(%a: tensor<4xf32>, %b: tensor<3x4xf32>) -> tensor<3x4xf32> {
      %0 = relay.exp %a : tensor<4xf32>
      %1 = relay.add %0, %b : (tensor<4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
      func.return %1 : tensor<3x4xf32>
    }""")
    exp, add = build_graph(block).post_dfs_order
    assert exp.outputs[0].pattern == OpPatternKind.BROADCAST


def test_several_returned_values_make_an_extern_tuple():
    _, block = body_of(f"""func.func @f(%a: {T}) -> ({T}, {T}) {{
      %0 = relay.exp %a : {T}
      %1 = relay.nn.relu %0 : {T}
      func.return %0, %1 : {T}, {T}
    }}""")
    graph = build_graph(block)
    assert names(graph.post_dfs_order) == ["relay.exp", "relay.nn.relu", "tuple"]
    tree = post_dominator_tree(graph)
    assert tree[0].parent.gnode is graph.post_dfs_order[2]  # exp's paths meet at the tuple
    assert graph.post_dfs_order[2].extern_ref and not graph.post_dfs_order[0].extern_ref


def test_a_long_chain_needs_no_recursion():
    ops = "\n".join(f"  %{i + 1} = relay.negative %{i} : {T}" for i in range(1500))
    module, block = body_of(f"func.func @f(%0: {T}) -> {T} {{\n{ops}\n  func.return %1500 : {T}\n}}")
    assert len(build_graph(block).post_dfs_order) == 1500
    fuse(module, max_depth=10_000)
    assert len([op for op in module.walk() if isinstance(op, relay.FusedOp)]) == 1


# --- the union-find and the names -----------------------------------------------------------------


def test_find_root_compresses_paths():
    _, block = body_of(DIAMOND)
    nodes = build_graph(block).post_dfs_order
    a, b, c = Group(nodes[0]), Group(nodes[1]), Group(nodes[2])
    a.parent, b.parent = b, c
    assert a.find_root() is c and a.parent is c


def test_partition_matches_tvm_on_a_chain_of_300():
    """TVM's test_fuse_max: 300 exps with the default max depth are groups of 256 and 44."""
    ops = "\n".join(f"  %{i + 1} = relay.exp %{i} : {T}" for i in range(300))
    module, _ = body_of(f"func.func @f(%0: {T}) -> {T} {{\n{ops}\n  func.return %300 : {T}\n}}")
    fuse(module)
    sizes = [len(op.body.block.ops) - 1 for op in module.walk() if isinstance(op, relay.FusedOp)]
    assert sizes == [256, 44]


def test_kernel_names_are_cut_and_made_unique():
    claim = KernelNames(taken={"fused_exp_1"}).claim
    assert [claim("fused_exp"), claim("fused_exp"), claim("fused_exp"), claim("fused_add")] == [
        "fused_exp", "fused_exp_2", "fused_exp_3", "fused_add",
    ]  # fmt: skip
    module, block = body_of(f"""func.func @f(%a: {T}) -> {T} {{
      %0 = relay.nn.relu %a : {T}
      func.return %0 : {T}
    }}""")
    assert kernel_name(list(block.ops)[:1]) == "fused_nn_relu"
    assert len(kernel_name([block.first_op] * 20)) == 80


def test_a_group_whose_inner_op_escapes_is_refused():
    """TVM's rules never make such a group (see fuse_ops' docstring); the guard catches a bug."""
    _, block = body_of(f"""func.func @f(%a: {T}) -> ({T}, {T}) {{
      %0 = relay.exp %a : {T}
      %1 = relay.nn.relu %0 : {T}
      func.return %0, %1 : {T}, {T}
    }}""")
    exp, relu = list(block.ops)[:2]
    with pytest.raises(AssertionError, match="relay.exp .* escapes its group through func.return"):
        fuse_group([exp, relu], KernelNames())


def test_max_depth_below_one_is_a_config_error():
    module, _ = body_of(f"func.func @f(%a: {T}) -> {T} {{\n  func.return %a : {T}\n}}")
    with pytest.raises(ConfigError, match="max-depth >= 1"):
        FuseOpsPass(max_depth=0).apply(xrelay.context(), module)


def test_partitioner_refuses_to_mix_scopes():
    cpu, cl = "#relay.se_scope<device = cpu>", "#relay.se_scope<device = opencl>"
    _, block = body_of(f"""func.func @f(%a: {T}) -> {T} {{
      %0 = relay.exp %a {{se_scope = {cpu}}} : {T}
      %1 = relay.exp %0 {{se_scope = {cl}}} : {T}
      func.return %1 : {T}
    }}""")
    graph = build_graph(block)
    groups = GraphPartitioner(256).partition(graph)
    assert groups[0].find_root() is not groups[1].find_root()


# --- invariants and differential tests on random graphs -------------------------------------------


def live_primitive_ops(module: ModuleOp) -> dict[int, Operation]:
    """Primitive ops whose results reach a `func.return` (the ops fuse-ops must keep)."""
    live: dict[int, Operation] = {}
    stack = [v.owner for op in module.walk() if isinstance(op, func.ReturnOp) for v in op.operands]
    while stack:
        op = stack.pop()
        if not isinstance(op, Operation) or id(op) in live:
            continue
        live[id(op)] = op
        stack.extend(v.owner for v in op.operands)
    return {k: op for k, op in live.items() if isinstance(op, relay.PRIMITIVE_OPS)}


def check_fused(module: ModuleOp, live: dict[int, Operation], scopes: dict[int, object]) -> None:
    fused = [op for op in module.walk() if isinstance(op, relay.FusedOp)]
    inside = [op for group in fused for op in group.body.block.ops if not isinstance(op, relay.YieldOp)]
    # every (live) primitive op is in exactly one group, and groups hold nothing else
    assert sorted(map(id, inside)) == sorted(live)
    assert all(isinstance(op, relay.PRIMITIVE_OPS) for op in inside)
    primitive = [op for op in module.walk() if isinstance(op, relay.PRIMITIVE_OPS)]
    assert all(isinstance(op.parent_op(), relay.FusedOp) for op in primitive)
    kernels = [group.kernel for group in fused]
    assert len(set(kernels)) == len(kernels) and all(len(k) <= 80 + 4 for k in kernels)
    for group in fused:
        ops = [op for op in group.body.block.ops if not isinstance(op, relay.YieldOp)]
        # one scope per group, the one the group carries; scopes dropped inside
        assert {scopes[id(op)] for op in ops} == {group.se_scope}
        assert all(op.se_scope is None for op in ops)
        # one result: every value but the yielded one is used only inside the group
        for op in ops[:-1]:
            assert all(use.operation.parent is group.body.block for use in op.results[0].uses)
        assert isinstance(group.parent_op(), func.FuncOp)


def run_fuse_checked(module: ModuleOp, max_depth: int) -> None:
    live = live_primitive_ops(module)
    scopes = {id(op): op.se_scope for op in live.values()}
    fuse(module, max_depth)
    check_fused(module, live, scopes)


def assert_same(actual, expected) -> None:
    for a, e in zip(np.atleast_1d(actual), np.atleast_1d(expected)):
        np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-6, equal_nan=True)


SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)


@SETTINGS
@given(seed=st.integers(0, 2**31 - 1), num_ops=st.integers(1, 24), max_depth=st.sampled_from([1, 2, 3, 5, 256]))
def test_fusion_of_planned_graphs_preserves_semantics(seed: int, num_ops: int, max_depth: int):
    module = xrelay.parse(random_module_text(seed, num_ops=num_ops, devices=("cpu", "opencl", "opencl:1")))
    inputs = random_inputs(module, seed)
    expected = xrelay.interpret(module, inputs)
    PlanDevicesPass(targets=("c", "opencl"), default_device="opencl").apply(xrelay.context(), module)
    run_fuse_checked(module, max_depth)
    copies = [op for op in module.walk() if isinstance(op, relay.DeviceCopyOp)]
    assert all(isinstance(op.parent_op(), func.FuncOp) for op in copies)  # never in a group
    assert_same(xrelay.interpret(module, inputs), expected)


@SETTINGS
@given(seed=st.integers(0, 2**31 - 1), num_ops=st.integers(1, 24))
def test_fusion_of_unplanned_graphs_preserves_semantics(seed: int, num_ops: int):
    """Without plan-devices: no scopes; on_device and device_copy stay outside the groups."""
    module = xrelay.parse(random_module_text(seed, num_ops=num_ops))
    inputs = random_inputs(module, seed)
    expected = xrelay.interpret(module, inputs)
    run_fuse_checked(module, 256)
    for op in module.walk():
        if isinstance(op, (relay.OnDeviceOp, relay.DeviceCopyOp, relay.ConstantOp)):
            assert isinstance(op.parent_op(), func.FuncOp)
    assert_same(xrelay.interpret(module, inputs), expected)


SCOPES = (None, SEScopeAttr(device="cpu"), SEScopeAttr(device="opencl"), SEScopeAttr(device="opencl", id=1))


@SETTINGS
@given(seed=st.integers(0, 2**31 - 1), num_ops=st.integers(2, 24))
def test_fusion_never_mixes_scopes_set_by_hand(seed: int, num_ops: int):
    """Scopes set on ops directly (no copies between them): groups still hold one scope."""
    module = xrelay.parse(random_module_text(seed, num_ops=num_ops, annotate=False))
    rng = random.Random(seed)
    for op in module.walk():
        if isinstance(op, relay.PRIMITIVE_OPS):
            op.se_scope = rng.choice(SCOPES[:2] if rng.random() < 0.5 else SCOPES)
    inputs = random_inputs(module, seed)
    expected = xrelay.interpret(module, inputs)
    run_fuse_checked(module, 256)
    assert_same(xrelay.interpret(module, inputs), expected)


@SETTINGS
@given(seed=st.integers(0, 2**31 - 1))
def test_fusing_twice_changes_nothing(seed: int):
    module = xrelay.parse(random_module_text(seed, num_ops=16))
    PlanDevicesPass(targets=("c", "opencl")).apply(xrelay.context(), module)
    once = str(fuse(module))
    assert str(fuse(module)) == once


def test_a_group_has_fewer_nodes_than_max_depth_allows():
    module = xrelay.parse(random_module_text(7, num_ops=40, annotate=False))
    fuse(module, max_depth=3)
    for group in (op for op in module.walk() if isinstance(op, relay.FusedOp)):
        assert len(group.body.block.ops) - 1 <= 3
