"""Where the time of the exported models goes: each model of /work/zoo-models (or --dir) built
for each target, its kernels profiled (`exe.profile()`), the top ones listed with their
schedule and GFLOP/s, and the whole model timed against onnxruntime in one interleaved run.

Everything at one thread: onnxruntime with `intra_op_num_threads=1`, xrelay with
`num_threads=1`. The targets are the native build (`c`: AVX-512 here) and `c
-march=x86-64-v3` (AVX2, what most users' machines run). The ratio column is xrelay's median
over onnxruntime's in the same interleaved rounds (`timing.interleaved_medians`); the load
average is printed before and after, so compare ratios, not times.

A kernel's flops: a conv2d's 2 x outputs x its weight's (in_c / groups) x kh x kw, a dense's
or matmul's 2 x outputs x the depth; other kernels show none.

    .venv/bin/python bench/zoo_ops.py [--models squeezenet1_1,resnet50] [--top 8] [--rounds 10]
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "XRELAY_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
os.environ.setdefault("OMP_WAIT_POLICY", "passive")
# The schedules are recorded as the kernels are lowered: a build read from the build cache
# lowers none (every schedule was "?").
os.environ["XRELAY_BUILD_CACHE"] = "0"

import argparse
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from timing import interleaved_medians
from zoo import random_inputs

import xrelay
from xrelay.runtime.profiling import NodeTiming
from xrelay.transforms import convert_relay_to_loops as lowering

MODELS = (
    "squeezenet1_1",
    "resnet18",
    "resnet50",
    "mobilenet_v2",
    "efficientnet_b0",
    "shufflenet_v2",
    "densenet121",
    "regnet_y_400mf",
    "convnext_tiny",
    "mobilenet_v3_large",
    "vit_b_16",
    "gpt2",
    "bert_base",
    "distilbert",
)
TARGETS = ("c", "c -march=x86-64-v3")

# kernel name -> schedule name, recorded as convert-relay-to-loops builds each kernel (of
# the build under way: names repeat across builds)
SCHEDULES: dict[str, str] = {}
_build_kernel = lowering.build_kernel


def _recording_build_kernel(group: Any, schedule: Any) -> Any:
    kernel = _build_kernel(group, schedule)
    SCHEDULES[kernel.sym_name.data] = schedule.name
    return kernel


lowering.build_kernel = _recording_build_kernel


def flops(timing: NodeTiming) -> int:
    """The multiply-adds x 2 of a conv2d or dense/matmul kernel, else 0 (see the docstring)."""
    step, name = timing.step, timing.step.name
    outputs = math.prod(step.shape)
    if "conv2d" in name and (weight := conv_weight(step.input_shapes, step.shape)) is not None:
        return 2 * outputs * math.prod(weight[1:])
    matrices = [shape for shape in step.input_shapes if len(shape) >= 2]  # not a bias
    if ("dense" in name or "matmul" in name) and matrices:
        return 2 * outputs * matrices[0][-1]
    return 0


def conv_weight(inputs: Sequence[Sequence[int]], output: Sequence[int]) -> Sequence[int] | None:
    """The weight among a conv kernel's inputs: 4-D, with the output's channels first, and not a
    tensor of the output's shape (a residual fused after the conv may come before the data)."""
    for shape in inputs[1:]:
        if len(shape) == 4 and len(output) == 4 and shape[0] == output[1] and tuple(shape) != tuple(output):
            return shape
    return None


def first(outputs: Any) -> Any:
    """The first result of a run (a model with several outputs gives a tuple)."""
    return outputs[0] if isinstance(outputs, tuple) else outputs


def ort_session(path: Path) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def top_kernels(
    exe: Any, schedules: dict[str, str], x: dict[str, np.ndarray], top: int, runs: int
) -> tuple[float, list[str]]:
    """The profiled run's median total (s) and a line per kernel of the `top` slowest."""
    profile = exe.profile(x, runs=runs)
    total = sum(t.median_seconds for t in profile.timings)
    lines: list[str] = [f"  by schedule: {by_schedule(profile.timings, schedules, total)}"]
    for t in sorted(profile.timings, key=lambda t: -t.median_seconds)[:top]:
        gflops = flops(t) / t.median_seconds / 1e9 if flops(t) else 0.0
        rate = f"{gflops:6.1f} GF/s" if gflops else " " * 11
        schedule = schedules.get(t.step.name, "?")
        share = 100 * t.median_seconds / total
        lines.append(
            f"  {t.median_seconds * 1e3:7.2f} ms {share:4.1f}% {rate} {schedule:<26} {t.step.name[:44]:<44} "
            f"{t.step.input_shapes[:2]} -> {t.step.shape}"
        )
    return total, lines


def by_schedule(timings: list[NodeTiming], schedules: dict[str, str], total: float) -> str:
    """Each schedule's share of the kernels' time (and GFLOP/s where its kernels have flops), largest first."""
    seconds: dict[str, float] = {}
    work: dict[str, int] = {}
    for t in timings:
        name = schedules.get(t.step.name, "?")
        seconds[name] = seconds.get(name, 0.0) + t.median_seconds
        work[name] = work.get(name, 0) + flops(t)
    parts = []
    for name, s in sorted(seconds.items(), key=lambda item: -item[1]):
        rate = f" {work[name] / s / 1e9:.0f} GF/s" if work[name] else ""
        parts.append(f"{name} {100 * s / total:.0f}%{rate}")
    return ", ".join(parts)


def measure(path: Path, targets: tuple[str, ...], top: int, rounds: int) -> str:
    import onnx

    proto = onnx.load(str(path))
    x = random_inputs(proto)  # the model's inputs by name (token ids and masks for transformers)
    session = ort_session(path)
    ref = session.run(None, x)[0]
    exes: dict[str, Any] = {}
    schedules: dict[str, dict[str, str]] = {}
    for target in targets:
        module, params = xrelay.from_onnx(proto)
        SCHEDULES.clear()
        exes[target] = xrelay.build(module, targets=(target,), params=params, num_threads=1)
        schedules[target] = dict(SCHEDULES)
    report = [f"== {path.stem}"]
    for target, exe in exes.items():
        out = np.asarray(first(exe.run(x)))
        diff = float(np.max(np.abs(out - ref)) / np.max(np.abs(ref)))
        total, lines = top_kernels(exe, schedules[target], x, top, runs=3)
        report.append(f" {target}: kernels {total * 1e3:.2f} ms, max diff / max ref {diff:.1e}")
        report += lines
    fns: dict[str, Any] = {"ort": lambda: session.run(None, x)}
    fns.update({t: (lambda exe=exe: exe.run(x)) for t, exe in exes.items()})
    medians = interleaved_medians(fns, rounds)
    ratios = ", ".join(f"{t} {medians[t] * 1e3:.2f} ms = {medians[t] / medians['ort']:.2f}x" for t in targets)
    report.append(f" ORT {medians['ort'] * 1e3:.2f} ms; {ratios}")
    return "\n".join(report)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--dir", type=Path, default=Path("/work/zoo-models"))
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--targets", default=",".join(TARGETS))
    parser.add_argument("--top", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    targets = tuple(args.targets.split(","))
    for name in args.models.split(","):
        print(f"load {os.getloadavg()[0]:.1f}", flush=True)
        try:
            print(measure(args.dir / f"{name}.onnx", targets, args.top, args.rounds), flush=True)
        except Exception as error:  # a model that does not import or build here: say so, go on
            print(f"== {name}: {type(error).__name__}: {str(error)[:300]}", flush=True)
    print(f"load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
