"""`python -m xrelay.serve`: its checks before anything starts (the artifact's signature,
the options), and whole runs in a subprocess, on its own cluster and on a running one: it
serves, answers, and stops on SIGTERM."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from serve_models import Saved, free_port, inputs, listener

import xrelay.runtime
from xrelay.errors import ArtifactError, UsageError
from xrelay.serve.client import infer

serve = pytest.importorskip("ray.serve", reason="Ray Serve is the optional extra 'serve' (pip install -e '.[serve]')")

from xrelay.serve.__main__ import main, make_plan, parse_args


def test_the_max_batch_defaults_to_the_largest_batch_size(saved: Saved) -> None:
    assert make_plan(parse_args([str(saved.batched)])).max_batch_size == 16
    assert make_plan(parse_args([str(saved.batched), "--max-batch-size", "4"])).max_batch_size == 4
    assert make_plan(parse_args([str(saved.static)])).max_batch_size == 1


def test_a_static_artifact_takes_no_batches(saved: Saved) -> None:
    with pytest.raises(UsageError, match="is 1 for an artifact built without batch_sizes.*but is 4"):
        make_plan(parse_args([str(saved.static), "--max-batch-size", "4"]))
    with pytest.raises(UsageError, match="--replicas must be at least 1, but is 0"):
        make_plan(parse_args([str(saved.batched), "--replicas", "0"]))


def test_the_ingress_is_chosen_for_a_cluster_the_command_starts_only(saved: Saved) -> None:
    assert make_plan(parse_args([str(saved.batched), "--ingress", "proxy"])).replicas == 1
    with pytest.raises(UsageError, match="--address keeps.*RAY_SERVE_ENABLE_HA_PROXY=1 .* ray start --head"):
        make_plan(parse_args([str(saved.batched), "--address", "auto", "--ingress", "haproxy"]))


def test_an_artifact_signed_elsewhere_needs_trust(
    saved: Saved, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    other = tmp_path / "other.xrelay"
    with monkeypatch.context() as patch:
        patch.setenv("XRELAY_ARTIFACT_KEY", "another user's key")
        xrelay.runtime.load(saved.batched, trust=True).save(other)
    with pytest.raises(ArtifactError, match=r"not signed with this user's key.*\(here: --trust\)"):
        make_plan(parse_args([str(other)]))
    assert main([str(other), "--port", str(free_port())]) == 1  # before any cluster starts
    assert "error: " in capsys.readouterr().err
    assert make_plan(parse_args([str(other), "--trust"])).model.batch_sizes == (1, 4, 16)


def test_the_cli_serves_on_a_running_cluster_until_sigterm_and_leaves_it_running(
    saved: Saved, cluster: tuple[str, int]
) -> None:
    """`--address`: the CLI deploys its application on the session's cluster (whose Serve
    listens on `port` already), and on SIGTERM deletes that application only."""
    address, port = cluster
    stderr = _serve_answer_and_stop(saved, port, ["--address", address])
    assert "shutting down" in stderr
    assert "xrelay" not in serve.status().applications
    assert serve.status().proxies, "the cluster's Serve stopped with the CLI"


def test_the_cli_starts_a_cluster_behind_haproxy_and_stops_all_of_it_on_sigterm(saved: Saved) -> None:
    """Without `--address`: HAProxy listens on the port and answers through the replica, and
    SIGTERM stops the cluster with it (nothing listens on the port afterwards)."""
    port = free_port()
    _serve_answer_and_stop(saved, port, [], lambda: listener(port) == "haproxy")
    assert listener(port) is None


def _serve_answer_and_stop(
    saved: Saved, port: int, options: list[str], check: Callable[[], bool] = lambda: True
) -> str:
    """Runs `python -m xrelay.serve` on the batched artifact at `port` until it serves, checks
    `check()` and one answer against the interpreter, sends SIGTERM and expects exit 0; its stderr."""
    command = [sys.executable, "-m", "xrelay.serve", str(saved.batched), "--port", str(port), *options]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env) as server:
        try:
            line = _line_within(server, 120.0)
            assert line.startswith(f"serving {saved.batched} at http://127.0.0.1:{port}/"), line
            assert check()
            x = inputs(3)
            out = infer(f"http://127.0.0.1:{port}/", x=x)["output_0"]
            np.testing.assert_allclose(out, saved.expected(x), rtol=1e-4, atol=1e-6)
            server.send_signal(signal.SIGTERM)
            assert server.wait(timeout=60) == 0
        finally:
            if server.poll() is None:
                server.kill()
        return server.stderr.read() if server.stderr else ""


def _line_within(server: subprocess.Popen[str], seconds: float) -> str:
    """The server's first line on stdout, or a failure with its stderr after `seconds`."""
    assert server.stdout is not None
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and server.poll() is None:
        ready, _, _ = select.select([server.stdout], [], [], 1.0)
        if ready:
            return server.stdout.readline()
    server.kill()
    pytest.fail(f"no 'serving' line within {seconds} s: {server.stderr.read() if server.stderr else ''}")
