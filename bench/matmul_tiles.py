"""GFLOP/s of packed_matmul's dense at the reference shapes, built natively and for AVX2
(`c -march=x86-64-v3`), against the FMA peak of each build's ISA measured in the same run.

Two steps, so that two checkouts (main and a branch) are timed interleaved in one process:

    .venv/bin/python bench/matmul_tiles.py build OUT           # this checkout's kernels, saved
    .venv/bin/python bench/matmul_tiles.py time LABEL=OUT ...  # load them all, time interleaved

`build` saves one executable per shape, weight binding and target under OUT (1 thread). `time`
prints the machine (CPU model; per target its ISA, vector width and registers, and the FMA
peak of a C probe built with the target's flags and timed in the same rounds as the kernels:
every register of the ISA's width but four an independent FMA chain), then per case the
median and best GFLOP/s of --rounds interleaved rounds, the best's share of the probe's best, and the FMAs of the kernel's hot loop (`gcc -S`
with the library's flags) whose operand is on the stack (`(%rsp)`: a spilled accumulator).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from timing import interleaved_times

import xrelay
from xrelay.runtime.c_library import C_BASE_FLAGS, c_flags
from xrelay.runtime.machine import host_name, target_features

TARGETS = ("c", "c -march=x86-64-v3")
# (name, m, k, n): dense x[m, k] . w[n, k]^T
SHAPES = (
    ("mlp 64x784.512x784", 64, 784, 512),
    ("mlp 64x512.512x512", 64, 512, 512),
    ("transformer 128x256.768x256", 128, 256, 768),
    ("transformer 128x256.1024x256", 128, 256, 1024),
    ("transformer 128x1024.256x1024", 128, 1024, 256),
    ("convnext 784x768.192x768", 784, 768, 192),
    ("vit 197x768.3072x768", 197, 768, 3072),
    ("vit 197x3072.768x3072", 197, 3072, 768),
    ("gpt2 64x768.2304x768", 64, 768, 2304),
    ("gpt2 64x3072.768x3072", 64, 3072, 768),
)
BINDINGS = ("prepacked", "packed")
CLOCK: list[Callable[[], float]] = [
    time.perf_counter
]  # time.thread_time with --cpu-time  # the weight bound as a param (pre-packed) or an input

PROBE = r"""
typedef float vec __attribute__((vector_size(LANES * 4)));
float probe(long steps, float scale) {
    vec m, c;
    for (int i = 0; i < LANES; i++) { m[i] = scale; c[i] = 1e-3f; }
    DECLARE
    for (long s = 0; s < steps; s++) {
        STEP
        __asm__ volatile("" : "+v"(m), "+v"(c));
    }
    vec all = c;
    SUM
    float total = 0;
    for (int i = 0; i < LANES; i++) total += all[i];
    return total;
}
"""
PROBE_STEPS = 1_000_000


def probe_source(chains: int) -> str:
    """PROBE with `chains` independent multiply-add chains, each in a variable of its own."""
    names = [f"a{j}" for j in range(chains)]
    return (
        PROBE.replace("DECLARE", " ".join(f"vec {a} = c * {j}.0f;" for j, a in enumerate(names)))
        .replace("STEP", " ".join(f"{a} = {a} * m + c;" for a in names))
        .replace("SUM", " ".join(f"all += {a};" for a in names))
    )


def fma_probe(target: str, directory: Path) -> tuple[Callable[[], object], int]:
    """A call of the FMA probe built for `target` (every vector register of its width but four
    holding an independent chain), and the floating-point operations of one call."""
    features = target_features(target)
    chains = features.vector_registers - 4
    source = directory / f"probe{len(list(directory.iterdir()))}.c"
    library = source.with_suffix(".so")
    source.write_text(probe_source(chains))
    flags = ["-O3", "-march=native", *c_flags(target), f"-DLANES={features.vector_floats}", "-fPIC", "-shared"]
    subprocess.run(["gcc", *flags, str(source), "-o", str(library)], check=True)
    function = ctypes.CDLL(str(library)).probe
    function.argtypes, function.restype = [ctypes.c_long, ctypes.c_float], ctypes.c_float
    return (lambda: function(PROBE_STEPS, 0.999)), 2 * chains * features.vector_floats * PROBE_STEPS


def dense_text(m: int, k: int, n: int) -> str:
    x, w, y = f"tensor<{m}x{k}xf32>", f"tensor<{n}x{k}xf32>", f"tensor<{m}x{n}xf32>"
    return (
        f"func.func @main(%x: {x}, %w: {w}) -> {y} {{\n"
        f"  %y = relay.nn.dense %x, %w : ({x}, {w}) -> {y}\n  func.return %y : {y}\n}}"
    )


def case_name(shape: str, binding: str, target: str) -> str:
    return f"{shape} {binding} [{target}]"


def build(out: Path, bindings: list[str], only: str | None) -> None:
    rng = np.random.default_rng(0)
    for shape, m, k, n in SHAPES:
        w = rng.standard_normal((n, k)).astype(np.float32)
        if only is not None and only not in shape:
            continue
        for binding in bindings:
            for target in TARGETS:
                params = {"w": w} if binding == "prepacked" else None
                exe = xrelay.build(dense_text(m, k, n), targets=(target,), params=params, num_threads=1)
                path = out / re.sub(r"\W+", "_", case_name(shape, binding, target)).strip("_")
                exe.save(path)
                (path / "case.json").write_text(json.dumps({"shape": shape, "binding": binding, "target": target}))
    print(f"saved under {out}")


def stack_fmas(kernel_dir: Path, target: str) -> tuple[int, int]:
    """(FMAs with a stack operand, FMAs) in the assembly of the kernels under `kernel_dir`."""
    spilled = total = 0
    flags = [f for f in C_BASE_FLAGS if f not in ("-shared", "-fPIC")]
    for source in sorted(kernel_dir.glob("*.c")):
        asm = subprocess.run(
            ["gcc", *flags, *c_flags(target), "-fopenmp", "-S", "-o", "-", str(source)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        fmas = [line for line in asm.splitlines() if re.search(r"\bvfn?madd\d+ps\b|\bmulps\b", line)]
        total += len(fmas)
        spilled += sum("(%rsp)" in line for line in fmas)
    return spilled, total


def time_cases(dirs: dict[str, Path], rounds: int) -> None:
    cases: dict[str, tuple[dict[str, str], xrelay.Executable, dict[str, np.ndarray], Path]] = {}
    rng = np.random.default_rng(1)
    for label, root in dirs.items():
        for path in sorted(p for p in root.iterdir() if (p / "case.json").exists()):
            case = json.loads((path / "case.json").read_text())
            _, m, k, n = next(s for s in SHAPES if s[0] == case["shape"])
            inputs = {"x": rng.standard_normal((m, k)).astype(np.float32)}
            if case["binding"] == "packed":
                inputs["w"] = rng.standard_normal((n, k)).astype(np.float32)
            cases[f"{label}: {case_name(case['shape'], case['binding'], case['target'])}"] = (
                case,
                xrelay.load(path),
                inputs,
                path,
            )
    print(f"machine: {host_name()}; load {Path('/proc/loadavg').read_text().split()[:3]}")
    fns: dict[str, Callable[[], object]] = {}
    flops: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for target in TARGETS:
            fns[f"FMA peak [{target}]"], flops[f"FMA peak [{target}]"] = fma_probe(target, Path(tmp))
        for name, (case, exe, inputs, _) in cases.items():
            _, m, k, n = next(s for s in SHAPES if s[0] == case["shape"])
            fns[name], flops[name] = (lambda exe=exe, inputs=inputs: exe.run(**inputs)), 2 * m * k * n
        times = interleaved_times(fns, rounds, clock=CLOCK[0])
    rates = {name: flops[name] / statistics.median(times[name]) / 1e9 for name in fns}
    best = {name: flops[name] / min(times[name]) / 1e9 for name in fns}
    for target in TARGETS:
        f = target_features(target)
        print(
            f"  [{target}] {f.isa}: {f.vector_floats} floats x {f.vector_registers} registers, "
            f"{'FMA' if f.fma else 'no FMA'}; FMA peak {best[f'FMA peak [{target}]']:.1f} GFLOP/s "
            f"(1 thread, the probe's best round; median {rates[f'FMA peak [{target}]']:.1f})"
        )
    print(f"\n{'case':<66} {'median':>7} {'best':>7} {'best/peak':>9} {'stack FMAs':>11}")
    for name, (case, _, _, path) in cases.items():
        spilled, total = stack_fmas(path / "kernels", case["target"])
        share = 100 * best[name] / best[f"FMA peak [{case['target']}]"]
        print(f"{name:<66} {rates[name]:7.1f} {best[name]:7.1f} {share:8.0f}% {spilled:>5}/{total:<5}")
    print(f"\n(medians of {rounds} interleaved rounds; load after: {Path('/proc/loadavg').read_text().split()[:3]})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    building = sub.add_parser("build")
    building.add_argument("out", type=Path)
    building.add_argument("--bindings", nargs="+", choices=BINDINGS, default=list(BINDINGS))
    building.add_argument("--only", help="only the shapes whose name contains this")
    timing = sub.add_parser("time")
    timing.add_argument("dirs", nargs="+", help="LABEL=DIR of a `build`")
    timing.add_argument("--rounds", type=int, default=30)
    timing.add_argument("--cpu-time", action="store_true", help="time the calling thread's CPU time, not wall time")
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    if args.command == "time" and args.cpu_time:
        CLOCK[0] = time.thread_time
    if args.command == "build":
        build(args.out, args.bindings, args.only)
    else:
        time_cases({d.split("=", 1)[0]: Path(d.split("=", 1)[1]) for d in args.dirs}, args.rounds)


if __name__ == "__main__":
    main()
