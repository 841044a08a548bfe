"""matmul_rows' register blocks: a cpu matmul too small for packed_matmul whose rhs is a kernel
input of one matrix (an RNN's recurrent weight) sums its rows in vectors held in registers, at
every ISA level, equal to the interpreter; other matmuls keep the scalar i-k-j sums."""

from __future__ import annotations

import numpy as np
import pytest
from isa_levels import PLANNED, isa_params
from test_scalar_ops import schedules_of

import xrelay
from xrelay.runtime.machine import target_features
from xrelay.transforms.schedules.matmul_rows import MAX_VECTORS, block_vectors

Shape = tuple[int, ...]


def t(shape: Shape) -> str:
    return "tensor<" + "".join(f"{d}x" for d in shape) + "f32>"


def matmul_tanh(a: Shape, b: Shape) -> str:
    """tanh(a @ b + c)."""
    out = (*a[:-1], b[-1])
    lines = [
        f"%m = relay.nn.matmul %a, %b : ({t(a)}, {t(b)}) -> {t(out)}",
        f"%s = relay.add %m, %c : ({t(out)}, {t(out[-1:])}) -> {t(out)}",
        f"%r = relay.tanh %s : {t(out)}",
    ]
    body = "\n  ".join(lines)
    return (
        f"func.func @main(%a: {t(a)}, %b: {t(b)}, %c: {t(out[-1:])}) -> {t(out)} {{\n  {body}\n"
        f"  func.return %r : {t(out)}\n}}"
    )


def vector_fmas(exe: xrelay.Executable) -> bool:
    """Whether the matmul kernel of `exe` sums with vector FMAs."""
    (source,) = [k.source for k in exe.kernels if "matmul" in k.name]
    return "xr_fma_f32x" in source


CASES = [
    ((1, 64), (64, 256)),  # LSTM's step: one row, a block of 16 AVX-512 vectors
    ((2, 4, 100), (100, 48)),  # 4 rows per work item, a batch axis, 3 vectors at AVX-512
    ((3, 24), (24, 32)),  # a row per work item (3 is odd)
    ((2, 2, 100), (100, 12)),  # 12 wide: whole vectors only at x86-64-v2 (4 floats)
]


@pytest.mark.parametrize("target", isa_params())
@pytest.mark.parametrize(("a", "b"), CASES)
def test_register_blocks_agree_with_interpret(a: Shape, b: Shape, target: str) -> None:
    """matmul_rows' kernel on two random inputs (the second with a NaN in the weight, which
    must reach the result) equal to the interpreter; vector FMAs where the width is whole
    vectors."""
    text = matmul_tanh(a, b)
    lanes = target_features(target).vector_floats
    assert schedules_of(text) == ["matmul_rows"]
    exe = xrelay.build(text, targets=(target,))
    assert vector_fmas(exe) == (b[-1] % lanes == 0)
    rng = np.random.default_rng(0)
    for nan in (False, True):
        inputs = {
            "a": rng.standard_normal(a).astype(np.float32),
            "b": rng.standard_normal(b).astype(np.float32),
            "c": rng.standard_normal(b[-1:]).astype(np.float32),
        }
        if nan:
            inputs["b"][b[0] // 2, b[1] - 1] = np.nan
        expected = xrelay.interpret(text, inputs)
        got = exe.run(inputs)
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5, err_msg=target)
        assert not nan or np.isnan(expected).any()


def test_block_is_the_most_vectors_that_fit_the_registers() -> None:
    """AVX-512 (32 registers): one row of 16 vectors in one block (16 sums, a broadcast and
    one rhs vector at a time), 4 rows of 3 vectors in one block of 3 (12 sums, 3 rhs vectors
    and a broadcast); without whole vectors, none. AVX2 (16): one row of 32 in blocks of 8."""
    features = target_features(PLANNED)
    assert block_vectors(features, 1, 256) == MAX_VECTORS == 16
    assert block_vectors(features, 4, 48) == 3
    assert block_vectors(features, 1, 40) is None
    avx2 = target_features("c -march=x86-64-v3")  # 16 registers: 4 rows x 3 vectors (12 + 3 + 1)
    assert block_vectors(avx2, 4, 48) == 3
    assert block_vectors(avx2, 1, 256) == 8
