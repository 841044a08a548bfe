"""
`xrelay.render`: the placement and fusion picture of a program, drawn by Graphviz.

    module = xrelay.parse(text)
    ...plan-devices, and fuse-ops or the lowering if you like...
    xrelay.render(module, "model.svg")     # or .png, .pdf; .dot writes the DOT text itself

The picture is the `-t dot` text (`xrelay.targets.dot`: one colour per scope with a legend,
fused groups as clusters, copies as bold labelled edges) laid out by Graphviz's `dot`
program, run as a subprocess; xrelay draws nothing itself. Without `dot` on the PATH,
rendering raises a `RenderError` saying how to install it.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from xdsl.dialects.builtin import ModuleOp

from xrelay.errors import Error, UsageError
from xrelay.targets.dot import program_dot

# file extension -> Graphviz output format (`dot -T...`); ".dot" is the text, not drawn
FORMATS = {".svg": "svg", ".png": "png", ".pdf": "pdf"}
INSTALL = "install Graphviz (Debian/Ubuntu: apt-get install graphviz; macOS: brew install graphviz)"


class RenderError(Error):
    """Graphviz is missing, or failed to draw the picture."""


def render(module: ModuleOp, path: str | Path, dot: str = "dot") -> Path:
    """Writes the picture of `module` (after plan-devices) to `path`, in the format its
    extension names (.svg, .png, .pdf, or .dot for the DOT text); returns the path. `dot` is
    the Graphviz program to run."""
    if not isinstance(module, ModuleOp):  # pyright: ignore[reportUnnecessaryIsInstance] (a user's argument)
        raise UsageError(
            f"xrelay.render takes an xDSL ModuleOp (from xrelay.parse), but was given {type(module).__name__}"
        )
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (*FORMATS, ".dot"):
        raise UsageError(f"xrelay.render writes .svg, .png, .pdf or .dot files, but was given {str(path)!r}")
    text = program_dot(module)
    if suffix == ".dot":
        path.write_text(text)
    else:
        path.write_bytes(run_dot(text, FORMATS[suffix], dot))
    return path


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
