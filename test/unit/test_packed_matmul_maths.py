"""packed_matmul_maths: an opencl matmul whose epilogue calls a maths function takes
packed_matmul's nest; built for OpenCL (PoCL) and run against `xrelay.interpret`: whole and
edge blocks, k-blocks with a remainder, size-1 dims, GELU with tanh and an exp epilogue, and
NaN and inf inputs, each block launched as a work group of its own. Matmuls without maths,
and every cpu matmul, keep their schedules."""

from __future__ import annotations

import numpy as np
import pytest
from test_packed_matmul import dense, program, random_inputs, t
from xdsl.dialects import func

import xrelay
from xrelay.driver import lower

SCHEDULE_ATTR = "relay.schedule"


def opencl_schedules(text: str) -> list[str]:
    """The schedule of each kernel of `text` lowered for OpenCL."""
    module = xrelay.parse(text)
    lower(module, ("opencl",), "opencl", "c")
    return [
        op.attributes[SCHEDULE_ATTR].data  # type: ignore[union-attr]
        for op in module.ops
        if isinstance(op, func.FuncOp) and SCHEDULE_ATTR in op.attributes
    ]


def check_opencl(text: str, inputs: dict[str, np.ndarray] | None = None) -> None:
    """Built for OpenCL, `text` takes this schedule and computes what the interpreter does."""
    assert opencl_schedules(text) == ["packed_matmul_maths"]
    inputs = inputs if inputs is not None else random_inputs(text, 0)
    expected = xrelay.interpret(xrelay.parse(text), inputs)
    exe = xrelay.build(text, targets=("c", "opencl"), default_device="opencl")
    (kernel,) = [k for k in exe.kernels if k.language == "opencl"]
    assert kernel.local_size == (1,) * len(kernel.global_size)  # a work group per block
    np.testing.assert_allclose(exe.run(**inputs), expected, rtol=1e-4, atol=1e-4, equal_nan=True)


@pytest.mark.parametrize(
    "mkn",
    [
        (128, 256, 1024),  # the transformer's dense + bias + GELU: whole blocks
        (37, 300, 50),  # edge tiles on both axes, a second k-block of 44
        (150, 40, 140),  # a second block of 22 rows and 12 columns (blocks of 128)
    ],
)
def test_gelu_dense_agrees_with_the_interpreter(mkn: tuple[int, int, int]) -> None:
    check_opencl(dense(*mkn, "gelu"))


def exp_batch_matmul(lhs: tuple[int, int, int], rhs: tuple[int, int, int]) -> str:
    """exp of a batch_matmul (an epilogue calling exp)."""
    out = (max(lhs[0], rhs[0]), lhs[1], rhs[1])
    lines = [
        f"%y = relay.nn.batch_matmul %a, %b : ({t(lhs)}, {t(rhs)}) -> {t(out)}",
        f"%z = relay.exp %y : {t(out)}",
    ]
    return program({"a": lhs, "b": rhs}, lines, out)


@pytest.mark.parametrize("lhs,rhs", [((1, 40, 300), (3, 20, 300)), ((2, 33, 130), (1, 70, 130))])
def test_exp_batch_matmul_with_broadcast_and_size_one_batches(
    lhs: tuple[int, int, int], rhs: tuple[int, int, int]
) -> None:
    inputs = {k: v * 0.1 for k, v in random_inputs(exp_batch_matmul(lhs, rhs), 2).items()}  # exp stays finite
    check_opencl(exp_batch_matmul(lhs, rhs), inputs)


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
def test_nan_and_inf_propagate_as_in_the_interpreter() -> None:
    text = dense(37, 300, 80, "gelu")
    inputs = random_inputs(text, 1)
    inputs["x"][3, 10] = np.nan
    inputs["x"][36, 299] = np.inf
    inputs["w"][79, 0] = -np.inf
    inputs["b"][7] = np.nan
    check_opencl(text, inputs)


def test_only_opencl_matmuls_with_maths_big_enough_for_packing() -> None:
    assert opencl_schedules(dense(128, 256, 256, "bias")) == ["matmul_block"]  # no maths
    assert opencl_schedules(dense(8, 64, 16, "gelu")) == ["matmul_block"]  # too little work
    assert opencl_schedules(dense(64, 512, 10, "gelu")) == ["matmul_block"]  # narrower than a vector
    cpu = xrelay.parse(dense(128, 256, 1024, "gelu"))
    lower(cpu, ("c",), None, "c")
    kernels = [op for op in cpu.ops if isinstance(op, func.FuncOp) and SCHEDULE_ATTR in op.attributes]
    assert [k.attributes[SCHEDULE_ATTR].data for k in kernels] == ["packed_matmul"]  # type: ignore[union-attr]
