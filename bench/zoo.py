"""The zoo (ONNX files torch.onnx.export wrote: bench/zoo_export.py) through xrelay, against
onnxruntime: for each model, `xrelay.from_onnx` (a model that does not import is a row naming
the op or input it stopped at, not a crash), `xrelay.build` for targets c, the outputs checked
against onnxruntime's (rtol 1e-3, atol 1e-4), and both timed at one thread in one interleaved
run (`timing.interleaved_medians`), medians printed in one table under the machine
(bench/models.py's `machine_lines`) and the load average.

`--threads 1,2` times each model at each thread count (xrelay's `num_threads`, onnxruntime's
intra-op threads), one table row per count. `--split` also builds each model across cpu and
OpenCL (the second half of its nodes on OpenCL, by placement rules at import) and checks it
against onnxruntime (checked, not timed: PoCL is not a device to race). `--rss` measures the
peak memory of a run in a process of its own for each engine: the artifact loaded with
`xrelay.runtime` (no compiler) and run once, against an onnxruntime session made from the file
and run once; the growth of the peak resident set (VmHWM) over the process after its imports.

OpenVINO, when installed (the `bench` extra), is timed in the same interleaved rounds, in a
process of its own (`OpenVinoWorker`, which reports its own time per run) so that its oneDNN can
be held to the ISA level of xrelay's target with `ONEDNN_MAX_CPU_ISA`: with `--target "c
-march=x86-64-v3"` both engines run AVX2 code, the comparison an AVX2 machine would show
(onnxruntime's MLAS has no such switch and runs its AVX-512 code whatever the target).

Inputs are seeded: float inputs standard normal, `input_ids` random tokens below 1000 (every
zoo vocabulary is larger), `attention_mask` ones with the last quarter zero (padding), other
integer inputs zeros.

    .venv/bin/pip install -e '.[bench,zoo]' && .venv/bin/python bench/zoo_export.py
    .venv/bin/python bench/zoo.py [--dir /work/zoo-models] [--models resnet18,gpt2] [--rounds 5] [--json out.json]
        [--target "c -march=x86-64-v3"] [--threads 1,2] [--split] [--rss]
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "XRELAY_NUM_THREADS", "OPENBLAS_NUM_THREADS", "POCL_MAX_PTHREAD_COUNT"):
    os.environ.setdefault(_var, "1")
os.environ.setdefault("OMP_WAIT_POLICY", "passive")

import argparse
import dataclasses
import gc
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from models import machine_info, machine_lines, ort_session
from timing import interleaved_medians

import xrelay
from xrelay.runtime.machine import target_features

RTOL, ATOL = 1e-3, 1e-4
DEFAULT_DIR = Path("/work/zoo-models")


@dataclasses.dataclass
class Row:
    """One model's results; the times are None where it did not get that far."""

    model: str
    threads: int = 1
    imports: bool = False
    failure: str = ""  # the op (or input, or stage) it stopped at
    detail: str = ""  # the error's message
    build_s: float | None = None
    xrelay_ms: float | None = None
    ort_ms: float | None = None
    openvino_ms: float | None = None  # OpenVINO held to the target's ISA level
    openvino_diff: float | None = None  # its largest difference from onnxruntime's outputs
    max_diff: float | None = None
    matches: bool | None = None
    split_matches: bool | None = None  # across cpu and OpenCL (--split)
    xrelay_mb: float | None = None  # a run's peak memory in a process of its own (--rss)
    ort_mb: float | None = None
    load: tuple[float, float] = (0.0, 0.0)

    @property
    def ratio(self) -> float | None:
        return None if self.xrelay_ms is None or not self.ort_ms else self.xrelay_ms / self.ort_ms

    @property
    def openvino_ratio(self) -> float | None:
        return None if self.xrelay_ms is None or not self.openvino_ms else self.xrelay_ms / self.openvino_ms


# oneDNN's name (ONEDNN_MAX_CPU_ISA) for the highest ISA of each x86-64 level, for fp32 work.
ONEDNN_ISA = {"x86-64-v4": "AVX512_CORE", "x86-64-v3": "AVX2", "x86-64-v2": "SSE41"}


class OpenVinoWorker:
    """An OpenVINO compiled model in a child process (`_openvino_child`), its oneDNN held to the
    ISA level of an xrelay C target. `run()` runs it once and answers the child's own time."""

    def __init__(self, path: Path, threads: int, target: str, outputs: str) -> None:
        env = dict(os.environ)
        isa = ONEDNN_ISA.get(target_features(target).isa)
        if isa is not None:
            env["ONEDNN_MAX_CPU_ISA"] = isa
        command = [sys.executable, __file__, "--openvino-child", str(path), str(threads), outputs]
        self.child = subprocess.Popen(command, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self._answer()  # the child has compiled the model and written its outputs

    def run(self) -> float:
        assert self.child.stdin is not None
        self.child.stdin.write("run\n")
        self.child.stdin.flush()
        return float(self._answer())

    def close(self) -> None:
        assert self.child.stdin is not None
        self.child.stdin.close()
        self.child.wait(timeout=60)

    def _answer(self) -> str:
        assert self.child.stdout is not None
        line = self.child.stdout.readline()
        if not line:
            raise RuntimeError(f"the OpenVINO child stopped (exit code {self.child.wait()})")
        return line.strip()


def openvino_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("openvino") is not None


def _openvino_child(path: str, threads: str, outputs: str) -> None:
    """Compiles `path` with OpenVINO at `threads` threads, fp32, one stream; writes its outputs on
    the seeded inputs to `outputs` (.npz), then times one run per line read from stdin."""
    import onnx
    import openvino as ov

    config = {"INFERENCE_NUM_THREADS": int(threads), "INFERENCE_PRECISION_HINT": "f32", "NUM_STREAMS": 1}
    compiled = ov.Core().compile_model(path, "CPU", config)
    request = compiled.create_infer_request()
    inputs = random_inputs(onnx.load(path))
    results = request.infer(inputs)
    np.savez(outputs, *[np.asarray(results[output]) for output in compiled.outputs])
    print("ready", flush=True)
    for _ in sys.stdin:
        start = time.perf_counter()
        request.infer(inputs)
        print(time.perf_counter() - start, flush=True)


def random_inputs(proto: Any, seed: int = 0) -> dict[str, np.ndarray]:
    """Seeded inputs for the graph's inputs (see the module docstring)."""
    from onnx import helper

    rng = np.random.default_rng(seed)
    initializers = {t.name for t in proto.graph.initializer}
    inputs: dict[str, np.ndarray] = {}
    for info in proto.graph.input:
        if info.name in initializers:
            continue
        ty = info.type.tensor_type
        shape = [d.dim_value if d.HasField("dim_value") else 1 for d in ty.shape.dim]
        dtype = helper.tensor_dtype_to_np_dtype(ty.elem_type)
        if dtype.kind == "f":
            inputs[info.name] = rng.standard_normal(shape).astype(dtype)
        elif info.name == "input_ids":
            inputs[info.name] = rng.integers(0, 1000, shape).astype(dtype)
        elif info.name == "attention_mask":
            mask = np.ones(shape, dtype)
            mask[..., shape[-1] - shape[-1] // 4 :] = 0
            inputs[info.name] = mask
        else:
            inputs[info.name] = np.zeros(shape, dtype)
    return inputs


def failing_op(error: Exception) -> str:
    """What an import stopped at: the node's op type, or the input or value the message names."""
    message = str(error)
    node = re.match(r"ONNX node (\w+)", message)
    if node:
        return node.group(1)
    value = re.match(r"(input|value) '([^']+)' is of element type (\w+)", message)
    if value:
        return f"{value.group(3)} {value.group(1)} {value.group(2)}"
    return type(error).__name__


def measure(path: Path, rounds: int, target: str = "c", threads: int = 1) -> Row:
    """Imports, builds, checks and times one model; stops at the first stage that fails."""
    import onnx

    row = Row(path.stem, threads)
    load_before = os.getloadavg()[0]
    proto = onnx.load(str(path))
    inputs = random_inputs(proto)
    session = ort_session(proto, threads, spin=False)
    want = session.run(None, inputs)
    try:
        module, params = xrelay.from_onnx(proto)
    except Exception as e:  # a row of the table: which op, and why
        row.failure, row.detail = failing_op(e), f"{type(e).__name__}: {e}"
        return row
    row.imports = True
    try:
        start = time.perf_counter()
        exe = xrelay.build(module, targets=(target,), params=params, num_threads=threads)
        row.build_s = time.perf_counter() - start
        got = exe.run(inputs)
    except Exception as e:  # a model that imports but does not build or run: also a row
        row.failure, row.detail = "build/run", f"{type(e).__name__}: {e}"
        return row
    row.max_diff, row.matches = compare(got, want)
    fns: dict[str, Any] = {"xrelay": lambda: exe.run(inputs), "ort": lambda: session.run(None, inputs)}
    with tempfile.TemporaryDirectory() as tmp:
        openvino = OpenVinoWorker(path, threads, target, f"{tmp}/out.npz") if openvino_installed() else None
        if openvino is not None:
            fns["openvino"] = openvino.run
            row.openvino_diff = compare(tuple(np.load(f"{tmp}/out.npz").values()), want)[0]
        medians = interleaved_medians(fns, rounds, self_timed={"openvino"})
        if openvino is not None:
            openvino.close()
            row.openvino_ms = medians["openvino"] * 1e3
    row.xrelay_ms, row.ort_ms = medians["xrelay"] * 1e3, medians["ort"] * 1e3
    row.load = (load_before, os.getloadavg()[0])
    return row


def compare(got: Any, want: list[np.ndarray]) -> tuple[float, bool]:
    """The largest difference from onnxruntime's outputs, and whether all are within tolerance."""
    outputs = list(got) if isinstance(got, tuple) else [got]
    diff = max(float(np.max(np.abs(np.asarray(g) - w))) for g, w in zip(outputs, want))
    close = all(
        np.asarray(g).shape == w.shape and bool(np.allclose(g, w, rtol=RTOL, atol=ATOL)) for g, w in zip(outputs, want)
    )
    return diff, close


def split_matches(path: Path, target: str) -> bool:
    """Whether the model built across cpu and OpenCL (its nodes' second half on OpenCL, by
    placement rules naming them) matches onnxruntime."""
    import onnx

    proto = onnx.load(str(path))
    inputs = random_inputs(proto)
    want = ort_session(proto, 1, spin=False).run(None, inputs)
    names = [node.name for node in proto.graph.node if node.name]
    placement = dict.fromkeys((glob_escape(n) for n in names[len(names) // 2 :]), "opencl")
    module, params = xrelay.from_onnx(proto, placement=placement)
    exe = xrelay.build(module, targets=(target, "opencl"), default_device="cpu", params=params, num_threads=1)
    return compare(exe.run(inputs), want)[1]


def glob_escape(name: str) -> str:
    """`name` as a placement rule that matches it alone (rules are fnmatch globs)."""
    return re.sub(r"([*?\[])", r"[\1]", name)


def peak_memory(path: Path, target: str) -> tuple[float, float]:
    """A run's peak memory in MB for xrelay (a saved artifact, loaded by the runtime alone) and
    for onnxruntime, each in a process of its own (`_peak_memory_child`)."""
    import onnx

    proto = onnx.load(str(path))
    module, params = xrelay.from_onnx(proto)
    exe = xrelay.build(module, targets=(target,), params=params, num_threads=1)
    with tempfile.TemporaryDirectory() as tmp:
        np.savez(f"{tmp}/inputs.npz", **random_inputs(proto))
        exe.save(f"{tmp}/model.xrelay")
        del exe, module, params, proto
        gc.collect()
        return tuple(_child_peak(engine, path, tmp) for engine in ("xrelay", "ort"))  # type: ignore[return-value]


def _child_peak(engine: str, path: Path, tmp: str) -> float:
    command = [sys.executable, __file__, "--peak-memory-child", engine, str(path), tmp]
    return float(subprocess.run(command, check=True, capture_output=True, text=True).stdout.split()[-1])


def _peak_memory_child(engine: str, path: str, tmp: str) -> None:
    """Prints the growth of this process's peak resident set over a load and one run."""
    inputs = dict(np.load(f"{tmp}/inputs.npz"))
    if engine == "xrelay":
        import xrelay.runtime

        before = _status_mb("VmRSS")
        xrelay.runtime.load(f"{tmp}/model.xrelay").run(**inputs)
    else:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        before = _status_mb("VmRSS")
        ort.InferenceSession(path, options, providers=["CPUExecutionProvider"]).run(None, inputs)
    print(_status_mb("VmHWM") - before)


def _status_mb(field: str) -> float:
    """A field of /proc/self/status (in kB there) in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def table(rows: list[Row]) -> str:
    split = any(r.split_matches is not None for r in rows)
    rss = any(r.xrelay_mb is not None for r in rows)
    openvino = any(r.openvino_ms is not None for r in rows)
    head = ["model", "threads", "imports", "fails on", "build s", "xrelay ms", "ORT ms", "xrelay / ORT", "max abs diff"]
    head += (
        ["OpenVINO ms", "xrelay / OpenVINO"] * openvino
        + ["cpu+OpenCL"] * split
        + ["xrelay MB", "ORT MB"] * rss
        + ["load"]
    )
    lines = [
        "| " + " | ".join(head) + " |",
        "| " + " | ".join("---" if i < 4 else "---:" for i in range(len(head))) + " |",
    ]

    def number(value: float | None, digits: int) -> str:
        return "" if value is None else f"{value:.{digits}f}"

    for r in rows:
        diff = "" if r.max_diff is None else f"{r.max_diff:.1e}" + ("" if r.matches else " MISMATCH")
        load = "" if r.xrelay_ms is None else f"{r.load[0]:.1f}-{r.load[1]:.1f}"
        ratio = "" if r.ratio is None else f"{r.ratio:.2f}x"
        cells = [
            r.model, str(r.threads), "yes" if r.imports else "no", r.failure, number(r.build_s, 1),
            number(r.xrelay_ms, 1), number(r.ort_ms, 2), ratio, diff,
        ]  # fmt: skip
        if openvino:
            cells += [number(r.openvino_ms, 2), "" if r.openvino_ratio is None else f"{r.openvino_ratio:.2f}x"]
        if split:
            cells.append({None: "", True: "matches", False: "MISMATCH"}[r.split_matches])
        if rss:
            cells += [number(r.xrelay_mb, 0), number(r.ort_mb, 0)]
        lines.append("| " + " | ".join(cells + [load]) + " |")
    return "\n".join(lines)


def main() -> None:
    if sys.argv[1:2] == ["--peak-memory-child"]:
        return _peak_memory_child(*sys.argv[2:5])
    if sys.argv[1:2] == ["--openvino-child"]:
        return _openvino_child(*sys.argv[2:5])
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR, help="the folder zoo_export.py wrote")
    parser.add_argument("--models", default="", help="comma-separated file stems (default: every .onnx file)")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (medians are reported)")
    parser.add_argument("--json", type=Path, help="also write the rows and the machine as JSON here")
    parser.add_argument("--target", default="c", help='the C target, e.g. "c -march=x86-64-v3" (an AVX2 host\'s)')
    parser.add_argument("--threads", default="1", help="comma-separated thread counts, e.g. 1,2")
    parser.add_argument("--split", action="store_true", help="also check each model split across cpu and OpenCL")
    parser.add_argument("--rss", action="store_true", help="also measure a run's peak memory against onnxruntime's")
    args = parser.parse_args()
    paths = sorted(args.dir.glob("*.onnx"))
    if args.models:
        wanted = args.models.split(",")
        paths = [p for p in paths if p.stem in wanted]
        missing = sorted(set(wanted) - {p.stem for p in paths})
        if missing:
            parser.error(f"no {missing} in {args.dir}; run bench/zoo_export.py first")
    thread_counts = [int(t) for t in args.threads.split(",")]
    machine = machine_info()
    print("\n".join(machine_lines(machine)))
    import onnxruntime

    print(f"onnxruntime {onnxruntime.__version__}, xrelay target {args.target!r}; threads {thread_counts} "
          f"(each engine the same count); {args.rounds} interleaved rounds, medians", flush=True)  # fmt: skip
    if openvino_installed():
        import openvino

        isa = ONEDNN_ISA.get(target_features(args.target).isa, "any")
        print(f"OpenVINO {openvino.__version__} in a child process, ONEDNN_MAX_CPU_ISA={isa}", flush=True)
    load = [os.getloadavg()[0]]
    rows: list[Row] = []
    for path in paths:
        for threads in thread_counts:
            row = measure(path, args.rounds, args.target, threads)
            if row.matches and threads == thread_counts[0]:
                if args.split:
                    row.split_matches = split_matches(path, args.target)
                if args.rss:
                    row.xrelay_mb, row.ort_mb = peak_memory(path, args.target)
            rows.append(row)
            status = row.detail[:200] if not row.matches else f"ok, {row.ratio:.2f}x onnxruntime"
            if row.matches and row.openvino_ratio is not None:
                status += f", {row.openvino_ratio:.2f}x OpenVINO (max abs diff {row.openvino_diff:.1e})"
            print(f"  {row.model:<20} {threads} thread(s): {status}", flush=True)
            gc.collect()  # the previous model's executable and weights (hundreds of MB)
    load.append(os.getloadavg()[0])
    print()
    print(table(rows))
    print(f"\nrtol {RTOL}, atol {ATOL}; load average {load[0]:.1f} to {load[1]:.1f} on {os.cpu_count()} cores")
    for threads in thread_counts:
        print(summary([r for r in rows if r.threads == threads], threads))
    if args.json:
        args.json.write_text(json.dumps({"machine": machine, "rows": [dataclasses.asdict(r) for r in rows]}, indent=1))


def summary(rows: list[Row], threads: int) -> str:
    imported = sum(r.imports for r in rows)
    ratios = [r.ratio for r in rows if r.ratio is not None and r.matches]
    median = float(np.median(ratios)) if ratios else float("nan")
    above = [f"{r.model} {r.ratio:.2f}x" for r in rows if r.ratio is not None and r.ratio > 1.5]
    line = (
        f"{threads} thread(s): {imported} of {len(rows)} import; median xrelay / ORT over the {len(ratios)} that build "
        f"and match: {median:.2f}x; above 1.5x: {', '.join(above) or 'none'}"
    )
    openvino = [r.openvino_ratio for r in rows if r.openvino_ratio is not None and r.matches]
    if openvino:
        line += f"; median xrelay / OpenVINO: {float(np.median(openvino)):.2f}x"
    return line


if __name__ == "__main__":
    main()
