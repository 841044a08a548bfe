"""Devices that run at the same time (issue 30 item 2): the executor issues the nodes of a
queued device without waiting for the host's, and the host waits for a queue only before a
node that reads (or overwrites) what the queue is still copying.

Deterministic, no timing assertions: `ThreadDevice` is a queued device whose in-order queue
is a worker thread; its kernel and the host's kernel of two independent branches each wait
for the other to have started, so a run finishes only if the two overlap (a serial executor
times out). Storage reuse across a copy is checked with a queue that is slow on purpose."""

from __future__ import annotations

import os

os.environ.setdefault("POCL_DEVICES", "pthread pthread")

import json
import queue
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from graphs import CL0, CPU, SIMPLEX, N, graph, inputs, python_kernels

from xrelay.runtime.device import Device, Kernel, Tensor, Wait
from xrelay.runtime.executor import HOST, GraphExecutor
from xrelay.runtime.numpy_device import NumpyDevice

TIMEOUT = 10.0  # seconds a rendezvous waits before it calls the run serial


class Started:
    """A piece of work queued on a `ThreadDevice`: done when the worker ran it, with its span."""

    def __init__(self) -> None:
        self.finished = threading.Event()
        self.span = (0.0, 0.0)
        self.error: BaseException | None = None

    def __call__(self) -> None:
        if not self.finished.wait(TIMEOUT):
            raise TimeoutError("a ThreadDevice's work did not finish")
        if self.error is not None:
            raise self.error


class ThreadDevice(NumpyDevice):
    """Host arrays behind an in-order queue: one worker thread runs the queued work in order."""

    host_memory = False

    def __init__(self, kernels: dict[str, Callable[..., None]], delay: float = 0.0):
        super().__init__(1, kernels)
        self.delay = delay  # seconds each queued kernel sleeps first (a slow device)
        self.queue: queue.Queue[tuple[Callable[[], None], Started]] = queue.Queue()
        threading.Thread(target=self._work, daemon=True).start()

    def _work(self) -> None:
        while True:
            work, started = self.queue.get()
            start = time.perf_counter()
            try:
                work()
            except BaseException as e:  # reported to whoever waits for it
                started.error = e
            started.span = (start, time.perf_counter())
            started.finished.set()

    def _start(self, work: Callable[[], None]) -> Started:
        started = Started()
        self.queue.put((work, started))
        return started

    def start_write(self, dst: Tensor, src: np.ndarray) -> Wait:
        return self._start(lambda: np.copyto(dst, src))

    def start_read(self, src: Tensor, dst: np.ndarray) -> Wait:
        return self._start(lambda: np.copyto(dst, src))

    def write(self, dst: Tensor, src: np.ndarray) -> None:
        self.start_write(dst, src)()

    def read(self, src: Tensor, dst: np.ndarray) -> None:
        self.start_read(src, dst)()

    def hold(self) -> Wait:
        gate = threading.Event()
        self._start(lambda: None if gate.wait(TIMEOUT) else None)
        return gate.set

    def bind(self, kernel: Kernel, args: Sequence[Tensor]) -> Callable[[], Any]:
        def slow() -> None:
            time.sleep(self.delay)
            kernel(*args)

        return lambda: self._start(slow if self.delay else lambda: kernel(*args))

    def sync(self) -> None:
        self._start(lambda: None)()

    def event_span(self, started: Any) -> tuple[float, float] | None:
        return started.span if isinstance(started, Started) else None


def rendezvous() -> tuple[Callable[..., None], Callable[..., None]]:
    """Two `add` kernels that each wait until the other has started."""
    started = [threading.Event(), threading.Event()]

    def kernel(me: int) -> Callable[..., None]:
        def add(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
            started[me].set()
            if not started[1 - me].wait(TIMEOUT):
                raise TimeoutError(f"kernel {me} ran alone: the branches did not overlap")
            np.add(a, b, out=out)

        return add

    return kernel(0), kernel(1)


# Two towers: A + B on the host, C + D on the device, joined on the host. The host's branch
# comes first in program order, so a serial executor runs it before it queues the device's.
TOWERS = [
    ("A", None, [], 0, 0),
    ("B", None, [], 0, 1),
    ("C", None, [], 1, 2),
    ("D", None, [], 1, 3),
    ("host_add", "rendezvous", [0, 1], 0, 4),
    ("dev_add", "rendezvous", [2, 3], 1, 5),
    ("__copy", "__copy", [5], 0, 6),
    ("join", "sub", [4, 6], 0, 7),
]


def towers_executor(nodes: list[Any] = TOWERS) -> GraphExecutor:
    host_kernel, device_kernel = rendezvous()
    devices: list[Device] = [
        NumpyDevice(0, {**python_kernels(), "rendezvous": host_kernel}),
        ThreadDevice({**python_kernels(), "rendezvous": device_kernel}),
    ]
    kernels = [d.kernels for d in devices if isinstance(d, NumpyDevice)]
    return GraphExecutor(graph(nodes, [len(nodes) - 1], [CPU, CL0]), devices, kernels)


def test_independent_branches_of_two_devices_overlap() -> None:
    """The device's add is queued before the host runs its own: each kernel waits for the
    other to start, so the run ends only if they run at the same time."""
    executor = towers_executor()
    x = inputs("ABCD")
    (out,) = executor.run(x)
    np.testing.assert_allclose(out, (x["A"] + x["B"]) - (x["C"] + x["D"]), rtol=1e-6)
    schedule = executor.schedule
    names = [executor.nodes[executor.steps[k][1]]["name"] for k in schedule.order]
    assert names == ["dev_add", "__copy", "host_add", "join"]
    assert [schedule.lanes[k] for k in schedule.order] == [1, 1, HOST, HOST]


def test_the_trace_shows_the_two_devices_overlap(tmp_path: Path) -> None:
    """The profile's spans (the device's by its own timing) of the two adds intersect, on two
    tracks."""
    executor = towers_executor()
    profile = executor.profile(inputs("ABCD"))
    trace = json.loads(profile.save_trace(tmp_path / "trace.json").read_text())["traceEvents"]
    adds = {e["name"]: e for e in trace if e["ph"] == "X" and e["name"] in ("host_add", "dev_add")}
    host, dev = adds["host_add"], adds["dev_add"]
    assert (host["tid"], dev["tid"]) == (0, 1)
    assert host["ts"] < dev["ts"] + dev["dur"] and dev["ts"] < host["ts"] + host["dur"]
    assert profile.overlap_seconds[("cpu:0", "opencl:0")] > 0
    assert "busy at once cpu:0 and opencl:0" in str(profile)


# The host's storage 4 holds A + B, is copied to the device, and is then reused for the host's
# A - B while the (slow) device may still be copying from it: the host must wait for the copy.
REUSE = [
    ("A", None, [], 0, 0),
    ("B", None, [], 0, 1),
    ("C", None, [], 1, 2),
    ("sum", "add", [0, 1], 0, 4),
    ("slow", "add", [2, 2], 1, 3),
    ("__copy", "__copy", [3], 1, 5),
    ("diff", "sub", [0, 1], 0, 4),
    ("dev_sum", "add", [5, 4], 1, 6),
    ("__copy", "__copy", [7], 0, 7),
    ("join", "add", [8, 6], 0, 8),
]


def test_a_storage_reused_after_a_started_copy_waits_for_it() -> None:
    devices: list[Device] = [NumpyDevice(0, python_kernels()), ThreadDevice(python_kernels(), delay=0.05)]
    executor = GraphExecutor(graph(REUSE, [len(REUSE) - 1], [CPU, CL0]), devices, [python_kernels()] * 2)
    for seed in range(3):
        x = {n: v * (seed + 1) for n, v in inputs("ABC").items()}
        (out,) = executor.run(x)
        np.testing.assert_allclose(out, (x["A"] + x["B"]) + 2 * x["C"] + (x["A"] - x["B"]), rtol=1e-6)


def test_reads_overlapping_a_write_wait_for_it() -> None:
    """The schedule keeps each storage hazard: no node is issued before one it must follow."""
    devices: list[Device] = [NumpyDevice(0, python_kernels()), ThreadDevice(python_kernels())]
    executor = GraphExecutor(graph(REUSE, [len(REUSE) - 1], [CPU, CL0]), devices, [python_kernels()] * 2)
    schedule = executor.schedule
    place = {k: i for i, k in enumerate(schedule.order)}
    for k, deps in enumerate(schedule.deps):
        assert all(place[d] < place[k] for d in deps)
    names = [executor.nodes[index]["name"] for _, index in executor.steps]
    diff, copy = names.index("diff"), names.index("__copy")
    assert copy in schedule.deps[diff]  # diff overwrites what the copy reads
    assert schedule.waits[diff] == (copy,)  # so the host waits for the copy first


@pytest.mark.parametrize("threads", [1, 4])
def test_towers_run_from_several_threads(threads: int) -> None:
    """Hand-made towers without the rendezvous, from several threads at once."""
    from concurrent.futures import ThreadPoolExecutor

    nodes = [(n, "add" if f == "rendezvous" else f, i, d, s) for n, f, i, d, s in TOWERS]
    devices: list[Device] = [NumpyDevice(0, python_kernels()), ThreadDevice(python_kernels(), delay=0.001)]
    executor = GraphExecutor(graph(nodes, [len(nodes) - 1], [CPU, CL0]), devices, [python_kernels()] * 2)

    def call(seed: int) -> bool:
        rng = np.random.default_rng(seed)
        x = {n: rng.standard_normal(N).astype(np.float32) for n in "ABCD"}
        (out,) = executor.run(x)
        return bool(np.allclose(out, (x["A"] + x["B"]) - (x["C"] + x["D"]), rtol=1e-6))

    with ThreadPoolExecutor(threads) as pool:
        assert all(pool.map(call, range(8 * threads)))


# --- threads: the C kernels' and PoCL's pool share the cores -------------------------------


def test_share_cores_gives_pocl_the_cores_the_c_kernels_leave(monkeypatch: pytest.MonkeyPatch) -> None:
    from xrelay.runtime import opencl
    from xrelay.runtime.device import share_cores

    monkeypatch.setattr(opencl, "platform_started", lambda: False)
    monkeypatch.setenv(opencl.WORKERS_VARIABLE, "")  # unset, and restored after the test
    assert share_cores(2, 2, ["cpu", "opencl"]) == []  # the C kernels take every core
    assert os.environ[opencl.WORKERS_VARIABLE] == ""
    assert share_cores(1, 4, ["cpu", "opencl", "opencl"]) == ["opencl"]
    assert os.environ[opencl.WORKERS_VARIABLE] == "3"
    assert share_cores(2, 4, ["cpu", "opencl"]) == []  # the environment says already
    assert os.environ[opencl.WORKERS_VARIABLE] == "3"
    monkeypatch.setenv(opencl.WORKERS_VARIABLE, "")
    monkeypatch.setattr(opencl, "platform_started", lambda: True)
    assert share_cores(1, 4, ["opencl"]) == []  # PoCL read its environment already


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 cores to split")
def test_a_build_with_fewer_threads_leaves_pocl_the_other_cores() -> None:
    """In a fresh process, `xrelay.build(..., num_threads=1)` with an opencl target starts PoCL
    with the other cores (its device's compute units say how many workers it has)."""
    import subprocess
    import sys

    code = (
        "import xrelay\n"
        "from xrelay.runtime.device import open_device\n"
        "text = 'func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\\n"
        "  %0 = relay.nn.relu %x : tensor<4xf32>\\n  func.return %0 : tensor<4xf32>\\n}'\n"
        "xrelay.build(text, targets=('c', 'opencl'), default_device='opencl', num_threads=1)\n"
        "print(open_device('opencl:0').device.max_compute_units)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "POCL_MAX_PTHREAD_COUNT"}
    env["XRELAY_BUILD_CACHE"] = "0"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert int(done.stdout.split()[-1]) == len(os.sched_getaffinity(0)) - 1


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 cores to split")
def test_a_loaded_artifact_shares_the_cores_as_its_build_did(tmp_path: Path) -> None:
    """An artifact built with `num_threads=1`, loaded in a fresh process that never built it,
    starts PoCL with the cores its C kernels leave, as the build did."""
    import subprocess
    import sys

    import xrelay

    text = (
        "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
        "  %0 = relay.nn.relu %x : tensor<4xf32>\n"
        "  %1 = relay.on_device %0 {se_scope = #relay.se_scope<device = opencl>} : tensor<4xf32>\n"
        "  %2 = relay.exp %1 : tensor<4xf32>\n  func.return %2 : tensor<4xf32>\n}"
    )
    exe = xrelay.build(text, targets=("c", "opencl"), default_device="cpu", num_threads=1)
    assert {entry["kind"] for entry in exe.graph["devices"]} == {"cpu", "opencl"}
    exe.save(tmp_path / "a.xrelay")
    code = (
        "import sys, xrelay.runtime\n"
        "from xrelay.runtime.device import open_device\n"
        "xrelay.runtime.load(sys.argv[1])\n"
        "print(open_device('opencl:0').device.max_compute_units)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "POCL_MAX_PTHREAD_COUNT"}
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "a.xrelay")], env=env, capture_output=True, text=True, check=True
    )
    assert int(done.stdout.split()[-1]) == len(os.sched_getaffinity(0)) - 1


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 cores to split")
def test_host_kernels_keep_off_the_cores_of_a_devices_pinned_workers() -> None:
    """A device whose workers are pinned to the first core: while a run's host kernels overlap
    its work, the calling thread keeps to the other cores, and gets its own back after."""
    usable = frozenset(os.sched_getaffinity(0))
    seen: list[set[int]] = []

    def host_add(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
        seen.append(os.sched_getaffinity(0))
        np.add(a, b, out=out)

    nodes = [(n, "add" if f == "rendezvous" else f, i, d, s) for n, f, i, d, s in TOWERS]
    device = ThreadDevice(python_kernels())
    device.worker_cores = frozenset({min(usable)})
    devices: list[Device] = [NumpyDevice(0, {**python_kernels(), "add": host_add}), device]
    kernels = [{**python_kernels(), "add": host_add}, python_kernels()]
    executor = GraphExecutor(graph(nodes, [len(nodes) - 1], [CPU, CL0]), devices, kernels)
    assert executor.host_cores == usable - {min(usable)}
    x = inputs("ABCD")
    np.testing.assert_allclose(executor.run(x)[0], (x["A"] + x["B"]) - (x["C"] + x["D"]), rtol=1e-6)
    assert seen == [set(usable - {min(usable)})]
    assert os.sched_getaffinity(0) == set(usable)


def test_devices_that_take_turns_leave_the_host_unpinned() -> None:
    """Simplex (the device's add, copied to the host, then the host's sub): nothing overlaps,
    so the host's thread is not pinned, even where the device's workers are."""
    device = ThreadDevice(python_kernels())
    device.worker_cores = frozenset({min(os.sched_getaffinity(0))})
    devices: list[Device] = [NumpyDevice(0, python_kernels()), device]
    executor = GraphExecutor(graph(SIMPLEX, [len(SIMPLEX) - 1], [CPU, CL0]), devices, [python_kernels()] * 2)
    assert executor.host_cores is None


def test_a_result_copied_to_the_host_is_read_after_the_copy() -> None:
    """The last node copies the device's result to the host: the run waits for that started
    copy before it reads the result (found by bench/fuzz.py: program 15 of seed 11)."""
    nodes = [
        ("A", None, [], 1, 0),
        ("B", None, [], 1, 1),
        ("add", "add", [0, 1], 1, 2),
        ("__copy", "__copy", [2], 0, 3),
    ]
    devices: list[Device] = [NumpyDevice(0, python_kernels()), ThreadDevice(python_kernels(), delay=0.05)]
    executor = GraphExecutor(graph(nodes, [3], [CPU, CL0]), devices, [python_kernels()] * 2)
    assert executor.schedule.before_reads == (0,)
    for seed in range(3):
        x = {n: v + seed for n, v in inputs("AB").items()}
        np.testing.assert_array_equal(executor.run(x)[0], x["A"] + x["B"])
