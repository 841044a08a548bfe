"""The timing helpers the benchmarks share (imported by them; running it does nothing)."""

import random
import statistics
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence


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


def round_orders(names: Sequence[str], rounds: int) -> Iterator[list[str]]:
    """`names` in a new order for each of `rounds` rounds, shuffled with a fixed seed (the same
    orders every run), so that each follows every other about as often. A call's time depends
    on what ran just before it (what that left in the caches, the threads of a pool it left
    asleep or still spinning): in an order only rotated each round, the same one came before
    it in most rounds (bench/models.py's C build after numpy, PoCL after the C build,
    onnxruntime after PoCL)."""
    orders = random.Random(0)
    for _ in range(rounds):
        order = list(names)
        orders.shuffle(order)
        yield order


def interleaved_times(
    fns: Mapping[str, Callable[[], object]],
    rounds: int,
    warmup: bool = True,
    clock: Callable[[], float] = time.perf_counter,
    self_timed: Collection[str] = (),
) -> dict[str, list[float]]:
    """Each of `fns`' wall times in `rounds` rounds that call every one of them once, in a
    shuffled order (`round_orders`), after one untimed call each (with `warmup`). A slow
    spell of a shared machine then falls on all of them alike, so their ratios hold even when
    the absolute times swing. `clock` may be `time.thread_time` instead: the calling thread's
    CPU time, which leaves out the time the OS gave other processes (single-threaded engines
    that compute in the calling thread only). The fns named in `self_timed` return their own
    time in seconds instead: work done in another process, whose round trip to it is no part of
    the engine's time."""
    if warmup:
        for fn in fns.values():
            fn()
    times: dict[str, list[float]] = {name: [] for name in fns}
    for order in round_orders(list(fns), rounds):
        for name in order:
            start = clock()
            result = fns[name]()
            elapsed = clock() - start
            times[name].append(float(result) if name in self_timed else elapsed)  # type: ignore[arg-type]
    return times


def interleaved_medians(
    fns: Mapping[str, Callable[[], object]], rounds: int, warmup: bool = True, self_timed: Collection[str] = ()
) -> dict[str, float]:
    """The median of each of `fns`' `interleaved_times`."""
    samples = interleaved_times(fns, rounds, warmup, self_timed=self_timed)
    return {name: statistics.median(times) for name, times in samples.items()}
