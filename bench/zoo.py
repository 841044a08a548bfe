"""The zoo (ONNX files torch.onnx.export wrote: bench/zoo_export.py) through xrelay, against
onnxruntime: for each model, `xrelay.from_onnx` (a model that does not import is a row naming
the op or input it stopped at, not a crash), `xrelay.build` for targets c, the outputs checked
against onnxruntime's (rtol 1e-3, atol 1e-4), and both timed at one thread in one interleaved
run (`timing.interleaved_medians`), medians printed in one table under the machine
(bench/models.py's `machine_lines`) and the load average.

Inputs are seeded: float inputs standard normal, `input_ids` random tokens below 1000 (every
zoo vocabulary is larger), `attention_mask` ones with the last quarter zero (padding), other
integer inputs zeros.

    .venv/bin/pip install -e '.[bench,zoo]' && .venv/bin/python bench/zoo_export.py
    .venv/bin/python bench/zoo.py [--dir /work/zoo-models] [--models resnet18,gpt2] [--rounds 5] [--json out.json]
        [--target "c -march=x86-64-v3"]
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
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from models import machine_info, machine_lines
from onnx_models import ort_session
from timing import interleaved_medians

import xrelay

RTOL, ATOL = 1e-3, 1e-4
DEFAULT_DIR = Path("/work/zoo-models")


@dataclasses.dataclass
class Row:
    """One model's results; the times are None where it did not get that far."""

    model: str
    imports: bool = False
    failure: str = ""  # the op (or input, or stage) it stopped at
    detail: str = ""  # the error's message
    build_s: float | None = None
    xrelay_ms: float | None = None
    ort_ms: float | None = None
    max_diff: float | None = None
    matches: bool | None = None
    load: tuple[float, float] = (0.0, 0.0)

    @property
    def ratio(self) -> float | None:
        return None if self.xrelay_ms is None or not self.ort_ms else self.xrelay_ms / self.ort_ms


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


def measure(path: Path, rounds: int, target: str = "c") -> Row:
    """Imports, builds, checks and times one model; stops at the first stage that fails."""
    import onnx

    row = Row(path.stem)
    load_before = os.getloadavg()[0]
    proto = onnx.load(str(path))
    inputs = random_inputs(proto)
    session = ort_session(proto)
    want = session.run(None, inputs)
    try:
        module, params = xrelay.from_onnx(proto)
    except Exception as e:  # a row of the table: which op, and why
        row.failure, row.detail = failing_op(e), f"{type(e).__name__}: {e}"
        return row
    row.imports = True
    try:
        start = time.perf_counter()
        exe = xrelay.build(module, targets=(target,), params=params, num_threads=1)
        row.build_s = time.perf_counter() - start
        got = exe.run(inputs)
    except Exception as e:  # a model that imports but does not build or run: also a row
        row.failure, row.detail = "build/run", f"{type(e).__name__}: {e}"
        return row
    got = list(got) if isinstance(got, tuple) else [got]
    row.max_diff = max(float(np.max(np.abs(np.asarray(g) - w))) for g, w in zip(got, want))
    row.matches = all(
        np.asarray(g).shape == w.shape and bool(np.allclose(g, w, rtol=RTOL, atol=ATOL)) for g, w in zip(got, want)
    )
    medians = interleaved_medians({"xrelay": lambda: exe.run(inputs), "ort": lambda: session.run(None, inputs)}, rounds)
    row.xrelay_ms, row.ort_ms = medians["xrelay"] * 1e3, medians["ort"] * 1e3
    row.load = (load_before, os.getloadavg()[0])
    return row


def table(rows: list[Row]) -> str:
    lines = [
        "| model | imports | fails on | build s | xrelay ms | ORT ms | xrelay / ORT | max abs diff | load |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | --- |",
    ]

    def number(value: float | None, digits: int) -> str:
        return "" if value is None else f"{value:.{digits}f}"

    for r in rows:
        diff = "" if r.max_diff is None else f"{r.max_diff:.1e}" + ("" if r.matches else " MISMATCH")
        load = "" if r.xrelay_ms is None else f"{r.load[0]:.1f}-{r.load[1]:.1f}"
        ratio = "" if r.ratio is None else f"{r.ratio:.1f}x"
        cells = [
            r.model, "yes" if r.imports else "no", r.failure, number(r.build_s, 1),
            number(r.xrelay_ms, 1), number(r.ort_ms, 2), ratio, diff, load,
        ]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR, help="the folder zoo_export.py wrote")
    parser.add_argument("--models", default="", help="comma-separated file stems (default: every .onnx file)")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (medians are reported)")
    parser.add_argument("--json", type=Path, help="also write the rows and the machine as JSON here")
    parser.add_argument("--target", default="c", help='the C target, e.g. "c -march=x86-64-v3" (an AVX2 host\'s)')
    args = parser.parse_args()
    paths = sorted(args.dir.glob("*.onnx"))
    if args.models:
        wanted = args.models.split(",")
        paths = [p for p in paths if p.stem in wanted]
        missing = sorted(set(wanted) - {p.stem for p in paths})
        if missing:
            parser.error(f"no {missing} in {args.dir}; run bench/zoo_export.py first")
    machine = machine_info()
    print("\n".join(machine_lines(machine)))
    import onnxruntime

    print(f"onnxruntime {onnxruntime.__version__}, xrelay target {args.target!r}; one thread each; "
          f"{args.rounds} interleaved rounds, medians", flush=True)  # fmt: skip
    load = [os.getloadavg()[0]]
    rows: list[Row] = []
    for path in paths:
        row = measure(path, args.rounds, args.target)
        rows.append(row)
        status = row.detail[:200] if not row.matches else f"ok, {row.ratio:.1f}x onnxruntime"
        print(f"  {row.model:<20} {status}", flush=True)
        gc.collect()  # the previous model's executable and weights (hundreds of MB)
    load.append(os.getloadavg()[0])
    imported = sum(r.imports for r in rows)
    ratios = [r.ratio for r in rows if r.ratio is not None and r.matches]
    print()
    print(table(rows))
    print(f"\n{imported} of {len(rows)} import; median xrelay / ORT over the {len(ratios)} that build and match: "
          f"{float(np.median(ratios)) if ratios else float('nan'):.1f}x; rtol {RTOL}, atol {ATOL}; "
          f"load average {load[0]:.1f} to {load[1]:.1f} on {os.cpu_count()} cores")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps({"machine": machine, "rows": [dataclasses.asdict(r) for r in rows]}, indent=1))


if __name__ == "__main__":
    main()
