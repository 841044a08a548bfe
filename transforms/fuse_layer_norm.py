"""
fuse-layer-norm: a layer normalisation written in primitive ops becomes one relay.nn.layer_norm.

A model written op by op (bench/models.py's transformer, or an ONNX graph without
LayerNormalization) normalises the trailing axes a.. of %x with

    %m = relay.mean %x {axis = [a, ..], keepdims = true}
    %c = relay.subtract %x, %m
    %v = relay.mean (relay.multiply %c, %c) {the same axes, keepdims = true}
    %n = relay.multiply %c, (relay.rsqrt (relay.add %v, eps))
      or relay.divide %c, (relay.sqrt (relay.add %v, eps))
    %y = relay.add (relay.multiply %n, %gamma), %beta

which fuse-ops cuts into four kernels (a mean is CommReduce, so it ends its group): the mean;
the subtraction; the square and its mean; the rest. relay.nn.layer_norm is one kernel
(`layer_norm_rows`: a work item per row). The transformer of bench/models.py (seq 128, d 256,
two norms), per-node profile medians in one run: C 0.032 -> 0.024 ms, OpenCL 0.218 -> 0.054 ms.

Phase 1, match: from each relay.add, the pattern above, with the operands of every add and
multiply in either order. The two means reduce the same trailing axes and keep them; eps is a
splat constant >= 0 that does not change the variance's shape; gamma and beta have the shape
of the normalised axes (x.shape[a:], as relay.nn.layer_norm requires); every value of the
pattern but %y is used only inside it (%c by the square and the normalisation); all its ops
have one se_scope (or none).
Phase 2, rewrite: relay.nn.layer_norm(%x, %gamma, %beta) {axis = a, epsilon = eps} stands in
for %y, with its se_scope; the pattern's ops are erased (eps too, unless used elsewhere).

The result agrees with the ops replaced up to rounding: layer_norm takes the mean as the row's
first element plus the mean of the differences from it. A NaN or an infinity in a row makes
the whole row NaN either way. Not matched: gamma or beta of another broadcasting shape, a
square written `power(c, 2)`, a variance taken as `E[x^2] - E[x]^2`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TypeVar

from xdsl.context import Context
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, ModuleOp, f32, i64
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern, op_type_rewrite_pattern

from xrelay.dialects import relay
from xrelay.transforms.kernel_builder import shape_of


@dataclass(frozen=True)
class FuseLayerNormPass(ModulePass):
    name = "fuse-layer-norm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(LayerNormPattern(), apply_recursively=False).rewrite_module(op)


@dataclass(frozen=True)
class LayerNorm:
    """A matched normalisation: its operands and attributes, and its ops from %y back."""

    data: SSAValue
    gamma: SSAValue
    beta: SSAValue
    axis: int
    epsilon: float
    ops: tuple[Operation, ...]  # users before the ops they use
    epsilon_op: relay.ConstantOp


class LayerNormPattern(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: relay.AddOp, rewriter: PatternRewriter) -> None:
        found = match_layer_norm(op)
        if found is None:
            return
        fused = relay.LayerNormOp.create(
            operands=[found.data, found.gamma, found.beta],
            result_types=[op.res.type],
            properties=properties(found, op),
        )
        rewriter.replace(op, fused)
        for dead in found.ops[1:]:
            rewriter.erase(dead)
        if not found.epsilon_op.res.uses:
            rewriter.erase(found.epsilon_op)


def properties(found: LayerNorm, root: relay.AddOp) -> dict[str, IntegerAttr | FloatAttr | relay.SEScopeAttr]:
    props: dict[str, IntegerAttr | FloatAttr | relay.SEScopeAttr] = {
        "axis": IntegerAttr(found.axis, i64),
        "epsilon": FloatAttr(found.epsilon, f32),
    }
    if root.se_scope is not None:
        props["se_scope"] = root.se_scope
    return props


# --- Phase 1: match ---------------------------------------------------------------------------


def match_layer_norm(root: relay.AddOp) -> LayerNorm | None:
    """`root` as `add(multiply(normalised, gamma), beta)` over a normalisation of %x."""
    for scaled, beta in orders(root):
        times_gamma = producer(scaled, relay.MultiplyOp)
        if times_gamma is None:
            continue
        for normalised, gamma in orders(times_gamma):
            found = match_normalised(normalised)
            if found is None:
                continue
            data, axis, epsilon, epsilon_op, ops = found
            match = LayerNorm(data, gamma, beta, axis, epsilon, (root, times_gamma, *ops), epsilon_op)
            if fits(match):
                return match
    return None


def match_normalised(
    value: SSAValue,
) -> tuple[SSAValue, int, float, relay.ConstantOp, tuple[Operation, ...]] | None:
    """`value` as `c * rsqrt(var + eps)` or `c / sqrt(var + eps)`, c the centred %x and var
    its mean square: (%x, the first normalised axis, eps, eps's constant, the ops)."""
    for centred, root_of_variance, scale in scalings(value):
        add_eps = producer(root_of_variance.data, relay.AddOp)
        subtract = producer(centred, relay.SubtractOp)
        if add_eps is None or subtract is None:
            continue
        mean = producer(subtract.rhs, relay.MeanOp)
        for variance, epsilon in orders(add_eps):
            constant = producer(epsilon, relay.ConstantOp)
            mean_square = producer(variance, relay.MeanOp)
            square = producer(mean_square.data, relay.MultiplyOp) if mean_square is not None else None
            if constant is None or mean_square is None or square is None or mean is None:
                continue
            eps = splat_value(constant, shape_of(variance))
            axis = normalised_axis(mean, mean_square)
            if eps is None or axis is None or mean.data != subtract.lhs or tuple(square.operands) != (centred, centred):
                continue
            ops = (scale, root_of_variance, add_eps, mean_square, square, subtract, mean)
            return subtract.lhs, axis, eps, constant, ops
    return None


def scalings(value: SSAValue) -> Iterator[tuple[SSAValue, relay.RsqrtOp | relay.SqrtOp, Operation]]:
    """(c, the root of the variance, the op scaling c by it) for `c * rsqrt(..)` in either
    order and for `c / sqrt(..)`."""
    multiply = producer(value, relay.MultiplyOp)
    for centred, factor in orders(multiply):
        rsqrt = producer(factor, relay.RsqrtOp)
        if multiply is not None and rsqrt is not None:
            yield centred, rsqrt, multiply
    divide = producer(value, relay.DivideOp)
    sqrt = producer(divide.rhs, relay.SqrtOp) if divide is not None else None
    if divide is not None and sqrt is not None:
        yield divide.lhs, sqrt, divide


def normalised_axis(mean: relay.MeanOp, mean_square: relay.MeanOp) -> int | None:
    """The first axis both means reduce, when they reduce the same trailing axes and keep them."""
    rank = len(shape_of(mean.data))
    axes = mean.reduced_axes
    if not axes or not mean.keeps_dims or not mean_square.keeps_dims or mean_square.reduced_axes != axes:
        return None
    first = min(axes)
    return first if sorted(axes) == list(range(first, rank)) else None


def splat_value(constant: relay.ConstantOp, shape: tuple[int, ...]) -> float | None:
    """The constant's one value, if it is a splat >= 0 that broadcasting to `shape` leaves
    at `shape` (rank 0, or all 1s up to `shape`'s rank)."""
    own = shape_of(constant.res)
    if len(own) > len(shape) or any(d != 1 for d in own):
        return None
    values = constant.value.get_values()
    if len(set(values)) != 1 or not isinstance(values[0], (int, float)):
        return None
    value = float(values[0])
    return value if value >= 0 else None


def fits(match: LayerNorm) -> bool:
    """gamma and beta of the normalised axes' shape, no value of the pattern used outside it
    (but its result), one se_scope on all its ops."""
    normalised = shape_of(match.data)[match.axis :]
    if shape_of(match.gamma) != normalised or shape_of(match.beta) != normalised:
        return False
    inside = set(match.ops)
    for op in match.ops[1:]:
        if any(use.operation not in inside for result in op.results for use in result.uses):
            return False
    return len({op.properties.get("se_scope") for op in match.ops}) == 1


def orders(op: Operation | None) -> Iterator[tuple[SSAValue, SSAValue]]:
    """A binary op's two operands, in both orders (add and multiply commute)."""
    if op is None:
        return
    lhs, rhs = op.operands
    yield lhs, rhs
    if lhs != rhs:
        yield rhs, lhs


T = TypeVar("T", bound=Operation)


def producer(value: SSAValue, kind: type[T]) -> T | None:
    owner = value.owner
    return owner if isinstance(owner, kind) else None
