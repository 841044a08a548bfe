"""universe.py: xDSL's tools find xrelay's dialects, passes and targets through the `xdsl.universe`
entry point, load them lazily, and share no name with xDSL; opt-tool adds only what is missing.

`test/tools/xdsl_opt_plugin.mlir` runs a plain `xdsl-opt` on relay IR."""

import subprocess
import sys

import pytest
from xdsl.universe import XDSL_UNIVERSE, Universe

from xrelay.targets import TARGETS
from xrelay.tools.opt_tool import OptTool
from xrelay.transforms import PASSES
from xrelay.universe import XRELAY_UNIVERSE


def test_the_multiverse_holds_xrelay_next_to_xdsl():
    multiverse = Universe.get_multiverse()  # raises on a name two plugins define
    assert set(XRELAY_UNIVERSE.all_dialects) == {"relay", "cpu"}
    assert set(XRELAY_UNIVERSE.all_passes) == set(PASSES)
    assert set(XRELAY_UNIVERSE.all_targets) == set(TARGETS)
    for mine, theirs, everyone in [
        (XRELAY_UNIVERSE.all_dialects, XDSL_UNIVERSE.all_dialects, multiverse.all_dialects),
        (XRELAY_UNIVERSE.all_passes, XDSL_UNIVERSE.all_passes, multiverse.all_passes),
        (XRELAY_UNIVERSE.all_targets, XDSL_UNIVERSE.all_targets, multiverse.all_targets),
    ]:
        assert not set(mine) & set(theirs)
        assert all(everyone[name] is loader for name, loader in mine.items())
        assert all(name in everyone for name in theirs)


def test_every_loader_gives_what_it_is_named():
    assert XRELAY_UNIVERSE.all_dialects["relay"]().name == "relay"
    for name, loader in [*XRELAY_UNIVERSE.all_passes.items(), *XRELAY_UNIVERSE.all_targets.items()]:
        assert loader().name == name


def test_finding_the_plugins_imports_no_pass_target_or_dialect():
    # What `xdsl-opt` does at start-up, in a fresh interpreter.
    code = (
        "import sys; from xdsl.universe import Universe; Universe.get_multiverse(); "
        "print(*sorted(m for m in sys.modules if m.startswith('xrelay')))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    modules = set(loaded.stdout.split())
    assert "xrelay.universe" in modules
    assert modules <= {
        "xrelay",
        "xrelay.universe",
        "xrelay.dialects",
        "xrelay.transforms",
        "xrelay.targets",
        "xrelay.errors",
        "xrelay.ir",
    }


def test_opt_tool_registers_what_the_multiverse_holds():
    # Installed: everything of xrelay's came through the entry point; opt-tool adds nothing.
    multiverse = Universe.get_multiverse()
    tool = OptTool(args=[])
    assert set(tool.ctx.registered_dialect_names) == set(multiverse.all_dialects)
    assert tool.available_passes == multiverse.all_passes
    assert set(tool.available_targets) == set(multiverse.all_targets)


def test_opt_tool_without_the_entry_point(monkeypatch: pytest.MonkeyPatch):
    # A source tree that is not installed has no entry point: opt-tool registers xrelay's own.
    monkeypatch.setattr(Universe, "get_multiverse", staticmethod(lambda: XDSL_UNIVERSE))
    tool = OptTool(args=[])
    assert "relay" in tool.ctx.registered_dialect_names
    assert set(PASSES) <= set(tool.available_passes)
    assert set(TARGETS) <= set(tool.available_targets)
