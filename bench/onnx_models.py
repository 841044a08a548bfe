"""Six ONNX models (bench/onnx_zoo.py) through `xrelay.from_onnx`, built for cpu and split
across cpu and OpenCL by placement rules, checked against and timed against onnxruntime.

For each model: `xrelay.from_onnx(model)` (the import time is the median of 3 calls after
one that is not timed: a process's first call imports xrelay's compiler), `xrelay.build` for
targets c (the cpu build) and, from `from_onnx(model, placement=rules)`, for targets c and
opencl with default device cpu (the split build: the rules put a part of the model on
opencl:0 and the rest on the host; bench/onnx_zoo.py says why most end with `"*": "cpu"`; the
rules and the kernels per device are printed). Both outputs must equal
onnxruntime's with rtol 1e-4 and atol = 1e-5 * max |onnxruntime's output|: float32 results
summed in another order differ by a few ULP of the terms, which is relative to the output's
scale, not to each element (an element near zero, a softmax tail or a logit that crosses
zero, has no meaningful relative error); the table prints the largest difference over that
scale, so the margin shows.

Latency is one thread everywhere: onnxruntime with `intra_op_num_threads=1` (and
`inter_op_num_threads=1`, no spinning), xrelay with `num_threads=1`, PoCL's pthread devices
with POCL_MAX_PTHREAD_COUNT=1 (set here before anything starts). The three are timed in one
interleaved run (`timing.interleaved_medians`: each round calls each once) and the medians
are printed, with the 1-minute load average before and after: on a shared machine compare
the ratios, not the times.

Build times are those of a run after the first unless `--cold` is given: xrelay keeps the C
libraries it compiled in `~/.cache/xrelay`, and PoCL its kernels in its own cache, so a
second build of the same model skips gcc and PoCL's compiler. `--cold` gives xrelay an
empty cache directory and turns PoCL's kernel cache off (POCL_KERNEL_CACHE=0).

    make bench-setup && .venv/bin/python bench/onnx_models.py [--rounds 20] [--models mlp,bert] [--tiny] [--cold]
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "XRELAY_NUM_THREADS", "OPENBLAS_NUM_THREADS", "POCL_MAX_PTHREAD_COUNT"):
    os.environ.setdefault(_var, "1")
os.environ.setdefault("OMP_WAIT_POLICY", "passive")
os.environ.setdefault("POCL_DEVICES", "pthread pthread")

import argparse
import dataclasses
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import onnx_zoo
from timing import interleaved_medians, median_seconds

import xrelay

RTOL = 1e-4
ATOL_SCALE = 1e-5  # atol = ATOL_SCALE * max |reference|


def ort_session(model: Any) -> Any:
    """An onnxruntime session on one thread that does not spin between calls."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def scaled_difference(out: Any, ref: np.ndarray) -> float:
    """max |out - ref| / max |ref| (inf for a wrong shape); within tolerance below ATOL_SCALE."""
    out = np.asarray(out)
    if out.shape != ref.shape:
        return float("inf")
    return float(np.max(np.abs(out - ref)) / max(float(np.max(np.abs(ref))), np.finfo(np.float32).tiny))


def matches(out: Any, ref: np.ndarray) -> bool:
    out = np.asarray(out)
    atol = ATOL_SCALE * float(np.max(np.abs(ref)))
    return out.shape == ref.shape and bool(np.allclose(out, ref, rtol=RTOL, atol=atol))


def device_summary(exe: Any) -> str:
    """Kernels per device and copies, e.g. `opencl:0 4 kernels, cpu:0 6 kernels, 2 copies`."""
    rows = exe.placement()
    kernels = Counter(device for _, device in rows if "->" not in device)
    copies = sum(1 for _, device in rows if "->" in device)
    return ", ".join(f"{device} {n} kernels" for device, n in kernels.items()) + f", {copies} copies"


@dataclasses.dataclass
class Measured:
    label: str
    import_s: float
    build_cpu_s: float
    build_split_s: float
    split: str  # the device summary of the split build
    differences: dict[str, float]  # scaled differences to onnxruntime, cpu and split
    ok: bool
    ms: dict[str, float]


def measure(model: onnx_zoo.Model, rounds: int) -> Measured:
    """Imports, builds, checks and times `model`."""
    proto = model.onnx()
    inputs = onnx_zoo.random_inputs(proto)
    session = ort_session(proto)
    ref = session.run(None, inputs)[0]

    # after one untimed call: the first from_onnx of a process imports xrelay's compiler (seconds)
    import_s = median_seconds(lambda: xrelay.from_onnx(proto), runs=3)
    module, params = xrelay.from_onnx(proto)
    start = time.perf_counter()
    exe_cpu = xrelay.build(module, targets=("c",), params=params, num_threads=1)
    build_cpu_s = time.perf_counter() - start

    split_module, split_params = xrelay.from_onnx(proto, placement=dict(model.placement))
    start = time.perf_counter()
    exe_split = xrelay.build(
        split_module, targets=("c", "opencl"), default_device="cpu", params=split_params, num_threads=1
    )
    build_split_s = time.perf_counter() - start

    outputs = {"cpu": exe_cpu.run(inputs), "split": exe_split.run(inputs)}
    differences = {name: scaled_difference(out, ref) for name, out in outputs.items()}
    ok = all(matches(out, ref) for out in outputs.values())
    fns = {
        "ort": lambda: session.run(None, inputs),
        "cpu": lambda: exe_cpu.run(inputs),
        "split": lambda: exe_split.run(inputs),
    }
    ms = {name: s * 1e3 for name, s in interleaved_medians(fns, rounds).items()}
    split = device_summary(exe_split)
    return Measured(model.label, import_s, build_cpu_s, build_split_s, split, differences, ok, ms)


def table(results: dict[str, Measured]) -> str:
    lines = [
        "| model | import s | build cpu s | build split s | onnxruntime ms | xrelay cpu ms | xrelay split ms "
        "| cpu / ORT | split / ORT | max diff / max ref (cpu, split) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in results.values():
        ms = r.ms
        cells = [
            r.label, f"{r.import_s:.2f}", f"{r.build_cpu_s:.1f}", f"{r.build_split_s:.1f}",
            f"{ms['ort']:.2f}", f"{ms['cpu']:.2f}", f"{ms['split']:.2f}",
            f"{ms['cpu'] / ms['ort']:.2f}x", f"{ms['split'] / ms['ort']:.2f}x",
            ", ".join(f"{d:.1e}" for d in r.differences.values()) + ("" if r.ok else " MISMATCH"),
        ]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=20, help="interleaved rounds (medians are reported)")
    parser.add_argument("--models", default=",".join(onnx_zoo.MODELS), help="comma-separated model names")
    parser.add_argument("--tiny", action="store_true", help="the models at the tests' tiny sizes (a smoke run)")
    parser.add_argument("--cold", action="store_true", help="build with xrelay's and PoCL's kernel caches empty")
    args = parser.parse_args()
    names = args.models.split(",")
    unknown = [n for n in names if n not in onnx_zoo.MODELS]
    if unknown:
        parser.error(f"unknown models {unknown}; choose from {list(onnx_zoo.MODELS)}")
    try:
        import onnxruntime
    except ImportError:
        sys.exit("onnxruntime is not installed: `make bench-setup` installs it")

    # read when xrelay builds its first library and PoCL makes its first context; removed at exit
    cold = tempfile.TemporaryDirectory(prefix="xrelay-cold-") if args.cold else None
    if cold is not None:
        os.environ.update(XDG_CACHE_HOME=cold.name, POCL_KERNEL_CACHE="0")
    print(f"onnxruntime {onnxruntime.__version__}, one thread each; {args.rounds} interleaved rounds, medians; "
          f"POCL_DEVICES={os.environ['POCL_DEVICES']!r}, {os.cpu_count()} cores; "
          f"{'cold' if args.cold else 'warm'} kernel caches", flush=True)  # fmt: skip
    load = [os.getloadavg()[0]]
    results: dict[str, Measured] = {}
    errors: dict[str, str] = {}  # a model that fails to import, build or run: the others still run
    for name in names:
        model = onnx_zoo.MODELS[name].tiny() if args.tiny else onnx_zoo.MODELS[name]
        rules = ", ".join(f"{glob!r}: {scope!r}" for glob, scope in model.placement.items())
        try:
            r = results[name] = measure(model, args.rounds)
        except Exception as e:  # reported below, and in the exit status
            errors[name] = f"{type(e).__name__}: {e}"
            print(f"  {name:<12} FAILED: {errors[name]}", flush=True)
            continue
        print(f"  {name:<12} split by {{{rules}}}: {r.split}; {'ok' if r.ok else 'MISMATCH'}", flush=True)
    load.append(os.getloadavg()[0])
    print()
    print(table(results))
    print(f"\nrtol {RTOL}, atol {ATOL_SCALE} * max |onnxruntime's output|; "
          f"load average {load[0]:.1f} to {load[1]:.1f} on {os.cpu_count()} cores")  # fmt: skip
    failed = [f"{name} (does not match onnxruntime)" for name, r in results.items() if not r.ok]
    failed += [f"{name} ({error})" for name, error in errors.items()]
    if failed:
        sys.exit(f"failed: {'; '.join(failed)}")


if __name__ == "__main__":
    main()
