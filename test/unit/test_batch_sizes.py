"""xrelay.build(..., batch_sizes=...): one executable, a graph per batch size, params and
kernels shared; `run` at any batch against xrelay.interpret per sample; models that do not
carry the batch refused, naming the op; save/load with the runtime alone; OpenCL."""

from __future__ import annotations

import os

os.environ.setdefault("POCL_DEVICES", "pthread pthread")

import hashlib
import json
import subprocess
import sys
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp

import xrelay
from xrelay.batching import i64_array
from xrelay.dialects import relay
from xrelay.errors import ArtifactError, InputError, UsageError
from xrelay.runtime.batched import REPLAN_EVERY, Piece, estimated, fastest_pieces, pieces
from xrelay.runtime.signing import sign

RUNS = (1, 3, 4, 5, 16, 17, 40)
SIZES = (1, 4, 16)
RNG = np.random.default_rng(31)


def mlp() -> tuple[ModuleOp, dict[str, np.ndarray]]:
    b = xrelay.Builder()
    x = b.input("x", (1, 32))
    w1, b1, w2 = b.input("w1", (64, 32)), b.input("b1", (64,)), b.input("w2", (10, 64))
    h = b.nn.relu(b.nn.bias_add(b.nn.dense(x, w1), b1))
    params = {"w1": _random(64, 32), "b1": _random(64), "w2": _random(10, 64)}
    return b.finish(b.nn.softmax(b.nn.dense(h, w2))), params


def cnn() -> tuple[ModuleOp, dict[str, np.ndarray]]:
    """conv, relu, max-pool, a reshape to a shape with the batch (1) in it, dense."""
    b = xrelay.Builder()
    x = b.input("x", (1, 3, 16, 16))
    w, w2 = b.input("w", (8, 3, 3, 3)), b.input("w2", (10, 512))
    h = b.nn.max_pool2d(b.nn.relu(b.nn.conv2d(x, w, padding=(1, 1))), (2, 2))
    params = {"w": _random(8, 3, 3, 3), "w2": _random(10, 512)}
    return b.finish(b.nn.dense(b.reshape(h, (1, 512)), w2)), params


def _random(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def per_sample(module: ModuleOp, params: dict[str, np.ndarray], x: np.ndarray) -> np.ndarray:
    """The interpreter's result for each sample of `x` alone, stacked."""
    return np.concatenate([np.asarray(xrelay.interpret(module, {"x": x[i : i + 1], **params})) for i in range(len(x))])


MODELS: dict[str, Callable[[], tuple[ModuleOp, dict[str, np.ndarray]]]] = {"mlp": mlp, "cnn": cnn}


class Case(NamedTuple):
    exe: xrelay.Executable
    x: np.ndarray  # max(RUNS) samples
    expected: np.ndarray  # the interpreter's result for each
    params: dict[str, np.ndarray]


@pytest.fixture(scope="module", params=list(MODELS))
def built(request: pytest.FixtureRequest) -> Case:
    module, params = MODELS[request.param]()
    exe = xrelay.build(module, targets=("c",), params=params, batch_sizes=SIZES)
    shape = tuple(module.body.block.first_op.args[0].type.get_shape())  # type: ignore[union-attr]
    x = RNG.standard_normal((max(RUNS), *shape[1:])).astype(np.float32)
    return Case(exe, x, per_sample(module, params, x), params)


def test_pieces_take_the_smallest_size_that_fits() -> None:
    assert pieces(3, SIZES) == [Piece(0, 3, 4)]
    assert pieces(16, SIZES) == [Piece(0, 16, 16)]
    assert pieces(17, SIZES) == [Piece(0, 16, 16), Piece(16, 1, 1)]
    assert pieces(40, SIZES) == [Piece(0, 16, 16), Piece(16, 16, 16), Piece(32, 8, 16)]


def test_fastest_pieces_sum_the_least_time() -> None:
    flat = {1: 15.4, 4: 60.0, 16: 237.0}  # ResNet-18-like: a batch gains little per sample
    assert fastest_pieces(7, flat) == [Piece(0, 4, 4), Piece(4, 1, 1), Piece(5, 1, 1), Piece(6, 1, 1)]
    assert fastest_pieces(16, flat) == [Piece(0, 16, 16)]
    steep = {1: 1.0, 4: 1.2, 16: 2.0}  # MLP-like: padding is cheaper than a run more
    assert fastest_pieces(2, steep) == [Piece(0, 2, 4)]
    assert fastest_pieces(7, steep) == [Piece(0, 7, 16)]
    assert fastest_pieces(17, steep) == [Piece(0, 16, 16), Piece(16, 1, 1)]
    assert fastest_pieces(5, {1: 1.0, 4: 4.0}) == [Piece(0, 4, 4), Piece(4, 1, 1)]  # a tie: fewer runs


def test_a_size_not_run_yet_is_estimated_at_the_best_time_per_row() -> None:
    assert estimated(SIZES, {}) is None
    assert estimated(SIZES, {4: [4.0, 8.0, 5.0], 16: [8.0]}) == {1: 0.5, 4: 5.0, 16: 8.0}


def test_the_plan_pads_until_a_size_has_run_then_follows_the_run_times(built: Case) -> None:
    exe, x, expected, _ = built
    assert exe.batched is not None
    graphs = type(exe.batched)(exe.batched.executors)  # a fresh one: no run times yet
    assert graphs.plan(3) == pieces(3, SIZES)
    graphs.recent = {1: deque([1.0]), 4: deque([10.0]), 16: deque([40.0])}
    assert graphs.plan(3) == [Piece(0, 1, 1), Piece(1, 1, 1), Piece(2, 1, 1)]
    np.testing.assert_allclose(graphs.run({"x": x[:3]})[0], expected[:3], rtol=1e-4, atol=1e-4)
    assert [len(graphs.recent[s]) for s in SIZES] == [3, 1, 1]  # each piece's run timed but a size's first
    graphs.recent = {1: deque([5.0]), 4: deque([6.0]), 16: deque([40.0])}
    assert len(graphs.plan(3)) == 3  # the plans stand until REPLAN_EVERY runs
    graphs._runs = REPLAN_EVERY  # pyright: ignore[reportPrivateUsage]
    assert graphs.plan(3) == [Piece(0, 3, 4)] and graphs.plan(19) == [Piece(0, 16, 16), Piece(16, 3, 4)]


def test_a_sizes_first_run_is_not_timed(built: Case) -> None:
    """A size's first run (its activations touched the first time) would count it slower than
    it is, and a size known as slow is not run again: it stays estimated until its second run."""
    exe, x, _, _ = built
    assert exe.batched is not None
    graphs = type(exe.batched)(exe.batched.executors)
    graphs.recent = {1: deque([1.0]), 4: deque(), 16: deque()}
    assert graphs.plan(4) == [Piece(0, 4, 4)]  # estimated at 1.0 a row: a tie, the fewer runs
    graphs.run({"x": x[:4]})
    assert [len(graphs.recent[s]) for s in SIZES] == [1, 0, 0]
    assert graphs.plan(4) == [Piece(0, 4, 4)]  # still estimated, so tried again
    graphs.run({"x": x[:4]})
    assert [len(graphs.recent[s]) for s in SIZES] == [1, 1, 0]


def test_any_batch_equals_the_interpreter_per_sample(built: Case) -> None:
    exe, x, expected, _ = built
    assert exe.batch_sizes == SIZES
    for n in RUNS:
        out = exe.run(x[:n])
        assert isinstance(out, np.ndarray) and out.shape == (n, 10)
        np.testing.assert_allclose(out, expected[:n], rtol=1e-4, atol=1e-4, err_msg=f"batch {n}")


def param_addresses(exe: xrelay.Executable) -> dict[str, set[int]]:
    """The addresses each param has in the graphs of `exe`'s batch sizes (cpu)."""
    assert exe.batched is not None
    addresses: dict[str, set[int]] = {}
    for size, ex in exe.batched.executors.items():
        assert ex.entries[next(iter(ex.inputs.values()))].shape[0] == size
        for index, node in enumerate(ex.nodes):
            if node["op"] == "null" and node["name"] in ex.params:
                view = np.asarray(ex.view(index, ex.shared[ex.entries[index].storage]))
                addresses.setdefault(node["name"], set()).add(view.__array_interface__["data"][0])
    return addresses


def test_the_params_are_stored_and_held_once(built: Case) -> None:
    addresses = param_addresses(built.exe)
    assert addresses and all(len(a) == 1 for a in addresses.values()), addresses
    assert set(addresses) == set(built.exe.params)


def test_the_artifact_stores_the_params_once(built: Case, tmp_path: Path) -> None:
    exe, x, expected, params = built
    exe.save(tmp_path / "batched.xrelay")
    weights = sum(a.nbytes for a in exe.params.values())
    # these models' weights are read as they are at every size: one copy of each
    assert sorted(a.nbytes for a in exe.params.values()) == sorted(w.nbytes for w in params.values())
    assert (tmp_path / "batched.xrelay" / "params.npz").stat().st_size < weights + 4096
    assert {p.name for p in (tmp_path / "batched.xrelay").glob("*.json")} == {
        "manifest.json", "graph.json", "batch1.json", "batch4.json"
    }  # fmt: skip
    loaded = xrelay.load(tmp_path / "batched.xrelay")
    assert loaded.batch_sizes == SIZES
    np.testing.assert_allclose(loaded.run(x[:5]), expected[:5], rtol=1e-4, atol=1e-4)
    # every size's graph runs on the loaded arrays themselves (read-only), not on copies
    loaded_params = {name: array.__array_interface__["data"][0] for name, array in loaded.params.items()}
    assert param_addresses(loaded) == {name: {address} for name, address in loaded_params.items()}


LOAD_AND_RUN = """
import sys
import numpy as np
import xrelay.runtime
exe = xrelay.runtime.load(sys.argv[1])
x = np.load(sys.argv[2])
np.save(sys.argv[3], np.concatenate([exe.run(x[:n]) for n in (1, 3, 17, 40)]))
print(exe.batch_sizes, sorted(m for m in sys.modules if m.split(".")[0] in ("xdsl", "onnx")))
"""


def test_the_runtime_alone_loads_and_serves_it(tmp_path: Path) -> None:
    module, params = mlp()
    x = RNG.standard_normal((40, 32)).astype(np.float32)
    xrelay.build(module, params=params, batch_sizes=SIZES).save(tmp_path / "mlp.xrelay")
    np.save(tmp_path / "x.npy", x)
    result = subprocess.run(
        [sys.executable, "-c", LOAD_AND_RUN, str(tmp_path / "mlp.xrelay"), str(tmp_path / "x.npy"), str(tmp_path / "out.npy")],
        capture_output=True, text=True, check=False, env=dict(os.environ),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "(1, 4, 16) []"
    expected = per_sample(module, params, x)
    runs = np.concatenate([expected[:n] for n in (1, 3, 17, 40)])
    np.testing.assert_allclose(np.load(tmp_path / "out.npy"), runs, rtol=1e-4, atol=1e-4)


def test_kernels_equal_across_sizes_are_built_once() -> None:
    b = xrelay.Builder()
    x = b.input("x", (1, 8))
    w = _random(8, 16)
    module = b.finish(b.nn.dense(x, b.transpose(b.exp(b.const(w)))))  # exp-transpose: one for all sizes
    exe = xrelay.build(module, batch_sizes=SIZES)
    calls = {
        size: [n["attrs"]["func_name"] for n in g["nodes"] if n["op"] != "null"] for size, g in exe.batches.items()
    }
    names = [k.name for k in exe.kernels]
    assert len(names) == len(set(names)) == 1 + len(SIZES), calls
    assert len({c[0] for c in calls.values()}) == 1 and len({c[-1] for c in calls.values()}) == len(SIZES), calls
    x4 = _random(4, 8)
    np.testing.assert_allclose(exe.run(x4), x4 @ np.exp(w), rtol=1e-5, atol=1e-5)


def test_a_reshape_that_folds_the_batch_is_refused_naming_it() -> None:
    b = xrelay.Builder()
    x = b.input("x", (1, 4, 8))
    module = b.finish(b.nn.dense(b.reshape(x, (4, 8)), b.const(_random(16, 8))))
    with pytest.raises(UsageError, match=r"relay\.reshape .*merged it with another axis"):
        xrelay.build(module, batch_sizes=(1, 2))
    b = xrelay.Builder()
    x = b.input("x", (1, 4, 8))
    module = b.finish(b.transpose(b.reshape(b.transpose(x, (1, 0, 2)), (2, 16, 1)), (2, 0, 1)))
    with pytest.raises(UsageError, match=r"relay\.reshape at .* fixed shape \[2, 16, 1\], which splits"):
        xrelay.build(module, batch_sizes=(1, 2))


def test_an_op_that_drops_the_batch_is_refused_naming_it() -> None:
    b = xrelay.Builder()
    x = b.input("x", (1, 8))
    module = b.finish(b.add(x, b.sum(x, axis=0, keepdims=True)))
    with pytest.raises(UsageError, match=r"relay\.sum at .* no longer depends on the batch"):
        xrelay.build(module, batch_sizes=(1, 4))


def test_run_checks_the_per_sample_shape_dtype_and_batch(
    built: Case,
) -> None:
    exe, x, _, _ = built
    per_sample_shape = ", ".join(map(str, x.shape[1:]))
    with pytest.raises(InputError, match=rf"input x must have shape \[N, {per_sample_shape}\]"):
        exe.run(x[:3, ..., :-1])
    with pytest.raises(InputError, match=r"input x must have dtype float32, but has dtype float64"):
        exe.run(x[:3].astype(np.float64))
    with pytest.raises(InputError, match="batch of at least 1"):
        exe.run(x[:0])
    with pytest.raises(InputError, match="missing x"):
        exe.run(y=x[:3])


def test_profile_runs_the_size_the_batch_runs_at(built: Case) -> None:
    exe, x, expected, _ = built
    profile = exe.profile(x[:3], runs=2)
    np.testing.assert_allclose(profile.outputs, expected[:3], rtol=1e-4, atol=1e-4)
    assert profile.timings[-1].step.shape == (4, 10)  # the graph of batch 4
    with pytest.raises(InputError, match="at most 16"):
        exe.profile(x[:17])


def test_concurrent_runs_of_different_batches(built: Case) -> None:
    exe, x, expected, _ = built
    batches = [n for n in RUNS for _ in range(3)]
    with ThreadPoolExecutor(4) as pool:
        outs = list(pool.map(lambda n: exe.run(x[:n]), batches))
    for n, out in zip(batches, outs):
        np.testing.assert_allclose(out, expected[:n], rtol=1e-4, atol=1e-4)


def test_an_executable_without_batch_sizes_has_none_and_takes_its_exact_shape() -> None:
    module, params = mlp()
    exe = xrelay.build(module, params=params)
    assert exe.batch_sizes == ()
    with pytest.raises(InputError, match="no graph of batch size 1; .* none: it was built without batch_sizes"):
        exe.placement(1)
    with pytest.raises(InputError, match=r"must have shape \[1, 32\]"):
        exe.run(np.zeros((3, 32), np.float32))


def test_bad_batch_sizes_are_a_usage_error() -> None:
    module, params = mlp()
    for bad in ((), (0, 4), 4, ("4",)):
        with pytest.raises(UsageError, match="batch_sizes"):
            xrelay.build(module, params=params, batch_sizes=bad)  # type: ignore[arg-type]


def test_onnx_model_with_a_symbolic_batch_and_int64_inputs() -> None:
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    table, weight = _random(20, 6), _random(6, 3)
    graph = helper.make_graph(
        [
            helper.make_node("Gather", ["table", "ids"], ["emb"]),
            helper.make_node("ReduceMean", ["emb"], ["pooled"], axes=[1], keepdims=0),
            helper.make_node("Cast", ["mask"], ["maskf"], to=TensorProto.FLOAT),
            helper.make_node("MatMul", ["pooled", "w"], ["y"]),
            helper.make_node("Mul", ["y", "maskf"], ["out"]),
        ],
        "g",
        [
            helper.make_tensor_value_info("ids", TensorProto.INT64, ["batch", 5]),
            helper.make_tensor_value_info("mask", TensorProto.BOOL, ["batch", 3]),
        ],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, ["batch", 3])],
        [numpy_helper.from_array(table, "table"), numpy_helper.from_array(weight, "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    module, params = xrelay.from_onnx(model, shapes={"ids": (1, 5), "mask": (1, 3)})
    exe = xrelay.build(module, params=params, batch_sizes=(1, 4))
    for n in (1, 3, 6):
        ids = RNG.integers(0, 20, (n, 5), dtype=np.int64)
        mask = RNG.integers(0, 2, (n, 3)).astype(bool)
        expected = (table[ids].mean(axis=1) @ weight) * mask
        np.testing.assert_allclose(exe.run(ids=ids, mask=mask), expected, rtol=1e-5, atol=1e-5)
        reference: list[Any] = [
            xrelay.interpret(module, {"ids": ids[i : i + 1], "mask": mask[i : i + 1], **params}) for i in range(n)
        ]
        np.testing.assert_allclose(exe.run({"ids": ids, "mask": mask}), np.concatenate(reference), rtol=1e-5, atol=1e-5)
    del onnx


def test_opencl_graphs_share_the_params_buffers() -> None:
    pytest.importorskip("pyopencl")
    module, params = mlp()
    exe = xrelay.build(module, targets=("c", "opencl"), default_device="opencl", params=params, batch_sizes=(1, 4))
    x = RNG.standard_normal((9, 32)).astype(np.float32)
    expected = per_sample(module, params, x)
    np.testing.assert_allclose(exe.run(x), expected, rtol=1e-4, atol=1e-4)
    batches = [1, 3, 4, 5, 9] * 3
    with ThreadPoolExecutor(4) as pool:
        outs = list(pool.map(lambda n: exe.run(x[:n]), batches))
    for n, out in zip(batches, outs):
        np.testing.assert_allclose(out, expected[:n], rtol=1e-4, atol=1e-4)
    assert exe.batched is not None
    buffers = [ex.shared for ex in exe.batched.executors.values()]
    on_opencl = {d for d, label in enumerate(exe.executor.labels) if label.startswith("opencl")}
    assert on_opencl
    # every param buffer of the small size's graph is one of the large one's, the same object
    large = {id(b) for b in buffers[-1].values()}
    assert buffers[0] and all(id(b) in large for b in buffers[0].values())


def _write_signed(root: Path, manifest: dict[str, Any]) -> None:
    text = json.dumps(manifest).encode()
    (root / "manifest.json").write_bytes(text)
    (root / "manifest.sig").write_text(sign(text))


def test_a_version_4_artifact_of_one_graph_still_loads(tmp_path: Path) -> None:
    module, params = mlp()
    xrelay.build(module, params=params).save(tmp_path / "v4.xrelay")
    manifest = json.loads((tmp_path / "v4.xrelay" / "manifest.json").read_text())
    assert manifest["version"] == 5 and manifest["batches"] == []
    del manifest["batches"]
    _write_signed(tmp_path / "v4.xrelay", {**manifest, "version": 4})
    x = _random(1, 32)
    np.testing.assert_allclose(
        xrelay.load(tmp_path / "v4.xrelay").run(x), per_sample(module, params, x), rtol=1e-4, atol=1e-6
    )


def test_every_batch_graph_is_checked_at_load(built: Case, tmp_path: Path) -> None:
    built.exe.save(tmp_path / "a.xrelay")
    root = tmp_path / "a.xrelay"
    manifest = json.loads((root / "manifest.json").read_text())
    _write_signed(root, {**manifest, "batches": [*manifest["batches"], {"size": 4, "file": "batch4.json"}]})
    with pytest.raises(ArtifactError, match="batch size 4; expected distinct sizes"):
        xrelay.load(root)
    graph = json.loads((root / "batch4.json").read_text())
    graph["attrs"]["shape"][1][0][0] = 5  # input x at batch 5 in the graph of batch 4
    (root / "batch4.json").write_text(json.dumps(graph))
    manifest["files"]["batch4.json"] = hashlib.sha256((root / "batch4.json").read_bytes()).hexdigest()
    _write_signed(root, manifest)
    with pytest.raises(ArtifactError, match=r"batch4\.json: node .* as \[5, .* but the kernel takes \[4, "):
        xrelay.load(root)


def test_several_results_each_sliced_and_concatenated() -> None:
    b = xrelay.Builder()
    x = b.input("x", (1, 3, 4))
    module = b.finish(b.nn.relu(x), b.sum(b.exp(x), axis=2))
    exe = xrelay.build(module, batch_sizes=(2, 8))
    for n in (1, 2, 9, 19):
        data = RNG.standard_normal((n, 3, 4)).astype(np.float32)
        relu, sums = exe.run([data])
        np.testing.assert_array_equal(relu, np.maximum(data, 0))
        np.testing.assert_allclose(sums, np.exp(data).sum(axis=2), rtol=1e-5)


def test_a_softmax_along_the_batch_axis_is_refused() -> None:
    b = xrelay.Builder()
    x = b.input("x", (1, 8))
    module = b.finish(b.nn.softmax(b.nn.relu(x), axis=0))
    with pytest.raises(UsageError, match=r"relay\.nn\.softmax at .* normalizes along axis 0, the batch axis"):
        xrelay.build(module, batch_sizes=(1, 4))


def test_one_size_that_is_the_models_own_is_checked_too() -> None:
    b = xrelay.Builder()
    x = b.input("x", (1, 8))
    module = b.finish(b.sum(x, axis=0))
    with pytest.raises(UsageError, match=r"relay\.sum at .* no longer depends on the batch"):
        xrelay.build(module, batch_sizes=(1,))


def test_a_slice_that_takes_the_whole_batch_and_a_constant_concatenated_follow_it() -> None:
    """As an importer writes them at batch 1: `x[:, :3]` with the batch's end (1), and a
    constant row concatenated to each sample (ViT's class token, its expand folded away)."""
    b = xrelay.Builder()
    x = b.input("x", (1, 6, 4))
    token = _random(1, 1, 4)
    head = b.op(relay.StridedSliceOp, [x], {"begin": i64_array([0, 0]), "end": i64_array([1, 3])})
    y = b.concatenate([b.const(token), b.nn.relu(head)], axis=1)
    exe = xrelay.build(b.finish(y), batch_sizes=(1, 4))
    for n in (1, 3, 6):
        data = RNG.standard_normal((n, 6, 4)).astype(np.float32)
        expected = np.concatenate([np.repeat(token, n, axis=0), np.maximum(data[:, :3], 0)], axis=1)
        np.testing.assert_array_equal(exe.run(data), expected)
    b = xrelay.Builder()
    x = b.input("x", (2, 6))
    module = b.finish(b.op(relay.StridedSliceOp, [x], {"begin": i64_array([0]), "end": i64_array([1])}))
    with pytest.raises(UsageError, match=r"relay\.strided_slice at .* no longer depends on the batch"):
        xrelay.build(module, batch_sizes=(2, 4))


# The diamond of test_place_by_cost.py with a batch axis, %b reading a param: %b and %c take
# 1 ms on cpu and 1.2 / 1.3 ms on opencl, a copy 10 us + 2 MB/s. At batch 1 (256 B, 0.14 ms a
# copy) running %b on opencl beside %c on cpu pays for its copies (about 1.5 ms a run, not 2);
# at batch 16 (4 KB, 2 ms a copy) it does not.
DIAMOND = """
func.func @main(%x: tensor<1x64xf32>, %w: tensor<1x64xf32>) -> tensor<1x64xf32> {
  %a = "relay.exp"(%x) : (tensor<1x64xf32>) -> tensor<1x64xf32>
  %b = "relay.multiply"(%a, %w) : (tensor<1x64xf32>, tensor<1x64xf32>) -> tensor<1x64xf32>
  %c = "relay.tanh"(%a) : (tensor<1x64xf32>) -> tensor<1x64xf32>
  %d = "relay.add"(%b, %c) : (tensor<1x64xf32>, tensor<1x64xf32>) -> tensor<1x64xf32>
  func.return %d : tensor<1x64xf32>
}
"""
DIAMOND_COSTS = {
    "ops": {
        "%a": {"cpu": 1e-6, "opencl": 1e-6},
        "%b": {"cpu": 1e-3, "opencl": 1.2e-3},
        "%c": {"cpu": 1e-3, "opencl": 1.3e-3},
        "%d": {"cpu": 1e-6, "opencl": 1e-6},
    },
    "copies": {pair: {"latency": 1e-5, "bandwidth": 2e6} for pair in ("cpu->opencl", "opencl->cpu")},
}


def kinds_used(exe: xrelay.Executable, node: str | None = None) -> dict[int, set[str]]:
    """The device kinds each size's graph holds its nodes (those named `node`) on."""
    return {
        size: {
            graph["devices"][i]["kind"]
            for i, n in zip(graph["attrs"]["device_index"][1], graph["nodes"])
            if node in (None, n["name"])
        }
        for size, graph in exe.batches.items()
    }


def test_placement_by_cost_places_each_size_by_its_own_costs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """batch 1 splits across cpu and opencl, batch 16 stays on cpu; both graphs list both
    devices (one device index means one device in all graphs and kernels); the param is stored
    once, though each size holds it on another device; any batch equals the interpreter's per
    sample, built and loaded from the artifact."""
    pytest.importorskip("pyopencl")
    from xrelay.transforms.place_by_cost import COSTS_ENVIRONMENT

    (tmp_path / "costs.json").write_text(json.dumps(DIAMOND_COSTS))
    monkeypatch.setenv(COSTS_ENVIRONMENT, str(tmp_path / "costs.json"))
    params = {"w": _random(1, 64)}
    exe = xrelay.build(
        DIAMOND, targets=("c", "opencl"), default_device="cpu", params=params, placement="auto", batch_sizes=(1, 16)
    )
    assert kinds_used(exe) == {1: {"cpu", "opencl"}, 16: {"cpu"}}
    assert [[d["kind"] for d in graph["devices"]] for graph in exe.batches.values()] == [["cpu", "opencl"]] * 2
    (name,) = exe.params
    assert kinds_used(exe, name) == {1: {"opencl"}, 16: {"cpu"}}
    kernels_at = {
        size: {device.split(":")[0] for _, device in exe.placement(size) if "->" not in device} for size in (1, 16)
    }
    assert kernels_at == {1: {"cpu", "opencl"}, 16: {"cpu"}}
    assert exe.placement() == exe.placement(16)
    with pytest.raises(InputError, match="no graph of batch size 4; the executable's batch sizes are 1, 16"):
        exe.placement(4)
    exe.save(tmp_path / "diamond.xrelay")
    loaded = xrelay.runtime.load(tmp_path / "diamond.xrelay")
    assert kinds_used(loaded) == kinds_used(exe)
    module = xrelay.parse(DIAMOND)
    x = _random(20, 64)
    expected = per_sample(module, params, x)
    for n in (1, 3, 16, 20):
        for runner in (exe, loaded):
            np.testing.assert_allclose(runner.run(x=x[:n]), expected[:n], rtol=1e-5, atol=1e-6)


def test_placement_by_cost_measures_each_size(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Measured costs (a fresh cache): each size is measured and placed with its params bound
    (the larger size's weight held as it is, as the smaller reads it), and any batch equals
    the interpreter's per sample."""
    pytest.importorskip("pyopencl")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    module, params = mlp()
    exe = xrelay.build(
        module, targets=("c", "opencl"), default_device="cpu", params=params, placement="auto", batch_sizes=(1, 16)
    )
    # node times per device at each size (2 x 2), copy costs per pair of devices (2)
    assert len(list((tmp_path / "xrelay" / "placement").glob("*.json"))) == 6
    x = _random(20, 32)
    expected = per_sample(module, params, x)
    for n in (1, 3, 16, 20):
        np.testing.assert_allclose(exe.run(x[:n]), expected[:n], rtol=1e-4, atol=1e-4)


def test_a_graph_given_the_devices_of_all_sizes_lists_them_and_refuses_a_missing_one() -> None:
    """Two graphs given the devices of both list them alike, their nodes indexing them: all on
    opencl (its inputs too) at index 1, not 0 as in its own list; all on cpu at index 0. A list
    without the device of one of its tensors is a LoweringError naming the tensor."""
    from xrelay.driver import lower
    from xrelay.targets.graph_json import executor_graph, planned_devices, scope_order

    text = DIAMOND.replace('"relay.multiply"(%a, %w)', '"relay.multiply"(%a, %a)').replace(", %w: tensor<1x64xf32>", "")
    on_opencl, on_cpu = xrelay.parse(text), xrelay.parse(text)
    lower(on_opencl, ("c", "opencl"), "opencl", "c")
    lower(on_cpu, ("c", "opencl"), "cpu", "c")
    both = sorted(planned_devices(on_opencl) | planned_devices(on_cpu), key=scope_order)
    assert [s.device for s in both] == ["cpu", "opencl"]
    assert [s.device for s in executor_graph(on_opencl).devices] == ["opencl"]
    for module, index in ((on_opencl, 1), (on_cpu, 0)):
        graph = executor_graph(module, both).graph
        assert [d["kind"] for d in graph["devices"]] == ["cpu", "opencl"]
        assert set(graph["attrs"]["device_index"][1]) == {index}
    with pytest.raises(
        xrelay.LoweringError, match=r"given the devices .*cpu.* but %\w+ is on .*opencl.*, which is not one of"
    ):
        executor_graph(on_opencl, both[:1])


@pytest.mark.parametrize(
    ("sizes", "width", "packed"),
    [
        ((1, 64), 512, True),
        ((16, 64), 512, True),
        ((1, 28), 512, True),
        ((28, 64), 512, True),
        ((1, 64), 16, False),
        ((16, 64), 16, False),
    ],
)
def test_a_weight_some_sizes_would_pre_pack_is_held_in_one_layout(
    sizes: tuple[int, ...], width: int, packed: bool, tmp_path: Path
) -> None:
    """Dense 256 -> `width`. 512 wide, it reads its weight from packed_matmul's pre-packed
    panels at a batch of 1 (packed_gemv) as at 16 and 64 (packed_matmul): every size reads
    the one packed copy (at 28 rows too, where a build of one size packs for AVX-512's 7 x 3
    tile). 16 wide, a batch of 1 reads it as it is (too little work for a
    tile) and 64 would pre-pack it: both read it as it is (one copy, the original's bytes,
    `hold_as_is`; 16 rows are too little work for packed_matmul too)."""
    b = xrelay.Builder()
    x, w = b.input("x", (1, 256)), b.input("w", (width, 256))
    module = b.finish(b.nn.relu(b.nn.dense(x, w)))
    params = {"w": _random(width, 256)}
    exe = xrelay.build(module, targets=("c",), params=params, batch_sizes=sizes)
    assert len(exe.params) == 1, {name: a.shape for name, a in exe.params.items()}
    (stored,) = exe.params.values()
    assert (stored.shape != params["w"].shape) == packed, stored.shape  # packed: [panels, k, columns]
    exe.save(tmp_path / "dense.xrelay")
    assert (tmp_path / "dense.xrelay" / "params.npz").stat().st_size < stored.nbytes + 4096
    xs = _random(20, 256)
    expected = per_sample(module, params, xs)
    for n in (1, 16, 20):  # (at (1, 64), 16 and 20 run at 64; at (16, 64), 1 runs at 16)
        np.testing.assert_allclose(exe.run(xs[:n]), expected[:n], rtol=1e-4, atol=1e-4)
