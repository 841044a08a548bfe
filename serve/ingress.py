"""How HTTP requests reach the replicas of a Ray cluster that `python -m xrelay.serve` starts:
through HAProxy straight to each replica (the default), or through Ray Serve's Python proxy.

Serve's default ingress is a proxy actor, a Python HTTP server that hands every request to a
replica as a Ray actor call; on a small machine that hop costs more CPU than a small model's
run. Ray Serve 2.60 can run HAProxy on the port instead (`RAY_SERVE_ENABLE_HA_PROXY`;
`ray[serve]` ships the binary on Linux), which passes each request to an HTTP server inside
the replica (Serve's "direct ingress"); `RAY_SERVE_THROUGHPUT_OPTIMIZED` also handles the
replica's requests on its one event loop. README's serving section has the load test's numbers
for both.

Serve reads these settings when each of the cluster's processes starts, so they are put in this
process's environment before `ray.init` starts the cluster, whose processes inherit them. A
cluster joined with `--address` keeps the ingress it was started with (README: how to start one
with HAProxy).
"""

from __future__ import annotations

import os
import socket
import tempfile
from pathlib import Path

HAPROXY, PROXY = "haproxy", "proxy"
INGRESSES = (HAPROXY, PROXY)
# What selects HAProxy, for a cluster started by hand (`ray start`) as for one started here.
HAPROXY_SETTINGS = {"RAY_SERVE_ENABLE_HA_PROXY": "1", "RAY_SERVE_THROUGHPUT_OPTIMIZED": "1"}
# HAProxy takes a socket path of at most 97 characters, and Serve puts its sockets in a
# subdirectory of 40 characters under the one it is given.
LONGEST_SCRATCH = 97 - 41 - len("/metrics.sock")
# Seconds a deleted application's replicas keep answering while HAProxy stops sending to them
# (Serve's default of 30 would hold up every Ctrl-C and every redeploy by as much).
DRAINING_SECONDS = 2


def environment(ingress: str, scratch: Path) -> dict[str, str]:
    """The environment variables that give a cluster started now `ingress` (one of INGRESSES).

    HAProxy's files go to `scratch` (a directory of this cluster's own, of a short path: see
    `scratch_directory`) and its stats and metrics listen on free ports: Serve's defaults
    (/tmp/haproxy-serve, ports 8404 and 9101) would be shared by two clusters on one machine,
    such as a server and the tests."""
    if ingress == PROXY:
        return {}
    if ingress != HAPROXY:
        raise ValueError(f"unknown ingress {ingress!r}: one of {', '.join(INGRESSES)}")
    if len(str(scratch)) > LONGEST_SCRATCH:
        raise ValueError(f"{scratch}: HAProxy's sockets need a directory of at most {LONGEST_SCRATCH} characters")
    return {
        **HAPROXY_SETTINGS,
        "RAY_SERVE_HAPROXY_CONFIG_FILE_LOC": str(scratch / "haproxy.cfg"),
        "RAY_SERVE_HAPROXY_SOCKET_PATH": str(scratch / "admin.sock"),
        "RAY_SERVE_HAPROXY_SERVER_STATE_BASE": str(scratch),
        "RAY_SERVE_HAPROXY_SERVER_STATE_FILE": str(scratch / "server-state"),
        "RAY_SERVE_HAPROXY_METRICS_SOCKET_PATH": str(scratch / "metrics.sock"),
        "RAY_SERVE_HAPROXY_STATS_PORT": str(free_port()),
        "RAY_SERVE_HAPROXY_METRICS_PORT": str(free_port()),
        "RAY_SERVE_DIRECT_INGRESS_MIN_DRAINING_PERIOD_S": str(DRAINING_SECONDS),
    }


def scratch_directory() -> Path:
    """A new directory for HAProxy's files, in /tmp (TMPDIR may be too long a path)."""
    return Path(tempfile.mkdtemp(prefix="xrelay-serve-", dir="/tmp"))


def current() -> str:
    """The ingress this process's cluster was started with (a replica asks: it inherited the
    cluster's environment)."""
    return HAPROXY if os.environ.get("RAY_SERVE_ENABLE_HA_PROXY") == "1" else PROXY


def free_port() -> int:
    """A TCP port no process listens on now."""
    with socket.socket() as s:
        s.bind(("", 0))
        return int(s.getsockname()[1])
