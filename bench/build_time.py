"""Build time and peak memory of real-sized models: xrelay's cold and warm build against
onnxruntime's `InferenceSession` creation and OpenVINO's `compile_model`, on the same .onnx
files, in one run (issue 29).

Each measurement is a fresh Python process (`--child`), so its peak RSS (`ru_maxrss`) is its
own: it imports what it needs, then times, from the file on disk,
- xrelay: `xrelay.from_onnx(path)` and `xrelay.build(module, targets=("c",), params=params)`,
  cold (an empty `XDG_CACHE_HOME`: no kernel or build cache) and then warm (the same cache
  again). The compiler is imported before the clock starts (as `import onnxruntime` is).
- onnxruntime: `InferenceSession(path)`; OpenVINO: `Core().compile_model(path, "CPU")`.
The goal columns check the issue's goals: cold (from_onnx + build) <= 10 s, warm (the build;
from_onnx is printed beside it) <= 1 s, peak RSS of the cold build <= 2 x the weights + 300 MB. `--scaling` also builds a 10- and a 40-layer stack of the same block (BERT's
layer at hidden 256), cold: the ratio of their times should be at most 4.5 (linear: 4).

The machine is shared: the 1-minute load average is printed before and after; compare
ratios measured in one run, not times across runs.

    make bench-setup && .venv/bin/python bench/build_time.py [--models DIR] [--zoo resnet50,bert_base,convnext_tiny] [--scaling]

One run (2026-11-28, AMD EPYC, 2 cores shared, load 3.7-4.6), from_onnx + cold build / warm
build / onnxruntime / OpenVINO, seconds, and cold peak RSS: zoo ResNet-50 0.40 + 14.06 / 0.43 /
0.51 / 0.96, 396 MB; BERT-base 1.25 + 7.80 / 1.20 / 0.74 / 1.48, 1194 MB (goal 980);
ConvNeXt-tiny 0.47 + 6.19 / 0.39 / 0.28 / 0.96, 443 MB; torch-exported ResNet-50 0.33 + 7.48 /
0.29 / 0.32 / 0.42; DenseNet-121 0.21 + 30.35 / 0.24 / 0.24 / 0.73 (its kernels all differ);
10 vs 40 BERT layers 2.50 vs 4.34 s (1.74). Interleaved with main (ResNet-50 cold, 2 rounds,
load 4.5): 20.2, 16.9 s -> 8.1, 7.7 s; CPU 17.1 -> 8.4 s.
BERT-base after issue 29's memory work, interleaved against the build before it (3 rounds of
fresh processes, load 1.35-1.8): cold build 3.05 -> 1.89 s, warm 0.63 -> 0.38 s, peak RSS
cold 1194 -> 838 MB (goal 980), warm 1111 -> 771 MB (from_onnx's peak: file and params).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ZOO = ("resnet50", "bert_base", "convnext_tiny")
COLD_GOAL, WARM_GOAL, MEMORY_SLACK = 10.0, 1.0, 300e6
CHILD = """
import json, resource, sys, time
kind, path = sys.argv[1], sys.argv[2]
result = {}
if kind == "xrelay":
    import xrelay, xrelay.driver, xrelay.frontend.onnx_import
    start = time.perf_counter()
    module, params = xrelay.from_onnx(path)
    result["import_s"] = time.perf_counter() - start
    start = time.perf_counter()
    xrelay.build(module, targets=("c",), params=params)
    result["build_s"] = time.perf_counter() - start
    result["weights"] = sum(p.nbytes for p in params.values())
elif kind == "onnxruntime":
    import onnxruntime
    start = time.perf_counter()
    onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    result["build_s"] = time.perf_counter() - start
else:
    import openvino
    start = time.perf_counter()
    openvino.Core().compile_model(path, "CPU")
    result["build_s"] = time.perf_counter() - start
self_, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
result["cpu_s"] = self_.ru_utime + self_.ru_stime + children.ru_utime + children.ru_stime
# VmHWM: this process image's own peak (ru_maxrss keeps the forking parent's across exec)
hwm = [l for l in open("/proc/self/status") if l.startswith("VmHWM:")]
result["peak_rss"] = int(hwm[0].split()[1]) * 1024 if hwm else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps(result))
"""


def measure(kind: str, path: Path, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """One measurement in a fresh process; {"error": ...} when it fails."""
    run = subprocess.run(
        [sys.executable, "-c", CHILD, kind, str(path)],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=1800,
        check=False,
    )
    if run.returncode != 0:
        return {"error": (run.stderr.strip().splitlines() or ["failed"])[-1]}
    return json.loads(run.stdout.strip().splitlines()[-1])


def xrelay_cold_warm(path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """A cold build in an empty cache, then a warm one in the same cache."""
    with tempfile.TemporaryDirectory(prefix="xrelay-build-time-") as cache:
        env = {"XDG_CACHE_HOME": cache, "XRELAY_BUILD_CACHE": "1"}
        return measure("xrelay", path, env), measure("xrelay", path, env)


def has(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def write_zoo(names: Sequence[str], folder: Path, sizes: Mapping[str, Mapping[str, Any]] | None = None) -> list[Path]:
    """bench/onnx_zoo.py's models as .onnx files in `folder`."""
    import onnx

    sys.path.insert(0, str(Path(__file__).parent))
    import onnx_zoo

    paths = []
    for name in names:
        path = folder / f"{name}.onnx"
        model = onnx_zoo.MODELS[name.split("@")[0]].at(**(sizes or {}).get(name, {}))
        onnx.save(model.onnx(), str(path))
        paths.append(path)
    return paths


def seconds(result: Mapping[str, Any], key: str = "build_s") -> str:
    return f"{result[key]:7.2f}" if key in result else f"{'-':>7}"


def cpu(result: Mapping[str, Any]) -> str:
    return f"{result['cpu_s']:6.1f}" if "cpu_s" in result else f"{'-':>6}"


def megabytes(result: Mapping[str, Any]) -> str:
    return f"{result['peak_rss'] / 1e6:6.0f}" if "peak_rss" in result else f"{'-':>6}"


def row(path: Path, results: Mapping[str, Mapping[str, Any]]) -> str:
    cold, warm = results["cold"], results["warm"]
    weights = cold.get("weights", 0)
    goals = []
    if "build_s" in cold:
        goals.append("cold ok" if cold["import_s"] + cold["build_s"] <= COLD_GOAL else "cold SLOW")
    if "build_s" in warm:  # (the build itself: from_onnx parses the file again, as onnxruntime does)
        goals.append("warm ok" if warm["build_s"] <= WARM_GOAL else "warm SLOW")
    if "peak_rss" in cold:
        goals.append("memory ok" if cold["peak_rss"] <= 2 * weights + MEMORY_SLACK else "memory HIGH")
    cells = [
        f"{path.stem:<16}{weights / 1e6:8.0f}",
        *(f"{seconds(r, 'import_s')} {seconds(r)} {cpu(r)} {megabytes(r)}" for r in (cold, warm)),
        *(f"{seconds(results[k])} {cpu(results[k])} {megabytes(results[k])}" for k in ("onnxruntime", "openvino")),
        ", ".join(goals),
    ]
    errors = [f"{k}: {r['error']}" for k, r in results.items() if "error" in r]
    return " | ".join(cells) + "".join(f"\n    {e}" for e in errors)


# Per measurement: wall seconds of from_onnx ("import") and of the build, the process's CPU
# seconds (its gcc processes' too: on a busy machine, what the wall time would be alone on
# one core), and its peak RSS in MB.
HEADER = (
    f"{'model':<16}{'weights':>8} | {'xrelay cold: import build cpu MB':>32} | {'xrelay warm: import build cpu MB':>32} | "
    f"{'onnxruntime: s cpu MB':>21} | {'OpenVINO: s cpu MB':>21} | goals"
)


def compare(paths: Sequence[Path]) -> None:
    print(HEADER)
    for path in paths:
        cold, warm = xrelay_cold_warm(path)
        results = {"cold": cold, "warm": warm}
        for kind in ("onnxruntime", "openvino"):
            results[kind] = measure(kind, path) if has(kind) else {"error": f"{kind} is not installed"}
        print(row(path, results), flush=True)


def scaling(folder: Path) -> None:
    """Cold builds of a 10- and a 40-layer stack of BERT's layer (hidden 256, seq 128)."""
    names = ["bert@10", "bert@40"]
    sizes = {"bert@10": {"layers": 10}, "bert@40": {"layers": 40}}
    times = {}
    for path in write_zoo(names, folder, sizes):
        cold = xrelay_cold_warm(path)[0]
        times[path.stem] = cold.get("import_s", 0) + cold.get("build_s", float("nan"))
        print(f"{path.stem}: cold import + build {times[path.stem]:.2f} s  {cold.get('error', '')}", flush=True)
    ratio = times["bert@40"] / times["bert@10"]
    print(f"40 / 10 layers: {ratio:.2f} (goal <= 4.5) {'ok' if ratio <= 4.5 else 'SUPERLINEAR'}")


def machine() -> str:
    model = "unknown cpu"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{platform.machine()} {model}, {os.cpu_count()} cores, Python {platform.python_version()}"


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3]) if Path("/proc/loadavg").exists() else "?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", type=Path, help="a directory of .onnx files (instead of the zoo's)")
    parser.add_argument("--zoo", default=",".join(ZOO), help="bench/onnx_zoo.py models (default: %(default)s)")
    parser.add_argument("--scaling", action="store_true", help="also a 10- and a 40-layer stack, cold")
    args = parser.parse_args()
    print(f"machine: {machine()}; load average before: {load()}")
    with tempfile.TemporaryDirectory(prefix="xrelay-zoo-") as folder:
        if args.models is not None:
            paths = sorted(args.models.glob("*.onnx"))
        else:
            paths = write_zoo([n for n in args.zoo.split(",") if n], Path(folder))
        compare(paths)
        if args.scaling:
            scaling(Path(folder))
    print(f"load average after: {load()}")


if __name__ == "__main__":
    main()
