"""
`xrelay.from_onnx`: an ONNX model in, a relay module and its params out, built with `Builder`.

    module, params = xrelay.from_onnx("model.onnx", placement={"Conv": "opencl"},
                                      shapes={"input": (1, 3, 224, 224)})
    exe = xrelay.build(module, targets=("c", "opencl"), params=params)
    out = exe.run(x)                     # or exe.run({"input.1": x}) by the ONNX names

Phase 1, signature: @main takes the graph's non-initializer inputs in graph order, then the
float32 initializers (their values are `params`, by parameter name). Input shapes must be
static, or fixed by `shapes` (symbolic dims not given are taken as 1, with a
`DynamicShapeWarning`); an input whose name is not a valid SSA name keeps it as the
argument attribute `relay.input_name`, so the executor takes it by its ONNX name. Integer
initializers are not parameters: they are shape data, known at import.
Phase 2, nodes in graph order: each ONNX value is a relay tensor, a value known at import
(a numpy array: Constant, Shape, integer initializers, float scalar initializers and
everything computed from them only, folded with onnx's reference evaluator, or numpy for the
ops in `FOLDERS`), or both (a float initializer, and an Identity of one: the same parameter).
Every other node is converted by its op type (`onnx_ops.CONVERTERS`).
Phase 3, placement: a node whose name or op type matches a rule's glob has its results
wrapped in `relay.on_device` of the rule's scope (the first matching rule wins); other nodes
stay free for plan-devices. A rule that matches no node is an error.
Phase 4, results: the graph outputs in order.

Opsets 13 to 21 of the default domain are supported, and newer ones for the ops here, whose
float32 meaning has not changed since (newer versions add element types); the conformance
tests (test/unit/test_onnx_conformance.py) run the onnx node tests of every opset. An op,
attribute, dtype or dynamic shape the importer does not take raises `xrelay.OnnxImportError`
naming the op type and the node.
"""

from __future__ import annotations

import fnmatch
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, cast

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue

from xrelay.dialects.se_scope import SEScopeAttr
from xrelay.errors import Error, OnnxImportError, UsageError
from xrelay.frontend.builder import Builder, ScopeLike, parse_scope
from xrelay.frontend.onnx_ops import CONVERTERS, ONNX_DTYPES, NodeImporter, node_error, onnx_dtype_name
from xrelay.frontend.onnx_rnn import lstm as _lstm  # registers LSTM and GRU in CONVERTERS
from xrelay.runtime.heap import release_freed_memory

del _lstm

if TYPE_CHECKING:
    import onnx

MIN_OPSET, MAX_OPSET = 13, 21


class DynamicShapeWarning(UserWarning):
    """An input's symbolic dims were taken as 1 (from_onnx's `shapes` fixes them)."""


# Ops never folded at import even when their inputs are known: their results differ per run.
# Ops with subgraphs: only an If with a condition known at import is imported (as its branch).
CONTROL_FLOW = frozenset({"If", "Loop", "Scan"})
NOT_FOLDED = frozenset({"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial"})


def from_onnx(
    model: str | Path | onnx.ModelProto,
    placement: Mapping[str, ScopeLike] | None = None,
    shapes: Mapping[str, Sequence[int]] | None = None,
) -> tuple[ModuleOp, dict[str, np.ndarray]]:
    """The relay module of `model` (a path or an `onnx.ModelProto`) and its params: the
    float32 initializers by @main parameter name. See the module docstring."""
    proto = _load(model)
    opset = _default_opset(proto)
    rules = [PlacementRule(pattern, parse_scope(scope)) for pattern, scope in (placement or {}).items()]
    importer = GraphImporter(proto.graph, opset, rules, dict(shapes or {}))
    module = importer.run()
    unmatched = [rule.pattern for rule in rules if not rule.matched]
    if unmatched:
        names = ", ".join(repr(p) for p in unmatched)
        raise UsageError(f"placement rules {names} match no node name or op type of the model")
    params = importer.params
    del proto, importer  # (a model read from a file: its protobuf, as large as its weights)
    release_freed_memory()
    return module, params


def _load(model: str | Path | onnx.ModelProto) -> onnx.ModelProto:
    import onnx

    if isinstance(model, onnx.ModelProto):
        return model
    if not isinstance(cast(object, model), str | Path):
        raise UsageError(f"from_onnx takes a path or an onnx.ModelProto, but was given {type(model).__name__}")
    try:
        return onnx.load(str(model))  # pyright: ignore[reportUnknownMemberType]
    except Exception as e:  # onnx raises OSError, protobuf's DecodeError and its own errors
        raise OnnxImportError(f"cannot read the ONNX model {str(model)!r}: {e}") from None


def _default_opset(model: onnx.ModelProto) -> int:
    versions = {o.domain: o.version for o in model.opset_import}
    version = versions.get("", versions.get("ai.onnx"))
    if version is None:
        raise OnnxImportError("the model imports no version of the default ONNX opset (ai.onnx)")
    if version < MIN_OPSET:
        raise OnnxImportError(
            f"the model uses ONNX opset {version}; xrelay imports opsets {MIN_OPSET} to {MAX_OPSET}: "
            f"convert it first, e.g. onnx.version_converter.convert_version(model, {MAX_OPSET})"
        )
    return version


def _fold_gather_elements(node: onnx.NodeProto, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    data, indices = inputs
    axis = next((int(a.i) for a in node.attribute if a.name == "axis"), 0) % max(data.ndim, 1)
    return [np.take_along_axis(data, np.where(indices < 0, indices + data.shape[axis], indices), axis)]


# Ops folded with numpy rather than onnx's reference evaluator, whose implementation fails on
# them: GatherElements with more than 32 values along the axis (np.choose's limit), as
# transformers' BERT export gathers its 512 token type ids.
FOLDERS: dict[str, Callable[[onnx.NodeProto, Sequence[np.ndarray]], list[np.ndarray]]] = {
    "GatherElements": _fold_gather_elements,
}


@dataclass
class PlacementRule:
    """A node-name or op-type glob and the scope its nodes' results are computed on."""

    pattern: str
    scope: SEScopeAttr
    matched: bool = False

    def matches(self, node: onnx.NodeProto) -> bool:
        return fnmatch.fnmatchcase(node.name, self.pattern) or fnmatch.fnmatchcase(node.op_type, self.pattern)


@dataclass
class GraphImporter:
    """The values of one ONNX graph as the importer walks it (see the module docstring)."""

    graph: onnx.GraphProto
    opset: int
    rules: list[PlacementRule]
    shapes: dict[str, Sequence[int]]
    b: Builder = field(default_factory=Builder)
    tensors: dict[str, SSAValue] = field(default_factory=dict[str, SSAValue])
    known: dict[str, np.ndarray] = field(default_factory=dict[str, np.ndarray])
    params: dict[str, np.ndarray] = field(default_factory=dict[str, np.ndarray])
    param_names: set[str] = field(default_factory=set[str])

    def run(self) -> ModuleOp:
        self.add_signature()
        for node in self.graph.node:
            self.add_node(node)
        return self.b.finish(*(self.output(o.name) for o in self.graph.output))

    # --- Phase 1: signature ---------------------------------------------------------------------

    def add_signature(self) -> None:
        from onnx import numpy_helper

        initializers = {t.name: t for t in self.graph.initializer}
        unknown = [n for n in self.shapes if n not in {i.name for i in self.graph.input} - set(initializers)]
        if unknown:
            inputs = [i.name for i in self.graph.input if i.name not in initializers]
            raise UsageError(f"shapes names {unknown}, which are not inputs of the model (its inputs: {inputs})")
        for value_info in self.graph.input:
            if value_info.name not in initializers:
                shape, dtype = self.input_shape(value_info), self.input_dtype(value_info)
                self.tensors[value_info.name] = self.b.input(value_info.name, shape, dtype)
        for name, tensor in initializers.items():
            self.add_initializer(name, numpy_helper.to_array(tensor))

    def input_dtype(self, value_info: onnx.ValueInfoProto) -> str:
        """The input's dtype: float32, int64 (token ids, masks) or bool."""
        elem_type = value_info.type.tensor_type.elem_type
        if elem_type not in ONNX_DTYPES:
            raise OnnxImportError(
                f"input {value_info.name!r} is of element type {onnx_dtype_name(elem_type)}; xrelay takes "
                "float32, int64 and bool inputs (make it one of those, or an initializer if it carries shape data)"
            )
        return ONNX_DTYPES[elem_type]

    def input_shape(self, value_info: onnx.ValueInfoProto) -> tuple[int, ...]:
        name, ty = value_info.name, value_info.type.tensor_type
        if name in self.shapes:
            return self.given_shape(value_info)
        dims = [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?") for d in ty.shape.dim]
        if not ty.HasField("shape"):
            raise OnnxImportError(
                f"input {name!r} has an unknown shape (not even its rank); xrelay needs static shapes: give it "
                f"with from_onnx(model, shapes={{{name!r}: (...)}}) (opt-tool: --input-shape {name}=AxB...)"
            )
        if any(isinstance(d, str) for d in dims):
            static = tuple(d if isinstance(d, int) else 1 for d in dims)
            shown = ", ".join(map(str, dims))
            warnings.warn(
                f"input {name!r} has a dynamic shape [{shown}]; its symbolic dims are taken as 1, so it is "
                f"imported as {list(static)}: give the shape with from_onnx(model, shapes={{{name!r}: {static}}}) "
                f"(opt-tool: --input-shape {name}={'x'.join(map(str, static))})",
                DynamicShapeWarning,
                stacklevel=5,  # from_onnx's caller
            )
            return static
        return tuple(int(d) for d in dims)

    def given_shape(self, value_info: onnx.ValueInfoProto) -> tuple[int, ...]:
        name, given = value_info.name, tuple(self.shapes[value_info.name])
        dims = value_info.type.tensor_type.shape.dim
        rank_known = value_info.type.tensor_type.HasField("shape")
        fixed = [(i, d.dim_value) for i, d in enumerate(dims) if d.HasField("dim_value")]
        if rank_known and (len(given) != len(dims) or any(given[i] != v for i, v in fixed)):
            model_dims = [d.dim_value if d.HasField("dim_value") else d.dim_param or "?" for d in dims]
            raise UsageError(f"shapes gives input {name!r} the shape {list(given)}, but the model says {model_dims}")
        return given

    def add_initializer(self, name: str, value: np.ndarray) -> None:
        self.known[name] = value
        if value.dtype != np.float32:
            return  # shape data, used at import only
        arg = self.b.input(name, value.shape)
        assert arg.name_hint is not None
        self.tensors[name] = arg
        self.params[arg.name_hint] = value
        self.param_names.add(name)

    # --- Phase 2: nodes -------------------------------------------------------------------------

    def add_node(self, node: onnx.NodeProto) -> None:
        inputs = [name for name in node.input if name]
        if node.op_type in CONTROL_FLOW and node.domain in ("", "ai.onnx"):
            self.add_control_flow(node)
            return
        if self.can_fold(node, inputs):
            self.scope_for(node)  # a rule matching only folded nodes still matches
            self.fold(node)
            return
        if self.is_parameter_alias(node, inputs):
            self.scope_for(node)
            self.alias(node.input[0], node.output[0])
            return
        convert = CONVERTERS.get(node.op_type)
        if node.domain not in ("", "ai.onnx") or convert is None:
            domain = f" of domain {node.domain!r}" if node.domain not in ("", "ai.onnx") else ""
            raise node_error(node, f"op {node.op_type}{domain} is not supported by the importer")
        try:
            results = convert(NodeImporter(node, self.b, self.tensor, self.known))
        except OnnxImportError:
            raise
        except Error as e:
            raise node_error(node, str(e)) from None
        except (IndexError, KeyError, ValueError, TypeError) as e:  # a malformed node: still no traceback
            raise node_error(
                node, f"cannot import it ({type(e).__name__}: {e}); check the node's inputs and attributes"
            ) from None
        self.bind_results(node, results)

    def add_control_flow(self, node: onnx.NodeProto) -> None:
        """An `If` whose condition is known at import is its branch's nodes (a graph of its
        own, whose outputs become the node's); every other `If`, `Loop` or `Scan` is refused:
        a relay program has no branches or loops."""
        from onnx import helper, numpy_helper

        cond = node.input[0] if node.input else ""
        if node.op_type != "If" or cond not in self.known or cond in self.param_names:
            when = "" if node.op_type != "If" else " (an If is imported only when its condition is known at import)"
            raise node_error(
                node, f"op {node.op_type} is not supported by the importer: xrelay programs have no control flow{when}"
            )
        taken = "then_branch" if bool(np.asarray(self.known[cond]).reshape(-1)[0]) else "else_branch"
        branch = next(helper.get_attribute_value(a) for a in node.attribute if a.name == taken)
        for init in branch.initializer:
            self.add_initializer(init.name, numpy_helper.to_array(init))
        for inner in branch.node:
            self.add_node(inner)
        for name, result in zip(node.output, branch.output):
            if result.name in self.tensors:
                self.tensors[name] = self.tensors[result.name]
            elif result.name in self.known:
                self.known[name] = self.known[result.name]
            else:
                raise node_error(node, f"its {taken} has no value {result.name!r} for output {name!r}")

    def can_fold(self, node: onnx.NodeProto, inputs: Sequence[str]) -> bool:
        """Every input known at import and none a parameter with more than one element (weights
        stay parameters; a float scalar initializer, such as Range's start and step as torch
        exports them, is folded)."""
        if node.op_type in NOT_FOLDED or node.domain not in ("", "ai.onnx") or node.op_type == "Constant":
            return node.op_type == "Constant"
        return all(n in self.known and (n not in self.param_names or self.known[n].size == 1) for n in inputs)

    def is_parameter_alias(self, node: onnx.NodeProto, inputs: Sequence[str]) -> bool:
        """An Identity of a weight: torch's exporter writes one for each initializer equal to an
        earlier one (DenseNet's BatchNormalization scales and biases, all ones and zeros)."""
        return (
            node.op_type == "Identity"
            and node.domain in ("", "ai.onnx")
            and list(inputs) == [node.input[0]]
            and (node.input[0] in self.param_names)
        )

    def alias(self, name: str, new_name: str) -> None:
        """`new_name` is `name`: the same parameter, and its value stays known at import, so
        converters that fold weights (BatchNormalization's statistics, ...) still fold it."""
        self.known[new_name] = self.known[name]
        self.tensors[new_name] = self.tensors[name]
        self.param_names.add(new_name)

    def fold(self, node: onnx.NodeProto) -> None:
        from onnx.reference import ReferenceEvaluator

        feeds = {n: self.known[n] for n in node.input if n}
        try:
            if node.op_type in FOLDERS:
                results = FOLDERS[node.op_type](node, [self.known[n] for n in node.input])
            else:
                results = ReferenceEvaluator(node, opsets={"": self.opset}).run(None, feeds)  # pyright: ignore[reportUnknownMemberType]
        except Exception as e:  # onnx's evaluator raises whatever its op implementation raises
            raise node_error(node, f"cannot evaluate it at import: {type(e).__name__}: {e}") from None
        for name, value in zip(node.output, results):
            if name:
                self.known[name] = np.asarray(value)

    def bind_results(self, node: onnx.NodeProto, results: Sequence[SSAValue | np.ndarray | None]) -> None:
        scope = self.scope_for(node)
        for name, value in zip(node.output, results):
            if not name:
                continue
            if value is None:
                raise node_error(node, f"output {name!r} is not supported (only the first outputs are)")
            if isinstance(value, np.ndarray):
                self.known[name] = value
                continue
            if scope is not None:
                value = self.b.on_device(value, scope)
            self.tensors[name] = value
        missing = [name for name in node.output[len(results) :] if name]
        if missing:
            raise node_error(node, f"outputs {missing} are not supported (only the first {len(results)})")

    def scope_for(self, node: onnx.NodeProto) -> SEScopeAttr | None:
        for rule in self.rules:
            if rule.matches(node):
                rule.matched = True
                return rule.scope
        return None

    # --- values ---------------------------------------------------------------------------------

    def tensor(self, name: str) -> SSAValue:
        """The relay value of `name`; a value known at import becomes a constant (a float one
        float32, an int64 or bool one of its own dtype)."""
        if name in self.tensors:
            return self.tensors[name]
        if name not in self.known:
            raise OnnxImportError(f"value {name!r} is used before any node or graph input defines it")
        value = self.known[name]
        if value.dtype.kind != "f" and value.dtype.name not in ("int64", "bool"):
            raise OnnxImportError(
                f"value {name!r} is of element type {value.dtype} and is used as a tensor; xrelay computes "
                "in float32, int64 and bool"
            )
        self.tensors[name] = self.b.const(value if value.dtype.kind != "f" else value.astype(np.float32))
        return self.tensors[name]

    def output(self, name: str) -> SSAValue:
        if name not in self.tensors and name not in self.known:
            raise OnnxImportError(f"graph output {name!r} is not computed by any node")
        return self.tensor(name)
