"""A reference model on OpenCL (PoCL) with and without the compiler's local sizes, in one process.

The model (bench/models.py's relay text, its weights bound) is built twice for opencl: as
`xrelay.build` builds it, where a kernel marked `relay.work_group_per_item` (winograd_conv,
packed_conv, packed_matmul_opencl) is launched in work groups of one work item, and with every
local size left to PoCL (which then runs a small NDRange as one work group, on one thread).
The same kernels otherwise. Both are run in one interleaved loop (`timing.interleaved_medians`)
and their medians printed with the load average; POCL_MAX_PTHREAD_COUNT sets PoCL's threads.

    POCL_DEVICES="pthread pthread" POCL_MAX_PTHREAD_COUNT=2 \\
        .venv/bin/python bench/opencl_local_size.py resnet [--rounds 60]
"""

from __future__ import annotations

import os

os.environ.setdefault("POCL_DEVICES", "pthread pthread")

import argparse
from typing import Any

from models import MODELS, random_inputs
from timing import interleaved_medians

import xrelay
import xrelay.targets.kernels as target_kernels


def build_without_local_sizes(text: str, params: dict[str, Any]) -> Any:
    """`text` built for opencl with no kernel given a local size."""
    given = target_kernels.local_size
    target_kernels.local_size = lambda kernel, target: None
    try:
        return xrelay.build(text, params=params, targets=("c", "opencl"), default_device="opencl")
    finally:
        target_kernels.local_size = given


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", choices=sorted(MODELS))
    parser.add_argument("--rounds", type=int, default=60)
    args = parser.parse_args()
    text = MODELS[args.model].text()
    params = random_inputs(text)
    x = params.pop("x")
    given = xrelay.build(text, params=params, targets=("c", "opencl"), default_device="opencl")
    left = build_without_local_sizes(text, params)
    marked = [k.name for k in given.kernels if k.local_size is not None]
    fns = {"local sizes": lambda: given.run(x), "no local sizes": lambda: left.run(x)}
    times = interleaved_medians(fns, args.rounds)
    threads = os.environ.get("POCL_MAX_PTHREAD_COUNT", "all cores")
    print(f"{args.model}: ms, medians of {args.rounds} interleaved rounds, PoCL on {threads} threads, "
          f"{len(marked)} kernel(s) with a local size; load average {os.getloadavg()[0]:.1f}")  # fmt: skip
    for name, seconds in times.items():
        print(f"  {name:<16} {seconds * 1e3:8.3f}")
    print(f"  ratio            {times['local sizes'] / times['no local sizes']:7.2f}x")


if __name__ == "__main__":
    main()
