"""The kernels around a model's global pool in two builds of bench/zoo_ab.py, profiled in one
interleaved run: each build's last kernels (from its last conv on) with their per-node median
times, and their sum. Shows what fuse-conv-pool's global pool saves: the conv and the pool as
two kernels against one.

    .venv/bin/python bench/conv_pool_kernels.py before=OUT_MAIN after=OUT [--models mobilenet_v2] [--rounds 9]
"""

from __future__ import annotations

import os

os.environ.setdefault("XRELAY_NUM_THREADS", "1")

import argparse
import statistics
import sys
from collections.abc import Mapping
from pathlib import Path

import onnx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from zoo import random_inputs

import xrelay

ZOO = Path("/work/zoo-models")


def tail_medians(exe: xrelay.runtime.Executable, inputs: Mapping[str, object], runs: int) -> dict[str, float]:
    """Median seconds of each kernel from the last conv kernel on, by node name."""
    timings = [t for t in exe.profile(inputs, runs=runs).timings if t.step.kind == "kernel"]
    last_conv = max(i for i, t in enumerate(timings) if "conv2d" in t.step.name)
    return {t.step.name: t.median_seconds for t in timings[last_conv:]}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("dirs", nargs="+", help="LABEL=DIR of a zoo_ab.py build")
    parser.add_argument("--models", default="mobilenet_v2,efficientnet_b0,resnet50")
    parser.add_argument("--target", default="c")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    labels = dict(d.split("=", 1) for d in args.dirs)
    print(f"load {os.getloadavg()}")
    for model in args.models.split(","):
        inputs = random_inputs(onnx.load(str(ZOO / f"{model}.onnx")))
        exes = {label: xrelay.runtime.load(str(Path(d) / f"{model}__{args.target}")) for label, d in labels.items()}
        samples: dict[str, dict[str, list[float]]] = {label: {} for label in exes}
        for _ in range(args.rounds):
            for label, exe in exes.items():
                for name, seconds in tail_medians(exe, inputs, args.runs).items():
                    samples[label].setdefault(name, []).append(seconds)
        for label, kernels in samples.items():
            medians = {name: statistics.median(s) * 1e6 for name, s in kernels.items()}
            listed = ", ".join(f"{name} {us:.1f}" for name, us in medians.items())
            print(f"{model} {label}: total {sum(medians.values()):.1f} us: {listed}")
    print(f"load {os.getloadavg()}")


if __name__ == "__main__":
    main()
