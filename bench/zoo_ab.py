"""Two checkouts' builds of zoo models timed in one interleaved run, with onnxruntime: a before
and after that a shared, loaded machine cannot skew (each round runs every engine once, so
load that comes and goes falls on all of them alike).

    .venv/bin/python bench/zoo_ab.py build OUT [--models gpt2,vit_b_16] [--targets c,"c -march=x86-64-v3"]
    ../main/.venv/bin/python bench/zoo_ab.py build OUT_MAIN ...    # the same from the other checkout
    .venv/bin/python bench/zoo_ab.py time before=OUT_MAIN after=OUT [--rounds 10]

`build` (run with the checkout's own venv) imports each model of /work/zoo-models (`--dir`),
builds it per target at 1 thread and saves the artifact. `time` loads every artifact
(`xrelay.runtime.load`: the runtime reads both checkouts' artifacts), checks each against
onnxruntime (rtol 1e-3, atol 1e-4, as bench/zoo.py), and prints per model and target the
median of each label and of onnxruntime (1 thread) over `--rounds` interleaved rounds, and
each label's ratio to onnxruntime and to the first label: in CPU time of the calling thread
(`time.thread_time`: both engines compute in it at 1 thread; the time other processes of a
shared machine took is left out), then again in wall time.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "XRELAY_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
os.environ.setdefault("OMP_WAIT_POLICY", "passive")
os.environ.setdefault("XRELAY_BUILD_CACHE", "0")

import argparse
import json
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from models import ort_session
from timing import interleaved_times
from zoo import compare, random_inputs

import xrelay

MODELS = ("vit_b_16", "gpt2", "bert_base", "distilbert")
TARGETS = ("c", "c -march=x86-64-v3")


def slug(text: str) -> str:
    return re.sub(r"\W+", "_", text).strip("_")


def build(out: Path, directory: Path, models: list[str], targets: list[str]) -> None:
    import onnx

    out.mkdir(parents=True, exist_ok=True)
    for name in models:
        for target in targets:
            module, params = xrelay.from_onnx(onnx.load(str(directory / f"{name}.onnx")))
            exe = xrelay.build(module, targets=(target,), params=params, num_threads=1)
            path = out / f"{name}__{slug(target)}"
            exe.save(path)
            (path / "case.json").write_text(json.dumps({"model": name, "target": target}))
            print(f"built {name} [{target}]", flush=True)


def time_all(dirs: dict[str, Path], directory: Path, rounds: int) -> None:
    import onnx

    paths: dict[tuple[str, str], dict[str, Path]] = {}
    for label, root in dirs.items():
        for path in sorted(p for p in root.iterdir() if (p / "case.json").exists()):
            case = json.loads((path / "case.json").read_text())
            paths.setdefault((case["model"], case["target"]), {})[label] = path
    print(f"load before {os.getloadavg()}")
    print(f"{'model':<12} {'target':<20} " + " ".join(f"{label + ' ms':>12}" for label in dirs), end="")
    print(f" {'ORT ms':>9} " + " ".join(f"{label + '/ORT':>11}" for label in dirs) + f" {'last/first':>10}  max diff")
    for model in dict.fromkeys(m for m, _ in paths):
        proto = onnx.load(str(directory / f"{model}.onnx"))
        inputs = random_inputs(proto)
        session = ort_session(proto, 1, spin=False)
        want = session.run(None, inputs)
        for target in [t for m, t in paths if m == model]:
            exes = {label: xrelay.runtime.load(str(path)) for label, path in paths[model, target].items()}
            print(time_row(model, target, exes, session, inputs, want, rounds), flush=True)
            del exes
    print(f"load after {os.getloadavg()}; medians of {rounds} interleaved rounds, 1 thread")


def time_row(
    model: str,
    target: str,
    exes: dict[str, Any],
    session: Any,
    inputs: dict[str, np.ndarray],
    want: list[np.ndarray],
    rounds: int,
) -> str:
    """One model and target: each label's and onnxruntime's median, the ratios, the diffs."""
    diffs = [compare(exe.run(inputs), want) for exe in exes.values()]
    fns: dict[str, Callable[[], object]] = {"ort": lambda: session.run(None, inputs)}
    fns.update({label: (lambda exe=exe: exe.run(inputs)) for label, exe in exes.items()})
    wall = {k: statistics.median(v) * 1e3 for k, v in interleaved_times(fns, rounds).items()}
    times = {k: statistics.median(v) * 1e3 for k, v in interleaved_times(fns, rounds, clock=time.thread_time).items()}
    labels = list(exes)
    row = f"{model:<12} {target:<20} " + " ".join(f"{times[label]:12.1f}" for label in labels)
    row += f" {times['ort']:9.1f} " + " ".join(f"{times[label] / times['ort']:10.2f}x" for label in labels)
    row += f" {times[labels[-1]] / times[labels[0]]:9.2f}x  "
    row += f"(wall: {', '.join(f'{wall[k]:.1f}' for k in [*labels, 'ort'])} ms = "
    row += ", ".join(f"{wall[label] / wall['ort']:.2f}x" for label in labels) + ") "
    return row + ", ".join(f"{d:.1e}{'' if ok else ' (FAILS)'}" for d, ok in diffs)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    building = sub.add_parser("build")
    building.add_argument("out", type=Path)
    building.add_argument("--models", default=",".join(MODELS))
    building.add_argument("--targets", default=",".join(TARGETS))
    timing = sub.add_parser("time")
    timing.add_argument("dirs", nargs="+", help="LABEL=DIR of a `build`")
    timing.add_argument("--rounds", type=int, default=10)
    for p in (building, timing):
        p.add_argument("--dir", type=Path, default=Path("/work/zoo-models"))
    args = parser.parse_args()
    if args.command == "build":
        build(args.out, args.dir, args.models.split(","), args.targets.split(","))
    else:
        time_all({d.split("=", 1)[0]: Path(d.split("=", 1)[1]) for d in args.dirs}, args.dir, args.rounds)


if __name__ == "__main__":
    main()
