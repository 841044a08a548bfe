"""
Running an executable built for several batch sizes (`xrelay.build(..., batch_sizes=...)`).

    runner = BatchedGraphs({1: ex1, 4: ex4, 16: ex16})   # a GraphExecutor per batch size
    outputs = runner.run({"x": x})                        # x of any batch n >= 1

Every input and result of the graphs has the batch on its leading axis (the compiler
checked). A batch of n runs at the smallest size >= n, its inputs padded with zeros and its
results sliced back to n; a batch larger than the largest size runs in pieces of the largest
size, the tail at the smallest size that fits it, and the results are concatenated. The
graphs share the devices, the built kernels and the params (`GraphExecutor`'s
`param_buffers`), so each size costs its activations only. Each graph's executor is safe to
call from several threads at once, and so is this.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from xrelay.errors import InputError
from xrelay.runtime.executor import GraphExecutor
from xrelay.runtime.profiling import Profile


@dataclass(frozen=True)
class Piece:
    """Samples [start, start + count) of a batch, run at batch size `size` (>= count)."""

    start: int
    count: int
    size: int


def pieces(n: int, sizes: tuple[int, ...]) -> list[Piece]:
    """How a batch of `n` runs at `sizes` (sorted): pieces of the largest, then the tail at the
    smallest size that fits it."""
    largest = sizes[-1]
    full, tail = divmod(n, largest)
    out = [Piece(i * largest, largest, largest) for i in range(full)]
    if tail:
        out.append(Piece(full * largest, tail, sizes[bisect.bisect_left(sizes, tail)]))
    return out


class BatchedGraphs:
    """One graph executor per batch size; runs any batch (see the module docstring)."""

    def __init__(self, executors: Mapping[int, GraphExecutor]):
        self.sizes = tuple(sorted(executors))
        self.executors = dict(executors)
        self.largest = self.executors[self.sizes[-1]]

    def run(self, inputs: Mapping[str, Any]) -> list[np.ndarray]:
        arrays, n = self.check_inputs(inputs)
        results = [self._run_piece(arrays, piece) for piece in pieces(n, self.sizes)]
        if len(results) == 1:
            return results[0]
        return [np.concatenate(parts) for parts in zip(*results)]

    def profile(self, inputs: Mapping[str, Any], runs: int = 1) -> Profile:
        """Profiles the graph of the size a batch of n runs at (n at most the largest size:
        a profile times one graph); its outputs sliced back to n."""
        arrays, n = self.check_inputs(inputs)
        if n > self.sizes[-1]:
            raise InputError(
                f"profile takes a batch of at most {self.sizes[-1]} (the largest batch size, one graph), "
                f"but was given {n}; profile a piece of it"
            )
        (piece,) = pieces(n, self.sizes)
        profile = self.executors[piece.size].profile(self._padded(arrays, piece), runs)
        profile.outputs = [out[: piece.count] for out in profile.outputs]
        return profile

    def _run_piece(self, arrays: Mapping[str, np.ndarray], piece: Piece) -> list[np.ndarray]:
        outputs = self.executors[piece.size].run(self._padded(arrays, piece))
        return outputs if piece.count == piece.size else [out[: piece.count] for out in outputs]

    @staticmethod
    def _padded(arrays: Mapping[str, np.ndarray], piece: Piece) -> dict[str, np.ndarray]:
        """The piece's samples of each input, padded with zeros to the piece's size."""
        padded: dict[str, np.ndarray] = {}
        for name, array in arrays.items():
            rows = array[piece.start : piece.start + piece.count]
            if piece.count < piece.size:
                rows = np.concatenate([rows, np.zeros((piece.size - piece.count, *array.shape[1:]), array.dtype)])
            padded[name] = rows
        return padded

    def check_inputs(self, inputs: Mapping[str, Any]) -> tuple[dict[str, np.ndarray], int]:
        """The inputs as arrays, after checking their names, per-sample shapes and dtypes, and
        their batch n (one for all, at least 1)."""
        ex = self.largest
        if inputs.keys() != ex.inputs.keys():
            ex.check_inputs(inputs)  # raises the executor's error, naming what is missing or unknown
        arrays = {name: self._checked(name, index, inputs[name]) for name, index in ex.inputs.items()}
        batches = {name: array.shape[0] for name, array in arrays.items()}
        if len(set(batches.values())) > 1:
            raise InputError(
                "the inputs must have one batch size (their leading dim), but have "
                + ", ".join(f"{name} {n}" for name, n in batches.items())
            )
        n = next(iter(batches.values()))
        if n < 1:
            raise InputError("the inputs have batch 0; run takes a batch of at least 1 (the leading dim)")
        return arrays, n

    def _checked(self, name: str, index: int, value: Any) -> np.ndarray:
        entry, array = self.largest.entries[index], np.asarray(value)
        if array.ndim != len(entry.shape) or array.shape[1:] != entry.shape[1:]:
            expected = ["N", *entry.shape[1:]]
            raise InputError(
                f"input {name} must have shape [{', '.join(map(str, expected))}] (a batch of any N >= 1), "
                f"but has shape {list(array.shape)}"
            )
        if array.dtype != entry.dtype:
            raise InputError(
                f"input {name} must have dtype {entry.dtype}, but has dtype {array.dtype}; "
                f"convert it with .astype(np.{entry.dtype})"
            )
        return array
