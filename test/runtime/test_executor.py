"""The graph executor on hand-made graphs (TVM's heterogeneous runtime tests): a copy in the
middle (simplex), data going back and forth (duplex), two OpenCL devices, malformed graphs.

Each graph runs on Python kernels (numpy devices, no hardware) and on real devices with tiny
hand-written C and OpenCL kernels, through `xrelay.runtime` alone: no compiler, no xDSL.
"""

from __future__ import annotations

import mmap
import os

os.environ.setdefault("POCL_DEVICES", "pthread pthread")

from typing import Any

import numpy as np
import pytest
from graphs import (
    CL0,
    CL1,
    CPU,
    DUPLEX,
    SIMPLEX,
    N,
    Scope,
    duplex_expected,
    graph,
    inputs,
    python_kernels,
    run,
    simplex_expected,
    sources,
)  # fmt: skip

from xrelay.errors import DeviceError, InputError
from xrelay.runtime.cpu import CPUDevice
from xrelay.runtime.device import open_device, resolve_devices
from xrelay.runtime.executor import GraphExecutor, immutable
from xrelay.runtime.numpy_device import NumpyDevice


def real_executor(nodes: list[Any], heads: list[int], scopes: list[Scope], specs: list[str]) -> GraphExecutor:
    devices = [open_device(s) for s in specs]
    kernels = [d.load(sources(s), s["target"]).kernels for d, s in zip(devices, scopes)]
    return GraphExecutor(graph(nodes, heads, scopes), devices, kernels)


# --- numpy devices: the executor alone -------------------------------------------------------


@pytest.mark.parametrize(
    "nodes, expected, names", [(SIMPLEX, simplex_expected, "ABD"), (DUPLEX, duplex_expected, "ABCD")]
)
def test_numpy_devices(nodes: list[Any], expected: Any, names: str) -> None:
    devices = [NumpyDevice(0), NumpyDevice(1)]
    executor = GraphExecutor(graph(nodes, [len(nodes) - 1], [CPU, CL0]), devices, [python_kernels()] * 2)
    x = inputs(names)
    np.testing.assert_array_equal(run(executor, x), expected(x))
    profile = executor.profile(x)
    copies = {pair: count for pair, (count, _) in profile.copies.items()}
    assert copies == (
        {("opencl:0", "cpu:0"): 1} if nodes is SIMPLEX else {("opencl:0", "cpu:0"): 1, ("cpu:0", "opencl:0"): 1}
    )
    assert profile.pool_bytes == {"cpu:0": 4 * N * 3, "opencl:0": 4 * N * (3 if nodes is SIMPLEX else 6)}


def test_kernels_are_looked_up_on_the_node_device() -> None:
    """Two devices may have kernels of one name: each node calls its own device's."""
    host = {"add": lambda a, b, out: np.add(a, b, out=out), "sub": lambda a, b, out: np.subtract(a, b, out=out)}
    device = {"add": lambda a, b, out: np.multiply(a, b, out=out)}
    executor = GraphExecutor(graph(SIMPLEX, [5], [CPU, CL0]), [NumpyDevice(0), NumpyDevice(1)], [host, device])
    x = inputs("ABD")
    np.testing.assert_array_equal(run(executor, x), x["A"] * x["B"] - x["D"])


def test_without_device_index_everything_runs_on_the_primary_device() -> None:
    g = graph(SIMPLEX, [5], [CPU])
    del g["attrs"]["device_index"]
    executor = GraphExecutor(g, [NumpyDevice(0)], [python_kernels()])
    x = inputs("ABD")
    np.testing.assert_array_equal(run(executor, x), simplex_expected(x))


def test_a_storage_on_two_devices_is_rejected() -> None:
    nodes = [n if n[0] != "sub" else ("sub", "sub", [4, 2], 0, 3) for n in SIMPLEX]  # storage 3 is on device 1
    with pytest.raises(DeviceError, match="storage 3 is used on devices opencl:0 and cpu:0"):
        GraphExecutor(graph(nodes, [5], [CPU, CL0]), [NumpyDevice(0), NumpyDevice(1)], [python_kernels()] * 2)


def test_a_missing_kernel_is_named() -> None:
    with pytest.raises(DeviceError, match="node 5 \\(sub\\) calls kernel sub, which device cpu:0 does not have"):
        GraphExecutor(graph(SIMPLEX, [5], [CPU, CL0]), [NumpyDevice(0), NumpyDevice(1)], [{}, python_kernels()])


def test_too_few_devices() -> None:
    with pytest.raises(DeviceError, match="device indices up to 1, but 1 devices were given"):
        GraphExecutor(graph(SIMPLEX, [5], [CPU, CL0]), [NumpyDevice(0)], [python_kernels()])


@pytest.mark.parametrize(
    "bad, message",
    [
        ({"A": 1, "B": 2}, "takes inputs A, B, D; missing D"),
        ({"A": 1, "B": 2, "D": 3, "E": 4}, "unknown 'E'"),
        ({"A": np.zeros(3, np.float32)}, "input A must have shape \\[1000\\], but has shape \\[3\\]"),
        ({"A": np.zeros(N, np.float64)}, "input A must have dtype float32, but has dtype float64"),
    ],
)
def test_input_errors(bad: dict[str, Any], message: str) -> None:
    executor = GraphExecutor(graph(SIMPLEX, [5], [CPU, CL0]), [NumpyDevice(0), NumpyDevice(1)], [python_kernels()] * 2)
    x = inputs("ABD")
    if "A" in bad and isinstance(bad["A"], np.ndarray):
        x.update(bad)
    else:
        x = bad
    with pytest.raises(InputError, match=message):
        executor.check_inputs(x)


def test_what_nothing_can_change_is_immutable(tmp_path: Any) -> None:
    """Read-only down to memory that is read-only too, or that a read-only array owns."""
    data = np.arange(4, dtype=np.float32)
    owned = data.copy()
    owned.flags.writeable = False
    view = data.view()
    view.flags.writeable = False  # (data, its base, is still writable)
    over_bytearray = np.frombuffer(bytearray(16), np.float32)
    over_bytearray.flags.writeable = False
    path = tmp_path / "data"
    path.write_bytes(data.tobytes())
    with open(path, "rb") as file, mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
        assert immutable(np.frombuffer(mapped, np.float32))
    assert immutable(np.frombuffer(data.tobytes(), np.float32)) and immutable(owned) and immutable(owned[1:])
    assert not immutable(data) and not immutable(view) and not immutable(over_bytearray)


def test_immutable_params_are_their_storage_on_host_memory() -> None:
    """A param nothing can change is its storage's buffer on a device of host memory, not
    copied; a writable or strided one is copied, so changing the caller's array after the
    executor was made changes nothing."""
    x = inputs("ABD")
    frozen = np.frombuffer(x["B"].tobytes(), np.float32)
    strided = np.repeat(x["D"], 2)[::2]
    strided.flags.writeable = False
    writable = x["A"].copy()
    devices = [NumpyDevice(0), NumpyDevice(1)]
    params = {"A": writable, "B": frozen, "D": strided}
    executor = GraphExecutor(graph(SIMPLEX, [5], [CPU, CL0]), devices, [python_kernels()] * 2, params)
    assert np.shares_memory(executor.shared[1], frozen)  # B: storage 1
    assert not np.shares_memory(executor.shared[0], writable) and not np.shares_memory(executor.shared[2], strided)
    writable += 1
    np.testing.assert_array_equal(run(executor, {}), simplex_expected(x))


# --- real devices: C kernels on the host, OpenCL kernels on PoCL -------------------------------


@pytest.mark.parametrize(
    "nodes, expected, names", [(SIMPLEX, simplex_expected, "ABD"), (DUPLEX, duplex_expected, "ABCD")]
)
def test_cpu_and_opencl(nodes: list[Any], expected: Any, names: str) -> None:
    executor = real_executor(nodes, [len(nodes) - 1], [CPU, CL0], ["cpu", "opencl:0"])
    x = inputs(names)
    np.testing.assert_allclose(run(executor, x), expected(x), rtol=1e-6)
    x = inputs(names[::-1])  # a second run with new inputs reuses every buffer
    np.testing.assert_allclose(run(executor, x), expected(x), rtol=1e-6)


def test_two_opencl_devices() -> None:
    """Simplex between opencl:1 and opencl:0: the copy goes device to device in one context."""
    devices = resolve_devices([("opencl", 0), ("opencl", 1)])
    assert devices[0] is not devices[1], 'needs two OpenCL devices: POCL_DEVICES="pthread pthread"'
    executor = real_executor(SIMPLEX, [5], [CL0, CL1], ["opencl:0", "opencl:1"])
    x = inputs("ABD")
    np.testing.assert_allclose(run(executor, x), simplex_expected(x), rtol=1e-6)
    profile = executor.profile(x)
    assert profile.copies == {("opencl:1", "opencl:0"): (1, 4 * N)}
    assert profile.nodes[1][:2] == ("__copy", "opencl:0")


def test_device_table_maps_virtual_ids() -> None:
    devices = resolve_devices([("cpu", 0), ("opencl", 1)], {("opencl", 1): "opencl:0", "cpu:0": NumpyDevice(7)})
    assert [d.name for d in devices] == ["numpy:7", "opencl:0"]
    assert isinstance(resolve_devices([("cpu", 3)])[0], CPUDevice)


@pytest.mark.parametrize(
    "scope, table, message",
    [
        (("opencl", 0), {("opencl", 0): "gpu:0"}, "unknown device 'gpu:0'; expected kind\\[:index\\]"),
        (("opencl", 9), None, "device opencl:9 does not exist: the OpenCL platform has"),
        (("cuda", 0), None, "no runtime device for scope cuda:0"),
    ],
)
def test_device_table_errors(scope: tuple[str, int], table: Any, message: str) -> None:
    with pytest.raises(DeviceError, match=message):
        resolve_devices([scope], table)


def test_kernels_of_a_device_that_compiles_at_first_launch_are_launched_at_load() -> None:
    """PoCL compiles a kernel at its first launch: the executor launches each once when it
    loads, on that device only, so the first run is as fast as the next."""

    class LazyCompiler(NumpyDevice):
        compiles_at_first_launch = True

    calls: list[str] = []

    def counting(name: str, fn: Any) -> Any:
        return lambda *args: (calls.append(name), fn(*args))

    lazy = {name: counting(f"device:{name}", fn) for name, fn in python_kernels().items()}
    host = {name: counting(f"host:{name}", fn) for name, fn in python_kernels().items()}
    with np.errstate(all="ignore"):  # the warm-up reads buffers no run has written yet
        executor = GraphExecutor(graph(DUPLEX, [8], [CPU, CL0]), [NumpyDevice(0), LazyCompiler(1)], [host, lazy])
    assert calls == ["device:add", "device:add"]  # both launches of add on the lazy device, nothing else
    x = inputs("ABCD")
    np.testing.assert_allclose(run(executor, x), duplex_expected(x), rtol=1e-6)


def test_cpu_runs_take_strided_inputs_and_return_fresh_results() -> None:
    """The per-run path binds its writes and reads once: a strided or read-only input is
    written as it reads, and a result is the caller's, not a view of a workspace the next
    run overwrites."""
    executor = real_executor(SIMPLEX, [5], [CPU, CPU], ["cpu", "cpu:1"])
    rng = np.random.default_rng(1)
    wide = rng.standard_normal((N, 2)).astype(np.float32)
    x = {"A": wide[:, 1], "B": inputs("B")["B"], "D": inputs("D")["D"]}
    x["B"].flags.writeable = False
    first = run(executor, x)
    np.testing.assert_allclose(first, simplex_expected(x), rtol=1e-6)
    expected_first = first.copy()
    second = run(executor, {n: a * 2 for n, a in x.items()})
    np.testing.assert_allclose(second, 2 * simplex_expected(x), rtol=1e-6)
    np.testing.assert_array_equal(first, expected_first)
    assert first.flags.owndata and first.flags.writeable


def test_opencl_runs_take_strided_inputs() -> None:
    """An input for an OpenCL device is written from a C-contiguous copy where it is strided,
    and as it lies where it is not. (A, strided, and B are OpenCL's.)"""
    executor = real_executor(SIMPLEX, [5], [CPU, CL0], ["cpu", "opencl:0"])
    rng = np.random.default_rng(2)
    wide = rng.standard_normal((N, 2)).astype(np.float32)
    x = {"A": wide[:, 1], "B": inputs("B")["B"], "D": inputs("D")["D"]}
    np.testing.assert_allclose(run(executor, x), simplex_expected(x), rtol=1e-6)
    x["A"] = np.ascontiguousarray(x["A"])
    np.testing.assert_allclose(run(executor, x), simplex_expected(x), rtol=1e-6)
