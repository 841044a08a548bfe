"""
The scalar ops of relay's element types other than f32: which `arith` op computes an int64
or bool element of an elementwise, comparison, logical or cast op (`scalar_ops.GroupEmitter`
asks here when an operand is not f32).

int64 elements are `i64` scalars (`addi`, `subi`, `muli`, `divsi` truncating toward zero
and giving 0 for a zero divisor, `maxsi`, `minsi`); bool elements are `i1` scalars, 0 or 1 (`andi`, `ori`, `xori` with true);
comparisons are `cmpf` (ordered, but `une` for not_equal: NaN != NaN, as numpy) or `cmpi`
(signed on int64, unsigned on bool: i1's true is -1 when signed). Casts: `sitofp`, `uitofp`
(bool), `fptosi` (truncating), `extui` (bool to int64), and a number to bool is `!= 0`
(`cmpf une`: NaN is true, as numpy's astype(bool)).
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import arith
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, f32, i1, i64
from xdsl.ir import Attribute, Operation, SSAValue

from xrelay.dialects import relay
from xrelay.dialects.dtypes import BOOL, FLOAT32, INT64, DType, dtype_of_element

Emit = Callable[[Operation], SSAValue]

INT_BINARY: dict[type[Operation], Callable[[SSAValue, SSAValue], Operation]] = {
    relay.AddOp: arith.AddiOp,
    relay.SubtractOp: arith.SubiOp,
    relay.MultiplyOp: arith.MuliOp,
    relay.MaximumOp: arith.MaxSIOp,
    relay.MinimumOp: arith.MinSIOp,
}

BOOL_BINARY: dict[type[Operation], Callable[[SSAValue, SSAValue], Operation]] = {
    relay.LogicalAndOp: arith.AndIOp,
    relay.LogicalOrOp: arith.OrIOp,
}

# comparison -> (cmpf predicate, cmpi predicate on int64, cmpi predicate on bool)
COMPARISONS: dict[type[Operation], tuple[str, str, str]] = {
    relay.EqualOp: ("oeq", "eq", "eq"),
    relay.NotEqualOp: ("une", "ne", "ne"),
    relay.LessOp: ("olt", "slt", "ult"),
    relay.LessEqualOp: ("ole", "sle", "ule"),
    relay.GreaterOp: ("ogt", "sgt", "ugt"),
    relay.GreaterEqualOp: ("oge", "sge", "uge"),
}


def element_dtype(value: SSAValue) -> DType:
    """The dtype row of a tensor value's element type (verified to be one)."""
    found = dtype_of_element(getattr(value.type, "element_type", None) or f32)
    assert found is not None, value.type
    return found


def scalar_constant(value: float | int | bool, element: Attribute) -> Operation:
    """An `arith.constant` of `value` as a scalar of `element` (f32, i64 or i1)."""
    if element == f32:
        return arith.ConstantOp(FloatAttr(float(value), f32))
    if element == i1:
        return arith.ConstantOp(IntegerAttr(1 if value else 0, i1))
    return arith.ConstantOp(IntegerAttr(int(value), i64))


def compare(op: relay.CompareOp, lhs: SSAValue, rhs: SSAValue) -> Operation:
    """The comparison of two scalars of the operands' element type."""
    on_float, on_int, on_bool = COMPARISONS[type(op)]
    dtype = element_dtype(op.lhs)
    if dtype == FLOAT32:
        return arith.CmpfOp(lhs, rhs, on_float)
    return arith.CmpiOp(lhs, rhs, on_int if dtype == INT64 else on_bool)


def typed_binary(
    op: relay.BinaryBroadcastOp, lhs: SSAValue, rhs: SSAValue, emit: Emit, zero: SSAValue, one: SSAValue
) -> SSAValue:
    """The int64 or bool scalar op of a binary relay op, or any comparison (`zero` and `one`
    are i64 constants). An int64 division by zero gives 0, as in `xrelay.interpret`: the
    divisor is made 1 first, since C's and OpenCL's division by zero traps (SIGFPE on x86)."""
    if isinstance(op, relay.CompareOp):
        return emit(compare(op, lhs, rhs))
    if element_dtype(op.lhs) == BOOL:
        return emit(BOOL_BINARY[type(op)](lhs, rhs))
    if isinstance(op, relay.DivideOp):
        by_zero = emit(arith.CmpiOp(rhs, zero, "eq"))
        quotient = emit(arith.DivSIOp(lhs, emit(arith.SelectOp(by_zero, one, rhs))))
        return emit(arith.SelectOp(by_zero, zero, quotient))
    return emit(INT_BINARY[type(op)](lhs, rhs))


def integer_unary(op: relay.UnaryElemwiseOp, x: SSAValue, emit: Emit, zero: SSAValue, true: SSAValue) -> SSAValue:
    """An int64 negative, abs or relu, or a bool logical_not, of the scalar `x` (`zero` is an
    i64 0, `true` an i1 1, either unused when it does not apply)."""
    if isinstance(op, relay.LogicalNotOp):
        return emit(arith.XOrIOp(x, true))
    if isinstance(op, relay.ReluOp):
        return emit(arith.MaxSIOp(x, zero))
    negated = emit(arith.SubiOp(zero, x))
    if isinstance(op, relay.NegativeOp):
        return negated
    assert isinstance(op, relay.AbsOp), op.name  # the verifier allows no other unary op on int64
    return emit(arith.SelectOp(emit(arith.CmpiOp(x, zero, "slt")), negated, x))


def extremum(maximum: bool, ints: bool) -> Callable[[SSAValue, SSAValue], Operation]:
    """The op combining two elements of a max (or min) reduction, of int64 or f32."""
    if ints:
        return arith.MaxSIOp if maximum else arith.MinSIOp
    return arith.MaximumfOp if maximum else arith.MinimumfOp


def cast(x: SSAValue, source: DType, target: DType, emit: Emit, zero: Callable[[DType], SSAValue]) -> SSAValue:
    """The scalar `x` of dtype `source` as `target` (`zero(d)` is a constant 0 of dtype d)."""
    if source == target:
        return x
    if target == BOOL:
        if source == FLOAT32:
            return emit(arith.CmpfOp(x, zero(source), "une"))
        return emit(arith.CmpiOp(x, zero(source), "ne"))
    if target == FLOAT32:
        return emit(arith.UIToFPOp(x, f32) if source == BOOL else arith.SIToFPOp(x, f32))
    if source == BOOL:
        return emit(arith.ExtUIOp(x, i64))
    return emit(arith.FPToSIOp(x, i64))
