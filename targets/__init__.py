"""xrelay's output targets for `opt-tool -t NAME`, each imported on first use."""

from collections.abc import Callable
from importlib import import_module

from xdsl.utils.target import Target

# target name -> (module under xrelay.targets, class name)
TARGETS: dict[str, tuple[str, str]] = {
    "graph-json": ("graph_json", "GraphJSONTarget"),
    "c": ("c", "CTarget"),
    "opencl": ("opencl", "OpenCLTarget"),
    "dot": ("dot", "DotTarget"),
}


def _loader(module: str, cls: str) -> Callable[[], type[Target]]:
    return lambda: getattr(import_module(f"xrelay.targets.{module}"), cls)


def get_all_targets() -> dict[str, Callable[[], type[Target]]]:
    return {name: _loader(module, cls) for name, (module, cls) in TARGETS.items()}
