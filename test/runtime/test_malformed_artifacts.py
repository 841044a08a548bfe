"""Malformed artifacts, signed as their owner would sign them (so the checks behind the
signature are what is tested): each is an ArtifactError saying what is wrong, never a raw
exception (issue 33, item 4: the 12 kinds a new user found)."""

from __future__ import annotations

import io
import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from graphs import CL0, CPU, simplex_on

import xrelay.runtime
from xrelay.errors import ArtifactError
from xrelay.runtime import Executable
from xrelay.runtime.artifact import sha256
from xrelay.runtime.signing import sign

Edit = Callable[[Path], None]


def write_signed(root: Path, manifest: Any) -> None:
    text = json.dumps(manifest).encode()
    (root / "manifest.json").write_bytes(text)
    (root / "manifest.sig").write_text(sign(text))


def manifest_of(root: Path) -> dict[str, Any]:
    return json.loads((root / "manifest.json").read_text())


def replace_file(name: str, data: Callable[[Path], bytes]) -> Edit:
    def edit(root: Path) -> None:
        (root / name).write_bytes(data(root))
        manifest = manifest_of(root)
        manifest["files"][name] = sha256((root / name).read_bytes())
        write_signed(root, manifest)

    return edit


def edit_manifest(change: Callable[[dict[str, Any]], Any]) -> Edit:
    return lambda root: write_signed(root, change(manifest_of(root)))


def edit_graph(change: Callable[[dict[str, Any]], Any]) -> Edit:
    def data(root: Path) -> bytes:
        return json.dumps(change(json.loads((root / "graph.json").read_text()))).encode()

    return replace_file("graph.json", data)


def rename_kernel(language: str) -> Edit:
    """The kernel `add` of `language` named `../../x` (its file keeps its name)."""

    def change(manifest: dict[str, Any]) -> dict[str, Any]:
        (kernel,) = [k for k in manifest["kernels"] if k["name"] == "add" and k["language"] == language]
        kernel["name"] = "../../x"
        return manifest

    return edit_manifest(change)


def node_input(node: int, source: int) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def change(graph: dict[str, Any]) -> dict[str, Any]:
        graph["nodes"][node]["inputs"][0][0] = source
        return graph

    return change


def dltype(graph: dict[str, Any]) -> dict[str, Any]:
    graph["attrs"]["dltype"][1][0] = "object"
    return graph


def num_inputs(manifest: dict[str, Any]) -> dict[str, Any]:
    """The OpenCL kernel `add` (node 3 calls it) said to take 5 inputs, its parameters kept."""
    (kernel,) = [k for k in manifest["kernels"] if k["name"] == "add" and k["language"] == "opencl"]
    kernel["num_inputs"] = 5
    return manifest


def object_params(root: Path) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, A=np.array([{"a": 1}, None], dtype=object))
    return buffer.getvalue()


def library_without_symbols(root: Path) -> bytes:
    (root.parent / "empty.c").write_text("int xrelay_nothing_here;\n")
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", root.parent / "empty.so", root.parent / "empty.c"], check=True)
    return (root.parent / "empty.so").read_bytes()


# (case, edit, what the message says): the simplex graph on cpu (device 0) and opencl (device 1).
CASES: list[tuple[str, Edit, str]] = [
    ("manifest a list", edit_manifest(lambda m: [m]), "manifest.json must be a JSON object, but is list"),
    ("no kernels key", edit_manifest(lambda m: {k: v for k, v in m.items() if k != "kernels"}), "has no 'kernels' key"),
    ("graph a list", edit_graph(lambda g: [g]), "graph.json: the graph must be a JSON object, but is list"),
    ("node input 99", edit_graph(node_input(3, 99)), r"node 3 \(add\) reads input \[99, 0, 0\], which names node 99"),
    ("cyclic input", edit_graph(node_input(3, 5)), r"node 3 \(add\) reads input \[5, 0, 0\].*no cycles"),
    ("dltype object", edit_graph(dltype), r"node 0 \(A\) has dtype 'object', but opencl kernels take float32"),
    ("num_inputs 5", edit_manifest(num_inputs), r"kernel add takes 5 inputs, but has 3 parameters"),
    ("C kernel ../../x", rename_kernel("c"), r"names a kernel '../../x'; a kernel's name is a C identifier"),
    ("OpenCL kernel ../../x", rename_kernel("opencl"), r"names a kernel '../../x'; a kernel's name is a C identifier"),
    ("library missing a symbol", replace_file("kernels/device0.so", library_without_symbols), "has no kernel add"),
    ("object-array params", replace_file("params.npz", object_params), "params.npz is not an archive of numeric"),
    ("params not a zip", replace_file("params.npz", lambda root: b"not a zip"), "params.npz is not an archive"),
]


@pytest.mark.parametrize(("edit", "message"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_malformed_artifact_is_an_artifact_error(tmp_path: Path, edit: Edit, message: str) -> None:
    graph, kernels = simplex_on([CPU, CL0])
    Executable(graph, kernels, {}).save(tmp_path / "m")
    xrelay.runtime.load(tmp_path / "m")  # (as saved, it loads)
    edit(tmp_path / "m")
    with pytest.raises(ArtifactError, match=message):
        xrelay.runtime.load(tmp_path / "m")
