"""`xrelay.render`: the `-t dot` picture drawn by the real Graphviz `dot`, checked in the SVG
it writes (clusters, legend, copy edges), and its errors."""

from __future__ import annotations

import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from xdsl.dialects.builtin import ModuleOp

import xrelay
from xrelay.diagnostics import LoweringError
from xrelay.drawing import RenderError, render
from xrelay.targets.dot import check_planned
from xrelay.transforms import get_all_passes

EXAMPLES = Path(__file__).parents[2] / "examples"
SVG = "{http://www.w3.org/2000/svg}"
needs_dot = pytest.mark.skipif(
    shutil.which("dot") is None, reason="Graphviz's dot is not installed (make setup installs it)"
)


def planned(name: str, passes: str = "plan-devices,fuse-ops") -> ModuleOp:
    module = xrelay.parse((EXAMPLES / name).read_text(), name)
    available = get_all_passes()
    for p in passes.split(","):
        options = {"targets": ("c", "opencl")} if p == "plan-devices" else {}
        available[p]()(**options).apply(xrelay.context(), module)
    return module


def svg_groups(path: Path) -> dict[str, list[str]]:
    """class ("cluster", "node", "edge") -> the texts of each such SVG group, joined by spaces."""
    groups: dict[str, list[str]] = {}
    for g in ET.parse(path).getroot().iter(f"{SVG}g"):
        texts = " ".join(t.text or "" for t in g.iter(f"{SVG}text"))
        groups.setdefault(g.get("class", ""), []).append(texts)
    return groups


@needs_dot
def test_svg_of_the_mlp_has_its_kernels_legend_and_copy(tmp_path: Path) -> None:
    path = render(planned("mlp.mlir"), tmp_path / "mlp.svg")
    groups = svg_groups(path)
    clusters = groups["cluster"]
    assert "scopes" in clusters and "@main" in clusters
    assert {
        "fused_nn_dense_nn_bias_add_nn_relu",
        "fused_nn_dense_nn_bias_add_nn_relu_1",
        "fused_nn_dense_nn_bias_add",
        "fused_nn_softmax",
    } <= set(clusters)
    assert "cpu:0 target c, memory global" in groups["node"]
    assert "opencl:0 target opencl, memory global" in groups["node"]
    # the one copy: 32x256 f32 from OpenCL to the host, drawn as the one labelled edge
    assert [e for e in groups["edge"] if e] == ["32768 bytes opencl:0 → cpu:0"]
    assert "%x 32x784xf32" in groups["node"] and "result 0 32x10xf32" in groups["node"]


@needs_dot
def test_png_after_lowering(tmp_path: Path) -> None:
    module = planned("two_devices.mlir", "plan-devices,fuse-ops,convert-relay-to-loops")
    path = render(module, tmp_path / "model.png")
    assert path.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def test_dot_text_needs_no_graphviz(tmp_path: Path) -> None:
    path = render(planned("two_devices.mlir"), tmp_path / "model.dot", dot="no-such-graphviz")
    text = path.read_text()
    assert text.startswith("digraph xrelay {") and 'label="24 bytes\\nopencl:0 → cpu:0"' in text


def test_missing_graphviz_says_how_to_install_it(tmp_path: Path) -> None:
    with pytest.raises(
        RenderError, match=r"'no-such-graphviz' program, which is not on the PATH; .*apt-get install graphviz"
    ):
        render(planned("two_devices.mlir"), tmp_path / "model.svg", dot="no-such-graphviz")
    assert issubclass(RenderError, xrelay.Error) and xrelay.RenderError is RenderError


def test_an_unplanned_module_is_planned_for_the_targets_its_scopes_name(tmp_path: Path) -> None:
    """DESIGN.md §5's `xrelay.render(module, "model.svg")` on a module as parsed: planned and
    fused for "c" and the targets its scopes name (here opencl), the module unchanged."""
    module = xrelay.parse((EXAMPLES / "two_devices.mlir").read_text(), "two_devices.mlir")
    before = str(module)
    text = render(module, tmp_path / "model.dot").read_text()
    assert str(module) == before
    assert "fused_nn_dense_nn_bias_add" in text and "opencl:0 → cpu:0" in text
    assert text == render(module, tmp_path / "again.dot", targets=("c", "opencl")).read_text()


def test_the_dot_target_before_plan_devices_names_the_pass() -> None:
    module = xrelay.parse((EXAMPLES / "two_devices.mlir").read_text(), "two_devices.mlir")
    with pytest.raises(
        LoweringError, match=r"relay.nn.dense at two_devices.mlir:2:3 has no canonical se_scope; run plan-devices first"
    ):
        check_planned(module)


def test_targets_plan_and_fuse_a_copy_as_build_does(tmp_path: Path) -> None:
    """With targets, text or a module is planned and fused first (the module is not changed):
    the same picture as a module planned and fused by hand."""
    path = EXAMPLES / "mlp.mlir"
    module = xrelay.parse(path.read_text(), path.name)
    before = str(module)
    by_hand = render(planned("mlp.mlir"), tmp_path / "by_hand.dot").read_text()
    assert render(module, tmp_path / "module.dot", targets=("c", "opencl")).read_text() == by_hand
    assert render(path, tmp_path / "path.dot", targets="c,opencl").read_text() == by_hand
    assert str(module) == before


def test_bad_format_argument_or_config(tmp_path: Path) -> None:
    with pytest.raises(xrelay.UsageError, match=r"writes .svg, .png, .pdf or .dot files, but was given '.*model.jpeg'"):
        render(planned("two_devices.mlir"), tmp_path / "model.jpeg")
    with pytest.raises(
        xrelay.UsageError, match="xrelay.render takes relay text, a path to a .mlir file or an xDSL module"
    ):
        render(42, tmp_path / "model.svg")  # pyright: ignore[reportArgumentType]
    with pytest.raises(xrelay.ConfigError, match="opencl"):  # an opencl annotation, and no opencl target
        render(EXAMPLES / "two_devices.mlir", tmp_path / "model.dot", targets=("c",))
