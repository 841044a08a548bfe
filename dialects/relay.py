"""
The `relay` dialect: Relay's tensor ops on static-shaped builtin tensors.

Every op verifies its operands and attributes and checks its result type against the type it
infers (`infer_type`), so a wrong shape is a verification error at the op. Every op knows its
fusion pattern kind (`PATTERN`, TVM's OpPatternKind). Placement is carried by an optional
`se_scope` property (set on every op by plan-devices); `relay.on_device` and
`relay.device_copy` are the placement annotations; `relay.fused` is a group made by fuse-ops.

Syntax: every op has a custom form whose attributes (and properties) sit in the attribute
dictionary, e.g.

    %0 = relay.exp %x : tensor<4xf32>
    %1 = relay.add %0, %b : (tensor<4xf32>, tensor<1xf32>) -> tensor<4xf32>
    %2 = relay.nn.conv2d %d, %w {strides = array<i64: 2, 2>} : (...) -> tensor<1x4x3x3xf32>

and the generic form always parses too.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from enum import IntEnum
from typing import ClassVar, cast, overload

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    I64,
    BoolAttr,
    BytesAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    Float32Type,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    MemRefType,
    StringAttr,
    SymbolRefAttr,
    TensorType,
    f32,
    i1,
    i64,
)
from xdsl.ir import Attribute, Dialect, Operation, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    VarConstraint,
    base,
    irdl_op_definition,
    lazy_traits_def,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.traits import HasParent, IsolatedFromAbove, IsTerminator, Pure, SymbolTable, SymbolUserOpInterface
from xdsl.utils.exceptions import VerifyException

from xrelay.dialects.dtypes import (
    ALL,
    BOOL,
    BOOLS,
    DTYPE_NAMES,
    FLOATS,
    INT64,
    NUMBERS,
    dtype_named,
    dtype_of,
    dtype_of_numpy,
)
from xrelay.dialects.se_scope import SEScopeAttr


class OpPatternKind(IntEnum):
    """TVM's fusion pattern kinds, ordered from most to least fusible."""

    ELEMWISE = 0
    BROADCAST = 1
    INJECTIVE = 2
    COMM_REDUCE = 3
    OUT_EWISE_FUSABLE = 4
    TUPLE = 7
    OPAQUE = 8


Shape = tuple[int, ...]

I64Array = DenseArrayBase.constr(i64)


# --- helpers for verifiers ------------------------------------------------------------------


def _shape(value: SSAValue, what: str) -> Shape:
    ty = value.type
    if not isinstance(ty, TensorType):
        raise VerifyException(f"expected {what} to be a tensor, but found {ty}")
    ty = cast(TensorType[Attribute], ty)  # isinstance leaves the element type unknown
    if dtype_of(ty) is None:
        raise VerifyException(
            f"expected {what} to have element type f32, i64 or i1 ({', '.join(DTYPE_NAMES)}), but found {ty}"
        )
    shape = tuple(ty.get_shape())
    if any(d < 0 for d in shape):
        raise VerifyException(f"expected {what} to have a static shape, but found {ty}")
    return shape


@overload
def _ints(attr: DenseArrayBase[IntegerType]) -> tuple[int, ...]: ...
@overload
def _ints(attr: DenseArrayBase[IntegerType] | None) -> tuple[int, ...] | None: ...
def _ints(attr: DenseArrayBase[IntegerType] | None) -> tuple[int, ...] | None:
    return None if attr is None else tuple(attr.get_values())


def _int(attr: IntegerAttr | None, default: int) -> int:
    return default if attr is None else attr.value.data


def normalize_axis(axis: int, rank: int, what: str = "axis") -> int:
    if not -rank <= axis < rank:
        expected = f"expected {-rank} <= {what} < {rank}" if rank else "it has no axes"
        raise VerifyException(f"{what} {axis} is out of range for a tensor of rank {rank}; {expected}")
    return axis + rank if axis < 0 else axis


def broadcast_shapes(lhs: Shape, rhs: Shape) -> Shape:
    """numpy broadcasting of two shapes."""
    rank = max(len(lhs), len(rhs))
    padded_lhs = (1,) * (rank - len(lhs)) + lhs
    padded_rhs = (1,) * (rank - len(rhs)) + rhs
    out: list[int] = []
    for a, b in zip(padded_lhs, padded_rhs):
        if a != b and 1 not in (a, b):
            raise VerifyException(f"operand shapes {list(lhs)} and {list(rhs)} are not broadcast-compatible")
        out.append(b if a == 1 else a)
    return tuple(out)


def tensor(shape: Sequence[int]) -> TensorType:
    return TensorType(f32, list(shape))


# --- base classes ---------------------------------------------------------------------------


def element_of(value: SSAValue) -> Attribute:
    """The element type of a tensor value."""
    return cast(TensorType[Attribute], value.type).element_type


class RelayOp(IRDLOperation):
    """Base of the primitive relay ops: placement, pattern kind, element types, result type
    inference. An op takes tensors of the dtypes in `ACCEPTS` (float32 only unless it says
    otherwise), all of one element type unless `same_element_operands` says which must
    agree; its result has the element type `result_element` gives (the first operand's)."""

    PATTERN: ClassVar[OpPatternKind] = OpPatternKind.OPAQUE
    ACCEPTS: ClassVar[frozenset[str]] = FLOATS
    se_scope = opt_prop_def(SEScopeAttr)
    irdl_options = (ParsePropInAttrDict(),)
    traits = traits_def(Pure())

    def infer_shape(self) -> Shape:
        raise NotImplementedError

    def operand_accepts(self, index: int) -> frozenset[str]:
        """The dtypes operand `index` may have."""
        return self.ACCEPTS

    def same_element_operands(self) -> Sequence[SSAValue]:
        """The operands that must share one element type."""
        return self.operands

    def result_element(self) -> Attribute:
        return element_of(self.operands[0]) if self.operands else f32

    def check_element_types(self) -> None:
        for i, operand in enumerate(self.operands):
            found = dtype_of(operand.type)
            accepted = self.operand_accepts(i)
            if found is None or found.name not in accepted:
                names = " or ".join(n for n in DTYPE_NAMES if n in accepted)
                raise VerifyException(f"'{self.name}' takes {names} tensors, but operand {i} is {operand.type}")
        same = self.same_element_operands()
        if len({element_of(v) for v in same}) > 1:
            types = ", ".join(str(v.type) for v in same)
            raise VerifyException(f"'{self.name}' takes operands of one element type, but found {types}")

    def infer_type(self) -> TensorType[Attribute]:
        """The result type: the inferred shape, of `result_element` (element types checked)."""
        self.check_element_types()
        return TensorType(self.result_element(), list(self.infer_shape()))

    def verify_(self) -> None:
        expected = self.infer_type()
        found = self.results[0].type
        if found != expected:
            raise VerifyException(f"expected result type {expected} for '{self.name}', but found {found}")


class UnaryElemwiseOp(RelayOp):
    T: ClassVar = VarConstraint("T", base(TensorType))
    data = operand_def(T)
    res = result_def(T)
    PATTERN: ClassVar[OpPatternKind] = OpPatternKind.ELEMWISE
    assembly_format = "$data attr-dict `:` type($res)"

    def __init__(self, data: SSAValue, se_scope: SEScopeAttr | None = None):
        super().__init__(operands=[data], result_types=[data.type], properties={"se_scope": se_scope})

    def infer_shape(self) -> Shape:
        return _shape(self.data, "the operand")


class BinaryBroadcastOp(RelayOp):
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    res = result_def(TensorType)
    PATTERN: ClassVar[OpPatternKind] = OpPatternKind.BROADCAST
    assembly_format = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)"

    def __init__(self, lhs: SSAValue, rhs: SSAValue, se_scope: SEScopeAttr | None = None):
        shape = broadcast_shapes(_shape(lhs, "lhs"), _shape(rhs, "rhs"))
        result = TensorType(element_of(lhs), list(shape))
        super().__init__(operands=[lhs, rhs], result_types=[result], properties={"se_scope": se_scope})

    def infer_shape(self) -> Shape:
        return broadcast_shapes(_shape(self.lhs, "lhs"), _shape(self.rhs, "rhs"))


class OneOperandOp(RelayOp):
    """An op with one tensor operand and attributes; its syntax shows both types."""

    data = operand_def(TensorType)
    res = result_def(TensorType)
    assembly_format = "$data attr-dict `:` functional-type(operands, results)"


# --- elementwise ----------------------------------------------------------------------------


@irdl_op_definition
class NegativeOp(UnaryElemwiseOp):
    """`-x`"""

    name = "relay.negative"
    ACCEPTS: ClassVar[frozenset[str]] = NUMBERS


@irdl_op_definition
class ExpOp(UnaryElemwiseOp):
    """`exp(x)`"""

    name = "relay.exp"


@irdl_op_definition
class LogOp(UnaryElemwiseOp):
    """`log(x)`"""

    name = "relay.log"


@irdl_op_definition
class SqrtOp(UnaryElemwiseOp):
    """`sqrt(x)`"""

    name = "relay.sqrt"


@irdl_op_definition
class RsqrtOp(UnaryElemwiseOp):
    """`1 / sqrt(x)`"""

    name = "relay.rsqrt"


@irdl_op_definition
class TanhOp(UnaryElemwiseOp):
    """`tanh(x)`"""

    name = "relay.tanh"


@irdl_op_definition
class SigmoidOp(UnaryElemwiseOp):
    """`1 / (1 + exp(-x))`"""

    name = "relay.sigmoid"


@irdl_op_definition
class AbsOp(UnaryElemwiseOp):
    """`|x|`"""

    name = "relay.abs"
    ACCEPTS: ClassVar[frozenset[str]] = NUMBERS


@irdl_op_definition
class ErfOp(UnaryElemwiseOp):
    """The Gauss error function."""

    name = "relay.erf"


@irdl_op_definition
class ReluOp(UnaryElemwiseOp):
    """`max(x, 0)`"""

    name = "relay.nn.relu"
    ACCEPTS: ClassVar[frozenset[str]] = NUMBERS


@irdl_op_definition
class ClipOp(UnaryElemwiseOp):
    """`np.clip(x, a_min, a_max)`: `relay.clip %x {a_min = 0.0 : f32, a_max = 6.0 : f32} : T`"""

    name = "relay.clip"
    a_min = prop_def(FloatAttr)
    a_max = prop_def(FloatAttr)

    def __init__(self, data: SSAValue, a_min: float, a_max: float, se_scope: SEScopeAttr | None = None):
        IRDLOperation.__init__(
            self,
            operands=[data],
            result_types=[data.type],
            properties={
                "a_min": FloatAttr(a_min, f32),
                "a_max": FloatAttr(a_max, f32),
                "se_scope": se_scope,
            },
        )

    def infer_shape(self) -> Shape:
        if self.a_min.value.data > self.a_max.value.data:
            raise VerifyException(
                f"expected a_min <= a_max, but found a_min = {self.a_min.value.data} "
                f"and a_max = {self.a_max.value.data}"
            )
        return super().infer_shape()


@irdl_op_definition
class LeakyReluOp(UnaryElemwiseOp):
    """`x if x > 0 else alpha * x`: `relay.nn.leaky_relu %x {alpha = 0.1 : f32} : T` (alpha
    defaults to 0.25, as in relay)."""

    name = "relay.nn.leaky_relu"
    alpha = opt_prop_def(FloatAttr)

    def __init__(self, data: SSAValue, alpha: float = 0.25, se_scope: SEScopeAttr | None = None):
        IRDLOperation.__init__(
            self,
            operands=[data],
            result_types=[data.type],
            properties={"alpha": FloatAttr(alpha, f32), "se_scope": se_scope},
        )

    @property
    def alpha_value(self) -> float:
        return 0.25 if self.alpha is None else self.alpha.value.data


# --- broadcast ------------------------------------------------------------------------------


@irdl_op_definition
class AddOp(BinaryBroadcastOp):
    """`lhs + rhs` with numpy broadcasting."""

    name = "relay.add"
    ACCEPTS: ClassVar[frozenset[str]] = NUMBERS


@irdl_op_definition
class SubtractOp(BinaryBroadcastOp):
    """`lhs - rhs` with numpy broadcasting."""

    name = "relay.subtract"
    ACCEPTS: ClassVar[frozenset[str]] = NUMBERS


@irdl_op_definition
class MultiplyOp(BinaryBroadcastOp):
    """`lhs * rhs` with numpy broadcasting."""

    name = "relay.multiply"
    ACCEPTS: ClassVar[frozenset[str]] = NUMBERS


@irdl_op_definition
class DivideOp(BinaryBroadcastOp):
    """`lhs / rhs` with numpy broadcasting."""

    name = "relay.divide"
    ACCEPTS: ClassVar[frozenset[str]] = NUMBERS


@irdl_op_definition
class MaximumOp(BinaryBroadcastOp):
    """`np.maximum(lhs, rhs)`"""

    name = "relay.maximum"
    ACCEPTS: ClassVar[frozenset[str]] = NUMBERS


@irdl_op_definition
class MinimumOp(BinaryBroadcastOp):
    """`np.minimum(lhs, rhs)`"""

    name = "relay.minimum"
    ACCEPTS: ClassVar[frozenset[str]] = NUMBERS


@irdl_op_definition
class PowerOp(BinaryBroadcastOp):
    """`np.power(lhs, rhs)`"""

    name = "relay.power"


@irdl_op_definition
class BiasAddOp(RelayOp):
    """Adds a 1-D bias along `axis` (default 1)."""

    name = "relay.nn.bias_add"
    data = operand_def(TensorType)
    bias = operand_def(TensorType)
    res = result_def(TensorType)
    axis = opt_prop_def(IntegerAttr[I64])
    PATTERN: ClassVar[OpPatternKind] = OpPatternKind.BROADCAST
    assembly_format = "$data `,` $bias attr-dict `:` functional-type(operands, results)"

    @property
    def axis_value(self) -> int:
        return normalize_axis(_int(self.axis, 1), len(_shape(self.data, "data")))

    def infer_shape(self) -> Shape:
        shape = _shape(self.data, "data")
        bias = _shape(self.bias, "bias")
        axis = self.axis_value
        if bias != (shape[axis],):
            raise VerifyException(
                f"expected a bias of shape [{shape[axis]}] (axis {axis} of data), but found {list(bias)}"
            )
        return shape


@irdl_op_definition
class ExpandDimsOp(OneOperandOp):
    """Inserts `num_newaxis` size-1 axes at `axis`."""

    name = "relay.expand_dims"
    ACCEPTS: ClassVar[frozenset[str]] = ALL
    axis = prop_def(IntegerAttr[I64])
    num_newaxis = opt_prop_def(IntegerAttr[I64])
    PATTERN: ClassVar[OpPatternKind] = OpPatternKind.BROADCAST

    def infer_shape(self) -> Shape:
        shape = _shape(self.data, "data")
        count = _int(self.num_newaxis, 1)
        if count < 0:
            raise VerifyException(f"expected num_newaxis >= 0, but found {count}")
        axis, rank = self.axis.value.data, len(shape)
        if not -rank - 1 <= axis <= rank:
            raise VerifyException(
                f"axis {axis} is out of range for expanding a tensor of rank {rank}; "
                f"expected {-rank - 1} <= axis <= {rank}"
            )
        axis = axis + rank + 1 if axis < 0 else axis
        return shape[:axis] + (1,) * count + shape[axis:]


@irdl_op_definition
class BroadcastToOp(OneOperandOp):
    """Broadcasts to the result type's shape."""

    name = "relay.broadcast_to"
    ACCEPTS: ClassVar[frozenset[str]] = ALL
    PATTERN: ClassVar[OpPatternKind] = OpPatternKind.BROADCAST

    def infer_shape(self) -> Shape:
        shape = _shape(self.data, "data")
        target = _shape(self.res, "the result")
        padded = (1,) * (len(target) - len(shape)) + shape
        if len(shape) > len(target) or any(a not in (1, b) for a, b in zip(padded, target)):
            raise VerifyException(f"cannot broadcast shape {list(shape)} to {list(target)}")
        return target


# --- injective ------------------------------------------------------------------------------


@irdl_op_definition
class ReshapeOp(OneOperandOp):
    """Reshapes to the result type's shape (same element count)."""

    name = "relay.reshape"
    ACCEPTS: ClassVar[frozenset[str]] = ALL
    PATTERN: ClassVar[OpPatternKind] = OpPatternKind.INJECTIVE

    def infer_shape(self) -> Shape:
        shape = _shape(self.data, "data")
        target = _shape(self.res, "the result")
        if math.prod(shape) != math.prod(target):
            raise VerifyException(
                f"cannot reshape {list(shape)} ({math.prod(shape)} elements) to "
                f"{list(target)} ({math.prod(target)} elements)"
            )
        return target


@irdl_op_definition
class TransposeOp(OneOperandOp):
    """`np.transpose(x, axes)`; absent `axes` reverses the axes."""

    name = "relay.transpose"
    ACCEPTS: ClassVar[frozenset[str]] = ALL
    axes = opt_prop_def(I64Array)
    PATTERN: ClassVar[OpPatternKind] = OpPatternKind.INJECTIVE

    @property
    def permutation(self) -> tuple[int, ...]:
        rank = len(_shape(self.data, "data"))
        axes = _ints(self.axes)
        if axes is None:
            return tuple(reversed(range(rank)))
        if len(axes) != rank:
            raise VerifyException(f"expected {rank} axes for a tensor of rank {rank}, but found {list(axes)}")
        perm = tuple(normalize_axis(a, rank) for a in axes)
        if sorted(perm) != list(range(rank)):
            raise VerifyException(f"axes {list(axes)} are not a permutation of 0..{rank - 1}")
        return perm

    def infer_shape(self) -> Shape:
        shape = _shape(self.data, "data")
        return tuple(shape[a] for a in self.permutation)


@irdl_op_definition
class SqueezeOp(OneOperandOp):
    """Removes size-1 axes: those in `axis`, or all of them when `axis` is absent."""

    name = "relay.squeeze"
    ACCEPTS: ClassVar[frozenset[str]] = ALL
    axis = opt_prop_def(I64Array)
    PATTERN: ClassVar[OpPatternKind] = OpPatternKind.INJECTIVE

    @property
    def squeezed_axes(self) -> tuple[int, ...]:
        shape = _shape(self.data, "data")
        axes = _ints(self.axis)
        if axes is None:
            return tuple(i for i, d in enumerate(shape) if d == 1)
        normalized = tuple(sorted({normalize_axis(a, len(shape)) for a in axes}))
        for a in normalized:
            if shape[a] != 1:
                raise VerifyException(f"cannot squeeze axis {a} of size {shape[a]}; it must be 1")
        return normalized

    def infer_shape(self) -> Shape:
        removed = self.squeezed_axes
        return tuple(d for i, d in enumerate(_shape(self.data, "data")) if i not in removed)


@irdl_op_definition
class StridedSliceOp(OneOperandOp):
    """Basic slicing `x[b0:e0:s0, ...]` on the leading axes (`strides` default to 1)."""

    name = "relay.strided_slice"
    ACCEPTS: ClassVar[frozenset[str]] = ALL
    begin = prop_def(I64Array)
    end = prop_def(I64Array)
    strides = opt_prop_def(I64Array)
    PATTERN: ClassVar[OpPatternKind] = OpPatternKind.INJECTIVE

    def slices(self) -> tuple[slice, ...]:
        """One Python slice per axis of the data (full slices for trailing axes)."""
        shape = _shape(self.data, "data")
        begin, end = _ints(self.begin), _ints(self.end)
        strides = _ints(self.strides) or (1,) * len(begin)
        if not len(begin) == len(end) == len(strides):
            raise VerifyException(
                f"expected begin, end and strides of one length, but found {len(begin)}, {len(end)} and {len(strides)}"
            )
        if len(begin) > len(shape):
            raise VerifyException(
                f"expected at most {len(shape)} slice entries for a tensor of rank {len(shape)}, but found {len(begin)}"
            )
        if 0 in strides:
            raise VerifyException(f"expected nonzero strides, but found {list(strides)}")
        full = (slice(None),) * (len(shape) - len(begin))
        return tuple(slice(b, e, s) for b, e, s in zip(begin, end, strides)) + full

    def infer_shape(self) -> Shape:
        shape = _shape(self.data, "data")
        return tuple(len(range(*s.indices(d))) for s, d in zip(self.slices(), shape))


@irdl_op_definition
class ConcatenateOp(RelayOp):
    """`np.concatenate(inputs, axis)`"""

    name = "relay.concatenate"
    ACCEPTS: ClassVar[frozenset[str]] = ALL
    inputs = var_operand_def(TensorType)
    res = result_def(TensorType)
    axis = prop_def(IntegerAttr[I64])
    PATTERN: ClassVar[OpPatternKind] = OpPatternKind.INJECTIVE
    assembly_format = "$inputs attr-dict `:` functional-type(operands, results)"

    @property
    def axis_value(self) -> int:
        return normalize_axis(self.axis.value.data, len(_shape(self.inputs[0], "input 0")))

    def infer_shape(self) -> Shape:
        if not self.inputs:
            raise VerifyException("relay.concatenate needs at least one input")
        shapes = [_shape(v, f"input {i}") for i, v in enumerate(self.inputs)]
        axis = self.axis_value
        first = shapes[0]
        for i, s in enumerate(shapes):
            if len(s) != len(first) or s[:axis] + s[axis + 1 :] != first[:axis] + first[axis + 1 :]:
                raise VerifyException(
                    f"input {i} of shape {list(s)} does not match input 0 of shape {list(first)} outside axis {axis}"
                )
        return first[:axis] + (sum(s[axis] for s in shapes),) + first[axis + 1 :]


PAD_MODES = ("constant", "edge", "reflect", "wrap")


@irdl_op_definition
class PadOp(OneOperandOp):
    """`np.pad(x, pad_width, mode)`: `pad_width = array<i64: before0, after0, before1, ...>`
    (two per axis; negative values crop), `pad_value` (constant mode, default 0.0) and
    `pad_mode`: "constant" (default), "edge" (repeats the border), "reflect" (mirrors
    without repeating the border; each pad at most the axis length - 1) or "wrap" (repeats
    the axis periodically, as numpy and ONNX)."""

    name = "relay.nn.pad"
    pad_width = prop_def(I64Array)
    pad_value = opt_prop_def(FloatAttr)
    pad_mode = opt_prop_def(StringAttr)
    PATTERN: ClassVar[OpPatternKind] = OpPatternKind.INJECTIVE

    @property
    def mode(self) -> str:
        mode = "constant" if self.pad_mode is None else self.pad_mode.data
        if mode not in PAD_MODES:
            raise VerifyException(
                f"expected pad_mode to be one of {', '.join(map(repr, PAD_MODES))}, but found {mode!r}"
            )
        return mode

    @property
    def value(self) -> float:
        return 0.0 if self.pad_value is None else self.pad_value.value.data

    @property
    def pads(self) -> tuple[tuple[int, int], ...]:
        """`(before, after)` per axis."""
        shape = _shape(self.data, "data")
        width = _ints(self.pad_width)
        if len(width) != 2 * len(shape):
            raise VerifyException(
                f"expected pad_width to hold 2 values (before, after) per axis, {2 * len(shape)} for a tensor "
                f"of rank {len(shape)}, but found {len(width)}"
            )
        return tuple(zip(width[::2], width[1::2]))

    def infer_shape(self) -> Shape:
        shape, mode = _shape(self.data, "data"), self.mode
        out: list[int] = []
        for axis, (extent, (before, after)) in enumerate(zip(shape, self.pads)):
            padded = extent + before + after
            if padded < 0:
                raise VerifyException(f"pads ({before}, {after}) crop more than the {extent} elements of axis {axis}")
            if mode != "constant" and max(before, after) > 0 and extent == 0:
                raise VerifyException(f"cannot pad axis {axis} of length 0 in {mode} mode; it has no border")
            if mode == "reflect" and max(before, after) >= extent > 0:
                raise VerifyException(
                    f"reflect pads ({before}, {after}) of axis {axis} must be smaller than its length {extent}"
                )
            out.append(padded)
        return tuple(out)


@irdl_op_definition
class TakeOp(RelayOp):
    """`np.take(x, indices, axis)`, the indices either constant:
    `relay.take %x {indices = dense<[2, -1]> : tensor<2xi64>, axis = 0 : i64}` (out-of-range
    ones are verification errors), or an int64 tensor computed at run time (token ids into an
    embedding): `relay.take %x, %ids {axis = 0 : i64} : (tensor<50x8xf32>, tensor<1x4xi64>)
    -> tensor<1x4x8xf32>`, whose out-of-range values are clipped into range (TVM's default
    `mode = "clip"`). Negative indices count from the end. The result's shape is
    `x.shape[:axis] + indices.shape + x.shape[axis + 1:]`; `x` may hold any dtype."""

    name = "relay.take"
    data = operand_def(TensorType)
    runtime_indices = opt_operand_def(TensorType)
    res = result_def(TensorType)
    indices = opt_prop_def(DenseIntOrFPElementsAttr)
    axis = prop_def(IntegerAttr[I64])
    PATTERN: ClassVar[OpPatternKind] = OpPatternKind.INJECTIVE
    ACCEPTS: ClassVar[frozenset[str]] = ALL
    assembly_format = "$data (`,` $runtime_indices^)? attr-dict `:` functional-type(operands, results)"

    def operand_accepts(self, index: int) -> frozenset[str]:
        return ALL if index == 0 else frozenset({INT64.name})

    def same_element_operands(self) -> Sequence[SSAValue]:
        return ()

    @property
    def axis_value(self) -> int:
        return normalize_axis(self.axis.value.data, len(_shape(self.data, "data")))

    @property
    def indices_shape(self) -> Shape:
        if self.runtime_indices is not None:
            return _shape(self.runtime_indices, "indices")
        if self.indices is None:
            raise VerifyException("expected indices: an `indices` property or a tensor operand")
        return tuple(self.indices.get_shape())

    @property
    def normalized_indices(self) -> tuple[int, ...]:
        """The constant indices, flattened, each in `[0, x.shape[axis])`."""
        if self.indices is None:
            raise VerifyException("the indices of this take are a tensor operand, not constants")
        element = self.indices.get_element_type()
        if element != i64:
            raise VerifyException(f"expected indices of element type i64, but found {self.indices.type}")
        extent = _shape(self.data, "data")[self.axis_value]
        values = cast(tuple[int, ...], self.indices.get_values())
        bad = next((i for i in values if not -extent <= i < extent), None)
        if bad is not None:
            raise VerifyException(
                f"index {bad} is out of range for axis {self.axis_value} of length {extent}; "
                f"expected {-extent} <= index < {extent}"
            )
        return tuple(i + extent if i < 0 else i for i in values)

    def infer_shape(self) -> Shape:
        shape, axis = _shape(self.data, "data"), self.axis_value
        if self.runtime_indices is not None and self.indices is not None:
            raise VerifyException("expected either an `indices` property or an indices operand, not both")
        if self.runtime_indices is None:
            _ = self.normalized_indices  # checks the element type and the range
        elif shape[axis] == 0 and math.prod(self.indices_shape) > 0:
            raise VerifyException(f"cannot take from axis {axis} of length 0")
        return shape[:axis] + self.indices_shape + shape[axis + 1 :]


# --- element types ----------------------------------------------------------------------------


@irdl_op_definition
class CastOp(OneOperandOp):
    """`x.astype(dtype)`: `relay.cast %x {dtype = "float32"} : (tensor<4xi64>) -> tensor<4xf32>`.
    float to int truncates toward zero; to bool is `x != 0`; bool to a number is 0 or 1."""

    name = "relay.cast"
    dtype = prop_def(StringAttr)
    PATTERN: ClassVar[OpPatternKind] = OpPatternKind.ELEMWISE
    ACCEPTS: ClassVar[frozenset[str]] = ALL

    def result_element(self) -> Attribute:
        target = dtype_named(self.dtype.data)
        if target is None:
            raise VerifyException(
                f"expected dtype to be one of {', '.join(DTYPE_NAMES)}, but found {self.dtype.data!r}"
            )
        return target.element

    def infer_shape(self) -> Shape:
        return _shape(self.data, "data")


class CompareOp(BinaryBroadcastOp):
    """A comparison with numpy broadcasting: a bool tensor."""

    PATTERN: ClassVar[OpPatternKind] = OpPatternKind.BROADCAST
    ACCEPTS: ClassVar[frozenset[str]] = ALL

    def __init__(self, lhs: SSAValue, rhs: SSAValue, se_scope: SEScopeAttr | None = None):
        shape = broadcast_shapes(_shape(lhs, "lhs"), _shape(rhs, "rhs"))
        IRDLOperation.__init__(
            self, operands=[lhs, rhs], result_types=[TensorType(i1, list(shape))], properties={"se_scope": se_scope}
        )

    def result_element(self) -> Attribute:
        return i1


@irdl_op_definition
class EqualOp(CompareOp):
    """`lhs == rhs`"""

    name = "relay.equal"


@irdl_op_definition
class NotEqualOp(CompareOp):
    """`lhs != rhs`"""

    name = "relay.not_equal"


@irdl_op_definition
class LessOp(CompareOp):
    """`lhs < rhs`"""

    name = "relay.less"


@irdl_op_definition
class LessEqualOp(CompareOp):
    """`lhs <= rhs`"""

    name = "relay.less_equal"


@irdl_op_definition
class GreaterOp(CompareOp):
    """`lhs > rhs`"""

    name = "relay.greater"


@irdl_op_definition
class GreaterEqualOp(CompareOp):
    """`lhs >= rhs`"""

    name = "relay.greater_equal"


@irdl_op_definition
class LogicalNotOp(UnaryElemwiseOp):
    """`~x` of a bool tensor"""

    name = "relay.logical_not"
    ACCEPTS: ClassVar[frozenset[str]] = BOOLS


@irdl_op_definition
class LogicalAndOp(BinaryBroadcastOp):
    """`lhs & rhs` of bool tensors, with numpy broadcasting"""

    name = "relay.logical_and"
    ACCEPTS: ClassVar[frozenset[str]] = BOOLS


@irdl_op_definition
class LogicalOrOp(BinaryBroadcastOp):
    """`lhs | rhs` of bool tensors, with numpy broadcasting"""

    name = "relay.logical_or"
    ACCEPTS: ClassVar[frozenset[str]] = BOOLS


@irdl_op_definition
class WhereOp(RelayOp):
    """`np.where(condition, x, y)` with numpy broadcasting of the three: a bool condition, `x`
    and `y` of one (any) element type, the result's."""

    name = "relay.where"
    condition = operand_def(TensorType)
    x = operand_def(TensorType)
    y = operand_def(TensorType)
    res = result_def(TensorType)
    PATTERN: ClassVar[OpPatternKind] = OpPatternKind.BROADCAST
    assembly_format = "$condition `,` $x `,` $y attr-dict `:` functional-type(operands, results)"

    def operand_accepts(self, index: int) -> frozenset[str]:
        return BOOLS if index == 0 else ALL

    def same_element_operands(self) -> Sequence[SSAValue]:
        return (self.x, self.y)

    def result_element(self) -> Attribute:
        return element_of(self.x)

    def infer_shape(self) -> Shape:
        shape = broadcast_shapes(_shape(self.condition, "condition"), _shape(self.x, "x"))
        return broadcast_shapes(shape, _shape(self.y, "y"))


# --- reductions -----------------------------------------------------------------------------


class ReduceOp(OneOperandOp):
    """A reduction over `axis` (all axes when absent), keeping reduced axes with `keepdims`."""

    axis = opt_prop_def(I64Array)
    keepdims = opt_prop_def(BoolAttr)
    PATTERN: ClassVar[OpPatternKind] = OpPatternKind.COMM_REDUCE
    # Sum and mean are defined over no elements (0, and 0/0 = NaN as numpy); max and min are not.
    EMPTY_IS_DEFINED: ClassVar[bool] = True

    def verify_(self) -> None:
        shape = _shape(self.data, "data")
        empty = [a for a in self.reduced_axes if shape[a] == 0]
        if empty and not self.EMPTY_IS_DEFINED:
            raise VerifyException(
                f"'{self.name}' reduces axis {empty[0]} of length 0, which has no "
                f"{self.name.removeprefix('relay.')}imum; reduce a non-empty axis"
            )
        super().verify_()

    @property
    def reduced_axes(self) -> tuple[int, ...]:
        rank = len(_shape(self.data, "data"))
        axes = _ints(self.axis)
        if axes is None:
            return tuple(range(rank))
        normalized = [normalize_axis(a, rank) for a in axes]
        if len(set(normalized)) != len(normalized):
            raise VerifyException(f"axis {list(axes)} names an axis twice")
        return tuple(sorted(normalized))

    @property
    def keeps_dims(self) -> bool:
        return self.keepdims is not None and bool(self.keepdims.value.data)

    def infer_shape(self) -> Shape:
        shape = _shape(self.data, "data")
        axes = self.reduced_axes
        if self.keeps_dims:
            return tuple(1 if i in axes else d for i, d in enumerate(shape))
        return tuple(d for i, d in enumerate(shape) if i not in axes)


@irdl_op_definition
class SumOp(ReduceOp):
    """`np.sum`"""

    name = "relay.sum"
    ACCEPTS: ClassVar[frozenset[str]] = NUMBERS


@irdl_op_definition
class MeanOp(ReduceOp):
    """`np.mean`"""

    name = "relay.mean"


@irdl_op_definition
class MaxOp(ReduceOp):
    """`np.max`"""

    name = "relay.max"
    ACCEPTS: ClassVar[frozenset[str]] = NUMBERS
    EMPTY_IS_DEFINED: ClassVar[bool] = False


@irdl_op_definition
class MinOp(ReduceOp):
    """`np.min`"""

    name = "relay.min"
    ACCEPTS: ClassVar[frozenset[str]] = NUMBERS
    EMPTY_IS_DEFINED: ClassVar[bool] = False


# --- anchors (OutEWiseFusable) ----------------------------------------------------------------


@irdl_op_definition
class DenseOp(RelayOp):
    """`x @ w.T` with `w` of shape [units, in]."""

    name = "relay.nn.dense"
    data = operand_def(TensorType)
    weight = operand_def(TensorType)
    res = result_def(TensorType)
    PATTERN: ClassVar[OpPatternKind] = OpPatternKind.OUT_EWISE_FUSABLE
    assembly_format = "$data `,` $weight attr-dict `:` functional-type(operands, results)"

    def infer_shape(self) -> Shape:
        x, w = _shape(self.data, "data"), _shape(self.weight, "weight")
        if len(w) != 2 or len(x) < 1 or x[-1] != w[1]:
            raise VerifyException(
                f"expected weight of shape [units, {x[-1] if x else '?'}] for data of shape "
                f"{list(x)}, but found {list(w)}"
            )
        return x[:-1] + (w[0],)


@irdl_op_definition
class BatchMatmulOp(RelayOp):
    """`x @ y.transpose(0, 2, 1)` for x [b, m, k] and y [b, n, k]."""

    name = "relay.nn.batch_matmul"
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    res = result_def(TensorType)
    PATTERN: ClassVar[OpPatternKind] = OpPatternKind.OUT_EWISE_FUSABLE
    assembly_format = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)"

    def infer_shape(self) -> Shape:
        x, y = _shape(self.lhs, "lhs"), _shape(self.rhs, "rhs")
        if len(x) != 3 or len(y) != 3:
            raise VerifyException(f"expected rank-3 operands, but found {list(x)} and {list(y)}")
        if x[2] != y[2] or (x[0] != y[0] and 1 not in (x[0], y[0])):
            raise VerifyException(f"expected lhs [b, m, k] and rhs [b, n, k], but found {list(x)} and {list(y)}")
        batch = y[0] if x[0] == 1 else x[0]  # numpy broadcasting: 1 with 0 is 0
        return (batch, x[1], y[1])


@irdl_op_definition
class MatmulOp(RelayOp):
    """`np.matmul(a, b)` for a [..., m, k] and b [..., k, n] of rank >= 2, the leading (batch)
    axes broadcast as numpy does; unlike batch_matmul, the rhs is not transposed."""

    name = "relay.nn.matmul"
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    res = result_def(TensorType)
    PATTERN: ClassVar[OpPatternKind] = OpPatternKind.OUT_EWISE_FUSABLE
    assembly_format = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)"

    def infer_shape(self) -> Shape:
        x, y = _shape(self.lhs, "lhs"), _shape(self.rhs, "rhs")
        if len(x) < 2 or len(y) < 2 or x[-1] != y[-2]:
            raise VerifyException(
                f"expected lhs [..., m, k] and rhs [..., k, n] of rank >= 2, but found {list(x)} and {list(y)}"
            )
        try:
            batch = broadcast_shapes(x[:-2], y[:-2])
        except VerifyException:
            raise VerifyException(
                f"the batch axes {list(x[:-2])} of lhs {list(x)} and {list(y[:-2])} of rhs {list(y)} "
                "are not broadcast-compatible"
            ) from None
        return batch + (x[-2], y[-1])


def _window_params(name: str, values: tuple[int, ...] | None, default: tuple[int, ...], count: int) -> tuple[int, ...]:
    if values is None:
        return default
    if len(values) != count:
        raise VerifyException(f"expected {count} values in {name}, but found {list(values)}")
    return values


def _padding(values: tuple[int, ...] | None) -> tuple[int, int, int, int]:
    """`[top, left, bottom, right]`; two values `[h, w]` pad both sides alike."""
    if values is None:
        return (0, 0, 0, 0)
    if len(values) == 2:
        values = values * 2
    if len(values) != 4 or min(values) < 0:
        raise VerifyException(
            f"expected padding [top, left, bottom, right] of non-negative values, but found {list(values)}"
        )
    return values


def _window_out(size: int, pad: int, window: int, stride: int, dilation: int, what: str) -> int:
    if stride <= 0 or dilation <= 0:
        raise VerifyException(
            f"expected positive {what} stride and dilation, but found stride {stride} and dilation {dilation}"
        )
    span = dilation * (window - 1) + 1
    out = (size + pad - span) // stride + 1
    if out <= 0:
        raise VerifyException(
            f"the {what} window {window} (dilation {dilation}, stride {stride}) does not fit an "
            f"input of size {size} with padding {pad}"
        )
    return out


@irdl_op_definition
class Conv2DOp(RelayOp):
    """2-D convolution, NCHW data and OIHW weight, padding `[top, left, bottom, right]`."""

    name = "relay.nn.conv2d"
    data = operand_def(TensorType)
    weight = operand_def(TensorType)
    res = result_def(TensorType)
    strides = opt_prop_def(I64Array)
    padding = opt_prop_def(I64Array)
    dilation = opt_prop_def(I64Array)
    groups = opt_prop_def(IntegerAttr[I64])
    PATTERN: ClassVar[OpPatternKind] = OpPatternKind.OUT_EWISE_FUSABLE
    assembly_format = "$data `,` $weight attr-dict `:` functional-type(operands, results)"

    @property
    def stride_values(self) -> tuple[int, ...]:
        return _window_params("strides", _ints(self.strides), (1, 1), 2)

    @property
    def padding_values(self) -> tuple[int, int, int, int]:
        return _padding(_ints(self.padding))

    @property
    def dilation_values(self) -> tuple[int, ...]:
        return _window_params("dilation", _ints(self.dilation), (1, 1), 2)

    @property
    def group_count(self) -> int:
        return _int(self.groups, 1)

    def infer_shape(self) -> Shape:
        x, w = _shape(self.data, "data"), _shape(self.weight, "weight")
        if len(x) != 4 or len(w) != 4:
            raise VerifyException(f"expected NCHW data and OIHW weight of rank 4, but found {list(x)} and {list(w)}")
        groups = self.group_count
        if groups <= 0 or x[1] % groups or w[0] % groups or w[1] * groups != x[1]:
            raise VerifyException(
                f"expected weight input channels * groups == data channels and output channels "
                f"divisible by groups, but found data {list(x)}, weight {list(w)}, groups {groups}"
            )
        (sh, sw), (dh, dw) = self.stride_values, self.dilation_values
        top, left, bottom, right = self.padding_values
        oh = _window_out(x[2], top + bottom, w[2], sh, dh, "height")
        ow = _window_out(x[3], left + right, w[3], sw, dw, "width")
        return (x[0], w[0], oh, ow)


class Pool2DOp(OneOperandOp):
    """NCHW pooling over `pool_size` windows, with `strides`, `dilation` (both default 1),
    `padding` `[top, left, bottom, right]` smaller than the window, and `ceil_mode` (default
    false): the output size rounds up, as in ONNX and PyTorch, but a last window that would
    start past the input and its top/left padding is dropped. Padding never takes part in
    a max; every window holds at least one tap of the input (a verification error else)."""

    pool_size = prop_def(I64Array)
    strides = opt_prop_def(I64Array)
    padding = opt_prop_def(I64Array)
    dilation = opt_prop_def(I64Array)
    ceil_mode = opt_prop_def(BoolAttr)
    PATTERN: ClassVar[OpPatternKind] = OpPatternKind.OUT_EWISE_FUSABLE

    @property
    def window(self) -> tuple[int, ...]:
        window = _window_params("pool_size", _ints(self.pool_size), (1, 1), 2)
        if min(window) <= 0:
            raise VerifyException(f"expected a positive pool_size, but found {list(window)}")
        return window

    @property
    def stride_values(self) -> tuple[int, ...]:
        return _window_params("strides", _ints(self.strides), (1, 1), 2)

    @property
    def dilation_values(self) -> tuple[int, ...]:
        return _window_params("dilation", _ints(self.dilation), (1, 1), 2)

    @property
    def padding_values(self) -> tuple[int, int, int, int]:
        return _padding(_ints(self.padding))

    @property
    def rounds_up(self) -> bool:
        return self.ceil_mode is not None and bool(self.ceil_mode.value.data)

    def infer_shape(self) -> Shape:
        x = _shape(self.data, "data")
        if len(x) != 4:
            raise VerifyException(f"expected NCHW data of rank 4, but found {list(x)}")
        (kh, kw), (sh, sw), (dh, dw) = self.window, self.stride_values, self.dilation_values
        top, left, bottom, right = self.padding_values
        if top >= kh or bottom >= kh or left >= kw or right >= kw:
            raise VerifyException(
                f"expected padding smaller than pool_size {[kh, kw]}, but found {[top, left, bottom, right]}"
            )
        out: list[int] = []
        for what, size, before, after, k, s, d in (
            ("height", x[2], top, bottom, kh, sh, dh),
            ("width", x[3], left, right, kw, sw, dw),
        ):
            out.append(_pool_out(size, before, after, k, s, d, self.rounds_up, what))
        return (x[0], x[1], *out)


def _pool_out(
    size: int, before: int, after: int, window: int, stride: int, dilation: int, ceil: bool, what: str
) -> int:
    """The output size along one axis, after checking that every window has a tap in the input."""
    out = _window_out(size, before + after, window, stride, dilation, what)
    if ceil and (size + before + after - dilation * (window - 1) - 1) % stride:
        out += 0 if out * stride >= size + before else 1  # the extra window starts inside
    for o in range(out):
        start = o * stride - before
        if not any(0 <= start + t * dilation < size for t in range(window)):
            raise VerifyException(
                f"pooling window {o} along the {what} (taps {start}, {start + dilation}, ... with dilation "
                f"{dilation}) holds no element of the input of size {size}; reduce the padding or the dilation"
            )
    return out


@irdl_op_definition
class MaxPool2DOp(Pool2DOp):
    """Max pooling; padding never wins."""

    name = "relay.nn.max_pool2d"


@irdl_op_definition
class AvgPool2DOp(Pool2DOp):
    """Average pooling: padding is excluded from the count unless `count_include_pad` (then
    the taps in the explicit padding count, not those past it that `ceil_mode` adds)."""

    name = "relay.nn.avg_pool2d"
    count_include_pad = opt_prop_def(BoolAttr)

    @property
    def counts_padding(self) -> bool:
        return self.count_include_pad is not None and bool(self.count_include_pad.value.data)


@irdl_op_definition
class GlobalAvgPool2DOp(OneOperandOp):
    """Mean over H and W, keeping them as size-1 axes."""

    name = "relay.nn.global_avg_pool2d"
    PATTERN: ClassVar[OpPatternKind] = OpPatternKind.OUT_EWISE_FUSABLE

    def infer_shape(self) -> Shape:
        x = _shape(self.data, "data")
        if len(x) != 4:
            raise VerifyException(f"expected NCHW data of rank 4, but found {list(x)}")
        return (x[0], x[1], 1, 1)


# --- normalisation (CommReduce) ---------------------------------------------------------------


@irdl_op_definition
class LayerNormOp(RelayOp):
    """ONNX's LayerNormalization: `(x - mean) / sqrt(var + epsilon) * gamma + beta`, the mean
    and the (biased) variance over axes `axis`.. rank-1 (`axis` default -1, `epsilon` default
    1e-5); gamma and beta have shape `x.shape[axis:]`."""

    name = "relay.nn.layer_norm"
    data = operand_def(TensorType)
    gamma = operand_def(TensorType)
    beta = operand_def(TensorType)
    res = result_def(TensorType)
    axis = opt_prop_def(IntegerAttr[I64])
    epsilon = opt_prop_def(FloatAttr)
    PATTERN: ClassVar[OpPatternKind] = OpPatternKind.COMM_REDUCE
    assembly_format = "$data `,` $gamma `,` $beta attr-dict `:` functional-type(operands, results)"

    @property
    def axis_value(self) -> int:
        return normalize_axis(_int(self.axis, -1), len(_shape(self.data, "data")))

    @property
    def epsilon_value(self) -> float:
        return 1e-5 if self.epsilon is None else self.epsilon.value.data

    def infer_shape(self) -> Shape:
        shape = _shape(self.data, "data")
        axis = self.axis_value
        for what, value in (("gamma", self.gamma), ("beta", self.beta)):
            found = _shape(value, what)
            if found != shape[axis:]:
                raise VerifyException(
                    f"expected {what} of shape {list(shape[axis:])} (data axes {axis}.. of {list(shape)}), "
                    f"but found {list(found)}"
                )
        if not self.epsilon_value >= 0:
            raise VerifyException(f"expected epsilon >= 0, but found {self.epsilon_value}")
        return shape


# --- opaque ---------------------------------------------------------------------------------


@irdl_op_definition
class SoftmaxOp(OneOperandOp):
    """`exp(x - max) / sum` along `axis` (default -1)."""

    name = "relay.nn.softmax"
    axis = opt_prop_def(IntegerAttr[I64])
    PATTERN: ClassVar[OpPatternKind] = OpPatternKind.OPAQUE

    @property
    def axis_value(self) -> int:
        return normalize_axis(_int(self.axis, -1), len(_shape(self.data, "data")))

    def infer_shape(self) -> Shape:
        _ = self.axis_value  # checks the axis is in range
        return _shape(self.data, "data")


@irdl_op_definition
class ConstantOp(RelayOp):
    """A constant tensor: `relay.constant {value = dense<1.0> : tensor<4xf32>} : tensor<4xf32>`."""

    name = "relay.constant"
    value = prop_def(DenseIntOrFPElementsAttr)
    res = result_def(TensorType)
    ACCEPTS: ClassVar[frozenset[str]] = ALL
    assembly_format = "attr-dict `:` type($res)"

    def result_element(self) -> Attribute:
        return element_of(self.res)

    def __init__(self, value: DenseIntOrFPElementsAttr, se_scope: SEScopeAttr | None = None):
        super().__init__(result_types=[value.type], properties={"value": value, "se_scope": se_scope})

    def infer_shape(self) -> Shape:
        if self.value.type != self.res.type:
            raise VerifyException(
                f"expected the value's type {self.value.type} to equal the result type {self.res.type}"
            )
        return _shape(self.res, "the result")


def elements(array: np.ndarray) -> DenseIntOrFPElementsAttr:
    """`array` (float32, int64 or bool) as a constant's value, from its raw bytes (bool as one
    byte 0 or 1, as `xrelay.values.constant_value` reads it back)."""
    found = dtype_of_numpy(np.asarray(array).dtype)
    if found is None:
        raise VerifyException(f"a constant holds float32, int64 or bool elements, but found {np.asarray(array).dtype}")
    values = np.ascontiguousarray(array, dtype=found.numpy.newbyteorder("<"))
    if found == BOOL:
        values = values.view(np.uint8)
    element = cast(IntegerType | Float32Type, found.element)
    return DenseIntOrFPElementsAttr(TensorType(element, values.shape), BytesAttr(values.tobytes()))


def f32_elements(array: np.ndarray) -> DenseIntOrFPElementsAttr:
    """`array` as a float32 constant's value: its elements converted to f32 in a tensor of its
    shape, from the raw bytes (as `xrelay.values.constant_value` reads them back: fast for
    weights). For a value of any dtype, `elements`."""
    values = np.ascontiguousarray(array, dtype="<f4")
    return DenseIntOrFPElementsAttr(TensorType(f32, values.shape), BytesAttr(values.tobytes()))


# --- placement ------------------------------------------------------------------------------


@irdl_op_definition
class OnDeviceOp(IRDLOperation):
    """Identity that constrains placement: `relay.on_device %x {se_scope = #relay.se_scope<device = cpu>} : T`.

    `constrain_body` (default true) puts the operand on `se_scope`; `constrain_result`
    (default false) puts the result there too. Both false: a free copy point.
    """

    name = "relay.on_device"
    T: ClassVar = VarConstraint("T", base(TensorType))
    data = operand_def(T)
    res = result_def(T)
    se_scope = prop_def(SEScopeAttr)
    constrain_body = opt_prop_def(BoolAttr)
    constrain_result = opt_prop_def(BoolAttr)
    irdl_options = (ParsePropInAttrDict(),)
    traits = traits_def(Pure())
    assembly_format = "$data attr-dict `:` type($res)"

    def __init__(
        self,
        data: SSAValue,
        se_scope: SEScopeAttr,
        constrain_body: bool = True,
        constrain_result: bool = False,
    ):
        properties: dict[str, Attribute] = {"se_scope": se_scope}
        if not constrain_body:
            properties["constrain_body"] = BoolAttr.from_bool(False)
        if constrain_result:
            properties["constrain_result"] = BoolAttr.from_bool(True)
        super().__init__(operands=[data], result_types=[data.type], properties=properties)

    @property
    def constrains_body(self) -> bool:
        return self.constrain_body is None or bool(self.constrain_body.value.data)

    @property
    def constrains_result(self) -> bool:
        return self.constrain_result is not None and bool(self.constrain_result.value.data)


@irdl_op_definition
class DeviceCopyOp(IRDLOperation):
    """Identity that moves data between scopes:
    `relay.device_copy %x {src_se_scope = #relay.se_scope<...>, dst_se_scope = #relay.se_scope<...>} : T`."""

    name = "relay.device_copy"
    T: ClassVar = VarConstraint("T", base(TensorType))
    data = operand_def(T)
    res = result_def(T)
    src_se_scope = prop_def(SEScopeAttr)
    dst_se_scope = prop_def(SEScopeAttr)
    PATTERN: ClassVar[OpPatternKind] = OpPatternKind.OPAQUE
    irdl_options = (ParsePropInAttrDict(),)
    traits = traits_def(Pure())
    assembly_format = "$data attr-dict `:` type($res)"

    def __init__(self, data: SSAValue, src: SEScopeAttr, dst: SEScopeAttr):
        super().__init__(
            operands=[data],
            result_types=[data.type],
            properties={"src_se_scope": src, "dst_se_scope": dst},
        )


# --- fusion ---------------------------------------------------------------------------------


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Returns the result of a `relay.fused` group."""

    name = "relay.yield"
    args = var_operand_def(TensorType)
    traits = lazy_traits_def(lambda: (IsTerminator(), HasParent(FusedOp), Pure()))
    assembly_format = "$args attr-dict `:` type($args)"

    def __init__(self, *args: SSAValue):
        super().__init__(operands=[list(args)])


@irdl_op_definition
class FusedOp(IRDLOperation):
    """A fused group of primitive ops, isolated from above, with one result:

    %r = relay.fused(%a, %b) {kernel_name = "fused_add_exp", se_scope = #relay.se_scope<...>}
           : (T, T) -> T {
    ^bb0(%x: T, %y: T):
      ...
      relay.yield %v : T
    }
    """

    name = "relay.fused"
    inputs = var_operand_def(TensorType)
    res = result_def(TensorType)
    body = region_def("single_block")
    se_scope = opt_prop_def(SEScopeAttr)
    kernel_name = opt_prop_def(StringAttr)
    irdl_options = (ParsePropInAttrDict(),)
    traits = traits_def(IsolatedFromAbove(), Pure())
    assembly_format = "`(` $inputs `)` attr-dict `:` functional-type($inputs, $res) $body"

    def __init__(
        self,
        inputs: Sequence[SSAValue],
        result_type: Attribute,
        body: Region,
        se_scope: SEScopeAttr | None = None,
        kernel_name: str | None = None,
    ):
        super().__init__(
            operands=[list(inputs)],
            result_types=[result_type],
            regions=[body],
            properties={
                "se_scope": se_scope,
                "kernel_name": StringAttr(kernel_name) if kernel_name is not None else None,
            },
        )

    def verify_(self) -> None:
        block = self.body.block
        arg_types = [a.type for a in block.args]
        input_types = [v.type for v in self.inputs]
        if arg_types != input_types:
            raise VerifyException(
                f"expected the block argument types ({', '.join(map(str, arg_types))}) to match "
                f"the input types ({', '.join(map(str, input_types))})"
            )
        terminator = block.last_op
        if not isinstance(terminator, YieldOp) or len(terminator.args) != 1:
            raise VerifyException("expected the body to end in relay.yield of exactly one value")
        if terminator.args[0].type != self.res.type:
            raise VerifyException(
                f"expected the yielded type {terminator.args[0].type} to equal the result type {self.res.type}"
            )

    @property
    def kernel(self) -> str | None:
        return None if self.kernel_name is None else self.kernel_name.data


class LaunchCalleeInterface(SymbolUserOpInterface):
    """A launch names a kernel of its module: a `func.func` over one memref per input, of the
    input's shape, and one for the result."""

    def verify(self, op: Operation) -> None:
        assert isinstance(op, LaunchOp)
        kernel = SymbolTable.lookup_symbol(op, op.callee)
        if not isinstance(kernel, func.FuncOp):
            raise VerifyException(
                f"relay.launch calls {op.callee}, which is not a function of the module; "
                "kernels come from convert-relay-to-loops"
            )
        # The operand constraints, checked before traits, made every input a tensor; xDSL
        # types the values of a variadic operand as plain attributes.
        inputs = cast(tuple[TensorType[Attribute], ...], op.inputs.types)
        expected = [MemRefType(t.element_type, t.get_shape()) for t in (*inputs, op.res.type)]
        found = list(kernel.function_type.inputs.data)
        if found != expected or kernel.function_type.outputs.data:
            raise VerifyException(
                f"relay.launch calls {op.callee} with ({', '.join(map(str, expected))}), but the "
                f"kernel takes ({', '.join(map(str, found))})"
                + (" and returns results" if kernel.function_type.outputs.data else "")
            )


@irdl_op_definition
class LaunchOp(IRDLOperation):
    """A launch of a lowered kernel on a scope (made by convert-relay-to-loops):

    %r = relay.launch @fused_add(%a, %b) {se_scope = #relay.se_scope<...>} : (T, T) -> T
    """

    name = "relay.launch"
    callee = prop_def(SymbolRefAttr)
    inputs = var_operand_def(TensorType)
    res = result_def(TensorType)
    se_scope = prop_def(SEScopeAttr)
    irdl_options = (ParsePropInAttrDict(),)
    traits = traits_def(Pure(), LaunchCalleeInterface())
    assembly_format = "$callee `(` $inputs `)` attr-dict `:` functional-type($inputs, $res)"

    def __init__(self, callee: str, inputs: Sequence[SSAValue], result_type: Attribute, se_scope: SEScopeAttr):
        super().__init__(
            operands=[list(inputs)],
            result_types=[result_type],
            properties={"callee": SymbolRefAttr(callee), "se_scope": se_scope},
        )


PRIMITIVE_OPS: tuple[type[RelayOp], ...] = (
    NegativeOp, ExpOp, LogOp, SqrtOp, RsqrtOp, TanhOp, SigmoidOp, AbsOp, ErfOp, ReluOp, ClipOp,
    LeakyReluOp,
    AddOp, SubtractOp, MultiplyOp, DivideOp, MaximumOp, MinimumOp, PowerOp, BiasAddOp,
    ReshapeOp, TransposeOp, SqueezeOp, ExpandDimsOp, BroadcastToOp, StridedSliceOp, ConcatenateOp,
    PadOp, TakeOp, CastOp, EqualOp, NotEqualOp, LessOp, LessEqualOp, GreaterOp, GreaterEqualOp,
    LogicalNotOp, LogicalAndOp, LogicalOrOp, WhereOp,
    SumOp, MeanOp, MaxOp, MinOp,
    DenseOp, BatchMatmulOp, MatmulOp, Conv2DOp, MaxPool2DOp, AvgPool2DOp, GlobalAvgPool2DOp,
    LayerNormOp, SoftmaxOp,
)  # fmt: skip

Relay = Dialect(
    "relay",
    [*PRIMITIVE_OPS, ConstantOp, OnDeviceOp, DeviceCopyOp, FusedOp, YieldOp, LaunchOp],
    [SEScopeAttr],
)
