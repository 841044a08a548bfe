"""
The C-style kernel emitter that C and OpenCL C share (tinygrad's `CStyleLanguage` shape).

Input: a kernel made by convert-relay-to-loops (and, for OpenCL, split-reductions),

    func.func @fused_add(%in0: memref<4x8xf32>, %in1: memref<8xf32>, %out0: memref<4x8xf32>)
        attributes {relay.se_scope = #relay.se_scope<...>} {
      <arith.constant ops>
      "scf.parallel"(...) ({ ^bb0(%i: index, %j: index): ... scf.reduce })
      func.return
    }

whose body is one top-level `scf.parallel` nest over scf.for/scf.if/scf.parallel,
memref.load/store/alloca, arith and math, and vector ops: in OpenCL vector.broadcast/insert/
reduction on `vector<16xf32>` from split-reductions, vector.load/store/broadcast/fma
(vector loads and stores through `xr_floatNu` pointers, `fma`) from the conv_vectors schedule and the micro-kernels
(packed_conv, packed_matmul_opencl), and vector.shuffle (swizzles `.s02468ace`) from
pool_windows; in C vector.load/store/broadcast/fma on
`vector<16xf32>` (GCC vector types) from the micro-kernels. Output: one C-style function per kernel. Memrefs are flat pointers
indexed with linearised row-major strides; constants are inlined as literals; every other
value is a local variable named after its SSA name.

What the two languages differ in are class attributes of a `CStyleEmitter` subclass (see
`targets/c.py`, `targets/opencl.py`): the kernel qualifier, the address-space prefix and pointer
qualifier of buffers, how the outermost parallel dimensions are obtained (`for` loops in C,
`get_global_id` with a bounds check in OpenCL), the spelling of each arithmetic op
(`code_for_op`, e.g. `expf` against `exp`), the vector widths the language has (OpenCL's
`float16`; C's 16-lane GCC vector type, used whole) and the spelling of vector loads,
stores and broadcasts, and the lines that let the compiler reorder a pure reduction loop (C's `#pragma omp simd reduction`, `reduction_pragma`).

The emitter prints every op it is given: dead values are removed before it, by `dce` in
the pipeline. Unused parameters and loop results are cast to void, so gcc -Wall -Wextra is
quiet. Ops are printed by a `singledispatchmethod` with one overload per op class, like
xDSL's WGSL printer; an op no overload or `code_for_op` entry knows is a `LoweringError`
naming the op and the target.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence
from functools import singledispatchmethod
from typing import ClassVar, NoReturn

import numpy as np
from xdsl.dialects import arith, func, memref, scf, vector
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import (
    Float32Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    NoneAttr,
    VectorType,
    i1,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue, Use

from xrelay.diagnostics import LoweringError, location_of
from xrelay.dialects import cpu, relay
from xrelay.dialects.lowered_graph import WORK_GROUP_PER_ITEM_ATTR
from xrelay.dialects.reductions import reduction_combines
from xrelay.dialects.se_scope import SCOPE_ATTR, SEScopeAttr
from xrelay.runtime.device_kinds import DEVICE_KINDS
from xrelay.targets.vector_math import helper_text

# OpenCL has at most three NDRange dimensions; deeper nests merge their leading dimensions.
MAX_NDRANGE_DIMS = 3

# relay ops that may stay in a lowered module (the graph around the kernels).
GRAPH_OPS = (relay.LaunchOp, relay.ConstantOp, relay.DeviceCopyOp)

Expr = Callable[..., str]


# --- finding the kernels of a lowered module ------------------------------------------------


def lowered_kernels(module: ModuleOp, target: str) -> list[func.FuncOp]:
    """The kernel functions of a lowered module, in module order.

    Raises a `LoweringError` at the first relay op that lowering should have removed.
    """
    for op in module.walk():
        if isinstance(op, relay.FusedOp | relay.RelayOp) and not isinstance(op, GRAPH_OPS):
            _fail(
                op,
                f"the {target} target expects a lowered module, but found '{op.name}' at "
                f"{location_of(op)}; run convert-relay-to-loops first "
                "(e.g. -p 'plan-devices,fuse-ops,convert-relay-to-loops')",
            )
    return [
        op
        for op in module.ops
        if isinstance(op, func.FuncOp) and isinstance(op.attributes.get(SCOPE_ATTR), SEScopeAttr)
    ]


def kernels_in_language(module: ModuleOp, language: str) -> list[func.FuncOp]:
    """The kernels of a lowered module whose scope's device kind writes kernels in `language`
    (the `-t` target named after it prints them), in module order."""
    kinds = {kind.name for kind in DEVICE_KINDS if kind.language == language}
    return [k for k in lowered_kernels(module, language) if kernel_scope(k).device in kinds]


def kernel_scope(kernel: func.FuncOp) -> SEScopeAttr:
    scope = kernel.attributes[SCOPE_ATTR]
    assert isinstance(scope, SEScopeAttr)
    return scope


def _fail(op: Operation, message: str) -> NoReturn:
    op.emit_error(message, LoweringError(message))
    raise AssertionError("emit_error raises")


# --- the structure of a kernel --------------------------------------------------------------


def outer_parallel(kernel: func.FuncOp, target: str) -> scf.ParallelOp | None:
    """The kernel's one top-level scf.parallel (None for a kernel without one)."""
    nests = [op for op in kernel.body.block.ops if isinstance(op, scf.ParallelOp)]
    if len(nests) > 1:
        _fail(
            nests[1],
            f"the {target} target expects one top-level scf.parallel in kernel "
            f"@{kernel.sym_name.data}, but found {len(nests)}",
        )
    return nests[0] if nests else None


def constant_index(value: SSAValue, target: str) -> int:
    """The value of an index constant (bounds of the outermost parallel must be constants)."""
    op = value.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        return op.value.value.data
    if isinstance(op, Operation):
        _fail(
            op,
            f"the {target} target expects constant bounds on the top-level scf.parallel, "
            f"but found one computed by '{op.name}' at {location_of(op)}",
        )
    parent = op.parent_op()
    assert parent is not None
    _fail(
        parent, f"the {target} target expects constant bounds on the top-level scf.parallel, but found a block argument"
    )


def trip_counts(loop: scf.ParallelOp, target: str) -> tuple[int, ...]:
    counts = []
    for lb, ub, step in zip(loop.lowerBound, loop.upperBound, loop.step):
        lo, hi, st = (constant_index(v, target) for v in (lb, ub, step))
        counts.append(max(0, -(-(hi - lo) // st)))
    return tuple(counts)


def ndrange_groups(rank: int) -> list[list[int]]:
    """The parallel dims each NDRange dim covers, innermost first: NDRange dim 0 is the last
    (contiguous) loop dim, so neighbouring work-items touch neighbouring elements, which is
    what OpenCL implementations vectorise and coalesce (on PoCL 10-60x faster than the
    outermost dim first: bench/opencl_ndrange.py). Beyond three dims, the leading loop dims
    share the last NDRange dim.
    """
    if rank <= MAX_NDRANGE_DIMS:
        return [[d] for d in reversed(range(rank))]
    merged = rank - MAX_NDRANGE_DIMS + 1
    return [*([d] for d in reversed(range(merged, rank))), list(range(merged))]


def global_size(kernel: func.FuncOp, target: str) -> tuple[int, ...]:
    """The NDRange of a kernel: the trip counts of its outermost scf.parallel, innermost first.

    Leading dimensions merge into one when there are more than three (OpenCL's limit); a
    kernel without a parallel nest (or with a 0-d one) runs as one work-item.
    """
    loop = outer_parallel(kernel, target)
    counts = trip_counts(loop, target) if loop is not None else ()
    if not counts:
        return (1,)
    return tuple(math.prod(counts[d] for d in group) for group in ndrange_groups(len(counts)))


def local_size(kernel: func.FuncOp, target: str) -> tuple[int, ...] | None:
    """The work-group shape of a kernel's launch: one work item per group for a kernel marked
    WORK_GROUP_PER_ITEM_ATTR, else None (the device chooses)."""
    if WORK_GROUP_PER_ITEM_ATTR not in kernel.attributes:
        return None
    return (1,) * len(global_size(kernel, target))


# --- literals and types ---------------------------------------------------------------------


def float_literal(value: float) -> str:
    if math.isnan(value):
        return "NAN"
    if math.isinf(value):
        return "INFINITY" if value > 0 else "(-INFINITY)"
    text = f"{np.float32(value):.9g}"
    if not any(c in text for c in ".e"):
        text += ".0"
    return f"({text}f)" if text.startswith("-") else f"{text}f"


def int_literal(value: int) -> str:
    return f"({value})" if value < 0 else str(value)


def row_major_strides(shape: Sequence[int]) -> list[int]:
    strides, acc = [], 1
    for size in reversed(shape):
        strides.append(acc)
        acc *= size
    return strides[::-1]


# --- the emitter ----------------------------------------------------------------------------


class CStyleEmitter:
    """Prints one kernel `func.func` as a C-style function; subclasses set the language."""

    # --- what the languages differ in (class attributes) ---
    target: ClassVar[str]  # the -t name, used in messages
    header: ClassVar[str]  # text before the kernels of a translation unit
    kernel_prefix: ClassVar[str]  # "void" / "__kernel void"
    buffer_prefix: ClassVar[str] = ""  # address space of the pointer arguments
    pointer_qualifier: ClassVar[str] = ""  # "restrict" in C
    # Format of the i-th NDRange index ("get_global_id({})"), or None for `for` loops.
    global_id: ClassVar[str | None] = None
    index_type: ClassVar[str] = "long"
    # How a buffer stores a bool (i1) element: one byte, 0 or 1, as numpy's bool.
    bool_storage: ClassVar[str] = "unsigned char"
    # Lines before an innermost loop whose iter_args are reductions ({} = one clause per
    # variable, `reduction(+:acc)`), letting the compiler reorder them and vectorise; or None.
    reduction_pragma: ClassVar[tuple[str, ...] | None] = None
    # Pure ops as expressions over their operands' C expressions.
    code_for_op: ClassVar[dict[type[Operation], Expr]]
    # The lane counts of the language's float vector types (OpenCL's `float16`, C's 16).
    vector_widths: ClassVar[tuple[int, ...]] = ()
    vector_lanes: ClassVar[bool] = True  # whether a vector's single lanes can be read or set
    # The maths helpers of `targets/vector_math.py` this language may call, and its prelude.
    helper_names: ClassVar[tuple[str, ...]] = ()
    helper_prelude: ClassVar[str] = ""

    def __init__(self, kernel: func.FuncOp):
        self.kernel = kernel
        self.lines: list[str] = []
        self.depth = 0
        self.names: dict[SSAValue, str] = {}
        self.next_number = 0

    # --- entry point ---

    @classmethod
    def render_kernel(cls, kernel: func.FuncOp) -> str:
        emitter = cls(kernel)
        emitter.emit_kernel()
        return "\n".join(emitter.lines) + "\n"

    @classmethod
    def render_unit(cls, kernels: Iterable[func.FuncOp]) -> str:
        """A complete translation unit: the header, then each kernel."""
        bodies = [cls.render_kernel(k) for k in kernels]
        parts = [part for part in (cls.header, cls.prelude_for("".join(bodies))) if part]
        return "\n".join([*parts, *bodies])

    @classmethod
    def prelude_for(cls, text: str) -> str:
        """What the kernels `text` of a unit need declared or defined before them: the maths
        helpers they call."""
        return helper_text(text, cls.helper_prelude, cls.helper_names)

    # --- helpers ---

    def line(self, text: str) -> None:
        self.lines.append("  " * self.depth + text)

    def fail(self, op: Operation, message: str) -> NoReturn:
        _fail(op, f"the {self.target} target {message}")

    def c_type(self, ty: Attribute, op: Operation) -> str:
        if isinstance(ty, Float32Type):
            return "float"
        if isinstance(ty, IndexType):
            return self.index_type
        if isinstance(ty, IntegerType) and ty.width.data in (1, 32):
            return "int"  # C's comparisons yield int; i1 values stay 0 or 1
        if isinstance(ty, IntegerType) and ty.width.data == 64:
            return "long"
        if isinstance(ty, VectorType):
            return self.vector_type(ty, op)
        self.fail(op, f"cannot represent type {ty} (in '{op.name}' at {location_of(op)})")

    def storage_type(self, element: Attribute, op: Operation) -> str:
        """The type of a buffer's elements: a bool's is a byte (`bool_storage`), not `int`."""
        if element == i1:
            return self.bool_storage
        return self.c_type(element, op)

    def expr(self, value: SSAValue) -> str:
        """The C expression of a value: a literal for constants, else its variable."""
        op = value.owner
        if isinstance(op, arith.ConstantOp):
            return self.constant(op)
        return self.names[value]

    def constant(self, op: arith.ConstantOp) -> str:
        attr = op.value
        if isinstance(attr, FloatAttr):
            return float_literal(attr.value.data)
        if isinstance(attr, IntegerAttr) and attr.type == i1:
            return "1" if attr.value.data else "0"  # i1's true reads as -1
        if isinstance(attr, IntegerAttr):
            return int_literal(attr.value.data)
        self.fail(op, f"cannot print the constant {attr} at {location_of(op)}")

    def declare(self, value: SSAValue, prefix: str = "v") -> str:
        """Gives `value` a fresh C name (its SSA name plus a number, so none collide)."""
        hint = re.sub(r"\W", "_", value.name_hint or "")
        number = self.next_number = max(len(self.names), self.next_number)
        self.next_number += 1
        name = f"{hint}_{number}" if hint else f"{prefix}{number}"
        self.names[value] = name
        return name

    def assign(self, value: SSAValue, rhs: str, op: Operation) -> None:
        self.line(f"{self.c_type(value.type, op)} {self.declare(value)} = {rhs};")

    def index(self, ref: SSAValue, indices: Sequence[SSAValue]) -> str:
        """The linear row-major offset of `indices` in `ref`: each index's variable times its
        stride, and one constant offset gathering the constant indices and the constants
        added to an index (`split_constant`)."""
        ty = ref.type
        assert isinstance(ty, MemRefType)
        terms, offset = [], 0
        for idx, stride in zip(indices, row_major_strides(ty.get_shape())):
            variable, constant = split_constant(idx)
            offset += constant * stride
            if variable is None:
                continue
            e = self.expr(variable)
            terms.append(e if stride == 1 else f"{e} * {stride}")
        if offset != 0 or not terms:
            terms.append(str(offset))
        return " + ".join(terms)

    def body(self, block: Block) -> None:
        self.depth += 1
        for op in block.ops:
            self.emit(op)
        self.depth -= 1

    def loop_pragmas(self, op: scf.ForOp) -> tuple[str, ...]:
        """Lines before the `for` of `op` that tell the compiler how to treat it (none here)."""
        return ()

    def for_loop(self, iv: SSAValue, lb: SSAValue, ub: SSAValue, step: SSAValue) -> None:
        i = self.declare(iv, "i")
        inc = f"{i}++" if self.expr(step) == "1" else f"{i} += {self.expr(step)}"
        self.line(f"for ({self.index_type} {i} = {self.expr(lb)}; {i} < {self.expr(ub)}; {inc}) {{")

    def discard_unused(self, values: Iterable[SSAValue]) -> None:
        """`(void)x;` for each unused variable, so gcc -Wall -Wextra stays quiet."""
        for v in values:
            if not v.uses:
                self.line(f"(void){self.names[v]};")

    # --- the function ---

    def emit_kernel(self) -> None:
        kernel = self.kernel
        outer_parallel(kernel, self.target)  # checks there is at most one
        params = [self.parameter(arg, i, len(kernel.args)) for i, arg in enumerate(kernel.args)]
        self.line(f"{self.function_prefix(kernel)} {kernel.sym_name.data}({', '.join(params)}) {{")
        self.depth += 1
        self.discard_unused(kernel.args)  # -Wextra warns about unused parameters
        for op in kernel.body.block.ops:
            if isinstance(op, scf.ParallelOp):
                self.emit_outer_parallel(op)
            else:
                self.emit(op)
        self.depth -= 1
        self.line("}")

    def function_prefix(self, kernel: func.FuncOp) -> str:
        """What precedes the kernel's name: its return type and qualifiers."""
        return self.kernel_prefix

    def parameter(self, arg: SSAValue, position: int, count: int) -> str:
        ty = arg.type
        if not isinstance(ty, MemRefType) or any(d < 0 for d in ty.get_shape()):
            self.fail(
                self.kernel,
                f"expects kernel arguments of static memref type, but @{self.kernel.sym_name.data} has {ty}",
            )
        if not isinstance(ty.layout, NoneAttr):
            self.fail(self.kernel, f"expects row-major memrefs without a layout, but found {ty}")
        is_output = position == count - 1
        name = "out0" if is_output else f"in{position}"
        self.names[arg] = name
        const = "" if is_output else "const "
        elt = self.storage_type(ty.element_type, self.kernel)
        return f"{self.buffer_prefix}{const}{elt} *{self.pointer_qualifier}{name}"

    def emit_outer_parallel(self, op: scf.ParallelOp) -> None:
        if self.global_id is None:
            self.emit(op)
            return
        if op.initVals:
            self.fail(op, "cannot map a top-level scf.parallel with reductions onto the NDRange")
        counts = trip_counts(op, self.target)
        ivs = op.body.block.args
        for ndim, group in enumerate(ndrange_groups(len(ivs))):
            gid = f"gid{ndim}"
            total = math.prod(counts[d] for d in group)
            self.line(f"const {self.index_type} {gid} = {self.global_id.format(ndim)};")
            self.line(f"if ({gid} >= {total}) return;")
            for k, d in enumerate(group):
                inner = math.prod(counts[e] for e in group[k + 1 :])
                pos = gid if inner == 1 else f"{gid} / {inner}"
                if k > 0:
                    pos = f"({pos}) % {counts[d]}" if inner != 1 else f"{gid} % {counts[d]}"
                lb, step = self.expr(op.lowerBound[d]), self.expr(op.step[d])
                if step != "1":
                    pos = f"({pos}) * {step}" if " " in pos else f"{pos} * {step}"
                if lb != "0":
                    pos = f"{lb} + {pos}"
                self.line(f"const {self.index_type} {self.declare(ivs[d], 'i')} = {pos};")
        for inner_op in op.body.block.ops:
            self.emit(inner_op)

    # --- one overload per op class ---

    @singledispatchmethod
    def emit(self, op: Operation) -> None:
        self.emit_expression(op)

    def emit_expression(self, op: Operation) -> None:
        """`op`'s result, declared and set to the language's spelling of `op` (`code_for_op`)."""
        expression = NO_NAN_CODE[type(op)] if assumes_no_nans(op) else self.code_for_op.get(type(op))
        if expression is None or len(op.results) != 1:
            self.fail(op, f"cannot emit '{op.name}' at {location_of(op)}")
        self.assign(op.results[0], expression(*(self.expr(v) for v in op.operands)), op)

    @emit.register
    def _(self, op: arith.AddiOp) -> None:
        """An index plus a constant read only as a load's or store's index is not declared:
        `index` prints its variable and adds the constant to the offset."""
        if split_constant(op.result)[0] in (None, op.result) or not all(only_indexes(u) for u in op.result.uses):
            self.emit_expression(op)

    @emit.register
    def _(self, op: arith.ConstantOp) -> None:
        self.constant(op)  # inlined where used; checks that it is printable

    @emit.register
    def _(self, op: arith.CmpfOp) -> None:
        predicate = arith.CMPF_COMPARISON_OPERATIONS[op.predicate.value.data]
        self.assign(op.result, CMPF[predicate](self.expr(op.lhs), self.expr(op.rhs)), op)

    @emit.register
    def _(self, op: arith.CmpiOp) -> None:
        predicate = arith.CMPI_COMPARISON_OPERATIONS[op.predicate.value.data]
        lhs, rhs = self.expr(op.lhs), self.expr(op.rhs)
        if predicate.startswith("u"):
            lhs, rhs = f"(unsigned long){lhs}", f"(unsigned long){rhs}"
        self.assign(op.result, f"{lhs} {CMPI[predicate]} {rhs}", op)

    @emit.register
    def _(self, op: arith.IndexCastOp | arith.SIToFPOp | arith.FPToSIOp | arith.ExtUIOp) -> None:
        self.assign(op.result, f"({self.c_type(op.result.type, op)}){self.expr(op.input)}", op)

    @emit.register
    def _(self, op: arith.UIToFPOp) -> None:
        self.assign(op.result, f"(float)(unsigned long){self.expr(op.input)}", op)

    @emit.register
    def _(self, op: func.ReturnOp) -> None:
        pass  # the kernel's last op: the closing brace returns

    @emit.register
    def _(self, op: memref.LoadOp) -> None:
        self.assign(op.res, f"{self.names[op.memref]}[{self.index(op.memref, op.indices)}]", op)

    @emit.register
    def _(self, op: memref.StoreOp) -> None:
        if op.memref in self.kernel.args[:-1]:
            self.fail(
                op,
                f"expects stores only into the output or scratch buffers, but "
                f"'memref.store' at {location_of(op)} writes input {self.names[op.memref]}",
            )
        target = f"{self.names[op.memref]}[{self.index(op.memref, op.indices)}]"
        self.line(f"{target} = {self.expr(op.value)};")

    @emit.register
    def _(self, op: cpu.PrefetchOp) -> None:
        line = self.prefetch_line(self.names[op.memref], self.index(op.memref, op.indices))
        if line:
            self.line(line)

    def prefetch_line(self, buffer: str, index: str) -> str | None:
        """The statement of a `cpu.prefetch` of `buffer[index]`, or None to drop the hint."""
        return None

    @emit.register
    def _(self, op: memref.AllocaOp) -> None:
        ty = op.memref.type
        assert isinstance(ty, MemRefType)
        if op.dynamic_sizes or any(d < 0 for d in ty.get_shape()):
            self.fail(op, f"expects scratch buffers of static shape, but found {ty}")
        elt = self.storage_type(ty.element_type, op)
        self.line(f"{elt} {self.declare(op.memref, 'buf')}[{max(1, math.prod(ty.get_shape()))}];")

    @emit.register
    def _(self, op: scf.ForOp) -> None:
        iv, *carried = op.body.block.args
        for init, arg, res in zip(op.iter_args, carried, op.res):
            self.assign(res, self.expr(init), op)
            self.names[arg] = self.names[res]  # the carried value is the result's variable
        combines = reduction_combines(op)
        operators = None if combines is None else [pragma_operator(c) for c in combines]
        if self.reduction_pragma is not None and operators is not None and None not in operators:
            clauses = " ".join(f"reduction({o}:{self.names[r]})" for o, r in zip(operators, op.res))
            for text in self.reduction_pragma:
                self.line(text.format(clauses))
        for text in self.loop_pragmas(op):
            self.line(text)
        self.for_loop(iv, op.lb, op.ub, op.step)
        self.body(op.body.block)
        self.line("}")
        self.discard_unused(op.res)

    @emit.register
    def _(self, op: scf.ParallelOp) -> None:
        """An inner nest (or any nest in C): plain loops; reductions fold into accumulators."""
        block = op.body.block
        for init, res in zip(op.initVals, op.res):
            self.assign(res, self.expr(init), op)
        for iv, lb, ub, step in zip(block.args, op.lowerBound, op.upperBound, op.step):
            self.for_loop(iv, lb, ub, step)
            self.depth += 1
        for inner in block.ops:
            self.emit(inner)
        for _ in block.args:
            self.depth -= 1
            self.line("}")
        self.discard_unused(op.res)

    @emit.register
    def _(self, op: scf.ReduceOp) -> None:
        parent = op.parent_op()
        assert isinstance(parent, scf.ParallelOp)
        for value, region, acc in zip(op.args, op.reductions, parent.res):
            lhs, rhs = region.block.args
            self.names[lhs], self.names[rhs] = self.names[acc], self.expr(value)
            self.line("{")
            self.body(region.block)
            self.line("}")

    @emit.register
    def _(self, op: scf.ReduceReturnOp) -> None:
        reduce = op.parent_op()
        assert isinstance(reduce, scf.ReduceOp)
        parallel = reduce.parent_op()
        assert isinstance(parallel, scf.ParallelOp)
        region = op.parent_region()
        index = list(reduce.reductions).index(region)
        self.line(f"{self.names[parallel.res[index]]} = {self.expr(op.result)};")

    @emit.register
    def _(self, op: scf.IfOp) -> None:
        for res in op.output:
            self.line(f"{self.c_type(res.type, op)} {self.declare(res)};")
        self.line(f"if ({self.expr(op.cond)}) {{")
        self.body(op.true_region.block)
        if op.false_region.blocks and op.false_region.block.ops:
            self.line("} else {")
            self.body(op.false_region.block)
        self.line("}")
        self.discard_unused(op.output)

    @emit.register
    def _(self, op: scf.YieldOp) -> None:
        # scf.for and scf.if are the only parents left: every other is rejected before its body
        parent = op.parent_op()
        targets = parent.res if isinstance(parent, scf.ForOp) else parent.output
        self.parallel_assign([self.names[t] for t in targets], [self.expr(v) for v in op.operands], op)

    def parallel_assign(self, targets: list[str], values: list[str], op: Operation) -> None:
        """`targets = values` all at once: through temporaries when a value is another target."""
        pairs = [(t, v) for t, v in zip(targets, values) if t != v]
        if not any(v in targets for _, v in pairs):
            for t, v in pairs:
                self.line(f"{t} = {v};")
            return
        types = [self.c_type(r.type, op) for r in op.operands]
        temps = [f"tmp_{t}" for t, _ in pairs]
        kept = [ty for ty, t, v in zip(types, targets, values) if t != v]
        for ty, tmp, (_, v) in zip(kept, temps, pairs):
            self.line(f"{ty} {tmp} = {v};")
        for tmp, (t, _) in zip(temps, pairs):
            self.line(f"{t} = {tmp};")

    # --- vectors: OpenCL's float2..16 (split-reductions), C's 16 lanes (the micro-kernels of
    # transforms/schedules/micro_kernel.py) ---

    def require_vectors(self, op: Operation, lanes: bool = False) -> None:
        """Fails unless the language has vectors (and, with `lanes`, access to their lanes:
        OpenCL's `.s0`, `.lo`; C's vectors are used whole only)."""
        if not self.vector_widths:
            self.fail(
                op,
                f"cannot emit '{op.name}' at {location_of(op)}: {self.target} kernels have "
                "no vector types (split-reductions vectorises opencl kernels only)",
            )
        if lanes and not self.vector_lanes:
            self.fail(op, f"cannot emit '{op.name}' at {location_of(op)}: {self.target} vectors have no lane access")

    def vector_type_name(self, lanes: int) -> str:
        return f"float{lanes}"

    def broadcast_expr(self, type_name: str, scalar: str, lanes: int) -> str:
        return f"({type_name})({scalar})"

    def fma_expr(self, type_name: str, a: str, b: str, c: str) -> str:
        """The language's fused multiply-add of vectors of type `type_name`, lane by lane."""
        return f"fma({a}, {b}, {c})"

    def vector_load_expr(self, type_name: str, address: str, space: str) -> str:
        """The language's load of a vector of type `type_name` from the consecutive floats at
        `address` (a pointer into the address space `space`)."""
        raise NotImplementedError

    def vector_store_line(self, type_name: str, address: str, space: str, value: str) -> str:
        """The language's statement storing vector `value` at `address` (as for loads)."""
        raise NotImplementedError

    def vector_address(self, ref: SSAValue, indices: Sequence[SSAValue]) -> str:
        return f"&{self.names[ref]}[{self.index(ref, indices)}]"

    def address_space(self, ref: SSAValue) -> str:
        """The address space qualifier of a pointer into `ref` (with a trailing space): the
        pointer arguments' `buffer_prefix`, none for scratch."""
        return self.buffer_prefix if ref in self.kernel.args else ""

    @emit.register
    def _(self, op: vector.LoadOp) -> None:
        """N consecutive elements (a schedule's row of lanes), loaded through a vector pointer
        (`vector_load_expr`)."""
        ty = op.result.type
        address, space = self.vector_address(op.base, op.indices), self.address_space(op.base)
        self.assign(op.result, self.vector_load_expr(self.c_type(ty, op), address, space), op)

    @emit.register
    def _(self, op: vector.FMAOp) -> None:
        a, b, c = (self.expr(v) for v in op.operands)
        self.assign(op.res, self.fma_expr(self.c_type(op.res.type, op), a, b, c), op)

    @emit.register
    def _(self, op: vector.StoreOp) -> None:
        if op.base in self.kernel.args[:-1]:
            self.fail(
                op,
                f"expects stores only into the output or scratch buffers, but "
                f"'vector.store' at {location_of(op)} writes input {self.names[op.base]}",
            )
        ty, address, space = op.vector.type, self.vector_address(op.base, op.indices), self.address_space(op.base)
        self.line(self.vector_store_line(self.c_type(ty, op), address, space, self.expr(op.vector)))

    def vector_type(self, ty: VectorType, op: Operation) -> str:
        self.require_vectors(op)
        shape = ty.get_shape()
        if len(shape) != 1 or shape[0] not in self.vector_widths or not isinstance(ty.element_type, Float32Type):
            self.fail(
                op,
                f"cannot represent type {ty} (in '{op.name}' at {location_of(op)}); "
                f"its vectors are of f32 with {', '.join(map(str, self.vector_widths))} lanes",
            )
        return self.vector_type_name(shape[0])

    def lanes_of(self, ty: Attribute, op: Operation) -> int:
        assert isinstance(ty, VectorType)
        self.vector_type(ty, op)
        return ty.get_shape()[0]

    def in_constructor(self, op: vector.BroadcastOp | vector.InsertOp) -> bool:
        """Whether `op` only starts an insert chain of its block: its vector is then printed
        with the chain's last insert, as one constructor `(float16)(a, b, ...)`."""
        user = op.results[0].get_user_of_unique_use()
        if not isinstance(user, vector.InsertOp) or user.dest is not op.results[0]:
            return False
        scalar = isinstance(op, vector.InsertOp) or not isinstance(op.source.type, VectorType)
        return scalar and user.parent_block() is op.parent_block()

    def lane_exprs(self, op: vector.InsertOp) -> list[str]:
        """The expression of each lane of `op`'s vector, through the chain printed with it."""
        width = self.lanes_of(op.result.type, op)
        start = op.dest.owner
        if isinstance(start, vector.InsertOp) and self.in_constructor(start):
            lanes = self.lane_exprs(start)
        elif isinstance(start, vector.BroadcastOp) and self.in_constructor(start):
            lanes = [self.expr(start.source)] * width
        else:
            lanes = [f"{self.expr(op.dest)}.s{lane:x}" for lane in range(width)]
        position = op.static_position.get_values()
        if op.dynamic_position or len(position) != 1 or isinstance(op.source.type, VectorType):
            self.fail(
                op, f"cannot emit '{op.name}' at {location_of(op)}: only a scalar at a constant lane of a 1-d vector"
            )
        lanes[position[0]] = self.expr(op.source)
        return lanes

    @emit.register
    def _(self, op: vector.BroadcastOp) -> None:
        self.require_vectors(op)
        if isinstance(op.source.type, VectorType):
            self.fail(op, f"cannot emit '{op.name}' of a vector at {location_of(op)}")
        if not self.in_constructor(op):
            ty = op.vector.type
            rhs = self.broadcast_expr(self.c_type(ty, op), self.expr(op.source), self.lanes_of(ty, op))
            self.assign(op.vector, rhs, op)

    @emit.register
    def _(self, op: vector.InsertOp) -> None:
        self.require_vectors(op, lanes=True)
        if not self.in_constructor(op):
            lanes = ", ".join(self.lane_exprs(op))
            self.assign(op.result, f"({self.c_type(op.result.type, op)})({lanes})", op)

    @emit.register
    def _(self, op: vector.ShuffleOp) -> None:
        """Lanes picked from two 1-d vectors (`mask` numbers v1's lanes, then v2's): one
        swizzle (`(v).s02468ace`) where they all come from one of them, else a constructor
        of the picked lanes."""
        self.require_vectors(op, lanes=True)
        width = self.lanes_of(op.v1.type, op)
        self.lanes_of(op.v2.type, op)
        picks = [(op.v1, i) if i < width else (op.v2, i - width) for i in op.mask.get_values()]
        if len({value for value, _ in picks}) == 1:
            rhs = f"({self.expr(picks[0][0])}).s{''.join(f'{lane:x}' for _, lane in picks)}"
        else:
            lanes = ", ".join(f"({self.expr(value)}).s{lane:x}" for value, lane in picks)
            rhs = f"({self.c_type(op.result.type, op)})({lanes})"
        self.assign(op.result, rhs, op)

    @emit.register
    def _(self, op: vector.ReductionOp) -> None:
        """A scalar that combines the lanes: by halves (`.lo`, `.hi`, each a named vector, so
        the combines stay vector ops and the text stays linear in the lanes) where the order
        is free (max, min, or `reassoc`), else lane after lane."""
        self.require_vectors(op, lanes=True)
        combine = LANE_COMBINES.get(op.kind.data)
        width = self.lanes_of(op.vector.type, op)
        if combine is None or width & (width - 1):
            self.fail(op, f"cannot emit '{op.name}' <{op.kind.data}> of {width} lanes at {location_of(op)}")
        code = self.code_for_op[combine]
        name, value = self.declare(op.dest), self.expr(op.vector)
        if combine in (arith.MaximumfOp, arith.MinimumfOp) or arith.FastMathFlag.REASSOC in op.fastmath.data:
            while width > 2:
                width //= 2
                half = f"{name}_h{width}"
                self.line(f"float{width} {half} = {code(f'{value}.lo', f'{value}.hi')};")
                value = half
            value = code(f"{value}.lo", f"{value}.hi")
        else:
            total = f"{value}.s0"
            for lane in range(1, width):
                total = code(f"({total})" if lane > 1 else total, f"{value}.s{lane:x}")
            value = total
        if op.acc is not None:  # (through a variable: the NaN-aware max names its operands twice)
            self.line(f"float {name}_h1 = {value};")
            value = code(self.expr(op.acc), f"{name}_h1")
        self.line(f"{self.c_type(op.dest.type, op)} {name} = {value};")


# The OpenMP reduction operators of those a `reduction(...)` pragma may reorder. Not max and
# min as such: OpenMP combines their lanes without letting a NaN win, as arith.maximumf must;
# under `fastmath<nnan>` (`NO_NAN_CODE`) they are `max` and `min`.
PRAGMA_OPERATORS: dict[type[Operation], str] = {arith.AddfOp: "+", arith.MulfOp: "*"}

# Max and min that may assume no NaN (`fastmath<nnan>`: softmax_row's peak, where a NaN
# makes the row NaN whatever the peak): one comparison, which any order of a reduction
# leaves alone, and which gcc vectorises under `reduction(max:...)`.
NO_NAN_CODE: dict[type[Operation], Expr] = {
    arith.MaximumfOp: lambda a, b: f"{a} > {b} ? {a} : {b}",
    arith.MinimumfOp: lambda a, b: f"{a} < {b} ? {a} : {b}",
}
NO_NAN_PRAGMA_OPERATORS: dict[type[Operation], str] = {arith.MaximumfOp: "max", arith.MinimumfOp: "min"}


def constant_of(value: SSAValue) -> int | None:
    """The value of an integer `arith.constant`, or None."""
    op = value.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        return op.value.value.data
    return None


def split_constant(index: SSAValue) -> tuple[SSAValue | None, int]:
    """`index` as a variable (None if there is none) plus a constant: a constant, `x + c` or
    `c + x` (one `arith.addi` with a constant operand), or itself plus 0. An index printed as
    `(x + c) * stride` per row of a micro-kernel's tile, c the row, made gcc keep one
    register per row, spill four and subtract each from the k loop's pointer every step
    (12 instructions more per 16 FMAs); `x * stride + c * stride` lets it address all the
    rows from one pointer with constant displacements."""
    constant = constant_of(index)
    if constant is not None:
        return None, constant
    op = index.owner
    if isinstance(op, arith.AddiOp) and isinstance(index.type, IndexType):
        for variable, other in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
            added = constant_of(other)
            if added is not None and constant_of(variable) is None:
                return variable, added
    return index, 0


# The ops whose indices `CStyleEmitter.index` prints.
INDEXING_OPS = (memref.LoadOp, memref.StoreOp, cpu.PrefetchOp, vector.LoadOp, vector.StoreOp)


def only_indexes(use: Use) -> bool:
    """Whether `use` is one of the indices of an op `index` prints (not its stored value)."""
    op = use.operation
    return isinstance(op, INDEXING_OPS) and use.index >= len(op.operands) - len(op.indices)


def assumes_no_nans(op: Operation) -> bool:
    """A max or min marked `fastmath<nnan>`."""
    return isinstance(op, arith.MaximumfOp | arith.MinimumfOp) and arith.FastMathFlag.NO_NANS in op.fastmath.data


def pragma_operator(combine: Operation) -> str | None:
    """The OpenMP reduction operator of a reduction loop's combine, if it may be reordered."""
    if assumes_no_nans(combine):
        return NO_NAN_PRAGMA_OPERATORS[type(combine)]
    return PRAGMA_OPERATORS.get(type(combine))


# `vector.reduction` kinds, by the op that combines two lanes.
LANE_COMBINES: dict[str, type[Operation]] = {
    "add": arith.AddfOp,
    "mul": arith.MulfOp,
    "maximumf": arith.MaximumfOp,
    "minimumf": arith.MinimumfOp,
}


# --- comparisons ----------------------------------------------------------------------------

# arith.cmpf: C's <, <=, >, >=, == are ordered (false on NaN) and != is unordered.
CMPF: dict[str, Expr] = {
    "false": lambda a, b: "0",
    "oeq": lambda a, b: f"{a} == {b}",
    "ogt": lambda a, b: f"{a} > {b}",
    "oge": lambda a, b: f"{a} >= {b}",
    "olt": lambda a, b: f"{a} < {b}",
    "ole": lambda a, b: f"{a} <= {b}",
    "one": lambda a, b: f"({a} < {b} || {a} > {b})",
    "ord": lambda a, b: f"({a} == {a} && {b} == {b})",
    "ueq": lambda a, b: f"!({a} < {b} || {a} > {b})",
    "ugt": lambda a, b: f"!({a} <= {b})",
    "uge": lambda a, b: f"!({a} < {b})",
    "ult": lambda a, b: f"!({a} >= {b})",
    "ule": lambda a, b: f"!({a} > {b})",
    "une": lambda a, b: f"{a} != {b}",
    "uno": lambda a, b: f"({a} != {a} || {b} != {b})",
    "true": lambda a, b: "1",
}

CMPI = {
    "eq": "==", "ne": "!=", "slt": "<", "sle": "<=", "sgt": ">", "sge": ">=",
    "ult": "<", "ule": "<=", "ugt": ">", "uge": ">=",
}  # fmt: skip

# Ops both languages spell the same way.
COMMON_CODE: dict[type[Operation], Expr] = {
    arith.AddfOp: lambda a, b: f"{a} + {b}",
    arith.SubfOp: lambda a, b: f"{a} - {b}",
    arith.MulfOp: lambda a, b: f"{a} * {b}",
    arith.DivfOp: lambda a, b: f"{a} / {b}",
    arith.NegfOp: lambda a: f"-{a}",
    arith.AddiOp: lambda a, b: f"{a} + {b}",
    arith.SubiOp: lambda a, b: f"{a} - {b}",
    arith.MuliOp: lambda a, b: f"{a} * {b}",
    arith.DivSIOp: lambda a, b: f"{a} / {b}",  # both truncate toward zero
    arith.RemSIOp: lambda a, b: f"{a} % {b}",
    arith.MaxSIOp: lambda a, b: f"{a} > {b} ? {a} : {b}",
    arith.MinSIOp: lambda a, b: f"{a} < {b} ? {a} : {b}",
    arith.AndIOp: lambda a, b: f"{a} & {b}",
    arith.OrIOp: lambda a, b: f"{a} | {b}",
    arith.XOrIOp: lambda a, b: f"{a} ^ {b}",
    arith.SelectOp: lambda c, a, b: f"{c} ? {a} : {b}",
}

# Maths functions by their C name; C's float versions add an `f` (`expf`), OpenCL's built-ins
# are overloaded on float (`exp`).
MATH_FUNCTIONS: dict[type[Operation], str] = {
    arith.MaxnumfOp: "fmax",
    arith.MinnumfOp: "fmin",
    mathd.ExpOp: "exp",
    mathd.LogOp: "log",
    mathd.SqrtOp: "sqrt",
    mathd.TanhOp: "tanh",
    mathd.AbsFOp: "fabs",
    mathd.ErfOp: "erf",
    mathd.PowFOp: "pow",
    mathd.FloorOp: "floor",
    mathd.CeilOp: "ceil",
    mathd.FmaOp: "fma",
}


def math_calls(suffix: str) -> dict[type[Operation], Expr]:
    """`code_for_op` entries calling MATH_FUNCTIONS, each name followed by `suffix`."""
    return {op: lambda *args, fn=name + suffix: f"{fn}({', '.join(args)})" for op, name in MATH_FUNCTIONS.items()}
