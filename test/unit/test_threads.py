"""C kernels on several threads: `xrelay.build(num_threads=N)`, XRELAY_NUM_THREADS, and the
count kept by save and load."""

from __future__ import annotations

import ctypes
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import xrelay
from xrelay.errors import Error
from xrelay.runtime import cpu

N = 1 << 22

# Big enough that every kernel gets an `omp parallel for`: an elementwise chain with a tanh
# and NaN-aware max, a broadcast, and a softmax along rows (reductions inside each row).
PROGRAM = f"""
func.func @main(%x: tensor<64x{N // 64}xf32>, %b: tensor<{N // 64}xf32>) -> tensor<64x{N // 64}xf32> {{
  %0 = relay.add %x, %b : (tensor<64x{N // 64}xf32>, tensor<{N // 64}xf32>) -> tensor<64x{N // 64}xf32>
  %1 = relay.tanh %0 : tensor<64x{N // 64}xf32>
  %2 = relay.exp %1 : tensor<64x{N // 64}xf32>
  %3 = relay.nn.relu %2 : tensor<64x{N // 64}xf32>
  %4 = relay.nn.softmax %3 : (tensor<64x{N // 64}xf32>) -> tensor<64x{N // 64}xf32>
  func.return %4 : tensor<64x{N // 64}xf32>
}}
"""


def inputs() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, N // 64)).astype(np.float32)
    x[0, 0] = x[63, 5] = np.nan  # a NaN in the first and the last row
    return {"x": x, "b": rng.standard_normal(N // 64).astype(np.float32)}


def test_one_and_two_threads_agree_with_the_interpreter() -> None:
    expected = xrelay.interpret(xrelay.parse(PROGRAM), inputs())
    one = xrelay.build(PROGRAM, num_threads=1).run(inputs())
    two = xrelay.build(PROGRAM, num_threads=2)
    assert all("omp parallel for" in k.source for k in two.kernels)
    out = two.run(inputs())
    np.testing.assert_array_equal(out, one)  # each row is one thread's: no reassociation
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-7, equal_nan=True)
    assert np.isnan(out[0]).all() and np.isnan(out[63]).all() and not np.isnan(out[1:63]).any()


def library_threads(path: Path) -> int:
    function = ctypes.CDLL(str(path)).xrelay_num_threads
    function.restype = ctypes.c_int
    return int(function())


def test_num_threads_is_recorded_and_kept_by_save_and_load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    exe = xrelay.build(PROGRAM, num_threads=2)
    assert exe.graph["devices"][0]["num_threads"] == 2
    exe.save(tmp_path / "model.xrelay")
    assert library_threads(tmp_path / "model.xrelay" / "kernels" / "device0.so") == 2
    loaded = xrelay.load(tmp_path / "model.xrelay")
    assert loaded.graph["devices"][0]["num_threads"] == 2
    np.testing.assert_array_equal(loaded.run(inputs()), exe.run(inputs()))
    # a library rebuilt from the saved sources (another machine) is built with the saved count
    counts: list[Any] = []
    build = cpu.build_c

    def spy(sources: Any, flags: Any = (), num_threads: int | None = None) -> Any:
        counts.append(num_threads)
        return build(sources, flags, num_threads)

    monkeypatch.setattr(cpu, "build_c", spy)
    monkeypatch.setenv("XRELAY_NUM_THREADS", "1")
    rebuilt = xrelay.runtime.Executable(loaded.graph, loaded.kernels, loaded.params)
    assert counts == [2]
    library = rebuilt.loaded[0].library
    assert library is not None
    (tmp_path / "rebuilt.so").write_bytes(library)
    assert library_threads(tmp_path / "rebuilt.so") == 2


def test_environment_sets_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XRELAY_NUM_THREADS", "3")
    assert xrelay.build(PROGRAM).graph["devices"][0]["num_threads"] == 3
    assert xrelay.build(PROGRAM, num_threads=1).graph["devices"][0]["num_threads"] == 1
    monkeypatch.delenv("XRELAY_NUM_THREADS")
    assert xrelay.build(PROGRAM).graph["devices"][0]["num_threads"] >= 1


@pytest.mark.parametrize("value", ["0", "two", "-1"])
def test_a_bad_count_is_an_error(value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XRELAY_NUM_THREADS", value)
    with pytest.raises(Error, match="XRELAY_NUM_THREADS must be a positive integer"):
        xrelay.build(PROGRAM)
    monkeypatch.delenv("XRELAY_NUM_THREADS")
    with pytest.raises(Error, match="num_threads must be a positive integer"):
        xrelay.build(PROGRAM, num_threads=int(value) if value != "two" else value)  # type: ignore[arg-type]
