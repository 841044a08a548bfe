"""Models split across cpu and OpenCL (PoCL), run by the concurrent executor, equal
`xrelay.interpret`: bench/branchy.py's two towers at a small size (many random inputs, many
runs, from several threads at once), and a model whose memory plan reuses a host storage that
a copy to the device reads (the executor must wait for the copy before overwriting it)."""

from __future__ import annotations

import os

os.environ.setdefault("POCL_DEVICES", "pthread pthread")

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import bench_models  # noqa: F401 (puts bench/ on sys.path)
import numpy as np
import pytest
from branchy import branchy_module

import xrelay
from xrelay.runtime.executor import HOST, GraphExecutor

SMALL = {"channels": 8, "size": 10, "depth": 2}


@pytest.fixture(scope="module")
def split() -> tuple[str, dict[str, np.ndarray], Any]:
    text, params = branchy_module(("cpu", "opencl"), **SMALL)
    exe = xrelay.build(text, targets=("c", "opencl"), params=params)
    return text, params, exe


def random_x(seed: int) -> np.ndarray:
    n, size = SMALL["channels"], SMALL["size"]
    return np.random.default_rng(seed).standard_normal((1, n, size, size)).astype(np.float32)


def test_the_towers_are_on_two_devices_and_overlap_in_the_schedule(split: Any) -> None:
    _, _, exe = split
    devices = {device for _, device in exe.placement()}
    assert {"cpu:0", "opencl:0"} <= devices
    ex: GraphExecutor = exe.executor
    issued = [ex.schedule.lanes[k] for k in ex.schedule.order]
    program = list(ex.schedule.lanes)
    # the cpu tower comes first in program order; the schedule queues all of opencl's first
    assert program.index(HOST) < min(k for k, lane in enumerate(program) if lane != HOST)
    assert issued == sorted(issued, key=lambda lane: lane == HOST)


def test_split_equals_the_interpreter(split: Any) -> None:
    text, params, exe = split
    for seed in range(6):
        x = random_x(seed)
        expected = xrelay.interpret(text, {"x": x, **params})
        for _ in range(3):
            np.testing.assert_allclose(exe.run(x=x), expected, rtol=1e-4, atol=1e-5)


def test_split_from_several_threads(split: Any) -> None:
    text, params, exe = split
    xs = [random_x(seed) for seed in range(8)]
    expected = [xrelay.interpret(text, {"x": x, **params}) for x in xs]

    def call(i: int) -> bool:
        return bool(np.allclose(exe.run(x=xs[i % len(xs)]), expected[i % len(xs)], rtol=1e-4, atol=1e-5))

    with ThreadPoolExecutor(4) as pool:
        assert all(pool.map(call, range(48)))


def softmax_chain() -> str:
    """%a on the cpu is copied to opencl and then dead on the cpu after %b: plan-memory gives
    %c (written while the copy may still read %a) %a's storage. (PoCL runs a copy that no
    earlier command's buffers hold back at once, so the race is not seen here when the host
    does not wait: test/runtime/test_concurrent_devices.py shows it on a slow queue.)"""
    ty = "tensor<4x256xf32>"
    cl = "#relay.se_scope<device = opencl>"
    cpu = "#relay.se_scope<device = cpu>"
    return "\n".join([
        f"func.func @main(%x: {ty}) -> {ty} {{",
        f"  %a0 = relay.nn.softmax %x : ({ty}) -> {ty}",
        f"  %a = relay.on_device %a0 {{se_scope = {cpu}}} : {ty}",
        f"  %t = relay.device_copy %a {{src_se_scope = {cpu}, dst_se_scope = {cl}}} : {ty}",
        f"  %d0 = relay.nn.softmax %t : ({ty}) -> {ty}",
        f"  %d = relay.on_device %d0 {{se_scope = {cl}}} : {ty}",
        f"  %b0 = relay.nn.softmax %a : ({ty}) -> {ty}",
        f"  %b = relay.on_device %b0 {{se_scope = {cpu}}} : {ty}",
        f"  %c0 = relay.nn.softmax %b : ({ty}) -> {ty}",
        f"  %c = relay.on_device %c0 {{se_scope = {cpu}}} : {ty}",
        f"  %e = relay.device_copy %d {{src_se_scope = {cl}, dst_se_scope = {cpu}}} : {ty}",
        f"  %r0 = relay.add %c, %e : ({ty}, {ty}) -> {ty}",
        f"  %r = relay.on_device %r0 {{se_scope = {cpu}}} : {ty}",
        f"  func.return %r : {ty}",
        "}",
    ])  # fmt: skip


def test_a_host_storage_reused_after_a_copy_reads_it() -> None:
    text = softmax_chain()
    exe = xrelay.build(text, targets=("c", "opencl"))
    ex: GraphExecutor = exe.executor
    copies = [k for k, (name, index) in enumerate(ex.steps) if name == "__copy" and ex.schedule.lanes[k] != HOST]
    to_device = next(k for k in copies if ex.devices[ex.entries[ex.steps[k][1]].device].host_memory is False)
    source = ex.entries[ex.copy_source(ex.steps[to_device][1])].storage
    rewriters = [k for k, (_, index) in enumerate(ex.steps) if k > to_device and ex.entries[index].storage == source]
    assert rewriters, "the plan no longer reuses the copied storage: the test checks nothing"
    assert all(to_device in ex.schedule.deps[k] for k in rewriters)
    # the host waits for the copy before the first of them (the copy is on the queue)
    assert to_device in ex.schedule.waits[min(rewriters, key=ex.schedule.order.index)]
    rng = np.random.default_rng(0)
    for _ in range(20):
        x = (4 * rng.standard_normal((4, 256))).astype(np.float32)
        np.testing.assert_allclose(exe.run(x=x), xrelay.interpret(text, {"x": x}), rtol=1e-5, atol=1e-6)


def test_the_concatenated_towers_equal_the_interpreter() -> None:
    """`join="concat"`: the towers meet only in a concatenate of their own."""
    text, params = branchy_module(("cpu", "opencl"), join="concat", **SMALL)
    exe = xrelay.build(text, targets=("c", "opencl"), params=params)
    assert exe.placement()[-1][0] == "fused_concatenate"
    for seed in range(4):
        x = random_x(seed)
        np.testing.assert_allclose(exe.run(x=x), xrelay.interpret(text, {"x": x, **params}), rtol=1e-4, atol=1e-5)
