"""`run` from several threads at once: each call must see only its own inputs. Before
workspaces, the executor shared its storage between calls and 4 threads gave wrong results
on every device mix."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pytest
from graphs import CL0, CL1, CPU, DUPLEX, N, graph, sources

from xrelay.runtime import Executable

THREADS, CALLS = 4, 25
MIXES = {
    "cpu": [CPU, {**CPU, "id": 1}],
    "opencl": [CL0, CL1],
    "cpu+opencl": [CPU, CL0],
}


def duplex(scopes: list[dict[str, Any]]) -> Executable:
    kernels = [k for i, s in enumerate(scopes) for k in sources(s, i)]
    return Executable(graph(DUPLEX, [len(DUPLEX) - 1], scopes), kernels, {})


def call(exe: Executable, seed: int) -> bool:
    rng = np.random.default_rng(seed)
    x = {n: rng.standard_normal(N).astype(np.float32) for n in "ABCD"}
    return bool(np.allclose(exe.run(x), x["A"] + x["B"] - x["C"] + x["D"], rtol=1e-6))


@pytest.mark.parametrize("mix", MIXES)
def test_concurrent_runs_each_get_their_own_results(mix: str) -> None:
    exe = duplex(MIXES[mix])
    with ThreadPoolExecutor(THREADS) as pool:
        ok = list(pool.map(lambda seed: call(exe, seed), range(THREADS * CALLS)))
    assert ok.count(False) == 0, f"{ok.count(False)} of {len(ok)} concurrent runs were wrong"
    # one workspace per concurrent call at most, reused afterwards
    assert 1 <= len(exe.executor._free) <= THREADS


def test_params_are_shared_between_workspaces() -> None:
    """A param's storage is written once and read by every workspace."""
    scopes = [CPU, CL0]
    kernels = [k for i, s in enumerate(scopes) for k in sources(s, i)]
    d = np.arange(N, dtype=np.float32)
    exe = Executable(graph(DUPLEX, [len(DUPLEX) - 1], scopes), kernels, {"D": d})
    with exe.executor.workspace() as first, exe.executor.workspace() as second:
        assert first is not second
        assert first.tensors[3] is not second.tensors[3]
        assert first.tensors[3].buffer is second.tensors[3].buffer  # D: one buffer on opencl:0
        assert first.tensors[0].buffer is not second.tensors[0].buffer  # A: an input, each its own
    x = {n: np.ones(N, np.float32) for n in "ABC"}
    np.testing.assert_allclose(exe.run(x), 1 + 1 - 1 + d)
