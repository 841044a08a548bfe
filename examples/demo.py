"""The demo: an ONNX model (examples/cnn.onnx, a small MNIST-sized CNN) imported by
`xrelay.from_onnx`, its first block placed on OpenCL by a placement rule, compiled by xrelay
and run across the host and an OpenCL device, checked against onnxruntime (or, without it,
against xrelay's reference interpreter) and timed against it.

    make demo                                   # or: .venv/bin/python examples/demo.py
    .venv/bin/python examples/demo.py --write-model   # writes examples/cnn.onnx again

The model's weights are random (seeded), so its answer is no digit; what the demo shows is
where each part runs, what it costs, and that the answer is the same as onnxruntime's.
"""

from __future__ import annotations

import os

os.environ.setdefault("POCL_DEVICES", "pthread pthread")

import argparse
import fnmatch
import pathlib
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import xrelay

MODEL = pathlib.Path(__file__).with_name("cnn.onnx")
PICTURES = MODEL.parents[1] / "build" / "demo"  # not tracked: a run leaves the checkout clean
PLACEMENT = {"/block1/*": "opencl"}  # every node of the first block (conv, relu, pool) on OpenCL
TARGETS = ("c", "opencl")

# ----------------------------------------------------------------------------------------------
# The model, written once with onnx.helper as an exporter would write it
# ----------------------------------------------------------------------------------------------


def write_model(path: pathlib.Path, seed: int = 0) -> None:
    """A CNN for 1x1x28x28 images: two blocks of Conv3x3 + Relu + MaxPool2 (1 -> 16 -> 32
    channels), Flatten, Gemm to 10 classes, Softmax; nodes named by scope like torch.onnx's."""
    rng = np.random.default_rng(seed)
    nodes, weights = [], []

    def weight(name: str, *shape: int, scale: float) -> str:
        weights.append(numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name))
        return name

    def node(scope: str, op: str, *inputs: str, **attrs: Any) -> str:
        name = f"{scope}/{op}"
        nodes.append(helper.make_node(op, list(inputs), [f"{name}_output_0"], name=name, **attrs))
        return f"{name}_output_0"

    h = "image"
    for block, (cin, cout) in enumerate([(1, 16), (16, 32)], 1):
        scope = f"/block{block}"
        w = weight(f"block{block}.conv.weight", cout, cin, 3, 3, scale=(2 / (9 * cin)) ** 0.5)
        b = weight(f"block{block}.conv.bias", cout, scale=0.1)
        h = node(scope, "Conv", h, w, b, kernel_shape=[3, 3], pads=[1, 1, 1, 1])
        h = node(scope, "MaxPool", node(scope, "Relu", h), kernel_shape=[2, 2], strides=[2, 2])
    h = node("", "Flatten", h, axis=1)
    h = node("/fc", "Gemm", h, weight("fc.weight", 10, 32 * 7 * 7, scale=(32 * 7 * 7) ** -0.5),
             weight("fc.bias", 10, scale=0.1), transB=1)  # fmt: skip
    nodes.append(helper.make_node("Softmax", [h], ["probabilities"], name="/Softmax", axis=1))
    graph = helper.make_graph(
        nodes, "cnn", [helper.make_tensor_value_info("image", TensorProto.FLOAT, (1, 1, 28, 28))],
        [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, (1, 10))], weights,
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="xrelay demo")
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, path)


def handwritten_seven() -> np.ndarray:
    """A 28x28 "7" drawn with soft strokes, normalised as MNIST is; shape 1x1x28x28."""
    rows, cols = np.mgrid[0:28, 0:28].astype(np.float32)

    def stroke(r0: float, c0: float, r1: float, c1: float) -> np.ndarray:
        t = np.clip(((rows - r0) * (r1 - r0) + (cols - c0) * (c1 - c0)) / ((r1 - r0) ** 2 + (c1 - c0) ** 2), 0, 1)
        distance = np.hypot(rows - (r0 + t * (r1 - r0)), cols - (c0 + t * (c1 - c0)))
        return np.exp(-((distance / 1.3) ** 2))

    ink = np.maximum(stroke(6, 7, 6, 21), stroke(6, 21, 23, 12))
    return ((ink - 0.1307) / 0.3081).astype(np.float32)[None, None]


# ----------------------------------------------------------------------------------------------
# The steps the demo shows
# ----------------------------------------------------------------------------------------------


def describe(model: onnx.ModelProto) -> None:
    """The model's input and nodes, and which nodes the placement rules match."""
    inputs = ", ".join(f"{i.name} {[d.dim_value for d in i.type.tensor_type.shape.dim]}" for i in model.graph.input)
    print(f"model {MODEL.name}: input {inputs}, {len(model.graph.initializer)} initializers, nodes:")
    for node in model.graph.node:
        rule = next((glob for glob in PLACEMENT if fnmatch.fnmatchcase(node.name, glob) or glob == node.op_type), None)
        where = (
            f"rule {rule!r}: {PLACEMENT[rule]}"
            if rule is not None
            else "free (plan-devices: with its consumer, or cpu)"
        )
        print(f"  {node.name:<16} {node.op_type:<8} {where}")


def compile_model() -> tuple[Any, dict[str, np.ndarray], xrelay.Executable]:
    """from_onnx with the placement rule, then build; prints what each step took."""
    start = time.perf_counter()
    module, params = xrelay.from_onnx(MODEL, placement=PLACEMENT)
    print(f"xrelay.from_onnx(placement={PLACEMENT}) in {time.perf_counter() - start:.2f} s (the first call "
          f"imports xrelay's compiler): @main takes the image and {len(params)} weights, bound at build time")  # fmt: skip
    start = time.perf_counter()
    exe = xrelay.build(module, targets=TARGETS, default_device="cpu", params=params)
    print(f"xrelay.build(targets={TARGETS}, default_device='cpu') in {time.perf_counter() - start:.2f} s "
          f"on {', '.join(d.name for d in exe.devices)}\n")  # fmt: skip
    return module, params, exe


def show_placement(exe: xrelay.Executable, image: np.ndarray) -> None:
    """Each kernel and copy in execution order, where it ran and what it took (one run after a
    warm-up); a kernel's name lists the ops fused into it."""
    exe.run(image)  # warm-up
    profile = exe.profile(image)
    print("placement (kernels and copies in execution order, one run after a warm-up):")
    for (name, device), (_, _, seconds) in zip(exe.placement(), profile.nodes):
        print(f"  {device:<18} {seconds * 1e3:7.3f} ms  {name}")
    for (src, dst), (count, nbytes) in profile.copies.items():
        print(f"copies {src} -> {dst}: {count}, {nbytes} bytes")
    print("pools: " + ", ".join(f"{dev} {nbytes} bytes" for dev, nbytes in profile.pool_bytes.items()) + "\n")


def save_pictures(module: Any, exe: xrelay.Executable, folder: pathlib.Path, *inputs: np.ndarray) -> None:
    """demo.svg, the placement and fusion picture (Graphviz), and demo_trace.json, the timeline
    of 3 profiled runs (open it in https://ui.perfetto.dev), in `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    try:
        picture = xrelay.render(module, folder / "demo.svg", targets=TARGETS, default_device="cpu")
        print(f"picture: {picture}")
    except xrelay.RenderError as e:
        print(f"no picture: {e}")
    print(f"timeline: {exe.profile(*inputs, runs=3).save_trace(folder / 'demo_trace.json')}\n")


def reference(module: Any, params: dict[str, np.ndarray], image: np.ndarray) -> tuple[str, Callable[[], Any]]:
    """onnxruntime on the same file, or xrelay's interpreter when onnxruntime is not installed."""
    try:
        import onnxruntime
    except ImportError:
        image_arg = module.ops.first.args[0].name_hint  # @main's first parameter is the image
        return "xrelay.interpret (onnxruntime is not installed)", lambda: xrelay.interpret(
            module, {image_arg: image, **params}
        )
    session = onnxruntime.InferenceSession(str(MODEL), providers=["CPUExecutionProvider"])
    return f"onnxruntime {onnxruntime.__version__}", lambda: session.run(None, {"image": image})[0]


def median_ms(fn: Callable[[], object], runs: int = 50) -> float:
    fn()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write-model", action="store_true", help=f"write {MODEL.name} again, then run")
    parser.add_argument(
        "--pictures",
        type=pathlib.Path,
        default=PICTURES,
        help="where demo.svg and the trace go (the copies in examples/ were made with --pictures examples)",
    )
    args = parser.parse_args()
    if args.write_model or not MODEL.exists():
        write_model(MODEL)
    describe(onnx.load(MODEL))
    module, params, exe = compile_model()
    image = handwritten_seven()
    save_pictures(module, exe, args.pictures, image)
    show_placement(exe, image)

    out = exe.run({"image": image})  # inputs by their ONNX names (or positionally)
    name, run_reference = reference(module, params, image)
    ref = run_reference()
    diff = float(np.max(np.abs(out - ref)))
    ok = bool(np.allclose(out, ref, rtol=1e-4, atol=1e-6))
    print(f"class probabilities: {np.array2string(out[0], precision=3)} (random weights: no digit is meant)")
    print(f"check against {name}: max |difference| {diff:.2e} -> {'OK' if ok else 'MISMATCH'}")

    xrelay_ms, reference_ms = median_ms(lambda: exe.run(image)), median_ms(run_reference)
    print(f"latency (median of 50 runs): xrelay {xrelay_ms:.3f} ms, {name.split(' (')[0]} {reference_ms:.3f} ms")
    if not ok:
        sys.exit(1)


if __name__ == "__main__":
    main()
