"""Which kernels of a zoo model gain from a second thread: the model built at num_threads=1
and 2, each node profiled (`exe.profile()`) in interleaved rounds, medians printed per
node with the 2-thread build's count of `omp parallel` regions in its kernel (0: the nest
stays on one thread, by `targets.c.parallel_work`: below the target's `Features.min_parallel_work()`, or one iteration)
and the work items its first region shares (`work_items`: ResNet-50's 256 -> 256 winograd_conv
at 14 x 14 is 7, 4 + 3 on two threads).

Read with the load average it prints: on the 2 shared cores here, with other processes
runnable, a region's closing barrier waits until the woken thread is scheduled, and kernels
that do gain alone show 2t/1t above 1 (s38: mobilenet_v2's first conv 196 -> 3698 us at load
9.5, while a nest of one iteration, ResNet-18's 7x7 convs before packed_conv's channel parts,
shows regions=0 at any load).

    .venv/bin/python bench/zoo_threads.py resnet18 [--rounds 9] [--top 14]
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "passive")

import argparse
import re
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from zoo import DEFAULT_DIR, random_inputs

import xrelay


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("model")
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--top", type=int, default=14)
    args = parser.parse_args()
    import onnx

    proto = onnx.load(str(args.dir / f"{args.model}.onnx"))
    inputs = random_inputs(proto)
    module, params = xrelay.from_onnx(proto)
    exes = {t: xrelay.build(module, targets=("c",), params=params, num_threads=t) for t in (1, 2)}
    regions = {k.name: k.source.count("omp parallel") for k in exes[2].kernels}
    items = {k.name: work_items(k.source) for k in exes[2].kernels}
    samples: dict[int, dict[str, list[float]]] = {1: {}, 2: {}}
    load = os.getloadavg()[0]
    for _ in range(args.rounds):
        for threads, exe in exes.items():
            for name, _device, seconds in exe.profile(inputs).nodes:
                samples[threads].setdefault(name, []).append(seconds)
    med = {t: {n: statistics.median(v) * 1e6 for n, v in nodes.items()} for t, nodes in samples.items()}
    print(
        f"{args.model}: medians of {args.rounds} interleaved profiled runs, load {load:.1f} -> {os.getloadavg()[0]:.1f}"
    )
    print(f"sum of nodes: 1 thread {sum(med[1].values()):.0f} us, 2 threads {sum(med[2].values()):.0f} us")
    print("| kernel | 1 thread us | 2 threads us | 2t/1t | regions | work items |")
    print("| --- | ---: | ---: | ---: | ---: | --- |")
    for name in sorted(med[1], key=lambda n: -med[1][n])[: args.top]:
        one, two = med[1][name], med[2][name]
        shared = " x ".join(map(str, items.get(name, []))) or "-"
        print(f"| {name} | {one:.0f} | {two:.0f} | {two / one:.2f} | {regions.get(name, '-')} | {shared} |")


def work_items(source: str) -> list[int]:
    """The trip counts of the loops a kernel's first `omp for` shares among the threads (its
    `collapse(k)` loops; an odd product, or one below a few per thread, leaves a thread idle
    at the end), or [] where it has none or a bound is not a constant."""
    match = re.search(r"#pragma omp for [^\n]*?(?:collapse\((\d+)\))?\n", source)
    if match is None:
        return []
    loops = re.findall(r"for \(long \w+ = 0; \w+ < (\w+); \w+\+\+\)", source[match.end() :])
    shared = loops[: int(match.group(1) or 1)]
    return [int(b) for b in shared] if all(b.isdigit() for b in shared) else []


if __name__ == "__main__":
    main()
