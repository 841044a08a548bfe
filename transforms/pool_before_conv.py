"""
pool-before-conv: an `avg_pool2d` of a 1 x 1 convolution (stride 1, unpadded) read by nothing
else becomes the convolution of the `avg_pool2d` of its data.

A 1 x 1 convolution mixes the channels of each pixel alone, linearly and without a bias
(relay's conv2d has none; a bias is an op of its own); an average pool combines the pixels
of each channel alone, linearly. The two commute, so the pool can come first and the conv
then has its pixels' fewer outputs to compute: DenseNet's transitions (BN, ReLU, a 1 x 1 conv
halving the channels, a 2 x 2 average pool at stride 2) are a quarter of the conv's
multiply-adds, for a pool over twice the channels. Padding and `count_include_pad` do not
matter: a padded tap is a zero in every input channel, which the conv maps to a zero in
every output channel (no bias), and each window averages the same taps either way. The
result differs from the original only in the rounding of the reordered sums.

The new ops keep the old ones' properties (the pool's and the conv's attributes, `se_scope`);
running the pass twice changes nothing (the conv is then no longer read by a pool).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern, op_type_rewrite_pattern

from xrelay.dialects import relay
from xrelay.transforms.kernel_builder import shape_of


@dataclass(frozen=True)
class PoolBeforeConvPass(ModulePass):
    name = "pool-before-conv"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(PoolBeforeConv()).rewrite_module(op)


def pointwise(conv: relay.Conv2DOp) -> bool:
    """Whether `conv` is a 1 x 1 convolution of stride 1 without padding (of any groups)."""
    return shape_of(conv.weight)[2:] == (1, 1) and conv.stride_values == (1, 1) and not any(conv.padding_values)


class PoolBeforeConv(RewritePattern):
    """The rule of the module docstring."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: relay.AvgPool2DOp, rewriter: PatternRewriter) -> None:
        conv = op.data.owner
        if not isinstance(conv, relay.Conv2DOp) or not pointwise(conv) or len(list(conv.res.uses)) != 1:
            return
        _, channels, *_ = shape_of(conv.data)
        n, _, height, width = shape_of(op.res)
        pooled_type = TensorType(relay.element_of(conv.data), [n, channels, height, width])
        pool = relay.AvgPool2DOp.create(
            operands=[conv.data], result_types=[pooled_type], properties=dict(op.properties)
        )
        mixed = relay.Conv2DOp.create(
            operands=[pool.res, conv.weight], result_types=[op.res.type], properties=dict(conv.properties)
        )
        rewriter.replace(op, [pool, mixed], [mixed.res])
        rewriter.erase(conv)
