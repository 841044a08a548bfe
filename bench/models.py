"""Four reference models, side by side: numpy, onnxruntime, xrelay C and xrelay OpenCL (PoCL).

Each model is written three times from the same sizes: as relay text (`*_relay`), as an ONNX
graph built with `onnx.helper` (`*_onnx`), and as eager numpy (`*_numpy`). The weights are
random, scaled like trained ones, and bound at build time (`xrelay.build(..., params=)`, and
initializers in ONNX), so each run passes only the input %x.

- mlp: 784-512-512-10, batch 64: dense+bias+relu x2, dense+bias, softmax.
- cnn: batch 8, 1x28x28: conv3x3(1->16)+bias relu maxpool2, conv3x3(16->32)+bias relu
  maxpool2, dense+bias, softmax (convolutions with padding 1).
- resnet: a basic block, batch 1, 64 channels, 56x56: conv3x3-bias-relu-conv3x3-bias-add(x)-relu
  (padding 1).
- transformer: an encoder block, seq 128, d_model 256, 4 heads, ffn 1024, post-LN (layer norm
  from relay ops: mean, subtract, multiply, rsqrt), GELU with tanh.

For every model and thread count: the xrelay C executable (targets c: the native machine), the
same built for AVX2 (targets `c -march=x86-64-v3`: 8 floats x 16 registers, so a tile that only
fits AVX-512's 32 registers shows up as a slowdown even on an AVX-512 machine), the OpenCL one
(targets c and opencl, default device opencl: the whole model on opencl:0), an onnxruntime session
(`intra_op_num_threads` = the thread count, `inter_op_num_threads` = 1) and numpy are timed in
one interleaved run (`timing.interleaved_medians`: each round calls each once), and medians
are reported. Every output is checked against numpy, and so is `xrelay.interpret` of the relay
text, once per model and thread count.

Each thread count runs in a process of its own, because the thread pools read their size once,
at start-up: it sets OMP_NUM_THREADS and XRELAY_NUM_THREADS (xrelay's C kernels),
OPENBLAS_NUM_THREADS (numpy, also limited with threadpoolctl when installed) and
POCL_MAX_PTHREAD_COUNT (PoCL's pthread devices) to the count, and passes
`num_threads=` to `xrelay.build` when this xrelay has it (a cell marked "1-thread build" comes
from an xrelay without it). onnxruntime and onnx are the `bench` extra (`make bench` installs
it); without onnxruntime the ORT column is skipped. OPENBLAS_CORETYPE, when the environment
sets it, is left as it is (it slows numpy's sgemm; the header says whether it is set).

No thread pool spins between calls: a pool that spins after its call (onnxruntime's by
default, and OpenBLAS's for about 0.1 s) takes a core from whatever the interleaved run times
next (measured: a one-thread xrelay C run of the ResNet block took 30 ms instead of 14 after a
two-thread numpy or onnxruntime call). So each process also sets OPENBLAS_THREAD_TIMEOUT=4 (the
shortest), OMP_WAIT_POLICY=passive (for OpenMP kernels) and onnxruntime's
`session.intra_op.allow_spinning` to 0; `--spin` keeps every runtime's default.

Above each table is the machine: the CPU model, each C build's ISA level, vector width and
registers (`xrelay.runtime.machine.target_features`), the fp32 FMA peak of one core for each,
measured in the same run (bench/fma_peak.py), and the OpenCL device. Under each table is the
1-minute load average before and after its run. On a shared machine,
times at several threads swing with whatever else runs (a threaded OpenBLAS or PoCL waits for
its slowest thread, and a busy core makes that one slow): compare ratios within one run.

    .venv/bin/python bench/models.py [--rounds 30] [--models mlp,cnn,resnet,transformer]
                                     [--threads 1,2] [--profile] [--spin] [--print-relay MODEL]
"""

from __future__ import annotations

import os

os.environ.setdefault("POCL_DEVICES", "pthread pthread")

import argparse
import dataclasses
import json
import math
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

sys.path.insert(0, str(Path(__file__).parent))
from fma_peak import fma_peak
from timing import interleaved_medians

Shape = tuple[int, ...]
Arrays = dict[str, np.ndarray]

# ----------------------------------------------------------------------------------------------
# Relay text
# ----------------------------------------------------------------------------------------------

UNARY_SYNTAX = {"relay.nn.relu", "relay.tanh", "relay.rsqrt", "relay.exp", "relay.sqrt", "relay.negative"}


def tensor_type(shape: Shape) -> str:
    return f"tensor<{''.join(f'{d}x' for d in shape)}f32>"


class Relay:
    """Writes one relay `@main`, op by op: each method prints one op and returns its SSA value.
    A result's shape is given, or the numpy broadcast of the operands' shapes."""

    def __init__(self) -> None:
        self.args: list[str] = []
        self.body: list[str] = []
        self.shapes: dict[str, Shape] = {}

    def param(self, name: str, *shape: int) -> str:
        self.args.append(f"%{name}: {tensor_type(shape)}")
        self.shapes[f"%{name}"] = shape
        return f"%{name}"

    def op(self, op: str, *operands: str, shape: Shape | None = None, attrs: str = "") -> str:
        if shape is None:
            shape = tuple(np.broadcast_shapes(*(self.shapes[v] for v in operands)))
        if op in UNARY_SYNTAX:
            signature = tensor_type(shape)
        else:
            signature = f"({', '.join(tensor_type(self.shapes[v]) for v in operands)}) -> {tensor_type(shape)}"
        value = f"%{len(self.body)}"
        attributes = f" {{{attrs}}}" if attrs else ""
        self.body.append(f"  {value} = {op} {', '.join(operands)}{attributes} : {signature}")
        self.shapes[value] = shape
        return value

    def scalar(self, value: float) -> str:
        """A rank-0 f32 constant (it broadcasts against anything)."""
        name = f"%{len(self.body)}"
        self.body.append(f"  {name} = relay.constant {{value = dense<{value:.9e}> : tensor<f32>}} : tensor<f32>")
        self.shapes[name] = ()
        return name

    def text(self, result: str) -> str:
        out = tensor_type(self.shapes[result])
        return "\n".join([
            f"func.func @main({', '.join(self.args)}) -> {out} {{",
            *self.body,
            f"  func.return {result} : {out}",
            "}",
        ])  # fmt: skip

    # The layers the models share, each a few relay ops.

    def linear(self, x: str, w: str, b: str) -> str:
        """dense + bias_add: `x @ w.T + b`."""
        y = self.op("relay.nn.dense", x, w, shape=self.shapes[x][:-1] + self.shapes[w][:1])
        return self.op("relay.nn.bias_add", y, b, shape=self.shapes[y], attrs=f"axis = {len(self.shapes[y]) - 1} : i64")

    def conv3x3(self, x: str, w: str, b: str) -> str:
        """conv2d 3x3 with padding 1 (the size is kept) + bias_add."""
        n, _, h, width = self.shapes[x]
        y = self.op("relay.nn.conv2d", x, w, shape=(n, self.shapes[w][0], h, width),
                    attrs="padding = array<i64: 1, 1, 1, 1>")  # fmt: skip
        return self.op("relay.nn.bias_add", y, b, shape=self.shapes[y])

    def max_pool2(self, x: str) -> str:
        n, c, h, w = self.shapes[x]
        return self.op("relay.nn.max_pool2d", x, shape=(n, c, h // 2, w // 2),
                       attrs="pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>")  # fmt: skip

    def reshape(self, x: str, *shape: int) -> str:
        return self.op("relay.reshape", x, shape=shape)

    def transpose(self, x: str, *axes: int) -> str:
        shape = tuple(self.shapes[x][a] for a in axes)
        return self.op("relay.transpose", x, shape=shape, attrs=f"axes = array<i64: {', '.join(map(str, axes))}>")

    def mean_last(self, x: str) -> str:
        shape = self.shapes[x][:-1] + (1,)
        return self.op("relay.mean", x, shape=shape, attrs="axis = array<i64: -1>, keepdims = true")

    def layer_norm(self, x: str, gamma: str, beta: str, eps: float = 1e-5) -> str:
        """(x - mean) * rsqrt(var + eps) * gamma + beta, over the last axis."""
        centered = self.op("relay.subtract", x, self.mean_last(x))
        variance = self.mean_last(self.op("relay.multiply", centered, centered))
        inv_std = self.op("relay.rsqrt", self.op("relay.add", variance, self.scalar(eps)))
        normed = self.op("relay.multiply", centered, inv_std)
        return self.op("relay.add", self.op("relay.multiply", normed, gamma), beta)

    def gelu_tanh(self, x: str) -> str:
        """0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""
        cube = self.op("relay.multiply", self.op("relay.multiply", x, x), x)
        inner = self.op("relay.add", x, self.op("relay.multiply", cube, self.scalar(0.044715)))
        t = self.op("relay.tanh", self.op("relay.multiply", inner, self.scalar(math.sqrt(2 / math.pi))))
        half_x = self.op("relay.multiply", x, self.scalar(0.5))
        return self.op("relay.multiply", half_x, self.op("relay.add", t, self.scalar(1.0)))


def mlp_relay(batch: int = 64, sizes: Shape = (784, 512, 512, 10)) -> str:
    g = Relay()
    h = g.param("x", batch, sizes[0])
    for i, (fan_in, units) in enumerate(zip(sizes, sizes[1:]), 1):
        h = g.linear(h, g.param(f"w{i}", units, fan_in), g.param(f"b{i}", units))
        if i < len(sizes) - 1:
            h = g.op("relay.nn.relu", h)
    return g.text(g.op("relay.nn.softmax", h))


def cnn_relay(batch: int = 8, size: int = 28, channels: Shape = (1, 16, 32), classes: int = 10) -> str:
    g = Relay()
    h = g.param("x", batch, channels[0], size, size)
    for i, (cin, cout) in enumerate(zip(channels, channels[1:]), 1):
        h = g.conv3x3(h, g.param(f"w{i}", cout, cin, 3, 3), g.param(f"b{i}", cout))
        h = g.max_pool2(g.op("relay.nn.relu", h))
    features = math.prod(g.shapes[h][1:])
    h = g.reshape(h, batch, features)
    h = g.linear(h, g.param("w3", classes, features), g.param("b3", classes))
    return g.text(g.op("relay.nn.softmax", h))


def resnet_relay(batch: int = 1, channels: int = 64, size: int = 56) -> str:
    g = Relay()
    x = g.param("x", batch, channels, size, size)
    h = g.op("relay.nn.relu", g.conv3x3(x, g.param("w1", channels, channels, 3, 3), g.param("b1", channels)))
    h = g.conv3x3(h, g.param("w2", channels, channels, 3, 3), g.param("b2", channels))
    return g.text(g.op("relay.nn.relu", g.op("relay.add", h, x)))


def transformer_relay(seq: int = 128, d_model: int = 256, heads: int = 4, ffn: int = 1024) -> str:
    g = Relay()
    head = d_model // heads
    x = g.param("x", seq, d_model)

    def linear(h: str, name: str, units: int) -> str:
        return g.linear(h, g.param(f"w{name}", units, g.shapes[h][-1]), g.param(f"b{name}", units))

    def heads_first(h: str, *axes: int) -> str:  # [seq, d_model] -> [heads, ...] by axes
        return g.transpose(g.reshape(h, seq, heads, head), *axes)

    q = heads_first(linear(x, "q", d_model), 1, 0, 2)  # [heads, seq, head]
    k = heads_first(linear(x, "k", d_model), 1, 0, 2)  # [heads, seq, head]
    v_t = heads_first(linear(x, "v", d_model), 1, 2, 0)  # [heads, head, seq]
    scores = g.op("relay.nn.batch_matmul", q, k, shape=(heads, seq, seq))  # q @ k^T
    probs = g.op("relay.nn.softmax", g.op("relay.multiply", scores, g.scalar(1 / math.sqrt(head))))
    context = g.op("relay.nn.batch_matmul", probs, v_t, shape=(heads, seq, head))  # probs @ v
    merged = g.reshape(g.transpose(context, 1, 0, 2), seq, d_model)
    attention = linear(merged, "o", d_model)
    h = g.layer_norm(g.op("relay.add", x, attention), g.param("gamma1", d_model), g.param("beta1", d_model))
    f = linear(g.gelu_tanh(linear(h, "1", ffn)), "2", d_model)
    return g.text(g.layer_norm(g.op("relay.add", h, f), g.param("gamma2", d_model), g.param("beta2", d_model)))


# ----------------------------------------------------------------------------------------------
# numpy, eager: the same maths op by op, as a user would write it
# ----------------------------------------------------------------------------------------------


def softmax_numpy(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def conv3x3_numpy(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    """im2col by sliding windows, one tensordot (BLAS), padding 1, + bias."""
    windows = sliding_window_view(np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1))), (3, 3), axis=(2, 3))
    out = np.tensordot(windows, w, axes=([1, 4, 5], [1, 2, 3]))  # [n, h, w, cout]
    return out.transpose(0, 3, 1, 2) + b[:, None, None]


def max_pool2_numpy(x: np.ndarray) -> np.ndarray:
    n, c, h, w = x.shape
    return x.reshape(n, c, h // 2, 2, w // 2, 2).max(axis=(3, 5))


def layer_norm_numpy(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float = 1e-5) -> np.ndarray:
    centered = x - x.mean(axis=-1, keepdims=True)
    variance = (centered * centered).mean(axis=-1, keepdims=True)
    return centered / np.sqrt(variance + np.float32(eps)) * gamma + beta


def gelu_tanh_numpy(x: np.ndarray) -> np.ndarray:
    c = np.float32(math.sqrt(2 / math.pi))
    return np.float32(0.5) * x * (1 + np.tanh(c * (x + np.float32(0.044715) * x * x * x)))


def mlp_numpy(x: np.ndarray, **w: np.ndarray) -> np.ndarray:
    layers = sum(1 for name in w if name.startswith("w"))
    for i in range(1, layers + 1):
        x = x @ w[f"w{i}"].T + w[f"b{i}"]
        if i < layers:
            x = np.maximum(x, 0)
    return softmax_numpy(x)


def cnn_numpy(x: np.ndarray, **w: np.ndarray) -> np.ndarray:
    for i in (1, 2):
        x = max_pool2_numpy(np.maximum(conv3x3_numpy(x, w[f"w{i}"], w[f"b{i}"]), 0))
    return softmax_numpy(x.reshape(x.shape[0], -1) @ w["w3"].T + w["b3"])


def resnet_numpy(x: np.ndarray, **w: np.ndarray) -> np.ndarray:
    h = np.maximum(conv3x3_numpy(x, w["w1"], w["b1"]), 0)
    return np.maximum(conv3x3_numpy(h, w["w2"], w["b2"]) + x, 0)


def transformer_numpy(x: np.ndarray, heads: int, **w: np.ndarray) -> np.ndarray:
    seq, d_model = x.shape
    head = d_model // heads

    def split(h: np.ndarray) -> np.ndarray:  # [seq, d_model] -> [heads, seq, head]
        return h.reshape(seq, heads, head).transpose(1, 0, 2)

    q, k, v = (split(x @ w[f"w{n}"].T + w[f"b{n}"]) for n in "qkv")
    probs = softmax_numpy(q @ k.transpose(0, 2, 1) * np.float32(1 / math.sqrt(head)))
    merged = (probs @ v).transpose(1, 0, 2).reshape(seq, d_model)
    h = layer_norm_numpy(x + merged @ w["wo"].T + w["bo"], w["gamma1"], w["beta1"])
    f = gelu_tanh_numpy(h @ w["w1"].T + w["b1"]) @ w["w2"].T + w["b2"]
    return layer_norm_numpy(h + f, w["gamma2"], w["beta2"])


# ----------------------------------------------------------------------------------------------
# ONNX graphs (onnx.helper), the same maths node by node
# ----------------------------------------------------------------------------------------------


class Onnx:
    """Writes one ONNX graph: `node` adds a node and returns its output's name; weights and
    constants become initializers."""

    def __init__(self, weights: Mapping[str, np.ndarray]) -> None:
        from onnx import numpy_helper

        self.nodes: list[Any] = []
        self.initializers = [numpy_helper.from_array(a, name) for name, a in weights.items()]

    def node(self, op: str, *inputs: str, **attrs: Any) -> str:
        from onnx import helper

        out = f"t{len(self.nodes)}"
        self.nodes.append(helper.make_node(op, list(inputs), [out], **attrs))
        return out

    def const(self, value: Any, dtype: Any = np.float32) -> str:
        from onnx import numpy_helper

        name = f"c{len(self.initializers)}"
        self.initializers.append(numpy_helper.from_array(np.asarray(value, dtype=dtype), name))
        return name

    def model(self, x: Shape, result: str, out: Shape) -> Any:
        from onnx import TensorProto, helper

        graph = helper.make_graph(
            self.nodes, "model", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x)],
            [helper.make_tensor_value_info(result, TensorProto.FLOAT, out)], self.initializers,
        )  # fmt: skip
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])

    # The layers the models share.

    def linear(self, x: str, name: str) -> str:
        return self.node("Gemm", x, f"w{name}", f"b{name}", transB=1)

    def conv3x3(self, x: str, i: int) -> str:
        return self.node("Conv", x, f"w{i}", f"b{i}", kernel_shape=[3, 3], pads=[1, 1, 1, 1])

    def reshape(self, x: str, *shape: int) -> str:
        return self.node("Reshape", x, self.const(shape, np.int64))

    def layer_norm(self, x: str, gamma: str, beta: str, eps: float = 1e-5) -> str:
        centered = self.node("Sub", x, self.node("ReduceMean", x, axes=[-1], keepdims=1))
        variance = self.node("ReduceMean", self.node("Mul", centered, centered), axes=[-1], keepdims=1)
        normed = self.node("Div", centered, self.node("Sqrt", self.node("Add", variance, self.const(eps))))
        return self.node("Add", self.node("Mul", normed, gamma), beta)

    def gelu_tanh(self, x: str) -> str:
        cube = self.node("Mul", self.node("Mul", x, x), x)
        inner = self.node("Add", x, self.node("Mul", cube, self.const(0.044715)))
        t = self.node("Tanh", self.node("Mul", inner, self.const(math.sqrt(2 / math.pi))))
        return self.node("Mul", self.node("Mul", x, self.const(0.5)), self.node("Add", t, self.const(1.0)))


def mlp_onnx(weights: Arrays, x: Shape) -> Any:
    g = Onnx(weights)
    layers = sum(1 for name in weights if name.startswith("w"))
    h = "x"
    for i in range(1, layers + 1):
        h = g.linear(h, str(i))
        if i < layers:
            h = g.node("Relu", h)
    return g.model(x, g.node("Softmax", h, axis=-1), (x[0], weights[f"b{layers}"].shape[0]))


def cnn_onnx(weights: Arrays, x: Shape) -> Any:
    g = Onnx(weights)
    h = "x"
    for i in (1, 2):
        h = g.node("MaxPool", g.node("Relu", g.conv3x3(h, i)), kernel_shape=[2, 2], strides=[2, 2])
    h = g.linear(g.reshape(h, x[0], -1), "3")
    return g.model(x, g.node("Softmax", h, axis=-1), (x[0], weights["b3"].shape[0]))


def resnet_onnx(weights: Arrays, x: Shape) -> Any:
    g = Onnx(weights)
    h = g.node("Relu", g.conv3x3("x", 1))
    return g.model(x, g.node("Relu", g.node("Add", g.conv3x3(h, 2), "x")), x)


def transformer_onnx(weights: Arrays, x: Shape, heads: int) -> Any:
    g = Onnx(weights)
    seq, d_model = x
    head = d_model // heads

    def heads_first(h: str, *perm: int) -> str:
        return g.node("Transpose", g.reshape(h, seq, heads, head), perm=list(perm))

    q = heads_first(g.linear("x", "q"), 1, 0, 2)
    k_t = heads_first(g.linear("x", "k"), 1, 2, 0)
    v = heads_first(g.linear("x", "v"), 1, 0, 2)
    scores = g.node("Mul", g.node("MatMul", q, k_t), g.const(1 / math.sqrt(head)))
    context = g.node("MatMul", g.node("Softmax", scores, axis=-1), v)
    merged = g.reshape(g.node("Transpose", context, perm=[1, 0, 2]), seq, d_model)
    h = g.layer_norm(g.node("Add", "x", g.linear(merged, "o")), "gamma1", "beta1")
    f = g.linear(g.gelu_tanh(g.linear(h, "1")), "2")
    return g.model(x, g.layer_norm(g.node("Add", h, f), "gamma2", "beta2"), x)


# ----------------------------------------------------------------------------------------------
# The models at their sizes
# ----------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Model:
    name: str
    label: str
    relay: Callable[..., str]
    numpy: Callable[..., np.ndarray]
    onnx: Callable[..., Any]
    sizes: Mapping[str, Any]  # the relay function's arguments

    def text(self) -> str:
        return self.relay(**self.sizes)

    def reference(self, inputs: Arrays) -> np.ndarray:
        """numpy on %x and the weights (the shapes say the sizes, but for the heads)."""
        return self.numpy(**inputs, **self._heads())

    def onnx_model(self, weights: Arrays, x: Shape) -> Any:
        return self.onnx(weights, x, **self._heads())

    def _heads(self) -> dict[str, int]:
        return {"heads": self.sizes["heads"]} if "heads" in self.sizes else {}

    def at(self, **sizes: Any) -> Model:
        """The same model at other sizes."""
        return dataclasses.replace(self, sizes={**self.sizes, **sizes})


MODELS = {
    m.name: m
    for m in (
        Model("mlp", "MLP 784-512-512-10, batch 64", mlp_relay, mlp_numpy, mlp_onnx,
              {"batch": 64, "sizes": (784, 512, 512, 10)}),
        Model("cnn", "CNN, batch 8, 1x28x28", cnn_relay, cnn_numpy, cnn_onnx,
              {"batch": 8, "size": 28, "channels": (1, 16, 32), "classes": 10}),
        Model("resnet", "ResNet basic block, 64 ch, 56x56", resnet_relay, resnet_numpy, resnet_onnx,
              {"batch": 1, "channels": 64, "size": 56}),
        Model("transformer", "transformer encoder block, seq 128, d 256", transformer_relay,
              transformer_numpy, transformer_onnx, {"seq": 128, "d_model": 256, "heads": 4, "ffn": 1024}),
    )
}  # fmt: skip


def random_inputs(text: str, seed: int = 0) -> Arrays:
    """%x and the weights of @main, by their names: w* scaled like a trained layer (variance
    1 / fan-in), b* and beta* small, gamma* near 1."""
    import xrelay

    rng = np.random.default_rng(seed)
    arrays = {}
    for arg in xrelay.parse(text).ops.first.args:
        name, shape = arg.name_hint, tuple(arg.type.get_shape())
        values = rng.standard_normal(shape)
        if name.startswith("w"):
            values /= math.sqrt(math.prod(shape[1:]))
        elif name.startswith(("b", "beta")):
            values *= 0.1
        elif name.startswith("gamma"):
            values = 1 + 0.1 * values
        arrays[name] = values.astype(np.float32)
    return arrays


def build_xrelay(text: str, weights: Arrays, threads: int, **options: Any) -> tuple[Any, bool]:
    """`xrelay.build` with `num_threads=threads` when this xrelay takes it; (executable, whether it did)."""
    import xrelay

    try:
        return xrelay.build(text, params=weights, num_threads=threads, **options), True
    except TypeError as e:
        if "num_threads" not in str(e):
            raise
        return xrelay.build(text, params=weights, **options), False


# The C builds side by side: the results' key and the target string.
C_BUILDS = {"c": "c", "c_v3": "c -march=x86-64-v3"}


def machine_info(peak_seconds: float = 0.05) -> dict[str, Any]:
    """The machine of this run as plain data: the CPU, each C build's features and measured
    fp32 FMA peak of one core, and the OpenCL device's features."""
    from xrelay.runtime.machine import host_name, target_features

    builds = {}
    for key, target in C_BUILDS.items():
        peak = fma_peak(target, seconds=peak_seconds)
        builds[key] = {"target": target, "features": target_features(target).to_json(), "peak": peak.summary()}
    return {"cpu": host_name(), "c": builds, "opencl": target_features("opencl").summary()}


def machine_lines(machine: dict[str, Any]) -> list[str]:
    """The header above a table: where its numbers were measured."""
    lines = [f"machine: {machine['cpu']}, {os.cpu_count()} cores"]
    for build in machine["c"].values():
        f = build["features"]
        fma = "FMA" if f["fma"] else "no FMA"
        lines.append(f"- {build['target']!r}: {f['isa']}, {f['vector_floats']} floats x {f['vector_registers']} "
                     f"vector registers, {fma}; measured peak {build['peak']}")  # fmt: skip
    lines.append(f"- 'opencl': {machine['opencl']}")
    return lines


def close(out: np.ndarray, ref: np.ndarray) -> tuple[bool, float]:
    ok = out.shape == ref.shape and bool(np.allclose(out, ref, rtol=1e-3, atol=1e-4))
    return ok, float(np.max(np.abs(out - ref))) if out.shape == ref.shape else math.inf


# ----------------------------------------------------------------------------------------------
# One thread count, in a process of its own
# ----------------------------------------------------------------------------------------------


def ort_session(model: Any, threads: int, spin: bool = True) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    if not spin:
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def slowest_nodes(exe: Any, x: np.ndarray, count: int = 5, runs: int = 5) -> list[tuple[str, str, float]]:
    """The `count` slowest nodes of `exe`, each at its median over `runs` profiled runs."""
    samples: dict[tuple[str, str], list[float]] = {}
    for _ in range(runs):
        for name, device, seconds in exe.profile(x).nodes:
            samples.setdefault((name, device), []).append(seconds)
    medians = [(name, device, float(np.median(s))) for (name, device), s in samples.items()]
    return sorted(medians, key=lambda node: -node[2])[:count]


def run_threads(models: list[Model], threads: int, rounds: int, profile: bool, spin: bool) -> dict[str, Any]:
    """Builds, checks and times every model at `threads` threads; the results as plain data."""
    blas = "numpy BLAS threads: OPENBLAS_NUM_THREADS only (threadpoolctl is not installed)"
    try:
        from threadpoolctl import threadpool_info, threadpool_limits

        threadpool_limits(threads, user_api="blas")
        pools = [f"{p['internal_api']} {p['num_threads']}" for p in threadpool_info() if p["user_api"] == "blas"]
        blas = f"numpy BLAS threads: {', '.join(pools) or 'no BLAS found'}"
    except ImportError:
        pass
    try:
        import onnx  # noqa: F401  (the graphs are built with onnx.helper)
        import onnxruntime
    except ImportError:
        onnxruntime = None

    import xrelay

    results: dict[str, Any] = {"threads": threads, "blas": blas, "models": {}, "failed": [], "spin": spin}
    results["machine"] = machine_info()
    results["load"] = [os.getloadavg()[0]]  # the 1-minute load average before and after
    if onnxruntime is None:
        results["ort_note"] = "onnx or onnxruntime is not installed (`make bench` installs them): no ORT column"
    else:
        results["ort_note"] = f"onnxruntime {onnxruntime.__version__}"
    for model in models:
        text = model.text()
        inputs = random_inputs(text)
        x = inputs.pop("x")
        start = time.perf_counter()
        exes = {key: build_xrelay(text, inputs, threads, targets=(target,)) for key, target in C_BUILDS.items()}
        threaded = exes["c"][1]
        exes["opencl"] = build_xrelay(text, inputs, threads, targets=("c", "opencl"), default_device="opencl")
        build_s = time.perf_counter() - start
        # each lambda binds this model's objects as defaults: they are called in this iteration
        impls: dict[str, Callable[[], object]] = {
            "numpy": lambda model=model, x=x, inputs=inputs: model.reference({"x": x, **inputs}),
            **{key: (lambda exe=exe, x=x: exe.run(x)) for key, (exe, _) in exes.items()},
        }
        if onnxruntime is not None:
            session = ort_session(model.onnx_model(inputs, x.shape), threads, spin)
            impls["ort"] = lambda session=session, x=x: session.run(None, {"x": x})[0]

        ref = model.reference({"x": x, **inputs})
        checks = {name: close(np.asarray(fn()), ref) for name, fn in impls.items() if name != "numpy"}
        start = time.perf_counter()
        checks["interpret"] = close(xrelay.interpret(text, {"x": x, **inputs}), ref)
        interpret_s = time.perf_counter() - start
        failed = [name for name, (ok, _) in checks.items() if not ok]
        results["failed"] += [f"{model.name}: {name}" for name in failed]
        print(f"  {model.name:<12} built C, C v3 and OpenCL in {build_s:5.2f} s, interpreted in {interpret_s:5.2f} s; "
              + ", ".join(f"{n} {'ok' if ok else 'MISMATCH'} ({d:.1e})" for n, (ok, d) in checks.items()),
              flush=True)  # fmt: skip

        medians = interleaved_medians(impls, rounds)
        entry = {"label": model.label, "ms": {n: s * 1e3 for n, s in medians.items()}, "threaded_build": threaded}
        if profile:
            entry["slowest"] = {key: slowest_nodes(exe, x) for key, (exe, _) in exes.items()}
        results["models"][model.name] = entry
    results["load"].append(os.getloadavg()[0])
    return results


# ----------------------------------------------------------------------------------------------
# The table
# ----------------------------------------------------------------------------------------------


def table(results: dict[str, Any]) -> str:
    threads = results["threads"]
    lines = [f"### {threads} thread{'s' if threads > 1 else ''}", ""]
    if "machine" in results:
        lines += [*machine_lines(results["machine"]), ""]
    lines += [
        "| model | numpy ms | onnxruntime ms | xrelay C ms | xrelay C AVX2 (v3) ms | xrelay OpenCL (PoCL) ms "
        "| C / ORT | C v3 / ORT | OpenCL / ORT | C v3 / C |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    note = False
    for entry in results["models"].values():
        ms = entry["ms"]
        mark = ""
        if threads > 1 and not entry["threaded_build"]:
            mark, note = " (1-thread build)", True
        ort = ms.get("ort")
        v3 = ms.get("c_v3")  # (absent in results of a run before the v3 column)

        def ratio(a: float | None, b: float | None) -> str:
            return f"{a / b:.2f}x" if a and b else "n/a"

        cells = [
            entry["label"], f"{ms['numpy']:.3f}", f"{ort:.3f}" if ort else "n/a",
            f"{ms['c']:.3f}{mark}", f"{v3:.3f}" if v3 else "n/a", f"{ms['opencl']:.3f}",
            ratio(ms["c"], ort), ratio(v3, ort), ratio(ms["opencl"], ort), ratio(v3, ms["c"]),
        ]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    load = " to ".join(f"{x:.1f}" for x in results["load"])
    lines += ["", f"{results['blas']}; {results['ort_note']}; load average {load} on {os.cpu_count()} cores"]
    if threads > 1:
        lines.append("idle threads spin between calls (each runtime's default)" if results["spin"] else
                     "idle threads do not spin between calls (OPENBLAS_THREAD_TIMEOUT=4, OMP_WAIT_POLICY=passive, "
                     "onnxruntime allow_spinning=0)")  # fmt: skip
    if note:
        lines.append(
            "1-thread build: this xrelay.build has no num_threads "
            "(XRELAY_NUM_THREADS and OMP_NUM_THREADS were set all the same)"
        )
    return "\n".join(lines)


def profile_lines(results: dict[str, Any]) -> str:
    lines = [f"slowest nodes at {results['threads']} thread(s), median of 5 profiled runs:"]
    for name, entry in results["models"].items():
        for target, nodes in entry.get("slowest", {}).items():
            lines.append(f"  {name} / {target}:")
            lines += [f"    {device:<9} {node[:70]:<70} {s * 1e3:8.3f} ms" for node, device, s in nodes]
    return "\n".join(lines)


def speedups(all_results: list[dict[str, Any]]) -> str:
    base, *others = all_results
    lines = []
    for other in others:
        n = other["threads"]
        lines.append(f"speed-up at {n} threads over {base['threads']} (time at {base['threads']} / time at {n}):")
        for name, entry in other["models"].items():
            before = base["models"][name]["ms"]
            lines.append("  " + f"{name:<12} " + ", ".join(
                f"{impl} {before[impl] / ms:.2f}x" for impl, ms in entry["ms"].items() if impl in before))  # fmt: skip
    return "\n".join(lines)


def run_in_subprocess(args: argparse.Namespace, threads: int) -> dict[str, Any]:
    """Runs `--worker threads` with every thread pool sized to `threads` from the start."""
    env = dict(os.environ)
    for var in ("OMP_NUM_THREADS", "XRELAY_NUM_THREADS", "OPENBLAS_NUM_THREADS", "POCL_MAX_PTHREAD_COUNT"):
        env[var] = str(threads)
    if not args.spin:
        env.update(OPENBLAS_THREAD_TIMEOUT="4", OMP_WAIT_POLICY="passive")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "results.json"
        command = [sys.executable, __file__, "--worker", str(threads), "--json", str(out),
                   "--rounds", str(args.rounds), "--models", args.models]  # fmt: skip
        command += ["--profile"] * args.profile + ["--spin"] * args.spin
        if subprocess.run(command, env=env).returncode != 0:
            sys.exit(f"the run at {threads} thread(s) failed")
        return json.loads(out.read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=30, help="interleaved rounds (medians are reported)")
    parser.add_argument("--models", default=",".join(MODELS), help=f"comma-separated, of {', '.join(MODELS)}")
    parser.add_argument("--threads", default=f"1,{os.cpu_count()}", help="comma-separated thread counts")
    parser.add_argument("--profile", action="store_true", help="print the slowest xrelay nodes per model")
    parser.add_argument("--spin", action="store_true", help="let idle threads spin between calls (the defaults)")
    parser.add_argument("--print-relay", metavar="MODEL", help="print a model's relay text and exit")
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--json", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.print_relay:
        print(MODELS[args.print_relay].text())
        return
    unknown = [m for m in args.models.split(",") if m not in MODELS]
    if unknown:
        parser.error(f"unknown models {unknown}; choose from {list(MODELS)}")
    models = [MODELS[m] for m in args.models.split(",")]
    if args.worker is not None:
        results = run_threads(models, args.worker, args.rounds, args.profile, args.spin)
        Path(args.json).write_text(json.dumps(results))
        return

    thread_counts = list(dict.fromkeys(int(t) for t in args.threads.split(",")))
    coretype = os.environ.get("OPENBLAS_CORETYPE")
    print(f"{args.rounds} interleaved rounds per model, medians; POCL_DEVICES={os.environ['POCL_DEVICES']!r}, "
          f"OPENBLAS_CORETYPE={coretype or 'unset'}, {os.cpu_count()} cores", flush=True)  # fmt: skip
    start = time.perf_counter()
    all_results = []
    for threads in thread_counts:
        print(f"{threads} thread(s):", flush=True)
        all_results.append(run_in_subprocess(args, threads))
    print()
    for results in all_results:
        print(table(results) + "\n")
        if args.profile:
            print(profile_lines(results) + "\n")
    if len(all_results) > 1:
        print(speedups(all_results) + "\n")
    print(f"total {time.perf_counter() - start:.0f} s")
    failed = [f"{r['threads']} thread(s): {f}" for r in all_results for f in r["failed"]]
    if failed:
        sys.exit("outputs that do not match numpy: " + "; ".join(failed))


if __name__ == "__main__":
    main()
