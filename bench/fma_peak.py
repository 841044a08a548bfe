"""The fp32 multiply-add peak of one core for a C target, measured: the ceiling a dense or conv
kernel built for that target can reach.

    from fma_peak import fma_peak
    peak = fma_peak("c -march=x86-64-v3")   # FmaPeak(gflops=..., floats=8, accumulators=12, ...)

A small C probe, built with the target's flags after -march=native (as xrelay builds its
kernels), keeps `accumulators` vectors of the target's width (`target_features`) in registers,
three quarters of the registers (12 of AVX2's 16 ymm, 24 of AVX-512's 32 zmm: enough
independent chains to cover the FMA latency times the FMA ports of current x86 cores), and
updates each with `acc = acc * b + c` per iteration: one FMA where the level has FMA (gcc
contracts it under -std=gnu99), else a multiply and an add (x86-64-v2), 2 flops per lane
either way. The best of `repeats` timed runs, on one thread, is the peak. (Without FMA each
chain waits for a multiply then an add, so x86-64-v2's number is bounded by their latency: a
lower bound of that level's peak.)

    .venv/bin/python bench/fma_peak.py [TARGET ...]    # default: the three ISA levels' targets
"""

from __future__ import annotations

import ctypes
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from xrelay.runtime.machine import target_features

ISA_TARGETS = ("c -march=x86-64-v2", "c -march=x86-64-v3", "c")


@dataclass(frozen=True)
class FmaPeak:
    target: str
    isa: str
    floats: int  # lanes of one vector
    accumulators: int  # independent vectors updated per iteration
    fma: bool  # one fused instruction (else a multiply and an add)
    gflops: float  # fp32 GFLOP/s of one core

    def summary(self) -> str:
        op = "FMA" if self.fma else "mul+add"
        return f"{self.gflops:.1f} GFLOP/s per core ({self.accumulators} x {self.floats}-float {op} chains)"


def probe_source(floats: int, accumulators: int) -> str:
    """C for `double xr_fma_probe(long iterations, float b, float c)`: `accumulators` vector
    chains of `floats` lanes, their sum returned so that none is dead."""
    names = [f"a{i}" for i in range(accumulators)]
    init = "\n".join(f"  v {n} = bv * (float){i + 1};" for i, n in enumerate(names))
    update = "\n".join(f"    {n} = {n} * bv + cv;" for n in names)
    total = " + ".join(names)
    return f"""typedef float v __attribute__((vector_size({4 * floats})));
double xr_fma_probe(long iterations, float b, float c) {{
  v bv = {{0}}, cv = {{0}};
  bv += b;
  cv += c;
{init}
  for (long i = 0; i < iterations; i++) {{
{update}
  }}
  v s = {total};
  double r = 0;
  for (int l = 0; l < {floats}; l++) r += s[l];
  return r;
}}
"""


@cache
def build_probe(target: str, floats: int, accumulators: int) -> ctypes.CDLL:
    flags = [f for f in shlex.split(target)[1:] if f.startswith("-m")]
    directory = Path(tempfile.mkdtemp(prefix="xrelay-fma-probe-"))
    source, library = directory / "probe.c", directory / "probe.so"
    source.write_text(probe_source(floats, accumulators))
    subprocess.run(["gcc", "-std=gnu99", "-O2", "-march=native", *flags, "-fPIC", "-shared", "-o", str(library),
                    str(source)], check=True)  # fmt: skip
    lib = ctypes.CDLL(str(library))
    lib.xr_fma_probe.restype = ctypes.c_double
    lib.xr_fma_probe.argtypes = (ctypes.c_long, ctypes.c_float, ctypes.c_float)
    return lib


def fma_peak(target: str = "c", seconds: float = 0.05, repeats: int = 7) -> FmaPeak:
    """The measured fp32 peak of one core for `target` (the best of `repeats` runs of about
    `seconds` each)."""
    features = target_features(target)
    floats, accumulators = features.vector_floats, max(4, features.vector_registers * 3 // 4)
    probe = build_probe(target, floats, accumulators).xr_fma_probe
    iterations = 1 << 14
    while True:  # grow the run to about `seconds`
        start = time.perf_counter()
        probe(iterations, 0.999, 1e-3)
        if time.perf_counter() - start >= seconds / 4 or iterations >= 1 << 34:
            break
        iterations *= 4
    best = min(_timed(probe, iterations) for _ in range(repeats))
    gflops = 2 * floats * accumulators * iterations / best / 1e9
    return FmaPeak(target, features.isa, floats, accumulators, features.fma, gflops)


def _timed(probe: Callable[[int, float, float], float], iterations: int) -> float:
    start = time.perf_counter()
    probe(iterations, 0.999, 1e-3)
    return time.perf_counter() - start


def main() -> None:
    for target in sys.argv[1:] or ISA_TARGETS:
        peak = fma_peak(target)
        print(f"{target:<22} {peak.isa:<10} {peak.summary()}")


if __name__ == "__main__":
    main()
