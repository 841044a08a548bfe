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
