"""The timing helper the benchmarks share (imported by them; running it does nothing)."""

import statistics
import time
from collections.abc import Callable


def median_seconds(fn: Callable[[], object], runs: int, warmup: bool = True) -> float:
    """The median wall time of `runs` calls of `fn`, after one untimed call when `warmup`."""
    if warmup:
        fn()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)
