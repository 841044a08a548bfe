"""xrelay's dialects, passes and targets for xDSL's own tools (`xdsl-opt`, `xdsl-gui`, ...).

pyproject.toml names `XRELAY_UNIVERSE` under the `xdsl.universe` entry point, so xDSL's
`Universe.get_multiverse()` finds it once xrelay is installed:

    xdsl-opt model.mlir -p 'plan-devices{targets=c,opencl default-device=opencl}'

Every entry is a loader: a tool that starts up imports only these registries, and a pass,
target or dialect module when it is used. The names must not clash with xDSL's (or another
plugin's): the multiverse refuses duplicates.
"""

from xdsl.universe import Universe

from xrelay.dialects import get_all_dialects
from xrelay.targets import get_all_targets
from xrelay.transforms import get_all_passes

XRELAY_UNIVERSE = Universe(
    all_dialects=get_all_dialects(),
    all_passes=get_all_passes(),
    all_targets=get_all_targets(),
)
