"""Reshape-only groups end to end: the input's storage, a `__nop` node that the executor skips
(its kernel never runs), and the results of xrelay.interpret on both targets, for a reshape
between kernels, of a graph input, of a constant, as the graph's output, from several
threads, and saved and loaded."""

from __future__ import annotations

import os

os.environ.setdefault("POCL_DEVICES", "pthread pthread")

import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import xrelay

T = "tensor<2x16xf32>"
R = "tensor<4x8xf32>"

# %r aliases %s, which is dead after the reshape, but %r is read after %t was computed: a plan
# that freed %s's storage at its own last use would let %t overwrite %r.
LIVE_ALIAS = f"""
func.func @main(%x: {T}, %y: {T}) -> {T} {{
  %s = relay.nn.softmax %x : ({T}) -> {T}
  %r = relay.reshape %s : ({T}) -> {R}
  %t = relay.nn.softmax %y : ({T}) -> {T}
  %u = relay.nn.softmax %r : ({R}) -> {R}
  %v = relay.reshape %u : ({R}) -> {T}
  %w = relay.add %t, %v : ({T}, {T}) -> {T}
  func.return %w : {T}
}}
"""

OF_INPUT = f"""
func.func @main(%x: {T}) -> {R} {{
  %r = relay.reshape %x : ({T}) -> {R}
  %s = relay.nn.softmax %r : ({R}) -> {R}
  func.return %s : {R}
}}
"""

INPUT_AS_OUTPUT = f"""
func.func @main(%x: {T}) -> {R} {{
  %r = relay.reshape %x : ({T}) -> {R}
  func.return %r : {R}
}}
"""

# The output and an alias of it, both returned.
AS_OUTPUT = f"""
func.func @main(%x: {T}) -> ({T}, tensor<32xf32>) {{
  %s = relay.nn.softmax %x : ({T}) -> {T}
  %r = relay.reshape %s : ({T}) -> tensor<32xf32>
  func.return %s, %r : {T}, tensor<32xf32>
}}
"""

OF_CONSTANT = """
func.func @main(%x: tensor<2x6xf32>, %w: tensor<24xf32>) -> tensor<2x4xf32> {
  %k = relay.reshape %w : (tensor<24xf32>) -> tensor<4x6xf32>
  %y = relay.nn.dense %x, %k : (tensor<2x6xf32>, tensor<4x6xf32>) -> tensor<2x4xf32>
  func.return %y : tensor<2x4xf32>
}
"""

CASES = {"live_alias": LIVE_ALIAS, "of_input": OF_INPUT, "input_as_output": INPUT_AS_OUTPUT, "as_output": AS_OUTPUT}
TARGETS = {"c": dict(targets=("c",)), "opencl": dict(targets=("c", "opencl"), default_device="opencl")}


def inputs(text: str, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    main = next(iter(xrelay.parse(text).ops))
    return {a.name_hint: rng.standard_normal(a.type.get_shape()).astype(np.float32) for a in main.args}


def nops(exe: xrelay.Executable) -> list[int]:
    return [i for i, n in enumerate(exe.graph["nodes"]) if n.get("attrs", {}).get("func_name") == "__nop"]


def check(exe: xrelay.Executable, text: str, seed: int, **params: np.ndarray) -> None:
    x = {k: v for k, v in inputs(text, seed).items() if k not in params}
    expected = xrelay.interpret(xrelay.parse(text), {**x, **params})
    got = exe.run(**x)
    for g, e in zip(got if isinstance(got, tuple) else [got], expected if isinstance(expected, tuple) else [expected]):
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)


def check_aliases(exe: xrelay.Executable) -> None:
    """Each `__nop` node is stored in its input's storage and is no step of the executor."""
    ids = exe.graph["attrs"]["storage_id"][1]
    for index in nops(exe):
        assert ids[index] == ids[exe.graph["nodes"][index]["inputs"][0][0]]
    assert not set(nops(exe)) & {i for _, i in exe.executor.steps}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("case", CASES)
def test_reshape_only_groups_agree_with_interpret(case: str, target: str) -> None:
    text = CASES[case]
    exe = xrelay.build(text, **TARGETS[target])
    assert nops(exe) and all(exe.graph["nodes"][i]["name"].startswith("fused_reshape") for i in nops(exe))
    check_aliases(exe)
    for seed in (0, 1):  # a second run reuses the workspace
        check(exe, text, seed)


def test_a_live_alias_keeps_its_storage() -> None:
    exe = xrelay.build(LIVE_ALIAS)
    ids, names = exe.graph["attrs"]["storage_id"][1], [n["name"] for n in exe.graph["nodes"]]
    s, r, t = 2, 3, 4  # node ids: %x, %y, then the groups in program order
    assert names[r] == "fused_reshape" and ids[r] == ids[s] and ids[t] != ids[s]


@pytest.mark.parametrize("target", TARGETS)
def test_the_results_are_the_callers_own(target: str) -> None:
    """A returned reshape of the input is in the input's storage, which the runtime fills
    with a copy of the caller's array; the result is a fresh array."""
    exe = xrelay.build(INPUT_AS_OUTPUT, **TARGETS[target])
    x = inputs(INPUT_AS_OUTPUT, 0)["x"]
    kept = x.copy()
    out = exe.run(x=x)
    out[...] = 7.0
    np.testing.assert_array_equal(x, kept)
    np.testing.assert_array_equal(exe.run(x=x), kept.reshape(4, 8))


@pytest.mark.parametrize("target", TARGETS)
def test_a_reshape_of_a_bound_weight(target: str) -> None:
    w = np.random.default_rng(3).standard_normal(24).astype(np.float32)
    exe = xrelay.build(OF_CONSTANT, params={"w": w}, **TARGETS[target])
    check(exe, OF_CONSTANT, 0, w=w)
    check(exe, OF_CONSTANT, 1, w=w)


def test_runs_from_several_threads() -> None:
    exe = xrelay.build(LIVE_ALIAS)
    errors: list[Any] = []

    def worker(seed: int) -> None:
        try:
            for _ in range(20):
                check(exe, LIVE_ALIAS, seed)
        except AssertionError as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(seed,)) for seed in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_saved_and_loaded_without_the_compiler(tmp_path: Path) -> None:
    """The `__nop` node needs no kernel: the standalone runtime loads and runs it as it is."""
    import xrelay.runtime

    exe = xrelay.build(LIVE_ALIAS, targets=("c", "opencl"), default_device="opencl")
    exe.save(tmp_path / "live_alias.xrelay")
    loaded = xrelay.runtime.load(tmp_path / "live_alias.xrelay")
    assert nops(loaded) == nops(exe)
    check(loaded, LIVE_ALIAS, 2)
