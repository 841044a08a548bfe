"""Profiles of several runs and their Chrome trace, on the hand-made graphs: every node is a
slice on its device's track in every run, copies carry their bytes and device pair, and the
per-node, per-copy and per-device numbers add up. Runtime alone: no compiler, no xDSL."""

from __future__ import annotations

import os

os.environ.setdefault("POCL_DEVICES", "pthread pthread")

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from graphs import (  # fmt: skip
    CL0,
    CPU,
    DUPLEX,
    SIMPLEX,
    N,
    Scope,
    duplex_expected,
    graph,
    inputs,
    python_kernels,
    simplex_expected,
    sources,
)

from xrelay.errors import UsageError
from xrelay.runtime.device import Device, open_device
from xrelay.runtime.executor import GraphExecutor
from xrelay.runtime.numpy_device import NumpyDevice
from xrelay.runtime.profiling import Profile

RUNS = 4


def numpy_executor(nodes: list[Any]) -> GraphExecutor:
    devices: list[Device] = [NumpyDevice(0), NumpyDevice(1)]
    return GraphExecutor(graph(nodes, [len(nodes) - 1], [CPU, CL0]), devices, [python_kernels()] * 2)


def real_executor(nodes: list[Any], scopes: list[Scope], specs: list[str]) -> GraphExecutor:
    devices = [open_device(s) for s in specs]
    kernels = [d.load(sources(s), s["target"]).kernels for d, s in zip(devices, scopes)]
    return GraphExecutor(graph(nodes, [len(nodes) - 1], scopes), devices, kernels)


def check_trace(path: Path, executor: GraphExecutor, runs: int) -> None:
    """The trace against the graph: a track per device, and per run one complete slice per
    kernel or copy node, on its device's track, with shapes and bytes."""
    trace = json.loads(path.read_text())
    events = trace["traceEvents"]
    tracks = {e["tid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    labels = [f"{d['kind']}:{d['id']}" for d in executor.graph["devices"]]
    assert [tracks[i].split(" ")[0] for i in range(len(labels))] == labels
    slices = [e for e in events if e["ph"] == "X"]
    graph_nodes = executor.graph["nodes"]
    kernels_and_copies = [i for i, n in enumerate(graph_nodes) if n["op"] == "tvm_op"]
    assert len(slices) == runs * len(kernels_and_copies)
    device_index = executor.graph["attrs"]["device_index"][1]
    for run in range(runs):
        mine = [e for e in slices if e["args"]["run"] == run]
        assert [e["args"]["node"] for e in mine] == kernels_and_copies  # in execution order
        for e in mine:
            index = e["args"]["node"]
            assert e["name"] == graph_nodes[index]["name"]
            assert e["tid"] == device_index[index] and e["pid"] == 1
            assert e["dur"] >= 0 and e["args"]["shape"] == [N] and e["args"]["bytes"] == 4 * N
            assert e["cat"] == ("copy" if graph_nodes[index]["attrs"]["func_name"] == "__copy" else "kernel")
            if e["cat"] == "copy":
                source = graph_nodes[index]["inputs"][0][0]
                assert (e["args"]["src"], e["args"]["dst"]) == (
                    labels[device_index[source]],
                    labels[device_index[index]],
                )
        starts = [e["ts"] for e in mine]
        assert starts == sorted(starts)  # one node after the other
    assert trace["otherData"]["runs"] == runs


def check_numbers(profile: Profile, executor: GraphExecutor, runs: int) -> None:
    assert profile.runs == runs == len(profile.spans)
    assert len(profile.timings) == len(profile.nodes) == len(executor.steps)
    for t, (name, device, median) in zip(profile.timings, profile.nodes):
        assert 0 <= t.min_seconds <= t.median_seconds == median
        assert (t.step.name, t.step.label) == (name, device)
    for pair, (count, nbytes) in profile.copies.items():
        assert nbytes == count * 4 * N and profile.copy_seconds[pair] >= 0
    assert set(profile.wait_seconds) == {"cpu:0", "opencl:0"}
    walls = [run[-1][1] - run[0][0] for run in profile.spans]
    assert all(0 <= w <= max(walls) for w in profile.wait_seconds.values())
    assert 0 < profile.min_total_seconds <= profile.total_seconds


@pytest.mark.parametrize(
    "nodes, expected, names", [(SIMPLEX, simplex_expected, "ABD"), (DUPLEX, duplex_expected, "ABCD")]
)
def test_numpy_devices(tmp_path: Path, nodes: list[Any], expected: Any, names: str) -> None:
    executor = numpy_executor(nodes)
    x = inputs(names)
    profile = executor.profile(x, runs=RUNS)
    np.testing.assert_array_equal(profile.outputs[0], expected(x))
    check_numbers(profile, executor, RUNS)
    check_trace(profile.save_trace(tmp_path / "trace.json"), executor, RUNS)


@pytest.mark.parametrize(
    "nodes, expected, names", [(SIMPLEX, simplex_expected, "ABD"), (DUPLEX, duplex_expected, "ABCD")]
)
def test_cpu_and_opencl(tmp_path: Path, nodes: list[Any], expected: Any, names: str) -> None:
    executor = real_executor(nodes, [CPU, CL0], ["cpu", "opencl:0"])
    x = inputs(names)
    profile = executor.profile(x, runs=RUNS)
    np.testing.assert_allclose(profile.outputs[0], expected(x), rtol=1e-6)
    check_numbers(profile, executor, RUNS)
    check_trace(profile.save_trace(tmp_path / "trace.json"), executor, RUNS)
    assert profile.tracks[0].startswith("cpu:0 (") and profile.tracks[1].startswith("opencl:0 (")


def test_waits_are_the_run_minus_the_device_busy_time() -> None:
    """Simplex on numpy devices: the host is busy for the copy and the subtraction, the device
    for the addition and the copy; each waits the rest of the run."""
    executor = numpy_executor(SIMPLEX)
    profile = executor.profile(inputs("ABD"), runs=1)
    (add, copy, sub), wall = profile.spans[0], profile.total_seconds
    duration = lambda span: span[1] - span[0]  # noqa: E731
    assert profile.wait_seconds["cpu:0"] == pytest.approx(max(wall - duration(copy) - duration(sub), 0.0))
    assert profile.wait_seconds["opencl:0"] == pytest.approx(max(wall - duration(add) - duration(copy), 0.0))


def test_report_names_min_median_copies_and_waits() -> None:
    text = str(numpy_executor(SIMPLEX).profile(inputs("ABD"), runs=3))
    assert "min us" in text and "median us" in text and "(min and median over 3 runs)" in text
    assert f"copies opencl:0 -> cpu:0: 1, {4 * N} bytes," in text
    assert "waited cpu:0:" in text and "waited opencl:0:" in text


@pytest.mark.parametrize("runs", [0, -1, 1.5, True])
def test_runs_must_be_a_positive_count(runs: Any) -> None:
    with pytest.raises(UsageError, match=r"profile\(runs=...\) takes a number of runs of at least 1, but was given"):
        numpy_executor(SIMPLEX).profile(inputs("ABD"), runs=runs)


def test_the_demo_trace_is_a_timeline_of_the_demo_model() -> None:
    """examples/demo_trace.json (written by examples/demo.py): 3 runs of the CNN's 7 kernels
    and its one copy, each on its device's track, the copy with its bytes."""
    trace = json.loads((Path(__file__).parents[2] / "examples" / "demo_trace.json").read_text())
    events = trace["traceEvents"]
    tracks = {e["tid"]: e["args"]["name"].split(" ")[0] for e in events if e["name"] == "thread_name"}
    assert tracks == {0: "cpu:0", 1: "opencl:0"}
    slices = [e for e in events if e["ph"] == "X"]
    assert trace["otherData"]["runs"] == 3 and len(slices) == 3 * 8
    for e in slices:
        assert tracks[e["tid"]] == e["args"]["device"]
        assert e["args"]["bytes"] == 4 * np.prod(e["args"]["shape"])
    copies = [e for e in slices if e["cat"] == "copy"]
    assert [(e["args"]["src"], e["args"]["dst"], e["args"]["bytes"]) for e in copies] == [
        ("opencl:0", "cpu:0", 12544)
    ] * 3
    first_block = [e for e in slices if e["name"] in ("fused_nn_conv2d_nn_bias_add_nn_relu", "fused_nn_max_pool2d")]
    assert [tracks[e["tid"]] for e in first_block] == ["opencl:0"] * 6
