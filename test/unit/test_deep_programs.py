"""Deep programs (issue 33, item 5): chains of hundreds and thousands of fusible ops, and of
calls, build, run and interpret without hitting Python's recursion limit, equal to numpy.
bench/deep_programs.py times the 10,000-op chain."""

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation

import xrelay
from xrelay.transforms.convert_relay_to_loops import ConvertRelayToLoopsPass
from xrelay.transforms.fuse_ops import FuseOpsPass
from xrelay.transforms.plan_devices import PlanDevicesPass
from xrelay.transforms.scalar_ops import BRANCH_NESTING

RNG = np.random.default_rng(33)
X = RNG.standard_normal((4, 8)).astype(np.float32)


def elementwise_chain(n: int) -> tuple[ModuleOp, np.ndarray]:
    """`n` elementwise and injective ops in a row on a 4x8 input, and the same in numpy."""
    b = xrelay.Builder()
    y = b.input("x", X.shape)
    want = X
    for i in range(n):
        k = i % 6
        if k == 0:
            y, want = b.negative(y), -want
        elif k == 1:
            y, want = b.add(y, 0.25), want + np.float32(0.25)
        elif k == 2:
            y, want = b.tanh(y), np.tanh(want)
        elif k == 3:
            y, want = b.transpose(y, (1, 0)), want.T
        elif k == 4:
            y, want = b.reshape(y, (4, 8)), want.reshape(4, 8)
        else:
            y, want = b.nn.relu(y), np.maximum(want, np.float32(0))
    return b.finish(y), want


@pytest.mark.parametrize("n", [200, 2000])
@pytest.mark.parametrize("target", ["c", "opencl"])
def test_a_long_chain_of_fusible_ops_builds_and_runs(n: int, target: str) -> None:
    """200 ops failed with a RecursionError in scalar_ops.value_at (one group of 200)."""
    module, want = elementwise_chain(n)
    np.testing.assert_allclose(xrelay.build(module, targets=(target,)).run(X), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(xrelay.interpret(module, [X]), want, rtol=1e-5, atol=1e-6)


def nested_concatenates(n: int) -> ModuleOp:
    """`n` concatenates, each the first input of the next: `n` nested branches in one group."""
    b = xrelay.Builder()
    x = b.input("x", X.shape)
    empty = b.const(np.zeros((4, 0), np.float32))
    y = x
    for i in range(n):
        y = b.concatenate([b.tanh(y), empty, b.negative(x)] if i % 2 else [y, x], axis=1)
    return b.finish(b.sum(y, axis=1))


def nested_pads(n: int) -> ModuleOp:
    """Pads with the constant, each inside the next's branch, and a slice back after each."""
    b = xrelay.Builder()
    y = b.input("x", X.shape)
    for i in range(n):
        y = b.nn.pad(y, ((0, 0), (1, 0)), pad_value=0.5 + i)
        y = b.nn.relu(b.strided_slice(y, (0, 1), (4, 9)))
    return b.finish(y)


@pytest.mark.parametrize("program", [nested_concatenates, nested_pads])
@pytest.mark.parametrize("target", ["c", "opencl"])
def test_branches_past_the_nesting_bound_select_instead(program, target: str) -> None:
    """A group of 200 nested concatenates or pads nests only BRANCH_NESTING regions (they
    select past it); its values equal the interpreter's, with branches and with selects."""
    module = program(200)
    want = xrelay.interpret(module, [X])
    np.testing.assert_allclose(xrelay.build(module, targets=(target,)).run(X), want, rtol=1e-5, atol=1e-5)
    shallow = program(BRANCH_NESTING // 2)
    np.testing.assert_allclose(
        xrelay.build(shallow, targets=(target,)).run(X), xrelay.interpret(shallow, [X]), rtol=1e-5, atol=1e-5
    )


def region_depth(op: Operation) -> int:
    """The most regions nested inside `op` (a stack, not a recursion)."""
    deepest, stack = 0, [(op, 0)]
    while stack:
        inner, depth = stack.pop()
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for region in inner.regions for block in region.blocks for child in block.ops)
    return deepest


def test_kernels_nest_no_deeper_than_the_bound() -> None:
    """One group of 200 nested concatenates: its kernel nests BRANCH_NESTING branches at most."""
    module = nested_concatenates(200)
    PlanDevicesPass(targets=("c",), default_device="cpu").apply(xrelay.context(), module)
    FuseOpsPass(max_depth=1000).apply(xrelay.context(), module)
    ConvertRelayToLoopsPass().apply(xrelay.context(), module)
    kernels = [f for f in module.ops if isinstance(f, func.FuncOp) and f.sym_name.data != "main"]
    assert len(kernels) == 2  # the concatenates with their producers, and the sum
    assert max(region_depth(k) for k in kernels) <= BRANCH_NESTING + 3  # the body, its parallel nest, a loop


def call_chain(n: int) -> str:
    """@main calls @f0, which calls @f1, ... @f{n-1}; each negates what it gets back."""
    functions = []
    for i in range(n):
        body = (
            f"  %y = func.call @f{i + 1}(%x) : (tensor<2xf32>) -> tensor<2xf32>\n  %z = relay.negative %y : tensor<2xf32>\n"
            if i + 1 < n
            else "  %z = relay.negative %x : tensor<2xf32>\n"
        )
        functions.append(
            f"func.func @f{i}(%x: tensor<2xf32>) -> tensor<2xf32> {{\n{body}  func.return %z : tensor<2xf32>\n}}\n"
        )
    main = "func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {\n"
    main += "  %y = func.call @f0(%x) : (tensor<2xf32>) -> tensor<2xf32>\n  func.return %y : tensor<2xf32>\n}\n"
    return "".join(functions) + main


def test_interpret_runs_a_chain_of_calls() -> None:
    """xDSL's interpreter takes several Python frames per call: 300 calls deep overflowed."""
    x = np.array([1.0, -2.0], np.float32)
    np.testing.assert_array_equal(xrelay.interpret(call_chain(300), [x]), x)
    np.testing.assert_array_equal(xrelay.interpret(call_chain(301), [x]), -x)


RECURSIVE = """
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  %y = func.call @g(%x) : (tensor<2xf32>) -> tensor<2xf32>
  func.return %y : tensor<2xf32>
}
func.func @g(%x: tensor<2xf32>) -> tensor<2xf32> {
  %y = func.call @f(%x) : (tensor<2xf32>) -> tensor<2xf32>
  func.return %y : tensor<2xf32>
}
func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  %y = func.call @f(%x) : (tensor<2xf32>) -> tensor<2xf32>
  func.return %y : tensor<2xf32>
}
"""


def test_interpret_refuses_a_recursive_call() -> None:
    """It raised RecursionError from inside xDSL's interpreter."""
    with pytest.raises(xrelay.InputError, match=r"<input>:7:3: .*recursive call to @f \(@f -> @g -> @f\)"):
        xrelay.interpret(RECURSIVE, [np.ones(2, np.float32)])


def test_build_runs_a_chain_of_calls() -> None:
    """inline-calls walked @main once per level of calls and the module once per function it
    erased: 500 calls took 40 s in inline-calls (now 0.2 s)."""
    x = np.array([1.0, -2.0], np.float32)
    np.testing.assert_array_equal(xrelay.build(call_chain(301)).run(x), -x)
