"""A loaded graph is checked against its kernels (issue 33, item 3): a shape or dtype edited in
graph.json, which made `run` crash or return wrong numbers silently, is an ArtifactError at
`load` naming the node. The artifacts are signed again after the edit, as their owner would
(`trust=True` would skip the signature but not these checks)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import xrelay
from xrelay.errors import ArtifactError
from xrelay.runtime.artifact import sha256
from xrelay.runtime.signing import sign

PROGRAM = """
func.func @main(%x: tensor<4x32xf32>, %y: tensor<4x32xf32>) -> tensor<4x32xf32> {
  %0 = relay.add %x, %y : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %1 = relay.on_device %0 {se_scope = #relay.se_scope<device = opencl>} : tensor<4x32xf32>
  %2 = relay.exp %1 : tensor<4x32xf32>
  func.return %2 : tensor<4x32xf32>
}
"""
# Its graph: x, y (opencl), fused_add (opencl), __copy, fused_exp (cpu).


@pytest.fixture(scope="module")
def built() -> Any:
    return xrelay.build(PROGRAM, targets=("c", "opencl"), default_device="cpu")


def edited(root: Path, change: Callable[[dict[str, Any]], None]) -> None:
    graph = json.loads((root / "graph.json").read_text())
    change(graph)
    (root / "graph.json").write_text(json.dumps(graph))
    manifest = json.loads((root / "manifest.json").read_text())
    manifest["files"]["graph.json"] = sha256((root / "graph.json").read_bytes())
    text = json.dumps(manifest).encode()
    (root / "manifest.json").write_bytes(text)
    (root / "manifest.sig").write_text(sign(text))


def shape(node: int, value: list[int]) -> Callable[[dict[str, Any]], None]:
    return lambda graph: graph["attrs"]["shape"][1].__setitem__(node, value)


def dtype(node: int, value: str) -> Callable[[dict[str, Any]], None]:
    return lambda graph: graph["attrs"]["dltype"][1].__setitem__(node, value)


CASES = {
    "output [1, 1]": (shape(4, [1, 1]), r"node 4 \(fused_exp\) gives kernel fused_exp its output as \[1, 1\] float32, but the kernel takes \[4, 32\]"),
    "output [-1, 32]": (shape(4, [-1, 32]), r"node 4 \(fused_exp\) has shape \[-1, 32\]; a shape is a list of non-negative"),
    "shrunk intermediate": (shape(2, [2, 32]), r"node 2 \(fused_add\) gives kernel fused_add its output as \[2, 32\]"),
    "float64 input on opencl": (dtype(0, "float64"), r"node 0 \(x\) has dtype 'float64', but opencl kernels take float32"),
    "int32 input on opencl": (dtype(0, "int32"), r"node 0 \(x\) has dtype .int32., but opencl kernels take float32, int64, bool"),
    "storage out of its pool": (lambda g: g["attrs"]["storage_id"][1].__setitem__(2, 4), r"node 4 \(fused_exp\) has storage 4 on device 0, but the storage is device 1's"),
    "storage id 99": (lambda g: g["attrs"]["storage_id"][1].__setitem__(3, 99), r"node 3 \(__copy\) has storage id 99; storage ids are 0 to 4"),
    "copy of another shape": (shape(3, [4, 31]), r"node 3 \(__copy\) copies \[4, 32\] float32 into \[4, 31\] float32"),
}  # fmt: skip


@pytest.mark.parametrize(("change", "message"), CASES.values(), ids=CASES.keys())
def test_a_graph_that_disagrees_with_its_kernels_is_refused(
    built: Any, tmp_path: Path, change: Callable[[dict[str, Any]], None], message: str
) -> None:
    built.save(tmp_path / "m")
    x, y = (np.random.default_rng(i).standard_normal((4, 32)).astype(np.float32) for i in range(2))
    np.testing.assert_allclose(xrelay.load(tmp_path / "m").run(x, y), np.exp(x + y), rtol=1e-5)
    edited(tmp_path / "m", change)
    with pytest.raises(ArtifactError, match=message):
        xrelay.load(tmp_path / "m")
    with pytest.raises(ArtifactError, match=message):
        xrelay.load(tmp_path / "m", trust=True)


def test_the_manifest_records_each_kernels_parameters(built: Any, tmp_path: Path) -> None:
    built.save(tmp_path / "m")
    kernels = {k["name"]: k["args"] for k in json.loads((tmp_path / "m" / "manifest.json").read_text())["kernels"]}
    tensor = {"shape": [4, 32], "dtype": "float32"}
    assert kernels == {"fused_add": [tensor] * 3, "fused_exp": [tensor] * 2}
