"""Placement by measured cost (issue 30): all-cpu, all-opencl, the hand split and
`placement="auto"` of each model, measured in one interleaved run, beside what place-by-cost
predicted for each; and the time placement takes with an empty and with a warm cost cache.

Models: the four reference models as ONNX (bench/onnx_zoo.py: mlp, cnn, resnet, transformer,
with their hand splits), zoo exports (/work/zoo-models: resnet18, mobilenet_v2, distilbert;
no hand split), and `towers`: two towers of 3 conv3x3+relu (64 channels, 28x28) on one input,
added at the end, written here; and `branchy_concat`: bench/branchy.py's two towers joined by a
concatenate (hand split: tower a on cpu, tower b on opencl).

Threads as in bench/onnx_models.py: C kernels on one thread (XRELAY_NUM_THREADS=1), PoCL's
pthread device on one (POCL_MAX_PTHREAD_COUNT=1): so auto may use the two cores of this
machine, the C kernels on one and PoCL's worker on the other, while all-cpu uses one.
The hand column's prediction is left out ("-") where the hand split's module does not have
the free module's nodes one for one (e.g. the transformer: its on_devices keep fuse-layer-norm
from matching). Every build but the hand split's places anew (XRELAY_BUILD_CACHE=0).
"Empty cache" placement deletes place-by-cost's cache entries (`~/.cache/xrelay/placement`),
not the kernel cache: gcc's objects and PoCL's binaries of an earlier run are reused.

    .venv/bin/python bench/placement.py [--models mlp,towers,resnet18] [--rounds 20] [--json out.json]
    .venv/bin/python bench/placement.py --place-only --models bert_base   # placement times alone
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "XRELAY_NUM_THREADS", "OPENBLAS_NUM_THREADS", "POCL_MAX_PTHREAD_COUNT"):
    os.environ.setdefault(_var, "1")
os.environ.setdefault("OMP_WAIT_POLICY", "passive")
os.environ.setdefault("XRELAY_BUILD_CACHE", "0")  # every build places anew

import argparse
import json
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import onnx_zoo
import zoo
from branchy import branchy_input, branchy_module
from timing import interleaved_medians

import xrelay
from xrelay.driver import bind_params, check_placement
from xrelay.ir import context
from xrelay.runtime.c_library import cache_dir
from xrelay.transforms.fuse_layer_norm import FuseLayerNormPass
from xrelay.transforms.place_by_cost import Decision, graph_of, label, place
from xrelay.transforms.placement_model import PlacementOptions, predict, uniform

TARGETS = ("c", "opencl")
ZOO = Path("/work/zoo-models")
REFERENCE = ("mlp", "cnn", "resnet", "transformer")
ZOO_MODELS = ("resnet18", "mobilenet_v2", "distilbert")


@dataclass
class Case:
    name: str
    module: Any
    params: dict[str, np.ndarray]
    inputs: dict[str, np.ndarray]
    hand: tuple[Any, dict[str, np.ndarray]] | None = None


@dataclass
class Result:
    name: str
    place_cold_s: float
    place_warm_s: float
    measured_ms: dict[str, float] = field(default_factory=dict[str, float])
    predicted_ms: dict[str, float] = field(default_factory=dict[str, float])
    auto_devices: str = ""
    matches: bool = True


def towers(channels: int = 64, size: int = 28, depth: int = 3) -> Case:
    """Two towers of conv3x3 + bias + relu on one input, added, relu."""
    rng = np.random.default_rng(0)
    b = xrelay.Builder()
    x = b.input("x", (1, channels, size, size))
    outs = []
    for _ in range(2):
        h = x
        for _ in range(depth):
            w = rng.standard_normal((channels, channels, 3, 3)).astype(np.float32) / np.sqrt(9 * channels)
            bias = (0.1 * rng.standard_normal((1, channels, 1, 1))).astype(np.float32)
            h = b.nn.relu(b.add(b.nn.conv2d(h, b.const(w), padding=(1, 1)), b.const(bias)))
        outs.append(h)
    module = b.finish(b.nn.relu(b.add(outs[0], outs[1])))
    data = rng.standard_normal((1, channels, size, size)).astype(np.float32)
    return Case("towers", module, {}, {"x": data})


def reference(name: str) -> Case:
    model = onnx_zoo.MODELS[name]
    proto = model.onnx()
    module, params = xrelay.from_onnx(proto)
    hand = xrelay.from_onnx(proto, placement=dict(model.placement))
    return Case(name, module, params, onnx_zoo.random_inputs(proto), hand)


def zoo_model(name: str) -> Case:
    import onnx

    proto = onnx.load(str(ZOO / f"{name}.onnx"))
    module, params = xrelay.from_onnx(proto)
    return Case(name, module, params, zoo.random_inputs(proto))


def branchy_concat() -> Case:
    """bench/branchy.py's towers, concatenated; the hand split puts one tower on each device."""
    text, params = branchy_module(join="concat")
    hand = branchy_module(devices=("cpu", "opencl"), join="concat")
    return Case("branchy_concat", text, params, {"x": branchy_input()}, hand)


def case(name: str) -> Case:
    if name == "towers":
        return towers()
    if name == "branchy_concat":
        return branchy_concat()
    if name not in REFERENCE and (ZOO / f"{name}.onnx").exists():
        return zoo_model(name)
    return reference(name)


def options() -> PlacementOptions:
    from xrelay.transforms.compilation_config import CompilationConfig

    config = CompilationConfig.from_options(TARGETS, "cpu", "c")
    return PlacementOptions(config, TARGETS, "c", 2000, None, 1)


def prepared(module: Any, params: dict[str, np.ndarray]) -> Any:
    """The module as place-by-cost sees it in `xrelay.build`: params bound, layer norms fused."""
    module = xrelay.ir.as_module(module, "bench").clone()
    bind_params(module, params)
    FuseLayerNormPass().apply(context(), module)
    return module


def plan(c: Case) -> tuple[Decision, float]:
    module = prepared(c.module, c.params)
    start = time.perf_counter()
    decision = place(module, options())
    return decision, time.perf_counter() - start


def hand_prediction(c: Case, decision: Decision) -> float | None:
    """The hand split's predicted time, with the free model's measured node times."""
    if c.hand is None:
        return None
    graph = graph_of(prepared(*c.hand), options().config)
    if len(graph.model.nodes) != len(decision.graph.model.nodes):
        return None
    return predict(decision.graph.model, plan_devices_like(graph.model, label(options().config.default_scope)))


def plan_devices_like(model: Any, default: str) -> list[str]:
    """The hand split's device per node as plan-devices unifies them, roughly: pinned nodes
    where pinned; an unpinned one where all its readers are (its value's device_copy, which the
    cost model does not see, pins its reader), else where its first op input is, else default."""
    found: list[str | None] = [n.choices[0] if n.pinned else None for n in model.nodes]
    users = model.consumers()
    for i in reversed(range(len(found))):
        readers = {found[j] for j in users[i]}
        if found[i] is None and len(readers) == 1:
            found[i] = readers.pop()
    placement: list[str] = []
    for i, n in enumerate(model.nodes):
        ops = [placement[j] for j in n.inputs if not model.nodes[j].is_input]
        placement.append(found[i] or (ops[0] if ops else default))
    return placement


def measure(c: Case, rounds: int) -> Result:
    shutil.rmtree(cache_dir() / "placement", ignore_errors=True)
    _, cold = plan(c)
    decision, warm = plan(c)
    result = Result(c.name, cold, warm)
    model = decision.graph.model
    result.predicted_ms = {
        "cpu": predict(model, uniform(model, "cpu")) * 1e3,
        "opencl": predict(model, uniform(model, "opencl")) * 1e3,
        "auto": decision.result.seconds * 1e3,
    }
    if (hand := hand_prediction(c, decision)) is not None:
        result.predicted_ms["hand"] = hand * 1e3
    exes = {
        "cpu": xrelay.build(c.module, targets=("c",), params=c.params),
        "opencl": xrelay.build(c.module, targets=TARGETS, default_device="opencl", params=c.params),
        "auto": xrelay.build(c.module, targets=TARGETS, default_device="cpu", params=c.params, placement="auto"),
    }
    if c.hand is not None:
        exes["hand"] = xrelay.build(c.hand[0], targets=TARGETS, default_device="cpu", params=c.hand[1])
    ref = _first(exes["cpu"].run(c.inputs))
    scale = float(np.max(np.abs(ref))) or 1.0
    for exe in exes.values():
        result.matches &= bool(np.allclose(_first(exe.run(c.inputs)), ref, rtol=1e-3, atol=1e-4 * scale))
    medians = interleaved_medians({k: (lambda e=e: e.run(c.inputs)) for k, e in exes.items()}, rounds)
    result.measured_ms = {k: s * 1e3 for k, s in medians.items()}
    counts: dict[str, int] = {}
    for _, device in exes["auto"].placement():
        counts[device] = counts.get(device, 0) + 1
    result.auto_devices = ", ".join(f"{n} {d}" for d, n in sorted(counts.items()))
    return result


def _first(out: Any) -> np.ndarray:
    return out[0] if isinstance(out, tuple) else out


def table(results: list[Result]) -> str:
    columns = ("cpu", "opencl", "hand", "auto")
    head = "model        | " + " | ".join(f"{c:>17}" for c in columns)
    head += " | auto/best | pred err | place cold / warm s | auto kernels"
    lines = [head, "-" * len(head)]
    for r in results:
        cells = []
        for c in columns:
            m, p = r.measured_ms.get(c), r.predicted_ms.get(c)
            text = "-" if m is None else f"{m:7.2f}" + (f" ({p:7.2f})" if p is not None else " (   -   )")
            cells.append(f"{text:>17}")
        best = min(v for k, v in r.measured_ms.items() if k != "auto")
        err = r.predicted_ms["auto"] / r.measured_ms["auto"] - 1
        row = f"{r.name:12} | " + " | ".join(cells) + f" | {r.measured_ms['auto'] / best:9.2f} | {err:+8.0%}"
        row += f" | {r.place_cold_s:8.2f} / {r.place_warm_s:6.3f} | {r.auto_devices}"
        lines.append(row + ("" if r.matches else "  MISMATCH"))
    lines.append("ms measured (predicted); pred err = auto predicted / measured - 1")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--models", default=",".join((*REFERENCE, *ZOO_MODELS, "towers", "branchy_concat")))
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--place-only", action="store_true", help="placement times only (cold, warm)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    check_placement("auto")
    print(f"load before: {Path('/proc/loadavg').read_text().strip()}", flush=True)
    results: list[Result] = []
    for name in args.models.split(","):
        c = case(name)
        if args.place_only:
            shutil.rmtree(cache_dir() / "placement", ignore_errors=True)
            (_, cold), (decision, warm) = plan(c), plan(c)
            print(
                f"{name}: placement {cold:.2f} s cold, {warm:.3f} s warm, predicted {decision.result.seconds * 1e3:.2f} ms"
            )
            continue
        results.append(measure(c, args.rounds))
        print(table(results[-1:]).splitlines()[-2], flush=True)
    print(f"load after: {Path('/proc/loadavg').read_text().strip()}")
    if results:
        print(table(results))
    if args.json is not None:
        args.json.write_text(json.dumps([r.__dict__ for r in results], indent=1))


if __name__ == "__main__":
    main()
