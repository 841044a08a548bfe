"""
convert-relay-to-loops: lower every `relay.fused` group to one kernel in loop-level IR.

Input: the output of fuse-ops. Every primitive relay op sits inside a `relay.fused` that
carries `se_scope` and `kernel_name`; `relay.constant` and `relay.device_copy` stay outside.

Phase 1, check: every precondition holds before anything changes. A primitive op outside a
group, a group without `kernel_name` or `se_scope`, a leftover `relay.on_device`, a kernel
name that is already taken, and a non-primitive op or non-splat constant inside a group are
errors that name the pass to run first (splat constants are inlined).
Phase 2, lower: each group becomes a kernel appended to the module, in program order:

    func.func @<kernel_name>(%in0: memref<..xf32>, ..., %out0: memref<..xf32>)
        attributes {relay.se_scope = <the group's scope>}

whose body is constants, then ONE `scf.parallel` nest over the group's result, then
`func.return`. The outermost `scf.parallel` spans the first (at most three) result axes of
size > 1: it is the OpenCL NDRange, and the C kernel keeps it as loops. Further axes get an
inner `scf.parallel`, size-1 axes no loop (their index is 0), and a result with no axis of
size > 1 a loop of extent 1. The body computes the yielded value at the loop index by
recursive "value at index" generation (`loop_builders.GroupEmitter`): producers are
recomputed inline, anchors and reductions are `scf.for` nests with `iter_args` in the work
item, and the result is stored with one `memref.store`. Two exceptions store a row per
work item, with a nest over all axes but one: a softmax result (the softmax axis; max, sum,
then the row), and a group whose anchor is a conv2d of the result's shape and width at least
MIN_ROW_WIDTH (the width axis; the row's sums accumulate in a scratch `memref.alloca` in an
order that vectorises, then the group's result is stored along the row; a work item takes
the rows of CHANNEL_BLOCK output channels at once when they are wide, so its channel axis
is the result's divided by the block). A third stores a block of outputs per work item: a
group whose anchor is a dense or batch_matmul of the result's shape (`matmul_block`: up to
ROW_BLOCK x COLUMN_BLOCK of the last two axes, each dividing its axis; the nest's last two
axes are the result's divided by the block; one loop sums the block's dot products, then
the group's result is stored at each); in a cpu group of short dot products with a small
rhs, whole rows instead (`transposed_rows`: the nest spans all axes but the last, the row
axis divided by the rows per work item; two scratch `memref.alloca`, the rhs transposed and
the rows' sums).
Phase 3, launch: the group is replaced by `relay.launch @<kernel_name>(inputs) {se_scope}`.

Index arithmetic is folded as it is built but emitted where it is asked for, also inside
loops it does not depend on: `xrelay.build` runs dce, licm and cse after this pass, which
hoist it and merge the copies (see `loop_builders.KernelBuilder`).

Ops in the kernels: scf.parallel/for/if/yield/reduce, memref.load/store/alloca, arith
constant, addf/subf/mulf/divf/negf/maximumf/minimumf, addi/subi/muli/divsi/remsi/cmpi/select,
index_cast/sitofp, math exp/log/sqrt/rsqrt/tanh/absf/erf/powf, func.return. (Index min and
max, for window bounds, are cmpi + select.)

Not yet: element types other than f32 (the dialect has none). A producer is computed once per
distinct index it is needed at (memoised), which is cheap for the groups fuse-ops makes; a
group whose injective ops keep asking for new indices (nested concatenates of slices of one
value) recomputes more, as inlining injective ops does in TVM.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.builder import Builder
from xdsl.context import Context
from xdsl.dialects import func, memref, scf
from xdsl.dialects.builtin import IndexType, MemRefType, ModuleOp, TensorType
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from xrelay.diagnostics import LoweringError, location_of
from xrelay.dialects import relay
from xrelay.dialects.se_scope import SEScopeAttr
from xrelay.transforms.loop_builders import GroupEmitter

PASS = "convert-relay-to-loops"
NDRANGE_DIMS = 3  # OpenCL guarantees three work-item dimensions


@dataclass(frozen=True)
class ConvertRelayToLoopsPass(ModulePass):
    """Lowers each `relay.fused` to a kernel `func.func` and a `relay.launch` of it."""

    name = PASS

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        groups = check_preconditions(op)
        for group in groups:
            kernel = build_kernel(group)
            op.body.block.add_op(kernel)
            replace_with_launch(group)


# --- Phase 1: check -------------------------------------------------------------------------


def _fail(op: Operation, message: str) -> None:
    op.emit_error(message, LoweringError(message))


def check_preconditions(module: ModuleOp) -> list[relay.FusedOp]:
    """The module's groups in program order, once every precondition holds."""
    symbols = {o.sym_name.data for o in module.ops if isinstance(o, func.FuncOp)}
    groups: list[relay.FusedOp] = []
    for op in module.walk():
        if isinstance(op, relay.OnDeviceOp):
            _fail(op, f"{PASS} expects no relay.on_device (at {location_of(op)}); run plan-devices first")
        if isinstance(op, relay.PRIMITIVE_OPS) and not isinstance(op.parent_op(), relay.FusedOp):
            _fail(
                op,
                f"{PASS} expects every primitive op inside a relay.fused group, but found "
                f"'{op.name}' outside one (at {location_of(op)}); run fuse-ops first",
            )
        if isinstance(op, relay.FusedOp):
            check_group(op, symbols)
            symbols.add(op.kernel)
            groups.append(op)
    return groups


def check_group(group: relay.FusedOp, symbols: set[str]) -> None:
    for field in ("kernel_name", "se_scope"):
        if getattr(group, field) is None:
            _fail(
                group,
                f"{PASS} expects relay.fused to carry '{field}' (at {location_of(group)}), but "
                "it has none; run plan-devices and fuse-ops first",
            )
    if group.kernel in symbols:
        _fail(
            group,
            f"{PASS} needs a unique kernel_name, but @{group.kernel} (at {location_of(group)}) "
            "is already a function or another group's kernel; rename the group",
        )
    for inner in group.body.block.ops:
        check_grouped_op(inner)


def check_grouped_op(op: Operation) -> None:
    if isinstance(op, relay.ConstantOp) and not op.value.is_splat():
        _fail(
            op,
            f"{PASS} inlines only splat constants into a kernel, but found a non-splat "
            f"relay.constant of type {op.res.type} inside a relay.fused group (at {location_of(op)}); "
            "keep it outside the group, as fuse-ops does, so that it becomes a kernel input",
        )
    if not isinstance(op, (*relay.PRIMITIVE_OPS, relay.ConstantOp, relay.YieldOp)):
        _fail(
            op,
            f"{PASS} expects only primitive relay ops inside relay.fused, but found '{op.name}' "
            f"(at {location_of(op)}); run fuse-ops on a module before lowering it",
        )


# --- Phase 2: lower -------------------------------------------------------------------------


def memref_of(ty: Attribute) -> MemRefType:
    assert isinstance(ty, TensorType)
    return MemRefType(ty.element_type, ty.get_shape())


def build_kernel(group: relay.FusedOp) -> func.FuncOp:
    """`func.func @<kernel_name>(ins..., out)`: one parallel nest storing the group's result."""
    types = [memref_of(v.type) for v in group.inputs] + [memref_of(group.res.type)]
    kernel = func.FuncOp(group.kernel, (types, []))
    kernel.attributes["relay.se_scope"] = group.se_scope
    block = kernel.body.block
    *ins, out = block.args
    for i, arg in enumerate(ins):
        arg.name_hint = f"in{i}"
    out.name_hint = "out0"
    emitter = GroupEmitter(Builder(InsertPoint.at_end(block)), dict(zip(group.body.block.args, ins)))
    block.add_ops([result_nest(emitter, group, out), func.ReturnOp()])
    return kernel


def result_nest(emitter: GroupEmitter, group: relay.FusedOp, out: SSAValue) -> scf.ParallelOp:
    """The parallel nest that stores the group's yielded value into `out`."""
    root = group.body.block.last_op.args[0]
    shape = tuple(group.res.type.get_shape())
    softmax = root.owner
    if isinstance(softmax, relay.SoftmaxOp):  # a work item per row: max, sum, then the row
        axis = softmax.axis_value
        rows = shape[:axis] + shape[axis + 1 :]
        return parallel_nest(emitter, rows, lambda row: emitter.store_softmax_row(softmax, row, out))

    conv = row_anchor(group)
    if conv is not None:  # a work item per output row (see GroupEmitter.store_conv_rows)
        block = channel_block(conv)
        rows = (shape[0], shape[1] // block, shape[2])
        return parallel_nest(emitter, rows, lambda row: emitter.store_conv_rows(conv, root, row, out, block))

    matmul = matmul_anchor(group)
    rows = transposed_rows(matmul, group.se_scope) if matmul is not None else None
    if matmul is not None and rows is not None:  # whole output rows per work item
        tiles = (*shape[:-2], shape[-2] // rows)
        return parallel_nest(emitter, tiles, lambda tile: emitter.store_matmul_rows(matmul, root, tile, out, rows))
    block = matmul_block(matmul) if matmul is not None else None
    if matmul is not None and block is not None:  # a block of outputs per work item
        tiles = tuple(extent // b for extent, b in zip(shape, block))
        return parallel_nest(emitter, tiles, lambda tile: emitter.store_matmul_block(matmul, root, tile, out, block))

    def store(idx: list[SSAValue]) -> None:
        emitter.builder.insert(memref.StoreOp.get(emitter.value_at(root, idx), out, idx))

    return parallel_nest(emitter, shape, store)


# Below this output width a conv2d group keeps one work item per element: a scratch row
# of a few elements vectorises nothing.
MIN_ROW_WIDTH = 4


def row_anchor(group: relay.FusedOp) -> relay.Conv2DOp | None:
    """The group's conv2d, if it has one of the result's shape and a row worth a work item."""
    shape = group.res.type.get_shape()
    for op in group.body.block.ops:
        if isinstance(op, relay.Conv2DOp) and op.res.type.get_shape() == shape and shape[3] >= MIN_ROW_WIDTH:
            return op
    return None


# A conv2d work item computes the rows of this many output channels at once when its rows
# are at least BLOCK_MIN_WIDTH wide: each copied input row then feeds four channels' taps
# (C: 28 and 56 wide 9-15 -> 19-34 GFLOP/s; 14 wide, gcc's code for four short rows was
# slower than for one, 15 -> 10).
CHANNEL_BLOCK = 4
BLOCK_MIN_WIDTH = 16


def channel_block(conv: relay.Conv2DOp) -> int:
    """How many output channels a work item of `conv` computes: CHANNEL_BLOCK when the rows
    are wide enough and the channels of each conv group split into whole blocks, else 1."""
    out_c, width = conv.res.type.get_shape()[1], conv.res.type.get_shape()[3]
    per_group = out_c // conv.group_count
    return CHANNEL_BLOCK if width >= BLOCK_MIN_WIDTH and per_group % CHANNEL_BLOCK == 0 else 1


# A dense or batch_matmul work item computes a block of outputs (register blocking): up to
# COLUMN_BLOCK along the result's last axis (j), and up to ROW_BLOCK along the one before (i)
# when the dot products are at least ROW_BLOCK_MIN_DEPTH long; each the largest power of two
# that divides the axis. Every x[i, k] load then feeds 4 outputs and every w[j, k] load 4
# (bench/kernels.py, dense 32x784 . 256x784: C 18 -> 42-50, OpenCL 22 -> 44-52 GFLOP/s). In
# short dot products (batch_matmul 8x64x64) the 16 sums' final lane folds cost as much as the
# rows save (C 9-12 with rows, 13 without), so they block columns only.
COLUMN_BLOCK = 4
ROW_BLOCK = 4
ROW_BLOCK_MIN_DEPTH = 256


def matmul_anchor(group: relay.FusedOp) -> relay.DenseOp | relay.BatchMatmulOp | None:
    """The group's dense or batch_matmul, if it has one of the result's shape."""
    shape = group.res.type.get_shape()
    for op in group.body.block.ops:
        if isinstance(op, (relay.DenseOp, relay.BatchMatmulOp)) and op.res.type.get_shape() == shape:
            return op
    return None


def dot_depth(matmul: relay.DenseOp | relay.BatchMatmulOp) -> int:
    """The length of `matmul`'s dot products (k)."""
    return (matmul.weight if isinstance(matmul, relay.DenseOp) else matmul.lhs).type.get_shape()[-1]


def matmul_block(matmul: relay.DenseOp | relay.BatchMatmulOp) -> tuple[int, ...] | None:
    """The outputs a work item of `matmul` computes along each result axis, or None for one."""
    shape = matmul.res.type.get_shape()
    depth = dot_depth(matmul)
    rows = ROW_BLOCK if depth >= ROW_BLOCK_MIN_DEPTH else 1
    block = [1] * len(shape)
    for axis, most in ((-1, COLUMN_BLOCK), (-2, rows)):
        if len(shape) >= -axis:
            block[axis] = largest_power_of_two_dividing(shape[axis], most)
    return tuple(block) if any(b > 1 for b in block) else None


# On the cpu, a short dot product (depth below ROW_BLOCK_MIN_DEPTH) whose rhs fits in
# TRANSPOSED_MAX_FLOATS is computed a block of whole rows per work item instead
# (`GroupEmitter.store_matmul_rows`): the rhs copied transposed into scratch, the rows summed
# with unit-stride innermost loops. Blocks of up to TRANSPOSED_ROWS rows, at least
# TRANSPOSED_MIN_ROWS (each block copies the rhs once). Not OpenCL: the scratch would be a
# work item's private memory.
TRANSPOSED_MAX_FLOATS = 64 * 64
TRANSPOSED_ROWS = 16
TRANSPOSED_MIN_ROWS = 4


def transposed_rows(matmul: relay.DenseOp | relay.BatchMatmulOp, scope: SEScopeAttr) -> int | None:
    """How many whole output rows a work item of `matmul` computes with a transposed copy of
    its rhs, or None for register blocks."""
    shape = matmul.res.type.get_shape()
    depth = dot_depth(matmul)
    if scope.device != "cpu" or len(shape) < 2 or depth >= ROW_BLOCK_MIN_DEPTH:
        return None
    if depth * shape[-1] > TRANSPOSED_MAX_FLOATS:
        return None
    rows = largest_power_of_two_dividing(shape[-2], TRANSPOSED_ROWS)
    return rows if rows >= TRANSPOSED_MIN_ROWS else None


def largest_power_of_two_dividing(extent: int, most: int) -> int:
    size = most
    while extent % size:
        size //= 2
    return size


def parallel_nest(
    emitter: GroupEmitter, shape: tuple[int, ...], body: Callable[[list[SSAValue]], object]
) -> scf.ParallelOp:
    """The kernel's single parallel nest over `shape`; `body(idx)` emits one element's code.

    Size-1 axes get no loop (their index is 0), so an NCHW result with N = 1 still fills the
    NDRange. The outer loop spans the first three other axes, an inner one the rest; with no
    such axis, the outer loop has extent 1.
    """
    axes = [a for a, extent in enumerate(shape) if extent != 1]
    outer, inner = axes[:NDRANGE_DIMS], axes[NDRANGE_DIMS:]

    def loop(loop_axes: list[int], fill: Callable[[list[SSAValue]], object]) -> scf.ParallelOp:
        extents = [shape[a] for a in loop_axes] or [1]
        block = Block(arg_types=[IndexType()] * len(extents))
        with emitter.inside(block):
            fill(list(block.args[: len(loop_axes)]))
            emitter.builder.insert(scf.ReduceOp())
        zeros, ones = [emitter.index(0)] * len(extents), [emitter.index(1)] * len(extents)
        return scf.ParallelOp(zeros, [emitter.index(e) for e in extents], ones, Region(block))

    def index(ivs: list[SSAValue]) -> list[SSAValue]:
        by_axis = dict(zip(outer + inner, ivs))
        return [by_axis.get(a, emitter.index(0)) for a in range(len(shape))]

    def fill_outer(ivs: list[SSAValue]) -> None:
        if not inner:
            body(index(ivs))
            return
        emitter.builder.insert(loop(inner, lambda inner_ivs: body(index(ivs + inner_ivs))))

    return loop(outer, fill_outer)


# --- Phase 3: launch ------------------------------------------------------------------------


def replace_with_launch(group: relay.FusedOp) -> None:
    launch = relay.LaunchOp(group.kernel, list(group.inputs), group.res.type, group.se_scope)
    Rewriter.replace_op(group, launch)
