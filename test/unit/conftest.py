"""pytest configuration: under CI (`CI` set), hypothesis draws the same examples every run, so
a red CI run is reproducible and a green one is not luck; locally it explores new examples."""

import os
from pathlib import Path

import pytest
from hypothesis import settings

# The tests patch the compiler's internals (schedules, features, emitters): a build taken from
# the build cache (xrelay.build_cache) would not see it. test_build_cache.py turns it on.
os.environ.setdefault("XRELAY_BUILD_CACHE", "0")

settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


@pytest.fixture(autouse=True)
def artifact_key(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Artifacts are signed with a test key, and any key file goes to a temporary config
    directory: no test reads or writes the user's own."""
    monkeypatch.setenv("XRELAY_ARTIFACT_KEY", "xrelay test key")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("config")))


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty kernel cache (`$XDG_CACHE_HOME/xrelay`) for one test."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    return tmp_path / "xrelay"


# `make test-avx2-host` sets this: OpenCL targets then describe the device as PoCL does on an
# AVX2 host, 8-float vectors (16 registers), whatever this host's PoCL says; a target's own
# `-vector-width=N` still wins. (machine.opencl_features, the device's own info, is left.)
_OPENCL_WIDTH = os.environ.get("XRELAY_TEST_OPENCL_VECTOR_WIDTH")
if _OPENCL_WIDTH:
    from xrelay.runtime import machine

    _device_target_features = machine.opencl_target_features

    def _as_on_that_host(target: str) -> machine.Features:
        pinned = "-vector-width=" in target
        return _device_target_features(target if pinned else f"{target} -vector-width={_OPENCL_WIDTH}")

    machine.opencl_target_features = _as_on_that_host
