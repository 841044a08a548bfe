"""onnx's backend node test cases, generated once into a cache outside the repository.

onnx wheels since 1.16 ship the case definitions (`onnx.backend.test.case.node`), not the
generated data. `cases()` writes them as onnx's `backend-test-tools generate-data` does
(`<case>/model.onnx`, `<case>/test_data_set_N/{input,output}_M.pb`, plus `<case>/tolerance.json`)
into `$XDG_CACHE_HOME/xrelay/onnx-node-tests-<onnx version>/` (default `~/.cache`), once: a
complete cache has a `done` marker, and a half-written one (another process generating, or an
interrupted run) is never read, as the cache is renamed into place when complete.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import ModelProto, TensorProto, numpy_helper


@dataclass(frozen=True)
class NodeCase:
    """One generated case: the model and its data sets (inputs, expected outputs)."""

    name: str
    path: Path

    def model(self) -> ModelProto:
        return onnx.load(str(self.path / "model.onnx"))

    def data_sets(self) -> list[tuple[list[np.ndarray], list[np.ndarray]]]:
        sets: list[tuple[list[np.ndarray], list[np.ndarray]]] = []
        for folder in sorted(self.path.glob("test_data_set_*")):
            sets.append((_arrays(folder, "input"), _arrays(folder, "output")))
        return sets

    def tolerance(self) -> tuple[float, float]:
        data = json.loads((self.path / "tolerance.json").read_text())
        return float(data["rtol"]), float(data["atol"])


def _arrays(folder: Path, kind: str) -> list[np.ndarray]:
    files = sorted(folder.glob(f"{kind}_*.pb"), key=lambda p: int(p.stem.split("_")[1]))
    arrays: list[np.ndarray] = []
    for file in files:
        tensor = TensorProto()
        tensor.ParseFromString(file.read_bytes())
        arrays.append(numpy_helper.to_array(tensor))
    return arrays


def cache_dir() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "xrelay" / f"onnx-node-tests-{onnx.__version__}"


def cases() -> list[NodeCase]:
    """Every generated node case with tensor inputs and outputs, by name."""
    root = cache_dir()
    if not (root / "done").exists():
        _generate(root)
    return [NodeCase(p.name, p) for p in sorted(root.iterdir()) if p.is_dir()]


def _generate(root: Path) -> None:
    from onnx.backend.test.case import node

    root.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=root.name + ".", dir=root.parent))
    for case in node.collect_testcases(None):
        if case.kind == "node" and case.model is not None and _tensors_only(case.model, case.data_sets or []):
            _write_case(staging / case.name, case.model, case.data_sets or [], case.rtol, case.atol)
    (staging / "done").touch()
    try:
        staging.rename(root)
    except OSError:  # another process finished first
        shutil.rmtree(staging, ignore_errors=True)


def _tensors_only(model: ModelProto, data_sets: Sequence[tuple[Sequence[object], Sequence[object]]]) -> bool:
    typed = [*model.graph.input, *model.graph.output]
    if not all(v.type.HasField("tensor_type") for v in typed):
        return False
    return all(isinstance(a, np.ndarray | np.generic) for ins, outs in data_sets for a in [*ins, *outs])


def _write_case(
    folder: Path,
    model: ModelProto,
    data_sets: Sequence[tuple[Sequence[np.ndarray], Sequence[np.ndarray]]],
    rtol: float,
    atol: float,
) -> None:
    folder.mkdir(parents=True)
    (folder / "model.onnx").write_bytes(model.SerializeToString())
    (folder / "tolerance.json").write_text(json.dumps({"rtol": rtol, "atol": atol}))
    for i, (inputs, outputs) in enumerate(data_sets):
        data = folder / f"test_data_set_{i}"
        data.mkdir()
        for kind, arrays, infos in (("input", inputs, model.graph.input), ("output", outputs, model.graph.output)):
            for j, (array, info) in enumerate(zip(arrays, infos)):
                tensor = numpy_helper.from_array(np.asarray(array), info.name)
                (data / f"{kind}_{j}.pb").write_bytes(tensor.SerializeToString())
