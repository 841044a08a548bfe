"""bench/onnx_zoo.py's six ONNX models at tiny sizes through `xrelay.from_onnx`: built for cpu
and split across cpu and OpenCL by each model's placement rules, they match `xrelay.interpret`
of the imported module and onnxruntime (the `bench` extra; those checks skip without it). The
four reference models also match bench/models.py's numpy, and bench/onnx_models.py runs, so
neither the model definitions nor the benchmark can rot."""

from __future__ import annotations

import os

os.environ.setdefault("POCL_DEVICES", "pthread pthread")

import fnmatch
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import xrelay

onnx = pytest.importorskip("onnx", reason="onnx is xrelay's dependency for from_onnx; install it with pip")

from bench_models import BENCH, models  # (puts bench/ on sys.path)

# isort: split
import onnx_zoo

NAMES = list(onnx_zoo.MODELS)
RTOL, ATOL_SCALE = 1e-4, 1e-5  # as bench/onnx_models.py: atol relative to the output's scale


def assert_close(out: Any, ref: np.ndarray, what: str) -> None:
    atol = ATOL_SCALE * float(np.max(np.abs(ref)))
    np.testing.assert_allclose(np.asarray(out), ref, rtol=RTOL, atol=atol, err_msg=what)


def interpret(module: Any, params: dict[str, np.ndarray], inputs: dict[str, np.ndarray]) -> np.ndarray:
    """`xrelay.interpret` of an imported module: @main takes the ONNX inputs, then the params."""
    main = next(op for op in module.ops if getattr(op, "sym_name", None) and op.sym_name.data == "main")
    names = [arg.name_hint for arg in main.args][: len(inputs)]
    return np.asarray(xrelay.interpret(module, {**dict(zip(names, inputs.values())), **params}))


def ort_run(proto: Any, inputs: dict[str, np.ndarray]) -> np.ndarray:
    ort = pytest.importorskip("onnxruntime", reason="onnxruntime (the bench extra) is not installed")
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(proto.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return session.run(None, inputs)[0]


@pytest.fixture(scope="module", params=NAMES)
def built(request: pytest.FixtureRequest) -> dict[str, Any]:
    """A tiny model, its inputs, the interpreter's output, and its outputs built for cpu and split."""
    model = onnx_zoo.MODELS[request.param].tiny()
    proto = model.onnx()
    inputs = onnx_zoo.random_inputs(proto, seed=1)
    module, params = xrelay.from_onnx(proto)
    cpu = xrelay.build(module, targets=("c",), params=params, num_threads=1)
    split_module, split_params = xrelay.from_onnx(proto, placement=dict(model.placement))
    split = xrelay.build(split_module, targets=("c", "opencl"), default_device="cpu", params=split_params)
    return {
        "model": model,
        "proto": proto,
        "inputs": inputs,
        "interpreted": interpret(module, params, inputs),
        "split_exe": split,
        "outputs": {"cpu": cpu.run(inputs), "split": split.run(inputs)},
    }


def test_builds_match_the_interpreter(built: dict[str, Any]) -> None:
    for name, out in built["outputs"].items():
        assert_close(out, built["interpreted"], f"{built['model'].name} {name} build against xrelay.interpret")


def test_builds_match_onnxruntime(built: dict[str, Any]) -> None:
    ref = ort_run(built["proto"], built["inputs"])
    assert_close(built["interpreted"], ref, f"{built['model'].name}: xrelay.interpret against onnxruntime")
    for name, out in built["outputs"].items():
        assert_close(out, ref, f"{built['model'].name} {name} build against onnxruntime")


def test_the_split_build_runs_on_both_devices(built: dict[str, Any]) -> None:
    devices = {device.split(":")[0] for _, device in built["split_exe"].placement() if "->" not in device}
    assert devices == {"cpu", "opencl"}, f"{built['model'].name}: {built['split_exe'].placement()}"


def test_inputs_by_position_and_by_onnx_name(built: dict[str, Any]) -> None:
    """`run(*arrays)` in graph order equals `run({onnx name: array})` (bert has two inputs)."""
    exe, inputs = built["split_exe"], built["inputs"]
    np.testing.assert_array_equal(exe.run(*inputs.values()), built["outputs"]["split"])


@pytest.mark.parametrize("name", ["mlp", "cnn", "resnet", "transformer"])
def test_the_reference_models_mirror_bench_models(name: str) -> None:
    """The same maths and weights as bench/models.py's numpy, so the two benchmarks compare."""
    model = onnx_zoo.MODELS[name].tiny()
    reference = models.MODELS[name].at(**model.sizes)
    weights = models.random_inputs(reference.text())
    x = weights["x"]
    out = ort_run(model.onnx(), {"x": x})
    np.testing.assert_allclose(out, reference.reference(weights), rtol=1e-4, atol=1e-5)


def test_every_placement_rule_matches_a_node() -> None:
    for model in onnx_zoo.MODELS.values():
        nodes = model.tiny().onnx().graph.node
        for glob in model.placement:
            assert any(fnmatch.fnmatchcase(n.name, glob) or n.op_type == glob for n in nodes), (model.name, glob)


def test_the_demo_runs(tmp_path: Path) -> None:
    """examples/demo.py imports examples/cnn.onnx, places its first block on OpenCL, and its
    check passes (against onnxruntime, or the interpreter without it)."""
    demo = Path(__file__).parents[2] / "examples" / "demo.py"
    command = [sys.executable, str(demo), "--pictures", str(tmp_path)]  # the committed pictures stay
    run = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "-> OK" in run.stdout and "opencl:0 -> cpu:0" in run.stdout, run.stdout


def test_the_benchmark_runs() -> None:
    pytest.importorskip("onnxruntime", reason="onnxruntime (the bench extra) is not installed")
    script = BENCH / "onnx_models.py"
    command = [sys.executable, str(script), "--tiny", "--rounds", "1", "--models", "mlp,bert"]
    run = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "| BERT encoder" in run.stdout and "MISMATCH" not in run.stdout
