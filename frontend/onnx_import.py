"""
`xrelay.from_onnx`: an ONNX model in, a relay module and its params out, built with `Builder`.

    module, params = xrelay.from_onnx("model.onnx", placement={"Conv": "opencl"},
                                      shapes={"input": (1, 3, 224, 224)})
    exe = xrelay.build(module, targets=("c", "opencl"), params=params)
    out = exe.run(x)                     # or exe.run({"input.1": x}) by the ONNX names

Phase 1, signature: @main takes the graph's non-initializer inputs in graph order, then the
float32 initializers (their values are `params`, by parameter name). Input shapes must be
static, or fixed by `shapes`; an input whose name is not a valid SSA name keeps it as the
argument attribute `relay.input_name`, so the executor takes it by its ONNX name. Integer
initializers are not parameters: they are shape data, known at import.
Phase 2, nodes in graph order: each ONNX value is a relay tensor, a value known at import
(a numpy array: Constant, Shape, integer initializers and everything computed from them only,
folded with onnx's reference evaluator), or both (a float initializer). Every other node is
converted by its op type (`onnx_ops.CONVERTERS`).
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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, cast

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue

from xrelay.dialects.se_scope import SEScopeAttr
from xrelay.errors import Error, OnnxImportError, UsageError
from xrelay.frontend.builder import Builder, ScopeLike, parse_scope
from xrelay.frontend.onnx_ops import CONVERTERS, NodeImporter, node_error
from xrelay.runtime.heap import release_freed_memory

if TYPE_CHECKING:
    import onnx

MIN_OPSET, MAX_OPSET = 13, 21

# Ops never folded at import even when their inputs are known: their results differ per run.
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
                self.tensors[value_info.name] = self.b.input(value_info.name, self.input_shape(value_info))
        for name, tensor in initializers.items():
            self.add_initializer(name, numpy_helper.to_array(tensor))

    def input_shape(self, value_info: onnx.ValueInfoProto) -> tuple[int, ...]:
        from onnx import TensorProto

        name, ty = value_info.name, value_info.type.tensor_type
        if ty.elem_type != TensorProto.FLOAT:
            raise OnnxImportError(
                f"input {name!r} is of element type {TensorProto.DataType.Name(ty.elem_type).lower()}; "
                "xrelay takes float32 inputs (make it a float32 input, or an initializer if it carries shape data)"
            )
        if name in self.shapes:
            return self.given_shape(value_info)
        dims = [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?") for d in ty.shape.dim]
        if not ty.HasField("shape") or any(isinstance(d, str) for d in dims):
            shown = ", ".join(map(str, dims)) if ty.HasField("shape") else "unknown"
            example = [d if isinstance(d, int) else 1 for d in dims] or [1]
            raise OnnxImportError(
                f"input {name!r} has a dynamic shape [{shown}]; xrelay needs static shapes: fix it with "
                f"from_onnx(model, shapes={{{name!r}: {tuple(example)}}}) "
                f"(opt-tool: --input-shape {name}={'x'.join(map(str, example))})"
            )
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
        if self.can_fold(node, inputs):
            self.scope_for(node)  # a rule matching only folded nodes still matches
            self.fold(node)
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

    def can_fold(self, node: onnx.NodeProto, inputs: Sequence[str]) -> bool:
        """Every input known at import and none a parameter (weights stay parameters)."""
        if node.op_type in NOT_FOLDED or node.domain not in ("", "ai.onnx") or node.op_type == "Constant":
            return node.op_type == "Constant"
        return all(n in self.known and n not in self.param_names for n in inputs)

    def fold(self, node: onnx.NodeProto) -> None:
        from onnx.reference import ReferenceEvaluator

        feeds = {n: self.known[n] for n in node.input if n}
        try:
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
        """The relay value of `name`; a float value known at import becomes a constant."""
        if name in self.tensors:
            return self.tensors[name]
        if name not in self.known:
            raise OnnxImportError(f"value {name!r} is used before any node or graph input defines it")
        value = self.known[name]
        if value.dtype.kind != "f":
            raise OnnxImportError(
                f"value {name!r} is of element type {value.dtype} and is used as a tensor; xrelay computes in float32"
            )
        self.tensors[name] = self.b.const(value.astype(np.float32))
        return self.tensors[name]

    def output(self, name: str) -> SSAValue:
        if name not in self.tensors and name not in self.known:
            raise OnnxImportError(f"graph output {name!r} is not computed by any node")
        return self.tensor(name)
