"""
C kernels into one shared library (gcc + ctypes), giving callable kernels by name.

    lib = build_c(sources, flags=c_flags("c -O2"))       # CLibrary
    lib["fused_add"](a, b, out)                           # numpy float32 arrays
    lib = load_c(path, sources)                           # a library built before (an artifact's)
    lib = build_c(sources, num_threads=2)                 # kernels split across 2 OpenMP threads

Builds are cached on disk under `$XDG_CACHE_HOME/xrelay` (default `~/.cache/xrelay`), keyed
by a hash of the sources, the flags, gcc's version and the machine. The directory is created
0700 and refused unless this user owns it; every cached object and library has its sha256
beside it (`NAME.sha256`), checked before it is linked or loaded, and a library is loaded from a
private copy of the bytes that were checked: a damaged file, or one planted under a cache
name, is rebuilt, never loaded. Files are written to a temporary name in the cache directory
and renamed into place, so two processes building the same kernels at once both succeed. gcc runs with an argument list, never through a shell, and extra flags come only
from an allow-list. A library records the machine it was built on (`machine()`) and the
compiler (`c_compiler_version()`), so a saved one is reused only where it can run.

Threads: the C emitter shares the outer loop nest of a kernel that does enough work in a
`#pragma omp parallel num_threads(XRELAY_NUM_THREADS)` region (`omp for schedule(dynamic)`,
then the emitter's join). The library is
built with -fopenmp (gcc's libgomp) and `-DXRELAY_NUM_THREADS=N`, so the count is fixed per library and
part of its cache key; the library reports it (`xrelay_num_threads()`, `CLibrary.num_threads`).
The count defaults to every core this process may run on; `XRELAY_NUM_THREADS` in the
environment overrides that default (`default_num_threads()`).
"""

from __future__ import annotations

import atexit
import ctypes
import hashlib
import os
import platform
import re
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Generator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from xrelay.errors import ArtifactError, CompileError
from xrelay.runtime.kernels import KernelSource

C_COMPILER = "gcc"
# The C emitter (`xrelay.targets.c`) guards its `omp simd` reduction pragmas with this macro,
# so its output also compiles warning-free without -fopenmp-simd (no OpenMP runtime needed).
SIMD_MACRO = "XRELAY_OMP_SIMD"
# -fno-math-errno lets gcc vectorise maths calls (libmvec's variants set no errno) and sqrtf
# become one instruction; NaN and infinity semantics stay as they are. (-fno-trapping-math
# made hardswish epilogues vectorise for AVX2 (1200 -> 105 us for a 1 x 1 conv 32 -> 192 at
# 28 x 28, x86-64-v3), but DenseNet-121's max_pool2d 64 x 112 x 112 took 28x the time and its
# concatenates 10x: not used.)
# (gcc 12.2's loop if-conversion miscompiles conditional loads: kernels with a branch turn it
# off for themselves, `targets/c.py`'s NO_IF_CONVERSION; off for all, no loop with a select
# would vectorise.)
C_BASE_FLAGS = (
    "-std=c99",
    "-O3",
    "-march=native",
    "-fno-math-errno",
    "-fPIC",
    "-shared",
    "-fopenmp-simd",
    f"-D{SIMD_MACRO}",
)
# The thread-count macro of the C emitter (`xrelay.targets.c`), and the environment variable
# that overrides the default count.
THREADS_MACRO = "XRELAY_NUM_THREADS"
THREADS_ENVIRONMENT = "XRELAY_NUM_THREADS"
# Appended to every library: what count it was built with.
THREADS_REPORT = f"""
#ifndef {THREADS_MACRO}
#define {THREADS_MACRO} 1
#endif
int xrelay_num_threads(void) {{ return {THREADS_MACRO}; }}
"""
# Libraries every kernel library links, after the source: libm, and glibc's vector maths
# (libmvec), which gcc calls for a vectorised expf or tanhf under -ffast-math (or a `simd`
# declaration); without it such a library fails to load (undefined symbol _ZGVeN16v_expf).
C_LINK_FLAGS = ("-lmvec", "-lm")

# Extra C flags a target string may carry ("c -O2"); anything else is rejected.
C_FLAG_ALLOW_LIST = (
    r"-O[0-3s]",
    r"-g",
    r"-march=[\w.-]+",
    r"-mtune=[\w.-]+",
    r"-m(no-)?(avx|avx2|avx512f|fma|sse4\.2)",
    r"-f(no-)?(fast-math|unroll-loops|tree-vectorize|omit-frame-pointer)",
    r"-fsanitize=(address|undefined)",
)

# --- the on-disk cache ----------------------------------------------------------------------


def cache_dir() -> Path:
    """`$XDG_CACHE_HOME/xrelay`, or `~/.cache/xrelay`: created 0700 on first use, and refused
    (a `CompileError`) unless this user owns it; one of this user's with more permissions (as
    xrelay made it before) is narrowed to 0700. Another user who could write into it could
    plant code that this process loads."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    path = Path(base) / "xrelay"
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = path.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        owner = "a symbolic link" if stat.S_ISLNK(info.st_mode) else f"owned by uid {info.st_uid}"
        raise CompileError(
            f"refusing the kernel cache directory {path}: it is {owner}, not a directory of this user "
            f"(uid {os.getuid()}), so its libraries could be someone else's code; remove it or set "
            "XDG_CACHE_HOME to a directory of yours"
        )
    if stat.S_IMODE(info.st_mode) != 0o700:
        path.chmod(0o700)
    return path


def cached_bytes(path: Path) -> bytes | None:
    """The contents of the cache entry `path` if its sha256 is the one recorded beside it when
    it was stored (`store_digest`); None for a missing, damaged or planted entry."""
    try:
        data = path.read_bytes()
        recorded = _digest_path(path).read_text().strip()
    except OSError:
        return None
    return data if hashlib.sha256(data).hexdigest() == recorded else None


def store_digest(path: Path, data: bytes) -> None:
    """Records the sha256 of the entry `path` (whose contents are `data`) beside it."""
    write_atomically(_digest_path(path), hashlib.sha256(data).hexdigest().encode())


def _digest_path(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def content_key(*parts: str) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode())
        digest.update(b"\0")
    return digest.hexdigest()[:32]


@contextmanager
def atomic_path(final: Path) -> Generator[Path, None, None]:
    """A temporary path next to `final`; renamed onto it when the block succeeds."""
    fd, tmp = tempfile.mkstemp(dir=final.parent, prefix=f".{final.name}.", suffix=".tmp")
    os.close(fd)
    try:
        yield Path(tmp)
        os.replace(tmp, final)  # atomic: readers see the old file or the whole new one
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_atomically(final: Path, data: bytes) -> None:
    with atomic_path(final) as tmp:
        tmp.write_bytes(data)


# --- C --------------------------------------------------------------------------------------


def default_num_threads() -> int:
    """`XRELAY_NUM_THREADS` from the environment if set, else every core this process may use."""
    text = os.environ.get(THREADS_ENVIRONMENT, "").strip()
    if text:
        return check_num_threads(text, f"the environment variable {THREADS_ENVIRONMENT}")
    return available_cores()


def check_num_threads(value: object, what: str = "num_threads") -> int:
    """`value` as a thread count (a positive integer), or a `CompileError` naming `what`."""
    try:
        count = int(str(value))
    except ValueError:
        count = 0
    if count < 1 or isinstance(value, bool):
        raise CompileError(f"{what} must be a positive integer (a thread count), but was {value!r}")
    return count


def c_flags(target: str) -> list[str]:
    """The extra gcc flags of a C target string such as `"c -O2 -march=znver3"`."""
    kind, *flags = target.split() or [""]
    if kind not in ("c", "llvm"):
        raise CompileError(f"expected a C target string starting with 'c', but found {target!r}")
    check_c_flags(flags, target)
    return flags


def check_c_flags(flags: Sequence[str], target: str | None = None) -> None:
    for flag in flags:
        where = f" in target {target!r}" if target is not None else ""
        if not any(re.fullmatch(p, flag) for p in C_FLAG_ALLOW_LIST):
            raise CompileError(
                f"unsupported C compiler flag {flag!r}{where}; allowed flags match: {', '.join(C_FLAG_ALLOW_LIST)}"
            )
        check_sanitizer(flag, where)


# Sanitizers whose runtime must be the first library of a process (UBSan's loads with the kernels).
SANITIZER_RUNTIMES = {"address": "libasan"}


def check_sanitizer(flag: str, where: str, maps: Path = Path("/proc/self/maps")) -> None:
    """A `-fsanitize=` flag only where its runtime is in the process already: the kernels are
    a library this Python process loads, and a library built with ASan that is loaded
    later makes the process exit ("ASan runtime does not come first")."""
    name = flag.removeprefix("-fsanitize=")
    runtime = SANITIZER_RUNTIMES.get(name)
    if runtime is None or flag == name:
        return
    try:
        loaded = runtime in maps.read_text()
    except OSError:
        loaded = False
    if not loaded:
        raise CompileError(
            f"C compiler flag {flag!r}{where} cannot be used here: the kernels are a library this Python "
            f"process loads, and {runtime}, the sanitizer's runtime, must be loaded before everything else "
            f"or the process exits; run Python with LD_PRELOAD=$(gcc -print-file-name={runtime}.so)"
        )


@cache
def c_compiler_version() -> str:
    if shutil.which(C_COMPILER) is None:
        raise CompileError(
            f"no C compiler: '{C_COMPILER}' is not on PATH; install it (on Debian: `apt-get install gcc`)"
        )
    result = subprocess.run([C_COMPILER, "--version"], capture_output=True, text=True, check=False)
    return result.stdout.splitlines()[0] if result.stdout else C_COMPILER


@dataclass(eq=False)
class CKernel:
    """One C kernel of a loaded library, called with float32 numpy arrays (inputs, then out)."""

    name: str
    num_inputs: int
    function: Any  # the ctypes function; call it with buffer addresses (ints) to skip checks

    def __call__(self, *arrays: np.ndarray) -> None:
        if len(arrays) != self.num_inputs + 1:
            raise TypeError(
                f"kernel {self.name} takes {self.num_inputs} inputs and one output, but was given {len(arrays)} arrays"
            )
        for a in arrays:
            if a.dtype != np.float32 or not a.flags.c_contiguous:
                raise TypeError(f"kernel {self.name} takes C-contiguous float32 arrays")
        if not arrays[-1].flags.writeable:
            raise TypeError(f"the output array of kernel {self.name} is read-only")
        self.function(*(a.ctypes.data for a in arrays))


@dataclass(eq=False)
class CLibrary:
    """The C kernels of one build, loaded from one shared library."""

    path: Path  # its entry in the cache
    data: bytes  # the library, as checked and loaded
    cached: bool  # True when the library came from the on-disk cache (or an artifact)
    kernels: dict[str, CKernel] = field(default_factory=dict[str, CKernel])
    num_threads: int | None = None  # the OpenMP thread count it was built with (None: unknown)

    def __getitem__(self, name: str) -> CKernel:
        return self.kernels[name]


@cache
def machine() -> str:
    """The machine a library built with `-march=native` runs on: architecture, CPU model, and
    a digest of the CPU's feature flags (two hosts of one model may differ in them)."""
    info = _cpuinfo()
    model = info.get("model name") or platform.processor() or "unknown cpu"
    return f"{platform.machine()} {model} (cpu flags {content_key(info.get('flags', ''))[:12]})"


@cache
def cpu_flags() -> frozenset[str] | None:
    """The CPU's feature flags (`avx2`, `fma`, ...), which `machine()` digests; None where the
    OS does not list them (then what the CPU lacks cannot be told)."""
    flags = _cpuinfo().get("flags")
    return frozenset(flags.split()) if flags else None


def _cpuinfo() -> dict[str, str]:
    """The first processor's fields of /proc/cpuinfo (empty where there is none)."""
    fields: dict[str, str] = {}
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return fields
    for line in text.split("\n\n")[0].splitlines():
        key, _, value = line.partition(":")
        fields[key.strip()] = value.strip()
    return fields


def build_c(sources: Sequence[KernelSource], flags: Sequence[str] = (), num_threads: int | None = None) -> CLibrary:
    """Compiles C kernels into one shared library (or takes it from the cache) and loads it;
    their parallel loops run on `num_threads` threads (default: `default_num_threads()`)."""
    _check_language(sources, "c")
    check_c_flags(flags)
    threads = default_num_threads() if num_threads is None else check_num_threads(num_threads)
    text = "\n".join([*(s.source for s in sources), THREADS_REPORT])
    argv = library_argv(flags, threads)
    key = content_key(text, " ".join(argv), c_compiler_version(), machine())
    library = cache_dir() / f"c-{key}.so"
    data = cached_bytes(library)
    cached = data is not None
    if data is None:
        units = [*translation_units(sources), Unit(THREADS_REPORT, ("xrelay_num_threads",))]
        data = _compile_c(units, argv, library)
    return _load_c(library, data, sources, cached)


def library_argv(flags: Sequence[str], threads: int) -> list[str]:
    """gcc's flags for a library of kernels (`flags` from the target) on `threads` threads."""
    return [*C_BASE_FLAGS, *flags, "-fopenmp", f"-D{THREADS_MACRO}={threads}"]


def load_c(data: bytes, sources: Sequence[KernelSource]) -> CLibrary:
    """Loads a library built before (an artifact's bytes, already verified) for `sources`.

    What is loaded is a private copy of exactly these bytes, never a file that happens to be
    in the cache under their name."""
    _check_language(sources, "c")
    library = cache_dir() / f"c-saved-{hashlib.sha256(data).hexdigest()[:32]}.so"
    try:
        return _load_c(library, data, sources, cached=True)
    except MissingSymbolError as e:
        raise ArtifactError(f"the saved kernel library {e}; the artifact does not match its kernels") from None


# gcc links crtfastmath.o into a library linked with these; it turns on flush-to-zero for the
# whole process when the library loads, and every other kernel and numpy would lose their
# subnormals. Such a library is compiled with them and linked without them.
FAST_MATH_FLAGS = ("-ffast-math", "-Ofast", "-funsafe-math-optimizations")


@dataclass(frozen=True)
class Unit:
    """One translation unit of a library: a kernel's complete source (`KernelSource.source`:
    its prelude, then the function), and the kernels it defines, for error messages."""

    source: str
    names: tuple[str, ...]


# Kernels equal but for their names (ResNet-18: 24 kernels, 6 distinct) share a translation
# unit, where gcc's identical-code folding (-fipa-icf, on at -O2) optimises their body once.
# Such a family of at least UNIT_BYTES of source is a unit of its own. Smaller ones share a
# unit with their neighbours: each unit costs gcc ~0.12 s of start-up and headers
# (immintrin.h, omp.h) whatever its size, and BERT's 31 kernels average 4.6 KB. A unit of
# small families ends after one whose body's hash is 0 modulo UNIT_KERNELS (or once it holds
# UNIT_BYTES), so the units, and the cached objects, follow the kernels' content: a changed
# kernel changes its own unit (and, when its hash moves a boundary, the next one).
# UNIT_BYTES 16 KB -> 64 KB: ResNet-50's 28 distinct kernels (most 27-57 KB) were 20 units,
# now 10; gcc's CPU time 7.5 -> 6.0 s (two runs each, interleaved, load 7-8; 128 KB: 7 units,
# 5.6 s, but fewer units than a bigger machine has cores).
UNIT_BYTES = 65536
UNIT_KERNELS = 4


def translation_units(sources: Sequence[KernelSource]) -> list[Unit]:
    """The kernels grouped into translation units (each source is a complete unit whose
    prelude's definitions are guarded, so concatenated ones define them once)."""
    families: dict[str, list[KernelSource]] = {}
    for s in sources:
        families.setdefault(s.source.replace(s.name, ""), []).append(s)
    units = Units()
    for body, family in families.items():
        units.add(body, family)
    return units.finish()


@dataclass
class Units:
    """Translation units made as families of kernels come (`translation_units`' rule): `add`
    returns the units a family closes, so they can compile while later kernels are emitted."""

    units: list[Unit] = field(default_factory=list[Unit])
    group: list[KernelSource] = field(default_factory=list[KernelSource])

    def add(self, body: str, family: Sequence[KernelSource]) -> list[Unit]:
        before = len(self.units)
        if len(body) >= UNIT_BYTES:
            self.units.append(_unit(family))
        else:
            self.group += family
            if int(content_key(body), 16) % UNIT_KERNELS == 0 or sum(len(g.source) for g in self.group) >= UNIT_BYTES:
                self.units.append(_unit(self.group))
                self.group = []
        return self.units[before:]

    def finish(self) -> list[Unit]:
        if self.group:
            self.units.append(_unit(self.group))
            self.group = []
        return self.units


class EarlyObjects:
    """Compiles the objects of a library's units while its kernels are still being emitted
    (`add` each distinct kernel in order, then `finish`), into the cache where `build_c`
    then finds them: gcc starts on the first units while Python emits the rest. A unit that
    fails is left to `build_c`, which compiles it again and reports the error."""

    def __init__(self, flags: Sequence[str], num_threads: int):
        check_c_flags(flags)
        self.argv = [f for f in library_argv(flags, num_threads) if f != "-shared"]
        self.units = Units()
        self.pool = ThreadPoolExecutor(max_workers=available_cores())
        self.futures: list[Future[str | None]] = []

    def add(self, kernel: KernelSource) -> None:
        for unit in self.units.add(kernel.source.replace(kernel.name, ""), [kernel]):
            self._submit(unit)

    def finish(self) -> None:
        for unit in self.units.finish()[len(self.futures) :]:
            self._submit(unit)
        wait(self.futures)
        self.pool.shutdown()

    def _submit(self, unit: Unit) -> None:
        path = object_path(unit, self.argv)
        if cached_bytes(path) is None:
            self.futures.append(self.pool.submit(_compile_unit, unit, self.argv, path))
        else:
            self.futures.append(self.pool.submit(lambda: None))


def _unit(sources: Sequence[KernelSource]) -> Unit:
    return Unit("\n".join(s.source for s in sources), tuple(s.name for s in sources))


def _compile_c(units: Sequence[Unit], argv: list[str], library: Path) -> bytes:
    """Compiles every unit to an object (or takes it from the cache), as many gcc processes at
    once as this process has cores, then links them into `library`; its bytes. gcc's -O3
    dominates a model's build and is single-threaded per unit: one file of all kernels left
    cores idle."""
    compile_argv = [f for f in argv if f != "-shared"]
    objects = _objects(units, compile_argv)
    link = [f for f in argv if f not in FAST_MATH_FLAGS]  # (no crtfastmath.o: see FAST_MATH_FLAGS)
    with atomic_path(library) as tmp:
        _check_gcc([*link, "-o", str(tmp), *map(str, objects), *C_LINK_FLAGS], [n for u in units for n in u.names])
        data = tmp.read_bytes()
        store_digest(library, data)
    return data


def _objects(units: Sequence[Unit], argv: list[str]) -> list[Path]:
    """The object of each unit, in order: cached ones as they are, the rest compiled in
    parallel, largest first (so a big kernel started last does not finish alone). Every
    failing unit is named in one `CompileError`."""
    paths = [object_path(u, argv) for u in units]
    missing = sorted((i for i, p in enumerate(paths) if cached_bytes(p) is None), key=lambda i: -len(units[i].source))
    with ThreadPoolExecutor(max_workers=max(1, min(available_cores(), len(missing)))) as pool:
        results = pool.map(
            _compile_unit, [units[i] for i in missing], [argv] * len(missing), [paths[i] for i in missing]
        )
        errors = [e for e in results if e is not None]
    if errors:
        raise CompileError("\n".join(errors))
    return paths


def object_path(unit: Unit, argv: Sequence[str]) -> Path:
    """The cache entry of a unit's object, compiled with `argv`."""
    return cache_dir() / f"c-{content_key(unit.source, ' '.join(argv), c_compiler_version(), machine())}.o"


def available_cores() -> int:
    """The cores this process may run on: the default thread count, and how many gcc processes
    a build runs at once."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _compile_unit(unit: Unit, argv: list[str], obj: Path) -> str | None:
    """Compiles one unit to `obj` (its source beside it); gcc's error message on failure."""
    source = obj.with_suffix(".c")
    write_atomically(source, unit.source.encode())
    try:
        with atomic_path(obj) as tmp:  # (an exception leaves nothing under the object's name)
            _check_gcc([*argv, "-c", "-o", str(tmp), str(source)], unit.names)
            store_digest(obj, tmp.read_bytes())
    except CompileError as e:
        return str(e)
    return None


def _gcc(argv: list[str], names: Sequence[str]) -> str | None:
    """Runs gcc; None when it succeeds, else a message naming the kernels and quoting gcc."""
    result = subprocess.run([C_COMPILER, *argv], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        return f"{C_COMPILER} failed to compile kernels {', '.join(names)}:\n{result.stderr}"
    return None


def _check_gcc(argv: list[str], names: Sequence[str]) -> None:
    error = _gcc(argv, names)
    if error is not None:
        raise CompileError(error)


def _load_c(path: Path, data: bytes, sources: Sequence[KernelSource], cached: bool) -> CLibrary:
    """Loads `data` (checked bytes of the library at `path`) from a private copy, so what the
    loader maps is what was checked, whatever happens to `path`. The copy stays while the
    process runs (a sanitizer's report reads symbols from it) and is removed at exit."""
    fd, private = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".loaded")
    atexit.register(_remove, private)
    with os.fdopen(fd, "wb") as file:
        file.write(data)
    try:
        handle = ctypes.CDLL(private)
    except OSError as e:
        raise CompileError(f"cannot load the kernel library {path}: {e}") from None
    library = CLibrary(path, data, cached)
    report = getattr(handle, "xrelay_num_threads", None)  # (libraries saved before threads: none)
    if report is not None:
        report.argtypes, report.restype = [], ctypes.c_int
        library.num_threads = int(report())
    for s in sources:
        function = getattr(handle, s.name, None)
        if function is None:
            raise MissingSymbolError(f"{path} has no kernel {s.name}")
        function.argtypes = [ctypes.c_void_p] * (s.num_inputs + 1)
        function.restype = None
        library.kernels[s.name] = CKernel(s.name, s.num_inputs, function)
    return library


class MissingSymbolError(CompileError):
    """A kernel library lacks the function of a kernel."""


def _remove(path: str) -> None:
    with suppress(OSError):
        os.unlink(path)


def _check_language(sources: Sequence[KernelSource], language: str) -> None:
    for s in sources:
        if s.language != language:
            raise CompileError(f"kernel {s.name} is {s.language} code, but this builder builds {language} kernels")
