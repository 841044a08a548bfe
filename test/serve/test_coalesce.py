"""Coalescer: batches that wait while one runs are joined into the next run, in order, up to
the max rows; a failing run fails its own batches only. Plain asyncio, no Ray."""

from __future__ import annotations

import asyncio

import pytest

from xrelay.serve.coalesce import Coalescer


class Recorder:
    """A run that takes `seconds`, records the items of each run, and fails on item < 0."""

    def __init__(self, seconds: float = 0.02):
        self.seconds, self.runs = seconds, list[list[int]]()

    async def __call__(self, items: list[int]) -> list[int]:
        self.runs.append(items)
        await asyncio.sleep(self.seconds)
        if any(i < 0 for i in items):
            raise ValueError(f"bad item in {items}")
        return [10 * i for i in items]


def test_batches_waiting_during_a_run_are_joined_in_order_up_to_the_max_rows() -> None:
    async def scenario() -> tuple[Recorder, list[list[int]]]:
        record = Recorder()
        coalescer = Coalescer[int, int](record, size=lambda i: i, max_rows=6)
        first = asyncio.ensure_future(coalescer([1]))
        await asyncio.sleep(0.005)  # the first run is under way: these wait
        rest = [asyncio.ensure_future(coalescer(b)) for b in ([2], [1, 1], [3], [5], [1])]
        return record, [await first, *[await r for r in rest]]

    record, results = asyncio.run(scenario())
    assert results == [[10], [20], [10, 10], [30], [50], [10]]
    assert record.runs == [[1], [2, 1, 1], [3], [5, 1]]  # 4 rows, then 3 (+5 > 6), then 6


def test_a_failing_run_fails_its_own_batches_only() -> None:
    async def scenario() -> list[object]:
        coalescer = Coalescer[int, int](Recorder(), size=lambda i: 1, max_rows=2)
        first = asyncio.ensure_future(coalescer([1]))
        await asyncio.sleep(0.005)
        rest = [asyncio.ensure_future(coalescer(b)) for b in ([2], [-1], [3])]
        return list(await asyncio.gather(first, *rest, return_exceptions=True))

    first, two, bad, three = asyncio.run(scenario())
    assert first == [10] and three == [30]
    assert isinstance(two, ValueError) and isinstance(bad, ValueError)  # [2, -1] ran together


def test_a_lone_batch_runs_at_once() -> None:
    async def scenario() -> list[int]:
        return await Coalescer[int, int](Recorder(0.0), size=lambda i: 1, max_rows=1)([7])

    assert asyncio.run(scenario()) == [70]
    with pytest.raises(ValueError, match="bad item"):
        asyncio.run(Coalescer[int, int](Recorder(0.0), size=lambda i: 1, max_rows=1)([-7]))
