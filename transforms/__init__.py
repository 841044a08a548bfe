"""xrelay's passes, by CLI name, each imported on first use (like xDSL's `get_all_passes`)."""

from collections.abc import Callable
from importlib import import_module

from xdsl.passes import ModulePass

# CLI name -> (module under xrelay.transforms, class name)
PASSES: dict[str, tuple[str, str]] = {
    "place-by-cost": ("place_by_cost", "PlaceByCostPass"),
    "plan-devices": ("plan_devices", "PlanDevicesPass"),
    "fuse-ops": ("fuse_ops", "FuseOpsPass"),
    "fuse-layer-norm": ("fuse_layer_norm", "FuseLayerNormPass"),
    "sink-reshapes": ("sink_reshapes", "SinkReshapesPass"),
    "pool-before-conv": ("pool_before_conv", "PoolBeforeConvPass"),
    "combine-parallel-dense": ("combine_parallel_dense", "CombineParallelDensePass"),
    "fuse-conv-pool": ("fuse_conv_pool", "FuseConvPoolPass"),
    "fuse-attention": ("fuse_attention", "FuseAttentionPass"),
    "inline-calls": ("inline_calls", "InlineCallsPass"),
    "plan-memory": ("plan_memory", "PlanMemoryPass"),
    "convert-relay-to-loops": ("convert_relay_to_loops", "ConvertRelayToLoopsPass"),
    "split-reductions": ("split_reductions", "SplitReductionsPass"),
}


def _loader(module: str, cls: str) -> Callable[[], type[ModulePass]]:
    return lambda: getattr(import_module(f"xrelay.transforms.{module}"), cls)


def get_all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    return {name: _loader(module, cls) for name, (module, cls) in PASSES.items()}
