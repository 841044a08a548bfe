"""
The ONNX op converters of `from_onnx`: one function per op type, in `CONVERTERS`.

A converter takes a `NodeImporter` (the node, its attributes, its inputs as relay tensors or as
values known at import) and returns its results in output order: relay values, numpy arrays
(values known at import), or None for an optional output it does not compute (an error if
the graph uses it). It raises `OnnxImportError` (through `n.error`) for an attribute or an
input it does not take; the importer adds the node's op type and name.

Compositions: BatchNormalization (inference) folds into one multiply and one add per channel;
Gelu is built from erf (or tanh); Gemm's alpha and beta are multiplies; Split is strided
slices; a Pad whose value comes at run time concatenates blocks of it; a LayerNormalization
whose Mean or InvStdDev output is used is built from reductions; HardSigmoid and HardSwish are
clips; Resize is separable (broadcasts, phase blends of shifted slices, or gathers and blends
per axis); GatherElements gathers the flattened input; ConvTranspose convolves the
zero-inserted input with the flipped kernel. LSTM and GRU are unrolled in onnx_rnn.py.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from xdsl.ir import SSAValue

from xrelay.dialects.dtypes import dtype_of
from xrelay.errors import OnnxImportError
from xrelay.frontend.builder import Builder, Operand, shape_of

if TYPE_CHECKING:
    import onnx

Result = SSAValue | np.ndarray | None


class NodeImporter:
    """One node as its converter sees it."""

    def __init__(
        self, node: onnx.NodeProto, b: Builder, tensor: Callable[[str], SSAValue], known: Mapping[str, np.ndarray]
    ):
        """`tensor` gives a value's relay tensor; `known` the values known at import."""
        from onnx import helper

        self.node, self.b, self.known_values, self._tensor = node, b, known, tensor
        self.attrs: dict[str, Any] = {a.name: helper.get_attribute_value(a) for a in node.attribute}

    def error(self, message: str) -> OnnxImportError:
        return node_error(self.node, message)

    def attr(self, name: str, default: Any = None) -> Any:
        value = self.attrs.get(name, default)
        return value.decode() if isinstance(value, bytes) else value

    def only(self, name: str, *allowed: Any, default: Any = None) -> Any:
        """Attribute `name`, which must be one of `allowed` (else an unsupported-attribute error)."""
        value = self.attr(name, default)
        if value not in allowed:
            raise self.error(
                f"attribute {name} = {value!r} is not supported (supported: {', '.join(map(repr, allowed))})"
            )
        return value

    def has(self, index: int) -> bool:
        return len(self.node.input) > index and self.node.input[index] != ""

    def tensor(self, index: int) -> SSAValue:
        if not self.has(index):
            raise self.error(f"input {index} is missing")
        return self._tensor(self.node.input[index])

    def tensors(self) -> list[SSAValue]:
        return [self._tensor(name) for name in self.node.input if name]

    def known(self, index: int, what: str) -> np.ndarray:
        """Input `index`, which must be known at import (a constant, initializer or shape data)."""
        name = self.node.input[index] if self.has(index) else ""
        if name not in self.known_values:
            raise self.error(f"input {index} ({what}) must be known at import (a constant or initializer)")
        return self.known_values[name]

    def ints(self, index: int, what: str) -> list[int] | None:
        """Integer input `index` as a list (None when absent), e.g. axes or a shape."""
        return None if not self.has(index) else [int(v) for v in self.known(index, what).reshape(-1)]

    def scalar(self, index: int, what: str, default: float) -> float:
        return default if not self.has(index) else float(self.known(index, what).reshape(-1)[0])

    def shape(self, index: int) -> tuple[int, ...]:
        return shape_of(self.tensor(index))

    def axes(self, name: str = "axes", index: int = 1) -> list[int] | None:
        """Axes from the attribute (older opsets) or the input (newer), None when absent."""
        attr = self.attr(name)
        return [int(a) for a in attr] if attr is not None else self.ints(index, name)


def node_error(node: onnx.NodeProto, message: str) -> OnnxImportError:
    """An import error at `node`, named by its op type and name."""
    name = f" {node.name!r}" if node.name else f" (unnamed, output {node.output[0]!r})" if node.output else ""
    return OnnxImportError(f"ONNX node {node.op_type}{name}: {message}")


Converter = Callable[[NodeImporter], Sequence[Result]]
CONVERTERS: dict[str, Converter] = {}


def converter(*op_types: str) -> Callable[[Converter], Converter]:
    def register(fn: Converter) -> Converter:
        for op_type in op_types:
            CONVERTERS[op_type] = fn
        return fn

    return register


def _axis(axis: int, rank: int, n: NodeImporter) -> int:
    if not -rank <= axis < max(rank, 1):
        raise n.error(f"axis {axis} is out of range for a tensor of rank {rank}")
    return axis + rank if axis < 0 else axis


# --- elementwise ------------------------------------------------------------------------------

_UNARY: dict[str, Callable[[Builder, SSAValue], SSAValue]] = {
    "Sqrt": Builder.sqrt,
    "Exp": Builder.exp,
    "Log": Builder.log,
    "Tanh": Builder.tanh,
    "Sigmoid": Builder.sigmoid,
    "Erf": Builder.erf,
    "Abs": Builder.abs,
    "Neg": Builder.negative,
    "Relu": lambda b, x: b.nn.relu(x),
    "Reciprocal": lambda b, x: b.divide(1.0, x),
    "Identity": lambda b, x: x,
}

_BINARY: dict[str, Callable[[Builder, SSAValue, SSAValue], SSAValue]] = {
    "Add": Builder.add,
    "Sub": Builder.subtract,
    "Mul": Builder.multiply,
    "Div": Builder.divide,
    "Pow": Builder.power,
    "Max": Builder.maximum,
    "Min": Builder.minimum,
    "Sum": Builder.add,
}


@converter(*_UNARY)
def unary(n: NodeImporter) -> list[Result]:
    return [_UNARY[n.node.op_type](n.b, n.tensor(0))]


@converter(*_BINARY)
def binary(n: NodeImporter) -> list[Result]:
    """The binary ops, and the variadic Max, Min and Sum folded left to right. Pow's exponent
    may be an integer known at import."""
    values = n.tensors() if n.node.op_type != "Pow" else [n.tensor(0), _float_operand(n, 1)]
    if not values:
        raise n.error("expected at least one input")
    result = values[0]
    for value in values[1:]:
        result = _BINARY[n.node.op_type](n.b, result, value)
    return [result]


def _float_operand(n: NodeImporter, index: int) -> SSAValue:
    name = n.node.input[index] if n.has(index) else ""
    known = n.known_values.get(name)
    if known is not None and known.dtype.kind in "iub":
        return n.b.const(known.astype(np.float32))
    return n.tensor(index)


@converter("LeakyRelu")
def leaky_relu(n: NodeImporter) -> list[Result]:
    return [n.b.nn.leaky_relu(n.tensor(0), float(n.attr("alpha", 0.01)))]


@converter("HardSigmoid")
def hard_sigmoid(n: NodeImporter) -> list[Result]:
    """`clip(alpha * x + beta, 0, 1)`."""
    alpha, beta = float(n.attr("alpha", 0.2)), float(n.attr("beta", 0.5))
    return [n.b.clip(n.b.add(n.b.multiply(n.tensor(0), alpha), beta), 0.0, 1.0)]


@converter("HardSwish")
def hard_swish(n: NodeImporter) -> list[Result]:
    """`x * clip(x / 6 + 1/2, 0, 1)`: HardSigmoid with alpha 1/6, beta 1/2, times x."""
    x = n.tensor(0)
    return [n.b.multiply(x, n.b.clip(n.b.add(n.b.multiply(x, 1 / 6), 0.5), 0.0, 1.0))]


@converter("Clip")
def clip(n: NodeImporter) -> list[Result]:
    """`relay.clip` for bounds known at import; maximum and minimum otherwise (a missing
    bound, a bound given at run time, or min > max, where ONNX gives max everywhere)."""
    x = n.tensor(0)
    low, high = _bound(n, 1, "min"), _bound(n, 2, "max")
    if isinstance(low, float) and isinstance(high, float) and not math.isinf(low + high) and low <= high:
        return [n.b.clip(x, low, high)]
    y = x if low is None else n.b.maximum(x, low)
    return [y if high is None else n.b.minimum(y, high)]


def _bound(n: NodeImporter, index: int, name: str) -> float | SSAValue | None:
    """A Clip bound: from the attribute (opset < 11), known at import, a run-time tensor, or None."""
    if name in n.attrs:
        value = float(n.attr(name))
    elif not n.has(index):
        return None
    elif n.node.input[index] in n.known_values:
        value = n.scalar(index, name, 0.0)
    else:
        return n.tensor(index)
    return None if math.isinf(value) and (value < 0) == (name == "min") else value


@converter("Gelu")
def gelu(n: NodeImporter) -> list[Result]:
    x, b = n.tensor(0), n.b
    if n.only("approximate", "none", "tanh", default="none") == "tanh":
        cube = b.multiply(0.044715, b.multiply(x, b.multiply(x, x)))
        inner = b.tanh(b.multiply(math.sqrt(2 / math.pi), b.add(x, cube)))
    else:
        inner = b.erf(b.multiply(x, 1 / math.sqrt(2)))
    return [b.multiply(b.multiply(x, 0.5), b.add(inner, 1.0))]


# --- reductions and softmax ---------------------------------------------------------------------

_REDUCE = {"ReduceSum": Builder.sum, "ReduceMean": Builder.mean, "ReduceMax": Builder.max, "ReduceMin": Builder.min}


_EMPTY_EXTREMUM = {"ReduceMax": -np.inf, "ReduceMin": np.inf}


@converter(*_REDUCE)
def reduce(n: NodeImporter) -> list[Result]:
    x = n.tensor(0)
    axes = n.axes()
    keepdims = bool(n.attr("keepdims", 1))
    if not axes:
        if n.attr("noop_with_empty_axes", 0):
            return [x]
        axes = list(range(len(shape_of(x))))  # absent or empty: every axis
    xs = shape_of(x)
    if n.node.op_type in _EMPTY_EXTREMUM and any(xs[_axis(a, len(xs), n)] == 0 for a in axes):
        # The max of no elements is -inf and the min inf (ONNX); relay leaves them undefined.
        reduced = np.max(np.zeros(xs), axis=tuple(axes), keepdims=keepdims, initial=0).shape
        return [np.full(reduced, _EMPTY_EXTREMUM[n.node.op_type], np.float32)]
    return [_REDUCE[n.node.op_type](n.b, x, axes, keepdims)]


@converter("Softmax")
def softmax(n: NodeImporter) -> list[Result]:
    return [n.b.nn.softmax(n.tensor(0), int(n.attr("axis", -1)))]


# --- matrix products and convolution -------------------------------------------------------------


@converter("MatMul")
def matmul(n: NodeImporter) -> list[Result]:
    return [_matmul(n.b, n.tensor(0), n.tensor(1))]


def _matmul(b: Builder, x: SSAValue, y: SSAValue) -> SSAValue:
    """numpy's matmul: `relay.nn.matmul`, with 1-D operands made 2-D and back. A batch of
    matrices by one matrix (torch's Linear on [seq, batch, d] or [n, h, w, c]) is one 2-D
    product of the batch's rows (`Builder.unflatten`): a batch of few rows each is no matmul
    the packed schedules take."""
    xs, ys = shape_of(x), shape_of(y)
    if len(ys) == 2 and len(xs) > 2 and math.prod(xs[:-2]) > 1:
        flat = b.nn.matmul(b.reshape(x, (-1, xs[-1])), y)
        return b.unflatten(flat, (*xs[:-1], ys[1]))
    if len(xs) == 1 or len(ys) == 1:
        x2 = b.reshape(x, (1, xs[0])) if len(xs) == 1 else x
        y2 = b.reshape(y, (ys[0], 1)) if len(ys) == 1 else y
        return b.reshape(b.nn.matmul(x2, y2), _matmul_shape(xs, ys))
    return b.nn.matmul(x, y)


def _matmul_shape(xs: tuple[int, ...], ys: tuple[int, ...]) -> tuple[int, ...]:
    return np.matmul(np.empty(xs, np.float32), np.empty(ys, np.float32)).shape


def _broadcast(b: Builder, x: SSAValue, shape: tuple[int, ...]) -> SSAValue:
    return x if shape_of(x) == shape else b.broadcast_to(x, shape)


@converter("Gemm")
def gemm(n: NodeImporter) -> list[Result]:
    b = n.b
    a, w = n.tensor(0), n.tensor(1)
    if n.attr("transA", 0):
        a = b.transpose(a, (1, 0))
    y = b.nn.dense(a, w) if n.attr("transB", 0) else b.nn.matmul(a, w)
    alpha, beta = float(n.attr("alpha", 1.0)), float(n.attr("beta", 1.0))
    if alpha != 1.0:
        y = b.multiply(y, alpha)
    if n.has(2) and beta != 0.0:
        c = n.tensor(2)
        y = b.add(y, c if beta == 1.0 else b.multiply(c, beta))
    return [y]


@dataclass
class Window:
    """A Conv's or pool's window attributes per spatial axis (a 1-D op gets a height of 1)."""

    kernel: list[int]
    strides: list[int]
    dilations: list[int]
    pads: list[int]  # begin of each axis, then end of each axis: [top, left, bottom, right] in 2-D

    def axes(self, first: int, last: int) -> Window:
        """The window over spatial axes `first` to `last` (exclusive)."""
        rank = len(self.kernel)
        pads = self.pads[first:last] + self.pads[rank + first : rank + last]
        return Window(self.kernel[first:last], self.strides[first:last], self.dilations[first:last], pads)

    def with_unit_width(self) -> Window:
        """This 1-D window as a 2-D one of width 1."""
        return Window([*self.kernel, 1], [*self.strides, 1], [*self.dilations, 1], [self.pads[0], 0, self.pads[1], 0])


def _window(n: NodeImporter, size: Sequence[int], kernel: Sequence[int]) -> Window:
    """The window of an op with `auto_pad` resolved; a 1-D op's in 2-D (a height of 1)."""
    rank = len(size)
    strides = [int(s) for s in n.attr("strides", [1] * rank)]
    dilations = [int(d) for d in n.attr("dilations", [1] * rank)]
    pads = _window_padding(n, size, kernel, strides, dilations)
    if rank == 1:
        return Window([1, *kernel], [1, *strides], [1, *dilations], [0, pads[0], 0, pads[1]])
    return Window(list(kernel), strides, dilations, pads)


def _window_padding(
    n: NodeImporter, size: Sequence[int], kernel: Sequence[int], strides: Sequence[int], dilations: Sequence[int]
) -> list[int]:
    """ONNX pads `[x1_begin, x2_begin, ..., x1_end, x2_end, ...]` after `auto_pad`."""
    auto_pad = n.only("auto_pad", "NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER", default="NOTSET")
    if auto_pad == "VALID":
        return [0] * 2 * len(size)
    if auto_pad == "NOTSET":
        return [int(p) for p in n.attr("pads", [0] * 2 * len(size))]
    begin: list[int] = []
    end: list[int] = []
    for d, k, s, dil in zip(size, kernel, strides, dilations):
        total = max(0, (math.ceil(d / s) - 1) * s + (k - 1) * dil + 1 - d)
        small, large = total // 2, total - total // 2
        begin.append(small if auto_pad == "SAME_UPPER" else large)
        end.append(large if auto_pad == "SAME_UPPER" else small)
    return begin + end


def _spatial(n: NodeImporter, x: SSAValue, what: str) -> SSAValue:
    """NCHW data as it is, NCL data as NC1L; other ranks are not supported."""
    xs = shape_of(x)
    if len(xs) not in (3, 4):
        raise n.error(f"only 1-D and 2-D {what} (NCL or NCHW input) are supported, but the input has shape {list(xs)}")
    return x if len(xs) == 4 else n.b.reshape(x, (xs[0], xs[1], 1, xs[2]))


def _unspatial(n: NodeImporter, y: SSAValue, rank: int) -> SSAValue:
    ys = shape_of(y)
    return y if rank == 4 else n.b.reshape(y, (ys[0], ys[1], ys[3]))


@converter("Conv")
def conv(n: NodeImporter) -> list[Result]:
    x, w = n.tensor(0), n.tensor(1)
    xs, ws = shape_of(x), shape_of(w)
    window = _window(n, xs[2:], ws[2:])
    x4, w4 = _spatial(n, x, "convolutions"), _spatial(n, w, "convolutions")
    y = n.b.nn.conv2d(x4, w4, window.strides, window.pads, window.dilations, int(n.attr("group", 1)))
    if n.has(2):
        y = n.b.nn.bias_add(y, n.tensor(2))
    return [_unspatial(n, y, len(xs))]


@converter("ConvTranspose")
def conv_transpose(n: NodeImporter) -> list[Result]:
    """1-D and 2-D: the convolution of the input with zeros inserted between its elements
    (stride - 1 per gap) by the flipped kernel, its input and output channels swapped per
    group, then cropped to the window that pads, output_padding or output_shape give."""
    x, w, b = n.tensor(0), n.tensor(1), n.b
    xs, ws = shape_of(x), shape_of(w)
    rank, groups = len(xs), int(n.attr("group", 1))
    if groups < 1 or ws[0] % groups:
        raise n.error(f"attribute group = {groups} must be positive and divide the input channels of W ({ws[0]})")
    if len(xs) > 1 and xs[1] != ws[0]:
        raise n.error(f"expected an input of {ws[0]} channels (W's first dim), but found {xs[1]}")
    x4, w4 = _spatial(n, x, "transposed convolutions"), _spatial(n, w, "transposed convolutions")
    lead = [1] if rank == 3 else []  # a 1-D op in 2-D, of height 1
    strides = lead + [int(v) for v in n.attr("strides", [1] * (rank - 2))]
    dilations = lead + [int(v) for v in n.attr("dilations", [1] * (rank - 2))]
    begins, outs = _conv_transpose_window(n, xs[2:], ws[2:])
    begins, outs = [0] * len(lead) + begins, lead + outs
    if groups == 1 and _tiles_output(shape_of(x4)[2:], shape_of(w4)[2:], strides, dilations, begins, outs):
        y = _conv_transpose_tiles(b, x4, w4)
        return [_unspatial(n, b.nn.bias_add(y, n.tensor(2)) if n.has(2) else y, rank)]
    sizes, kernel = shape_of(x4)[2:], shape_of(w4)[2:]
    for axis, stride in enumerate(strides):
        x4 = _insert_zeros(b, x4, axis + 2, stride)
    before: list[int] = []
    after: list[int] = []
    for size, k, s, d, begin, out in zip(sizes, kernel, strides, dilations, begins, outs):
        upsampled, reach = (size - 1) * s + 1, (k - 1) * d
        before.append(reach - begin)
        after.append(out - upsampled + begin)
    pads = [max(0, p) for p in before + after]  # a negative pad crops: after the convolution
    y = b.nn.conv2d(x4, _flipped_kernel(b, w4, groups), (1, 1), pads, dilations, groups)
    ys = shape_of(y)
    crop = [max(0, -p) for p in before]
    if any(crop) or list(ys[2:]) != outs:
        y = b.strided_slice(y, [0, 0, *crop], [*ys[:2], *(c + o for c, o in zip(crop, outs))])
    if n.has(2):
        y = b.nn.bias_add(y, n.tensor(2))
    return [_unspatial(n, y, rank)]


def _tiles_output(
    sizes: Sequence[int],
    kernel: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
    begins: Sequence[int],
    outs: Sequence[int],
) -> bool:
    """Whether each input pixel's window lands on its own kh x kw tile of the output, which
    it fills: stride = kernel, dilation 1, no pads or output padding (UNet's 2x2 stride-2
    upsampling)."""
    return (
        list(strides) == list(kernel)
        and all(d == 1 for d in dilations)
        and not any(begins)
        and list(outs) == [size * k for size, k in zip(sizes, kernel)]
    )


def _conv_transpose_tiles(b: Builder, x: SSAValue, w: SSAValue) -> SSAValue:
    """A transposed convolution whose windows tile the output (`_tiles_output`): a 1x1
    convolution to C_out x kh x kw channels, each output tile's pixels, moved into place by a
    reshape and transpose; no zeros inserted and multiplied (the general path's kh x kw times
    the products: UNet's 64 -> 32 2x2 stride-2 upsampling took 0.35 ms so, AVX-512)."""
    n, _, h, width = shape_of(x)
    cin, cout, kh, kw = shape_of(w)
    weight = b.reshape(b.transpose(w, (1, 2, 3, 0)), (cout * kh * kw, cin, 1, 1))
    y = b.nn.conv2d(x, weight, (1, 1), [0, 0, 0, 0], (1, 1), 1)
    y = b.transpose(b.reshape(y, (n, cout, kh, kw, h, width)), (0, 1, 4, 2, 5, 3))
    return b.reshape(y, (n, cout, h * kh, width * kw))


def _conv_transpose_window(n: NodeImporter, sizes: Sequence[int], kernel: Sequence[int]) -> tuple[list[int], list[int]]:
    """Where the output starts in the full (unpadded) transposed convolution, and its size, per
    spatial axis: from pads (and output_padding or output_shape), or auto_pad (onnx's reference)."""
    rank = len(sizes)
    strides = [int(v) for v in n.attr("strides", [1] * rank)]
    dilations = [int(v) for v in n.attr("dilations", [1] * rank)]
    extra = [int(v) for v in n.attr("output_padding", [0] * rank)]
    given = n.attr("output_shape")
    given = None if given is None else [int(v) for v in given][-rank:]
    auto_pad = n.only("auto_pad", "NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER", default="NOTSET")
    full = [s * (d - 1) + (k - 1) * dil + 1 + e for d, k, s, dil, e in zip(sizes, kernel, strides, dilations, extra)]
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        outs = given or [d * s for d, s in zip(sizes, strides)]
        totals = [f - o for f, o in zip(full, outs)]
        return [t // 2 if auto_pad == "SAME_UPPER" else t - t // 2 for t in totals], outs
    pads = [0] * 2 * rank if auto_pad == "VALID" else [int(p) for p in n.attr("pads", [0] * 2 * rank)]
    outs = given or [f - pads[i] - pads[i + rank] for i, f in enumerate(full)]
    return pads[:rank], outs


def _insert_zeros(b: Builder, x: SSAValue, axis: int, stride: int) -> SSAValue:
    """`x` with `stride - 1` zeros between neighbours along `axis` (none after the last)."""
    xs = shape_of(x)
    if stride == 1 or xs[axis] <= 1:
        return x
    split = [*xs[: axis + 1], 1, *xs[axis + 1 :]]
    widths = [(0, 0)] * len(split)
    widths[axis + 1] = (0, stride - 1)
    padded = b.reshape(b.nn.pad(b.reshape(x, split), widths), [*xs[:axis], xs[axis] * stride, *xs[axis + 1 :]])
    end = list(xs)
    end[axis] = (xs[axis] - 1) * stride + 1
    return b.strided_slice(padded, [0] * len(xs), end)


def _flipped_kernel(b: Builder, w: SSAValue, groups: int) -> SSAValue:
    """ConvTranspose's [C_in, C_out / g, kh, kw] weight as the [C_out, C_in / g, kh, kw] weight
    of the equivalent convolution, its window flipped."""
    cin, cout_g, kh, kw = shape_of(w)
    w = b.reshape(w, (groups, cin // groups, cout_g, kh, kw))
    w = b.reshape(b.transpose(w, (0, 2, 1, 3, 4)), (groups * cout_g, cin // groups, kh, kw))
    for axis, k in ((2, kh), (3, kw)):
        if k > 1:
            w = b.take(w, list(range(k - 1, -1, -1)), axis)
    return w


Pool2D = Callable[[SSAValue, Window], SSAValue]


def _pool(n: NodeImporter, pool: Pool2D) -> SSAValue:
    """A 1-D, 2-D or 3-D pooling with the 2-D pool `pool`."""
    x = n.tensor(0)
    xs = shape_of(x)
    if len(xs) not in (3, 4, 5):
        raise n.error(
            f"only 1-D, 2-D and 3-D pools (NCL, NCHW or NCDHW input) are supported, but the input has shape {list(xs)}"
        )
    window = _window(n, xs[2:], [int(k) for k in n.attr("kernel_shape")])
    if len(xs) == 5:
        return _pool_3d(n.b, x, window, pool)
    return _unspatial(n, pool(_spatial(n, x, "pools"), window), len(xs))


def _pool_3d(b: Builder, x: SSAValue, window: Window, pool: Pool2D) -> SSAValue:
    """Max and average pools are separable: pool H and W (depth folded into the channels),
    then D (H and W folded into the width). Each axis keeps its padding, dilation, ceil_mode
    and count of taps, so the product of the per-axis counts is the 3-D one."""
    n, c, d, h, w = shape_of(x)
    hw = pool(b.reshape(x, (n, c * d, h, w)), window.axes(1, 3))
    h2, w2 = shape_of(hw)[2:]
    depth = pool(b.reshape(hw, (n, c, d, h2 * w2)), window.axes(0, 1).with_unit_width())
    return b.reshape(depth, (n, c, shape_of(depth)[2], h2, w2))


@converter("MaxPool")
def max_pool(n: NodeImporter) -> list[Result]:
    ceil = bool(n.attr("ceil_mode", 0))
    return [_pool(n, lambda x, w: n.b.nn.max_pool2d(x, w.kernel, w.strides, w.pads, w.dilations, ceil)), None]


@converter("AveragePool")
def average_pool(n: NodeImporter) -> list[Result]:
    ceil, count_pad = bool(n.attr("ceil_mode", 0)), bool(n.attr("count_include_pad", 0))
    return [_pool(n, lambda x, w: n.b.nn.avg_pool2d(x, w.kernel, w.strides, w.pads, w.dilations, ceil, count_pad))]


@converter("GlobalAveragePool")
def global_average_pool(n: NodeImporter) -> list[Result]:
    x = n.tensor(0)
    if len(shape_of(x)) != 4:
        return [n.b.mean(x, list(range(2, len(shape_of(x)))), keepdims=True)]
    return [n.b.nn.global_avg_pool2d(x)]


# --- resize ---------------------------------------------------------------------------------------

_RESIZE_COORDINATES = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric")
_NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


@converter("Resize")
def resize(n: NodeImporter) -> list[Result]:
    """Nearest and linear modes (torch's nearest, bilinear and trilinear) with scales or sizes
    known at import: separable, one axis at a time, as `relay.take` of the source rows (nearest)
    or the two neighbours blended by constant weights (linear), as onnx's reference computes them."""
    mode = n.only("mode", "nearest", "linear", default="nearest")
    coordinates = n.only("coordinate_transformation_mode", *_RESIZE_COORDINATES, default="half_pixel")
    nearest = n.only("nearest_mode", *_NEAREST_MODES, default="round_prefer_floor")
    n.only("antialias", 0, default=0)
    x = n.tensor(0)
    xs = shape_of(x)
    scales, outs = _resize_scales(n, xs)
    for axis, (size, scale, out) in enumerate(zip(xs, scales, outs)):
        if size == out and math.isclose(scale, 1.0):
            continue
        source = _resize_source(coordinates, np.arange(out, dtype=np.float64), scale, size, out)
        x = (
            _resize_nearest(n.b, x, axis, source, nearest)
            if mode == "nearest"
            else _resize_linear(n.b, x, axis, source)
        )
    return [x]


def _resize_scales(n: NodeImporter, xs: Sequence[int]) -> tuple[list[float], list[int]]:
    """The scale and output size per axis, from the scales input (sizes floor(scale * size)) or
    the sizes input (scales size_out / size, or one scale with keep_aspect_ratio_policy)."""
    rank = len(xs)
    axes = [_axis(int(a), rank, n) for a in n.attr("axes", list(range(rank)))]
    scales, outs = [1.0] * rank, list(xs)
    given_scales = n.known(2, "scales") if n.has(2) else np.zeros(0)
    if given_scales.size:
        for axis, scale in zip(axes, given_scales.reshape(-1)):
            scales[axis], outs[axis] = float(scale), int(float(scale) * xs[axis])
        return scales, outs
    sizes = n.ints(3, "sizes")
    if not sizes:
        raise n.error("expected scales or sizes known at import")
    for axis, size in zip(axes, sizes):
        scales[axis], outs[axis] = size / xs[axis], size
    policy = n.only("keep_aspect_ratio_policy", "stretch", "not_larger", "not_smaller", default="stretch")
    if policy != "stretch":
        scale = (min if policy == "not_larger" else max)(scales[a] for a in axes)
        for axis in axes:
            scales[axis], outs[axis] = scale, int(math.floor(scale * xs[axis] + 0.5))
    return scales, outs


def _resize_source(mode: str, y: np.ndarray, scale: float, size: int, out: int) -> np.ndarray:
    """The source coordinate of each output position `y` (onnx's coordinate_transformation_mode;
    as onnx's reference, align_corners and pytorch_half_pixel take the output length as
    `scale * size` unrounded)."""
    length = scale * size
    if mode == "align_corners":
        return np.zeros_like(y) if length == 1 else y * (size - 1) / (length - 1)
    if mode == "asymmetric":
        return y / scale
    if mode == "pytorch_half_pixel" and length == 1:
        return np.full_like(y, -0.5)
    if mode == "half_pixel_symmetric":
        offset = size / 2 * (1 - out / (scale * size))
        return offset + (y + 0.5) / scale - 0.5
    return (y + 0.5) / scale - 0.5


def _resize_nearest(b: Builder, x: SSAValue, axis: int, source: np.ndarray, mode: str) -> SSAValue:
    below = np.floor(source)
    fraction = source - below
    up = {
        "round_prefer_floor": fraction > 0.5,
        "round_prefer_ceil": fraction >= 0.5,
        "floor": np.zeros_like(fraction, dtype=bool),
        "ceil": fraction > 0,
    }[mode]
    xs = shape_of(x)
    index = np.clip(below + up, 0, xs[axis] - 1).astype(np.int64)
    factor = len(index) // max(xs[axis], 1)
    if factor > 1 and np.array_equal(index, np.arange(len(index)) // factor):
        # Each row repeated `factor` times (torch's nearest upsampling by an integer): a
        # broadcast, which no gather needs.
        wide = [*xs[: axis + 1], 1, *xs[axis + 1 :]]
        repeated = [*xs[: axis + 1], factor, *xs[axis + 1 :]]
        merged = [*xs[:axis], xs[axis] * factor, *xs[axis + 1 :]]
        return b.reshape(b.broadcast_to(b.reshape(x, wide), repeated), merged)
    return b.take(x, index, axis)


def _resize_linear(b: Builder, x: SSAValue, axis: int, source: np.ndarray) -> SSAValue:
    """The two neighbours of each source coordinate (clamped to the edge) blended by constant
    weights: by phases for an integer upscale whose coordinates repeat every `factor` outputs
    (torch's bilinear, align_corners False), by gathers otherwise."""
    phased = _resize_linear_phases(b, x, axis, source)
    if phased is not None:
        return phased
    size = shape_of(x)[axis]
    below = np.floor(source)
    weight = (source - below).astype(np.float32)
    low = b.take(x, np.clip(below, 0, size - 1).astype(np.int64), axis)
    if not weight.any():
        return low
    high = b.take(x, np.clip(below + 1, 0, size - 1).astype(np.int64), axis)
    shape = [1] * len(shape_of(x))
    shape[axis] = len(weight)
    w = weight.reshape(shape)
    return b.add(b.multiply(low, 1 - w), b.multiply(high, w))


def _resize_linear_phases(b: Builder, x: SSAValue, axis: int, source: np.ndarray) -> SSAValue | None:
    """Output `k * factor + p` blends input rows `k + offset_p` and `k + offset_p + 1` with the
    same weights for every k: one blend of two shifted slices of the edge-padded input per
    phase p, the phases interleaved by a concatenation and a reshape (no gather). None when
    the coordinates do not repeat so."""
    xs = shape_of(x)
    size = xs[axis]
    factor = len(source) // max(size, 1)
    if factor < 2 or len(source) != size * factor:
        return None
    starts = source[:factor]
    if not np.allclose(source.reshape(size, factor) - np.arange(size)[:, None], starts, rtol=0, atol=1e-9):
        return None
    offsets = np.floor(starts).astype(np.int64)
    before, after = max(0, -int(offsets.min())), max(0, int(offsets.max()) + 1)
    widths = [(0, 0)] * len(xs)
    widths[axis] = (before, after)
    padded = b.nn.pad(x, widths, pad_mode="edge") if before or after else x

    def rows(first: int) -> SSAValue:
        begin, end = [0] * (axis + 1), list(xs[: axis + 1])
        begin[axis], end[axis] = first + before, first + before + size
        return b.strided_slice(padded, begin, end)

    phases: list[SSAValue] = []
    for start, offset in zip(starts, offsets):
        weight = float(np.float32(start - offset))
        y = rows(int(offset))
        if weight:
            y = b.add(b.multiply(y, 1 - weight), b.multiply(rows(int(offset) + 1), weight))
        phases.append(b.reshape(y, [*xs[: axis + 1], 1, *xs[axis + 1 :]]))
    return b.reshape(b.concatenate(phases, axis + 1), [*xs[:axis], size * factor, *xs[axis + 1 :]])


# --- normalizations ------------------------------------------------------------------------------


@converter("BatchNormalization")
def batch_norm(n: NodeImporter) -> list[Result]:
    """Inference: `x * s + (bias - mean * s)` with `s = scale / sqrt(var + epsilon)` per channel,
    folded at import when the statistics are known."""
    if n.attr("training_mode", 0):
        raise n.error("attribute training_mode = 1 is not supported (inference only)")
    x, b = n.tensor(0), n.b
    rank, eps = len(shape_of(x)), float(n.attr("epsilon", 1e-5))
    per_channel = (-1,) + (1,) * (rank - 2)
    if all(name in n.known_values for name in n.node.input[1:5]):
        scale, bias, mean, var = (n.known(i, "statistics").astype(np.float64) for i in range(1, 5))
        s = scale / np.sqrt(var + eps)
        shift = bias - mean * s
        return [b.add(b.multiply(x, s.reshape(per_channel)), shift.reshape(per_channel))]
    scale, bias, mean, var = (b.reshape(n.tensor(i), per_channel) for i in range(1, 5))
    s = b.divide(scale, b.sqrt(b.add(var, eps)))
    return [b.add(b.multiply(b.subtract(x, mean), s), bias)]


@converter("LayerNormalization")
def layer_norm(n: NodeImporter) -> list[Result]:
    """`relay.nn.layer_norm`; composed from reductions when the graph uses the Mean or
    InvStdDev output."""
    x, b = n.tensor(0), n.b
    xs = shape_of(x)
    axis = _axis(int(n.attr("axis", -1)), len(xs), n)
    if n.only("stash_type", 1, default=1) != 1:
        raise n.error("only stash_type = 1 (float32) is supported")
    eps = float(n.attr("epsilon", 1e-5))
    scale = _broadcast(b, n.tensor(1), xs[axis:])
    bias = _broadcast(b, n.tensor(2), xs[axis:]) if n.has(2) else b.const(np.zeros(xs[axis:], np.float32))
    if not any(n.node.output[1:]):
        return [b.nn.layer_norm(x, scale, bias, axis, eps)]
    axes = list(range(axis, len(xs)))
    mean = b.mean(x, axes, keepdims=True)
    centered = b.subtract(x, mean)
    inv_std = b.rsqrt(b.add(b.mean(b.multiply(centered, centered), axes, keepdims=True), eps))
    return [b.add(b.multiply(b.multiply(centered, inv_std), scale), bias), mean, inv_std]


@converter("Dropout")
def dropout(n: NodeImporter) -> list[Result]:
    if n.has(2) and bool(n.known(2, "training_mode").reshape(-1)[0]):
        raise n.error("training_mode = true is not supported (inference only)")
    return [n.tensor(0), None]


# --- shapes ---------------------------------------------------------------------------------------


@converter("Reshape")
def reshape(n: NodeImporter) -> list[Result]:
    x, target = n.tensor(0), n.ints(1, "shape") or []
    xs = shape_of(x)
    if not n.attr("allowzero", 0):
        target = [xs[i] if d == 0 else d for i, d in enumerate(target)]
    return [n.b.reshape(x, target)]


@converter("Flatten")
def flatten(n: NodeImporter) -> list[Result]:
    x = n.tensor(0)
    xs = shape_of(x)
    axis = int(n.attr("axis", 1))
    axis = axis + len(xs) if axis < 0 else axis
    return [n.b.reshape(x, (math.prod(xs[:axis]), math.prod(xs[axis:])))]


@converter("Transpose")
def transpose(n: NodeImporter) -> list[Result]:
    perm = n.attr("perm")
    return [n.b.transpose(n.tensor(0), None if perm is None else [int(p) for p in perm])]


@converter("Squeeze")
def squeeze(n: NodeImporter) -> list[Result]:
    return [n.b.squeeze(n.tensor(0), n.axes())]


@converter("Unsqueeze")
def unsqueeze(n: NodeImporter) -> list[Result]:
    x = n.tensor(0)
    axes = n.axes() or []
    xs = list(shape_of(x))
    rank = len(xs) + len(axes)
    for a in sorted(_axis(a, rank, n) for a in axes):
        xs.insert(a, 1)
    return [n.b.reshape(x, xs)]


@converter("Concat")
def concat(n: NodeImporter) -> list[Result]:
    values = n.tensors()
    return [n.b.concatenate(values, _axis(int(n.attr("axis")), len(shape_of(values[0])), n))]


@converter("Expand")
def expand(n: NodeImporter) -> list[Result]:
    x = n.tensor(0)
    shape = tuple(np.broadcast_shapes(shape_of(x), tuple(n.ints(1, "shape") or [])))
    return [_broadcast(n.b, x, shape)]


@converter("Slice")
def slice_(n: NodeImporter) -> list[Result]:
    x = n.tensor(0)
    xs = shape_of(x)
    starts, ends = n.ints(1, "starts") or [], n.ints(2, "ends") or []
    axes = n.ints(3, "axes") or list(range(len(starts)))
    steps = n.ints(4, "steps") or [1] * len(starts)
    begin, end, strides = [0] * len(xs), list(xs), [1] * len(xs)
    for start, stop, axis, step in zip(starts, ends, axes, steps):
        axis = _axis(axis, len(xs), n)
        begin[axis], end[axis], strides[axis] = *_slice_bounds(start, stop, step, xs[axis]), step
    return [n.b.strided_slice(x, begin, end, strides)]


def _slice_bounds(start: int, stop: int, step: int, dim: int) -> tuple[int, int]:
    """ONNX's clamped bounds as Python slice bounds (an end before index 0 is `-dim - 1`)."""
    start, stop = (start + dim if start < 0 else start), (stop + dim if stop < 0 else stop)
    if step > 0:
        return min(max(start, 0), dim), min(max(stop, 0), dim)
    start, stop = min(max(start, 0), dim - 1), min(max(stop, -1), dim - 1)
    return start, (-dim - 1 if stop < 0 else stop)


@converter("Split")
def split(n: NodeImporter) -> list[Result]:
    x = n.tensor(0)
    xs = shape_of(x)
    axis = _axis(int(n.attr("axis", 0)), len(xs), n)
    sizes = n.ints(1, "split") or n.attr("split")
    if sizes is None:
        count = int(n.attr("num_outputs", len(n.node.output)))
        chunk = -(-xs[axis] // count)
        sizes = [min(chunk, xs[axis] - i * chunk) for i in range(count)]
    results: list[Result] = []
    offset = 0
    for size in sizes:
        begin, end = [0] * (axis + 1), list(xs[: axis + 1])
        begin[axis], end[axis] = offset, offset + int(size)
        results.append(n.b.strided_slice(x, begin, end))
        offset += int(size)
    return results


@converter("Pad")
def pad(n: NodeImporter) -> list[Result]:
    mode = n.only("mode", "constant", "edge", "reflect", "wrap", default="constant")
    x = n.tensor(0)
    rank = len(shape_of(x))
    axes = [_axis(a, rank, n) for a in (n.ints(3, "axes") or range(rank))]
    given = n.ints(1, "pads")
    if given is None or len(given) != 2 * len(axes):
        raise n.error(f"expected {2 * len(axes)} pads (before and after for each axis), but found {given}")
    pads = [0] * 2 * rank
    for i, axis in enumerate(axes):
        pads[axis], pads[axis + rank] = given[i], given[i + len(axes)]
    value = _pad_value(n) if mode == "constant" else 0.0
    if isinstance(value, SSAValue):
        return [_pad_with_tensor(n.b, x, pads, value)]
    return [n.b.nn.pad(x, list(zip(pads[:rank], pads[rank:])), value, mode)]


def _pad_with_tensor(b: Builder, x: SSAValue, pads: Sequence[int], value: SSAValue) -> SSAValue:
    """`x` padded with a value computed at run time (a 0-d tensor), ONNX pads
    `[x1_begin, ..., x1_end, ...]`: negative pads slice, positive ones concatenate blocks of
    the value."""
    rank = len(shape_of(x))
    for axis in range(rank):
        before, after = pads[axis], pads[axis + rank]
        if before < 0 or after < 0:
            xs = shape_of(x)
            begin, end = [0] * rank, list(xs)
            begin[axis], end[axis] = max(0, -before), xs[axis] - max(0, -after)
            x = b.strided_slice(x, begin, end)
        parts = [x]
        for count, first in ((before, True), (after, False)):
            if count > 0:
                block = list(shape_of(x))
                block[axis] = count
                parts.insert(0 if first else len(parts), b.broadcast_to(value, block))
        if len(parts) > 1:
            x = b.concatenate(parts, axis)
    return x


def _pad_value(n: NodeImporter) -> float | SSAValue:
    if not n.has(2) or n.node.input[2] in n.known_values:
        return n.scalar(2, "constant_value", 0.0)
    return n.b.reshape(n.tensor(2), ())


@converter("Gather")
def gather(n: NodeImporter) -> list[Result]:
    """`relay.take`: of constant indices, or of an int64 tensor of them computed at run time
    (token ids into an embedding table), clipped into range where ONNX leaves an
    out-of-range index undefined."""
    x = n.tensor(0)
    axis = _axis(int(n.attr("axis", 0)), len(shape_of(x)), n)
    name = n.node.input[1] if n.has(1) else ""
    if name in n.known_values:
        return [n.b.take(x, n.known(1, "indices").astype(np.int64), axis)]
    indices = n.tensor(1)
    if element_dtype_name(indices) != "int64":
        raise n.error(f"indices of type {indices.type} are not supported (int64 indices are)")
    return [n.b.take(x, indices, axis)]


@converter("GatherElements")
def gather_elements(n: NodeImporter) -> list[Result]:
    """Constant indices: `relay.take` of the flattened input at the flat positions they name."""
    x = n.tensor(0)
    xs = shape_of(x)
    axis = _axis(int(n.attr("axis", 0)), len(xs), n)
    indices = n.known(1, "indices").astype(np.int64)
    if indices.ndim != len(xs):
        raise n.error(f"expected indices of rank {len(xs)} (the input's), but found shape {list(indices.shape)}")
    if ((indices < -xs[axis]) | (indices >= xs[axis])).any():
        raise n.error(f"indices must lie in [{-xs[axis]}, {xs[axis]}) along axis {axis}")
    coordinates: list[np.ndarray] = list(np.indices(indices.shape, sparse=True))
    coordinates[axis] = np.where(indices < 0, indices + xs[axis], indices)
    flat = np.ravel_multi_index(tuple(np.broadcast_arrays(*coordinates)), xs)
    return [n.b.take(n.b.reshape(x, (math.prod(xs),)), flat, 0)]


@converter("Shape")
def shape(n: NodeImporter) -> list[Result]:
    dims = np.array(n.shape(0), dtype=np.int64)
    start, end = int(n.attr("start", 0)), n.attr("end")
    return [dims[start : None if end is None else int(end)]]


@converter("Size")
def size(n: NodeImporter) -> list[Result]:
    return [np.array(math.prod(n.shape(0)), dtype=np.int64)]


# ONNX TensorProto element types relay tensors hold, by their numpy name.
ONNX_DTYPES = {1: "float32", 7: "int64", 9: "bool"}  # TensorProto.FLOAT, INT64, BOOL


def onnx_dtype_name(to: int) -> str:
    from onnx import TensorProto

    return TensorProto.DataType.Name(to).lower() if to in TensorProto.DataType.values() else f"type {to}"


@converter("Cast")
def cast(n: NodeImporter) -> list[Result]:
    """`relay.cast` to float32, int64 or bool; any other type is an error naming it."""
    to = int(n.attr("to"))
    if to not in ONNX_DTYPES:
        raise n.error(f"casting a tensor to {onnx_dtype_name(to)} is not supported (only to float, int64 and bool)")
    return [_cast(n.b, n.tensor(0), ONNX_DTYPES[to])]


def _cast(b: Builder, x: SSAValue, dtype: str) -> SSAValue:
    return x if element_dtype_name(x) == dtype else b.cast(x, dtype)


def element_dtype_name(x: SSAValue) -> str:
    found = dtype_of(x.type)
    assert found is not None  # relay values hold one of the dtypes
    return found.name


_COMPARE: dict[str, Callable[[Builder, Operand, Operand], SSAValue]] = {
    "Equal": Builder.equal,
    "Less": Builder.less,
    "LessOrEqual": Builder.less_equal,
    "Greater": Builder.greater,
    "GreaterOrEqual": Builder.greater_equal,
    "And": Builder.logical_and,
    "Or": Builder.logical_or,
}


@converter(*_COMPARE)
def compare(n: NodeImporter) -> list[Result]:
    """Comparisons (a bool tensor) and the logical And and Or of bool tensors."""
    return [_COMPARE[n.node.op_type](n.b, n.tensor(0), n.tensor(1))]


@converter("IsNaN")
def is_nan(n: NodeImporter) -> list[Result]:
    """`x != x`: true exactly where x is NaN (an unordered comparison)."""
    x = n.tensor(0)
    return [n.b.not_equal(x, x)]


@converter("Not")
def not_(n: NodeImporter) -> list[Result]:
    return [n.b.logical_not(n.tensor(0))]


@converter("Where")
def where(n: NodeImporter) -> list[Result]:
    return [n.b.where(n.tensor(0), n.tensor(1), n.tensor(2))]


@converter("CastLike")
def cast_like(n: NodeImporter) -> list[Result]:
    name = n.node.input[1] if n.has(1) else ""
    to = n.known_values[name].dtype.name if name in n.known_values else element_dtype_name(n.tensor(1))
    if to not in ONNX_DTYPES.values():
        raise n.error(f"casting a tensor to {to} is not supported (only to float32, int64 and bool)")
    return [_cast(n.b, n.tensor(0), to)]
