"""The C target's thread rule: a kernel's outer nest gets an `omp parallel` region only when its
estimated work is at least its target's `Features.min_parallel_work()` (runtime/machine.py:
the fork/join cost against the time of a lane-counted op), and a shared nest computes what
the interpreter does at 1 and 2 threads, at sizes the threads' split leaves a remainder of."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import xrelay
from xrelay.runtime.machine import FORK_JOIN_SECONDS, LANE_OP_SECONDS, Features, c_features
from xrelay.targets import c

# An elementwise chain on 4.2M floats (67 rows of 62501: neither a multiple of the 16 items
# the rows are collapsed to nor of a vector), well above 12M lane-counted ops.
ROWS, COLS = 67, 62501
LARGE = f"""
func.func @main(%x: tensor<{ROWS}x{COLS}xf32>, %b: tensor<{COLS}xf32>) -> tensor<{ROWS}x{COLS}xf32> {{
  %0 = relay.add %x, %b : (tensor<{ROWS}x{COLS}xf32>, tensor<{COLS}xf32>) -> tensor<{ROWS}x{COLS}xf32>
  %1 = relay.tanh %0 : tensor<{ROWS}x{COLS}xf32>
  %2 = relay.nn.relu %1 : tensor<{ROWS}x{COLS}xf32>
  func.return %2 : tensor<{ROWS}x{COLS}xf32>
}}
"""
# The same chain on 3x1001 floats: a few thousand ops, far below any fork/join.
SMALL = LARGE.replace(f"{ROWS}x{COLS}", "3x1001").replace(f"<{COLS}x", "<1001x")
# A dense of odd sizes (257 x 301 by 509 x 301: 39M multiply-adds): packed_matmul's row and
# column blocks end in partial tiles.
DENSE = """
func.func @main(%x: tensor<257x301xf32>, %w: tensor<509x301xf32>) -> tensor<257x509xf32> {
  %0 = relay.nn.dense %x, %w : (tensor<257x301xf32>, tensor<509x301xf32>) -> tensor<257x509xf32>
  func.return %0 : tensor<257x509xf32>
}
"""


def regions(text: str, threads: int = 2) -> list[bool]:
    return ["#pragma omp parallel" in k.source for k in xrelay.build(text, num_threads=threads).kernels]


def random(shape: tuple[int, ...], seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_the_host_threshold_comes_from_its_fork_join_cost() -> None:
    features = c_features()
    assert features.fork_join_seconds == FORK_JOIN_SECONDS and features.lane_op_seconds == LANE_OP_SECONDS
    assert features.min_parallel_work() == round(2 * FORK_JOIN_SECONDS / LANE_OP_SECONDS) == 12_000_000


def test_no_threshold_without_a_fork_join_cost() -> None:
    """Features saved before the cost was a feature (or an OpenCL device's) share nothing."""
    data = c_features().to_json()
    del data["fork_join_seconds"], data["lane_op_seconds"]
    assert Features.from_json(data).min_parallel_work() is None


def test_a_small_kernel_has_no_region_and_a_large_one_has() -> None:
    assert regions(SMALL) == [False]
    assert regions(LARGE) == [True]
    assert regions(DENSE) == [True]


def test_the_region_follows_the_machine_fork_join_cost(monkeypatch: pytest.MonkeyPatch) -> None:
    """A machine whose fork/join costs 1000 times less shares the small kernel too; one whose
    costs 1000 times more shares not even the large one."""
    host = c_features()
    for scale, expected in ((1e-3, True), (1e3, False)):
        features = dataclasses.replace(host, fork_join_seconds=host.fork_join_seconds * scale)
        monkeypatch.setattr(c, "target_features", lambda target, f=features: f)
        assert regions(SMALL if scale < 1 else LARGE) == [expected]


@pytest.mark.parametrize("threads", [1, 2])
def test_a_shared_elementwise_nest_with_a_remainder_matches_the_interpreter(threads: int) -> None:
    inputs = {"x": random((ROWS, COLS), 0), "b": random((COLS,), 1)}
    exe = xrelay.build(LARGE, num_threads=threads)
    assert all("omp for schedule(dynamic" in k.source for k in exe.kernels)
    expected = xrelay.interpret(xrelay.parse(LARGE), inputs)
    np.testing.assert_allclose(exe.run(inputs), expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("threads", [1, 2])
def test_a_shared_dense_of_odd_sizes_matches_the_interpreter(threads: int) -> None:
    inputs = {"x": random((257, 301), 2), "w": random((509, 301), 3)}
    exe = xrelay.build(DENSE, num_threads=threads)
    assert all("omp for schedule(dynamic" in k.source for k in exe.kernels)
    expected = xrelay.interpret(xrelay.parse(DENSE), inputs)
    np.testing.assert_allclose(exe.run(inputs), expected, rtol=1e-4, atol=1e-4)
