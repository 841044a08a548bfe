"""
Reduction loops: an `scf.for` whose only loop-carried dependences are reductions into its
iter_args, each combined by one of REDUCTION_OPERATORS. Reordering such a loop's iterations
(vectorising it, splitting it into lanes) only reorders its reductions.

Two passes ask this of a loop: split-reductions (which splits one into vector lanes) and the
C-style targets (which mark one for the C or OpenCL compiler's vectoriser).
"""

from __future__ import annotations

from xdsl.dialects import arith, memref, scf
from xdsl.ir import Operation

# Ops that combine a loop-carried value with a new one in a reduction loop.
REDUCTION_OPERATORS: tuple[type[Operation], ...] = (arith.AddfOp, arith.MulfOp, arith.MaximumfOp, arith.MinimumfOp)


def reduction_combines(loop: scf.ForOp) -> list[Operation] | None:
    """For a loop whose only loop-carried dependences are reductions into its iter_args, the
    op combining each (one of `REDUCTION_OPERATORS`); else None. No nested regions and no
    stores; each carried value's one use combines it with a value of this iteration into
    what the loop yields in its place."""
    block = loop.body.block
    if not loop.iter_args or any(op.regions or isinstance(op, memref.StoreOp) for op in block.ops):
        return None
    assert block.last_op is not None
    yielded = list(block.last_op.operands)
    combines: list[Operation] = []
    for position, carried in enumerate(block.args[1:]):
        if not carried.has_one_use():  # (also rules out `acc + acc`)
            return None
        combine = carried.get_user_of_unique_use()  # in `block`: it has no nested regions
        if combine is None or type(combine) not in REDUCTION_OPERATORS:
            return None
        result = combine.results[0]
        if result is not yielded[position] or not result.has_one_use():
            return None
        combines.append(combine)
    return combines
