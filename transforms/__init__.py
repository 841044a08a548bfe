"""xrelay's passes, by CLI name, each imported on first use (like xDSL's `get_all_passes`).

`get_all_passes` also holds the few of xDSL's own passes that xrelay's pipelines run (the
compile pipeline cleans up after convert-relay-to-loops with dce, licm and cse), so that a
pipeline spec naming them resolves through this registry alone; opt-tool registers all of
xDSL's passes anyway.
"""

from collections.abc import Callable
from importlib import import_module

from xdsl.passes import ModulePass

# CLI name -> (module under xrelay.transforms, class name)
PASSES: dict[str, tuple[str, str]] = {
    "plan-devices": ("plan_devices", "PlanDevicesPass"),
    "fuse-ops": ("fuse_ops", "FuseOpsPass"),
    "inline-calls": ("inline_calls", "InlineCallsPass"),
    "plan-memory": ("plan_memory", "PlanMemoryPass"),
    "convert-relay-to-loops": ("convert_relay_to_loops", "ConvertRelayToLoopsPass"),
    "split-reductions": ("split_reductions", "SplitReductionsPass"),
}

# xDSL's passes that xrelay's pipelines run: CLI name -> (module under xdsl.transforms, class)
XDSL_PASSES: dict[str, tuple[str, str]] = {
    "dce": ("dead_code_elimination", "DeadCodeElimination"),
    "cse": ("common_subexpression_elimination", "CommonSubexpressionElimination"),
    "licm": ("loop_invariant_code_motion", "LoopInvariantCodeMotionPass"),
}


def _loader(package: str, module: str, cls: str) -> Callable[[], type[ModulePass]]:
    return lambda: getattr(import_module(f"{package}.{module}"), cls)


def get_all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    return {
        **{name: _loader("xdsl.transforms", m, c) for name, (m, c) in XDSL_PASSES.items()},
        **{name: _loader("xrelay.transforms", m, c) for name, (m, c) in PASSES.items()},
    }
