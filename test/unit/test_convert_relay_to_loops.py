"""convert-relay-to-loops: every op and the fused patterns, run in xDSL's interpreter.

Each case is one hand-written `relay.fused` group (fuse-ops' output form). The test lowers it,
checks the kernel's form (one top-level scf.parallel nest, only the loop-level ops of the
contract) and runs the kernel in the interpreter (`loop_interpreter.py`) against
`xrelay.interpret` of the fused module on random inputs. The last tests run unfused programs
(a small conv net, random two-device graphs) through plan-devices and fuse-ops first.
"""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest
from loop_interpreter import run_lowered
from random_graphs import random_inputs as random_graph_inputs
from random_graphs import random_module_text
from xdsl.dialects import arith, func, memref, scf

import xrelay
from xrelay.dialects import relay
from xrelay.errors import CompileError
from xrelay.transforms.convert_relay_to_loops import ConvertRelayToLoopsPass
from xrelay.transforms.fuse_ops import FuseOpsPass
from xrelay.transforms.plan_devices import PlanDevicesPass

SCOPE = '#relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">'

# The loop-level ops a kernel may use (common.md, "Pipeline / interfaces", item 3).
ALLOWED = {
    "func.return", "scf.parallel", "scf.for", "scf.if", "scf.yield", "scf.reduce",
    "memref.load", "memref.store", "memref.alloca",
    "arith.constant", "arith.addf", "arith.subf", "arith.mulf", "arith.divf", "arith.negf",
    "arith.maximumf", "arith.minimumf", "arith.cmpf", "arith.select", "arith.addi", "arith.subi",
    "arith.muli", "arith.divsi", "arith.remsi", "arith.cmpi", "arith.index_cast", "arith.sitofp",
    "arith.uitofp",
    "math.exp", "math.log", "math.sqrt", "math.rsqrt", "math.tanh", "math.absf", "math.erf", "math.powf",
}  # fmt: skip


def t(shape: str) -> str:
    return f"tensor<{shape}xf32>" if shape else "tensor<f32>"


def fused_module(params: str, body: str, name: str = "fused_kernel") -> str:
    """@main with one group over `params` ("x:2x3 w:4x3"); the body's last op is yielded."""
    args = [p.split(":") for p in params.split()]
    lines = [line.strip() for line in body.strip().splitlines()]
    result = re.search(r"(tensor<[^>]*>)\s*$", lines[-1]).group(1)
    last = re.match(r"(%\w+)", lines[-1]).group(1)
    types = ", ".join(t(s) for _, s in args)
    return f"""func.func @main({", ".join(f"%{n}_in: {t(s)}" for n, s in args)}) -> {result} {{
  %out = relay.fused({", ".join(f"%{n}_in" for n, _ in args)}) {{kernel_name = "{name}", se_scope = {SCOPE}}} : ({types}) -> {result} {{
  ^bb0({", ".join(f"%{n}: {t(s)}" for n, s in args)}):
    {chr(10).join("    " + line for line in lines).strip()}
    relay.yield {last} : {result}
  }}
  func.return %out : {result}
}}"""


def random_inputs(module, seed: int, positive: bool) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    main = next(op for op in module.ops if isinstance(op, func.FuncOp) and op.sym_name.data == "main")
    inputs = {}
    for arg in main.args:
        shape = tuple(arg.type.get_shape())
        x = rng.uniform(0.5, 2.0, shape) if positive else rng.standard_normal(shape)
        inputs[arg.name_hint] = x.astype(np.float32)
    return inputs


def lower(text: str):
    module = xrelay.parse(text)
    ConvertRelayToLoopsPass().apply(xrelay.context(), module)
    module.verify()
    return module


def check_kernel_form(module) -> None:
    kernels = [op for op in module.ops if isinstance(op, func.FuncOp) and "relay.se_scope" in op.attributes]
    assert kernels
    for kernel in kernels:
        ops = list(kernel.body.block.ops)
        assert isinstance(ops[-1], func.ReturnOp) and isinstance(ops[-2], scf.ParallelOp)
        assert all(isinstance(op, arith.ConstantOp) for op in ops[:-2])
        assert 1 <= len(ops[-2].lowerBound) <= 3
        used = {op.name for op in kernel.walk()} - {"func.func"}
        assert used <= ALLOWED, used - ALLOWED
        # producers are recomputed, never buffered; only a conv2d's work item has scratch (its
        # output rows, block x width, and one padded input row), a C dense or
        # batch_matmul's of whole rows (the transposed rhs, and the output rows), a C matmul's
        # of whole rows (the output rows), and a matmul block's with an epilogue (its sums, of
        # the result's rank)
        scratch = [op.memref.type.get_shape() for op in kernel.walk() if op.name == "memref.alloca"]
        assert not scratch or [len(shape) for shape in scratch] in ([2, 1], [2, 2], [2]) or len(scratch) == 1, scratch
    assert not any(isinstance(op, relay.FusedOp) for op in module.walk())


def check_lowering(text: str, positive: bool = False, seeds=(0,), rtol: float = 1e-4) -> None:
    fused = xrelay.parse(text)
    module = lower(text)
    check_kernel_form(module)
    for seed in seeds:
        inputs = random_inputs(fused, seed, positive)
        expected = xrelay.interpret(fused, inputs)
        got = run_lowered(module, inputs)
        assert got.shape == expected.shape
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=1e-5)


# --- single ops -----------------------------------------------------------------------------

UNARY = ["negative", "exp", "tanh", "sigmoid", "abs", "erf", "nn.relu"]
POSITIVE_UNARY = ["log", "sqrt", "rsqrt"]


@pytest.mark.parametrize("op", UNARY + POSITIVE_UNARY)
def test_unary(op: str) -> None:
    check_lowering(fused_module("x:3x1x2", f"%r = relay.{op} %x : {t('3x1x2')}"), positive=op in POSITIVE_UNARY)


def test_clip() -> None:
    check_lowering(fused_module("x:5", f"%r = relay.clip %x {{a_min = -0.5 : f32, a_max = 0.25 : f32}} : {t('5')}"))


@pytest.mark.parametrize("op", ["add", "subtract", "multiply", "divide", "maximum", "minimum", "power"])
def test_binary_broadcast_both_ways(op: str) -> None:
    body = f"%r = relay.{op} %x, %y : ({t('3x1')}, {t('2x1x4')}) -> {t('2x3x4')}"
    check_lowering(fused_module("x:3x1 y:2x1x4", body), positive=op in ("divide", "power"))


def test_binary_scalar_operand() -> None:
    check_lowering(fused_module("x:2x3 y:", f"%r = relay.multiply %x, %y : ({t('2x3')}, {t('')}) -> {t('2x3')}"))


@pytest.mark.parametrize("axis", [1, -2])
def test_bias_add(axis: int) -> None:
    body = f"%r = relay.nn.bias_add %x, %b {{axis = {axis} : i64}} : ({t('2x3x2')}, {t('3')}) -> {t('2x3x2')}"
    check_lowering(fused_module("x:2x3x2 b:3", body))


def test_reshape() -> None:
    check_lowering(fused_module("x:2x3x4", f"%r = relay.reshape %x : ({t('2x3x4')}) -> {t('4x1x6')}"))


RESHAPES_ONLY = f"""
    %s = relay.squeeze %x {{axis = array<i64: -1, 0>}} : ({t("1x3x1")}) -> {t("3")}
    %e = relay.expand_dims %s {{axis = -1 : i64, num_newaxis = 2 : i64}} : ({t("3")}) -> {t("3x1x1")}
    %r = relay.reshape %e : ({t("3x1x1")}) -> {t("1x3")}"""


@pytest.mark.parametrize(
    ("body", "marked"), [(RESHAPES_ONLY, True), (RESHAPES_ONLY + "\n%n = relay.negative %r : " + t("1x3"), False)]
)
def test_a_reshape_only_group_has_its_launch_marked(body: str, marked: bool) -> None:
    """Reshapes only (reshape, squeeze, expand_dims) move no data: the launch is marked
    `relay.reshape_only` (plan-memory aliases its result); the kernel is there all the same."""
    text = fused_module("x:1x3x1", body)
    module = lower(text)
    (launch,) = [op for op in module.walk() if isinstance(op, relay.LaunchOp)]
    assert ("relay.reshape_only" in launch.attributes) == marked
    check_lowering(text)


def test_transpose() -> None:
    body = f"%r = relay.transpose %x {{axes = array<i64: 1, -1, 0>}} : ({t('2x3x4')}) -> {t('3x4x2')}"
    check_lowering(fused_module("x:2x3x4", body))


def test_transpose_default_reverses() -> None:
    check_lowering(fused_module("x:2x3", f"%r = relay.transpose %x : ({t('2x3')}) -> {t('3x2')}"))


def test_squeeze_and_expand_dims() -> None:
    body = f"""
    %s = relay.squeeze %x {{axis = array<i64: -1, 0>}} : ({t("1x3x1")}) -> {t("3")}
    %r = relay.expand_dims %s {{axis = -1 : i64, num_newaxis = 2 : i64}} : ({t("3")}) -> {t("3x1x1")}"""
    check_lowering(fused_module("x:1x3x1", body))


def test_squeeze_all_size_one_axes() -> None:
    check_lowering(fused_module("x:1x3x1", f"%r = relay.squeeze %x : ({t('1x3x1')}) -> {t('3')}"))


def test_broadcast_to() -> None:
    check_lowering(fused_module("x:3x1", f"%r = relay.broadcast_to %x : ({t('3x1')}) -> {t('2x3x4')}"))


def test_strided_slice_negative_strides() -> None:
    body = (
        "%r = relay.strided_slice %x {begin = array<i64: 4, -1>, end = array<i64: -6, 0>, "
        f"strides = array<i64: -2, -1>}} : ({t('5x4x2')}) -> {t('3x3x2')}"
    )
    check_lowering(fused_module("x:5x4x2", body))


def test_strided_slice_positive() -> None:
    body = (
        "%r = relay.strided_slice %x {begin = array<i64: 1>, end = array<i64: 7>, "
        f"strides = array<i64: 3>}} : ({t('7x2')}) -> {t('2x2')}"
    )
    check_lowering(fused_module("x:7x2", body))


@pytest.mark.parametrize("axis", [1, -1])
def test_concatenate(axis: int) -> None:
    body = f"%r = relay.concatenate %a, %b, %c {{axis = {axis} : i64}} : ({t('2x1')}, {t('2x3')}, {t('2x2')}) -> {t('2x6')}"
    check_lowering(fused_module("a:2x1 b:2x3 c:2x2", body))


@pytest.mark.parametrize("op", ["sum", "mean", "max", "min"])
@pytest.mark.parametrize("attrs,result", [
    ("{axis = array<i64: 1, -1>}", "2"),
    ("{axis = array<i64: -2>, keepdims = true}", "2x1x3"),
    ("", ""),
])  # fmt: skip
def test_reduce(op: str, attrs: str, result: str) -> None:
    check_lowering(fused_module("x:2x3x3", f"%r = relay.{op} %x {attrs} : ({t('2x3x3')}) -> {t(result)}"))


def test_reduce_all_axes_keepdims() -> None:
    body = f"%r = relay.sum %x {{keepdims = true}} : ({t('3x2')}) -> {t('1x1')}"
    check_lowering(fused_module("x:3x2", body))


@pytest.mark.parametrize("axis,shape", [(-1, "2x3"), (0, "3x1x2"), (1, "2x1"), (0, "4"), (-3, "2x1x2x3x2")])
def test_softmax(axis: int, shape: str) -> None:
    body = f"%r = relay.nn.softmax %x {{axis = {axis} : i64}} : ({t(shape)}) -> {t(shape)}"
    check_lowering(fused_module(f"x:{shape}", body))


def test_dense_batched_data() -> None:
    body = f"%r = relay.nn.dense %x, %w : ({t('2x1x3')}, {t('5x3')}) -> {t('2x1x5')}"
    check_lowering(fused_module("x:2x1x3 w:5x3", body))


def test_dense_vector() -> None:
    check_lowering(fused_module("x:3 w:2x3", f"%r = relay.nn.dense %x, %w : ({t('3')}, {t('2x3')}) -> {t('2')}"))


@pytest.mark.parametrize("lhs,rhs,result", [("2x3x4", "2x1x4", "2x3x1"), ("1x2x3", "3x2x3", "3x2x2")])
def test_batch_matmul(lhs: str, rhs: str, result: str) -> None:
    body = f"%r = relay.nn.batch_matmul %x, %y : ({t(lhs)}, {t(rhs)}) -> {t(result)}"
    check_lowering(fused_module(f"x:{lhs} y:{rhs}", body))


CONV_CASES = [
    # data, weight, attrs, result
    ("1x2x4x4", "3x2x3x3", "", "1x3x2x2"),
    ("1x2x5x5", "2x2x3x3", "{strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>}", "1x2x3x3"),
    ("2x2x5x4", "2x2x2x2", "{dilation = array<i64: 2, 1>, padding = array<i64: 0, 1, 1, 0>}", "2x2x4x4"),
    ("1x4x3x3", "6x2x2x2", "{groups = 2 : i64, padding = array<i64: 1, 1>, strides = array<i64: 1, 2>}", "1x6x4x2"),
    (
        "1x2x3x3",
        "2x1x3x3",
        "{groups = 2 : i64, padding = array<i64: 2, 0, 0, 2>, dilation = array<i64: 2, 2>}",
        "1x2x1x1",
    ),
]

# Results at least MIN_ROW_WIDTH wide: a work item per output row (schedules/conv_rows.py).
ROW_CONV_CASES = [
    ("1x2x6x7", "3x2x3x3", "{padding = array<i64: 1, 2, 3, 1>}", "1x3x8x8"),  # every side, unequal
    ("2x3x7x9", "2x3x3x2", "{strides = array<i64: 2, 3>, padding = array<i64: 2, 1, 0, 2>}", "2x2x4x4"),
    ("1x2x6x9", "2x2x2x3", "{dilation = array<i64: 2, 3>, padding = array<i64: 1, 2, 1, 2>}", "1x2x6x7"),
    (
        "1x4x5x6",
        "6x2x3x3",
        "{groups = 2 : i64, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 2>}",
        "1x6x5x3",
    ),
    (
        "1x6x4x8",
        "6x2x1x3",
        "{groups = 3 : i64, strides = array<i64: 1, 2>, dilation = array<i64: 1, 2>, padding = array<i64: 0, 3, 0, 0>}",
        "1x6x4x4",
    ),
    ("1x1x3x4", "2x1x2x2", "{padding = array<i64: 3, 4, 3, 4>}", "1x2x8x11"),  # rows and columns of padding only
    ("1x2x5x16", "1x2x3x3", "{strides = array<i64: 1, 4>}", "1x1x3x4"),  # input columns no window reads
    # at least 16 wide: blocks of 4 output channels, within each conv group
    ("1x4x5x18", "8x2x3x3", "{groups = 2 : i64, padding = array<i64: 1, 1, 1, 1>}", "1x8x5x18"),
    ("2x2x4x17", "4x2x3x3", "{padding = array<i64: 0, 1, 2, 1>, dilation = array<i64: 1, 1>}", "2x4x4x17"),
    ("1x2x4x17", "6x2x3x3", "{padding = array<i64: 0, 1, 2, 1>}", "1x6x4x17"),  # 6 channels: no block
]


@pytest.mark.parametrize("data,weight,attrs,result", CONV_CASES + ROW_CONV_CASES)
def test_conv2d(data: str, weight: str, attrs: str, result: str) -> None:
    body = f"%r = relay.nn.conv2d %x, %w {attrs} : ({t(data)}, {t(weight)}) -> {t(result)}"
    check_lowering(fused_module(f"x:{data} w:{weight}", body))


POOL_CASES = [
    ("1x2x4x4", "{pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>}", "1x2x2x2"),
    (
        "1x1x5x5",
        "{pool_size = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>}",
        "1x1x3x3",
    ),
    ("2x1x3x4", "{pool_size = array<i64: 2, 3>, padding = array<i64: 1, 2, 0, 1>}", "2x1x3x5"),
]


@pytest.mark.parametrize("op", ["max_pool2d", "avg_pool2d"])
@pytest.mark.parametrize("data,attrs,result", POOL_CASES)
def test_pool2d(op: str, data: str, attrs: str, result: str) -> None:
    body = f"%r = relay.nn.{op} %x {attrs} : ({t(data)}) -> {t(result)}"
    check_lowering(fused_module(f"x:{data}", body))


def test_max_pool2d_all_negative_inputs_ignore_padding() -> None:
    """Padding never wins a max, even when every input is negative."""
    text = fused_module(
        "x:1x1x3x3",
        "%r = relay.nn.max_pool2d %x {pool_size = array<i64: 2, 2>, "
        f"padding = array<i64: 1, 1, 1, 1>}} : ({t('1x1x3x3')}) -> {t('1x1x4x4')}",
    )
    x = -np.arange(1, 10, dtype=np.float32).reshape(1, 1, 3, 3)
    got = run_lowered(lower(text), {"x_in": x})
    np.testing.assert_allclose(got, xrelay.interpret(xrelay.parse(text), {"x_in": x}))
    assert got.max() < 0


def test_global_avg_pool2d() -> None:
    body = f"%r = relay.nn.global_avg_pool2d %x : ({t('2x3x3x2')}) -> {t('2x3x1x1')}"
    check_lowering(fused_module("x:2x3x3x2", body))


# --- fused patterns -------------------------------------------------------------------------


def test_conv2d_bias_add_relu() -> None:
    body = f"""
    %c = relay.nn.conv2d %x, %w {{padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 1>}} : ({t("1x2x5x3")}, {t("3x2x3x3")}) -> {t("1x3x3x3")}
    %b1 = relay.nn.bias_add %c, %b : ({t("1x3x3x3")}, {t("3")}) -> {t("1x3x3x3")}
    %r = relay.nn.relu %b1 : {t("1x3x3x3")}"""
    check_lowering(fused_module("x:1x2x5x3 w:3x2x3x3 b:3", body, "fused_nn_conv2d_nn_bias_add_nn_relu"))


def test_wide_conv2d_computes_a_row_per_work_item() -> None:
    """The nest spans all axes but the width; the sums accumulate in a scratch row."""
    body = f"%r = relay.nn.conv2d %x, %w {{padding = array<i64: 1, 1, 1, 1>}} : ({t('1x2x4x5')}, {t('3x2x3x3')}) -> {t('1x3x4x5')}"
    module = lower(fused_module("x:1x2x4x5 w:3x2x3x3", body))
    (nest,) = [op for op in module.walk() if isinstance(op, scf.ParallelOp)]
    assert [int(ub.owner.value.value.data) for ub in nest.upperBound] == [3, 4]
    scratch = [op.memref.type.get_shape() for op in nest.walk() if op.name == "memref.alloca"]
    assert scratch == [(1, 5), (7,)]  # the output row, the input row with its padding
    # no test in the work item: the interior's loops and the border's have their own bounds
    assert not [op for op in module.walk() if isinstance(op, scf.IfOp)]


def test_conv2d_rows_sum_the_interior_in_whole_row_loops_of_multiples_of_8() -> None:
    """12 wide, pad 1: the interior is columns 1-10, of which 1-8 get a whole-row loop per tap;
    columns 0, 9-10 and 11 get a loop each over the taps that read the input there."""
    body = f"%r = relay.nn.conv2d %x, %w {{padding = array<i64: 1, 1, 1, 1>}} : ({t('1x2x4x12')}, {t('3x2x3x3')}) -> {t('1x3x4x12')}"
    module = lower(fused_module("x:1x2x4x12 w:3x2x3x3", body))
    bounds = [
        (int(op.lb.owner.value.value.data), int(op.ub.owner.value.value.data))
        for op in module.walk()
        if isinstance(op, scf.ForOp) and isinstance(op.lb.owner, arith.ConstantOp) and op.lb.owner.value.value.data
    ]
    assert bounds == [(1, 9), (9, 11), (11, 12)]
    assert not [op for op in module.walk() if isinstance(op, scf.IfOp)]


def test_conv2d_rows_32_or_more_wide_test_the_padding_weights_per_window_row() -> None:
    """Whole rows over the padding zeros when the weights of the taps on padding (0 and 2)
    are finite: one test per window row, of those two weights."""
    body = f"%r = relay.nn.conv2d %x, %w {{padding = array<i64: 1, 1, 1, 1>}} : ({t('1x2x4x32')}, {t('3x2x3x3')}) -> {t('1x3x4x32')}"
    module = lower(fused_module("x:1x2x4x32 w:3x2x3x3", body))
    (test,) = [op for op in module.walk() if isinstance(op, scf.IfOp)]
    assert test.cond.owner.name == "arith.cmpf"
    probe = [op for op in test.parent_block().ops if isinstance(op, arith.MulfOp)]
    assert len(probe) == 2


def test_wide_conv2d_computes_rows_of_four_channels_per_work_item() -> None:
    body = f"%r = relay.nn.conv2d %x, %w {{padding = array<i64: 1, 1, 1, 1>}} : ({t('1x2x4x16')}, {t('8x2x3x3')}) -> {t('1x8x4x16')}"
    module = lower(fused_module("x:1x2x4x16 w:8x2x3x3", body))
    (nest,) = [op for op in module.walk() if isinstance(op, scf.ParallelOp)]
    assert [int(ub.owner.value.value.data) for ub in nest.upperBound] == [2, 4]  # 8 channels / 4
    scratch = [op.memref.type.get_shape() for op in nest.walk() if op.name == "memref.alloca"]
    assert scratch == [(4, 16), (18,)]


def test_conv2d_read_at_another_index_is_recomputed() -> None:
    """A transpose of a square conv result reads the conv off the row: computed per element."""
    body = f"""
    %c = relay.nn.conv2d %x, %w {{padding = array<i64: 1, 0, 1, 0>}} : ({t("1x2x4x6")}, {t("2x2x3x3")}) -> {t("1x2x4x4")}
    %r = relay.transpose %c {{axes = array<i64: 0, 1, 3, 2>}} : ({t("1x2x4x4")}) -> {t("1x2x4x4")}"""
    check_lowering(fused_module("x:1x2x4x6 w:2x2x3x3", body))


def test_dense_add_tanh() -> None:
    body = f"""
    %d = relay.nn.dense %x, %w : ({t("3x4")}, {t("5x4")}) -> {t("3x5")}
    %a = relay.add %d, %b : ({t("3x5")}, {t("5")}) -> {t("3x5")}
    %r = relay.tanh %a : {t("3x5")}"""
    check_lowering(fused_module("x:3x4 w:5x4 b:5", body))


# dense (m, k, n) -> the block of outputs a work item computes (rows of 4 only when k >= 256)
DENSE_BLOCKS = [
    ((8, 300, 12), (4, 4)),
    ((6, 260, 10), (2, 2)),  # the largest power of two up to 4 dividing each axis
    ((3, 300, 7), None),  # odd on both axes: one output per work item
    ((5, 3, 6), (1, 2)),
    ((2, 8, 16), (1, 4)),
]


def dense_bias_relu(m: int, k: int, n: int) -> str:
    body = f"""
    %d = relay.nn.dense %x, %w : ({t(f"{m}x{k}")}, {t(f"{n}x{k}")}) -> {t(f"{m}x{n}")}
    %e = relay.nn.bias_add %d, %b : ({t(f"{m}x{n}")}, {t(str(n))}) -> {t(f"{m}x{n}")}
    %r = relay.nn.relu %e : {t(f"{m}x{n}")}"""
    return fused_module(f"x:{m}x{k} w:{n}x{k} b:{n}", body)


@pytest.mark.parametrize("mkn,block", DENSE_BLOCKS)
def test_dense_bias_add_relu_in_register_blocks(mkn: tuple[int, int, int], block) -> None:
    """A work item sums a block of outputs in one loop, an accumulator each, then applies the
    epilogue to each, inline (no maths call in it); the nest spans the blocks."""
    m, k, n = mkn
    text = dense_bias_relu(m, k, n)
    module = lower(text)
    (nest,) = [op for op in module.walk() if isinstance(op, scf.ParallelOp)]
    rows, cols = block or (1, 1)
    tiles = [extent for extent in (m // rows, n // cols) if extent != 1]
    assert [int(ub.owner.value.value.data) for ub in nest.upperBound] == tiles
    (loop,) = [op for op in nest.walk() if isinstance(op, scf.ForOp) and op.iter_args]
    assert not [op for op in nest.walk() if isinstance(op, memref.AllocaOp)]
    assert len(loop.iter_args) == rows * cols
    loads = [op for op in loop.body.block.ops if op.name == "memref.load"]
    assert len(loads) == rows + cols  # each x row and w row once per k
    check_lowering(text)


@pytest.mark.parametrize("device", ["cpu", "opencl"])
def test_dense_block_epilogue_with_tanh_loops_over_the_sums_on_cpu(device: str) -> None:
    """On cpu, an epilogue with a maths call runs in a loop nest over the block's sums, kept
    in a scratch block (gcc vectorises the tanh there); on opencl it stays inline."""
    body = f"""
    %d = relay.nn.dense %x, %w : ({t("8x300")}, {t("12x300")}) -> {t("8x12")}
    %e = relay.nn.bias_add %d, %b : ({t("8x12")}, {t("12")}) -> {t("8x12")}
    %r = relay.tanh %e : {t("8x12")}"""
    text = fused_module("x:8x300 w:12x300 b:12", body)
    if device == "opencl":
        text = text.replace(SCOPE, '#relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">')
    module = lower(text)
    assert schedules_of(module) == ["matmul_block"]
    (nest,) = [op for op in module.walk() if isinstance(op, scf.ParallelOp)]
    scratch = [tuple(op.memref.type.get_shape()) for op in nest.walk() if isinstance(op, memref.AllocaOp)]
    epilogue = [op for op in nest.walk() if isinstance(op, scf.ForOp) and not op.iter_args]
    if device == "cpu":
        assert scratch == [(4, 4)] and len(epilogue) == 2
        (tanh,) = [op for op in nest.walk() if op.name == "math.tanh"]
        assert tanh.parent_op() is epilogue[1]
    else:
        assert not scratch and not epilogue
    check_lowering(text)


# C dense (m, k, n) of short dot products -> the rows a work item computes whole
TRANSPOSED_ROWS = [((16, 20, 12), 16), ((12, 9, 5), 4), ((40, 3, 7), 8), ((8, 64, 64), 8)]


@pytest.mark.parametrize("mkn,rows", TRANSPOSED_ROWS)
def test_c_dense_of_short_dot_products_computes_whole_rows(mkn: tuple[int, int, int], rows: int) -> None:
    """The weight is copied transposed into scratch (k x n), the rows sum in scratch (rows x n)."""
    m, k, n = mkn
    text = dense_bias_relu(m, k, n)
    module = lower(text)
    (nest,) = [op for op in module.walk() if isinstance(op, scf.ParallelOp)]
    assert [int(ub.owner.value.value.data) for ub in nest.upperBound] == [m // rows]
    scratch = [op.memref.type.get_shape() for op in nest.walk() if op.name == "memref.alloca"]
    assert scratch == [(k, n), (rows, n)]
    assert not any(isinstance(op, scf.ForOp) and op.iter_args for op in nest.walk())
    check_lowering(text)


@pytest.mark.parametrize("mkn", [(16, 256, 4), (16, 65, 64), (2, 8, 4), (6, 8, 4)])
def test_whole_rows_only_for_short_small_dot_products_in_blocks_of_four_or_more(mkn) -> None:
    """k >= 256, a k x n rhs above 64 x 64 floats, or fewer than 4 rows: register blocks."""
    module = lower(dense_bias_relu(*mkn))
    assert schedules_of(module) == ["matmul_block"]


def test_opencl_dense_never_computes_whole_rows() -> None:
    """The scratch would be a work item's private memory: register blocks instead."""
    opencl = '#relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">'
    text = dense_bias_relu(16, 20, 12).replace(SCOPE, opencl)
    module = lower(text)
    assert schedules_of(module) != ["transposed_rows"]
    check_lowering(text)


def schedules_of(module) -> list[str]:
    """The `relay.schedule` of each kernel of a lowered module."""
    return [
        op.attributes["relay.schedule"].data
        for op in module.ops
        if isinstance(op, func.FuncOp) and "relay.schedule" in op.attributes
    ]


def test_c_batch_matmul_rows_with_broadcast_batch_add_tanh() -> None:
    body = f"""
    %m = relay.nn.batch_matmul %x, %y : ({t("3x8x20")}, {t("1x6x20")}) -> {t("3x8x6")}
    %a = relay.add %m, %c : ({t("3x8x6")}, {t("6")}) -> {t("3x8x6")}
    %r = relay.tanh %a : {t("3x8x6")}"""
    text = fused_module("x:3x8x20 y:1x6x20 c:6", body)
    module = lower(text)
    scratch = [op.memref.type.get_shape() for op in module.walk() if op.name == "memref.alloca"]
    assert scratch == [(20, 6), (8, 6)]
    check_lowering(text)


def test_batch_matmul_blocks_with_broadcast_batch_add_tanh() -> None:
    body = f"""
    %m = relay.nn.batch_matmul %x, %y : ({t("1x3x20")}, {t("2x8x20")}) -> {t("2x3x8")}
    %a = relay.add %m, %c : ({t("2x3x8")}, {t("8")}) -> {t("2x3x8")}
    %r = relay.tanh %a : {t("2x3x8")}"""
    check_lowering(fused_module("x:1x3x20 y:2x8x20 c:8", body))


def test_batch_matmul_row_blocks_with_broadcast_rhs() -> None:
    body = f"%r = relay.nn.batch_matmul %x, %y : ({t('2x4x256')}, {t('1x8x256')}) -> {t('2x4x8')}"
    module = lower(fused_module("x:2x4x256 y:1x8x256", body))
    (loop,) = [op for op in module.walk() if isinstance(op, scf.ForOp)]
    assert len(loop.iter_args) == 16
    check_lowering(fused_module("x:2x4x256 y:1x8x256", body))


@pytest.mark.parametrize("k", [5, 256])
def test_dense_read_at_another_index_is_recomputed(k: int) -> None:
    """A transpose of a square dense result reads the dense off the work item's rows (k = 5)
    or block (k = 256): those elements are recomputed."""
    body = f"""
    %d = relay.nn.dense %x, %w : ({t(f"4x{k}")}, {t(f"4x{k}")}) -> {t("4x4")}
    %e = relay.negative %d : {t("4x4")}
    %r = relay.transpose %e : ({t("4x4")}) -> {t("4x4")}"""
    check_lowering(fused_module(f"x:4x{k} w:4x{k}", body))


def test_elementwise_chain_broadcasting_both_ways() -> None:
    body = f"""
    %e = relay.exp %x : {t("3x1")}
    %m = relay.multiply %e, %y : ({t("3x1")}, {t("1x4")}) -> {t("3x4")}
    %s = relay.subtract %z, %m : ({t("4")}, {t("3x4")}) -> {t("3x4")}
    %n = relay.negative %s : {t("3x4")}
    %r = relay.add %n, %e : ({t("3x4")}, {t("3x1")}) -> {t("3x4")}"""
    check_lowering(fused_module("x:3x1 y:1x4 z:4", body))


def test_shared_producer_is_computed_once() -> None:
    """A value used twice at one index is emitted once (memoised per index)."""
    body = f"""
    %e = relay.exp %x : {t("4")}
    %r = relay.multiply %e, %e : ({t("4")}, {t("4")}) -> {t("4")}"""
    text = fused_module("x:4", body)
    check_lowering(text)
    assert sum(op.name == "math.exp" for op in lower(text).walk()) == 1


def test_reshape_transpose_chain() -> None:
    body = f"""
    %a = relay.reshape %x : ({t("2x3x4")}) -> {t("6x4")}
    %b = relay.transpose %a : ({t("6x4")}) -> {t("4x6")}
    %c = relay.reshape %b : ({t("4x6")}) -> {t("2x2x3x2")}
    %d = relay.transpose %c {{axes = array<i64: 3, 1, 0, 2>}} : ({t("2x2x3x2")}) -> {t("2x2x2x3")}
    %r = relay.sigmoid %d : {t("2x2x2x3")}"""
    check_lowering(fused_module("x:2x3x4", body))


def test_reduction_fed_by_elementwise() -> None:
    body = f"""
    %a = relay.add %x, %y : ({t("2x5")}, {t("5")}) -> {t("2x5")}
    %e = relay.exp %a : {t("2x5")}
    %r = relay.mean %e {{axis = array<i64: -1>, keepdims = true}} : ({t("2x5")}) -> {t("2x1")}"""
    check_lowering(fused_module("x:2x5 y:5", body))


def test_softmax_of_elementwise_then_scale() -> None:
    body = f"""
    %a = relay.multiply %x, %y : ({t("2x3")}, {t("3")}) -> {t("2x3")}
    %s = relay.nn.softmax %a : ({t("2x3")}) -> {t("2x3")}
    %r = relay.multiply %s, %y : ({t("2x3")}, {t("3")}) -> {t("2x3")}"""
    check_lowering(fused_module("x:2x3 y:3", body))


def test_concatenate_of_computed_inputs() -> None:
    body = f"""
    %e = relay.exp %a : {t("2x2")}
    %s = relay.strided_slice %b {{begin = array<i64: 0, 2>, end = array<i64: 2, -4>, strides = array<i64: 1, -1>}} : ({t("2x3")}) -> {t("2x3")}
    %r = relay.concatenate %e, %s, %a {{axis = -1 : i64}} : ({t("2x2")}, {t("2x3")}, {t("2x2")}) -> {t("2x7")}"""
    check_lowering(fused_module("a:2x2 b:2x3", body))


def test_strided_slice_of_transpose_with_negative_strides() -> None:
    body = f"""
    %tr = relay.transpose %x : ({t("3x4")}) -> {t("4x3")}
    %r = relay.strided_slice %tr {{begin = array<i64: -1, 2>, end = array<i64: -5, -4>, strides = array<i64: -3, -2>}} : ({t("4x3")}) -> {t("2x2")}"""
    check_lowering(fused_module("x:3x4", body))


def test_parallel_nest_skips_unit_axes_and_keeps_three_outer() -> None:
    """Size-1 axes get no loop; axes beyond the third others go to an inner scf.parallel."""
    text = fused_module("x:2x3x1x2x2", f"%r = relay.abs %x : {t('2x3x1x2x2')}")
    check_lowering(text)
    kernel = lower(text).body.block.last_op
    outer = kernel.body.block.last_op.prev_op
    assert [
        [int(ub.owner.value.value.data) for ub in op.upperBound]
        for op in outer.walk()
        if isinstance(op, scf.ParallelOp)
    ] == [[2, 3, 2], [2]]


def test_all_unit_result_is_one_work_item() -> None:
    text = fused_module(
        "x:1x1x3", f"%r = relay.sum %x {{axis = array<i64: -1>, keepdims = true}} : ({t('1x1x3')}) -> {t('1x1x1')}"
    )
    check_lowering(text)
    (nest,) = [op for op in lower(text).walk() if isinstance(op, scf.ParallelOp)]
    assert [int(ub.owner.value.value.data) for ub in nest.upperBound] == [1]


def test_splat_constant_inside_a_group_is_inlined() -> None:
    body = f"""
    %k = relay.constant {{value = dense<2.5> : {t("3")}}} : {t("3")}
    %r = relay.multiply %x, %k : ({t("2x3")}, {t("3")}) -> {t("2x3")}"""
    check_lowering(fused_module("x:2x3", body))


def test_group_yielding_its_input_copies_it() -> None:
    text = f"""func.func @main(%a: {t("2x3")}) -> {t("2x3")} {{
  %0 = relay.fused(%a) {{kernel_name = "fused_identity", se_scope = {SCOPE}}} : ({t("2x3")}) -> {t("2x3")} {{
  ^bb0(%x: {t("2x3")}):
    relay.yield %x : {t("2x3")}
  }}
  func.return %0 : {t("2x3")}
}}"""
    check_lowering(text)


def test_one_value_passed_twice() -> None:
    text = f"""func.func @main(%a: {t("3")}) -> {t("3")} {{
  %0 = relay.fused(%a, %a) {{kernel_name = "fused_subtract", se_scope = {SCOPE}}} : ({t("3")}, {t("3")}) -> {t("3")} {{
  ^bb0(%x: {t("3")}, %y: {t("3")}):
    %1 = relay.subtract %x, %y : ({t("3")}, {t("3")}) -> {t("3")}
    %2 = relay.add %1, %x : ({t("3")}, {t("3")}) -> {t("3")}
    relay.yield %2 : {t("3")}
  }}
  func.return %0 : {t("3")}
}}"""
    check_lowering(text)


def test_two_groups_and_a_constant_outside() -> None:
    text = f"""func.func @main(%a: {t("2x3")}) -> {t("3")} {{
  %k = relay.constant {{value = dense<[1.0, -2.0, 3.0]> : {t("3")}}} : {t("3")}
  %0 = relay.fused(%a, %k) {{kernel_name = "fused_add", se_scope = {SCOPE}}} : ({t("2x3")}, {t("3")}) -> {t("2x3")} {{
  ^bb0(%x: {t("2x3")}, %y: {t("3")}):
    %1 = relay.add %x, %y : ({t("2x3")}, {t("3")}) -> {t("2x3")}
    relay.yield %1 : {t("2x3")}
  }}
  %2 = relay.fused(%0) {{kernel_name = "fused_sum", se_scope = {SCOPE}}} : ({t("2x3")}) -> {t("3")} {{
  ^bb0(%x: {t("2x3")}):
    %3 = relay.sum %x {{axis = array<i64: 0>}} : ({t("2x3")}) -> {t("3")}
    relay.yield %3 : {t("3")}
  }}
  func.return %2 : {t("3")}
}}"""
    check_lowering(text)
    module = lower(text)
    launches = [op for op in module.walk() if isinstance(op, relay.LaunchOp)]
    assert [op.callee.string_value() for op in launches] == ["fused_add", "fused_sum"]
    assert any(isinstance(op, relay.ConstantOp) for op in module.walk())


def test_running_twice_changes_nothing() -> None:
    module = lower(fused_module("x:2x3", f"%r = relay.exp %x : {t('2x3')}"))
    before = str(module)
    ConvertRelayToLoopsPass().apply(xrelay.context(), module)
    assert str(module) == before


# --- preconditions --------------------------------------------------------------------------


def test_primitive_outside_a_group_is_rejected() -> None:
    text = f"""func.func @main(%a: {t("2")}) -> {t("2")} {{
  %0 = relay.exp %a : {t("2")}
  func.return %0 : {t("2")}
}}"""
    with pytest.raises(CompileError, match="found 'relay.exp' outside one .*run fuse-ops first"):
        lower(text)


def test_group_without_kernel_name_is_rejected() -> None:
    text = fused_module("x:2", f"%r = relay.exp %x : {t('2')}").replace('kernel_name = "fused_kernel", ', "")
    with pytest.raises(CompileError, match="carry 'kernel_name'"):
        lower(text)


def test_non_splat_constant_inside_a_group_is_rejected() -> None:
    body = f"""
    %k = relay.constant {{value = dense<[1.0, 2.0]> : {t("2")}}} : {t("2")}
    %r = relay.add %x, %k : ({t("2")}, {t("2")}) -> {t("2")}"""
    with pytest.raises(CompileError, match="non-splat relay.constant"):
        lower(fused_module("x:2", body))


# --- with plan-devices and fuse-ops --------------------------------------------------------

SMALL_NET = """func.func @main(%x: tensor<1x2x5x5xf32>, %w: tensor<3x2x3x3xf32>, %b: tensor<3xf32>, %d: tensor<4x27xf32>, %c: tensor<4xf32>) -> tensor<1x4xf32> {
  %0 = relay.nn.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x2x5x5xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x3x3xf32>
  %1 = relay.nn.bias_add %0, %b : (tensor<1x3x3x3xf32>, tensor<3xf32>) -> tensor<1x3x3x3xf32>
  %2 = relay.nn.relu %1 : tensor<1x3x3x3xf32>
  %3 = relay.reshape %2 : (tensor<1x3x3x3xf32>) -> tensor<1x27xf32>
  %4 = relay.nn.dense %3, %d : (tensor<1x27xf32>, tensor<4x27xf32>) -> tensor<1x4xf32>
  %5 = relay.add %4, %c : (tensor<1x4xf32>, tensor<4xf32>) -> tensor<1x4xf32>
  %6 = relay.tanh %5 : tensor<1x4xf32>
  %7 = relay.nn.softmax %6 : (tensor<1x4xf32>) -> tensor<1x4xf32>
  func.return %7 : tensor<1x4xf32>
}"""


def compile_front(module) -> None:
    ctx = xrelay.context()
    PlanDevicesPass(targets=("c", "opencl")).apply(ctx, module)
    FuseOpsPass().apply(ctx, module)
    ConvertRelayToLoopsPass().apply(ctx, module)
    module.verify()
    check_kernel_form(module)


def test_small_net_through_fuse_ops() -> None:
    module = xrelay.parse(SMALL_NET)
    inputs = random_inputs(module, 0, positive=False)
    expected = xrelay.interpret(module, inputs)
    compile_front(module)
    kernels = [op.sym_name.data for op in module.ops if "relay.se_scope" in op.attributes]
    assert kernels == [
        "fused_nn_conv2d_nn_bias_add_nn_relu",
        "fused_reshape",
        "fused_nn_dense_add_tanh",
        "fused_nn_softmax",
    ]
    np.testing.assert_allclose(run_lowered(module, inputs), expected, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("seed", range(8))
def test_random_programs_through_fuse_ops(seed: int) -> None:
    """plan-devices, fuse-ops, then this pass, on random two-device programs."""
    module = xrelay.parse(random_module_text(seed, num_ops=12, devices=("cpu", "opencl")))
    inputs = random_graph_inputs(module, seed)
    expected = xrelay.interpret(module, inputs)
    compile_front(module)
    np.testing.assert_allclose(run_lowered(module, inputs), expected, rtol=1e-4, atol=1e-5)


# --- padding is never read ------------------------------------------------------------------

# conv2d cases (data, weight, attrs) whose non-finite weights sit at taps that only ever fall
# on padding: every tap but the centre one for the first two (dilation carries the outer taps
# past the input), the left column of taps for the third (4 wide: conv_rows; the others take
# the elementwise schedule, 3 wide, and conv_rows in blocks of 4 channels, 16 wide).
PADDED_TAP_CASES = [
    ("1x2x2x4", "4x2x3x3", "{dilation = array<i64: 3, 5>, padding = array<i64: 3, 5, 3, 5>}"),
    ("1x2x2x3", "1x2x3x3", "{dilation = array<i64: 3, 4>, padding = array<i64: 3, 4, 3, 4>}"),
    ("2x2x3x16", "4x2x3x3", "{dilation = array<i64: 1, 17>, padding = array<i64: 1, 17, 1, 17>}"),
    ("1x2x3x32", "4x2x3x3", "{dilation = array<i64: 1, 33>, padding = array<i64: 1, 33, 1, 33>}"),  # tested rows
]


def conv_result(data: str, weight: str, attrs: str) -> str:
    """The conv2d's result type, from xrelay's own shape inference (the interpreter's run)."""
    n, _, h, w = map(int, data.split("x"))
    o, _, kh, kw = map(int, weight.split("x"))
    dil = re.search(r"dilation = array<i64: (\d+), (\d+)>", attrs)
    pad = [int(v) for v in re.search(r"padding = array<i64: ([\d, ]+)>", attrs).group(1).split(", ")]
    dh, dw = map(int, dil.groups())
    return f"{n}x{o}x{h + pad[0] + pad[2] - dh * (kh - 1)}x{w + pad[1] + pad[3] - dw * (kw - 1)}"


def padded_tap_weights(shape: tuple[int, ...], data_hw: tuple[int, int], attrs: str) -> np.ndarray:
    """Random weights, with NaN, inf and -inf at every tap that never reads the input."""
    rng = np.random.default_rng(1)
    w = rng.standard_normal(shape).astype(np.float32)
    (dh, dw), pad = (
        map(int, re.search(r"dilation = array<i64: (\d+), (\d+)>", attrs).groups()),
        [int(v) for v in re.search(r"padding = array<i64: ([\d, ]+)>", attrs).group(1).split(", ")],
    )
    h, width = data_hw
    out_h, out_w = h + pad[0] + pad[2] - dh * (shape[2] - 1), width + pad[1] + pad[3] - dw * (shape[3] - 1)
    bad = itertools.cycle([np.nan, np.inf, -np.inf])
    for i in range(shape[2]):
        for j in range(shape[3]):
            rows = any(0 <= oh + i * dh - pad[0] < h for oh in range(out_h))
            cols = any(0 <= ow + j * dw - pad[1] < width for ow in range(out_w))
            if not (rows and cols):
                w[:, :, i, j] = next(bad)
    return w


@pytest.mark.parametrize("data,weight,attrs", PADDED_TAP_CASES)
def test_conv2d_never_reads_padding(data: str, weight: str, attrs: str) -> None:
    """NaN and inf weights at taps that only fall on padding add nothing: the interpreter, the
    lowered loops, C and OpenCL all give the same finite result."""
    result = conv_result(data, weight, attrs)
    text = fused_module(
        "x:" + data + " w:" + weight, f"%r = relay.nn.conv2d %x, %w {attrs} : ({t(data)}, {t(weight)}) -> {t(result)}"
    )
    dshape = tuple(map(int, data.split("x")))
    x = np.random.default_rng(0).standard_normal(dshape).astype(np.float32)
    w = padded_tap_weights(tuple(map(int, weight.split("x"))), dshape[2:], attrs)
    assert not np.isfinite(w).all()
    inputs = {"x_in": x, "w_in": w}
    expected = xrelay.interpret(xrelay.parse(text), inputs)
    assert np.isfinite(expected).all()
    np.testing.assert_allclose(run_lowered(lower(text), inputs), expected, rtol=1e-4, atol=1e-5)
    relay_text = (
        f"func.func @main(%x: {t(data)}, %w: {t(weight)}) -> {t(result)} {{\n"
        f"  %r = relay.nn.conv2d %x, %w {attrs} : ({t(data)}, {t(weight)}) -> {t(result)}\n"
        f"  func.return %r : {t(result)}\n}}"
    )
    for targets, device in ((("c",), "cpu"), (("c", "opencl"), "opencl")):
        got = xrelay.build(relay_text, targets=targets, default_device=device).run(x=x, w=w)
        assert np.isfinite(got).all()
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("width", [6, 12, 40])  # all border; interior loops and border; tested rows
def test_conv2d_padding_nan_weight_agrees_everywhere(width: int) -> None:
    """A NaN weight at a tap that falls on padding for the border outputs only: NaN inside,
    finite on the border, the same on every implementation."""
    attrs = "{padding = array<i64: 1, 1, 1, 1>}"
    data, result = f"1x2x5x{width}", f"1x4x5x{width}"
    relay_text = (
        f"func.func @main(%x: {t(data)}, %w: {t('4x2x3x3')}) -> {t(result)} {{\n"
        f"  %r = relay.nn.conv2d %x, %w {attrs} : ({t(data)}, {t('4x2x3x3')}) -> {t(result)}\n"
        f"  func.return %r : {t(result)}\n}}"
    )
    rng = np.random.default_rng(2)
    x = rng.standard_normal((1, 2, 5, width)).astype(np.float32)
    w = rng.standard_normal((4, 2, 3, 3)).astype(np.float32)
    w[:, :, 0, 0] = np.nan  # reads input row oh - 1, column ow - 1
    expected = xrelay.interpret(xrelay.parse(relay_text), {"x": x, "w": w})
    assert np.isfinite(expected[:, :, 0, :]).all() and np.isfinite(expected[:, :, :, 0]).all()
    assert np.isnan(expected[:, :, 1:, 1:]).all()
    for targets, device in ((("c",), "cpu"), (("c", "opencl"), "opencl")):
        got = xrelay.build(relay_text, targets=targets, default_device=device).run(x=x, w=w)
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)  # NaN where NaN


# --- the ops imported models need -------------------------------------------------------------


def test_layer_norm_inside_a_group_recomputes_its_row_per_element() -> None:
    """A layer_norm that is not its group's result (fuse-ops never makes one) takes the
    elementwise schedule: each element computes its row's mean and 1/std."""
    text = fused_module(
        "x:3x2x4 g:2x4 b:2x4",
        f"""
        %n = relay.nn.layer_norm %x, %g, %b {{axis = 1 : i64}} : ({t("3x2x4")}, {t("2x4")}, {t("2x4")}) -> {t("3x2x4")}
        %r = relay.tanh %n : {t("3x2x4")}
        """,
    )
    check_lowering(text, seeds=(0, 1))
    assert 'relay.schedule = "elementwise"' in str(lower(text))


def test_layer_norm_result_is_a_row_per_work_item() -> None:
    text = fused_module(
        "x:3x8 y:3x8 g:8 b:8",
        f"""
        %s = relay.add %x, %y : ({t("3x8")}, {t("3x8")}) -> {t("3x8")}
        %r = relay.nn.layer_norm %s, %g, %b : ({t("3x8")}, {t("8")}, {t("8")}) -> {t("3x8")}
        """,
    )
    check_lowering(text, seeds=(0, 1))
    assert 'relay.schedule = "layer_norm_rows"' in str(lower(text))


@pytest.mark.parametrize(
    "lhs, rhs, result", [("2x3x5", "5x4", "2x3x4"), ("1x3x5", "2x5x1", "2x3x1"), ("3x5", "5x2", "3x2")]
)
def test_matmul(lhs: str, rhs: str, result: str) -> None:
    check_lowering(
        fused_module(f"x:{lhs} y:{rhs}", f"%r = relay.nn.matmul %x, %y : ({t(lhs)}, {t(rhs)}) -> {t(result)}")
    )
