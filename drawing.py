"""
`xrelay.render`: the placement and fusion picture of a program, drawn by Graphviz.

    xrelay.render(text, "model.svg", targets=("c", "opencl"))  # planned and fused as build does
    xrelay.render(module, "model.png")     # a module already through plan-devices, drawn as it is
    xrelay.render(module, "model.dot")     # the DOT text itself (no Graphviz needed)

The picture is the `-t dot` text (`xrelay.targets.dot`: one colour per scope with a legend,
fused groups as clusters, copies as bold labelled edges) laid out by Graphviz's `dot`
program, run as a subprocess; xrelay draws nothing itself. Without `dot` on the PATH,
rendering raises a `RenderError` saying how to install it.

With `targets`, the program (text, a .mlir path or a module, which is not changed) first
goes through plan-devices and fuse-ops with those options, as `xrelay.build` runs them, so
the picture shows what build would place and fuse. Without, it is drawn at the stage it is
in, which must be after plan-devices.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from xdsl.dialects.builtin import ModuleOp

from xrelay.diagnostics import LoweringError
from xrelay.errors import Error, UsageError
from xrelay.ir import Program, as_module, context
from xrelay.targets.dot import check_planned, program_dot
from xrelay.transforms import get_all_passes
from xrelay.transforms.compilation_config import targets_named_in

# file extension -> Graphviz output format (`dot -T...`); ".dot" is the text, not drawn
FORMATS = {".svg": "svg", ".png": "png", ".pdf": "pdf"}
INSTALL = "install Graphviz (Debian/Ubuntu: apt-get install graphviz; macOS: brew install graphviz)"


class RenderError(Error):
    """Graphviz is missing, or failed to draw the picture."""


def render(
    program: Program,
    path: str | Path,
    targets: str | Sequence[str] | None = None,
    default_device: str | None = None,
    host_target: str = "c",
    dot: str = "dot",
) -> Path:
    """Writes the picture of `program` to `path`, in the format its extension names (.svg,
    .png, .pdf, or .dot for the DOT text); returns the path. With `targets` (and
    `default_device`, `host_target`, as `xrelay.build` takes them) it is planned and fused
    first; without, a module not yet past plan-devices is planned and fused for the targets
    its scopes name (and "c"). `dot` is the Graphviz program to run."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (*FORMATS, ".dot"):
        raise UsageError(f"xrelay.render writes .svg, .png, .pdf or .dot files, but was given {str(path)!r}")
    module = as_module(program, "xrelay.render")
    if targets is None and not is_planned(module):
        targets = targets_named_in(module)
    if targets is not None:
        module = planned_and_fused(module, targets, default_device, host_target)
    text = program_dot(module, PLAN_IT)
    if suffix == ".dot":
        path.write_text(text)
    else:
        path.write_bytes(run_dot(text, FORMATS[suffix], dot))
    return path


def is_planned(module: ModuleOp) -> bool:
    """Whether every value the picture draws has a canonical scope (plan-devices has run)."""
    try:
        check_planned(module)
    except LoweringError:
        return False
    return True


PLAN_IT = "run plan-devices first, or give xrelay.render targets=... to plan and fuse it as xrelay.build does"


def planned_and_fused(
    module: ModuleOp, targets: str | Sequence[str], default_device: str | None, host_target: str
) -> ModuleOp:
    """A copy of `module` after fuse-layer-norm, plan-devices, combine-parallel-dense, fuse-ops,
    fuse-conv-pool and fuse-attention, with build's options."""
    names = tuple(t.strip() for t in targets.split(",")) if isinstance(targets, str) else tuple(targets)
    options = {"targets": names, "default_device": default_device, "host_target": host_target}
    module, passes = module.clone(), get_all_passes()
    passes["fuse-layer-norm"]()().apply(context(), module)
    passes["plan-devices"]()(**options).apply(context(), module)
    passes["combine-parallel-dense"]()().apply(context(), module)
    passes["fuse-ops"]()().apply(context(), module)
    passes["fuse-conv-pool"]()().apply(context(), module)
    passes["fuse-attention"]()().apply(context(), module)
    return module


def run_dot(text: str, fmt: str, dot: str = "dot") -> bytes:
    """`text` laid out and drawn by Graphviz in format `fmt`."""
    program = shutil.which(dot)
    if program is None:
        raise RenderError(f"xrelay.render needs Graphviz's '{dot}' program, which is not on the PATH; {INSTALL}")
    done = subprocess.run([program, f"-T{fmt}"], input=text.encode(), capture_output=True, check=False)
    if done.returncode != 0:
        message = done.stderr.decode(errors="replace").strip()
        raise RenderError(f"Graphviz's {dot} failed to draw the picture (exit status {done.returncode}): {message}")
    return done.stdout
