"""
One executable for several batch sizes: `xrelay.build(m, params=params, batch_sizes=(1, 4, 16))`.

    exe = xrelay.build(module, targets=("c",), params=params, batch_sizes=(1, 4, 16, 64))
    exe.batch_sizes                      # (1, 4, 16, 64)
    out = exe.run(x)                     # any batch n >= 1 (xrelay.runtime.batched)

The module's inputs (the parameters of @main that `params` does not bind) and results carry a
leading batch axis, of one size B0 (an ONNX model imported with its batch fixed, e.g. at 1).
For each size b, `rebatch` re-types a clone of the module at b: the inputs get the leading
dim b and every op's result type is inferred again. Results of `relay.reshape` and
`relay.broadcast_to` are their target shapes, not inferred: the target axis the operand's batch
axis starts or ends (row-major; one that keeps the last axis first) is scaled by b/B0. What an
importer wrote at the model's batch follows it: a slice that takes the whole batch axis takes
it whole (`Retyper.widen_slice`), and a constant concatenated to batch-1 data is repeated per
sample (`Retyper.broadcast_constants`).

An op must carry the batch through: when an operand's shape changed, its result's shape
differs from the original in exactly one axis, scaled by b/B0, and every result of @main has
the batch on its leading axis, its other dims unchanged. Anything else is refused with a
`UsageError` naming the op: a reshape to a fixed shape that splits the batch axis or folds it
into a result's, a slice or reduction over the batch axis (its result no longer depends on b),
a softmax, layer norm or concatenation along the batch axis (`Retyper.mixing`), an op whose
shapes do not agree at the new batch.

Each size is compiled as `xrelay.build` compiles one module (`compile_sizes`); a `ParamStore`
keeps one copy of each param (equal values under one name, in every size's graph), and a
`targets.kernels.KernelSet` one copy of each kernel (equal kernels across sizes become one in
`distinct_kernels`; a different one whose name another size took is renamed `NAME_bB`). A
weight that a smaller size's kernel reads as it is is not pre-packed at the larger sizes either
(`hold_as_is`): it is held once, in one layout, at the cost of packing its panels per work
item there (pre-packed is 0.90-0.97x the time of a dense, `packed_matmul`). A dense at rows
below packed_matmul's tile reads the pre-packed panels too (`packed_gemv`), so its weight is
held once packed and every size reads it so; what stays held as it is are the weights no size
below reads from panels (the MLP's 512 -> 10, narrower than a panel). Every size packs in the
register tile's panels (`REGISTER_TILES_ATTR`: not the 7 x 3 tile of a size of rows many of 7,
whose panels differ). The MLP 784-512-512-10 at (1, 4, 16, 64): params 5.33 MB -> 2.68 MB.

With `placement="auto"`, each size is placed by its own costs: a larger batch may move work to
a device whose copies one sample would not pay for. `place_sizes` places every size before any
is lowered (place-by-cost and plan-devices on a clone with the params bound, measured at that
size as a build of it alone would lower it: a weight later held as it is for a smaller size is
measured pre-packed). Each size's graph is then emitted against the devices of all sizes (their
union, in device-index order): a device index means one device in every graph and in the
kernels `distinct_kernels` merges, and a size may list a device it does not use. The choice is
written back when the size is lowered (`place_by_cost.replay`), not searched again. A param
stored once may be held on a different device by each size (the runtime writes it to each
device that reads it).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DenseArrayBase, DictionaryAttr, ModuleOp, TensorType, UnitAttr, i64
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import VerifyException

from xrelay.build_cache import Built
from xrelay.diagnostics import location_of
from xrelay.dialects import relay
from xrelay.dialects.se_scope import SEScopeAttr
from xrelay.errors import UsageError
from xrelay.runtime.heap import release_freed_memory
from xrelay.runtime.kernels import KernelSource
from xrelay.targets.graph_json import scope_order
from xrelay.targets.kernels import KernelSet
from xrelay.transforms.place_by_cost import Chosen, label
from xrelay.transforms.schedules.packed_matmul import HELD_AS_IS_ATTR, REGISTER_TILES_ATTR
from xrelay.values import entry_function

Shape = tuple[int, ...]


def check_sizes(batch_sizes: object) -> tuple[int, ...]:
    """`batch_sizes` as sorted distinct positive ints, or a UsageError."""
    if isinstance(batch_sizes, int | str) or not isinstance(batch_sizes, Sequence | Collection):
        raise UsageError(f"batch_sizes must be a sequence of batch sizes, e.g. (1, 4, 16, 64), but was {batch_sizes!r}")
    sizes = list(cast(Collection[object], batch_sizes))
    if not sizes or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 1 for s in sizes):
        raise UsageError(f"batch_sizes must be positive integers, e.g. (1, 4, 16, 64), but was {batch_sizes!r}")
    return tuple(sorted(set(cast(list[int], sizes))))


def batch_of(module: ModuleOp, params: Collection[str]) -> int:
    """B0: the leading dim every input of @main shares (a UsageError naming one that has none)."""
    main = entry_function(module)
    inputs = [arg for arg in main.args if arg.name_hint not in params]
    if not inputs:
        raise UsageError("batch_sizes: @main takes no inputs besides the params, so there is no batch axis to vary")
    found: int | None = None
    for arg in inputs:
        shape = _shape(arg)
        if not shape or (found is not None and shape[0] != found):
            raise UsageError(
                f"batch_sizes: every input of @main must have the same leading batch dim, but input %{arg.name_hint} "
                f"is {arg.type}" + (f" and an earlier one has batch {found}" if found is not None else "")
            )
        found = shape[0]
    assert found is not None
    return found


def rebatch(module: ModuleOp, batch: int, params: Collection[str]) -> None:
    """Re-types `module` (in place) so that its inputs and results have leading dim `batch`
    (see the module docstring); a UsageError names the op that does not carry the batch."""
    original = batch_of(module, params)
    if batch == original:
        return
    Retyper(original, batch).run(entry_function(module), params)


@dataclass
class Retyper:
    """Infers the types of @main at a new batch, tracking each value's batch axis."""

    original: int
    batch: int
    axes: dict[SSAValue, int] = field(default_factory=dict[SSAValue, int])  # batch axis of each batched value
    merged: Operation | None = None  # the first op that merged the batch axis with another

    def run(self, main: func.FuncOp, params: Collection[str]) -> None:
        for arg in list(main.args):
            if arg.name_hint not in params:
                self.retype(arg, (self.batch, *_shape(arg)[1:]), 0)
        for op in list(main.body.block.ops):
            if isinstance(op, func.ReturnOp):
                self.check_results(op)
            elif isinstance(op, relay.OnDeviceOp):
                if op.operands[0] in self.axes:
                    self.retype(op.results[0], _shape(op.operands[0]), self.axes[op.operands[0]])
            elif isinstance(op, relay.RelayOp):
                self.infer(op)
            else:
                raise UsageError(
                    f"batch_sizes: @main holds {op.name} at {location_of(op)}; the batch is varied on relay ops only"
                )
        main.update_function_type()

    def retype(self, value: SSAValue, shape: Shape, axis: int) -> None:
        element = cast(TensorType[Attribute], value.type).element_type
        new = Rewriter.replace_value_with_new_type(value, TensorType(element, list(shape)))
        self.axes[new] = axis

    def infer(self, op: relay.RelayOp) -> None:
        batched = [v for v in op.operands if v in self.axes]
        if not batched:
            return  # nothing of it depends on the batch
        mixing = self.mixing(op, {self.axes[v] for v in batched})
        if mixing:
            raise self.refuse(op, mixing)
        if isinstance(op, relay.StridedSliceOp):
            self.widen_slice(op)
        elif isinstance(op, relay.ConcatenateOp):
            self.broadcast_constants(op)
        old = _shape(op.results[0])
        try:
            if isinstance(op, relay.ReshapeOp | relay.BroadcastToOp):
                self.retype(op.results[0], self.target(op, old), -1)
            new = tuple(op.infer_type().get_shape())
        except VerifyException as e:
            raise self.refuse(op, f"its shapes do not agree at batch {self.batch}: {e}") from None
        changed = [i for i, (a, b) in enumerate(zip(old, new)) if a != b]
        if len(old) != len(new) or len(changed) != 1 or new[changed[0]] * self.original != old[changed[0]] * self.batch:
            lost = "no longer depends on the batch" if not changed and len(old) == len(new) else f"is {list(new)}"
            raise self.refuse(op, f"its result {list(old)} at batch {self.original} {lost} at batch {self.batch}")
        if old[changed[0]] != self.original and self.merged is None:
            self.merged = op
        self.retype(op.results[0], new, changed[0])

    @staticmethod
    def mixing(op: relay.RelayOp, axes: set[int]) -> str | None:
        """Why `op` mixes the samples along a batch axis it keeps (in `axes`), if it does."""
        if isinstance(op, relay.SoftmaxOp) and op.axis_value in axes:
            return f"it normalizes along axis {op.axis_value}, the batch axis: it would mix the samples"
        if isinstance(op, relay.LayerNormOp) and any(a >= op.axis_value for a in axes):
            return f"it normalizes over axes {op.axis_value}.., which hold the batch: it would mix the samples"
        if isinstance(op, relay.ConcatenateOp) and op.axis_value in axes:
            return f"it concatenates along axis {op.axis_value}, the batch axis"
        return None

    def widen_slice(self, op: relay.StridedSliceOp) -> None:
        """A slice that takes the whole batch axis at the original batch (an importer writes its
        end as the batch: `x[:, :58]` as end [1, 58]) takes it whole at the new batch."""
        axis = self.axes[op.data]
        begin, end = list(op.begin.get_values()), list(op.end.get_values())
        strides = list(op.strides.get_values()) if op.strides is not None else [1] * len(begin)
        old = _shape(op.data)[axis] * self.original // self.batch
        if axis < len(begin) and range(*slice(begin[axis], end[axis], strides[axis]).indices(old)) == range(old):
            begin[axis], end[axis], strides[axis] = 0, _shape(op.data)[axis], 1
            op.properties["begin"], op.properties["end"] = i64_array(begin), i64_array(end)
            if op.strides is not None:
                op.properties["strides"] = i64_array(strides)

    def broadcast_constants(self, op: relay.ConcatenateOp) -> None:
        """A concatenation of batched inputs with ones that do not depend on the batch, of
        dim 1 on the batch axis (a model exported at batch 1: ViT's class token, whose expand
        to the batch was folded away), concatenates the latter repeated for each sample."""
        axis = next(self.axes[v] for v in op.inputs if v in self.axes)
        if self.original != 1 or axis == op.axis_value:
            return
        operands = list(op.operands)
        for index, value in enumerate(operands):
            shape = _shape(value)
            if value not in self.axes and len(shape) > axis and shape[axis] == 1:
                target = TensorType(_element(value), [*shape[:axis], self.batch, *shape[axis + 1 :]])
                broadcast = relay.BroadcastToOp(
                    operands=[value], result_types=[target], properties={"se_scope": op.se_scope}
                )
                Rewriter.insert_op(broadcast, InsertPoint.before(op))
                operands[index] = broadcast.results[0]
                self.axes[broadcast.results[0]] = axis
        op.operands = operands

    def target(self, op: relay.ReshapeOp | relay.BroadcastToOp, old: Shape) -> Shape:
        """A reshape's or broadcast_to's result shape at the new batch: its target with the
        axis where the operand's batch axis lands scaled."""
        data = op.operands[0]
        axis, shape = self.axes[data], _shape(data)
        if isinstance(op, relay.BroadcastToOp):
            landing = axis + len(old) - len(shape)
            if old[landing] * self.batch % self.original:
                raise self.refuse(op, f"it broadcasts to {list(old)}, whose axis {landing} does not follow the batch")
            return (*old[:landing], shape[axis], *old[landing + 1 :])
        # The target axes the batch axis starts or ends (row-major), e.g. (197, 1, 768) ->
        # (197, 768): axis 1 starts where the batch does, axis 0 ends with it; an axis that keeps
        # the last one unchanged first (a matmul's depth), then the first of them.
        outer = math.prod(shape[:axis])
        inner = outer * shape[axis] * self.original // self.batch
        landings = sorted(
            {j for j in range(len(old)) if math.prod(old[:j]) == outer or math.prod(old[: j + 1]) == inner},
            key=lambda j: (j == len(old) - 1, j),
        )
        for landing in landings:
            if old[landing] * self.batch % self.original == 0:
                return (*old[:landing], old[landing] * self.batch // self.original, *old[landing + 1 :])
        raise self.refuse(op, f"it reshapes to the fixed shape {list(old)}, which splits or folds the batch axis")

    def check_results(self, op: func.ReturnOp) -> None:
        for index, value in enumerate(op.operands):
            if self.axes.get(value) != 0 or _shape(value)[0] != self.batch:
                merged = f"; {_describe(self.merged)} merged it with another axis" if self.merged else ""
                raise UsageError(
                    f"batch_sizes: result {index} of @main ({value.type} at batch {self.batch}) does not carry the "
                    f"batch on its leading axis{merged}: each result must be one row per sample"
                )

    def refuse(self, op: Operation, why: str) -> UsageError:
        return UsageError(f"batch_sizes: {_describe(op)} does not carry the batch axis: {why}")


def _describe(op: Operation) -> str:
    return f"{op.name} at {location_of(op)}"


def _element(value: SSAValue) -> Attribute:
    return cast(TensorType[Attribute], value.type).element_type


def i64_array(values: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, values)


def _shape(value: SSAValue) -> Shape:
    return tuple(cast(TensorType[Attribute], value.type).get_shape())


# --- one copy of the params and kernels ------------------------------------------------------


@dataclass
class ParamStore:
    """The params of every size's graph, each distinct value once, by name."""

    arrays: dict[str, np.ndarray] = field(default_factory=dict[str, np.ndarray])
    by_digest: dict[str, str] = field(default_factory=dict[str, str])

    def add(self, graph: dict[str, Any], params: Mapping[str, np.ndarray], suffix: str) -> None:
        """Takes in `graph`'s params, renaming its param nodes to the stored names."""
        taken = {node["name"] for node in graph["nodes"]}
        for node in graph["nodes"]:
            name = node["name"]
            if node["op"] != "null" or name not in params:
                continue
            digest = _digest(params[name])
            stored = self.by_digest.get(digest)
            if stored is None:
                stored = name
                while stored in self.arrays or (stored != name and stored in taken):
                    stored += suffix
                self.arrays[stored] = params[name]
                self.by_digest[digest] = stored
            node["name"] = stored


def _digest(array: np.ndarray) -> str:
    data = np.ascontiguousarray(array)
    digest = hashlib.sha256(f"{data.dtype.str} {data.shape}\0".encode())
    digest.update(data.data)  # (the bytes in place, not a copy of them)
    return digest.hexdigest()


# --- the build ---------------------------------------------------------------------------------


def hold_as_is(module: ModuleOp, names: Collection[str]) -> None:
    """Marks the params `names` of @main (`HELD_AS_IS_ATTR`): the sizes compiled before hold
    them as they are, so this one reads them so too rather than pre-packing a second copy."""
    mark_params(module, names, HELD_AS_IS_ATTR)


def mark_params(module: ModuleOp, names: Collection[str], attr: str) -> None:
    """Gives the params `names` of @main the unit attribute `attr` (`driver.bind_params`
    moves it onto their constants)."""
    main = entry_function(module)
    attrs = list(main.arg_attrs.data) if main.arg_attrs is not None else [DictionaryAttr({})] * len(main.args)
    for index, arg in enumerate(main.args):
        if arg.name_hint in names:
            attrs[index] = DictionaryAttr({**attrs[index].data, attr: UnitAttr()})
    main.arg_attrs = ArrayAttr(attrs)


@dataclass(frozen=True)
class SizeBuild:
    """What the compile of one size shares with the others: the kernels of the sizes compiled
    before, with the suffix for a name they took (`distinct_kernels`); and, when each size is
    placed by its own costs, the devices every size's graph lists and this size's placement."""

    kernels: KernelSet
    suffix: str
    devices: Sequence[SEScopeAttr] | None = None  # None: the graph's own (`device_list`)
    chosen: Chosen | None = None  # None: placed as the build's `placement` says


# Compiles a module, binding its params.
CompileOne = Callable[[ModuleOp, Mapping[str, np.ndarray], SizeBuild], Built]
# Places a module with its params bound (on a clone): the choice, and the scopes it plans.
PlaceOne = Callable[[ModuleOp, Mapping[str, np.ndarray]], tuple[Chosen, set[SEScopeAttr]]]


@dataclass(frozen=True)
class BatchedBuild:
    """What the runtime needs: the graph of each size (`graph` the largest's), the kernels of
    all of them, and the params they share."""

    graph: dict[str, Any]
    kernels: list[KernelSource]
    params: dict[str, np.ndarray]
    batches: dict[int, dict[str, Any]]


def compile_sizes(
    module: ModuleOp,
    params: Mapping[str, np.ndarray],
    batch_sizes: object,
    compile_one: CompileOne,
    stage: Callable[[str], None] = lambda _: None,
    place_one: PlaceOne | None = None,
) -> BatchedBuild:
    """`module` compiled at each of `batch_sizes` (see the module docstring). Every size is
    re-typed before any is compiled, so a model that does not carry the batch is refused at
    once; with `place_one`, every size is then placed (`place_sizes`) before any is lowered."""
    sizes = check_sizes(batch_sizes)
    original = batch_of(module, params.keys())
    if sizes == (original,):  # nothing re-typed: check that the model carries a batch all the same
        rebatch(module.clone(), original + 1, params.keys())
    modules: dict[int, ModuleOp] = {}
    for size in sizes:
        modules[size] = module.clone()
        rebatch(modules[size], size, params.keys())
    chosen, devices = place_sizes(modules, params, place_one, stage) if place_one is not None else ({}, None)
    kernels, store = KernelSet(), ParamStore()
    graphs: dict[int, dict[str, Any]] = {}
    sources: list[KernelSource] = []
    digests = {name: _digest(array) for name, array in params.items()} if len(sizes) > 1 else {}
    for size in sizes:
        sized = modules.pop(size)
        hold_as_is(sized, {name for name, digest in digests.items() if digest in store.by_digest})
        mark_params(sized, digests.keys(), REGISTER_TILES_ATTR)  # (one packed layout for every size)
        built = compile_one(sized, params, SizeBuild(kernels, f"_b{size}", devices, chosen.get(size)))
        store.add(built.graph, built.params, f"_b{size}")
        graphs[size] = built.graph
        sources += built.kernels
        del built  # (its params that another size's equal: they go now)
        release_freed_memory()
        stage(f"compiled batch size {size}")
    return BatchedBuild(graphs[sizes[-1]], sources, store.arrays, graphs)


def place_sizes(
    modules: Mapping[int, ModuleOp],
    params: Mapping[str, np.ndarray],
    place_one: PlaceOne,
    stage: Callable[[str], None],
) -> tuple[dict[int, Chosen], list[SEScopeAttr]]:
    """Each size's placement by its own costs (a batch of 16 may pay for the copies to a device
    that one sample does not), and the devices of all of them in device-index order. Every
    size's graph lists those devices, so that a device index means one device in all graphs and
    in the kernels `distinct_kernels` merges across them (the runtime checks that the graphs
    share their devices)."""
    chosen: dict[int, Chosen] = {}
    scopes: set[SEScopeAttr] = set()
    for size, sized in modules.items():
        chosen[size], used = place_one(sized, params)
        scopes |= used
        release_freed_memory()  # (the clone it placed, its weights bound)
        stage(f"placed batch size {size} on {', '.join(label(s) for s in sorted(used, key=scope_order))}")
    return chosen, sorted(scopes, key=scope_order)
