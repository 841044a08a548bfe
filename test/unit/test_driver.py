"""xrelay.build / load / Executable end to end: storage plans that would give wrong numbers if
device or lifetime were ignored, save and load, input errors, a missing OpenCL platform,
two OpenCL devices, and random planned graphs on both targets against xrelay.interpret."""

from __future__ import annotations

import copy
import hashlib
import json
import os
import re

os.environ.setdefault("POCL_DEVICES", "pthread pthread")

import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import xrelay
from xrelay import driver
from xrelay.errors import DeviceError, InputError
from xrelay.runtime import executable
from xrelay.runtime.artifact import ArtifactError
from xrelay.runtime.signing import sign

sys.path.insert(0, str(Path(__file__).parent))
from random_graphs import random_inputs, random_module_text

T = "tensor<2x16xf32>"
CL = "#relay.se_scope<device = opencl>"
CPU = "#relay.se_scope<device = cpu>"

# Two softmaxes on OpenCL, a copy to the host, four more there, and %s1 used again at the end:
# when %s1 is made, two dead OpenCL storages of its size are free (wrong to take: other
# device); when %s4 is made, %s2's storage is free (right to take) and %s1's is live (wrong).
SHARING = f"""
func.func @main(%x: {T} {{relay.se_scope = {CL}}}) -> {T} {{
  %o1 = relay.nn.softmax %x : ({T}) -> {T}
  %o2 = relay.nn.softmax %o1 : ({T}) -> {T}
  %c = relay.device_copy %o2 {{src_se_scope = {CL}, dst_se_scope = {CPU}}} : {T}
  %s1 = relay.nn.softmax %c : ({T}) -> {T}
  %s2 = relay.nn.softmax %s1 : ({T}) -> {T}
  %s3 = relay.nn.softmax %s2 : ({T}) -> {T}
  %s4 = relay.nn.softmax %s3 : ({T}) -> {T}
  %r = relay.subtract %s1, %s4 : ({T}, {T}) -> {T}
  func.return %r : {T}
}}
"""
X, O1, O2, COPY, S1, S2, S3, S4, R = range(9)  # node (= entry) ids of SHARING's graph


@pytest.fixture(scope="module")
def sharing() -> xrelay.Executable:
    return xrelay.build(SHARING, targets=("c", "opencl"), default_device="cpu")


def sharing_inputs() -> dict[str, np.ndarray]:
    return {"x": np.random.default_rng(1).standard_normal((2, 16)).astype(np.float32) * 3}


def reference(text: str, inputs: dict[str, np.ndarray]) -> Any:
    return xrelay.interpret(xrelay.parse(text), inputs)


def storage(exe: xrelay.Executable) -> list[int]:
    return exe.graph["attrs"]["storage_id"][1]


def test_sharing_plan_is_right(sharing: xrelay.Executable) -> None:
    ids, devices = storage(sharing), sharing.graph["attrs"]["device_index"][1]
    assert [n["name"] for n in sharing.graph["nodes"]][COPY] == "__copy"
    assert ids[S4] == ids[S2]  # the plan does share ...
    assert ids[S1] not in (ids[O1], ids[O2]) and ids[S4] != ids[S1]  # ... but not across devices or lifetimes
    assert len({(s, d) for s, d in zip(ids, devices)}) == len(set(ids))  # a storage id has one device
    x = sharing_inputs()
    np.testing.assert_allclose(sharing.run(x), reference(SHARING, x), rtol=1e-5, atol=1e-6)


def with_storage(exe: xrelay.Executable, entry: int, sid: int) -> xrelay.Executable:
    graph = copy.deepcopy(exe.graph)
    graph["attrs"]["storage_id"][1][entry] = sid
    return xrelay.Executable(graph, exe.kernels, exe.params)


def test_a_plan_ignoring_lifetimes_gives_wrong_numbers(sharing: xrelay.Executable) -> None:
    """The check above can fail: %s4 in %s1's (live) storage changes the result."""
    wrong = with_storage(sharing, S4, storage(sharing)[S1])
    x = sharing_inputs()
    assert not np.allclose(wrong.run(x), reference(SHARING, x), atol=1e-3)


def test_a_plan_ignoring_devices_is_rejected(sharing: xrelay.Executable) -> None:
    with pytest.raises(DeviceError, match="is used on devices opencl:0 and cpu:0"):
        with_storage(sharing, S1, storage(sharing)[O1])


def test_opt_tool_shows_the_plan(tmp_path: Path) -> None:
    path = tmp_path / "sharing.mlir"
    path.write_text(SHARING)
    opt_tool = Path(sys.executable).with_name("opt-tool")
    pipeline = "plan-devices{targets=c,opencl},fuse-ops,convert-relay-to-loops,inline-calls,plan-memory"
    out = subprocess.run([opt_tool, path, "-p", pipeline], capture_output=True, text=True, check=True).stdout
    assert out.count("relay.storage_id") == 9


# --- save and load ---------------------------------------------------------------------------

MLP = Path(__file__).parents[2] / "examples" / "mlp.mlir"


@pytest.fixture(scope="module")
def mlp() -> tuple[xrelay.Executable, dict[str, np.ndarray]]:
    text = MLP.read_text()
    exe = xrelay.build(text, targets=("c", "opencl"))
    return exe, {k: v * np.float32(0.1) for k, v in random_inputs(xrelay.parse(text), 3).items()}


def test_mlp_matches_the_interpreter(mlp: Any) -> None:
    exe, x = mlp
    np.testing.assert_allclose(exe.run(**x), reference(MLP.read_text(), x), rtol=1e-4, atol=1e-5)
    devices = {device for _, device in exe.placement()}
    assert {"cpu:0", "opencl:0", "opencl:0 -> cpu:0"} <= devices


def test_save_load_run(mlp: Any, tmp_path: Path) -> None:
    exe, x = mlp
    exe.save(tmp_path / "mlp.xrelay")
    names = sorted(p.name for p in (tmp_path / "mlp.xrelay").iterdir())
    assert names == ["graph.json", "kernels", "manifest.json", "manifest.sig", "params.npz"]
    loaded = xrelay.load(tmp_path / "mlp.xrelay")
    np.testing.assert_array_equal(loaded.run(**x), exe.run(**x))
    assert loaded.placement() == exe.placement()


SMALL = """
func.func @main(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %0 = relay.tanh %x : tensor<4x16xf32>
  %1 = relay.nn.softmax %0 : (tensor<4x16xf32>) -> tensor<4x16xf32>
  func.return %1 : tensor<4x16xf32>
}
"""
V3_HOST_FLAGS = frozenset({"sse2", "ssse3", "sse4_1", "sse4_2", "avx", "avx2", "fma"})


def test_an_artifact_keeps_the_features_each_device_was_built_for(tmp_path: Path) -> None:
    exe = xrelay.build(SMALL, targets=("c -march=x86-64-v2", "opencl"))
    assert sorted(exe.features) == [0]  # one device: nothing runs on opencl
    v2 = exe.features[0]
    assert (v2.isa, v2.vector_floats, v2.vector_registers, v2.fma) == ("x86-64-v2", 4, 16, False)
    assert exe.graph["devices"][0]["features"] == v2.to_json()
    exe.save(tmp_path / "m")
    saved = json.loads((tmp_path / "m" / "graph.json").read_text())
    assert saved["devices"][0]["features"]["isa"] == "x86-64-v2"
    loaded = xrelay.load(tmp_path / "m")
    assert loaded.features == exe.features
    x = {"x": np.random.default_rng(0).standard_normal((4, 16)).astype(np.float32)}
    np.testing.assert_allclose(loaded.run(**x), reference(SMALL, x), rtol=1e-5, atol=1e-6)


def _record_isa(root: Path, isa: str) -> None:
    """Changes the ISA recorded for device 0 in a saved artifact's graph.json, and its hash in
    the manifest (so that only the features, not the hash check, can refuse it)."""
    graph = json.loads((root / "graph.json").read_text())
    graph["devices"][0]["features"]["isa"] = isa
    data = json.dumps(graph).encode()
    (root / "graph.json").write_bytes(data)
    manifest = json.loads((root / "manifest.json").read_text())
    manifest["files"]["graph.json"] = hashlib.sha256(data).hexdigest()
    _write_signed(root, manifest)


def test_load_refuses_kernels_built_for_an_isa_the_host_lacks(tmp_path: Path, monkeypatch: Any) -> None:
    """An artifact built for AVX-512 on an AVX2 host (its CPU flags faked, so that this holds
    on any machine) is refused before any library is used or rebuilt, with what to do."""
    xrelay.build(SMALL, targets=("c -march=x86-64-v3",)).save(tmp_path / "m")
    monkeypatch.setattr(executable, "cpu_flags", lambda: V3_HOST_FLAGS)
    xrelay.load(tmp_path / "m")  # built for x86-64-v3: runs on the v3 host
    _record_isa(tmp_path / "m", "x86-64-v4")
    with pytest.raises(DeviceError) as error:
        xrelay.load(tmp_path / "m")
    message = str(error.value)
    assert 'device 0 (scope cpu:0, target "c -march=x86-64-v3") runs kernels built for x86-64-v4' in message
    assert "this host is x86-64-v3" in message and "lacks avx512bw, avx512dq, avx512f, avx512vl" in message
    assert "build the program again on this host, or build it for the oldest machine" in message
    assert "targets=('c -march=x86-64-v3',)" in message
    monkeypatch.setattr(executable, "cpu_flags", lambda: None)  # the OS does not say: nothing to check
    xrelay.load(tmp_path / "m")


def test_build_refuses_an_isa_the_host_lacks(monkeypatch: Any) -> None:
    """Kernels built here run here: a build for AVX-512 on an AVX2 host is refused too."""
    monkeypatch.setattr(executable, "cpu_flags", lambda: V3_HOST_FLAGS)
    with pytest.raises(DeviceError, match="built for x86-64-v4 .*but this host is x86-64-v3"):
        xrelay.build(SMALL, targets=("c -march=x86-64-v4",))


def test_load_then_build_then_executable_in_one_process(mlp: Any, tmp_path: Path) -> None:
    """`xrelay.build` stays the function after `xrelay.load` (a submodule named `build` once
    replaced it: "'module' object is not callable"); a fresh interpreter, since the bug lived
    in the order of first imports."""
    mlp[0].save(tmp_path / "m")
    script = (
        "import xrelay\n"
        f"loaded = xrelay.load({str(tmp_path / 'm')!r})\n"
        f"built = xrelay.build(open({str(MLP)!r}).read(), targets=('c', 'opencl'))\n"
        "print(type(loaded) is type(built) is xrelay.Executable, callable(xrelay.build))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert out == "True True\n"


def test_the_demo_model_loads_without_the_compiler(mlp: Any, tmp_path: Path) -> None:
    """The MLP (cpu and opencl) saved by the compiler runs from `xrelay.runtime` alone."""
    exe, x = mlp
    exe.save(tmp_path / "m")
    np.savez(tmp_path / "x.npz", **x)
    script = (
        "import sys, numpy as np, xrelay.runtime\n"
        f"out = xrelay.runtime.load({str(tmp_path / 'm')!r}).run(dict(np.load({str(tmp_path / 'x.npz')!r})))\n"
        f"np.save({str(tmp_path / 'out.npy')!r}, out)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'xdsl'))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert out == "[]\n"
    np.testing.assert_array_equal(np.load(tmp_path / "out.npy"), exe.run(x))


def test_save_load_keeps_params(tmp_path: Path) -> None:
    text = """
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %k = relay.constant {value = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>} : tensor<4xf32>
  %0 = relay.multiply %x, %k : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = relay.on_device %0 {se_scope = #relay.se_scope<device = opencl>} : tensor<4xf32>
  %2 = relay.nn.relu %1 : tensor<4xf32>
  func.return %2 : tensor<4xf32>
}"""
    exe = xrelay.build(text, targets=("c", "opencl"))
    exe.save(tmp_path / "k")
    x = np.array([1, -1, 2, -2], np.float32)
    np.testing.assert_array_equal(xrelay.load(tmp_path / "k").run(x=x), [1, 0, 6, 0])
    assert exe.input_names == ["x"] and list(exe.params) == ["p0"]


def test_load_rejects_an_edited_artifact(mlp: Any, tmp_path: Path) -> None:
    exe, _ = mlp
    exe.save(tmp_path / "m")
    kernel = next((tmp_path / "m" / "kernels").iterdir())
    kernel.write_text(kernel.read_text().replace("+", "-"))
    with pytest.raises(
        ArtifactError, match=f"{kernel.name} has sha256 .*, but the manifest says .*; the artifact is corrupt"
    ):
        xrelay.load(tmp_path / "m")


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda root: (root / "manifest.json").unlink(), "is not a saved xrelay executable: it has no manifest.json"),
        (lambda root: (root / "params.npz").unlink(), "params.npz is missing; the artifact is incomplete"),
        (lambda root: _edit_manifest(root, version=99), "but this xrelay reads 'xrelay-executable' version 4 or 5"),
        (lambda root: _edit_manifest(root, files={"../x": "0"}), "names the file '../x' outside the artifact"),
    ],
)
def test_load_errors(mlp: Any, tmp_path: Path, edit: Any, message: str) -> None:
    mlp[0].save(tmp_path / "m")
    edit(tmp_path / "m")
    with pytest.raises(ArtifactError, match=message):
        xrelay.load(tmp_path / "m")


def _edit_manifest(root: Path, **changes: Any) -> None:
    manifest = json.loads((root / "manifest.json").read_text())
    manifest.update(changes)
    _write_signed(root, manifest)


def _write_signed(root: Path, manifest: dict[str, Any]) -> None:
    """The manifest, signed as its owner would (so that the checks behind the signature answer)."""
    text = json.dumps(manifest).encode()
    (root / "manifest.json").write_bytes(text)
    (root / "manifest.sig").write_text(sign(text))


# --- errors ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda x: {"x": x["x"]}, "the program takes inputs x, w1, b1, w2, b2, w3, b3; missing w1, b1, w2, b2, w3, b3"),
        (lambda x: {**x, "y": 1}, "the program takes inputs x, w1, b1, w2, b2, w3, b3; unknown 'y'"),
        (
            lambda x: {**x, "x": np.zeros((32, 783), np.float32)},
            "input x must have shape \\[32, 784\\], but has shape \\[32, 783\\]",
        ),
        (
            lambda x: {**x, "b3": np.zeros(10, np.int32)},
            "input b3 must have dtype float32, but has dtype int32; convert it with .astype\\(np.float32\\)",
        ),
    ],
)
def test_run_input_errors(mlp: Any, edit: Any, message: str) -> None:
    exe, x = mlp
    with pytest.raises(InputError, match=message):
        exe.run(**edit(x))


def test_no_opencl_platform(tmp_path: Path) -> None:
    """Without an OpenCL platform, building for an opencl scope says how to install PoCL."""
    script = (
        "import xrelay\n"
        "try:\n"
        f"    xrelay.build(open({str(MLP)!r}).read(), targets=('c', 'opencl'))\n"
        "except xrelay.DeviceError as e:\n"
        "    print(type(e).__name__, e)\n"
    )
    env = {**os.environ, "OCL_ICD_VENDORS": str(tmp_path), "OCL_ICD_FILENAMES": ""}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True).stdout
    assert out.startswith("DeviceError an opencl scope needs an OpenCL device, but no OpenCL platform found")
    assert "pocl-opencl-icd" in out


def test_two_opencl_devices_end_to_end() -> None:
    text = f"""
func.func @main(%x: {T}) -> {T} {{
  %0 = relay.tanh %x : {T}
  %1 = relay.on_device %0 {{se_scope = #relay.se_scope<device = opencl, id = 1>}} : {T}
  %2 = relay.nn.softmax %1 : ({T}) -> {T}
  %3 = relay.on_device %2 {{se_scope = #relay.se_scope<device = opencl, id = 0>}} : {T}
  %4 = relay.negative %3 : {T}
  func.return %4 : {T}
}}"""
    exe = xrelay.build(text, targets=("c", "opencl"), default_device="opencl")
    x = sharing_inputs()
    np.testing.assert_allclose(exe.run(x=x["x"]), reference(text, {"x": x["x"]}), rtol=1e-5, atol=1e-6)
    assert [d.name for d in exe.devices] == ["opencl:0", "opencl:1"]
    assert ("__copy", "opencl:1 -> opencl:0") in exe.placement()
    profile = exe.profile(x=x["x"])
    assert profile.copies[("opencl:1", "opencl:0")] == (1, 2 * 16 * 4)
    np.testing.assert_array_equal(profile.outputs, exe.run(x=x["x"]))


def test_profile_runs_and_trace_of_the_mlp(tmp_path: Path) -> None:
    """The MLP built for c and opencl, profiled over 3 runs: the outputs match the reference,
    and the trace has each kernel and copy of the graph once per run on its device's track."""
    path = Path(__file__).parents[2] / "examples" / "mlp.mlir"
    module = xrelay.parse(path.read_text(), path.name)
    rng = np.random.default_rng(1)
    inputs = {a.name_hint: rng.standard_normal(a.type.get_shape()).astype(np.float32) for a in module.ops.first.args}  # type: ignore[union-attr]
    exe = xrelay.build(path.read_text(), targets=("c", "opencl"))
    profile = exe.profile(inputs, runs=3)
    np.testing.assert_allclose(profile.outputs, reference(path.read_text(), inputs), rtol=1e-4, atol=1e-5)
    assert [name for name, _, _ in profile.nodes] == [name for name, _ in exe.placement()]
    assert profile.copies == {("opencl:0", "cpu:0"): (1, 32 * 256 * 4)}
    events = json.loads(profile.save_trace(tmp_path / "run.json").read_text())["traceEvents"]
    slices = [e for e in events if e["ph"] == "X"]
    graph, device_index = exe.graph, exe.graph["attrs"]["device_index"][1]
    ops = [i for i, n in enumerate(graph["nodes"]) if n["op"] == "tvm_op"]
    assert [(e["args"]["node"], e["tid"], e["args"]["run"]) for e in slices] == [
        (i, device_index[i], run) for run in range(3) for i in ops
    ]
    copies = [e for e in slices if e["cat"] == "copy"]
    assert {(e["args"]["src"], e["args"]["dst"], e["args"]["bytes"], tuple(e["args"]["shape"])) for e in copies} == {
        ("opencl:0", "cpu:0", 32 * 256 * 4, (32, 256))
    }


# --- random planned graphs on both targets ---------------------------------------------------


def check_plan(graph: dict[str, Any]) -> None:
    """Tensors sharing a storage are on one device and never live at the same time (a
    `__nop` node's tensor is its input's, read with another shape: it lives with it); inputs,
    params and results share with nothing but their own `__nop` views."""
    nodes, attrs = graph["nodes"], graph["attrs"]
    ids, devices = attrs["storage_id"][1], attrs["device_index"][1]
    end = len(nodes)
    root = list(range(end))
    for i, node in enumerate(nodes):
        if node.get("attrs", {}).get("func_name") == "__nop":
            root[i] = root[node["inputs"][0][0]]
            assert ids[i] == ids[root[i]], f"__nop entry {i} is not in its input's storage"
    pinned = {root[i] for i, n in enumerate(nodes) if n["op"] == "null"} | {root[h[0]] for h in graph["heads"]}
    last = {i: i for i in range(end)}
    for i, node in enumerate(nodes):
        last[root[i]] = max(last[root[i]], i)
        for j, _, _ in node["inputs"]:
            last[root[j]] = max(last[root[j]], i)
    live = {i: (0 if i in pinned else i, end if i in pinned else last[i]) for i in set(root)}
    for a in set(root):
        for b in set(root):
            if a >= b or ids[a] != ids[b]:
                continue
            assert devices[a] == devices[b], f"entries {a} and {b} share storage {ids[a]} across devices"
            assert live[a][1] < live[b][0] or live[b][1] < live[a][0], f"entries {a} and {b} share a live storage"


@settings(max_examples=24, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**31 - 1),
    devices=st.sampled_from([("cpu",), ("cpu", "opencl"), ("cpu", "opencl", "opencl:1")]),
    default_opencl=st.booleans(),
)
def test_random_graphs_match_the_interpreter(seed: int, devices: tuple[str, ...], default_opencl: bool) -> None:
    text = random_module_text(seed, num_ops=8, devices=devices)
    module = xrelay.parse(text)
    inputs = random_inputs(module, seed)
    targets = ("c", "opencl") if len(devices) > 1 else ("c",)
    exe = xrelay.build(
        module, targets=targets, default_device="opencl" if default_opencl and len(devices) > 1 else None
    )
    check_plan(exe.graph)
    np.testing.assert_allclose(exe.run(**inputs), xrelay.interpret(module, inputs), rtol=1e-4, atol=1e-5)


def test_check_plan_catches_a_live_share(sharing: xrelay.Executable) -> None:
    check_plan(sharing.graph)
    graph = copy.deepcopy(sharing.graph)
    graph["attrs"]["storage_id"][1][S4] = graph["attrs"]["storage_id"][1][S1]
    with pytest.raises(AssertionError, match="share a live storage"):
        check_plan(graph)


def test_device_table_maps_two_virtual_devices_to_one() -> None:
    """Virtual opencl:1 on physical opencl:0: two pools on one device, the copy stays there."""
    text = f"""
func.func @main(%x: {T}) -> {T} {{
  %0 = relay.nn.softmax %x : ({T}) -> {T}
  %1 = relay.on_device %0 {{se_scope = #relay.se_scope<device = opencl, id = 1>}} : {T}
  %2 = relay.negative %1 : {T}
  %3 = relay.on_device %2 {{se_scope = #relay.se_scope<device = opencl, id = 0>}} : {T}
  func.return %3 : {T}
}}"""
    exe = xrelay.build(text, targets=("c", "opencl"), devices={("opencl", 1): "opencl:0"})
    assert [d.name for d in exe.devices] == ["opencl:0", "opencl:0"]
    x = sharing_inputs()
    np.testing.assert_allclose(exe.run(x), reference(text, x), rtol=1e-5, atol=1e-6)


def test_calls_are_inlined() -> None:
    """Two calls of one relay function: after lowering both launch the same kernel."""
    text = """
func.func @layer(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %0 = relay.nn.dense %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %1 = relay.tanh %0 : tensor<4x8xf32>
  func.return %1 : tensor<4x8xf32>
}
func.func @main(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %0 = func.call @layer(%x, %w) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %1 = func.call @layer(%0, %w) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %2 = relay.on_device %1 {se_scope = #relay.se_scope<device = opencl>} : tensor<4x8xf32>
  %3 = relay.nn.softmax %2 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %3 : tensor<4x8xf32>
}"""
    exe = xrelay.build(text, targets=("c", "opencl"))
    assert [name for name, _ in exe.placement()].count("fused_nn_dense_tanh") == 2
    x = random_inputs(xrelay.parse(text), 5)
    np.testing.assert_allclose(exe.run(x), reference(text, x), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "text, targets, error, message",
    [
        (
            "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n  func.return %y : tensor<4xf32>\n}",
            ("c",),
            xrelay.ParseError,
            "values used but not defined: \\[%y\\]",
        ),
        (
            f"func.func @main(%x: {T}) -> {T} {{\n  %0 = relay.on_device %x {{se_scope = {CL}}} : {T}\n"
            f"  func.return %0 : {T}\n}}",
            ("c",),
            xrelay.ConfigError,
            "scope opencl:? is on device type opencl, which has no target".replace("?", "\\?"),
        ),
    ],
)
def test_build_errors(text: str, targets: tuple[str, ...], error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        xrelay.build(text, targets=targets)


def test_inputs_by_position(mlp: Any) -> None:
    exe, x = mlp
    np.testing.assert_array_equal(exe.run(list(x.values())), exe.run(**x))
    with pytest.raises(
        InputError, match="the program takes 7 inputs \\(x, w1, b1, w2, b2, w3, b3\\), but 1 were given by position"
    ):
        exe.run([x["x"]])


NAN_MODEL = """
func.func @main(%x: tensor<1x2x4x4xf32>, %y: tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32> {
  %0 = relay.nn.relu %x : tensor<1x2x4x4xf32>
  %1 = relay.maximum %0, %y : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %2 = relay.minimum %y, %1 : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %3 = relay.nn.max_pool2d %2 {pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32>
  %4 = relay.max %2 {axis = array<i64: 2, 3>, keepdims = true} : (tensor<1x2x4x4xf32>) -> tensor<1x2x1x1xf32>
  %5 = relay.add %3, %4 : (tensor<1x2x2x2xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x2x2xf32>
  func.return %5 : tensor<1x2x2x2xf32>
}
"""


@pytest.mark.parametrize("device", ["cpu", "opencl"])
@pytest.mark.parametrize("nan_in", ["x", "y"])
def test_nan_propagates_through_max_and_min_like_the_interpreter(device: str, nan_in: str) -> None:
    """C's `a > b ? a : b` and OpenCL's fmax drop a NaN; numpy and arith.maximumf keep it."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((1, 2, 4, 4)).astype(np.float32)
    y = rng.standard_normal((1, 2, 4, 4)).astype(np.float32)
    if nan_in == "x":
        x[0, 0, 1, 2] = np.nan  # through relu, maximum (lhs), minimum (rhs), pooling and max
    else:
        y[0, 0, 3, 3] = np.nan  # through maximum (rhs), minimum (lhs), pooling and max
    expected = xrelay.interpret(xrelay.parse(NAN_MODEL), {"x": x, "y": y})
    assert np.isnan(expected).any() and not np.isnan(expected).all()
    exe = xrelay.build(NAN_MODEL, targets=("c", "opencl"), default_device=device)
    np.testing.assert_array_equal(exe.run(x=x, y=y), expected)


PINNED_PARAM = """
func.func @main(%x: tensor<2x3xf32>, %w: tensor<4x3xf32> {relay.se_scope = #relay.se_scope<device = opencl>},
                %b: tensor<4xf32>) -> tensor<2x4xf32> {
  %0 = relay.nn.dense %x, %w : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x4xf32>
  %1 = relay.nn.bias_add %0, %b : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %3 = relay.nn.relu %1 : tensor<2x4xf32>
  func.return %3 : tensor<2x4xf32>
}
"""


def test_params_become_constants_written_once(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((2, 3), (4, 3), (4,)))
    expected = xrelay.interpret(xrelay.parse(PINNED_PARAM), {"x": x, "w": w, "b": b})
    exe = xrelay.build(PINNED_PARAM, targets=("c", "opencl"), params={"w": w, "b": b})
    assert exe.input_names == ["x"]
    assert sorted(np.asarray(p).shape for p in exe.params.values()) == [(4,), (4, 3)]
    np.testing.assert_allclose(exe.run(x), expected, rtol=1e-6)
    # the pinned parameter's scope holds for its constant: the group runs on opencl, not on
    # the default device (the host)
    assert exe.placement() == [("fused_nn_dense_nn_bias_add_nn_relu", "opencl:0")]
    exe.save(tmp_path / "model")
    np.testing.assert_allclose(xrelay.load(tmp_path / "model").run(x=x), expected, rtol=1e-6)


@pytest.mark.parametrize(
    "params, message",
    [
        ({"v": np.zeros((4, 3), np.float32)}, "params 'v' are not parameters of @main (its parameters: %x, %w, %b)"),
        (
            {"w": np.zeros((3, 4), np.float32)},
            "param %w must have shape [4, 3] (tensor<4x3xf32>), but has shape [3, 4]",
        ),
        ({"b": np.zeros(4, np.float64)}, "param %b must be float32 (tensor<4xf32>), but has dtype float64"),
    ],
)
def test_param_errors(params: dict[str, np.ndarray], message: str) -> None:
    with pytest.raises(InputError) as info:
        xrelay.build(PINNED_PARAM, targets=("c", "opencl"), params=params)
    assert str(info.value) == message


@pytest.mark.parametrize("targets", [("c",), ("c", "opencl")])
def test_concurrent_runs_of_the_bound_mlp(targets: tuple[str, ...]) -> None:
    """A server shares one model between request threads: 4 threads x 20 runs, weights bound."""
    from concurrent.futures import ThreadPoolExecutor

    text = MLP.read_text()
    if targets == ("c",):
        text = text.replace("device = opencl", "device = cpu")
    module = xrelay.parse(text)
    rng = np.random.default_rng(0)
    arrays = {a.name_hint: rng.standard_normal(a.type.get_shape()).astype(np.float32) for a in module.ops.first.args}
    weights = {k: v for k, v in arrays.items() if k != "x"}
    exe = xrelay.build(text, targets=targets, params=weights)

    xs = [np.random.default_rng(seed).standard_normal(arrays["x"].shape).astype(np.float32) for seed in range(80)]
    alone = [exe.run(x) for x in xs]  # one at a time: the kernels are deterministic
    np.testing.assert_allclose(alone[0], xrelay.interpret(module, {**weights, "x": xs[0]}), rtol=1e-4, atol=1e-4)
    with ThreadPoolExecutor(4) as pool:
        together = list(pool.map(exe.run, xs))
    ok = [np.array_equal(a, b) for a, b in zip(together, alone)]
    assert ok.count(False) == 0, f"{ok.count(False)} of 80 concurrent runs were wrong"


def test_rank_0_inputs() -> None:
    """A tensor<f32> parameter takes a 0-d array, as interpret does (it was made 1-d)."""
    text = """
func.func @main(%s: tensor<f32>, %x: tensor<3xf32>) -> tensor<3xf32> {
  %0 = relay.multiply %x, %s : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}"""
    s, x = np.array(2, np.float32), np.arange(3, dtype=np.float32)
    for targets, device in ((("c",), None), (("c", "opencl"), "opencl")):
        exe = xrelay.build(text, targets=targets, default_device=device)
        np.testing.assert_array_equal(exe.run(s=s, x=x), [0, 2, 4])


# --- what a program, targets and inputs may be -----------------------------------------------

ADD = """func.func @main(%a: tensor<2xf32>, %b: tensor<2xf32>) -> tensor<2xf32> {
  %0 = relay.add %a, %b : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}"""


def test_a_program_is_text_bytes_a_path_or_a_module(tmp_path: Path) -> None:
    path = tmp_path / "add.mlir"
    path.write_text(ADD)
    a, b = np.array([1, 2], np.float32), np.array([10, 20], np.float32)
    for program in (ADD, ADD.encode(), path, str(path), xrelay.parse(ADD)):
        np.testing.assert_array_equal(xrelay.build(program).run(a, b), [11, 22])
        np.testing.assert_array_equal(xrelay.interpret(program, a=a, b=b), [11, 22])
    with pytest.raises(xrelay.ParseError, match="xrelay.build was given the path '.*nope.mlir', which cannot be read"):
        xrelay.build(str(tmp_path / "nope.mlir"))
    with pytest.raises(
        xrelay.UsageError, match="takes relay text, a path to a .mlir file or an xDSL module, but was given int"
    ):
        xrelay.build(3)  # type: ignore[arg-type]


@pytest.mark.parametrize("targets", ["c", "c,opencl", "c, opencl", ["c"], ("c", "opencl")])
def test_targets_may_be_one_string(targets: Any) -> None:
    a = np.ones(2, np.float32)
    np.testing.assert_array_equal(xrelay.build(ADD, targets=targets).run(a, a), [2, 2])


@pytest.mark.parametrize(
    "targets, error, message",
    [
        (
            None,
            xrelay.UsageError,
            "targets must be a target string or a sequence of them, e.g. \\('c', 'opencl'\\), but was None",
        ),
        (
            ("cuda",),
            xrelay.ConfigError,
            'target "cuda" is for device type cuda, but xrelay generates kernels only for cpu \\(C\\) and opencl',
        ),
        ("o", xrelay.ConfigError, "unknown target kind 'o'"),
    ],
)
def test_target_errors(targets: Any, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        xrelay.build(ADD, targets=targets)


def test_inputs_positional_sequence_dict_or_keywords() -> None:
    exe = xrelay.build(ADD)
    a, b = np.array([1, 2], np.float32), np.array([10, 20], np.float32)
    for result in (
        exe.run(a, b),
        exe.run([a, b]),
        exe.run({"a": a, "b": b}),
        exe.run(a=a, b=b),
        exe.run({"a": a}, b=b),
    ):
        np.testing.assert_array_equal(result, [11, 22])
    with pytest.raises(InputError, match="takes 2 inputs \\(a, b\\), but 3 were given by position"):
        exe.run(a, b, a)


def test_interpret_says_a_lowered_module_is_for_build() -> None:
    module = xrelay.parse(ADD)
    driver.lower(module, ("c",), None, "c")
    with pytest.raises(
        InputError,
        match="xrelay.interpret runs relay programs up to fuse-ops, but this module is lowered \\(relay.launch @fused_add",
    ):
        xrelay.interpret(module, a=np.ones(2, np.float32), b=np.ones(2, np.float32))


def test_errors_elide_bound_weights() -> None:
    """An error in a model whose weights are bound shows the op, not megabytes of hex (the MLP
    pins a layer to opencl, but the only target is c)."""
    text = MLP.read_text()
    module = xrelay.parse(text)
    rng = np.random.default_rng(0)
    weights = {
        a.name_hint: rng.random(a.type.get_shape(), np.float32) for a in module.ops.first.args if a.name_hint != "x"
    }
    with pytest.raises(xrelay.Error) as info:
        xrelay.build(text, targets=("c",), params=weights)
    report = "\n".join([str(info.value), *getattr(info.value, "__notes__", [])])
    assert len(report) < 20_000 and "elided" in report, report[:2000]


def test_dir_lists_the_lazy_names() -> None:
    assert {"build", "interpret", "load", "parse", "Executable", "PlacementError"} <= set(dir(xrelay))


def test_an_attribute_xdsl_cannot_build_is_a_parse_error() -> None:
    text = """func.func @main(%x: tensor<2x3xf32>) -> tensor<2xf32> {
  %0 = "relay.sum"(%x) {axis = array<i128: 1>} : (tensor<2x3xf32>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}"""
    for call in (xrelay.parse, xrelay.build):
        with pytest.raises(xrelay.ParseError, match="<input>:2:3(.|\\n)*cannot parse this op: NotImplementedError"):
            call(text)


@pytest.mark.filterwarnings("ignore:Mean of empty slice")
@pytest.mark.filterwarnings("ignore:invalid value encountered")
@pytest.mark.parametrize("op, expected", [("sum", 0.0), ("mean", np.nan)])
@pytest.mark.parametrize("device", ["cpu", "opencl"])
def test_sum_and_mean_over_an_empty_axis(op: str, expected: float, device: str) -> None:
    """Defined as numpy defines them (0, and 0/0); max and min over one are verify errors."""
    text = f"""func.func @main(%x: tensor<0x4xf32>) -> tensor<4xf32> {{
  %0 = relay.{op} %x {{axis = array<i64: 0>}} : (tensor<0x4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}}"""
    x = np.zeros((0, 4), np.float32)
    out = xrelay.build(text, targets=("c", "opencl"), default_device=device).run(x)
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(out, xrelay.interpret(text, x=x))
    np.testing.assert_array_equal(out, np.full(4, expected, np.float32))
    with pytest.raises(xrelay.VerifyError, match="'relay.max' reduces axis 0 of length 0"):
        xrelay.build(text.replace(f"relay.{op}", "relay.max"))


@pytest.mark.parametrize("shape, size", [("100000x100000x100000", "3.55 PiB"), ("9223372036854775807x4", "128 EiB")])
@pytest.mark.parametrize("device", ["cpu", "opencl"])
def test_a_tensor_larger_than_the_device_is_a_build_error(shape: str, size: str, device: str) -> None:
    """It was numpy's MemoryError, a ValueError (an int64 overflow), or no error on OpenCL."""
    ty = f"tensor<{shape}xf32>"
    text = f"func.func @main(%x: {ty}) -> {ty} {{\n  %0 = relay.exp %x : {ty}\n  func.return %0 : {ty}\n}}"
    message = f"input x \\(node 0, shape \\[{shape.replace('x', ', ')}\\]\\) takes {size}, but device {device}:0 allocates at most"
    with pytest.raises(DeviceError, match=message):
        xrelay.build(text, targets=("c", "opencl"), default_device=device)


def test_a_memref_parameter_of_main_is_named() -> None:
    text = "func.func @main(%x: memref<4xf32>) -> memref<4xf32> {\n  func.return %x : memref<4xf32>\n}"
    with pytest.raises(xrelay.CompileError, match="parameter %x is memref<4xf32>; @main takes and returns tensors"):
        xrelay.build(text)


@pytest.mark.parametrize(
    "table, message",
    [
        (
            {("opencl", 0): "cpu"},
            "scope opencl:0's kernels are OpenCL C and cannot run on device cpu, which runs C kernels; map the scope to a device of its kind, e.g. 'opencl:0'",
        ),
        (
            {"cpu:0": "opencl:0"},
            "scope cpu:0's kernels are C and cannot run on device opencl:0, which runs OpenCL C kernels; map the scope to a device of its kind, e.g. 'cpu'",
        ),
        (
            {"opencl:3": "opencl:0"},
            "the device table maps opencl:3, which the program does not use; its scopes are cpu:0, opencl:0",
        ),
    ],
)
def test_device_table_errors_name_the_scope(table: Any, message: str) -> None:
    text = (Path(__file__).parents[2] / "examples" / "two_devices.mlir").read_text()
    with pytest.raises(DeviceError, match=re.escape(message)):
        xrelay.build(text, targets=("c", "opencl"), devices=table)


def test_progress_names_each_stage(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    xrelay.build(MLP, targets=("c", "opencl"), progress=True)
    lines = capsys.readouterr().err.splitlines()
    assert [line.split(maxsplit=3)[3] for line in lines[: len(driver.PIPELINE)]] == list(driver.PIPELINE)
    assert (
        lines[-2].endswith("emitted 4 kernels, 4 distinct (3 C, 1 OpenCL C)")
        and "built them on cpu, opencl:0" in lines[-1]
    )
    xrelay.build(ADD)
    assert capsys.readouterr().err == ""  # off by default
    monkeypatch.setenv("XRELAY_PROGRESS", "1")
    xrelay.build(ADD)
    assert "plan-devices" in capsys.readouterr().err


def test_profile_reports_the_activation_memory_apart_from_the_params() -> None:
    """A dense with its weight a param: the pool holds the weight once, and a run's own peak
    (its activations: input, hidden result, output, each in one storage at most) leaves it out."""
    text = """
func.func @main(%x: tensor<8x64xf32>, %w: tensor<256x64xf32>) -> tensor<8x256xf32> {
  %0 = relay.nn.dense %x, %w : (tensor<8x64xf32>, tensor<256x64xf32>) -> tensor<8x256xf32>
  %1 = relay.nn.relu %0 : tensor<8x256xf32>
  %2 = relay.exp %1 : tensor<8x256xf32>
  func.return %2 : tensor<8x256xf32>
}"""
    rng = np.random.default_rng(0)
    w = rng.standard_normal((256, 64)).astype(np.float32)
    exe = xrelay.build(text, targets=("c",), params={"w": w})
    profile = exe.profile(x=rng.standard_normal((8, 64)).astype(np.float32))
    (device,) = profile.pool_bytes
    activations = profile.activation_bytes[device]
    assert 8 * 64 * 4 + 8 * 256 * 4 <= activations <= 8 * 64 * 4 + 2 * 8 * 256 * 4
    assert profile.pool_bytes[device] >= activations + w.nbytes
    assert f"of which activations {activations}" in str(profile)
