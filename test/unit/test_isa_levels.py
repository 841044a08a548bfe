"""The four reference models of bench/models.py (at their benchmark sizes) built for each ISA
level's C target, x86-64-v2 (SSE4.2), x86-64-v3 (AVX2) and the native machine, each equal to
`xrelay.interpret` within a bound derived from its computation; and no C kernel of a level uses
a vector wider than that level's registers."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

import numpy as np
import pytest
from bench_models import models
from isa_levels import ISA_TARGETS, V2_FLAGS, V3_FLAGS, isa_id, isa_params, missing_flags
from tolerances import assert_close_to_sum_of_products, assert_within, depth_scaled_bound

import xrelay
from xrelay.runtime.machine import target_features

Arrays = dict[str, np.ndarray]


# A whole model is checked against a relative tolerance scaled by the depth of its reductions
# (`depth_scaled_bound`: 2 k eps32 max|ref|, k the reduction lengths summed along the longest
# path), not a sum-of-products bound: composed through the layers, that rigorous bound
# propagates each layer's error through |W| of the later ones, which grows like sqrt(fan-in)
# per layer for weights of variance 1/fan-in (the real errors' random signs cancel; the
# bound's do not). Measured on these models it allowed 190 times the MLP's probabilities and
# half the ResNet block's outputs: no wrong kernel would fail it. The transformer's layer
# norms (an error amplified by 1/std) and its exp and tanh approximations have no such bound
# at all. One dense and one convolution below check the rigorous bound at each level.


def reduction_depth(name: str, inputs: Arrays) -> int:
    """The reduction lengths summed along `name`'s longest path (biases and residual adds one
    term each)."""
    w = {n: a.shape for n, a in inputs.items()}
    if name == "mlp":
        return sum(w[f"w{i}"][1] + 1 for i in (1, 2, 3)) + w["w3"][0]  # the softmax's sum
    if name == "cnn":
        return 9 * w["w1"][1] + 9 * w["w2"][1] + w["w3"][1] + 3 + w["w3"][0]
    if name == "resnet":
        return 9 * w["w1"][1] + 9 * w["w2"][1] + 3
    seq, d_model = w["x"]
    heads = models.MODELS["transformer"].sizes["heads"]
    projections = 4 * (d_model + 1) + w["w1"][0] + 1  # q (k, v alike), out; the FFN's two
    attention = d_model // heads + seq + seq  # scores, the softmax's sum, context
    return projections + attention + 4 * d_model  # two layer norms: mean and variance each


@dataclass(frozen=True)
class Built:
    exe: xrelay.Executable
    inputs: Arrays  # %x and the weights
    ref: np.ndarray  # xrelay.interpret's result


@cache
def built(name: str, target: str) -> Built:
    """`name` built for `target` (once per test session: both tests below use it)."""
    text = models.MODELS[name].text()
    inputs = models.random_inputs(text, seed=3)
    weights = {n: a for n, a in inputs.items() if n != "x"}
    exe = xrelay.build(text, targets=(target,), params=weights)
    ref = xrelay.interpret(text, inputs)
    assert isinstance(ref, np.ndarray)
    return Built(exe, inputs, ref)


@pytest.mark.parametrize("target", isa_params())
@pytest.mark.parametrize("name", list(models.MODELS))
def test_model_matches_the_interpreter_at_each_isa_level(name: str, target: str) -> None:
    b = built(name, target)
    out = b.exe.run(b.inputs["x"])
    assert isinstance(out, np.ndarray)
    bound = depth_scaled_bound(b.ref, reduction_depth(name, b.inputs))
    assert_within(out, b.ref, bound, f"{name} built for {target!r}")


def vector_widths(exe: xrelay.Executable) -> set[int]:
    """The widths N of the `xr_f32xN` vectors the C kernels of `exe` use."""
    return {int(n) for k in exe.kernels if k.language == "c" for n in re.findall(r"\bxr_f32x(\d+)\b", k.source)}


@pytest.mark.parametrize("target", isa_params(ISA_TARGETS[:2]))
@pytest.mark.parametrize("name", list(models.MODELS))
def test_no_vector_wider_than_the_levels_registers(name: str, target: str) -> None:
    """x86-64-v3 has 8-float ymm registers and v2 4-float xmm ones: an `xr_f32x16` there is
    two or four registers, and a tile sized for AVX-512's 32 zmm spills to the stack."""
    floats = target_features(target).vector_floats
    widths = vector_widths(built(name, target).exe)
    assert widths <= {w for w in (4, 8, 16) if w <= floats}, (
        f"{name} built for {target!r} ({floats} floats per register) uses vectors of {sorted(widths)} floats"
    )


def test_isa_levels_skip_where_the_cpu_lacks_an_instruction() -> None:
    assert [isa_id(t) for t in ISA_TARGETS] == ["v2", "v3", "native"]
    assert missing_flags("c") == set()
    assert missing_flags("c -march=x86-64-v3", frozenset(V3_FLAGS)) == set()
    assert missing_flags("c -march=x86-64-v3", frozenset(V2_FLAGS)) >= {"avx2", "fma", "bmi2"}
    assert missing_flags("c -march=x86-64-v2", frozenset(V2_FLAGS - {"popcnt"})) == {"popcnt"}


DENSE = """
func.func @main(%x: tensor<64x784xf32>, %w: tensor<512x784xf32>, %b: tensor<512xf32>) -> tensor<64x512xf32> {
  %0 = relay.nn.dense %x, %w : (tensor<64x784xf32>, tensor<512x784xf32>) -> tensor<64x512xf32>
  %1 = relay.nn.bias_add %0, %b {axis = 1 : i64} : (tensor<64x512xf32>, tensor<512xf32>) -> tensor<64x512xf32>
  func.return %1 : tensor<64x512xf32>
}
"""


@pytest.mark.parametrize("target", isa_params())
def test_dense_within_its_sum_of_products_bound_at_each_isa_level(target: str) -> None:
    """Terms near 30 whose sums cancel to results near 1 (the shape of the MLP's first layer)."""
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((64, 784)) + 3).astype(np.float32)
    w = (rng.standard_normal((512, 784)) + 3 * rng.choice([-1, 1], (512, 1))).astype(np.float32)
    b = rng.standard_normal(512).astype(np.float32)
    out = xrelay.build(DENSE, targets=(target,)).run(x, w, b)
    ref = xrelay.interpret(DENSE, {"x": x, "w": w, "b": b})
    assert isinstance(out, np.ndarray) and isinstance(ref, np.ndarray)
    terms = np.abs(x.astype(np.float64)) @ np.abs(w.astype(np.float64)).T + np.abs(b)
    assert_close_to_sum_of_products(out, ref, terms, k=784 + 1, what=f"dense built for {target!r}")


@pytest.mark.parametrize("target", isa_params())
def test_conv_within_its_sum_of_products_bound_at_each_isa_level(target: str) -> None:
    """The ResNet block's first convolution (64 channels, 3x3, padding 1) at 14x14; c = 4
    leaves room for a Winograd transform's rounding."""
    model = models.MODELS["resnet"].at(size=14)
    text = model.text()
    inputs = models.random_inputs(text, seed=4)
    conv = models.Relay()
    x = conv.param("x", 1, 64, 14, 14)
    text = conv.text(conv.conv3x3(x, conv.param("w1", 64, 64, 3, 3), conv.param("b1", 64)))
    args = {n: inputs[n] for n in ("x", "w1", "b1")}
    out = xrelay.build(text, targets=(target,)).run(args)
    ref = xrelay.interpret(text, args)
    assert isinstance(out, np.ndarray) and isinstance(ref, np.ndarray)
    a = {n: np.abs(v).astype(np.float64) for n, v in args.items()}
    terms = models.conv3x3_numpy(a["x"], a["w1"], a["b1"])
    assert_close_to_sum_of_products(out, ref, terms, k=9 * 64 + 1, c=4, what=f"conv built for {target!r}")
