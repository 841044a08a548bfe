"""
Running an executable built for several batch sizes (`xrelay.build(..., batch_sizes=...)`).

    runner = BatchedGraphs({1: ex1, 4: ex4, 16: ex16})   # a GraphExecutor per batch size
    outputs = runner.run({"x": x})                        # x of any batch n >= 1

Every input and result of the graphs has the batch on its leading axis (the compiler
checked). A batch runs in pieces, each at one of the sizes (its inputs padded with zeros to
the size, its results sliced back), and the results are concatenated. Until every size has
run, a batch of n runs at the smallest size >= n (a larger one in pieces of the largest size,
the tail at the smallest size that fits it: `pieces`). Then it runs as the pieces whose sizes'
recent run times sum least (`fastest_pieces`): where a batch gains little per sample (as
ResNet-18 at 1 thread did: 14.8 ms a sample at 16, 15.4 at 1) a batch of 7 runs as 4 + 2 + 1
rather than padded to 8, and where it gains much (an MLP: 4x faster per sample at 16) it is
still padded. A size that has not run yet is counted at the best time per sample seen, so it
is tried and then known; its first run is not counted (it touches its activations for the
first time: ResNet-18's sizes 4 and 8 took 21.7 and 24.4 ms a sample so, 12.9 after, and
once known at that time were never run again). The graphs share the devices, the built kernels and the params (`GraphExecutor`'s
`param_buffers`), so each size costs its activations only. Each graph's executor is safe to
call from several threads at once, and so is this.
"""

from __future__ import annotations

import bisect
import statistics
import time
from collections import deque
from collections.abc import Mapping, Sequence
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


RECENT_TIMES = 9  # the run times kept per size; a size's time is their median
REPLAN_EVERY = 32  # runs between two plannings


def fastest_plans(most: int, seconds: Mapping[int, float]) -> list[list[Piece]]:
    """For each batch n from 0 to `most`, the pieces whose sizes' `seconds` (a run's time at
    each size) sum least (of equal sums, the fewest pieces); the larger sizes first, the last
    one padded. One table for all n: each n's best is a size and the best of the rows left."""
    sizes = sorted(seconds)
    best: list[tuple[float, tuple[int, ...]]] = [(0.0, ())]  # rows left -> (time, sizes to run)
    for left in range(1, most + 1):
        options = [(seconds[s] + best[max(0, left - s)][0], (s, *best[max(0, left - s)][1])) for s in sizes]
        best.append(min(options, key=lambda option: (option[0], len(option[1]))))  # (a tie: fewer runs)
    return [_laid_out(n, chosen) for n, (_, chosen) in enumerate(best)]


def fastest_pieces(n: int, seconds: Mapping[int, float]) -> list[Piece]:
    """`fastest_plans`'s pieces of a batch of `n`."""
    return fastest_plans(n, seconds)[n]


def _laid_out(n: int, sizes: Sequence[int]) -> list[Piece]:
    """Pieces of the `sizes` (summing to n or more) over a batch of n, the larger first."""
    out: list[Piece] = []
    for size in sorted(sizes, reverse=True):
        start = sum(p.count for p in out)
        out.append(Piece(start, min(size, n - start), size))
    return out


def estimated(sizes: Sequence[int], recent: Mapping[int, Sequence[float]]) -> dict[int, float] | None:
    """Each size's run time: the median of its recent ones, or (not run yet) its rows at the
    least time per row of those that ran; None until one has run."""
    known = {s: statistics.median(recent[s]) for s in sizes if recent.get(s)}
    if not known:
        return None
    per_row = min(t / s for s, t in known.items())
    return {s: known.get(s, s * per_row) for s in sizes}


class BatchedGraphs:
    """One graph executor per batch size; runs any batch (see the module docstring)."""

    def __init__(self, executors: Mapping[int, GraphExecutor]):
        self.sizes = tuple(sorted(executors))
        self.executors = dict(executors)
        self.largest = self.executors[self.sizes[-1]]
        self.recent: dict[int, deque[float]] = {s: deque(maxlen=RECENT_TIMES) for s in self.sizes}
        self._plans: list[list[Piece]] | None = None  # by batch, 0 to the largest size (None: padded)
        self._runs = 0  # runs since the plans were made
        self._warm: set[int] = set()  # the sizes that have run once (their next runs are timed)

    def plan(self, n: int) -> list[Piece]:
        """How a batch of `n` runs now (see the module docstring): beyond the largest size, in
        pieces of it and the tail as planned. The plans are made again from the run times after
        REPLAN_EVERY runs, or when a size runs for the first time (the planning costs as much as
        a small model's run: 100 us for n up to 16 of 4 sizes)."""
        if self._runs >= REPLAN_EVERY or self._plans is None and any(self.recent.values()):
            self._runs, seconds = 0, estimated(self.sizes, self.recent)
            self._plans = fastest_plans(self.sizes[-1], seconds) if seconds is not None else None
        plans, largest = self._plans, self.sizes[-1]
        if plans is None:
            return pieces(n, self.sizes)
        full, tail = divmod(n, largest)
        return [Piece(i * largest, largest, largest) for i in range(full)] + [
            Piece(full * largest + p.start, p.count, p.size) for p in plans[tail]
        ]

    def run(self, inputs: Mapping[str, Any]) -> list[np.ndarray]:
        arrays, n = self.check_inputs(inputs)
        results = [self._run_piece(arrays, piece) for piece in self.plan(n)]
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
        start = time.perf_counter()
        outputs = self.executors[piece.size].run(self._padded(arrays, piece))
        recent = self.recent[piece.size]
        if piece.size not in self._warm:  # (its first run: not timed, see the module docstring)
            self._warm.add(piece.size)
            self._runs += 1
        else:
            recent.append(time.perf_counter() - start)
            self._runs += 1 if len(recent) > 1 else REPLAN_EVERY  # (a size's first time: plan again)
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
