"""Deep programs (issue 33, item 5): a chain of N fusible ops built, run and interpreted,
checked against numpy, with the time of each stage, so that build time can be seen to grow
linearly with N.

    .venv/bin/python bench/deep_programs.py [--ops 200 2000 10000] [--target c]

The chain is test/unit/test_deep_programs.py's (negative, add, tanh, transpose, reshape,
relu on a 4x8 input); the tests run 200 and 2,000 ops, this runs 10,000 too.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

import xrelay

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "test" / "unit"))
from test_deep_programs import X, elementwise_chain


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ops", type=int, nargs="+", default=[200, 2000, 10000])
    parser.add_argument("--target", default="c")
    args = parser.parse_args()
    print(f"{'ops':>6} {'interpret s':>12} {'build s':>8} {'build us/op':>12} {'max error':>10}")
    for n in args.ops:
        module, want = elementwise_chain(n)
        start = time.perf_counter()
        xrelay.interpret(module, [X])
        interpreted = time.perf_counter() - start
        start = time.perf_counter()
        exe = xrelay.build(module, targets=(args.target,))
        built = time.perf_counter() - start
        error = float(np.max(np.abs(exe.run(X) - want)))
        print(f"{n:>6} {interpreted:>12.2f} {built:>8.2f} {built / n * 1e6:>12.0f} {error:>10.2g}")


if __name__ == "__main__":
    main()
