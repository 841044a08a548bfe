"""bench/models.py's four models at tiny sizes: the relay text, built for C and for OpenCL and
interpreted, matches the numpy version; so does the ONNX graph when onnxruntime is installed
(the `bench` extra). This keeps the benchmark's model definitions right."""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("POCL_DEVICES", "pthread pthread")

import numpy as np
import pytest
from bench_models import models

import xrelay

TINY = {
    "mlp": {"batch": 3, "sizes": (12, 8, 8, 5)},
    "cnn": {"batch": 2, "size": 8, "channels": (1, 2, 3), "classes": 4},
    "resnet": {"batch": 1, "channels": 3, "size": 5},
    "transformer": {"seq": 4, "d_model": 8, "heads": 2, "ffn": 16},
}


def tiny(name: str) -> tuple[models.Model, str, dict[str, np.ndarray], np.ndarray]:
    model = models.MODELS[name].at(**TINY[name])
    text = model.text()
    inputs = models.random_inputs(text, seed=1)
    return model, text, inputs, model.reference(inputs)


def test_the_default_sizes_are_the_issues() -> None:
    shapes = {
        name: tuple(xrelay.parse(m.text()).ops.first.args[0].type.get_shape()) for name, m in models.MODELS.items()
    }
    assert shapes == {"mlp": (64, 784), "cnn": (8, 1, 28, 28), "resnet": (1, 64, 56, 56), "transformer": (128, 256)}


@pytest.mark.parametrize("name", list(TINY))
def test_relay_matches_numpy(name: str) -> None:
    model, text, inputs, ref = tiny(name)
    np.testing.assert_allclose(xrelay.interpret(text, inputs), ref, rtol=1e-4, atol=1e-5)
    x = inputs.pop("x")
    for options in ({"targets": ("c",)}, {"targets": ("c", "opencl"), "default_device": "opencl"}):
        exe, _ = models.build_xrelay(text, inputs, 1, **options)
        np.testing.assert_allclose(exe.run(x), ref, rtol=1e-4, atol=1e-5, err_msg=str(options))


@pytest.mark.parametrize("name", list(TINY))
def test_onnx_matches_numpy(name: str) -> None:
    pytest.importorskip("onnxruntime")
    model, _, inputs, ref = tiny(name)
    x = inputs.pop("x")
    session = models.ort_session(model.onnx_model(inputs, x.shape), 1)
    np.testing.assert_allclose(session.run(None, {"x": x})[0], ref, rtol=1e-4, atol=1e-5)


def test_the_numpy_layers() -> None:
    """The hand-written numpy conv and pool against plain loops."""
    rng = np.random.default_rng(0)
    x, w, b = rng.standard_normal((2, 3, 4, 5)), rng.standard_normal((4, 3, 3, 3)), rng.standard_normal(4)
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    loops = np.zeros((2, 4, 4, 5))
    for n, o, i, j in np.ndindex(*loops.shape):
        loops[n, o, i, j] = np.sum(xp[n, :, i : i + 3, j : j + 3] * w[o]) + b[o]
    np.testing.assert_allclose(models.conv3x3_numpy(x, w, b), loops)
    pooled = models.max_pool2_numpy(x[:, :, :, :4])
    assert pooled[1, 2, 1, 0] == x[1, 2, 2:4, 0:2].max()


def test_each_runtime_follows_every_other_in_the_interleaved_rounds() -> None:
    """`timing.round_orders` calls each once a round, the same orders every run, and puts
    every other before each one in some rounds (a rotated order kept the C build after
    numpy and onnxruntime after PoCL)."""
    import timing

    names = ["numpy", "c", "opencl", "ort"]
    orders = list(timing.round_orders(names, 20))
    assert all(sorted(order) == sorted(names) for order in orders)
    assert orders == list(timing.round_orders(names, 20))
    calls = [name for order in orders for name in order]
    follows = {(before, after) for before, after in zip(calls, calls[1:])}
    assert {(a, b) for a in names for b in names if a != b} <= follows


def test_a_self_timed_engine_reports_its_own_time_not_the_round_trip() -> None:
    """An engine in another process (bench/zoo.py's OpenVINO) answers the time it measured;
    `interleaved_times` keeps that, not the wall time of the call, while it still times the
    others itself."""
    import time

    import timing

    def remote() -> float:
        time.sleep(0.02)  # the round trip to the child
        return 0.001

    times = timing.interleaved_times({"remote": remote, "local": lambda: time.sleep(0.005)}, 3, self_timed={"remote"})
    assert times["remote"] == [0.001] * 3
    assert all(0.005 <= t < 0.02 for t in times["local"])


def test_the_table_names_the_machine_and_the_avx2_build() -> None:
    """Above each table: the CPU, each C build's ISA level and vector width (from
    `target_features`) and a measured FMA peak; beside the native C column, the v3 one."""
    from xrelay.runtime.machine import host_name, target_features

    machine = models.machine_info(peak_seconds=0.002)
    assert set(machine["c"]) == set(models.C_BUILDS) and models.C_BUILDS["c_v3"] == "c -march=x86-64-v3"
    ms = {"numpy": 2.0, "ort": 1.0, "c": 1.5, "c_v3": 3.0, "opencl": 4.0}
    results = {"threads": 1, "blas": "blas", "ort_note": "ort", "load": [0.5, 0.7], "spin": False,
               "machine": machine, "models": {"mlp": {"label": "MLP", "ms": ms, "threaded_build": True}}}  # fmt: skip
    lines = models.table(results).splitlines()
    header = lines[: next(i for i, line in enumerate(lines) if line.startswith("| model"))]
    text = "\n".join(header)
    assert host_name() in header[2]
    v3 = target_features("c -march=x86-64-v3")
    assert f"'c -march=x86-64-v3': {v3.isa}, {v3.vector_floats} floats x {v3.vector_registers} vector registers" in text
    native = target_features("c")
    assert f"'c': {native.isa}, {native.vector_floats} floats x {native.vector_registers}" in text
    assert text.count("GFLOP/s per core") == 2 and "'opencl': " in text
    columns = [c.strip() for c in lines[len(header)].strip("|").split("|")]
    row = dict(zip(columns, (c.strip() for c in lines[len(header) + 2].strip("|").split("|")), strict=True))
    assert (row["xrelay C ms"], row["xrelay C AVX2 (v3) ms"]) == ("1.500", "3.000")
    assert (row["C / ORT"], row["C v3 / ORT"], row["C v3 / C"]) == ("1.50x", "3.00x", "2.00x")


def test_the_fma_probe_measures_the_targets_width() -> None:
    from fma_peak import fma_peak, probe_source

    assert probe_source(8, 3).count("a2 = a2 * bv + cv;") == 1 and "vector_size(32)" in probe_source(8, 3)
    peak = fma_peak("c -march=x86-64-v3", seconds=0.002, repeats=1)
    assert (peak.isa, peak.floats, peak.accumulators, peak.fma) == ("x86-64-v3", 8, 12, True)
    assert peak.gflops > 0


def test_openvino_runs_in_a_child_held_to_the_targets_isa(tmp_path: Path) -> None:
    """bench/zoo.py's OpenVINO peer: the child holds oneDNN to the ISA of xrelay's target (AVX2
    for an x86-64-v3 build, so the comparison is the one an AVX2 machine shows), writes its
    outputs on the zoo's seeded inputs, and answers one run's own time per request."""
    pytest.importorskip("openvino", reason="OpenVINO is in the bench extra (make bench-setup)")
    import zoo
    from onnx import TensorProto, helper

    from xrelay.runtime.machine import target_features

    assert zoo.ONEDNN_ISA[target_features("c -march=x86-64-v3").isa] == "AVX2"
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 5])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "relu", [x], [y])
    path = tmp_path / "relu.onnx"
    path.write_bytes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
    worker = zoo.OpenVinoWorker(path, 1, "c -march=x86-64-v3", str(tmp_path / "out.npz"))
    try:
        seconds = [worker.run() for _ in range(3)]
    finally:
        worker.close()
    assert all(0 < s < 1 for s in seconds)
    inputs = zoo.random_inputs(helper.make_model(graph))
    np.testing.assert_array_equal(np.load(tmp_path / "out.npz")["arr_0"], np.maximum(inputs["x"], 0))
