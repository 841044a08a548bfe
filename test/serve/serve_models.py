"""The model the serving tests deploy: a small MLP saved twice, built for batch sizes
(1, 4, 16) and for its static batch 1, with the interpreter's answer per sample."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import xrelay

SIZES = (1, 4, 16)
RNG = np.random.default_rng(31)
TEST_KEY = "xrelay test key"
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # a test cluster reports nothing anywhere


@dataclass(frozen=True)
class Saved:
    """The two artifacts of the MLP, and a reference for any of its inputs."""

    batched: Path
    static: Path
    module: object
    params: dict[str, np.ndarray]

    def expected(self, x: np.ndarray) -> np.ndarray:
        """`xrelay.interpret` on each sample of `x` alone, stacked."""
        return np.concatenate(
            [np.asarray(xrelay.interpret(self.module, {"x": x[i : i + 1], **self.params})) for i in range(len(x))]  # pyright: ignore[reportArgumentType]
        )


def random_array(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def inputs(n: int) -> np.ndarray:
    return RNG.standard_normal((n, 32)).astype(np.float32)


def listener(port: int) -> str | None:
    """The name of the process that listens on TCP `port` of this machine (from /proc), if any."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:  # (0A: LISTEN)
                inodes.add(f"socket:[{fields[9]}]")
    for fd in Path("/proc").glob("[0-9]*/fd/*"):
        try:
            if os.readlink(fd) in inodes:
                return (fd.parent.parent / "comm").read_text().strip()
        except OSError:  # (a process that ended, or another user's)
            continue
    return None
