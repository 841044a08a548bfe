"""
What a target's machine can do: the features schedules read to size their tiles.

    features = target_features("c -march=x86-64-v3")   # Features(isa="x86-64-v3", vector_floats=8, ...)
    features = target_features("c")                    # the host, as `gcc -march=native` builds for it
    features = target_features("opencl")               # the first OpenCL device, from its own info
    features = target_features("opencl -vector-width=16")  # ... with kernels of float16 vectors

For a C target the instruction set is what gcc enables for the target string's `-march`/`-m`
flags (the kernels are built with them after `-march=native`): gcc's predefined macros
(`__AVX512F__`, `__AVX2__`, `__FMA__`, ...) give the vector width in floats, the number of
vector registers and whether there is a fused multiply-add; the caches and cores are the
host's, from the OS. For an OpenCL target they are the device's own: its preferred float
vector width, compute units and local memory (a CPU device's registers are those of the
x86-64 level of its preferred width: PoCL compiles for the processor with its own LLVM, not
for gcc's flags). Without an OpenCL platform the description is the host's, as
PoCL would report it. An OpenCL target string may fix the vector width its kernels use,
`-vector-width=N` (so that a test's or a lit check's kernels do not depend on the host).

Everything here is plain data (`Features.to_json`), recorded in an artifact so that a saved
executable keeps the features it was built for, and printed by `opt-tool --list-targets`.
"""

from __future__ import annotations

import os
import platform
import re
import resource
import shlex
import subprocess
from dataclasses import asdict, dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any

from xrelay.errors import CompileError
from xrelay.runtime.device_kinds import kind_of_target, resolve

C_COMPILER = "gcc"


@dataclass(frozen=True)
class Features:
    """A target's machine, as schedules see it."""

    name: str  # the processor or device, for people
    isa: str  # "x86-64-v4", "x86-64-v3", "x86-64-v2", "x86-64", or the device's own ("opencl")
    vector_floats: int  # f32 lanes of one vector register
    vector_registers: int  # vector registers a kernel may keep values in
    fma: bool  # a fused multiply-add instruction
    l1d: int  # bytes of level-1 data cache per core
    l2: int  # bytes of level-2 cache per core
    l3: int  # bytes of level-3 cache (shared)
    cores: int  # cores (compute units) a kernel may use
    local_memory: int = 0  # bytes of OpenCL local memory per work group (0: none)
    # Seconds an OpenMP region of a C kernel costs beyond its work (FORK_JOIN_SECONDS), and
    # seconds a lane-counted op of a kernel takes on one core (LANE_OP_SECONDS).
    fork_join_seconds: float = 0.0
    lane_op_seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_json(data: dict[str, Any]) -> Features:
        return Features(**data)

    def min_parallel_work(self) -> int | None:
        """The least work (lane-counted ops, `targets.c.estimated_work`) a C kernel's nest must
        do for a second thread to pay: half its one-thread time (what splitting it over two
        cores saves) at least the region's fork and join. None where no region ever pays (no
        fork/join cost known: not a C target)."""
        if self.fork_join_seconds <= 0 or self.lane_op_seconds <= 0:
            return None
        return round(2 * self.fork_join_seconds / self.lane_op_seconds)

    def summary(self) -> str:
        """One line for people: `x86-64-v4, 16 floats x 32 registers, FMA, L1d 48 KiB, ...`."""
        caches = f"L1d {_size(self.l1d)}, L2 {_size(self.l2)}, L3 {_size(self.l3)}"
        fma = "FMA" if self.fma else "no FMA"
        local = f", local memory {_size(self.local_memory)}" if self.local_memory else ""
        return (
            f"{self.isa}, {self.vector_floats} floats x {self.vector_registers} vector registers, {fma}, "
            f"{caches}, {self.cores} cores{local} ({self.name})"
        )


def target_features(target: str) -> Features:
    """The features of the machine `target` (a target string) compiles for, as its device
    kind's row says where they come from (the host's for a kind xrelay does not know)."""
    kind = kind_of_target(target)
    describe = resolve(kind.features, "xrelay.runtime") if kind is not None else host_target_features
    return describe(target)


def host_target_features(target: str) -> Features:
    """The host's features as a C target string builds for it (its `-march`/`-m` flags)."""
    return c_features(tuple(flag for flag in shlex.split(target)[1:] if flag.startswith("-m")))


def opencl_target_features(target: str) -> Features:
    """The OpenCL device's own features, with the vector width the target string may fix
    (and the registers of that width, as a CPU device's are)."""
    device = opencl_features()
    width = vector_width_option(shlex.split(target)[1:])
    if width is None:
        return device
    return replace(device, vector_floats=width, vector_registers=registers_of_width(width, device.vector_registers))


# The options an OpenCL target string takes after `opencl`, and what each does.
OPENCL_OPTIONS = {"-vector-width": "-vector-width=N (the floats per vector its kernels use: 1, 2, 4, 8 or 16)"}


def check_opencl_options(target: str) -> None:
    """Refuses an option of an OpenCL target string that is not in `OPENCL_OPTIONS`."""
    options = shlex.split(target)[1:]
    for option in options:
        if option.partition("=")[0] not in OPENCL_OPTIONS:
            raise CompileError(
                f"unknown option {option!r} in OpenCL target {target!r}; an OpenCL target takes "
                + ", ".join(OPENCL_OPTIONS.values())
            )
    vector_width_option(options)


def vector_width_option(options: list[str]) -> int | None:
    """N of an OpenCL target's `-vector-width=N` (the floats per vector its kernels use in
    place of the device's preferred width), or None."""
    for option in options:
        name, _, value = option.partition("=")
        if name == "-vector-width" and value.isdigit() and int(value) in (1, 2, 4, 8, 16):
            return int(value)
        if name == "-vector-width":
            raise CompileError(f"-vector-width takes 1, 2, 4, 8 or 16 floats, but the OpenCL target has {option!r}")
    return None


# --- C: gcc's view of the instruction set, the OS's of the caches --------------------------


# What a C kernel's `omp parallel` region costs beyond its work on this host: the team's other
# thread, asleep between kernels (the runtimes run OpenMP with OMP_WAIT_POLICY=passive: a
# spinning thread took the core another process or the next kernel needed), woken and joined.
# An empty region took 8 us (2 threads, medians of 2000, load 9); a kernel's region loses more,
# as the woken thread takes items only once it runs: nests of 1.3-3M lane-ops lost at load
# 1.4-2.1 and 18.8M gained, which puts the break-even, at LANE_OP_SECONDS, near 60 us. A
# bounded spin instead (GOMP_SPINCOUNT=3000) ran MobileNetV2 at 2 threads in 1.89x the time of
# 1 thread at load 3.7, against 1.19x passive: a spinning thread is preempted as often, and it
# spends its process's share of the cores. (bench/thread_gain.py, bench/zoo_threads.py.)
FORK_JOIN_SECONDS = 60e-6
# One lane-counted op of a kernel on one core: micro-kernel nests 6-14 ps, rows kernels
# (softmax, layer norm) 20-45, transposes 23-90 (bench/thread_gain.py, AVX-512 EPYC).
LANE_OP_SECONDS = 10e-12


@cache
def c_features(machine_flags: tuple[str, ...] = ()) -> Features:
    """The host's features as gcc builds for `-march=native` then `machine_flags`."""
    macros = gcc_macros(("-march=native", *machine_flags))
    isa, floats, registers = instruction_set(macros)
    l1d, l2, l3 = host_caches()
    return Features(
        name=host_name(),
        isa=isa,
        vector_floats=floats,
        vector_registers=registers,
        fma="__FMA__" in macros or "__ARM_FEATURE_FMA" in macros,
        l1d=l1d,
        l2=l2,
        l3=l3,
        cores=host_cores(),
        fork_join_seconds=FORK_JOIN_SECONDS,
        lane_op_seconds=LANE_OP_SECONDS,
    )


def gcc_macros(flags: tuple[str, ...]) -> frozenset[str]:
    """The names of the macros gcc predefines for `flags` (empty when there is no gcc)."""
    try:
        out = subprocess.run(
            [C_COMPILER, *flags, "-dM", "-E", "-x", "c", "/dev/null"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return frozenset()
    return frozenset(m.group(1) for m in re.finditer(r"^#define (\w+)", out, re.MULTILINE))


@dataclass(frozen=True)
class IsaLevel:
    """An x86-64 instruction-set level: what a processor needs for it, and its vectors."""

    name: str
    extensions: frozenset[str]  # the processor flags it needs (as /proc/cpuinfo names them)
    vector_floats: int
    vector_registers: int

    @property
    def macros(self) -> frozenset[str]:
        """gcc's predefined macros for the extensions (`avx2` -> `__AVX2__`)."""
        return frozenset(f"__{flag.upper()}__" for flag in self.extensions)


# Most capable first: a machine is at the first level whose extensions it has.
ISA_LEVELS = (
    IsaLevel("x86-64-v4", frozenset({"avx512f", "avx512bw", "avx512dq", "avx512vl"}), 16, 32),
    IsaLevel("x86-64 with AVX-512F", frozenset({"avx512f"}), 16, 32),
    IsaLevel("x86-64-v3", frozenset({"avx2", "fma"}), 8, 16),
    IsaLevel("x86-64 with AVX", frozenset({"avx"}), 8, 16),
    IsaLevel("x86-64-v2", frozenset({"sse4_2"}), 4, 16),
    IsaLevel("x86-64", frozenset({"sse2"}), 4, 16),
)
_LEVELS = {level.name: level for level in ISA_LEVELS}


def instruction_set(macros: frozenset[str]) -> tuple[str, int, int]:
    """(ISA level, floats per vector, vector registers) of gcc's predefined `macros`."""
    for level in ISA_LEVELS:
        if level.macros <= macros:
            return level.name, level.vector_floats, level.vector_registers
    if "__ARM_NEON" in macros:
        return "aarch64", 4, 32
    return platform.machine() or "unknown", 1, 16


def registers_of_width(floats: int, default: int) -> int:
    """The vector registers of the x86-64 level whose vectors hold `floats` floats (32 with
    AVX-512's 16, else 16), or `default` for a width no level has. A CPU OpenCL device
    (PoCL) compiles for its own idea of the processor with its own LLVM, not for gcc's flags,
    and tells only its preferred width: its registers are those of that width's level."""
    return next((level.vector_registers for level in ISA_LEVELS if level.vector_floats == floats), default)


def isa_of_flags(flags: frozenset[str]) -> str | None:
    """The x86-64 level of a processor with these /proc/cpuinfo `flags` (None: none of them)."""
    return next((level.name for level in ISA_LEVELS if level.extensions <= flags), None)


def missing_extensions(isa: str, flags: frozenset[str]) -> list[str]:
    """The extensions of ISA level `isa` that a processor with these /proc/cpuinfo `flags`
    lacks (none when `isa` is no x86-64 level, e.g. an OpenCL device's "opencl")."""
    level = _LEVELS.get(isa)
    return sorted(level.extensions - flags) if level is not None else []


CPU0_CACHES = Path("/sys/devices/system/cpu/cpu0/cache")


def host_caches(root: Path = CPU0_CACHES) -> tuple[int, int, int]:
    """(L1 data, L2, L3) cache bytes of the first core, from sysfs's `index*/{level,type,size}`
    under `root` (typical sizes where absent)."""
    sizes = {1: 32 << 10, 2: 512 << 10, 3: 8 << 20}
    for index in sorted(root.glob("index*")):
        try:
            level = int((index / "level").read_text())
            kind = (index / "type").read_text().strip()
            size = _parse_size((index / "size").read_text().strip())
        except (OSError, ValueError):
            continue
        if kind != "Instruction":
            sizes[level] = size
    return sizes[1], sizes[2], sizes[3]


CGROUP_ROOT = Path("/sys/fs/cgroup")
PROC_SELF = Path("/proc/self")


def host_memory(cgroup_root: Path = CGROUP_ROOT, proc_self: Path = PROC_SELF) -> int | None:
    """The bytes of host memory this process may use (None: unknown): the least of the
    physical memory, the address space `RLIMIT_AS` leaves it (`ulimit -v`, less what it has
    mapped already) and its cgroup's limit (`memory.max` in v2, `memory.limit_in_bytes` in v1,
    of its own group and those above it), so that a plan larger than that is refused before
    anything is allocated rather than failing in numpy's allocator."""
    limits = [_physical_memory(), *_cgroup_memory_limits(cgroup_root, proc_self)]
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY:
        limits.append(max(soft - _mapped_bytes(proc_self), 0))
    known = [n for n in limits if n is not None]
    return min(known) if known else None


def _physical_memory() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def _mapped_bytes(proc_self: Path) -> int:
    """The process's address space in use (`VmSize`; 0 where unknown)."""
    try:
        match = re.search(r"^VmSize:\s*(\d+) kB", (proc_self / "status").read_text(), re.MULTILINE)
    except OSError:
        return 0
    return int(match.group(1)) * 1024 if match else 0


def _cgroup_memory_limits(root: Path, proc_self: Path) -> list[int]:
    """The memory limits of the process's cgroups (v2 `0::/path`, v1 `N:...memory...:/path`
    in `/proc/self/cgroup`), each group's and its ancestors' up to the hierarchy's root."""
    try:
        lines = (proc_self / "cgroup").read_text().splitlines()
    except OSError:
        return []
    limits: list[int] = []
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controllers == "":
            base, file = root / "unified" if (root / "unified").is_dir() else root, "memory.max"
        elif "memory" in controllers.split(","):
            base, file = root / "memory", "memory.limit_in_bytes"
        else:
            continue
        group = base / path.lstrip("/")
        for directory in [group, *group.parents]:
            try:
                text = (directory / file).read_text().strip()
            except OSError:
                text = ""
            if text.isdigit():
                limits.append(int(text))
            if directory == base:
                break
    return limits


def host_cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


@cache
def host_name() -> str:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        text = ""
    match = re.search(r"^model name\s*:\s*(.+)$", text, re.MULTILINE)
    return match.group(1).strip() if match else platform.processor() or platform.machine() or "unknown cpu"


# --- OpenCL: the device's own info ---------------------------------------------------------


@cache
def opencl_features() -> Features:
    """The first device of the first OpenCL platform, or the host as PoCL sees it when there
    is none (or no pyopencl)."""
    host = c_features()
    try:
        from xrelay.runtime.opencl import import_pyopencl  # (PoCL's workers pinned before it starts)

        cl = import_pyopencl()
        device = cl.get_platforms()[0].get_devices()[0]
    except Exception:
        return replace(host, name=f"no OpenCL platform: the host, {host.name}", isa="opencl")
    cpu_device = bool(device.type & cl.device_type.CPU)
    floats = max(1, device.preferred_vector_width_float)
    return Features(
        name=device.name,
        isa="opencl",
        vector_floats=floats,
        vector_registers=registers_of_width(floats, host.vector_registers) if cpu_device else 64,
        fma=bool(device.single_fp_config & cl.device_fp_config.FMA),
        l1d=host.l1d if cpu_device else 0,
        l2=host.l2 if cpu_device else 0,
        l3=device.global_mem_cache_size,
        cores=device.max_compute_units,
        local_memory=device.local_mem_size,
    )


def _parse_size(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * units[text[-1]] if text[-1] in units else int(text)


def _size(n: int) -> str:
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} B"
