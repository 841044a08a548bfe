"""`xrelay.serve.ingress`: the environment that gives a cluster started here its ingress (no
Ray needed: test_cli.py and test_serve.py run clusters with it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from xrelay.serve import ingress


def test_the_proxy_ingress_keeps_serves_defaults() -> None:
    assert ingress.environment(ingress.PROXY, Path("/tmp/x")) == {}


def test_haproxy_gets_files_and_ports_of_the_clusters_own() -> None:
    """Two clusters on one machine (a server and the tests) must not share HAProxy's files in
    /tmp/haproxy-serve, nor its stats and metrics ports 8404 and 9101."""
    scratch = Path("/tmp/xrelay-serve-abc")
    env = ingress.environment(ingress.HAPROXY, scratch)
    assert env.items() >= ingress.HAPROXY_SETTINGS.items()
    files = [v for k, v in env.items() if k.endswith(("_LOC", "_PATH", "_BASE", "_FILE"))]
    assert len(files) == 5 and all(Path(f) == scratch or Path(f).parent == scratch for f in files)
    ports = {env[k] for k in ("RAY_SERVE_HAPROXY_STATS_PORT", "RAY_SERVE_HAPROXY_METRICS_PORT")}
    assert len(ports) == 2 and not ports & {"8404", "9101"}
    assert env["RAY_SERVE_DIRECT_INGRESS_MIN_DRAINING_PERIOD_S"] == str(ingress.DRAINING_SECONDS)


def test_a_scratch_directory_is_short_enough_for_haproxys_sockets() -> None:
    scratch = ingress.scratch_directory()
    try:
        assert scratch.is_dir() and len(str(scratch)) <= ingress.LONGEST_SCRATCH
        ingress.environment(ingress.HAPROXY, scratch)
    finally:
        scratch.rmdir()
    with pytest.raises(ValueError, match="at most 43 characters"):
        ingress.environment(ingress.HAPROXY, Path("/tmp/pytest-of-root/pytest-763/haproxy0/long"))


def test_an_unknown_ingress_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown ingress 'nginx': one of haproxy, proxy"):
        ingress.environment("nginx", Path("/tmp/x"))
