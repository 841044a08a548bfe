"""GFLOP/s of the conv kernels built for the native machine and for `c -march=x86-64-v3`
(AVX2: 8 floats x 16 registers), before and after a change, in one interleaved run.

The cases are the reference models' convs (bench/models.py): the ResNet basic block's
64 -> 64 3x3 at 56x56 (batch 1) and the CNN's 1 -> 16 at 28x28 and 16 -> 32 at 14x14
(batch 8), each a plain conv2d with padding 1 (winograd_conv's time counted as the direct
conv's flops). "after" is this checkout; "before" is the checkout whose Python `--before`
names (e.g. /work/main/.venv/bin/python), which prints its kernels' sources
(`--emit-sources`); every kernel is built here by the same gcc with the target's flags, at
1 thread, checked against numpy, and timed in interleaved rounds (medians).

For each v3 kernel the script also compiles it with `gcc -O3 -march=native <target flags> -S`
and counts the FMAs that take a stack operand (`(%rsp)`): a spilled sum or operand, or a read
of a stack scratch buffer (winograd_conv's finite probe reads its Y block so, outside the
product loop: look there in `-S` before calling a count a spill).

    OMP_NUM_THREADS=1 .venv/bin/python bench/conv_isa.py --before /work/main/.venv/bin/python
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from kernels import Case, conv2d
from timing import interleaved_medians
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import PassPipeline

import xrelay
from xrelay.driver import all_passes
from xrelay.runtime.c_library import C_BASE_FLAGS, build_c, c_flags
from xrelay.runtime.kernels import KernelSource
from xrelay.runtime.machine import host_name, target_features
from xrelay.targets.kernels import kernel_sources
from xrelay.transforms.convert_relay_to_loops import SCHEDULE_ATTR
from xrelay.transforms.plan_devices import PlanDevicesPass

CASES = {
    "resnet 64->64 56x56": conv2d(1, 64, 56, 64, 3, 1),
    "cnn 1->16 28x28 b8": conv2d(8, 1, 28, 16, 3, 1),
    "cnn 16->32 14x14 b8": conv2d(8, 16, 14, 32, 3, 1),
}
TARGETS = ("c", "c -march=x86-64-v3")


def lowered(text: str, target: str) -> ModuleOp:
    """`text` lowered as bench/kernels.py lowers it, for a target string with flags."""
    module, ctx = xrelay.parse(text), xrelay.context()
    PlanDevicesPass(targets=(target,)).apply(ctx, module)
    lowering = "fuse-ops,convert-relay-to-loops,dce,licm,cse,split-reductions"
    PassPipeline.parse_spec(all_passes(), lowering).apply(ctx, module)
    return module


def sources() -> dict[str, dict[str, Any]]:
    """Each case's kernel for each target, as this checkout lowers it (with its schedule)."""
    out: dict[str, dict[str, Any]] = {}
    for name, case in CASES.items():
        for target in TARGETS:
            module = lowered(case.module_text(), target)
            (source,) = kernel_sources(module)
            schedule = [str(op.attributes[SCHEDULE_ATTR]) for op in module.ops if SCHEDULE_ATTR in op.attributes]
            out[f"{name}|{target}"] = {**source.__dict__, "global_size": list(source.global_size), "schedule": schedule}
    return out


def before_sources(python: str) -> dict[str, dict[str, Any]]:
    run = subprocess.run([python, __file__, "--emit-sources"], capture_output=True, text=True, check=True)
    return json.loads(run.stdout)


def kernel_source(data: dict[str, Any]) -> KernelSource:
    fields = {k: v for k, v in data.items() if k != "schedule"}
    fields["global_size"] = tuple(fields["global_size"])
    if fields.get("local_size") is not None:
        fields["local_size"] = tuple(fields["local_size"])
    return KernelSource(**fields)


def stack_fmas(source: KernelSource, target: str) -> tuple[int, int]:
    """(FMAs with a (%rsp) operand, all FMAs) in gcc -O3's assembly of the kernel."""
    with tempfile.TemporaryDirectory() as tmp:
        c_file = Path(tmp) / "k.c"
        c_file.write_text(source.source)
        flags = [f for f in C_BASE_FLAGS if f != "-shared"] + ["-fopenmp"] + c_flags(target)
        subprocess.run(["gcc", *flags, "-S", "-o", str(Path(tmp) / "k.s"), str(c_file)], check=True)
        fmas = [line for line in (Path(tmp) / "k.s").read_text().splitlines() if re.search(r"\bvfn?madd", line)]
    return sum("(%rsp)" in line for line in fmas), len(fmas)


def timed(case: Case, source: KernelSource, target: str, arrays: list[np.ndarray]) -> Callable[[], object]:
    kernel = build_c([source], flags=c_flags(target), num_threads=1)[source.name].function
    out = np.zeros(case.output, np.float32)
    addresses = [a.ctypes.data for a in (*arrays, out)]
    kernel(*addresses)
    expected = case.reference(*arrays)
    np.testing.assert_allclose(out, expected, rtol=1e-3, atol=1e-3 * float(np.abs(expected).max()))
    return lambda: (kernel(*addresses), out)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--before", help="the Python of the checkout to compare with")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--emit-sources", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.emit_sources:
        print(json.dumps(sources()))
        return
    builds = {"after": sources()}
    if args.before:
        builds["before"] = before_sources(args.before)
    print(f"machine: {host_name()}; load {Path('/proc/loadavg').read_text().split()[:3]}")
    for target in TARGETS:
        print(f"  {target!r}: {target_features(target).summary()}")
    threads = os.environ.get("OMP_NUM_THREADS")
    print(f"C at 1 thread (OMP_NUM_THREADS={threads}), GFLOP/s, medians of {args.rounds} interleaved rounds")
    for name, case in CASES.items():
        rng = np.random.default_rng(0)
        arrays = [rng.standard_normal(s).astype(np.float32) for s in case.inputs]
        fns: dict[str, Callable[[], object]] = {}
        notes: dict[str, str] = {}
        for build, table in builds.items():
            for target in TARGETS:
                data = table[f"{name}|{target}"]
                source = kernel_source(data)
                key = f"{build} {target}"
                fns[key] = timed(case, source, target, arrays)
                spills, fmas = stack_fmas(source, target)
                notes[key] = f"{data['schedule']}, FMAs on the stack {spills} of {fmas}"
        seconds = interleaved_medians(fns, args.rounds)
        print(f"  {name}")
        for key, s in seconds.items():
            print(f"    {key:<28} {case.flops / s / 1e9:8.1f}  {notes[key]}")


if __name__ == "__main__":
    sys.exit(main())
