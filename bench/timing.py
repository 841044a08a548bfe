"""The timing helpers the benchmarks share (imported by them; running it does nothing)."""

import statistics
import time
from collections.abc import Callable, Mapping


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


def interleaved_medians(fns: Mapping[str, Callable[[], object]], rounds: int, warmup: bool = True) -> dict[str, float]:
    """The median wall time of each of `fns`, measured in `rounds` rounds that call every one
    of them once, in an order rotated by one each round. A slow spell of a shared machine then
    falls on all of them alike, so their ratios hold even when the absolute times swing."""
    names = list(fns)
    if warmup:
        for name in names:
            fns[name]()
    times: dict[str, list[float]] = {name: [] for name in names}
    for round_ in range(rounds):
        shift = round_ % len(names) if names else 0
        for name in names[shift:] + names[:shift]:
            start = time.perf_counter()
            fns[name]()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(samples) for name, samples in times.items()}
