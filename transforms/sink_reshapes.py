"""
sink-reshapes: a reshape that only adds or drops leading axes of 1 moves below the elementwise
ops that read it, where it meets the next reshape and both go; `power` by a constant 2 or 3
becomes multiplies.

GPT-2's exported MLP (transformers' Conv1D) is `matmul` ([64, 768] . [768, 3072]) + bias,
`reshape` to [1, 64, 3072], the tanh GELU (`0.5 x (1 + tanh(0.7978 (x + 0.044715 x^3)))`), then
`reshape` back to [64, 3072] for the next matmul. fuse-ops fuses elementwise ops after a matmul
(OutEWiseFusable) but not a reshape (Injective), so the GELU was a kernel of its own: the
[64, 3072] activation written, read back and written again, and the GELU's `power(x, 3)` a
scalar `powf` per element (23% of GPT-2's time at 1 thread on AVX-512, more than the MLP's
matmuls' epilogue ever costs). With the reshape below the GELU the two reshapes fold into
none, and the GELU is the matmul's epilogue.

Words: a *unit reshape* is a `relay.reshape` whose operand's and result's shapes are equal
once their leading 1s are dropped (`[64, 3072]` <-> `[1, 64, 3072]`).

Rules (applied until none applies):
1. An elementwise or broadcast op (`UnaryElemwiseOp`, `BinaryBroadcastOp`) of the result's
   shape T, one or both of whose operands are unit reshapes from values of one shape S, the
   other (if not) a value of at most S's rank without its leading 1s that broadcasts into
   that trailing shape (a bias, a scalar): the op on the reshapes' operands (of shape S), then
   one reshape to T. Broadcasting aligns trailing axes, which the reshape keeps, so every
   element is the same.
2. A reshape of a reshape is one reshape of the first's operand; a reshape to its operand's
   own type is that operand.
3. `power(x, c)` with c a constant of one value, 2 or 3, whose shape broadcasts into x's:
   `x * x` or `(x * x) * x` (each rounded as gcc's `powf` for small integer powers is not
   required to be: within an ulp or two).

Each rewritten op keeps its `se_scope`; the new reshape takes the op's. Running the pass twice
changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from xrelay.dialects import relay
from xrelay.transforms.kernel_builder import shape_of

Shape = tuple[int, ...]


@dataclass(frozen=True)
class SinkReshapesPass(ModulePass):
    name = "sink-reshapes"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        patterns = GreedyRewritePatternApplier([SinkUnitReshape(), FoldReshapes(), SmallPower()])
        PatternRewriteWalker(patterns).rewrite_module(op)


def without_leading_ones(shape: Shape) -> Shape:
    first = next((i for i, d in enumerate(shape) if d != 1), len(shape))
    return shape[first:]


def fits_trailing(shape: Shape, trailing: Shape) -> bool:
    """Whether a value of `shape` broadcasts into `trailing` (aligned on the last axes)
    without adding axes or growing any."""
    if len(shape) > len(trailing):
        return False
    return all(d in (1, t) for d, t in zip(reversed(shape), reversed(trailing)))


def elementwise(op: Operation) -> bool:
    return isinstance(op, (relay.UnaryElemwiseOp, relay.BinaryBroadcastOp))


class SinkUnitReshape(RewritePattern):
    """Rule 1 of the module docstring."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not elementwise(op):
            return
        found = sunk_operands(op)
        if found is None:
            return
        sources, shape = found
        res = op.results[0]
        element = relay.element_of(res)
        inner = type(op).create(
            operands=sources, result_types=[TensorType(element, list(shape))], properties=dict(op.properties)
        )
        outer = relay.ReshapeOp.create(operands=[inner.results[0]], result_types=[res.type], properties=scope_of(op))
        rewriter.replace(op, [inner, outer], [outer.results[0]])


def reshaped_from(value: SSAValue) -> SSAValue | None:
    """The operand of `value`'s unit reshape, or None where `value` is no unit reshape."""
    owner = value.owner
    if not isinstance(owner, relay.ReshapeOp):
        return None
    same = without_leading_ones(shape_of(owner.data)) == without_leading_ones(shape_of(owner.res))
    return owner.data if same else None


def sunk_operands(op: Operation) -> tuple[list[SSAValue], Shape] | None:
    """The operands of `op` with its unit reshapes' operands in place of them, and their
    shape, where rule 1 applies, else None."""
    sources = [s for s in (reshaped_from(v) for v in op.operands) if s is not None]
    if not sources:
        return None
    shape = shape_of(sources[0])
    if any(shape_of(s) != shape for s in sources):
        return None
    trailing = without_leading_ones(shape)
    operands: list[SSAValue] = []
    for value in op.operands:
        source = reshaped_from(value)
        if source is None and not fits_trailing(shape_of(value), trailing):
            return None
        if source is not None and shape_of(value) != shape_of(op.results[0]):
            return None
        operands.append(value if source is None else source)
    return operands, shape


def scope_of(op: Operation) -> dict[str, Attribute]:
    scope = op.properties.get("se_scope")
    return {"se_scope": scope} if scope is not None else {}


class FoldReshapes(RewritePattern):
    """Rule 2 of the module docstring."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: relay.ReshapeOp, rewriter: PatternRewriter) -> None:
        inner = op.data.owner
        if op.data.type == op.res.type:
            rewriter.replace(op, [], [op.data])
        elif isinstance(inner, relay.ReshapeOp):
            folded = relay.ReshapeOp.create(operands=[inner.data], result_types=[op.res.type], properties=scope_of(op))
            rewriter.replace(op, folded)


class SmallPower(RewritePattern):
    """Rule 3 of the module docstring."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: relay.PowerOp, rewriter: PatternRewriter) -> None:
        exponent = op.rhs.owner
        if not isinstance(exponent, relay.ConstantOp) or shape_of(op.res) != shape_of(op.lhs):
            return
        values = set(exponent.value.get_values())
        if len(values) != 1 or next(iter(values)) not in (2.0, 3.0):
            return
        scope = op.se_scope
        square = relay.MultiplyOp(op.lhs, op.lhs, scope)
        ops: list[Operation] = [square]
        if next(iter(values)) == 3.0:
            ops.append(relay.MultiplyOp(square.res, op.lhs, scope))
        rewriter.replace(op, ops, [ops[-1].results[0]])
