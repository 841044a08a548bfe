"""
convert-relay-to-loops: lower every `relay.fused` group to one kernel in loop-level IR.

Input: the output of fuse-ops. Every primitive relay op sits inside a `relay.fused` that
carries `se_scope` and `kernel_name`; `relay.constant` and `relay.device_copy` stay outside.

Phase 1, check: every precondition holds before anything changes. A primitive op outside a
group, a group without `kernel_name` or `se_scope`, a leftover `relay.on_device`, a kernel
name that is already taken, and a non-primitive op or non-splat constant inside a group are
errors that name the pass to run first (splat constants are inlined).
Phase 2, pick: each group gets the first schedule of SCHEDULES whose test matches it
(`transforms/schedules/`, one module each, with its tile constants):

    attention_rows    a cpu or opencl batch_matmul, scale, softmax, batch_matmul (fuse-attention's
                      group): a block of query rows per work item, the scores, their softmax
                      and the product with v by the micro-kernel, the scores in scratch
    softmax_row       a softmax result: a work item per row (max, exp stored, sum, scale)
    layer_norm_rows   a layer_norm result: a work item per row (mean, 1/std, then the row)
    pointwise_conv    a cpu or opencl 1 x 1 conv2d anchor (any stride, one group, unpadded): a
                      matmul over the NCHW image, out[o, p] = sum_c w[o, c] x[c, p], by
                      packed_matmul's blocks and micro-kernel (also a group of fuse-conv-pool
                      ending in a global_avg_pool2d: each channel summed over its pixels)
    depthwise_conv    a cpu or opencl depthwise conv2d anchor (a group per channel, any window,
                      stride, dilation, padding) of enough work: vectors of consecutive output
                      positions across rows, a channel's taps in registers
    winograd_conv     a cpu or opencl 3x3 conv2d anchor of stride 1, dilation 1, one group,
                      enough channels and tiles (on opencl, enough work per image): Winograd
                      F(4x4, 3x3) or F(2x2, 3x3), a block of tile rows per work item (on
                      opencl an image), the products per tile by the micro-kernel, the epilogue
    conv_taps         a cpu or opencl conv2d anchor of stride 1, one group, few taps per output
                      (input channels x window, an image model's first conv): a block of
                      output rows per work item, the input packed, each output vector's taps
                      in registers and a chain of multiply-adds over them per output channel
                      (on opencl, also a group of fuse-conv-pool: a 2 x 2 pool in its stores)
    packed_conv       a cpu or opencl conv2d anchor of stride 1 of the result's shape: a block
                      of output rows per work item, the input packed, register blocks of
                      channels x pixels
    conv_vectors      an opencl conv2d anchor of the result's shape, unit stride across, that
                      packed_conv leaves (strided down, little work): a work item per output
                      row of a block of channels, sums in vectors
    conv_rows         a conv2d anchor of the result's shape, at least 4 wide: a work item per
                      output row (of a block of output channels), sums in scratch rows
    transposed_rows   a cpu dense/(batch_)matmul anchor of short dot products and a small rhs:
                      whole rows per work item, the rhs transposed into scratch
    packed_matmul_prepacked  packed_matmul (next) where the anchor's rhs (dense's weight) is a constant
                      of @main: it becomes a new constant in the panels' layout (marked
                      `relay.packed_from`) before lowering, and the kernel reads its panels
                      from it without packing
    packed_matmul     a cpu dense/(batch_)matmul anchor of enough work, at least 16 x 16: a
                      block of outputs per work item, both operands packed into panels, a
                      micro-kernel of vector sums (transforms/schedules/micro_kernel.py),
                      the epilogue on each block
    packed_gemv       a cpu 2-D dense of fewer rows than packed_matmul's tile, its weight a
                      constant of @main at least a panel wide: the weight pre-packed as
                      packed_matmul_prepacked packs it, a work item per group of panels,
                      every row's sums with them in registers
    packed_matmul_opencl_prepacked, packed_matmul_opencl  the same two on opencl (an opencl
                      anchor big enough for packed_matmul): its work item over blocks of
                      128 x 128, a work group each
    matmul_rows       a cpu matmul anchor (rhs [k, n]) too small for packed_matmul: whole
                      rows per work item, i-k-j order, sums in scratch
    matmul_block      a dense/(batch_)matmul anchor of the result's shape: a block of outputs
                      per work item, one loop over k with an accumulator each
    pool_windows      an opencl (or cpu, rows >= 8 wide) max/avg pool2d anchor of the result's
                      shape whose windows lie inside the input: a work item per output row,
                      the taps unrolled (opencl, windows 2 wide at stride 2 of a pool alone:
                      in vectors; cpu: chunks of 8 outputs gcc vectorises)
    concat_slices     a concatenate of the result's shape (axis before the last) read only by
                      elementwise ops: a work item per index up to the axis, the input picked
                      once by a tree of branches, a loop nest over the axes after it
    transpose_tiles   a group that only moves data and transposes the last axis away: a
                      8 x 8 tile (16 x 16 on opencl) of the result's last two axes per work item
    reshape_source    a result that is a reshape merging axes: a work item per element of
                      the reshape's input, stored where it linearises to
    elementwise       anything: a work item per element (matches every group, so last)

A schedule may rewrite the group's inputs before it is lowered (packed_matmul_prepacked's
packed constant, inserted in @main); the group is replaced by its launch right after.

Phase 3, lower: each group becomes a kernel appended to the module, in program order:

    func.func @<kernel_name>(%in0: memref<..xf32>, ..., %out0: memref<..xf32>)
        attributes {relay.se_scope = <the group's scope>, relay.schedule = "<its schedule>"}

whose body is constants, then ONE `scf.parallel` nest (the schedule's), then `func.return`.
The outermost `scf.parallel` spans the first (at most three) axes of size > 1 of the
schedule's work-item grid: it is the OpenCL NDRange, and the C kernel keeps it as loops.
Further axes get an inner `scf.parallel`, size-1 axes no loop (their index is 0), and a grid
with no axis of size > 1 a loop of extent 1 (`KernelBuilder.parallel_nest`). Values are
computed at an index by recursive "value at index" generation (`scalar_ops.GroupEmitter`):
producers are recomputed inline, anchors and reductions are `scf.for` nests with `iter_args`
in the work item; a schedule computes its anchor its own way and hands the sums over.
Padding is never read: a conv2d or pooling tap that falls on padding adds nothing, whatever
the weight (a NaN or inf weight there is not multiplied by a zero), as in `xrelay.interpret`.
Phase 4, launch: the group is replaced by `relay.launch @<kernel_name>(inputs) {se_scope}`.
A group that only reshapes (`relay.reshape`, `relay.squeeze`, `relay.expand_dims`) gets its
kernel too, but its launch is marked `relay.reshape_only` (`transforms/reshape_only.py`):
plan-memory stores its result in its input's storage and the executor graph makes it a
`__nop` node, as TVM does with reshape-only functions, so the kernel never runs. A group that
is one concatenate of its inputs is marked `relay.concat_axis = N` (`transforms/in_place_concat.py`):
plan-memory may have its inputs' producers write into its result, and then it runs nothing either.

Index arithmetic is folded as it is built but emitted where it is asked for, also inside
loops it does not depend on: `xrelay.build` runs dce, licm and cse after this pass, which
hoist it and merge the copies (see `kernel_builder.KernelBuilder`).

Ops in the kernels: scf.parallel/for/if/yield/reduce, memref.load/store/alloca, arith
constant, addf/subf/mulf/divf/negf/maximumf/minimumf, addi/subi/muli/divsi/remsi/cmpi/select,
index_cast/sitofp, math exp/log/sqrt/rsqrt/tanh/absf/erf/powf, func.return. (Index min and
max, for window bounds, are cmpi + select.) The micro-kernels (packed_matmul on cpu,
packed_matmul_opencl on opencl, winograd_conv and packed_conv on cpu and opencl) add
vector.load/store/broadcast/fma on `vector<16xf32>` (a GCC vector type in C, `float16` in
OpenCL); the opencl-only conv_vectors schedule adds vector.load/store/broadcast/insert/fma on
`vector<8xf32>`, printed as OpenCL's `float8`, and pool_windows vector.load/store/shuffle/
broadcast and arith on vectors of 2 to 16 lanes (a shuffle is a swizzle, `.s02468ace`).

Element types: int64 elements are `i64` scalars and bool elements `i1` ones (their arith ops in
`transforms/scalar_dtypes.py`); kernels' memrefs keep the tensors' element types. The anchored
schedules meet only f32 (their anchors take only f32); the data-moving ones (transpose_tiles,
reshape_source) move int64 and bool elements as they move f32 ones. A producer is computed once per
distinct index it is needed at (memoised), which is cheap for the groups fuse-ops makes; a
group whose injective ops keep asking for new indices (nested concatenates of slices of one
value) recomputes more, as inlining injective ops does in TVM.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import numpy as np
from xdsl.builder import Builder
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import MemRefType, ModuleOp, StringAttr, TensorType
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from xrelay.diagnostics import LoweringError, location_of
from xrelay.dialects import relay
from xrelay.dialects.lowered_graph import WORK_GROUP_PER_ITEM_ATTR
from xrelay.dialects.se_scope import SCOPE_ATTR, SEScopeAttr
from xrelay.transforms import in_place_concat
from xrelay.transforms.in_place_concat import concat_only_axis
from xrelay.transforms.reshape_only import is_reshape_only, mark
from xrelay.transforms.scalar_ops import GroupEmitter
from xrelay.transforms.schedules import (
    Schedule,
    attention_rows,
    concat_slices,
    conv_rows,
    conv_taps,
    conv_vectors,
    depthwise_conv,
    elementwise,
    layer_norm_rows,
    matmul_block,
    matmul_rows,
    packed_conv,
    packed_gemv,
    packed_matmul,
    packed_matmul_opencl,
    pointwise_conv,
    pool_windows,
    reshape_source,
    softmax_row,
    transpose_tiles,
    transposed_rows,
    winograd_conv,
)

PASS = "convert-relay-to-loops"
SCHEDULE_ATTR = "relay.schedule"  # the name of the kernel's schedule, for readers of the IR


@dataclass(frozen=True)
class ConvertRelayToLoopsPass(ModulePass):
    """Lowers each `relay.fused` to a kernel `func.func` and a `relay.launch` of it."""

    name = PASS

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        groups = check_preconditions(op)
        built: dict[tuple[object, ...], str] = {}  # a group's key -> the kernel built for it
        for group in groups:
            schedule = pick_schedule(group)
            if schedule.prepare is not None:
                inputs = list(group.inputs)
                schedule.prepare(group)
                release_replaced(inputs)
            key = group_key(group, schedule)
            if key is None or key not in built:
                op.body.block.add_op(build_kernel(group, schedule))
                if key is not None:
                    built[key] = kernel_name(group)
            replace_with_launch(group, built.get(key) if key is not None else None)


def release_replaced(inputs: list[SSAValue]) -> None:
    """Erases the constants among a group's former `inputs` that a schedule's `prepare`
    replaced (a weight by its packed form) and nothing reads any more, and drops their values
    at once: an erased op is a reference cycle (its result names it), which Python frees only
    at a full collection, and dce would keep every original beside its packed copy until
    then (BERT-base: 290 MB more at the build's peak)."""
    for value in inputs:
        owner = value.owner
        if isinstance(owner, relay.ConstantOp) and owner.parent is not None and not owner.res.uses:
            Rewriter.erase_op(owner)
            del owner.properties["value"]


def group_key(group: relay.FusedOp, schedule: Schedule) -> tuple[object, ...] | None:
    """What `build_kernel` makes of a group depends on: its schedule, scope, attributes, result
    type, its ops (names, operands by position, result types, attributes), and each input's
    type and producer (an op name; for a constant its splat value and markers, not the
    weights). Groups with one key get one kernel: a model's repeated blocks (BERT-base: 181
    groups, 12 kernels) are lowered and emitted once. None when the body reads a value from
    outside it (then it is lowered on its own)."""
    numbers: dict[SSAValue, int] = {arg: i for i, arg in enumerate(group.body.block.args)}
    ops: list[tuple[object, ...]] = []
    for inner in group.body.block.ops:
        if any(o not in numbers for o in inner.operands):
            return None
        ops.append((inner.name, tuple(numbers[o] for o in inner.operands), _described(inner)))
        numbers.update((r, len(numbers)) for r in inner.results)
    properties = {k: v for k, v in group.properties.items() if k != "kernel_name"}
    inputs = tuple((str(v.type), _producer(v)) for v in group.inputs)
    return (schedule.name, str(properties), str(group.attributes), str(group.res.type), inputs, tuple(ops))


def _described(op: Operation) -> str:
    return f"{[str(r.type) for r in op.results]} {op.properties} {op.attributes}"


def _producer(value: SSAValue) -> str:
    owner = value.owner
    if isinstance(owner, relay.ConstantOp):
        values = np.frombuffer(owner.value.data.data, dtype=np.uint32)  # (xDSL's is_splat: a list)
        splat = f"splat {values[0]}" if values.size and bool((values == values[0]).all()) else "weights"
        return f"constant {splat} {owner.attributes}"
    return owner.name if isinstance(owner, Operation) else "argument"


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
            symbols.add(kernel_name(op))
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


# --- Phase 2: pick --------------------------------------------------------------------------

# First match wins; the elementwise nest matches every group.
SCHEDULES: tuple[Schedule, ...] = (
    attention_rows.SCHEDULE,
    softmax_row.SCHEDULE,
    layer_norm_rows.SCHEDULE,
    pointwise_conv.SCHEDULE,
    depthwise_conv.SCHEDULE,
    winograd_conv.SCHEDULE,
    conv_taps.SCHEDULE,
    packed_conv.SCHEDULE,
    conv_vectors.SCHEDULE,
    conv_rows.SCHEDULE,
    transposed_rows.SCHEDULE,
    packed_matmul.PREPACKED,
    packed_matmul.SCHEDULE,
    packed_gemv.SCHEDULE,
    packed_matmul_opencl.PREPACKED,
    packed_matmul_opencl.SCHEDULE,
    matmul_rows.SCHEDULE,
    matmul_block.SCHEDULE,
    pool_windows.SCHEDULE,
    concat_slices.SCHEDULE,
    transpose_tiles.SCHEDULE,
    reshape_source.SCHEDULE,
    elementwise.SCHEDULE,
)


def pick_schedule(group: relay.FusedOp) -> Schedule:
    return next(s for s in SCHEDULES if s.matches(group))


# --- Phase 3: lower -------------------------------------------------------------------------


def kernel_name(group: relay.FusedOp) -> str:
    """The group's kernel name (present: checked in phase 1)."""
    name = group.kernel
    assert name is not None
    return name


def group_scope(group: relay.FusedOp) -> SEScopeAttr:
    """The group's scope (present: checked in phase 1)."""
    scope = group.se_scope
    assert scope is not None
    return scope


def memref_of(ty: Attribute) -> MemRefType[Attribute]:
    assert isinstance(ty, TensorType)
    element: Attribute = cast(TensorType[Attribute], ty).get_element_type()
    return MemRefType(element, ty.get_shape())


def build_kernel(group: relay.FusedOp, schedule: Schedule) -> func.FuncOp:
    """`func.func @<kernel_name>(ins..., out)`: the schedule's parallel nest storing the group's result."""
    types = [memref_of(v.type) for v in group.inputs] + [memref_of(group.res.type)]
    kernel = func.FuncOp(kernel_name(group), (types, []))
    kernel.attributes[SCOPE_ATTR] = group_scope(group)
    kernel.attributes[SCHEDULE_ATTR] = StringAttr(schedule.name)
    block = kernel.body.block
    *ins, out = block.args
    for i, arg in enumerate(ins):
        arg.name_hint = f"in{i}"
    out.name_hint = "out0"
    emitter = GroupEmitter(Builder(InsertPoint.at_end(block)), dict(zip(group.body.block.args, ins)))
    nest = schedule.build(emitter, group, out)
    block.add_ops([nest, func.ReturnOp()])
    if (mark := nest.attributes.pop(WORK_GROUP_PER_ITEM_ATTR, None)) is not None:
        kernel.attributes[WORK_GROUP_PER_ITEM_ATTR] = mark  # launched in groups of one item
    return kernel


# --- Phase 4: launch ------------------------------------------------------------------------


def replace_with_launch(group: relay.FusedOp, kernel: str | None = None) -> None:
    """Replaces `group` by a launch of its kernel (or of `kernel`, built for an equal group)."""
    callee = kernel or kernel_name(group)
    launch = relay.LaunchOp(callee, list(group.inputs), group.res.type, group_scope(group))
    if is_reshape_only(group):
        mark(launch)
    if (axis := concat_only_axis(group)) is not None:
        in_place_concat.mark(launch, axis)
    Rewriter.replace_op(group, launch)
