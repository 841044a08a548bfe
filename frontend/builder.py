"""
`xrelay.Builder`: relay programs built from Python, every result type inferred.

    b = xrelay.Builder()
    x = b.input("x", (8, 1, 28, 28))
    w = b.const(np.ones((4, 1, 3, 3), np.float32))
    y = b.nn.relu(b.nn.conv2d(x, w, padding=(1, 1)))
    y = b.on_device(y, "opencl")
    module = b.finish(y)          # a builtin.module holding func.func @main
    print(module)                 # the textual IR opt-tool reads

Names follow relay's (`b.nn.conv2d`, `b.strided_slice`, `b.expand_dims`) and numpy's
(`b.add`, `b.reshape(x, (2, -1))`, `b.transpose(x, (1, 0))`). Operands of the binary ops may
be Python numbers or numpy arrays: they become constants.

Each op is created with a placeholder result type; the op's own `infer_shape` (the same code
its verifier runs) then gives the result type, and the op is verified. A shape or attribute
the op rejects raises `xrelay.VerifyError` naming the op, before anything is added to the
program.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, cast

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    BoolAttr,
    BytesAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    FloatAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    TensorType,
    f32,
    i64,
)
from xdsl.ir import Attribute, Block, Region, SSAValue
from xdsl.rewriter import Rewriter
from xdsl.utils.exceptions import VerifyException

from xrelay.diagnostics import VerifyError
from xrelay.dialects import relay
from xrelay.dialects.dtypes import DTYPE_NAMES, dtype_named, dtype_of, tensor_of
from xrelay.dialects.lowered_graph import INPUT_NAME_ATTR
from xrelay.dialects.se_scope import DEVICE_TYPES, SEScopeAttr
from xrelay.errors import UsageError

Shape = tuple[int, ...]
Operand = SSAValue | float | int | np.ndarray
ScopeLike = str | SEScopeAttr

# What xDSL keeps of a name hint: letters, digits, `_ $ . -`, no leading digit, and no `_N`
# suffix (it strips one, taking it for a uniquing suffix).
_INVALID_NAME_CHARS = re.compile(r"[^\w$.-]")
_UNIQUING_SUFFIX = re.compile(r"_(\d+)$")


def value_name(name: str) -> str:
    """`name` as a valid SSA name that xDSL keeps as it is: `onnx::Conv_0` -> `onnx__Conv.0`."""
    name = _UNIQUING_SUFFIX.sub(r".\1", _INVALID_NAME_CHARS.sub("_", name)) or "v"
    return name if not name[0].isdigit() else f"v{name}"


def parse_scope(scope: ScopeLike) -> SEScopeAttr:
    """A scope from `"opencl"`, `"opencl:1"`, `"cpu"` or a full `#relay.se_scope<...>`."""
    if isinstance(scope, SEScopeAttr):
        return scope
    text = scope.strip()
    if text.startswith("#relay.se_scope"):
        return _parse_scope_attr(text)
    device, _, index = text.partition(":")
    if device not in DEVICE_TYPES or (index and not index.isdigit()):
        raise UsageError(
            f"unknown scope {scope!r}; expected a device type with an optional virtual id "
            f"(one of {', '.join(DEVICE_TYPES)}, e.g. 'opencl' or 'opencl:1') or '#relay.se_scope<...>'"
        )
    return SEScopeAttr(device, int(index) if index else None)


def _parse_scope_attr(text: str) -> SEScopeAttr:
    from xdsl.parser import Parser
    from xdsl.utils.exceptions import ParseError
    from xdsl.utils.mlir_lexer import MLIRTokenKind

    from xrelay.ir import context

    try:
        parser = Parser(context(), text)
        attr = parser.parse_attribute()
        parser.expect(lambda: parser._parse_optional_token(MLIRTokenKind.EOF), "nothing after the attribute")  # pyright: ignore[reportPrivateUsage]
    except (ParseError, VerifyException) as e:
        raise UsageError(f"cannot parse the scope {text!r}: {e}") from None
    if not isinstance(attr, SEScopeAttr):
        raise UsageError(f"expected a #relay.se_scope<...> attribute, but found {text!r}")
    return attr


def _i64s(values: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, [int(v) for v in values])


def _i64(value: int) -> IntegerAttr:
    return IntegerAttr(int(value), i64)


def shape_of(value: SSAValue) -> Shape:
    """The static shape of a tensor value."""
    ty = value.type
    assert isinstance(ty, TensorType), f"expected a tensor, but found {ty}"
    return tuple(ty.get_shape())  # pyright: ignore[reportUnknownArgumentType, reportUnknownMemberType]


def _exact_int64(value: Any, what: str, hint: str) -> np.ndarray:
    """`value` as an int64 array, refusing fractions and integers beyond int64 (numpy would
    truncate the one and overflow on the other)."""
    array = np.asarray(value)
    ints = np.zeros(array.shape, np.int64)
    try:
        ints = array.astype(np.int64)
        exact = array.dtype != object and bool(np.all(ints == array))
    except (OverflowError, TypeError, ValueError):
        exact = False
    if not exact:
        shown = array.tolist()
        verb, noun = ("is", "an int64") if array.ndim == 0 else ("are", "int64 integers")
        raise UsageError(f"{what} {shown} {verb} not {noun}: {hint}")
    return ints


class Builder:
    """Builds one function, `@main` by default, op by op; `finish` returns the module."""

    def __init__(self) -> None:
        self.block = Block()
        self.arg_attrs: list[dict[str, Attribute]] = []
        self.input_names: list[str] = []
        self.nn = NN(self)
        # results [..., M, N] made by `unflatten` -> the [P * M, N] values they reshape
        self.flattened: dict[SSAValue, SSAValue] = {}

    # --- inputs, constants, placement ---------------------------------------------------------

    def input(self, name: str, shape: Sequence[int], dtype: str = "float32") -> SSAValue:
        """A parameter of the function, of element type `dtype` ("float32", "int64" or "bool").
        A name that is not a valid SSA name is kept as `relay.input_name` and the parameter
        gets a valid one."""
        if name in self.input_names:
            raise UsageError(f"the program already has an input named {name!r}; give each input its own name")
        element = dtype_named(dtype)
        if element is None:
            raise UsageError(f"input {name!r} has dtype {dtype!r}; inputs are one of {', '.join(DTYPE_NAMES)}")
        self.input_names.append(name)
        arg = self.block.insert_arg(tensor_of(element, _static_shape(name, shape)), len(self.block.args))
        arg.name_hint = self.unique_arg_name(value_name(name))
        self.arg_attrs.append({INPUT_NAME_ATTR: StringAttr(name)} if arg.name_hint != name else {})
        return arg

    def unique_arg_name(self, name: str) -> str:
        """`name`, or `name.1`, `name.2`, ... if a parameter already has it (xDSL would rename
        the second on printing, and the name would no longer be the parameter's)."""
        taken = {arg.name_hint for arg in self.block.args}
        candidate, suffix = name, 0
        while candidate in taken:
            suffix += 1
            candidate = f"{name}.{suffix}"
        return candidate

    def const(self, value: Any, name: str | None = None, dtype: str | None = None) -> SSAValue:
        """A `relay.constant` of `value` (anything numpy turns into an array) as `dtype`; by
        default an int64 or bool numpy array keeps its dtype, anything else is float32."""
        array = np.asarray(value)
        kept = isinstance(value, np.ndarray | np.generic) and array.dtype.name in ("int64", "bool")
        if dtype == "int64":  # numpy would truncate a fraction silently
            array = _exact_int64(value, "constant", "give integers within int64")
        array = array.astype(dtype or (array.dtype if kept else np.float32))
        result = self.append(relay.ConstantOp(relay.elements(array)))
        if name is not None:
            result.name_hint = value_name(name)
        return result

    def on_device(
        self, value: SSAValue, scope: ScopeLike, constrain_body: bool = True, constrain_result: bool = False
    ) -> SSAValue:
        """`relay.on_device`: `value` is computed on `scope` ("opencl", "opencl:1", "cpu" or a
        `#relay.se_scope<...>`); its consumers may be elsewhere."""
        return self.append(relay.OnDeviceOp(value, parse_scope(scope), constrain_body, constrain_result))

    def finish(self, *results: SSAValue, name: str = "main") -> ModuleOp:
        """The module with one function returning `results`; the builder starts afresh."""
        if not results:
            raise UsageError("Builder.finish needs at least one result")
        self.block.add_op(func.ReturnOp(*results))
        inputs = [arg.type for arg in self.block.args]
        fn = func.FuncOp(name, (inputs, [r.type for r in results]), Region(self.block))
        if any(self.arg_attrs):
            fn.arg_attrs = ArrayAttr([DictionaryAttr(a) for a in self.arg_attrs])
        self.__init__()
        return ModuleOp([fn])

    # --- the generic path ---------------------------------------------------------------------

    def append(self, op: relay.RelayOp | relay.OnDeviceOp) -> SSAValue:
        self.block.add_op(op)
        return op.results[0]

    def op(
        self,
        cls: type[relay.RelayOp],
        operands: Sequence[SSAValue],
        properties: Mapping[str, Attribute | None] | None = None,
        shape: Sequence[int] | None = None,
    ) -> SSAValue:
        """Appends a `cls` op and returns its result, typed by the op's `infer_shape`. `shape`
        is the result shape of ops that take it from their result type (reshape,
        broadcast_to)."""
        if self.flattened and issubclass(cls, relay.UnaryElemwiseOp | relay.BinaryBroadcastOp):
            sunk = self._sunk(cls, operands, properties)
            if sunk is not None:
                return sunk
        props = {k: v for k, v in (properties or {}).items() if v is not None}
        placeholder = relay.tensor(shape if shape is not None else ())
        op = cls.create(operands=list(operands), result_types=[placeholder], properties=props)
        try:
            inferred = op.infer_type()
            if inferred != placeholder:
                Rewriter.replace_value_with_new_type(op.results[0], inferred)
            op.verify()  # what infer_shape does not check: attribute types, e.g. an empty max
        except VerifyException as e:
            op.drop_all_references()
            operand_types = ", ".join(str(v.type) for v in operands)
            raise VerifyError(f"'{cls.name}' on ({operand_types}): {e}") from None
        return self.append(op)

    def unflatten(self, flat: SSAValue, shape: Sequence[int]) -> SSAValue:
        """`flat` ([P * M, N], e.g. a matmul of a batch's rows flattened into one matrix) reshaped
        to `shape` ([..., M, N]). Elementwise ops on the result, with operands of one value per
        column or a scalar, are then built on `flat` and reshaped after them (`_sunk`), so that
        fusion keeps them with the matmul, as the epilogue of one 2-D product."""
        result = self.reshape(flat, shape)
        self.flattened[result] = flat
        return result

    def _sunk(
        self, cls: type[relay.RelayOp], operands: Sequence[SSAValue], properties: Mapping[str, Attribute | None] | None
    ) -> SSAValue | None:
        """`cls` of `operands` as `unflatten(cls of the flat values)`, where every operand is an
        `unflatten`ed value of one shape, a scalar, one value per column ([N], [1, N]), or of
        the result's shape (reshaped flat too: a residual); None where one is not."""
        flats = [self.flattened[v] for v in operands if v in self.flattened]
        if not flats or len({shape_of(f) for f in flats}) != 1:
            return None
        flat_shape = shape_of(flats[0])
        shape = shape_of(next(v for v in operands if v in self.flattened))
        shapes = [shape_of(v) for v in operands]
        if np.broadcast_shapes(*shapes) != shape:
            return None
        if any(
            v not in self.flattened and s != shape and not _per_column(s, flat_shape[-1])
            for v, s in zip(operands, shapes)
        ):
            return None
        flattened, self.flattened = self.flattened, {}  # build the flat op as any other
        try:
            flat_operands = [
                flattened[v] if v in flattened else self.reshape(v, flat_shape) if s == shape else v
                for v, s in zip(operands, shapes)
            ]
            result = self.op(cls, flat_operands, properties)
        finally:
            self.flattened = flattened
        return self.unflatten(result, shape)

    def value(self, operand: Operand, like: Operand | None = None) -> SSAValue:
        """An SSA value as it is, or a constant of a number or array: of `like`'s element type
        when `like` is a value (`b.add(ids, 1)` adds an int64 1 to int64 ids)."""
        if isinstance(operand, SSAValue):
            return operand
        found = dtype_of(like.type) if isinstance(like, SSAValue) else None
        if found is not None and found.name == "int64":
            _exact_int64(
                operand, "constant", "the other operand is int64; cast one of them (b.cast) so both have one dtype"
            )
        return self.const(operand, dtype=None if found is None else found.name)

    # --- elementwise --------------------------------------------------------------------------

    def negative(self, x: SSAValue) -> SSAValue:
        return self.op(relay.NegativeOp, [x])

    def exp(self, x: SSAValue) -> SSAValue:
        return self.op(relay.ExpOp, [x])

    def log(self, x: SSAValue) -> SSAValue:
        return self.op(relay.LogOp, [x])

    def sqrt(self, x: SSAValue) -> SSAValue:
        return self.op(relay.SqrtOp, [x])

    def rsqrt(self, x: SSAValue) -> SSAValue:
        return self.op(relay.RsqrtOp, [x])

    def tanh(self, x: SSAValue) -> SSAValue:
        return self.op(relay.TanhOp, [x])

    def sigmoid(self, x: SSAValue) -> SSAValue:
        return self.op(relay.SigmoidOp, [x])

    def abs(self, x: SSAValue) -> SSAValue:
        return self.op(relay.AbsOp, [x])

    def erf(self, x: SSAValue) -> SSAValue:
        return self.op(relay.ErfOp, [x])

    def clip(self, x: SSAValue, a_min: float, a_max: float) -> SSAValue:
        bounds = {"a_min": FloatAttr(float(a_min), f32), "a_max": FloatAttr(float(a_max), f32)}
        return self.op(relay.ClipOp, [x], bounds)

    # --- binary, with numpy broadcasting --------------------------------------------------------

    def _binary(self, cls: type[relay.RelayOp], lhs: Operand, rhs: Operand) -> SSAValue:
        return self.op(cls, [self.value(lhs, rhs), self.value(rhs, lhs)])

    def add(self, lhs: Operand, rhs: Operand) -> SSAValue:
        return self._binary(relay.AddOp, lhs, rhs)

    def subtract(self, lhs: Operand, rhs: Operand) -> SSAValue:
        return self._binary(relay.SubtractOp, lhs, rhs)

    def multiply(self, lhs: Operand, rhs: Operand) -> SSAValue:
        return self._binary(relay.MultiplyOp, lhs, rhs)

    def divide(self, lhs: Operand, rhs: Operand) -> SSAValue:
        return self._binary(relay.DivideOp, lhs, rhs)

    def maximum(self, lhs: Operand, rhs: Operand) -> SSAValue:
        return self._binary(relay.MaximumOp, lhs, rhs)

    def minimum(self, lhs: Operand, rhs: Operand) -> SSAValue:
        return self._binary(relay.MinimumOp, lhs, rhs)

    def power(self, lhs: Operand, rhs: Operand) -> SSAValue:
        return self._binary(relay.PowerOp, lhs, rhs)

    # --- element types, comparisons, logic ------------------------------------------------------

    def cast(self, x: SSAValue, dtype: str) -> SSAValue:
        """`x.astype(dtype)`, dtype "float32", "int64" or "bool"."""
        return self.op(relay.CastOp, [x], {"dtype": StringAttr(dtype)})

    def equal(self, lhs: Operand, rhs: Operand) -> SSAValue:
        return self._binary(relay.EqualOp, lhs, rhs)

    def not_equal(self, lhs: Operand, rhs: Operand) -> SSAValue:
        return self._binary(relay.NotEqualOp, lhs, rhs)

    def less(self, lhs: Operand, rhs: Operand) -> SSAValue:
        return self._binary(relay.LessOp, lhs, rhs)

    def less_equal(self, lhs: Operand, rhs: Operand) -> SSAValue:
        return self._binary(relay.LessEqualOp, lhs, rhs)

    def greater(self, lhs: Operand, rhs: Operand) -> SSAValue:
        return self._binary(relay.GreaterOp, lhs, rhs)

    def greater_equal(self, lhs: Operand, rhs: Operand) -> SSAValue:
        return self._binary(relay.GreaterEqualOp, lhs, rhs)

    def logical_not(self, x: SSAValue) -> SSAValue:
        return self.op(relay.LogicalNotOp, [x])

    def logical_and(self, lhs: Operand, rhs: Operand) -> SSAValue:
        return self._binary(relay.LogicalAndOp, lhs, rhs)

    def logical_or(self, lhs: Operand, rhs: Operand) -> SSAValue:
        return self._binary(relay.LogicalOrOp, lhs, rhs)

    def where(self, condition: Operand, x: Operand, y: Operand) -> SSAValue:
        """`np.where(condition, x, y)`: a bool condition, x and y of one element type."""
        cond = condition if isinstance(condition, SSAValue) else self.const(condition, dtype="bool")
        return self.op(relay.WhereOp, [cond, self.value(x, y), self.value(y, x)])

    # --- shapes -------------------------------------------------------------------------------

    def reshape(self, x: SSAValue, shape: Sequence[int]) -> SSAValue:
        """`np.reshape`: one entry may be -1."""
        try:
            target = np.empty(shape_of(x), dtype=np.bool_).reshape(tuple(shape)).shape
        except ValueError as e:
            raise VerifyError(f"'relay.reshape' of {x.type} to {list(shape)}: {e}") from None
        return self.op(relay.ReshapeOp, [x], shape=target)

    def transpose(self, x: SSAValue, axes: Sequence[int] | None = None) -> SSAValue:
        return self.op(relay.TransposeOp, [x], {"axes": None if axes is None else _i64s(axes)})

    def squeeze(self, x: SSAValue, axis: Sequence[int] | None = None) -> SSAValue:
        return self.op(relay.SqueezeOp, [x], {"axis": None if axis is None else _i64s(axis)})

    def expand_dims(self, x: SSAValue, axis: int, num_newaxis: int = 1) -> SSAValue:
        count = None if num_newaxis == 1 else _i64(num_newaxis)
        return self.op(relay.ExpandDimsOp, [x], {"axis": _i64(axis), "num_newaxis": count})

    def broadcast_to(self, x: SSAValue, shape: Sequence[int]) -> SSAValue:
        return self.op(relay.BroadcastToOp, [x], shape=tuple(shape))

    def strided_slice(
        self, x: SSAValue, begin: Sequence[int], end: Sequence[int], strides: Sequence[int] | None = None
    ) -> SSAValue:
        """`x[b0:e0:s0, ...]` on the leading axes."""
        props = {"begin": _i64s(begin), "end": _i64s(end), "strides": None if strides is None else _i64s(strides)}
        return self.op(relay.StridedSliceOp, [x], props)

    def take(self, x: SSAValue, indices: Any, axis: int = 0) -> SSAValue:
        """`np.take(x, indices, axis)` with constant (integer) indices, or an int64 tensor of
        them computed at run time (clipped into range); negative ones count from the end."""
        if isinstance(indices, SSAValue):
            ids = cast(SSAValue, indices)
            return self.op(relay.TakeOp, [x, ids], {"axis": _i64(axis)})
        array = _exact_int64(indices, "take indices", "give integers within int64 (negative ones count from the end)")
        dense = DenseIntOrFPElementsAttr(TensorType(i64, array.shape), BytesAttr(array.astype("<i8").tobytes()))
        return self.op(relay.TakeOp, [x], {"indices": dense, "axis": _i64(axis)})

    def concatenate(self, xs: Sequence[SSAValue], axis: int = 0) -> SSAValue:
        return self.op(relay.ConcatenateOp, list(xs), {"axis": _i64(axis)})

    # --- reductions ---------------------------------------------------------------------------

    def _reduce(
        self, cls: type[relay.RelayOp], x: SSAValue, axis: int | Sequence[int] | None, keepdims: bool
    ) -> SSAValue:
        axes = None if axis is None else _i64s([axis] if isinstance(axis, int) else axis)
        return self.op(cls, [x], {"axis": axes, "keepdims": BoolAttr.from_bool(True) if keepdims else None})

    def sum(self, x: SSAValue, axis: int | Sequence[int] | None = None, keepdims: bool = False) -> SSAValue:
        return self._reduce(relay.SumOp, x, axis, keepdims)

    def mean(self, x: SSAValue, axis: int | Sequence[int] | None = None, keepdims: bool = False) -> SSAValue:
        return self._reduce(relay.MeanOp, x, axis, keepdims)

    def max(self, x: SSAValue, axis: int | Sequence[int] | None = None, keepdims: bool = False) -> SSAValue:
        return self._reduce(relay.MaxOp, x, axis, keepdims)

    def min(self, x: SSAValue, axis: int | Sequence[int] | None = None, keepdims: bool = False) -> SSAValue:
        return self._reduce(relay.MinOp, x, axis, keepdims)


class NN:
    """The `relay.nn.*` ops: `b.nn.conv2d`, `b.nn.relu`, ..."""

    def __init__(self, builder: Builder) -> None:
        self.b = builder

    def relu(self, x: SSAValue) -> SSAValue:
        return self.b.op(relay.ReluOp, [x])

    def bias_add(self, x: SSAValue, bias: Operand, axis: int = 1) -> SSAValue:
        return self.b.op(relay.BiasAddOp, [x, self.b.value(bias)], {"axis": None if axis == 1 else _i64(axis)})

    def dense(self, x: SSAValue, weight: Operand) -> SSAValue:
        """`x @ weight.T`, `weight` of shape [units, in]."""
        return self.b.op(relay.DenseOp, [x, self.b.value(weight)])

    def batch_matmul(self, x: SSAValue, y: Operand) -> SSAValue:
        """`x @ y.transpose(0, 2, 1)`."""
        return self.b.op(relay.BatchMatmulOp, [x, self.b.value(y)])

    def conv2d(
        self,
        x: SSAValue,
        weight: Operand,
        strides: Sequence[int] = (1, 1),
        padding: Sequence[int] = (0, 0),
        dilation: Sequence[int] = (1, 1),
        groups: int = 1,
    ) -> SSAValue:
        """NCHW data, OIHW weight; padding `[h, w]` or `[top, left, bottom, right]`."""
        props = {
            "strides": _i64s(strides),
            "padding": _i64s(padding),
            "dilation": _i64s(dilation),
            "groups": None if groups == 1 else _i64(groups),
        }
        return self.b.op(relay.Conv2DOp, [x, self.b.value(weight)], props)

    def _pool(
        self,
        cls: type[relay.RelayOp],
        x: SSAValue,
        pool_size: Sequence[int],
        strides: Sequence[int] | None,
        padding: Sequence[int],
        dilation: Sequence[int],
        ceil_mode: bool,
        extra: Mapping[str, Attribute | None] | None = None,
    ) -> SSAValue:
        props: dict[str, Attribute | None] = {
            "pool_size": _i64s(pool_size),
            "strides": _i64s(strides or pool_size),
            "padding": _i64s(padding),
            "dilation": None if tuple(dilation) == (1, 1) else _i64s(dilation),
            "ceil_mode": BoolAttr.from_bool(True) if ceil_mode else None,
            **(extra or {}),
        }
        return self.b.op(cls, [x], props)

    def max_pool2d(
        self,
        x: SSAValue,
        pool_size: Sequence[int],
        strides: Sequence[int] | None = None,
        padding: Sequence[int] = (0, 0),
        dilation: Sequence[int] = (1, 1),
        ceil_mode: bool = False,
    ) -> SSAValue:
        """NCHW max pooling; `strides` default to `pool_size`; `ceil_mode` rounds the output size up."""
        return self._pool(relay.MaxPool2DOp, x, pool_size, strides, padding, dilation, ceil_mode)

    def avg_pool2d(
        self,
        x: SSAValue,
        pool_size: Sequence[int],
        strides: Sequence[int] | None = None,
        padding: Sequence[int] = (0, 0),
        dilation: Sequence[int] = (1, 1),
        ceil_mode: bool = False,
        count_include_pad: bool = False,
    ) -> SSAValue:
        """NCHW average pooling: padding counts only with `count_include_pad`; `strides`
        default to `pool_size`."""
        extra = {"count_include_pad": BoolAttr.from_bool(True) if count_include_pad else None}
        return self._pool(relay.AvgPool2DOp, x, pool_size, strides, padding, dilation, ceil_mode, extra)

    def global_avg_pool2d(self, x: SSAValue) -> SSAValue:
        return self.b.op(relay.GlobalAvgPool2DOp, [x])

    def softmax(self, x: SSAValue, axis: int = -1) -> SSAValue:
        return self.b.op(relay.SoftmaxOp, [x], {"axis": None if axis == -1 else _i64(axis)})

    def matmul(self, x: SSAValue, y: Operand) -> SSAValue:
        """`np.matmul` of operands of rank >= 2, batch axes broadcast."""
        return self.b.op(relay.MatmulOp, [x, self.b.value(y)])

    def layer_norm(self, x: SSAValue, gamma: Operand, beta: Operand, axis: int = -1, epsilon: float = 1e-5) -> SSAValue:
        """`(x - mean) / sqrt(var + epsilon) * gamma + beta` over the axes from `axis` on."""
        props = {"axis": _i64(axis), "epsilon": FloatAttr(float(epsilon), f32)}
        return self.b.op(relay.LayerNormOp, [x, self.b.value(gamma), self.b.value(beta)], props)

    def leaky_relu(self, x: SSAValue, alpha: float = 0.25) -> SSAValue:
        return self.b.op(relay.LeakyReluOp, [x], {"alpha": FloatAttr(float(alpha), f32)})

    def pad(
        self, x: SSAValue, pad_width: Sequence[tuple[int, int]], pad_value: float = 0.0, pad_mode: str = "constant"
    ) -> SSAValue:
        """`np.pad(x, pad_width, pad_mode)`: one `(before, after)` per axis; negative ones crop."""
        props = {
            "pad_width": _i64s([w for pair in pad_width for w in pair]),
            "pad_value": None if pad_value == 0.0 else FloatAttr(float(pad_value), f32),
            "pad_mode": None if pad_mode == "constant" else StringAttr(pad_mode),
        }
        return self.b.op(relay.PadOp, [x], props)


def _per_column(shape: Shape, columns: int) -> bool:
    """A shape that broadcasts against [rows, columns] as one value per column, or a scalar."""
    return len(shape) <= 2 and all(d == 1 for d in shape[:-1]) and (not shape or shape[-1] in (1, columns))


def _static_shape(name: str, shape: Sequence[int]) -> Shape:
    dims: list[int] = []
    for d in cast(Sequence[object], shape):  # whatever the caller passed
        if not isinstance(d, int | np.integer) or int(cast(int, d)) < 0:
            raise UsageError(f"input {name!r} needs a static shape of non-negative integers, but has {list(shape)}")
        dims.append(int(cast(int, d)))
    return tuple(dims)
