"""The Ray Serve deployment on the session's local Ray cluster (conftest.py): the MLP built
for batch sizes (1, 4, 16) at `/batched` and for its static batch at `/static`; concurrent
requests of mixed batches and bad ones, every answer checked against `xrelay.interpret`."""

from __future__ import annotations

import io
import json
import re
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pytest
from serve_models import Saved, inputs, listener

from xrelay.errors import InputError
from xrelay.serve.client import infer

serve = pytest.importorskip("ray.serve", reason="Ray Serve is the optional extra 'serve' (pip install -e '.[serve]')")

from xrelay.serve.__main__ import deploy, make_plan, parse_args

WAIT_MS = 20.0  # long enough for concurrent requests to meet in one batch


@pytest.fixture(scope="module")
def urls(saved: Saved, cluster: tuple[str, int]) -> Iterator[tuple[str, str]]:
    """(batched, static) URLs of the two applications on the session's cluster."""
    port = cluster[1]
    for path, name in ((saved.batched, "batched"), (saved.static, "static")):
        plan = make_plan(parse_args([str(path), "--batch-wait-ms", str(WAIT_MS)]))
        deploy(plan, "127.0.0.1", port, name=name, route_prefix=f"/{name}")
    yield f"http://127.0.0.1:{port}/batched", f"http://127.0.0.1:{port}/static"
    for name in ("batched", "static"):
        serve.delete(name)


def info(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(url, timeout=30) as response:
        return json.loads(response.read())


def post(url: str, body: bytes) -> tuple[int, bytes]:
    request = urllib.request.Request(url, data=body, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def npz(**arrays: Any) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


def npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def check(saved: Saved, url: str, x: np.ndarray) -> None:
    out = infer(url, x=x)
    assert list(out) == ["output_0"]
    np.testing.assert_allclose(out["output_0"], saved.expected(x), rtol=1e-4, atol=1e-6)


def test_a_replica_loads_with_the_runtime_alone_in_under_a_second(urls: tuple[str, str]) -> None:
    batched = info(urls[0])
    assert batched["compiler_modules"] == []  # no xDSL, no compiler: only xrelay.runtime
    assert batched["ready_seconds"] < 1.0
    assert batched["omp_thread_limit"] == "1"
    assert batched["batch_sizes"] == [1, 4, 16] and batched["max_batch_size"] == 16
    assert batched["inputs"] == {"x": {"shape": [16, 32], "dtype": "float32"}}
    static = info(urls[1])
    assert static["batch_sizes"] == [] and static["max_batch_size"] == 1


def test_requests_reach_the_replicas_through_haproxy(urls: tuple[str, str], cluster: tuple[str, int]) -> None:
    """The session's cluster has HAProxy on Serve's port (`xrelay.serve.ingress`), and its
    replicas know it: HAProxy hands each request to the replica's own HTTP server."""
    assert listener(cluster[1]) == "haproxy"
    assert info(urls[0])["ingress"] == info(urls[1])["ingress"] == "haproxy"


def test_concurrent_requests_of_mixed_batches_are_batched_and_split_back(saved: Saved, urls: tuple[str, str]) -> None:
    before = info(urls[0])["batches"]
    batches = [1, 1, 2, 3, 1, 5, 1, 4] * 4  # 32 requests, 72 rows
    xs = [inputs(n) for n in batches]
    with ThreadPoolExecutor(16) as pool:
        outs = list(pool.map(lambda x: infer(urls[0], x=x)["output_0"], xs))
    for x, out in zip(xs, outs):
        np.testing.assert_allclose(out, saved.expected(x), rtol=1e-4, atol=1e-6)
    after = info(urls[0])
    assert after["batches"] - before < len(xs), "no two requests met in one batch"
    assert 1 < after["largest_batch_rows"] <= 16
    # the run thread's CPU time per batch, at most its wall time (each run's is), and its OS id
    assert 0 < after["median_run_cpu_seconds"] <= after["median_run_seconds"] + 1e-6
    assert isinstance(after["run_thread_id"], int) and after["run_thread_id"] != after["pid"]


def test_a_request_above_the_max_batch_runs_alone_in_pieces(saved: Saved, urls: tuple[str, str]) -> None:
    check(saved, urls[0], inputs(37))


def test_the_static_artifact_runs_each_request_alone(saved: Saved, urls: tuple[str, str]) -> None:
    xs = [inputs(1) for _ in range(8)]
    with ThreadPoolExecutor(8) as pool:
        outs = list(pool.map(lambda x: infer(urls[1], x=x)["output_0"], xs))
    for x, out in zip(xs, outs):
        np.testing.assert_allclose(out, saved.expected(x), rtol=1e-4, atol=1e-6)
    with pytest.raises(InputError, match=r"400: input x must have shape \[1, 32\], but has shape \[2, 32\]"):
        infer(urls[1], x=inputs(2))


BAD: dict[str, tuple[bytes, str]] = {
    "not an npz": (b"garbage", "must be an .npz of the inputs x"),
    "an npy": (npy(inputs(1)), "not a single .npy"),
    "a truncated npz": (npz(x=inputs(1))[:40], "must be an .npz of the inputs x"),
    "pickled objects": (npz(x=np.array([{"a": 1}], dtype=object)), "must be an .npz of the inputs x"),
    "a missing input": (npz(y=inputs(1)), "missing x; unknown 'y'"),
    "an extra input": (npz(x=inputs(1), y=inputs(1)), "unknown 'y'"),
    "a wrong sample shape": (npz(x=np.zeros((2, 31), np.float32)), r"input x must have shape \[N, 32\]"),
    "a wrong rank": (npz(x=np.zeros(32, np.float32)), r"input x must have shape \[N, 32\]"),
    "a batch of 0": (npz(x=np.zeros((0, 32), np.float32)), "batch 0"),
    "a wrong dtype": (npz(x=inputs(1).astype(np.float64)), r"must have dtype float32, but has dtype float64"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_a_bad_request_is_a_400_with_the_runtimes_message(urls: tuple[str, str], case: str) -> None:
    body, message = BAD[case]
    status, answer = post(urls[0], body)
    assert status == 400, answer
    assert re.search(message, answer.decode()), answer.decode()


def test_bad_requests_among_good_ones_fail_alone_and_crash_nothing(saved: Saved, urls: tuple[str, str]) -> None:
    pid = info(urls[0])["pid"]
    bodies = [(npz(x=inputs(2)), True), *((body, False) for body, _ in BAD.values())] * 3

    def send(item: tuple[bytes, bool]) -> tuple[bytes, bool, int, bytes]:
        return (*item, *post(urls[0], item[0]))

    with ThreadPoolExecutor(16) as pool:
        answers = list(pool.map(send, bodies))
    for body, good, status, answer in answers:
        assert status == (200 if good else 400), answer
        if good:
            x = np.load(io.BytesIO(body))["x"]
            out = np.load(io.BytesIO(answer))["output_0"]
            np.testing.assert_allclose(out, saved.expected(x), rtol=1e-4, atol=1e-6)
    assert info(urls[0])["pid"] == pid  # the same replica process: nothing restarted it
