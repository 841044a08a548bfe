"""Hand-made executor graphs for the runtime tests (TVM's heterogeneous runtime tests): the
graph JSON the compiler would write, and tiny hand-written C and OpenCL kernels, so the
runtime is tested without the compiler."""

from __future__ import annotations

from typing import Any

import numpy as np

from xrelay.runtime.executor import GraphExecutor
from xrelay.runtime.kernels import KernelSource

N = 1000
Scope = dict[str, Any]  # an entry of the graph's `devices` list
CPU: Scope = {"kind": "cpu", "id": 0, "target": "c", "memory": "global"}
CL0: Scope = {"kind": "opencl", "id": 0, "target": "opencl", "memory": "global"}
CL1: Scope = {"kind": "opencl", "id": 1, "target": "opencl", "memory": "global"}


def graph(
    nodes: list[tuple[str, str | None, list[int], int, int]], heads: list[int], scopes: list[Scope]
) -> dict[str, Any]:
    """A graph JSON object from `(name, func_name or None for inputs, inputs, device, storage)`."""
    json_nodes = []
    for name, func_name, inputs, _, _ in nodes:
        if func_name is None:
            json_nodes.append({"op": "null", "name": name, "inputs": []})
        else:
            attrs = {"func_name": func_name, "num_inputs": str(len(inputs)), "num_outputs": "1", "flatten_data": "0"}
            json_nodes.append({"op": "tvm_op", "name": name, "attrs": attrs, "inputs": [[i, 0, 0] for i in inputs]})
    return {
        "nodes": json_nodes,
        "arg_nodes": [i for i, n in enumerate(nodes) if n[1] is None],
        "heads": [[h, 0, 0] for h in heads],
        "node_row_ptr": list(range(len(nodes) + 1)),
        "attrs": {
            "storage_id": ["list_int", [n[4] for n in nodes]],
            "shape": ["list_shape", [[N]] * len(nodes)],
            "dltype": ["list_str", ["float32"] * len(nodes)],
            "device_index": ["list_int", [n[3] for n in nodes]],
        },
        "devices": scopes,
    }


# TVM's simplex graph: A + B on the device, copied to the host, minus D there.
SIMPLEX = [
    ("A", None, [], 1, 0),
    ("B", None, [], 1, 1),
    ("D", None, [], 0, 2),
    ("add", "add", [0, 1], 1, 3),
    ("__copy", "__copy", [3], 0, 4),
    ("sub", "sub", [4, 2], 0, 5),
]

# TVM's duplex graph: to the host and back: ((A + B) - C) + D with the subtraction on the host.
DUPLEX = [
    ("A", None, [], 1, 0),
    ("B", None, [], 1, 1),
    ("C", None, [], 0, 2),
    ("D", None, [], 1, 3),
    ("add", "add", [0, 1], 1, 4),
    ("__copy", "__copy", [4], 0, 5),
    ("sub", "sub", [5, 2], 0, 6),
    ("__copy", "__copy", [6], 1, 7),
    ("add", "add", [7, 3], 1, 8),
]


def inputs(names: str) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {n: rng.standard_normal(N).astype(np.float32) for n in names}


def simplex_expected(x: dict[str, np.ndarray]) -> np.ndarray:
    return x["A"] + x["B"] - x["D"]


def duplex_expected(x: dict[str, np.ndarray]) -> np.ndarray:
    return x["A"] + x["B"] - x["C"] + x["D"]


def python_kernels() -> dict[str, Any]:
    return {"add": lambda a, b, out: np.add(a, b, out=out), "sub": lambda a, b, out: np.subtract(a, b, out=out)}


def run(executor: GraphExecutor, x: dict[str, np.ndarray]) -> np.ndarray:
    return executor.run(x)[0]


def sources(scope: Scope, device: int = 0) -> list[KernelSource]:
    """add and sub as C or OpenCL C kernels for `scope`, the graph's device `device`."""
    result = []
    for name, sign in (("add", "+"), ("sub", "-")):
        if scope["kind"] == "cpu":
            text = (
                f"void {name}(const float *restrict a, const float *restrict b, float *restrict out) "
                f"{{ for (int i = 0; i < {N}; ++i) out[i] = a[i] {sign} b[i]; }}\n"
            )
            result.append(KernelSource(name, "c", text, (N,), 2, device))
        else:
            text = (
                f"__kernel void {name}(__global const float *a, __global const float *b, __global float *out) "
                f"{{ size_t i = get_global_id(0); out[i] = a[i] {sign} b[i]; }}\n"
            )
            result.append(KernelSource(name, "opencl", text, (N,), 2, device))
    return result


def simplex_on(scopes: list[Scope]) -> tuple[dict[str, Any], list[KernelSource]]:
    """TVM's simplex graph on two devices, with the kernels of each."""
    return graph(SIMPLEX, [5], scopes), [k for i, s in enumerate(scopes) for k in sources(s, i)]
