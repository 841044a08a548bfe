"""
Kernel builders: C kernels into one shared library (gcc + ctypes), OpenCL kernels into one
pyopencl program; each gives callable kernels by name.

    lib = build_c(sources, flags=c_flags("c -O2"))       # CLibrary
    lib["fused_add"](a, b, out)                           # numpy float32 arrays
    prg = build_opencl(ctx, sources)                      # OpenCLProgram
    prg["fused_add"](queue, a_buf, b_buf, out_buf)        # enqueues on the NDRange

C builds are cached on disk under `$XDG_CACHE_HOME/xrelay` (default `~/.cache/xrelay`), keyed
by a hash of the sources, the flags and gcc's version. Files are written to a temporary name in
the cache directory and renamed into place, so two processes building the same kernels at once
both succeed. gcc runs with an argument list, never through a shell, and extra flags come only
from an allow-list. OpenCL programs are cached by the platform (see `build_opencl`).
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from xrelay.errors import CompileError, DeviceError
from xrelay.targets.c import SIMD_MACRO
from xrelay.targets.kernels import KernelSource

C_COMPILER = "gcc"
# -fopenmp-simd enables the emitter's `omp simd` reduction pragmas (no OpenMP runtime).
C_BASE_FLAGS = ("-std=c99", "-O3", "-march=native", "-fPIC", "-shared", "-fopenmp-simd",
                f"-D{SIMD_MACRO}")

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

OPENCL_INSTALL_HINT = (
    "install an OpenCL platform and the pyopencl package, e.g. on Debian "
    "`apt-get install pocl-opencl-icd` and `pip install pyopencl`"
)


# --- the on-disk cache ----------------------------------------------------------------------


def cache_dir() -> Path:
    """`$XDG_CACHE_HOME/xrelay`, or `~/.cache/xrelay`; created on first use."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    path = Path(base) / "xrelay"
    path.mkdir(parents=True, exist_ok=True)
    return path


def content_key(*parts: str) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode())
        digest.update(b"\0")
    return digest.hexdigest()[:32]


@contextmanager
def atomic_path(final: Path) -> Iterator[Path]:
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


def c_flags(target: str) -> list[str]:
    """The extra gcc flags of a C target string such as `"c -O2 -march=znver3"`."""
    kind, *flags = target.split() or [""]
    if kind not in ("c", "llvm"):
        raise CompileError(f"expected a C target string starting with 'c', but found {target!r}")
    check_c_flags(flags, target)
    return flags


def check_c_flags(flags: Sequence[str], target: str | None = None) -> None:
    for flag in flags:
        if not any(re.fullmatch(p, flag) for p in C_FLAG_ALLOW_LIST):
            where = f" in target {target!r}" if target is not None else ""
            raise CompileError(
                f"unsupported C compiler flag {flag!r}{where}; allowed flags match: "
                f"{', '.join(C_FLAG_ALLOW_LIST)}"
            )


@cache
def c_compiler_version() -> str:
    if shutil.which(C_COMPILER) is None:
        raise CompileError(
            f"no C compiler: '{C_COMPILER}' is not on PATH; install it "
            "(on Debian: `apt-get install gcc`)"
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
                f"kernel {self.name} takes {self.num_inputs} inputs and one output, "
                f"but was given {len(arrays)} arrays"
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

    path: Path
    cached: bool  # True when the library came from the on-disk cache
    kernels: dict[str, CKernel] = field(default_factory=dict)

    def __getitem__(self, name: str) -> CKernel:
        return self.kernels[name]


def build_c(sources: Sequence[KernelSource], flags: Sequence[str] = ()) -> CLibrary:
    """Compiles C kernels into one shared library (or takes it from the cache) and loads it."""
    _check_language(sources, "c")
    check_c_flags(flags)
    text = "\n".join(s.source for s in sources)
    argv = [*C_BASE_FLAGS, *flags]
    key = content_key(text, " ".join(argv), c_compiler_version())
    library = cache_dir() / f"c-{key}.so"
    cached = library.exists()
    if not cached:
        _compile_c(text, argv, library, [s.name for s in sources])
    return _load_c(library, sources, cached)


def _compile_c(text: str, argv: list[str], library: Path, names: list[str]) -> None:
    source = library.with_suffix(".c")
    write_atomically(source, text.encode())
    with atomic_path(library) as tmp:
        result = subprocess.run(
            [C_COMPILER, *argv, "-o", str(tmp), str(source)],
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0:
            raise CompileError(
                f"{C_COMPILER} failed to compile kernels {', '.join(names)}:\n{result.stderr}"
            )


def _load_c(path: Path, sources: Sequence[KernelSource], cached: bool) -> CLibrary:
    try:
        handle = ctypes.CDLL(str(path))
    except OSError as e:
        raise CompileError(f"cannot load the kernel library {path}: {e}") from None
    library = CLibrary(path, cached)
    for s in sources:
        function = getattr(handle, s.name)
        function.argtypes = [ctypes.c_void_p] * (s.num_inputs + 1)
        function.restype = None
        library.kernels[s.name] = CKernel(s.name, s.num_inputs, function)
    return library


def _check_language(sources: Sequence[KernelSource], language: str) -> None:
    for s in sources:
        if s.language != language:
            raise CompileError(
                f"kernel {s.name} is {s.language} code, but this builder builds {language} kernels"
            )


# --- OpenCL ---------------------------------------------------------------------------------


def import_pyopencl() -> Any:
    try:
        import pyopencl
    except ImportError as e:
        raise DeviceError(f"no OpenCL: pyopencl cannot be imported ({e}); {OPENCL_INSTALL_HINT}")
    return pyopencl


def opencl_platforms() -> list[Any]:
    """The OpenCL platforms that have devices; a DeviceError when there are none."""
    cl = import_pyopencl()
    try:
        platforms = [p for p in cl.get_platforms() if p.get_devices()]
    except cl.Error:
        platforms = []
    if not platforms:
        raise DeviceError(f"no OpenCL platform found; {OPENCL_INSTALL_HINT}")
    return platforms


def default_opencl_context() -> Any:
    """A context on every device of the first OpenCL platform."""
    cl = import_pyopencl()
    platform = opencl_platforms()[0]
    return cl.Context(platform.get_devices())


@dataclass(eq=False)
class OpenCLKernel:
    """One OpenCL kernel; its `cl.Kernel` object is made once and reused."""

    name: str
    num_inputs: int
    global_size: tuple[int, ...]
    kernel: Any  # pyopencl.Kernel

    def __call__(self, queue: Any, *buffers: Any, wait_for: Sequence[Any] | None = None) -> Any:
        """Enqueues the kernel over its NDRange on `queue` and returns the event."""
        if len(buffers) != self.num_inputs + 1:
            raise TypeError(
                f"kernel {self.name} takes {self.num_inputs} inputs and one output, "
                f"but was given {len(buffers)} buffers"
            )
        cl = import_pyopencl()
        self.kernel.set_args(*buffers)
        return cl.enqueue_nd_range_kernel(queue, self.kernel, self.global_size, None, wait_for=wait_for)


@dataclass(eq=False)
class OpenCLProgram:
    """The OpenCL kernels of one build, as one program on one context."""

    program: Any  # pyopencl.Program
    kernels: dict[str, OpenCLKernel] = field(default_factory=dict)

    def __getitem__(self, name: str) -> OpenCLKernel:
        return self.kernels[name]


def build_opencl(
    cl_context: Any | None, sources: Sequence[KernelSource], options: Sequence[str] = ()
) -> OpenCLProgram:
    """Builds OpenCL kernels for the devices of `cl_context` (the default context if None).

    Not cached here: the platform caches built programs itself (PoCL: 0.02 s warm), and
    fetching device binaries to cache them would double a cold PoCL build, which then
    compiles every kernel's work-group function up front (24 kernels: 3 s -> 7.7 s).
    """
    cl = import_pyopencl()
    _check_language(sources, "opencl")
    context = cl_context if cl_context is not None else default_opencl_context()
    text = "\n".join(s.source for s in sources)
    try:
        program = cl.Program(context, text).build(options=list(options))
    except cl.RuntimeError as e:
        names = ", ".join(s.name for s in sources)
        raise CompileError(f"the OpenCL compiler failed on kernels {names}:\n{e}") from None
    result = OpenCLProgram(program)
    for s in sources:
        kernel = cl.Kernel(program, s.name)
        result.kernels[s.name] = OpenCLKernel(s.name, s.num_inputs, s.global_size, kernel)
    return result


def run_opencl_kernel(
    queue: Any, kernel: OpenCLKernel, inputs: Sequence[np.ndarray], out_shape: Sequence[int]
) -> np.ndarray:
    """Copies `inputs` and a zeroed output to the device, runs `kernel`, returns the output."""
    cl = import_pyopencl()
    mf = cl.mem_flags
    context = queue.context
    bufs = [cl.Buffer(context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=_host(a)) for a in inputs]
    out = np.zeros(out_shape, np.float32)
    out_buf = cl.Buffer(context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=_host(out))
    kernel(queue, *bufs, out_buf)
    cl.enqueue_copy(queue, out, out_buf)
    return out


def _host(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a, np.float32)
    return a if a.size else np.zeros(1, np.float32)

