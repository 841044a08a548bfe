"""Fixtures of the serving tests: the environment and the saved MLP (`serve_models`)."""

from __future__ import annotations

import logging
import shutil
from collections.abc import Iterator

import pytest
from serve_models import SIZES, TEST_KEY, Saved, free_port, random_array

import xrelay
from xrelay.serve import ingress


@pytest.fixture(scope="session")
def environment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Artifacts signed with a test key, no build cache, no user config touched (for the
    whole session: a Ray cluster's workers inherit the environment it starts with)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XRELAY_ARTIFACT_KEY", TEST_KEY)
        patch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("config")))
        patch.setenv("XRELAY_BUILD_CACHE", "0")
        yield


@pytest.fixture(scope="session")
def saved(environment: None, tmp_path_factory: pytest.TempPathFactory) -> Saved:
    b = xrelay.Builder()
    x = b.input("x", (1, 32))
    w1, b1, w2 = b.input("w1", (64, 32)), b.input("b1", (64,)), b.input("w2", (10, 64))
    h = b.nn.relu(b.nn.bias_add(b.nn.dense(x, w1), b1))
    module = b.finish(b.nn.softmax(b.nn.dense(h, w2)))
    params = {"w1": random_array(64, 32), "b1": random_array(64), "w2": random_array(10, 64)}
    root = tmp_path_factory.mktemp("artifacts")
    xrelay.build(module, targets=("c",), params=params, batch_sizes=SIZES).save(root / "batched.xrelay")
    xrelay.build(module, targets=("c",), params=params).save(root / "static.xrelay")
    return Saved(root / "batched.xrelay", root / "static.xrelay", module, params)


@pytest.fixture(scope="session")
def cluster(saved: Saved) -> Iterator[tuple[str, int]]:
    """A local Ray cluster with Serve on a free port, for the session: (its address, the port).
    3 logical CPUs on this 2-core machine: one for each replica the tests deploy at once. Its
    ingress is HAProxy, as `python -m xrelay.serve` starts its own."""
    ray = pytest.importorskip("ray", reason="Ray Serve is the optional extra 'serve' (pip install -e '.[serve]')")
    serve = pytest.importorskip("ray.serve", reason="Ray Serve is the optional extra 'serve'")
    scratch = ingress.scratch_directory()
    with pytest.MonkeyPatch.context() as patch:
        for name, value in ingress.environment(ingress.HAPROXY, scratch).items():
            patch.setenv(name, value)
        context = ray.init(
            num_cpus=3, include_dashboard=False, object_store_memory=128 << 20, logging_level=logging.ERROR
        )
    try:
        port = free_port()
        serve.start(http_options={"host": "127.0.0.1", "port": port})
        yield str(context.address_info["gcs_address"]), port
    finally:
        serve.shutdown()
        ray.shutdown()
        shutil.rmtree(scratch, ignore_errors=True)
