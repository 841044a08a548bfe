"""
packed_gemv: a cpu group whose anchor is a dense of fewer rows than packed_matmul's tile
(a batch of 1 to 15 samples with AVX-512, 1 to 5 with AVX2) whose weight is a constant of
@main, computed from the weight pre-packed in packed_matmul's panels (`pack_weight`,
`[P, K, C]`, C the tile's columns).

Why: in a build of several batch sizes (batching.py) the sizes share one copy of each weight.
While the small sizes read the plain [N, K] weight (matmul_block), the larger sizes had to read
it plain too (`HELD_AS_IS_ATTR`) and pack panels per work item. Reading the one packed layout
at every size lets the larger sizes keep their pre-packed kernels and the weight stay stored
once. (Where the layouts differ, a size that picks another tile, the weight is still held as
it is.)

A work item is PANELS_PER_ITEM panels (or fewer: the most whose sums fit the registers with
all the rows, `panels_per_item`): for every k one vector load per
panel vector, one broadcast per row, and an FMA per sum (`micro_kernel.accumulate`), rows x
panels sums in flight, so that the FMAs' latency is hidden (one sum per item would wait on
each FMA). Then the sums go to a scratch block and the group's epilogue is applied per valid
output (columns past N, which the panels repeat, are not stored).
"""

from __future__ import annotations

from xdsl.dialects import memref, scf
from xdsl.dialects.builtin import f32
from xdsl.ir import SSAValue

from xrelay.dialects import relay
from xrelay.runtime.machine import Features
from xrelay.transforms.kernel_builder import shape_of
from xrelay.transforms.scalar_ops import GroupEmitter
from xrelay.transforms.schedules import Schedule, features_of, group_root, kind_of
from xrelay.transforms.schedules import micro_kernel as mk
from xrelay.transforms.schedules import packed_matmul as pm
from xrelay.transforms.schedules.matmul_block import ROW_BLOCK_MIN_DEPTH, dot_depth, matmul_anchor
from xrelay.transforms.schedules.matmul_rows import block_registers
from xrelay.transforms.schedules.transposed_rows import TRANSPOSED_MAX_FLOATS

# At most this many panels per work item (with one row: 8 AVX-512 sums in flight, 4 x 2 with
# AVX2), fewer where the rows' sums would not fit the registers.
PANELS_PER_ITEM = 8


def gemv_dense(group: relay.FusedOp) -> relay.DenseOp | None:
    """The group's dense if this schedule takes it: a cpu group, a 2-D dense of fewer rows
    than packed_matmul's tile, whose weight packed_matmul would pre-pack (`constant_rhs`) at
    a tile's rows and more (`prepacked_from_a_tile`)."""
    matmul = matmul_anchor(group)
    if group.se_scope is None or kind_of(group).work_groups or not isinstance(matmul, relay.DenseOp):
        return None
    shape = shape_of(matmul.res)
    tile = pm.blocking(features_of(group)).tile
    if len(shape) != 2 or len(shape_of(matmul.weight)) != 2 or shape[0] >= tile.rows:
        return None
    if not prepacked_from_a_tile(shape[1], dot_depth(matmul), tile):
        return None
    return matmul if pm.constant_rhs(group) is not None else None


def prepacked_from_a_tile(width: int, depth: int, tile: mk.Tile) -> bool:
    """Whether a dense `width` wide of dot products `depth` long is packed_matmul's at
    `tile`'s rows and at any more rows: at least a panel wide, MIN_WORK at a tile's rows, and
    not transposed_rows' (which comes first and reads the weight as it is). Only then do the
    sizes of a batched build all read one packed weight; a weight some larger size reads as it
    is stays so at the small sizes too (held once)."""
    transposed = depth < ROW_BLOCK_MIN_DEPTH and depth * width <= TRANSPOSED_MAX_FLOATS
    return width >= tile.columns and tile.rows * width * depth >= pm.MIN_WORK and not transposed


def matches(group: relay.FusedOp) -> bool:
    return gemv_dense(group) is not None


def panels_per_item(features: Features, tile: mk.Tile, rows: int, panels: int) -> int:
    """The panels of a work item: the most, up to PANELS_PER_ITEM and `panels`, whose `rows` x
    panels sums fit `features`' registers (at least one: the tile's rows fit)."""
    fits = [
        g
        for g in range(1, min(PANELS_PER_ITEM, panels) + 1)
        if block_registers(rows, g * tile.vectors, features.fma) <= features.vector_registers
    ]
    return max(fits, default=1)


def prepare(group: relay.FusedOp) -> None:
    """Gives the group the weight packed as packed_matmul packs it for the target's tile."""
    found = pm.constant_rhs(group)
    assert found is not None
    index, rhs = found
    operands = list(group.operands)
    operands[index] = pm.packed_constant(rhs, relay.DenseOp, pm.blocking(features_of(group))).res
    group.operands = operands


def build(emitter: GroupEmitter, group: relay.FusedOp, out: SSAValue) -> scf.ParallelOp:
    dense = gemv_dense(group)
    assert dense is not None
    features = features_of(group)
    tile = pm.blocking(features).tile
    rows, width = shape_of(dense.res)
    panels = -(-width // tile.columns)  # those holding a column of the result (`pack_weight` may hold more)
    item = mk.Tile(rows, panels_per_item(features, tile, rows, panels) * tile.vectors, tile.lanes)
    root = group_root(group)
    items = -(-width // item.columns)
    return emitter.parallel_nest(
        (items,), lambda ivs: Panels(emitter, dense, item, tile, panels).emit(ivs[0], root, out)
    )


class Panels:
    """The work items of `dense`: `item`'s panels each (of the `panels` holding a column of
    the result; the last item's panels past them read the last one, their sums not stored)."""

    def __init__(self, e: GroupEmitter, dense: relay.DenseOp, item: mk.Tile, tile: mk.Tile, panels: int):
        self.e, self.dense, self.item, self.tile, self.panels = e, dense, item, tile, panels
        self.per_item = item.vectors // tile.vectors

    def emit(self, index: SSAValue, root: SSAValue, out: SSAValue) -> None:
        """Work item `index`: every row's sums with its panels, then the group's result at
        each of them inside the result."""
        e, dense, item = self.e, self.dense, self.item
        firsts = [self.panel(index, p) for p in range(self.per_item)]

        def lhs(ks: list[SSAValue], r: int) -> SSAValue:
            return e.value_at(dense.data, [e.index(r), ks[0]])

        def rhs(ks: list[SSAValue], v: int) -> SSAValue:
            tile = self.tile
            at = [firsts[v // tile.vectors], ks[0], e.index(v % tile.vectors * tile.lanes)]
            return mk.load(e, e.inputs[dense.weight], at, tile.lanes)

        sums = mk.accumulate(e, item, [dot_depth(dense)], mk.zeros(e, item), lhs, rhs)
        block = e.emit(memref.AllocaOp.get(f32, shape=[item.rows, item.columns]))
        mk.store_block(e, item, sums, block, lambda r, v: [e.index(r), e.index(v * item.lanes)])
        self.epilogue(e.mul_const(index, item.columns), block, root, out)

    def panel(self, index: SSAValue, p: int) -> SSAValue:
        """Panel `p` of item `index` (the last panel where the items overrun them)."""
        e = self.e
        panel = e.add_const(e.mul_const(index, self.per_item), p)
        return panel if self.panels % self.per_item == 0 else e.min_index(panel, e.index(self.panels - 1))

    def epilogue(self, col0: SSAValue, block: SSAValue, root: SSAValue, out: SSAValue) -> None:
        """The group's result at the item's outputs inside the result, the anchor's from `block`."""
        e, dense, item = self.e, self.dense, self.item
        width = shape_of(dense.res)[-1]
        columns = (
            item.columns
            if width % item.columns == 0
            else (e.index(0), e.min_index(e.index(item.columns), e.sub(e.index(width), col0)))
        )

        def body(ivs: list[SSAValue], _: list[SSAValue]) -> list[SSAValue]:
            r, j = ivs
            idx = [r, e.add(col0, j)]
            e.remember(dense.res, idx, e.emit(memref.LoadOp.get(block, [r, j])))
            return e.store(e.value_at(root, idx), out, idx)

        e.loops([item.rows, columns], [], body)


SCHEDULE = Schedule("packed_gemv", matches, build, prepare)
