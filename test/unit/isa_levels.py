"""The C targets of the x86-64 ISA levels that kernel tests build for, and which of them this
host can run.

    @pytest.mark.parametrize("target", isa_params())
    def test_kernel(target: str) -> None:
        exe = xrelay.build(text, targets=(target,))   # "c -march=x86-64-v2" / "-v3" / "c"

    plan = winograd_conv.plan_of(group_of(text, (PLANNED,)))  # the numbers of an AVX-512 machine

x86-64-v2 is SSE4.2 (4 floats per vector, no FMA), x86-64-v3 AVX2 with FMA (8 floats, 16
registers), and plain "c" the host as `gcc -march=native` builds for it. A level is skipped
where the CPU lacks one of its instructions (decided from /proc/cpuinfo's flags), since its
kernels would die of SIGILL there.
"""

from __future__ import annotations

import re
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from xrelay.runtime.c_library import C_BASE_FLAGS, c_flags

ISA_TARGETS = ("c -march=x86-64-v2", "c -march=x86-64-v3", "c")

# The machine whose numbers the plan tests state (tiles, blocks, which schedule is taken):
# AVX-512, 16 floats x 32 registers, whatever the host. Kernels planned for it are only
# planned or printed there, never run (a host without AVX-512 could not run them).
PLANNED = "c -march=x86-64-v4"
# The OpenCL device they state them for: PoCL on such a machine, 16-float vectors (and 32
# registers). Unlike PLANNED's kernels, these run anywhere: PoCL splits a float16 as it must.
OPENCL_PLANNED = "opencl -vector-width=16"

# The /proc/cpuinfo flags each level needs (Linux's names: lzcnt is "abm"), after the
# x86-64 psABI's level definitions.
V2_FLAGS = frozenset({"cx16", "lahf_lm", "popcnt", "sse4_1", "sse4_2", "ssse3"})
V3_FLAGS = V2_FLAGS | {"avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave"}
V4_FLAGS = V3_FLAGS | {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"}
LEVEL_FLAGS = {"x86-64-v2": V2_FLAGS, "x86-64-v3": V3_FLAGS, "x86-64-v4": V4_FLAGS}


@cache
def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> frozenset[str]:
    """The first processor's flags (empty where there is no /proc/cpuinfo)."""
    try:
        text = cpuinfo.read_text()
    except OSError:
        return frozenset()
    match = re.search(r"^flags\s*:(.*)$", text, re.MULTILINE)
    return frozenset(match.group(1).split()) if match else frozenset()


def missing_flags(target: str, flags: frozenset[str] | None = None) -> set[str]:
    """The CPU flags `target`'s -march level needs that this host (or `flags`) lacks; empty
    for a target without a level (-march=native, plain "c")."""
    match = re.search(r"-march=(x86-64-v\d)", target)
    if match is None:
        return set()
    return set(LEVEL_FLAGS[match.group(1)]) - (cpu_flags() if flags is None else flags)


def isa_id(target: str) -> str:
    match = re.search(r"-march=([\w.-]+)", target)
    return match.group(1).removeprefix("x86-64-") if match else "native"


def isa_params(targets: tuple[str, ...] = ISA_TARGETS) -> list[Any]:
    """`targets` as pytest params (ids v2, v3, native), each skipped where this host cannot
    run its kernels."""
    params: list[Any] = []
    for target in targets:
        missing = missing_flags(target)
        mark = pytest.mark.skipif(bool(missing), reason=f"this CPU lacks {', '.join(sorted(missing))} for {target!r}")
        params.append(pytest.param(target, id=isa_id(target), marks=mark))
    return params


def assembly(source: str, target: str, tmp_path: Path) -> str:
    """A C kernel source as gcc compiles it for `target` (with the runtime's flags), in
    assembly: for tests of what a schedule's loops become (FMAs in registers, loads)."""
    path = tmp_path / "kernel.c"
    path.write_text(source)
    flags = [f for f in C_BASE_FLAGS if f not in ("-shared", "-fPIC")]
    command = ["gcc", *flags, *c_flags(target), "-S", "-o", "-", str(path)]
    return subprocess.run(command, capture_output=True, text=True, check=True).stdout
