"""
`xrelay.build` and `xrelay.load`: compile a relay program into an `Executable`, run it, save it.

    exe = xrelay.build(text, targets=("c", "opencl"), default_device="opencl")
    out = exe.run(x=x, w=w)            # numpy in, numpy out (one array, or a tuple)
    print(exe.profile(x=x, w=w))       # time per node, copies per device pair, pool bytes
    exe.save("model.xrelay")           # a directory: graph JSON, kernel sources, params, manifest
    exe = xrelay.load("model.xrelay")

The pipeline, with the passes by their CLI names: plan-devices, fuse-ops,
convert-relay-to-loops, inline-calls (calls between relay functions are inlined into @main
after lowering, when every value already has its scope), plan-memory; then the kernel
sources of the lowered module (`xrelay.targets.kernels`) and its executor graph
(`-t graph-json`, with the constants as params).

Devices: each canonical scope of the program (the graph's `scopes`) runs on a physical
device chosen by the table `devices` (see `xrelay.runtime.device`): by default `cpu:N` on
the host and `opencl:N` on the N-th device of the first OpenCL platform, e.g.
`devices={("opencl", 1): "opencl:0"}` runs virtual device 1 on the first OpenCL device. The
first scope (the host, when there is one) is the primary device.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ArrayAttr, BytesAttr, DenseIntOrFPElementsAttr, DictionaryAttr, ModuleOp
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import DiagnosticException

from xrelay.dialects import relay
from xrelay.dialects.se_scope import SEScopeAttr
from xrelay.errors import CompileError, Error, InputError
from xrelay.interpreter import check_input, entry_function
from xrelay.ir import context, parse
from xrelay.transforms.plan_devices import SCOPE_ATTR
from xrelay.runtime import artifact
from xrelay.runtime.device import DeviceTable, resolve_devices
from xrelay.runtime.executor import COPY, GraphExecutor, Profile

Inputs = Mapping[str, Any] | Sequence[Any] | None

PIPELINE = (
    "plan-devices",
    "fuse-ops",
    "convert-relay-to-loops",
    "dce",
    "licm",
    "cse",
    "split-reductions",
    "inline-calls",
    "plan-memory",
)


def build(
    program: str | ModuleOp,
    targets: Sequence[str] = ("c",),
    default_device: str | None = None,
    host_target: str = "c",
    devices: DeviceTable | None = None,
    params: Mapping[str, np.ndarray] | None = None,
) -> Executable:
    """Compiles `program` (text or a module, which is not changed) for `targets`.

    `params` binds parameters of @main to fixed values (weights): they become constants, so
    they are placed like constants, written to their devices once, and `run` no longer takes
    them."""
    module = parse(program) if isinstance(program, str) else program.clone()
    bind_params(module, params or {})
    lower(module, tuple(targets), default_device, host_target)
    from xrelay.targets.graph_json import executor_graph
    from xrelay.targets.kernels import kernel_sources

    graph = executor_graph(module)
    return Executable(graph.graph, kernel_sources(module), graph.params, devices)


def bind_params(module: ModuleOp, params: Mapping[str, np.ndarray]) -> None:
    """Replaces the named parameters of @main by `relay.constant`s of their values. A
    parameter's `relay.se_scope` attribute pins its constant there."""
    if not params:
        return
    main = entry_function(module)
    names = [arg.name_hint for arg in main.args]
    unknown = [name for name in params if name not in names]
    if unknown:
        raise InputError(
            f"params {', '.join(repr(n) for n in unknown)} are not parameters of @main "
            f"(its parameters: {', '.join('%' + str(n) for n in names)})"
        )
    arg_attrs = list(main.arg_attrs.data) if main.arg_attrs is not None else [DictionaryAttr({})] * len(names)
    block = main.body.block
    for index in reversed(range(len(names))):
        if names[index] in params:
            arg = main.args[index]
            value = check_input(names[index], arg.type, params[names[index]], what="param")
            scope = arg_attrs[index].data.get(SCOPE_ATTR)
            dense = DenseIntOrFPElementsAttr(arg.type, BytesAttr(value.astype("<f4").tobytes()))
            constant = relay.ConstantOp(dense, scope if isinstance(scope, SEScopeAttr) else None)
            constant.results[0].name_hint = names[index]
            Rewriter.insert_op(constant, InsertPoint.at_start(block))
            arg.replace_all_uses_with(constant.results[0])
            block.erase_arg(arg)
            del arg_attrs[index]
    main.arg_attrs = ArrayAttr(arg_attrs)
    main.update_function_type()


def lower(module: ModuleOp, targets: tuple[str, ...], default_device: str | None, host_target: str) -> None:
    """Runs the pipeline in place and verifies the result."""
    from xrelay.transforms import get_all_passes

    passes = get_all_passes()
    options = {"targets": targets, "default_device": default_device, "host_target": host_target}
    ctx = context()
    for name in PIPELINE:
        cls = passes[name]()
        _apply(cls(**options) if name == "plan-devices" else cls(), ctx, module)
    try:
        module.verify()
    except DiagnosticException as e:
        raise CompileError(f"the lowered module does not verify (a compiler bug): {e}") from None


def _apply(pass_: Any, ctx: Context, module: ModuleOp) -> None:
    try:
        pass_.apply(ctx, module)
    except Error:
        raise
    except DiagnosticException as e:
        raise CompileError("\n".join([str(e), *getattr(e, "__notes__", [])])) from None


def load(path: str | Path, devices: DeviceTable | None = None) -> Executable:
    """An executable saved with `Executable.save`; hashes are checked, kernels rebuilt."""
    saved = artifact.load(path)
    return Executable(saved.graph, saved.kernels, saved.params, devices)


class Executable:
    """A built program: its executor graph, kernel sources and params, ready on its devices."""

    def __init__(
        self,
        graph: dict[str, Any],
        kernels: Sequence[Any],
        params: Mapping[str, np.ndarray],
        devices: DeviceTable | None = None,
    ):
        self.graph, self.kernels, self.params = graph, list(kernels), dict(params)
        self.scopes = artifact.scope_keys(graph["scopes"])
        self.devices = resolve_devices(self.scopes, devices)
        self.executor = GraphExecutor(graph, self.devices, self._load_kernels(), self.params)

    def _load_kernels(self) -> list[Mapping[str, Any]]:
        """Each device builds the kernels of its scope."""
        by_scope: list[list[Any]] = [[] for _ in self.scopes]
        scope_texts = self.graph["scopes"]
        for k in self.kernels:
            by_scope[scope_texts.index(str(k.scope))].append(k)
        return [device.load(sources) for device, sources in zip(self.devices, by_scope)]

    # --- running ---------------------------------------------------------------------------

    def run(self, inputs: Inputs = None, /, **named: Any) -> np.ndarray | tuple[np.ndarray, ...]:
        """Runs the program on numpy inputs, by name (or a sequence in parameter order); one
        array, or a tuple for several results."""
        self.executor.set_inputs(self._by_name(inputs, named))
        self.executor.run()
        return _results(self.executor.outputs())

    def profile(self, inputs: Inputs = None, /, **named: Any) -> Profile:
        """Runs once, timing every node (waiting for its device), and reports copies and pools."""
        self.executor.set_inputs(self._by_name(inputs, named))
        report = self.executor.profile()
        report.outputs = _results(self.executor.outputs())
        return report

    def _by_name(self, inputs: Inputs, named: Mapping[str, Any]) -> dict[str, Any]:
        if inputs is None or isinstance(inputs, Mapping):
            return {**(inputs or {}), **named}
        values = [inputs] if isinstance(inputs, np.ndarray) else list(inputs)  # one array: one input
        if len(values) != len(self.input_names) or named:
            raise InputError(
                f"the program takes {len(self.input_names)} inputs ({', '.join(self.input_names)}), "
                f"but {len(values)} were given by position" + (" and more by name" if named else "")
            )
        return dict(zip(self.input_names, values))

    @property
    def input_names(self) -> list[str]:
        return list(self.executor.inputs)

    def placement(self) -> list[tuple[str, str]]:
        """`(node, device)` for every kernel and copy, in execution order (copies as `src -> dst`)."""
        ex = self.executor
        rows = []
        for _, index, _ in ex.steps:
            node, device = ex.nodes[index], ex.labels[ex.entries[index].device]
            if node["attrs"]["func_name"] == COPY:
                device = f"{ex.labels[ex.entries[node['inputs'][0][0]].device]} -> {device}"
            rows.append((node["name"], device))
        return rows

    def save(self, path: str | Path) -> None:
        artifact.save(path, artifact.Artifact(self.graph, self.params, self.kernels))


def _results(outputs: list[np.ndarray]) -> np.ndarray | tuple[np.ndarray, ...]:
    return outputs[0] if len(outputs) == 1 else tuple(outputs)
