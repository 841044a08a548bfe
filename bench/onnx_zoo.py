"""Six ONNX models written with `onnx.helper`, random seeded weights, nodes named as exporters
name them (bench/onnx_models.py imports them; running this file does nothing).

The four reference models of bench/models.py, node for node as its `*_onnx` graphs and with its
weights (`models.random_inputs` of the relay text, same seed), so the numbers compare:
- mlp: 784-512-512-10, batch 64: Gemm+Relu x2, Gemm, Softmax.
- cnn: batch 8, 1x28x28: (Conv3x3+Relu+MaxPool2) x2 (1->16->32), Reshape, Gemm, Softmax.
- resnet: a basic block, 64 channels, 56x56: Conv-Relu-Conv-Add(x)-Relu.
- transformer: an encoder block, seq 128, d_model 256, 4 heads, ffn 1024, post-LN written as
  ReduceMean/Sub/Mul/Sqrt/Div, GELU with tanh.

And two as exporters (torch.onnx) write them:
- resnet18: torchvision's ResNet-18 at 1x3x224x224, Conv without bias then BatchNormalization
  (an export that does not fold them), MaxPool, GlobalAveragePool, Flatten, Gemm; the input is
  `input.1`.
- bert: a 2-layer BERT encoder (seq 128, hidden 256, 4 heads, ffn 1024) on `hidden_states`
  [1, seq, hidden] and a float `attention_mask` [1, seq] (1 keeps a token, 0 masks it), as
  HuggingFace's BertModel exports after the embeddings: MatMul with pre-transposed weights
  (initializers named `onnx::MatMul_N`) and Add(bias, ...), Reshape by Constant shapes,
  Transpose, Div by sqrt(head size), the additive mask (Unsqueeze, Sub, Mul), Softmax,
  LayerNormalization, and GELU in its erf form (Div, Erf, Add, Mul, Mul).

Node names are scope paths (`/layer1/layer1.0/conv1/Conv`, `/encoder/layer.1/attention/...`),
so placement rules can pick a layer by a glob. Every model is opset 17 and passes
`onnx.checker` with full shape inference.

Each model's `placement` puts a part on OpenCL: the MLP's first layer, the CNN's convolutions,
the ResNet block's second convolution, the transformer's feed-forward network, ResNet-18's
layers 3 and 4, BERT's second layer. A node that a rule places pulls the unplaced nodes that
feed it onto its device (plan-devices gives an op and its operands one domain), so every
split but the MLP's (whose placed part comes first) ends with the catch-all `"*": "cpu"`;
without it, ResNet-18's layers 1 and 2 would follow layer 3 onto OpenCL, and a transformer
whose attention alone were placed would take the whole block with it (its input feeds both
the attention and the residual Add).
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, str(Path(__file__).parent))
import models

Shape = tuple[int, ...]
Arrays = dict[str, np.ndarray]
OPSET = 17


class Graph:
    """Writes one ONNX graph: `node` adds a node named by the current scope path and returns its
    output's name; `weight` adds an initializer; `constant` a Constant node, as exporters do."""

    def __init__(self, seed: int = 0) -> None:
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self.scopes: list[str] = []
        self.taken: dict[str, int] = {}

    @contextlib.contextmanager
    def scope(self, name: str) -> Iterator[None]:
        self.scopes.append(name)
        try:
            yield
        finally:
            self.scopes.pop()

    def node(self, op: str, *inputs: str, output: str | None = None, **attrs: Any) -> str:
        name = "/" + "/".join([*self.scopes, op])
        count = self.taken.get(name, 0)
        self.taken[name] = count + 1
        name += f"_{count}" if count else ""
        out = output or f"{name}_output_0"
        self.nodes.append(helper.make_node(op, list(inputs), [out], name=name, **attrs))
        return out

    def weight(self, name: str, array: np.ndarray) -> str:
        self.initializers.append(numpy_helper.from_array(np.asarray(array, dtype=np.float32), name))
        return name

    def constant(self, value: Any, dtype: Any = np.float32) -> str:
        return self.node("Constant", value=numpy_helper.from_array(np.asarray(value, dtype=dtype)))

    def normal(self, *shape: int, scale: float = 1.0) -> np.ndarray:
        return (self.rng.standard_normal(shape) * scale).astype(np.float32)

    def model(self, inputs: Mapping[str, Shape], outputs: Mapping[str, Shape]) -> onnx.ModelProto:
        graph = helper.make_graph(
            self.nodes,
            "model",
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs.items()],
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in outputs.items()],
            self.initializers,
        )
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="xrelay bench")
        onnx.checker.check_model(model, full_check=True)
        return model

    # The layers the models share.

    def gemm(self, x: str, w: str, b: str) -> str:
        return self.node("Gemm", x, w, b, transB=1)

    def reshape(self, x: str, *shape: int) -> str:
        return self.node("Reshape", x, self.constant(shape, np.int64))


# ----------------------------------------------------------------------------------------------
# bench/models.py's four models, node for node as its *_onnx graphs
# ----------------------------------------------------------------------------------------------


def reference_weights(name: str, sizes: Mapping[str, Any]) -> tuple[Shape, Arrays]:
    """bench/models.py's %x shape and weights for its model `name` at `sizes` (seed 0)."""
    arrays = models.random_inputs(models.MODELS[name].at(**sizes).text())
    return arrays.pop("x").shape, arrays


def mlp(batch: int = 64, sizes: Shape = (784, 512, 512, 10)) -> onnx.ModelProto:
    x, w = reference_weights("mlp", {"batch": batch, "sizes": sizes})
    g, h = Graph(), "x"
    layers = len(sizes) - 1
    for i in range(1, layers + 1):
        with g.scope(f"fc{i}"):
            h = g.gemm(h, g.weight(f"w{i}", w[f"w{i}"]), g.weight(f"b{i}", w[f"b{i}"]))
            if i < layers:
                h = g.node("Relu", h)
    return g.model({"x": x}, {g.node("Softmax", h, axis=-1, output="y"): (batch, sizes[-1])})


def cnn(batch: int = 8, size: int = 28, channels: Shape = (1, 16, 32), classes: int = 10) -> onnx.ModelProto:
    x, w = reference_weights("cnn", {"batch": batch, "size": size, "channels": channels, "classes": classes})
    g, h = Graph(), "x"
    for i in (1, 2):
        with g.scope(f"conv{i}"):
            h = g.node("Conv", h, g.weight(f"w{i}", w[f"w{i}"]), g.weight(f"b{i}", w[f"b{i}"]),
                       kernel_shape=[3, 3], pads=[1, 1, 1, 1])  # fmt: skip
            h = g.node("MaxPool", g.node("Relu", h), kernel_shape=[2, 2], strides=[2, 2])
    with g.scope("fc"):
        h = g.gemm(g.reshape(h, batch, -1), g.weight("w3", w["w3"]), g.weight("b3", w["b3"]))
    return g.model({"x": x}, {g.node("Softmax", h, axis=-1, output="y"): (batch, classes)})


def resnet(batch: int = 1, channels: int = 64, size: int = 56) -> onnx.ModelProto:
    x, w = reference_weights("resnet", {"batch": batch, "channels": channels, "size": size})
    g, h = Graph(), "x"
    for i in (1, 2):
        with g.scope(f"conv{i}"):
            h = g.node("Conv", h, g.weight(f"w{i}", w[f"w{i}"]), g.weight(f"b{i}", w[f"b{i}"]),
                       kernel_shape=[3, 3], pads=[1, 1, 1, 1])  # fmt: skip
        if i == 1:
            h = g.node("Relu", h)
    return g.model({"x": x}, {g.node("Relu", g.node("Add", h, "x"), output="y"): x})


def transformer(seq: int = 128, d_model: int = 256, heads: int = 4, ffn: int = 1024) -> onnx.ModelProto:
    x, w = reference_weights("transformer", {"seq": seq, "d_model": d_model, "heads": heads, "ffn": ffn})
    g = Graph()
    head = d_model // heads

    def linear(h: str, name: str) -> str:
        return g.gemm(h, g.weight(f"w{name}", w[f"w{name}"]), g.weight(f"b{name}", w[f"b{name}"]))

    def heads_first(h: str, *perm: int) -> str:
        return g.node("Transpose", g.reshape(h, seq, heads, head), perm=list(perm))

    def layer_norm(h: str, i: int) -> str:
        with g.scope(f"norm{i}"):
            centered = g.node("Sub", h, g.node("ReduceMean", h, axes=[-1], keepdims=1))
            variance = g.node("ReduceMean", g.node("Mul", centered, centered), axes=[-1], keepdims=1)
            normed = g.node("Div", centered, g.node("Sqrt", g.node("Add", variance, g.constant(1e-5))))
            gamma, beta = g.weight(f"gamma{i}", w[f"gamma{i}"]), g.weight(f"beta{i}", w[f"beta{i}"])
            return g.node("Add", g.node("Mul", normed, gamma), beta)

    with g.scope("attention"):
        q = heads_first(linear("x", "q"), 1, 0, 2)
        k_t = heads_first(linear("x", "k"), 1, 2, 0)
        v = heads_first(linear("x", "v"), 1, 0, 2)
        scores = g.node("Mul", g.node("MatMul", q, k_t), g.constant(1 / math.sqrt(head)))
        context = g.node("MatMul", g.node("Softmax", scores, axis=-1), v)
        merged = g.reshape(g.node("Transpose", context, perm=[1, 0, 2]), seq, d_model)
        attention = linear(merged, "o")
    h = layer_norm(g.node("Add", "x", attention), 1)
    with g.scope("ffn"):
        f = linear(h, "1")
        cube = g.node("Mul", g.node("Mul", f, f), f)
        inner = g.node("Add", f, g.node("Mul", cube, g.constant(0.044715)))
        t = g.node("Tanh", g.node("Mul", inner, g.constant(math.sqrt(2 / math.pi))))
        f = g.node("Mul", g.node("Mul", f, g.constant(0.5)), g.node("Add", t, g.constant(1.0)))
        f = linear(f, "2")
    layer_norm(g.node("Add", h, f), 2)
    g.nodes[-1].output[0] = "y"  # the graph's output is the last node's
    return g.model({"x": x}, {"y": x})


# ----------------------------------------------------------------------------------------------
# ResNet-18 and BERT, as exporters write them
# ----------------------------------------------------------------------------------------------


def conv_bn(
    g: Graph, x: str, prefix: str, sizes: tuple[int, int, int, int], conv: str, bn: str, gain: float = 1.0
) -> str:
    """Conv (no bias; `sizes` are in and out channels, kernel size, stride) + BatchNormalization,
    weights named as torchvision's (`{prefix}{conv}.weight`); the BN scale is about `gain`."""
    cin, cout, kernel, stride = sizes
    fan_in = cin * kernel * kernel
    weight = g.weight(f"{prefix}{conv}.weight", g.normal(cout, cin, kernel, kernel, scale=math.sqrt(2 / fan_in)))
    with g.scope(conv):
        h = g.node("Conv", x, weight, kernel_shape=[kernel] * 2, strides=[stride] * 2, pads=[kernel // 2] * 4)
    stats = {
        "weight": gain * (1 + g.normal(cout, scale=0.1)),
        "bias": g.normal(cout, scale=0.1),
        "running_mean": g.normal(cout, scale=0.1),
        "running_var": g.rng.uniform(0.5, 1.5, cout).astype(np.float32),
    }
    names = [g.weight(f"{prefix}{bn}.{stat}", value) for stat, value in stats.items()]
    with g.scope(bn):
        return g.node("BatchNormalization", h, *names, epsilon=1e-5)


def basic_block(g: Graph, x: str, prefix: str, cin: int, cout: int, stride: int) -> str:
    """conv-bn-relu-conv-bn, + x (or its 1x1 downsample), relu. The second BN scales by about
    1/2, as training leaves a residual branch, so activations keep their size through 8 blocks."""
    h = conv_bn(g, x, prefix, (cin, cout, 3, stride), "conv1", "bn1")
    with g.scope("relu"):
        h = g.node("Relu", h)
    h = conv_bn(g, h, prefix, (cout, cout, 3, 1), "conv2", "bn2", gain=0.5)
    if stride != 1 or cin != cout:
        with g.scope("downsample"):
            x = conv_bn(g, x, prefix, (cin, cout, 1, stride), "downsample.0", "downsample.1")
    h = g.node("Add", h, x)
    with g.scope("relu_1"):
        return g.node("Relu", h)


def resnet18(batch: int = 1, size: int = 224, width: int = 64, classes: int = 1000) -> onnx.ModelProto:
    """torchvision's resnet18 (`width` channels in the first stage, doubling in each of four)."""
    g = Graph(seed=18)
    h = conv_bn(g, "input.1", "", (3, width, 7, 2), "conv1", "bn1")
    with g.scope("relu"):
        h = g.node("Relu", h)
    with g.scope("maxpool"):
        h = g.node("MaxPool", h, kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = width
    for stage in range(1, 5):
        cout = width * 2 ** (stage - 1)
        for block in range(2):
            with g.scope(f"layer{stage}"), g.scope(f"layer{stage}.{block}"):
                stride = 2 if stage > 1 and block == 0 else 1
                h = basic_block(g, h, f"layer{stage}.{block}.", cin, cout, stride)
            cin = cout
    with g.scope("avgpool"):
        h = g.node("GlobalAveragePool", h)
    h = g.node("Flatten", h, axis=1)
    with g.scope("fc"):
        fc_w = g.weight("fc.weight", g.normal(classes, cin, scale=1 / math.sqrt(cin)))
        h = g.node("Gemm", h, fc_w, g.weight("fc.bias", g.normal(classes, scale=0.1)), transB=1, output="output")
    return g.model({"input.1": (batch, 3, size, size)}, {h: (batch, classes)})


def bottleneck(g: Graph, x: str, prefix: str, cin: int, width: int, stride: int) -> str:
    """torchvision's Bottleneck (v1.5, the stride on the 3x3): 1x1 conv-bn-relu, 3x3 conv-bn-relu,
    1x1 conv-bn to 4 * width channels, + x (or its 1x1 downsample), relu."""
    cout = 4 * width
    h = conv_bn(g, x, prefix, (cin, width, 1, 1), "conv1", "bn1")
    with g.scope("relu"):
        h = g.node("Relu", h)
    h = conv_bn(g, h, prefix, (width, width, 3, stride), "conv2", "bn2")
    with g.scope("relu_1"):
        h = g.node("Relu", h)
    h = conv_bn(g, h, prefix, (width, cout, 1, 1), "conv3", "bn3", gain=0.5)
    if stride != 1 or cin != cout:
        with g.scope("downsample"):
            x = conv_bn(g, x, prefix, (cin, cout, 1, stride), "downsample.0", "downsample.1")
    h = g.node("Add", h, x)
    with g.scope("relu_2"):
        return g.node("Relu", h)


def resnet50(
    batch: int = 1, size: int = 224, width: int = 64, classes: int = 1000, depths: Shape = (3, 4, 6, 3)
) -> onnx.ModelProto:
    """torchvision's resnet50: the stem of ResNet-18, then `depths` bottleneck blocks per stage."""
    g = Graph(seed=50)
    h = conv_bn(g, "input.1", "", (3, width, 7, 2), "conv1", "bn1")
    with g.scope("relu"):
        h = g.node("Relu", h)
    with g.scope("maxpool"):
        h = g.node("MaxPool", h, kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = width
    for stage, depth in enumerate(depths, start=1):
        for block in range(depth):
            with g.scope(f"layer{stage}"), g.scope(f"layer{stage}.{block}"):
                stride = 2 if stage > 1 and block == 0 else 1
                h = bottleneck(g, h, f"layer{stage}.{block}.", cin, width * 2 ** (stage - 1), stride)
            cin = 4 * width * 2 ** (stage - 1)
    with g.scope("avgpool"):
        h = g.node("GlobalAveragePool", h)
    h = g.node("Flatten", h, axis=1)
    with g.scope("fc"):
        fc_w = g.weight("fc.weight", g.normal(classes, cin, scale=1 / math.sqrt(cin)))
        h = g.node("Gemm", h, fc_w, g.weight("fc.bias", g.normal(classes, scale=0.1)), transB=1, output="output")
    return g.model({"input.1": (batch, 3, size, size)}, {h: (batch, classes)})


def convnext_layer_norm(g: Graph, x: str, prefix: str, channels: int) -> str:
    """LayerNorm over the channels of an NHWC tensor (torchvision's LayerNorm, eps 1e-6)."""
    scale = g.weight(f"{prefix}.weight", 1 + g.normal(channels, scale=0.1))
    bias = g.weight(f"{prefix}.bias", g.normal(channels, scale=0.1))
    return g.node("LayerNormalization", x, scale, bias, axis=-1, epsilon=1e-6)


def convnext_norm2d(g: Graph, x: str, prefix: str, channels: int) -> str:
    """torchvision's LayerNorm2d as exported: NCHW -> NHWC, LayerNormalization, back."""
    h = g.node("Transpose", x, perm=[0, 2, 3, 1])
    return g.node("Transpose", convnext_layer_norm(g, h, prefix, channels), perm=[0, 3, 1, 2])


def convnext_block(g: Graph, x: str, prefix: str, dim: int) -> str:
    """A CNBlock: depthwise 7x7 conv, NHWC, LayerNorm, Linear to 4 * dim, GELU (erf), Linear
    back, layer scale (about 0.1, so activations keep their size), NCHW, + x."""
    dw = g.weight(f"{prefix}.block.0.weight", g.normal(dim, 1, 7, 7, scale=1 / 7))
    with g.scope("block.0"):
        h = g.node("Conv", x, dw, g.weight(f"{prefix}.block.0.bias", g.normal(dim, scale=0.1)),
                   kernel_shape=[7, 7], pads=[3] * 4, group=dim)  # fmt: skip
    h = g.node("Transpose", h, perm=[0, 2, 3, 1])
    with g.scope("block.2"):
        h = convnext_layer_norm(g, h, f"{prefix}.block.2", dim)
    for i, (cin, cout) in ((3, (dim, 4 * dim)), (5, (4 * dim, dim))):
        with g.scope(f"block.{i}"):
            w = g.weight(f"{prefix}.block.{i}.weight", g.normal(cin, cout, scale=1 / math.sqrt(cin)))
            h = g.node("Add", g.node("MatMul", h, w), g.weight(f"{prefix}.block.{i}.bias", g.normal(cout, scale=0.1)))
        if i == 3:
            with g.scope("block.4"):
                erf = g.node("Erf", g.node("Div", h, g.constant(math.sqrt(2))))
                h = g.node("Mul", g.node("Mul", h, g.node("Add", erf, g.constant(1.0))), g.constant(0.5))
    h = g.node("Transpose", h, perm=[0, 3, 1, 2])
    scale = g.weight(f"{prefix}.layer_scale", np.full((dim, 1, 1), 0.1, np.float32) + g.normal(dim, 1, 1, scale=0.01))
    return g.node("Add", g.node("Mul", scale, h), x)


def convnext_tiny(
    batch: int = 1, size: int = 224, dims: Shape = (96, 192, 384, 768), depths: Shape = (3, 3, 9, 3),
    classes: int = 1000,
) -> onnx.ModelProto:  # fmt: skip
    """torchvision's convnext_tiny: a 4x4 stride-4 stem, four stages of CNBlocks with a
    LayerNorm2d and 2x2 stride-2 conv between them, global average pool, LayerNorm, Linear."""
    g = Graph(seed=7)
    with g.scope("features.0"):
        stem = g.weight("features.0.0.weight", g.normal(dims[0], 3, 4, 4, scale=math.sqrt(2 / 48)))
        h = g.node("Conv", "input.1", stem, g.weight("features.0.0.bias", g.normal(dims[0], scale=0.1)),
                   kernel_shape=[4, 4], strides=[4, 4])  # fmt: skip
        h = convnext_norm2d(g, h, "features.0.1", dims[0])
    for stage, (dim, depth) in enumerate(zip(dims, depths, strict=True)):
        if stage:
            with g.scope(f"features.{2 * stage}"):
                prefix, cin = f"features.{2 * stage}", dims[stage - 1]
                h = convnext_norm2d(g, h, f"{prefix}.0", cin)
                w = g.weight(f"{prefix}.1.weight", g.normal(dim, cin, 2, 2, scale=math.sqrt(2 / (4 * cin))))
                h = g.node("Conv", h, w, g.weight(f"{prefix}.1.bias", g.normal(dim, scale=0.1)),
                           kernel_shape=[2, 2], strides=[2, 2])  # fmt: skip
        for block in range(depth):
            with g.scope(f"features.{2 * stage + 1}"), g.scope(f"features.{2 * stage + 1}.{block}"):
                h = convnext_block(g, h, f"features.{2 * stage + 1}.{block}", dim)
    with g.scope("avgpool"):
        h = g.node("GlobalAveragePool", h)
    with g.scope("classifier"):
        h = g.node("Flatten", convnext_norm2d(g, h, "classifier.0", dims[-1]), axis=1)
        fc_w = g.weight("classifier.2.weight", g.normal(classes, dims[-1], scale=1 / math.sqrt(dims[-1])))
        h = g.node(
            "Gemm", h, fc_w, g.weight("classifier.2.bias", g.normal(classes, scale=0.1)), transB=1, output="output"
        )
    return g.model({"input.1": (batch, 3, size, size)}, {h: (batch, classes)})


class Bert:
    """BERT's encoder layers on one Graph: the weights, their `onnx::MatMul_N` names, the layers."""

    def __init__(self, g: Graph, seq: int, hidden: int, heads: int, ffn: int) -> None:
        self.g, self.seq, self.hidden, self.heads, self.ffn = g, seq, hidden, heads, ffn

    def dense(self, x: str, prefix: str, cin: int, cout: int) -> str:
        """MatMul by the pre-transposed weight, then Add(bias, product), as torch exports a Linear."""
        g = self.g
        weight = g.weight(f"onnx::MatMul_{1000 + len(g.initializers)}", g.normal(cin, cout, scale=1 / math.sqrt(cin)))
        bias = g.weight(f"{prefix}.bias", g.normal(cout, scale=0.1))
        return g.node("Add", bias, g.node("MatMul", x, weight))

    def layer_norm(self, x: str, prefix: str) -> str:
        g = self.g
        scale = g.weight(f"{prefix}.LayerNorm.weight", 1 + g.normal(self.hidden, scale=0.1))
        bias = g.weight(f"{prefix}.LayerNorm.bias", g.normal(self.hidden, scale=0.1))
        with g.scope("LayerNorm"):
            return g.node("LayerNormalization", x, scale, bias, axis=-1, epsilon=1e-12)

    def attention(self, x: str, mask: str, prefix: str) -> str:
        g, seq, heads = self.g, self.seq, self.heads
        head = self.hidden // heads
        with g.scope("self"):
            projected = {}
            for name in ("query", "key", "value"):
                with g.scope(name):
                    projected[name] = self.dense(x, f"{prefix}.self.{name}", self.hidden, self.hidden)
            q, k, v = (g.reshape(projected[n], 1, seq, heads, head) for n in ("query", "key", "value"))
            q = g.node("Transpose", q, perm=[0, 2, 1, 3])
            k_t = g.node("Transpose", k, perm=[0, 2, 3, 1])
            v = g.node("Transpose", v, perm=[0, 2, 1, 3])
            scores = g.node("Div", g.node("MatMul", q, k_t), g.constant(math.sqrt(head)))
            probs = g.node("Softmax", g.node("Add", scores, mask), axis=-1)
            context = g.node("Transpose", g.node("MatMul", probs, v), perm=[0, 2, 1, 3])
            context = g.reshape(context, 1, seq, self.hidden)
        with g.scope("output"):
            with g.scope("dense"):
                h = self.dense(context, f"{prefix}.output.dense", self.hidden, self.hidden)
            return self.layer_norm(g.node("Add", h, x), f"{prefix}.output")

    def gelu(self, x: str) -> str:
        """x * 0.5 * (1 + erf(x / sqrt 2)), node for node as torch exports nn.GELU before opset 20."""
        g = self.g
        with g.scope("intermediate_act_fn"):
            erf = g.node("Erf", g.node("Div", x, g.constant(math.sqrt(2))))
            return g.node("Mul", g.node("Mul", x, g.node("Add", erf, g.constant(1.0))), g.constant(0.5))

    def layer(self, x: str, mask: str, i: int) -> str:
        g, prefix = self.g, f"encoder.layer.{i}"
        with g.scope("encoder"), g.scope(f"layer.{i}"):
            with g.scope("attention"):
                h = self.attention(x, mask, f"{prefix}.attention")
            with g.scope("intermediate"):
                with g.scope("dense"):
                    f = self.dense(h, f"{prefix}.intermediate.dense", self.hidden, self.ffn)
                f = self.gelu(f)
            with g.scope("output"):
                with g.scope("dense"):
                    f = self.dense(f, f"{prefix}.output.dense", self.ffn, self.hidden)
                return self.layer_norm(g.node("Add", f, h), f"{prefix}.output")


def bert(seq: int = 128, hidden: int = 256, heads: int = 4, ffn: int = 1024, layers: int = 2) -> onnx.ModelProto:
    g = Graph(seed=2)
    # the additive mask: 0 where attention_mask is 1, -10000 where it is 0; [1, 1, 1, seq]
    mask = g.node("Unsqueeze", g.node("Unsqueeze", "attention_mask", g.constant([1], np.int64)),
                  g.constant([2], np.int64))  # fmt: skip
    mask = g.node("Mul", g.node("Sub", g.constant(1.0), mask), g.constant(-10000.0))
    encoder = Bert(g, seq, hidden, heads, ffn)
    h = "hidden_states"
    for i in range(layers):
        h = encoder.layer(h, mask, i)
    g.nodes[-1].output[0] = "last_hidden_state"  # the graph's output is the last node's
    return g.model(
        {"hidden_states": (1, seq, hidden), "attention_mask": (1, seq)}, {"last_hidden_state": (1, seq, hidden)}
    )


# ----------------------------------------------------------------------------------------------
# The models at their sizes, their inputs, and where they are split
# ----------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Model:
    """A model: how to write it, at which sizes (and at the tests' tiny ones), and the placement
    rules of its split build (globs on node names or op types -> devices; the rest stays on
    the default device, cpu)."""

    name: str
    label: str
    write: Callable[..., onnx.ModelProto]
    tiny_sizes: Mapping[str, Any]
    placement: Mapping[str, str]
    sizes: Mapping[str, Any] = dataclasses.field(default_factory=dict[str, Any])

    def onnx(self) -> onnx.ModelProto:
        return self.write(**self.sizes)

    def at(self, **sizes: Any) -> Model:
        """The same model at other sizes."""
        return dataclasses.replace(self, sizes={**self.sizes, **sizes})

    def tiny(self) -> Model:
        """The same model at sizes that build in seconds (the tests')."""
        return self.at(**self.tiny_sizes)


MODELS = {
    m.name: m
    for m in (
        Model("mlp", "MLP 784-512-512-10, batch 64", mlp,
              {"batch": 3, "sizes": (12, 8, 8, 5)}, {"/fc1/*": "opencl"}),
        Model("cnn", "CNN, batch 8, 1x28x28", cnn,
              {"batch": 2, "size": 8, "channels": (1, 2, 3), "classes": 4}, {"Conv": "opencl", "*": "cpu"}),
        Model("resnet", "ResNet basic block, 64 ch, 56x56", resnet,
              {"batch": 1, "channels": 3, "size": 5}, {"/conv2/*": "opencl", "*": "cpu"}),
        Model("transformer", "transformer encoder block, seq 128, d 256", transformer,
              {"seq": 4, "d_model": 8, "heads": 2, "ffn": 16}, {"/ffn/*": "opencl", "*": "cpu"}),
        Model("resnet18", "ResNet-18, 1x3x224x224", resnet18,
              {"size": 32, "width": 4, "classes": 10}, {"/layer3/*": "opencl", "/layer4/*": "opencl", "*": "cpu"}),
        Model("bert", "BERT encoder, 2 layers, seq 128, hidden 256", bert,
              {"seq": 8, "hidden": 16, "heads": 2, "ffn": 32}, {"/encoder/layer.1/*": "opencl", "*": "cpu"}),
        Model("resnet50", "ResNet-50, 1x3x224x224", resnet50,
              {"size": 32, "width": 4, "classes": 10, "depths": (1, 2, 1, 1)},
              {"/layer3/*": "opencl", "/layer4/*": "opencl", "*": "cpu"}),
        Model("bert_base", "BERT-base encoder, 12 layers, seq 128, hidden 768", bert,
              {"seq": 8, "hidden": 16, "heads": 2, "ffn": 32, "layers": 2}, {"/encoder/layer.1/*": "opencl", "*": "cpu"},
              {"hidden": 768, "heads": 12, "ffn": 3072, "layers": 12}),
        Model("convnext_tiny", "ConvNeXt-tiny, 1x3x224x224", convnext_tiny,
              {"size": 32, "dims": (4, 8, 8, 8), "depths": (1, 1, 2, 1), "classes": 10},
              {"/features.5/*": "opencl", "*": "cpu"}),
    )
}  # fmt: skip


def graph_inputs(model: onnx.ModelProto) -> dict[str, Shape]:
    """The graph's inputs that are not initializers, in graph order, with their static shapes."""
    weights = {t.name for t in model.graph.initializer}
    return {
        i.name: tuple(d.dim_value for d in i.type.tensor_type.shape.dim)
        for i in model.graph.input
        if i.name not in weights
    }


def random_inputs(model: onnx.ModelProto, seed: int = 0) -> Arrays:
    """Standard normal inputs; a `*mask` input keeps its first three quarters of tokens."""
    rng = np.random.default_rng(seed)
    arrays = {}
    for name, shape in graph_inputs(model).items():
        if name.endswith("mask"):
            keep = np.arange(shape[-1]) < max(1, 3 * shape[-1] // 4)
            arrays[name] = np.broadcast_to(keep, shape).astype(np.float32)
        else:
            arrays[name] = rng.standard_normal(shape).astype(np.float32)
    return arrays
