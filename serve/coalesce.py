"""Batches that wait while another runs are joined into the next run.

Ray Serve 2.60's `@serve.batch` forms a batch as soon as its wait is over, before a slot to run
it is free (its `max_concurrent_batches` semaphore is taken inside the task that runs the
batch): with one batch at a time, the requests arriving during a run form many small batches
that then run one after another. A replica runs at most one batch at a time anyway (one run
thread), so it lets `@serve.batch` hand over every batch it forms at once and joins those that
wait here into one run of up to `max_rows` rows. Plain asyncio: no Ray.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")


class Coalescer(Generic[Item, Result]):
    """`await coalescer(items)` runs `items` with the others waiting, one run at a time.

    `run` takes a list of items and returns one result per item, in order; `size` is an item's
    rows. A run takes the waiting batches in arrival order while their rows fit in `max_rows`
    (always at least one batch). An exception of a run is raised to the batches of that run only."""

    def __init__(
        self, run: Callable[[list[Item]], Awaitable[Sequence[Result]]], size: Callable[[Item], int], max_rows: int
    ):
        self.run, self.size, self.max_rows = run, size, max_rows
        self.waiting: list[tuple[list[Item], asyncio.Future[list[Result]]]] = []
        self.drain: asyncio.Task[None] | None = None
        self.runs = 0

    async def __call__(self, items: list[Item]) -> list[Result]:
        future: asyncio.Future[list[Result]] = asyncio.get_running_loop().create_future()
        self.waiting.append((items, future))
        if self.drain is None or self.drain.done():  # (a task of its own: this caller returns when its run is done)
            self.drain = asyncio.get_running_loop().create_task(self._drain())
        return await future

    async def _drain(self) -> None:
        """Runs the waiting batches until none is left (the caller's among them)."""
        while self.waiting:
            taken = [self.waiting.pop(0)]
            rows = sum(self.size(item) for item in taken[0][0])
            while self.waiting and rows + (more := sum(self.size(i) for i in self.waiting[0][0])) <= self.max_rows:
                taken.append(self.waiting.pop(0))
                rows += more
            self.runs += 1
            try:
                results = list(await self.run([item for items, _ in taken for item in items]))
            except Exception as error:
                for _, future in taken:
                    if not future.done():
                        future.set_exception(error)
                continue
            start = 0
            for items, future in taken:
                if not future.done():  # (a cancelled request)
                    future.set_result(results[start : start + len(items)])
                start += len(items)
