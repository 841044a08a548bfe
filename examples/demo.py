"""The main job, for now: an example model through opt-tool and the reference interpreter."""

import pathlib
import subprocess
import sys

import numpy as np

import xrelay

MODEL = pathlib.Path(__file__).with_name("mlp.mlir")


def main() -> None:
    opt_tool = pathlib.Path(sys.executable).with_name("opt-tool")
    print(f"$ opt-tool {MODEL.name}")
    print(subprocess.run([str(opt_tool), str(MODEL)], check=True, capture_output=True, text=True).stdout)
    module = xrelay.parse(MODEL.read_text(), MODEL.name)
    rng = np.random.default_rng(0)
    inputs = {
        arg.name_hint: rng.standard_normal(arg.type.get_shape()).astype(np.float32) * 0.1
        for arg in module.ops.first.args
    }
    out = xrelay.interpret(module, inputs)
    print("xrelay.interpret(@main) ->", out.shape, out.dtype)
    print(np.array2string(out[:2], precision=4))
    print("rows sum to 1:", bool(np.allclose(out.sum(axis=1), 1.0, atol=1e-5)))


if __name__ == "__main__":
    main()
