"""The runtime's OpenCL device and builder (`runtime/opencl.py`): one kernel object per build,
argument checks, the build log in errors, what a missing platform or pyopencl says, and the
host's wait for a run."""

from __future__ import annotations

import dataclasses
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from kernel_cases import ELEMENTWISE, LOOP_KERNELS, kernel_sources_of, random_inputs

from xrelay.errors import CompileError, DeviceError
from xrelay.runtime.kernels import KernelSource
from xrelay.runtime.opencl import (
    OpenCLDevice,
    build_opencl,
    default_opencl_context,
    poll_then_wait,
    run_opencl_kernel,
)

# --- OpenCL ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cl_context():
    return default_opencl_context()


def test_opencl_build_makes_each_kernel_object_once(cache: Path, cl_context) -> None:
    import pyopencl as cl

    program = build_opencl(cl_context, kernel_sources_of("opencl"))
    assert program["k_elementwise"].kernel is program["k_elementwise"].kernel
    assert sorted(program.kernels) == sorted(k.name for k in LOOP_KERNELS)
    assert list(cache.glob("*")) == []  # the platform caches OpenCL programs, not xrelay
    queue = cl.CommandQueue(cl_context)
    for case in LOOP_KERNELS:
        inputs = random_inputs(list(case.inputs), 0, positive=False)
        got = run_opencl_kernel(queue, program[case.name], inputs, case.output)
        np.testing.assert_allclose(got, case.reference(*inputs), rtol=1e-5, atol=1e-5)


def test_opencl_kernel_checks_its_arguments(cl_context) -> None:
    kernel = build_opencl(cl_context, kernel_sources_of("opencl", [ELEMENTWISE]))["k_elementwise"]
    with pytest.raises(TypeError, match="takes 2 inputs and one output, but was given 1 buffers"):
        kernel(None, object())


def test_opencl_compile_error_carries_the_build_log(cache: Path, cl_context) -> None:
    (good,) = kernel_sources_of("opencl", [ELEMENTWISE])
    bad = dataclasses.replace(good, source=good.source.replace("out0[", "undeclared_buffer["))
    with pytest.raises(
        CompileError, match="the OpenCL compiler failed on kernels k_elementwise:(.|\n)*undeclared_buffer"
    ):
        build_opencl(cl_context, [bad])


def test_no_opencl_platform_says_how_to_install_one(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import pyopencl

    monkeypatch.setattr(pyopencl, "get_platforms", lambda: [])
    with pytest.raises(DeviceError, match="no OpenCL platform found; .*apt-get install pocl-opencl-icd"):
        build_opencl(None, kernel_sources_of("opencl", [ELEMENTWISE]))


def test_missing_pyopencl_says_how_to_install_it(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyopencl", None)  # makes `import pyopencl` fail
    with pytest.raises(DeviceError, match="pyopencl cannot be imported .*apt-get install pocl-opencl-icd"):
        build_opencl(None, kernel_sources_of("opencl", [ELEMENTWISE]))


def test_opencl_builder_rejects_c_kernel_sources_of(cache: Path, cl_context) -> None:
    with pytest.raises(CompileError, match="is c code, but this builder builds opencl kernels"):
        build_opencl(cl_context, kernel_sources_of("c", [ELEMENTWISE]))


GROUPS_PROBE = """__kernel void k_groups(__global const float *in0, __global float *out0) {
  size_t i = get_global_id(0);
  if (i < 4) out0[i] = in0[i] + 10.0f * get_local_size(0) + 100.0f * get_num_groups(0);
}
"""


def groups_probe(local_size: tuple[int, ...] | None) -> KernelSource:
    """A kernel writing in0 + 10 x its work-group size + 100 x its work-group count."""
    return KernelSource("k_groups", "opencl", GROUPS_PROBE, (4,), 1, 0, local_size)


@pytest.mark.parametrize(("local_size", "groups"), [((1,), 4), ((2,), 2)])
def test_the_local_size_reaches_the_launch(cl_context, local_size: tuple[int, ...], groups: int) -> None:
    """`KernelSource.local_size` is the launch's work-group shape, in `OpenCLKernel` calls
    and in the executor's bound launches (`OpenCLDevice.bind`) alike; the manifest keeps it."""
    import pyopencl as cl

    source = groups_probe(local_size)
    assert KernelSource.from_json(source.to_json(), source.source) == source
    x = np.arange(4, dtype=np.float32)
    expected = x + 10 * local_size[0] + 100 * groups
    program = build_opencl(cl_context, [source])
    np.testing.assert_array_equal(
        run_opencl_kernel(cl.CommandQueue(cl_context), program["k_groups"], [x], (4,)), expected
    )
    device = OpenCLDevice(0)
    kernel = device.load([source], "opencl").kernels["k_groups"]
    tensors = [device.tensor(device.alloc(16), (4,), np.dtype(np.float32)) for _ in range(2)]
    device.write(tensors[0], x)
    device.bind(kernel, tensors)()
    got = np.zeros(4, np.float32)
    device.read(tensors[1], got)
    np.testing.assert_array_equal(got, expected)


def test_without_a_local_size_the_manifest_has_none() -> None:
    source = groups_probe(None)
    assert "local_size" not in source.to_json()
    assert KernelSource.from_json(source.to_json(), source.source) == source


@pytest.mark.parametrize("seconds", [0.0, 1e-3, 1.0])
def test_poll_then_wait_returns_once_the_event_completes(cl_context, seconds: float) -> None:
    """Whether the event completes within the poll (1 s), after it (0 and 1 ms), the wait
    returns only then."""
    import pyopencl as cl

    event = cl.UserEvent(cl_context)
    timer = threading.Timer(0.02, event.set_status, [cl.command_execution_status.COMPLETE])
    timer.start()
    start = time.perf_counter()
    poll_then_wait(event, seconds)
    assert event.command_execution_status == cl.command_execution_status.COMPLETE
    assert time.perf_counter() - start >= 0.015
    timer.join()


def test_poll_then_wait_raises_when_the_command_failed(cl_context) -> None:
    import pyopencl as cl

    event = cl.UserEvent(cl_context)
    event.set_status(-1)
    with pytest.raises(cl.Error):
        poll_then_wait(event, 1e-3)


@pytest.mark.parametrize(
    ("workers", "devices", "before", "after"),
    [
        ("2", "pthread pthread", None, "1"),
        ("1", "pthread", None, "1"),  # one worker on core 0: the host keeps to core 1
        ("2", "pthread", "0", "0"),
        ("3", "pthread", None, None),  # more workers than cores: PoCL would abort
        ("", "pthread", None, "1"),  # PoCL's own count: 2 cores
        ("", "pthread pthread", None, "1"),  # one pool for both devices: a worker per core
    ],
)
def test_pocl_workers_are_pinned_when_there_are_several(
    monkeypatch: pytest.MonkeyPatch, workers: str, devices: str, before: str | None, after: str | None
) -> None:
    """POCL_AFFINITY=1 with one or two PoCL workers on cores 0 and 1, unless the environment
    sets it; `worker_cores` then says which cores they take."""
    import os

    from xrelay.runtime import opencl

    monkeypatch.setattr(opencl, "usable_cores", lambda: {0, 1})
    monkeypatch.setenv("POCL_MAX_PTHREAD_COUNT", workers)
    monkeypatch.setenv("POCL_DEVICES", devices)
    monkeypatch.setenv("POCL_AFFINITY", before or "")  # restored after the test, as it was
    if before is None:
        monkeypatch.delenv("POCL_AFFINITY")
    opencl.pin_pocl_workers()
    assert os.environ.get("POCL_AFFINITY") == after
    pinned = set(range(int(workers or 2))) if after == "1" else set()
    assert opencl.worker_cores() == pinned


@pytest.mark.parametrize(("kind", "units", "polls"), [("CPU", 1, True), ("CPU", 2, False), ("GPU", 80, True)])
def test_the_host_polls_where_the_devices_workers_leave_it_a_core(
    monkeypatch: pytest.MonkeyPatch, kind: str, units: int, polls: bool
) -> None:
    import pyopencl as cl

    from xrelay.runtime import opencl

    monkeypatch.setattr(opencl, "usable_cores", lambda: {0, 1})
    device = dataclasses.make_dataclass("Device", ["type", "max_compute_units"])(getattr(cl.device_type, kind), units)
    assert opencl.host_poll_seconds(device) == (opencl.POLL_SECONDS if polls else 0.0)
