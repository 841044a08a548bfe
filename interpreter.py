"""
The reference interpreter: runs a module on numpy, at any stage before lowering.

Built on xDSL's `Interpreter`: `func.func`, `func.call` and `func.return` come from xDSL, and
each relay op has a numpy implementation below. Placement ops are identities; `relay.fused`
runs its region. Results are numpy arrays of the result types' dtypes (float32, int64, bool).

    out = xrelay.interpret(module, {"a": a, "b": b})   # one array, or a tuple for several results
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    PythonValues,
    ReturnedValues,
    impl,
    impl_terminator,
    register_impls,
)
from xdsl.interpreters.func import FuncFunctions

from xrelay.diagnostics import location_of
from xrelay.dialects import relay
from xrelay.dialects.dtypes import dtype_of
from xrelay.errors import InputError
from xrelay.ir import Program, as_module
from xrelay.transforms.inline_calls import inline_calls
from xrelay.values import check_input, constant_value, entry_function

_erf = np.vectorize(math.erf, otypes=[np.float32])

UNARY = {
    relay.NegativeOp: np.negative,
    relay.ExpOp: np.exp,
    relay.LogOp: np.log,
    relay.SqrtOp: np.sqrt,
    relay.RsqrtOp: lambda x: 1.0 / np.sqrt(x),
    relay.TanhOp: np.tanh,
    relay.SigmoidOp: lambda x: 1.0 / (1.0 + np.exp(-x)),
    relay.AbsOp: np.abs,
    relay.ErfOp: _erf,
    relay.ReluOp: lambda x: np.maximum(x, np.float32(0)),
}


def _int_divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """int64 division truncating toward zero, as C and ONNX's Div (numpy's // floors); a zero
    divisor gives 0, as in the kernels (where C's division would trap)."""
    quotient = np.abs(a) // np.where(b == 0, 1, np.abs(b))
    return np.where(b == 0, 0, np.sign(a) * np.sign(b) * quotient)


BINARY = {
    relay.EqualOp: np.equal,
    relay.NotEqualOp: np.not_equal,
    relay.LessOp: np.less,
    relay.LessEqualOp: np.less_equal,
    relay.GreaterOp: np.greater,
    relay.GreaterEqualOp: np.greater_equal,
    relay.LogicalAndOp: np.logical_and,
    relay.LogicalOrOp: np.logical_or,
    relay.AddOp: np.add,
    relay.SubtractOp: np.subtract,
    relay.MultiplyOp: np.multiply,
    relay.DivideOp: np.divide,
    relay.MaximumOp: np.maximum,
    relay.MinimumOp: np.minimum,
    relay.PowerOp: np.power,
}

REDUCE = {
    relay.SumOp: np.sum,
    relay.MeanOp: np.mean,
    relay.MaxOp: np.max,
    relay.MinOp: np.min,
}


def _f32(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, dtype=np.float32)


def _as_result(x: np.ndarray, op: relay.RelayOp) -> np.ndarray:
    """`x` in the dtype of `op`'s result type."""
    found = dtype_of(op.results[0].type)
    assert found is not None  # verified
    return np.asarray(x, dtype=found.numpy)


def conv2d(x: np.ndarray, w: np.ndarray, op: relay.Conv2DOp) -> np.ndarray:
    """Grouped, strided, dilated, padded NCHW convolution as one einsum per group and tap.
    Padding is never read: a tap's contribution is masked where its input position is
    padding, so a NaN or inf weight there adds nothing (not numpy's 0 x NaN = NaN), as in
    the kernels."""
    (sh, sw), (dh, dw), groups = op.stride_values, op.dilation_values, op.group_count
    top, left, bottom, right = op.padding_values
    pads = ((top, bottom), (left, right))
    xp = np.pad(x, ((0, 0), (0, 0), *pads))
    inside = np.pad(np.ones(x.shape[2:], dtype=bool), pads)
    n, _, oh, ow = op.res.type.get_shape()
    o, ci, kh, kw = w.shape
    out = np.zeros((n, o, oh, ow), dtype=np.float32)
    og = o // groups
    for g in range(groups):
        xg = xp[:, g * ci : (g + 1) * ci]
        wg = w[g * og : (g + 1) * og]
        for i in range(kh):
            for j in range(kw):
                rows, cols = slice(i * dh, i * dh + sh * oh, sh), slice(j * dw, j * dw + sw * ow, sw)
                with np.errstate(invalid="ignore"):  # 0 x inf on padding, masked next
                    tap = np.einsum("nchw,oc->nohw", xg[:, :, rows, cols], wg[:, :, i, j])
                out[:, g * og : (g + 1) * og] += np.where(inside[rows, cols], tap, np.float32(0))
    return out


def pool2d(x: np.ndarray, op: relay.Pool2DOp) -> np.ndarray:
    """Max or average pooling over dilated windows; padding is never chosen by max, and
    counted by avg only with `count_include_pad` (the explicit padding: not the taps past it
    that `ceil_mode` adds)."""
    (kh, kw), (sh, sw), (dh, dw) = op.window, op.stride_values, op.dilation_values
    top, left, bottom, right = op.padding_values
    _, _, height, width = x.shape
    _, _, oh, ow = op.res.type.get_shape()
    rows = np.arange(oh)[:, None] * sh - top + np.arange(kh)[None, :] * dh  # [oh, kh]: the input row of each tap
    cols = np.arange(ow)[:, None] * sw - left + np.arange(kw)[None, :] * dw  # [ow, kw]
    taps = x[:, :, np.clip(rows, 0, height - 1)][:, :, :, :, np.clip(cols, 0, width - 1)]  # [n, c, oh, kh, ow, kw]
    inside = ((rows >= 0) & (rows < height))[:, :, None, None] & ((cols >= 0) & (cols < width))[None, None]
    if isinstance(op, relay.MaxPool2DOp):
        return np.max(np.where(inside, taps, np.float32(-np.inf)), axis=(3, 5))
    total = np.sum(np.where(inside, taps, np.float32(0)), axis=(3, 5))
    counted = inside
    if isinstance(op, relay.AvgPool2DOp) and op.counts_padding:
        counted = ((rows >= -top) & (rows < height + bottom))[:, :, None, None] & (
            (cols >= -left) & (cols < width + right)
        )[None, None]
    return total / np.sum(counted, axis=(1, 3)).astype(np.float32)


def softmax(x: np.ndarray, axis: int) -> np.ndarray:
    if x.size == 0:
        return x.copy()  # nothing to normalise (np.max has no identity for an empty axis)
    shifted = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return shifted / np.sum(shifted, axis=axis, keepdims=True)


def layer_norm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, axis: int, epsilon: float) -> np.ndarray:
    """ONNX's LayerNormalization over axes `axis`..: the mean (as the kernels compute it: the
    row's first element plus the mean of the differences from it), then the biased variance
    about it."""
    if x.size == 0:
        return x.copy()
    axes = tuple(range(axis, x.ndim))
    first = x[(slice(None),) * axis + (slice(0, 1),) * (x.ndim - axis)]
    centred = x - (first + np.mean(x - first, axis=axes, keepdims=True))
    variance = np.mean(np.square(centred), axis=axes, keepdims=True)
    return centred * (np.float32(1) / np.sqrt(variance + np.float32(epsilon))) * gamma + beta


def pad(x: np.ndarray, op: relay.PadOp) -> np.ndarray:
    """np.pad by the positive pads, then the negative ones cropped (as the kernels index)."""
    pads = op.pads
    grown = [(max(b, 0), max(a, 0)) for b, a in pads]
    if op.mode == "constant":
        padded = np.pad(x, grown, mode="constant", constant_values=np.float32(op.value))
    else:
        padded = np.pad(x, grown, mode=op.mode)
    return padded[tuple(slice(-min(b, 0), padded.shape[i] + min(a, 0)) for i, (b, a) in enumerate(pads))]


class RelayFunctions(InterpreterFunctions):
    """numpy implementations of the relay ops."""

    def run_unary(self, interp: Interpreter, op: relay.UnaryElemwiseOp, args: PythonValues) -> PythonValues:
        if isinstance(op, relay.LogicalNotOp):
            return (np.logical_not(args[0]),)
        if args[0].dtype == np.int64:  # negative, abs, relu (the verifier allows no others)
            return (_as_result(UNARY[type(op)](args[0]), op),)
        if isinstance(op, relay.ClipOp):
            return (_f32(np.clip(args[0], op.a_min.value.data, op.a_max.value.data)),)
        if isinstance(op, relay.LeakyReluOp):
            x = args[0]
            return (_f32(np.where(x > 0, x, x * np.float32(op.alpha_value))),)
        return (_f32(UNARY[type(op)](args[0])),)

    def run_binary(self, interp: Interpreter, op: relay.BinaryBroadcastOp, args: PythonValues) -> PythonValues:
        lhs, rhs = args
        if isinstance(op, relay.DivideOp) and lhs.dtype == np.int64:
            return (_int_divide(*np.broadcast_arrays(lhs, rhs)),)
        with np.errstate(all="ignore"):
            return (_as_result(BINARY[type(op)](lhs, rhs), op),)

    @impl(relay.CastOp)
    def run_cast(self, interp: Interpreter, op: relay.CastOp, args: PythonValues) -> PythonValues:
        with np.errstate(all="ignore"):  # NaN or an out-of-range float to int64: undefined in C too
            return (_as_result(args[0], op),)

    @impl(relay.WhereOp)
    def run_where(self, interp: Interpreter, op: relay.WhereOp, args: PythonValues) -> PythonValues:
        return (_as_result(np.where(*args), op),)

    @impl(relay.BiasAddOp)
    def run_bias_add(self, interp: Interpreter, op: relay.BiasAddOp, args: PythonValues) -> PythonValues:
        x, b = args
        shape = [1] * x.ndim
        shape[op.axis_value] = b.shape[0]
        return (_f32(x + b.reshape(shape)),)

    @impl(relay.PadOp)
    def run_pad(self, interp: Interpreter, op: relay.PadOp, args: PythonValues) -> PythonValues:
        return (np.array(pad(args[0], op), order="C"),)

    @impl(relay.TakeOp)
    def run_take(self, interp: Interpreter, op: relay.TakeOp, args: PythonValues) -> PythonValues:
        if op.runtime_indices is not None:
            extent = args[0].shape[op.axis_value]
            indices = np.where(args[1] < 0, args[1] + extent, args[1])
            return (np.array(np.take(args[0], indices, axis=op.axis_value, mode="clip"), order="C"),)
        indices = np.array(op.normalized_indices, dtype=np.int64).reshape(op.indices_shape)
        return (np.array(np.take(args[0], indices, axis=op.axis_value), order="C"),)

    @impl(relay.ReshapeOp)
    def run_reshape(self, interp: Interpreter, op: relay.ReshapeOp, args: PythonValues) -> PythonValues:
        return (args[0].reshape(op.res.type.get_shape()),)

    @impl(relay.TransposeOp)
    def run_transpose(self, interp: Interpreter, op: relay.TransposeOp, args: PythonValues) -> PythonValues:
        return (np.array(np.transpose(args[0], op.permutation), order="C"),)

    @impl(relay.SqueezeOp)
    def run_squeeze(self, interp: Interpreter, op: relay.SqueezeOp, args: PythonValues) -> PythonValues:
        return (np.squeeze(args[0], axis=op.squeezed_axes),)

    @impl(relay.ExpandDimsOp)
    def run_expand_dims(self, interp: Interpreter, op: relay.ExpandDimsOp, args: PythonValues) -> PythonValues:
        return (args[0].reshape(op.res.type.get_shape()),)

    @impl(relay.BroadcastToOp)
    def run_broadcast_to(self, interp: Interpreter, op: relay.BroadcastToOp, args: PythonValues) -> PythonValues:
        return (np.array(np.broadcast_to(args[0], op.res.type.get_shape()), order="C"),)

    @impl(relay.StridedSliceOp)
    def run_strided_slice(self, interp: Interpreter, op: relay.StridedSliceOp, args: PythonValues) -> PythonValues:
        return (np.array(args[0][op.slices()], order="C"),)

    @impl(relay.ConcatenateOp)
    def run_concatenate(self, interp: Interpreter, op: relay.ConcatenateOp, args: PythonValues) -> PythonValues:
        return (np.concatenate(args, axis=op.axis_value),)

    def run_reduce(self, interp: Interpreter, op: relay.ReduceOp, args: PythonValues) -> PythonValues:
        result = REDUCE[type(op)](args[0], axis=op.reduced_axes, keepdims=op.keeps_dims)
        return (_as_result(result, op).reshape(op.res.type.get_shape()),)

    @impl(relay.DenseOp)
    def run_dense(self, interp: Interpreter, op: relay.DenseOp, args: PythonValues) -> PythonValues:
        return (_f32(args[0] @ args[1].T),)

    @impl(relay.BatchMatmulOp)
    def run_batch_matmul(self, interp: Interpreter, op: relay.BatchMatmulOp, args: PythonValues) -> PythonValues:
        return (_f32(args[0] @ args[1].transpose(0, 2, 1)),)

    @impl(relay.MatmulOp)
    def run_matmul(self, interp: Interpreter, op: relay.MatmulOp, args: PythonValues) -> PythonValues:
        return (_f32(np.matmul(args[0], args[1])),)

    @impl(relay.Conv2DOp)
    def run_conv2d(self, interp: Interpreter, op: relay.Conv2DOp, args: PythonValues) -> PythonValues:
        return (conv2d(args[0], args[1], op),)

    def run_pool2d(self, interp: Interpreter, op: relay.Pool2DOp, args: PythonValues) -> PythonValues:
        return (_f32(pool2d(args[0], op)),)

    @impl(relay.GlobalAvgPool2DOp)
    def run_global_avg_pool2d(
        self, interp: Interpreter, op: relay.GlobalAvgPool2DOp, args: PythonValues
    ) -> PythonValues:
        return (_f32(np.mean(args[0], axis=(2, 3), keepdims=True)),)

    @impl(relay.SoftmaxOp)
    def run_softmax(self, interp: Interpreter, op: relay.SoftmaxOp, args: PythonValues) -> PythonValues:
        return (_f32(softmax(args[0], op.axis_value)),)

    @impl(relay.LayerNormOp)
    def run_layer_norm(self, interp: Interpreter, op: relay.LayerNormOp, args: PythonValues) -> PythonValues:
        with np.errstate(all="ignore"):  # NaN and inf rows stay NaN
            return (_f32(layer_norm(*args, op.axis_value, op.epsilon_value)),)

    @impl(relay.ConstantOp)
    def run_constant(self, interp: Interpreter, op: relay.ConstantOp, args: PythonValues) -> PythonValues:
        return (constant_value(op),)

    @impl(relay.OnDeviceOp)
    def run_on_device(self, interp: Interpreter, op: relay.OnDeviceOp, args: PythonValues) -> PythonValues:
        return (args[0],)

    @impl(relay.DeviceCopyOp)
    def run_device_copy(self, interp: Interpreter, op: relay.DeviceCopyOp, args: PythonValues) -> PythonValues:
        return (args[0].copy(),)

    @impl(relay.FusedOp)
    def run_fused(self, interp: Interpreter, op: relay.FusedOp, args: PythonValues) -> PythonValues:
        return interp.run_ssacfg_region(op.body, args, op.kernel or "relay.fused")

    @impl_terminator(relay.YieldOp)
    def run_yield(self, interp: Interpreter, op: relay.YieldOp, args: PythonValues):
        return ReturnedValues(args), ()


# xDSL dispatches on the exact op class: one shared method serves each op of a family.
for _family, _method in (
    ((*UNARY, relay.ClipOp, relay.LeakyReluOp, relay.LogicalNotOp), RelayFunctions.run_unary),
    (BINARY, RelayFunctions.run_binary),
    (REDUCE, RelayFunctions.run_reduce),
    ((relay.MaxPool2DOp, relay.AvgPool2DOp), RelayFunctions.run_pool2d),
):
    for _op_type in _family:
        setattr(RelayFunctions, f"run_{_op_type.__name__}", impl(_op_type)(_method))
register_impls(RelayFunctions)


def bind_inputs(fn: func.FuncOp, inputs: Mapping[str, np.ndarray] | Sequence[np.ndarray]) -> list[np.ndarray]:
    """The arrays for `fn`'s parameters, by name (or position), checked for shape and dtype."""
    params = list(fn.args)
    names = [a.name_hint or f"arg{i}" for i, a in enumerate(params)]
    if isinstance(inputs, Mapping):
        missing = [n for n in names if n not in inputs]
        unknown = [n for n in inputs if n not in names]
        if missing or unknown:
            raise InputError(
                f"@{fn.sym_name.data} takes inputs {', '.join('%' + n for n in names)}; "
                + (f"missing {', '.join('%' + n for n in missing)}" if missing else "")
                + ("; " if missing and unknown else "")
                + (f"unknown {', '.join(repr(n) for n in unknown)}" if unknown else "")
            )
        values = [inputs[n] for n in names]
    else:
        values = list(inputs)
        if len(values) != len(params):
            raise InputError(f"@{fn.sym_name.data} takes {len(params)} inputs, but {len(values)} were given")
    return [check_input(n, p.type, v) for n, p, v in zip(names, params, values)]


def interpret(
    program: Program,
    inputs: Mapping[str, np.ndarray] | Sequence[np.ndarray] | None = None,
    /,
    entry: str = "main",
    **named: np.ndarray,
) -> np.ndarray | tuple[np.ndarray, ...]:
    """Runs `@entry` of `program` (a module, relay text or a .mlir path, as `xrelay.build`
    takes) on numpy inputs, by name (a dict or keywords) or by position; one array, or a tuple
    for several results."""
    module = as_module(program, "xrelay.interpret")
    check_not_lowered(module)
    fn = entry_function(module, entry)
    if any(isinstance(op, func.CallOp) for op in fn.walk()):
        module, fn = inlined(module, entry)
    args = bind_inputs(fn, named if inputs is None else {**inputs, **named} if isinstance(inputs, Mapping) else inputs)
    interp = Interpreter(module)
    interp.register_implementations(FuncFunctions())
    interp.register_implementations(RelayFunctions())
    results = interp.call_op(fn, tuple(args))
    return results[0] if len(results) == 1 else tuple(results)


def inlined(module: ModuleOp, entry: str) -> tuple[ModuleOp, func.FuncOp]:
    """A copy of `module` whose `@entry` has every call inlined, so a chain of thousands of
    calls runs without a Python frame per call; a recursive call, which in a program without
    branches never returns, is an `InputError` naming the cycle."""
    functions = {f.sym_name.data: f for f in module.ops if isinstance(f, func.FuncOp)}
    check_no_recursion(functions[entry], functions)
    module = module.clone()
    functions = {f.sym_name.data: f for f in module.ops if isinstance(f, func.FuncOp)}
    inline_calls(functions[entry], functions)
    return module, functions[entry]


def check_no_recursion(entry: func.FuncOp, functions: Mapping[str, func.FuncOp]) -> None:
    """Refuses a function reachable from `entry` that calls itself, directly or through others
    (a depth-first search with an explicit stack: the path of calls is the stack)."""
    done: set[str] = set()
    path: list[tuple[str, list[func.CallOp]]] = [(entry.sym_name.data, calls_in(entry))]
    while path:
        name, calls = path[-1]
        if not calls:
            done.add(name)
            path.pop()
            continue
        call = calls.pop()
        callee = call.callee.string_value()
        on_path = [n for n, _ in path]
        if callee in on_path:
            cycle = " -> ".join(f"@{n}" for n in [*on_path[on_path.index(callee) :], callee])
            raise InputError(
                f"{location_of(call)}: xrelay.interpret cannot run the recursive call to @{callee} "
                f"({cycle}): a relay program has no branches, so it would never return"
            )
        if callee not in done and callee in functions:
            path.append((callee, calls_in(functions[callee])))


def calls_in(fn: func.FuncOp) -> list[func.CallOp]:
    return [op for op in fn.walk() if isinstance(op, func.CallOp)]


def check_not_lowered(module: ModuleOp) -> None:
    """The interpreter runs relay ops; a module after convert-relay-to-loops runs kernels."""
    launch = next((op for op in module.walk() if isinstance(op, relay.LaunchOp)), None)
    if launch is not None:
        raise InputError(
            f"xrelay.interpret runs relay programs up to fuse-ops, but this module is lowered "
            f"(relay.launch @{launch.callee.string_value()} at {location_of(launch)}); interpret the "
            "module before convert-relay-to-loops, or run the lowered one with xrelay.build"
        )
