"""A run queues all its work before a queued device starts on it, and waits once, at its end
(`Device.hold`, `start_write`, `start_read`): first on a recording device that logs the
executor's calls, then on PoCL, where a hold must really keep the queue back and a failed
run must not leave its queue held."""

from __future__ import annotations

import os

os.environ.setdefault("POCL_DEVICES", "pthread pthread")

import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from graphs import (
    CL0,
    CPU,
    DUPLEX,
    SIMPLEX,
    N,
    duplex_expected,
    graph,
    inputs,
    python_kernels,
    simplex_expected,
    sources,
)

from xrelay.runtime.device import Tensor, Wait, open_device
from xrelay.runtime.executor import GraphExecutor
from xrelay.runtime.numpy_device import NumpyDevice


class RecordingDevice(NumpyDevice):
    """Host arrays behind a queue the executor must drive: logs holds, releases, transfers,
    waits and kernels."""

    host_memory = False

    def __init__(self, log: list[str]):
        super().__init__(1, {name: self._logged(name, fn) for name, fn in python_kernels().items()})
        self.log = log

    def _logged(self, name: str, fn: Callable[..., None]) -> Callable[..., None]:
        return lambda *args: (self.log.append(name), fn(*args))[1]

    def _waited(self, what: str) -> Wait:
        return lambda: self.log.append(f"wait {what}")

    def hold(self) -> Wait:
        self.log.append("hold")
        return lambda: self.log.append("release")

    def start_write(self, dst: Tensor, src: np.ndarray) -> Wait:
        self.log.append("start write")
        super().write(dst, src)
        return self._waited("write")

    def start_read(self, src: Tensor, dst: np.ndarray) -> Wait:
        self.log.append("start read")
        super().read(src, dst)
        return self._waited("read")

    def write(self, dst: Tensor, src: np.ndarray) -> None:
        self.log.append("write")
        super().write(dst, src)

    def read(self, src: Tensor, dst: np.ndarray) -> None:
        self.log.append("read")
        super().read(src, dst)


def recorded(
    nodes: list[Any], host_kernels: dict[str, Any] | None = None, log: list[str] | None = None
) -> tuple[GraphExecutor, list[str]]:
    """`nodes` on the host (device 0) and a recording device (1); the log starts after load."""
    log = [] if log is None else log
    devices = [NumpyDevice(0), RecordingDevice(log)]
    kernels = [host_kernels or python_kernels(), devices[1].kernels]
    executor = GraphExecutor(graph(nodes, [len(nodes) - 1], [CPU, CL0]), devices, kernels)
    log.clear()
    return executor, log


def test_a_run_queues_everything_then_waits_once() -> None:
    """A graph all on the device: its inputs' writes, the kernels and the result's read are
    queued under one hold, released before the run waits: for the read first, the last of
    the run's work (waiting for a write first put the host to sleep on it, and PoCL's worker
    then paid for waking it before the first kernel)."""
    nodes = [("A", None, [], 1, 0), ("B", None, [], 1, 1), ("add", "add", [0, 1], 1, 2), ("sub", "sub", [2, 1], 1, 3)]
    executor, log = recorded(nodes)
    x = inputs("AB")
    np.testing.assert_array_equal(executor.run(x)[0], (x["A"] + x["B"]) - x["B"])
    queued = ["hold", "start write", "start write", "add", "sub", "start read", "release"]
    assert log == queued + ["wait read", "wait write", "wait write"]


def test_host_work_releases_the_hold() -> None:
    """Duplex: the copy to the host is started with the add, and the hold released only where
    the host waits for it, before its subtraction; the copy back is started without waiting
    (the host waits for it, as for every started copy, before a host node reuses its storage),
    and the run waits for the result's read, then the inputs' writes."""
    executor, log = recorded(DUPLEX)
    x = inputs("ABCD")
    np.testing.assert_allclose(executor.run(x)[0], duplex_expected(x), rtol=1e-6)
    queued = ["hold", *["start write"] * 3, "add", "start read", "release", "wait read", "start write", "add"]
    assert log == queued + ["start read", "wait read", *["wait write"] * 3]


def test_a_host_kernel_releases_the_hold_before_it_runs() -> None:
    """The device's add and the copy of its result are queued first; the host's kernel then
    runs with the device free, and the host waits for the copy only before the node that
    reads it."""
    nodes = [("A", None, [], 1, 0), ("B", None, [], 1, 1), ("C", None, [], 0, 2)]
    nodes += [("add", "add", [0, 1], 1, 3), ("neg", "sub", [2, 2], 0, 4), ("__copy", "__copy", [3], 0, 5)]
    nodes += [("sub", "sub", [5, 4], 0, 6)]
    log: list[str] = []
    host = {**python_kernels(), "sub": lambda a, b, out: (log.append("host sub"), np.subtract(a, b, out=out))}
    executor, log = recorded(nodes, host, log)
    x = inputs("ABC")
    np.testing.assert_array_equal(executor.run(x)[0], (x["A"] + x["B"]) - (x["C"] - x["C"]))
    started = ["hold", "start write", "start write", "add", "start read", "release"]
    assert log[:9] == [*started, "host sub", "wait read", "host sub"]
    assert log.count("hold") == 1


def sub_failing_once() -> Callable[[np.ndarray, np.ndarray, np.ndarray], None]:
    """A host `sub` kernel that raises on its first call and subtracts after."""
    calls: list[int] = []

    def sub(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("sub failed")
        np.subtract(a, b, out=out)

    return sub


def test_a_failed_run_releases_its_hold() -> None:
    executor, log = recorded(SIMPLEX, {**python_kernels(), "sub": sub_failing_once()})
    x = inputs("ABD")
    with pytest.raises(RuntimeError, match="sub failed"):
        executor.run(x)
    assert log.count("hold") == log.count("release") == 1
    np.testing.assert_allclose(executor.run(x)[0], simplex_expected(x), rtol=1e-6)


def test_profile_runs_as_run_does() -> None:
    """A profiled run holds the queue and issues the nodes in the run's order (so the trace
    shows what `run` does), after writing the inputs; the outputs are read after the runs."""
    executor, log = recorded(DUPLEX)
    executor.profile(inputs("ABCD"))
    run = ["hold", "add", "start read", "release", "wait read", "start write", "add"]
    assert log == [*["start write", "wait write"] * 3, *run, "start read", "wait read"]


# --- PoCL --------------------------------------------------------------------------------------


def test_an_opencl_hold_keeps_the_queue_back_until_released() -> None:
    device = open_device("opencl:0")
    tensor = device.tensor(device.alloc(4 * N), (N,), np.dtype(np.float32))
    values = np.arange(N, dtype=np.float32)
    out = np.full(N, -1, np.float32)
    release = device.hold()
    try:
        wrote = device.start_write(tensor, values)
        read = device.start_read(tensor, out)
        time.sleep(0.05)  # time enough for PoCL's workers to copy, were they allowed to
        assert (out == -1).all(), "the read ran while the queue was held"
    finally:
        release()
    wrote()
    read()
    np.testing.assert_array_equal(out, values)


def test_an_opencl_run_that_failed_on_the_host_leaves_the_queue_free() -> None:
    """Simplex on PoCL and the host, whose sub fails once: the next run must not wait on a
    hold the failed run left behind."""
    opencl = open_device("opencl:0")
    kernels = [{**python_kernels(), "sub": sub_failing_once()}, opencl.load(sources(CL0), "opencl").kernels]
    executor = GraphExecutor(graph(SIMPLEX, [5], [CPU, CL0]), [NumpyDevice(0), opencl], kernels)
    x = inputs("ABD")
    with pytest.raises(RuntimeError, match="sub failed"):
        executor.run(x)
    results: list[np.ndarray] = []
    second = threading.Thread(target=lambda: results.append(executor.run(x)[0]), daemon=True)
    second.start()
    second.join(timeout=30)
    assert results, "the run after a failed one never finished: the failed run left its queue held"
    np.testing.assert_allclose(results[0], simplex_expected(x), rtol=1e-6)
