"""packed_matmul_opencl: an opencl dense, batch_matmul or matmul big enough for packed_matmul
takes its nest, each block a work group of its own; with the rhs a constant (a param bound at
build time), packed_matmul_opencl_prepacked reads it pre-packed. Built for OpenCL (PoCL) and
run against `xrelay.interpret`: whole and edge blocks, k-blocks with a remainder, batches,
size-1 and broadcast batch axes, a plain matmul's rhs, bias, GELU with tanh, exp and residual
epilogues, and NaN and inf in the data and in a pre-packed weight. Smaller matmuls keep
matmul_block, and every cpu matmul its cpu schedule."""

from __future__ import annotations

import numpy as np
import pytest
from test_packed_matmul import DENSE_SHAPES, batch_matmul, dense, matmul, program, random_inputs, t
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

import xrelay
from xrelay.dialects import relay
from xrelay.driver import bind_params, lower
from xrelay.transforms.schedules import packed_matmul

SCHEDULE_ATTR = "relay.schedule"


def schedules_of(module: ModuleOp) -> list[str]:
    return [
        op.attributes[SCHEDULE_ATTR].data  # type: ignore[union-attr]
        for op in module.ops
        if isinstance(op, func.FuncOp) and SCHEDULE_ATTR in op.attributes
    ]


def opencl_schedules(text: str, params: dict[str, np.ndarray] | None = None) -> list[str]:
    """The schedule of each kernel of `text` lowered for OpenCL, `params` bound."""
    module = xrelay.parse(text)
    bind_params(module, params or {})
    lower(module, ("opencl",), "opencl", "c")
    return schedules_of(module)


def check_opencl(text: str, inputs: dict[str, np.ndarray] | None = None, constants: tuple[str, ...] = ()) -> None:
    """Built for OpenCL with `constants` bound as params, `text` takes this schedule
    (pre-packed when there are constants), a work group per block, and computes what the
    interpreter does (NaN where it gives NaN)."""
    inputs = inputs if inputs is not None else random_inputs(text, 0)
    params = {name: inputs[name] for name in constants}
    expected_schedule = "packed_matmul_opencl_prepacked" if constants else "packed_matmul_opencl"
    assert opencl_schedules(text, params) == [expected_schedule]
    expected = xrelay.interpret(xrelay.parse(text), inputs)
    exe = xrelay.build(text, targets=("c", "opencl"), default_device="opencl", params=params)
    (kernel,) = [k for k in exe.kernels if k.language == "opencl"]
    assert kernel.local_size == (1,) * len(kernel.global_size)  # a work group per block
    rest = {name: value for name, value in inputs.items() if name not in constants}
    np.testing.assert_allclose(exe.run(**rest), expected, rtol=1e-4, atol=1e-4, equal_nan=True)


@pytest.mark.parametrize("mkn", [s for s, _ in DENSE_SHAPES], ids=[w for _, w in DENSE_SHAPES])
def test_dense_shapes(mkn: tuple[int, int, int]) -> None:
    check_opencl(dense(*mkn, "bias"))


@pytest.mark.parametrize("mkn", [s for s, _ in DENSE_SHAPES], ids=[w for _, w in DENSE_SHAPES])
def test_prepacked_dense_shapes(mkn: tuple[int, int, int]) -> None:
    """The weight bound: edge tiles, N not a multiple of 16 or of the block, k-blocks with a
    remainder, all read from the packed constant."""
    check_opencl(dense(*mkn, "bias"), constants=("w",))


@pytest.mark.parametrize(
    "mkn",
    [
        (128, 256, 1024),  # the transformer's dense + bias + GELU: whole blocks
        (37, 300, 50),  # edge tiles on both axes, a second k-block of 44
        (150, 40, 140),  # a second block of 22 rows and 12 columns (blocks of 128)
    ],
)
@pytest.mark.parametrize("constants", [(), ("w", "b")], ids=["packed", "prepacked"])
def test_gelu_dense(mkn: tuple[int, int, int], constants: tuple[str, ...]) -> None:
    check_opencl(dense(*mkn, "gelu"), constants=constants)


@pytest.mark.parametrize("constants", [(), ("w",)], ids=["packed", "prepacked"])
def test_residual_dense_on_edge_blocks(constants: tuple[str, ...]) -> None:
    check_opencl(dense(37, 600, 80, "residual"), constants=constants)


def exp_batch_matmul(lhs: tuple[int, int, int], rhs: tuple[int, int, int]) -> str:
    """exp of a batch_matmul (an epilogue calling exp)."""
    out = (max(lhs[0], rhs[0]), lhs[1], rhs[1])
    lines = [
        f"%y = relay.nn.batch_matmul %a, %b : ({t(lhs)}, {t(rhs)}) -> {t(out)}",
        f"%z = relay.exp %y : {t(out)}",
    ]
    return program({"a": lhs, "b": rhs}, lines, out)


@pytest.mark.parametrize("lhs,rhs", [((1, 40, 300), (3, 20, 300)), ((2, 33, 130), (1, 70, 130))])
@pytest.mark.parametrize("constants", [(), ("b",)], ids=["packed", "prepacked"])
def test_exp_batch_matmul_with_broadcast_and_size_one_batches(
    lhs: tuple[int, int, int], rhs: tuple[int, int, int], constants: tuple[str, ...]
) -> None:
    inputs = {k: v * 0.1 for k, v in random_inputs(exp_batch_matmul(lhs, rhs), 2).items()}  # exp stays finite
    check_opencl(exp_batch_matmul(lhs, rhs), inputs, constants)


@pytest.mark.parametrize("constants", [(), ("b",)], ids=["packed", "prepacked"])
def test_transformer_batch_matmuls(constants: tuple[str, ...]) -> None:
    """The attention's two batch_matmuls: q . k^T and its softmax . v^T."""
    check_opencl(batch_matmul((4, 128, 64), (4, 128, 64)), constants=constants)
    check_opencl(batch_matmul((4, 128, 128), (4, 64, 128)), constants=constants)


@pytest.mark.parametrize("lhs,rhs", [((2, 37, 170), (170, 33)), ((3, 1, 40, 300), (2, 300, 20))])
@pytest.mark.parametrize("constants", [(), ("b",)], ids=["packed", "prepacked"])
def test_plain_matmul(lhs: tuple[int, ...], rhs: tuple[int, ...], constants: tuple[str, ...]) -> None:
    """relay.nn.matmul's rhs [..., K, N], packed per work item or at build time."""
    check_opencl(matmul(lhs, rhs), constants=constants)


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
@pytest.mark.parametrize("constants", [(), ("w",)], ids=["packed", "prepacked"])
def test_nan_and_inf_propagate_as_in_the_interpreter(constants: tuple[str, ...]) -> None:
    text = dense(37, 300, 80, "gelu")
    inputs = random_inputs(text, 1)
    inputs["x"][3, 10] = np.nan
    inputs["x"][36, 299] = np.inf
    inputs["w"][79, 0] = -np.inf
    inputs["w"][64, 150] = np.nan
    inputs["b"][7] = np.nan
    check_opencl(text, inputs, constants)


def test_a_weight_read_on_cpu_and_on_opencl_is_packed_on_each() -> None:
    """A weight read by a dense on each device (plan-devices gives each device its copy of
    the constant): each copy is packed in its own scope and read by that device's kernel."""
    m, k, n = 40, 96, 80
    data, weight, out = t((m, k)), t((n, k)), t((m, n))
    lines = [
        f"%d1 = relay.nn.dense %x1, %w : ({data}, {weight}) -> {out}",
        f"%o1 = relay.on_device %d1 {{se_scope = #relay.se_scope<device = opencl>}} : {out}",
        f"%d2 = relay.nn.dense %x2, %w : ({data}, {weight}) -> {out}",
        f"%o2 = relay.on_device %d2 {{se_scope = #relay.se_scope<device = cpu>}} : {out}",
        f"%s = relay.add %o1, %o2 : ({out}, {out}) -> {out}",
    ]
    text = program({"x1": (m, k), "x2": (m, k), "w": (n, k)}, lines, (m, n))
    inputs = random_inputs(text, 3)
    module = xrelay.parse(text)
    bind_params(module, {"w": inputs["w"]})
    lower(module, ("c", "opencl"), "cpu", "c")
    assert sorted(schedules_of(module)) == ["packed_matmul_opencl_prepacked", "packed_matmul_prepacked"]
    launches = [op for op in module.walk() if isinstance(op, relay.LaunchOp)]
    readers = {
        operand.owner: launch.se_scope.device
        for launch in launches
        for operand in launch.inputs
        if isinstance(operand.owner, relay.ConstantOp)
    }
    assert all(packed_matmul.PACKED_FROM_ATTR in c.attributes for c in readers)
    assert sorted(device for device in readers.values()) == ["cpu", "opencl"]
    assert all(c.se_scope is not None and c.se_scope.device == device for c, device in readers.items())
    expected = xrelay.interpret(xrelay.parse(text), inputs)
    exe = xrelay.build(text, targets=("c", "opencl"), default_device="cpu", params={"w": inputs["w"]})
    got = exe.run(x1=inputs["x1"], x2=inputs["x2"])
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


def test_only_opencl_matmuls_big_enough_for_packing() -> None:
    assert opencl_schedules(dense(8, 64, 16, "gelu")) == ["matmul_block"]  # too little work
    assert opencl_schedules(dense(64, 512, 10, "bias")) == ["matmul_block"]  # narrower than a vector
    assert opencl_schedules(dense(8, 1568, 10, "bias")) == ["matmul_block"]  # the CNN's dense
    cpu = xrelay.parse(dense(128, 256, 1024, "gelu"))
    lower(cpu, ("c",), None, "c")
    assert schedules_of(cpu) == ["packed_matmul"]
