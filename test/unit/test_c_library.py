"""The runtime's C kernel builder (`runtime/c_library.py`): gcc + ctypes, the on-disk cache,
flags, errors, and ASan, on kernels the compiler emits."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from kernel_cases import ELEMENTWISE, LOOP_KERNELS, SCOPES, kernel_sources_of, random_inputs

import xrelay
from xrelay.driver import lower
from xrelay.errors import CompileError
from xrelay.runtime import c_library
from xrelay.runtime.c_library import build_c, c_flags

UNIT = Path(__file__).parent
REPO = UNIT.parent.parent


def run_c(lib: c_library.CLibrary, case) -> np.ndarray:
    inputs = random_inputs(list(case.inputs), 0, positive=False)
    out = np.zeros(case.output, np.float32)
    lib[case.name](*inputs, out)
    np.testing.assert_allclose(out, case.reference(*inputs), rtol=1e-5, atol=1e-5)
    return out


# --- C --------------------------------------------------------------------------------------


def test_c_second_build_hits_the_cache(cache: Path) -> None:
    first = build_c(kernel_sources_of("c"), ["-O2"])
    assert not first.cached and first.path.parent == cache and first.path.suffix == ".so"
    second = build_c(kernel_sources_of("c"), ["-O2"])
    assert second.cached and second.path == first.path
    for case in LOOP_KERNELS:
        run_c(second, case)
    # the key covers the flags and the sources
    assert not build_c(kernel_sources_of("c"), ["-O1"]).cached
    assert not build_c(kernel_sources_of("c", [ELEMENTWISE]), ["-O2"]).cached
    assert [p.name for p in cache.iterdir() if p.name.endswith(".tmp")] == []


def test_c_build_is_one_library_for_many_kernels(cache: Path) -> None:
    lib = build_c(kernel_sources_of("c"), num_threads=2)
    assert sorted(lib.kernels) == sorted(k.name for k in LOOP_KERNELS)
    assert len(list(cache.glob("*.so"))) == 1
    assert lib.num_threads == 2  # the report, a unit of its own, is linked in
    for case in LOOP_KERNELS:
        run_c(lib, case)


# A gcc on PATH that logs each compile's start and end; a compile (-c) waits (at most 10 s)
# until a second one has started, so two alive at once show in the log as start, start.
FAKE_GCC = """#!/bin/sh
case " $* " in *" -c "*) compiling=1 ;; *) compiling= ;; esac
if [ -n "$compiling" ]; then
  echo start >> {log}
  mkdir -p {started}; : > {started}/$$
  i=0; while [ "$(ls {started} | wc -l)" -lt 2 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done
fi
{gcc} "$@"; status=$?
[ -n "$compiling" ] && echo end >> {log}
exit $status
"""


@pytest.fixture
def gcc_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A logging gcc (FAKE_GCC) first on PATH; the path of its log."""
    bin_dir, log = tmp_path / "bin", tmp_path / "gcc.log"
    bin_dir.mkdir()
    real = shutil.which("gcc")
    assert real is not None
    script = FAKE_GCC.format(log=log, started=tmp_path / "started", gcc=real)
    (bin_dir / "gcc").write_text(script)
    (bin_dir / "gcc").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    log.write_text("")
    return log


def most_alive(log: Path) -> int:
    alive = peak = 0
    for line in log.read_text().split():
        alive += 1 if line == "start" else -1
        peak = max(peak, alive)
    return peak


def test_kernels_compile_in_parallel(cache: Path, gcc_log: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(c_library, "available_cores", lambda: 2)
    monkeypatch.setattr(c_library, "UNIT_BYTES", 0)  # a unit per kernel
    lib = build_c(kernel_sources_of("c"))
    assert gcc_log.read_text().split().count("start") == len(LOOP_KERNELS) + 1  # + the thread report
    assert most_alive(gcc_log) == 2
    for case in LOOP_KERNELS:
        run_c(lib, case)


def test_one_changed_kernel_compiles_one_object(cache: Path, gcc_log: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(c_library, "UNIT_BYTES", 0)
    sources = kernel_sources_of("c")
    build_c(sources, ["-O1"])
    gcc_log.write_text("")
    changed = [dataclasses.replace(s, source=s.source + "\n/* changed */\n") if s.name == "k_select" else s
               for s in sources]  # fmt: skip
    lib = build_c(changed, ["-O1"])
    assert not lib.cached and gcc_log.read_text().split() == ["start", "end"]
    for case in LOOP_KERNELS:
        run_c(lib, case)
    assert len(list(cache.glob("*.o"))) == len(LOOP_KERNELS) + 2 and list(cache.glob("*.tmp")) == []


def test_small_kernels_share_units_decided_by_their_content() -> None:
    sources = [dataclasses.replace(s, name=f"{s.name}_{i}", source=s.source.replace(s.name, f"{s.name}_{i}"))
               for i in range(6) for s in kernel_sources_of("c")]  # fmt: skip
    units = c_library.translation_units(sources)
    assert sorted(n for u in units for n in u.names) == sorted(s.name for s in sources)
    assert len(units) <= len(LOOP_KERNELS) + 1  # equal but for the name: one unit
    for s in kernel_sources_of("c"):
        assert any({f"{s.name}_{i}" for i in range(6)} <= set(u.names) for u in units)
    distinct = kernel_sources_of("c")
    units = c_library.translation_units(distinct)
    for i in range(len(distinct)):
        edited = [*distinct[:i], dataclasses.replace(distinct[i], source=distinct[i].source + " "), *distinct[i + 1 :]]
        changed = set(c_library.translation_units(edited)) - set(units)
        assert 1 <= len(changed) <= 2, i


CONCURRENT_BUILD = """
import sys
import numpy as np
import xrelay
sys.path.insert(0, {unit!r})
from kernel_cases import kernel_sources_of, ELEMENTWISE, random_inputs
from xrelay.runtime.c_library import build_c
from xrelay.targets.kernels import kernel_sources
lib = build_c(kernel_sources(xrelay.parse(ELEMENTWISE.module_text("c"))), ["-O1", "-g"])
a, b = random_inputs([(4, 8), (8,)], 0, False)
out = np.zeros((4, 8), np.float32)
lib["k_elementwise"](a, b, out)
assert np.allclose(out, ELEMENTWISE.reference(a, b), atol=1e-6)
print("cached" if lib.cached else "built")
"""


def test_two_processes_building_the_same_kernel_both_succeed(tmp_path: Path) -> None:
    script = CONCURRENT_BUILD.format(unit=str(UNIT))
    env = {"XDG_CACHE_HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    procs = [
        subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]  # fmt: skip
    results = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], results
    assert len(list((tmp_path / "xrelay").glob("*.so"))) == 1
    assert list((tmp_path / "xrelay").glob("*.tmp")) == []


def test_flags_come_from_the_target_string() -> None:
    assert c_flags("c") == []
    assert c_flags("c -O2 -march=znver3 -funroll-loops") == ["-O2", "-march=znver3", "-funroll-loops"]
    with pytest.raises(CompileError, match="unsupported C compiler flag '-lm' in target 'c -O2 -lm'"):
        c_flags("c -O2 -lm")
    with pytest.raises(CompileError, match="expected a C target string starting with 'c', but found 'opencl'"):
        c_flags("opencl")
    with pytest.raises(CompileError, match="expected a C target string starting with 'c', but found ''"):
        c_flags("")
    assert c_flags("llvm -O1") == ["-O1"]  # llvm is a cpu target kind too


SANITIZED_BUILD = """
import xrelay
text = "func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {\\n  %0 = relay.exp %x : tensor<2xf32>\\n  func.return %0 : tensor<2xf32>\\n}"
try:
    xrelay.build(text, targets=("c FLAG",))
except xrelay.CompileError as e:
    print("CompileError", e)
"""


@pytest.mark.parametrize("flag, runtime", [("-fsanitize=address", "libasan")])
def test_a_sanitizer_flag_needs_its_runtime_loaded_first(flag: str, runtime: str) -> None:
    """`targets=("c -fsanitize=address",)` made the interpreter exit (ASan's runtime must
    come first); without the runtime preloaded it is refused, saying why and what to do.
    (-fsanitize=undefined builds, loads and runs: test_every_allowed_flag_...)"""
    script = SANITIZED_BUILD.replace("FLAG", flag)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(f"CompileError C compiler flag '{flag}' in target 'c {flag}' cannot be used here"), out
    assert f"{runtime}, the sanitizer's runtime, must be loaded before everything else" in out.stdout
    assert f"LD_PRELOAD=$(gcc -print-file-name={runtime}.so)" in out.stdout


@pytest.mark.parametrize("flag", ["-o/tmp/x", "-Wl,-rpath,/tmp", "-fplugin=evil.so", "; rm -rf /", "-O2 -g"])
def test_build_rejects_flags_outside_the_allow_list(cache: Path, flag: str) -> None:
    with pytest.raises(CompileError, match="unsupported C compiler flag"):
        build_c(kernel_sources_of("c", [ELEMENTWISE]), [flag])


def test_gcc_error_is_a_compile_error_with_its_message(cache: Path) -> None:
    (good,) = kernel_sources_of("c", [ELEMENTWISE])
    bad = dataclasses.replace(good, source=good.source.replace("out0[", "undeclared_buffer["))
    with pytest.raises(
        CompileError, match="gcc failed to compile kernels k_elementwise:\n(.|\n)*error: .undeclared_buffer. undeclared"
    ):
        build_c([bad])


def test_a_failing_kernel_among_many_is_named(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(c_library, "UNIT_BYTES", 0)
    sources = kernel_sources_of("c")
    broken = [dataclasses.replace(s, source=s.source.replace("out0[", "undeclared_buffer[")) if s.name == "k_select" else s
              for s in sources]  # fmt: skip
    with pytest.raises(CompileError) as error:
        build_c(broken)
    message = str(error.value)
    assert message.startswith("gcc failed to compile kernels k_select:\n") and "undeclared_buffer" in message
    assert "k_elementwise" not in message
    assert list(cache.glob("*.tmp")) == [] and list(cache.glob("*.so")) == []
    assert len(list(cache.glob("*.o"))) == len(LOOP_KERNELS)  # the others' (and the report's) objects


def test_c_builder_rejects_opencl_kernel_sources_of(cache: Path) -> None:
    with pytest.raises(CompileError, match="kernel k_elementwise is opencl code, but this builder builds c kernels"):
        build_c(kernel_sources_of("opencl", [ELEMENTWISE]))


def test_c_kernel_checks_its_arguments(cache: Path) -> None:
    kernel = build_c(kernel_sources_of("c", [ELEMENTWISE]))["k_elementwise"]
    a, b, out = np.zeros((4, 8), np.float32), np.zeros(8, np.float32), np.zeros((4, 8), np.float32)
    with pytest.raises(TypeError, match="takes 2 inputs and one output, but was given 2 arrays"):
        kernel(a, out)
    with pytest.raises(TypeError, match="C-contiguous float32"):
        kernel(a, b.astype(np.float64), out)


# --- AddressSanitizer -----------------------------------------------------------------------

OUT_OF_BOUNDS = """
func.func @k_oob(%in0: memref<8xf32>, %out0: memref<8xf32>) attributes {relay.se_scope = SCOPE} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  "scf.parallel"(%c0, %c8, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%i: index):
    %n = arith.addi %i, %c1 : index
    %x = memref.load %in0[%n] : memref<8xf32>
    memref.store %x, %out0[%i] : memref<8xf32>
    scf.reduce
  }) : (index, index, index) -> ()
  func.return
}"""

ASAN_DRIVER = """
import sys
import numpy as np
sys.path.insert(0, {unit!r})
import test_targets
from kernel_cases import kernel_sources_of, LOOP_KERNELS, random_inputs
import xrelay
from xrelay.runtime.c_library import build_c
from xrelay.targets.kernels import kernel_sources

if {extra!r}:
    modules = [xrelay.parse(t) for t in {extra!r}]
else:
    loops = [xrelay.parse(k.module_text("c")) for k in LOOP_KERNELS]
    modules = [*loops, *test_targets.lowered_groups("c").values()]
srcs = [s for m in modules for s in kernel_sources(m)]
lib = build_c(srcs, ["-fsanitize=address", "-fno-omit-frame-pointer", "-O1"])
for m in modules:
    for k in m.ops:
        if "relay.se_scope" not in k.attributes:
            continue
        # arrays of exactly the kernel's sizes, so any access past them hits a redzone
        *ins, out = [tuple(a.type.get_shape()) for a in k.args]
        arrays = random_inputs(ins, 0, True)
        lib[k.sym_name.data](*arrays, np.zeros(out, np.float32))
print("ran", len(srcs))
"""


def run_under_asan(tmp_path: Path, extra: list[str]) -> subprocess.CompletedProcess[str]:
    libasan = subprocess.run(["gcc", "-print-file-name=libasan.so"], capture_output=True,
                             text=True, check=True).stdout.strip()  # fmt: skip
    env = {
        "XDG_CACHE_HOME": str(tmp_path),
        "PATH": "/usr/bin:/bin",
        "LD_PRELOAD": libasan,  # ASan's runtime must be loaded before the Python interpreter
        "ASAN_OPTIONS": "detect_leaks=0",  # CPython keeps objects alive at exit
    }
    script = ASAN_DRIVER.format(unit=str(UNIT), extra=extra)
    return subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=300)  # fmt: skip


class TextsInFile:
    """Module texts for `run_under_asan` that its driver script reads from a file: the script,
    which spells its list of texts twice, is one command-line argument of at most 128 KiB,
    and a Winograd F4 kernel alone is 63 KB of IR."""

    def __init__(self, path: Path, texts: list[str]):
        path.write_text("\f".join(texts))
        self.path = path

    def __repr__(self) -> str:
        return f"__import__('pathlib').Path({str(self.path)!r}).read_text().split('\\f')"


def run_programs_under_asan(tmp_path: Path, programs: list[str]) -> None:
    """Lowers each relay program for the cpu and runs all their kernels, in one library
    built with -fsanitize=address, on arrays of exactly their sizes: any access past them
    hits a redzone."""
    texts = []
    for number, program in enumerate(programs):
        module = xrelay.parse(program)
        lower(module, ("c",), None, "c")
        texts.append(str(module).replace("@fused_", f"@case{number}_fused_"))  # one library
    result = run_under_asan(tmp_path, TextsInFile(tmp_path / "modules.txt", texts))  # pyright: ignore[reportArgumentType]
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout == f"ran {len(texts)}\n"


def test_kernels_run_clean_under_address_sanitizer(tmp_path: Path) -> None:
    result = run_under_asan(tmp_path, [])
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.startswith("ran ")


# An OpenMP-threaded nest (collapse(2): the two leading loops give 16 iterations) whose body
# calls libmvec's vector maths.
THREADED_MATHS = """
func.func @k_threaded_maths(%in0: memref<2x8x131072xf32>, %in1: memref<2x8x131072xf32>, %out0: memref<2x8x131072xf32>) attributes {relay.se_scope = SCOPE} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  %cn = arith.constant 131072 : index
  "scf.parallel"(%c0, %c0, %c0, %c2, %c8, %cn, %c1, %c1, %c1) <{operandSegmentSizes = array<i32: 3, 3, 3, 0>}> ({
  ^bb0(%i: index, %j: index, %k: index):
    %a = memref.load %in0[%i, %j, %k] : memref<2x8x131072xf32>
    %b = memref.load %in1[%i, %j, %k] : memref<2x8x131072xf32>
    %e = math.exp %a : f32
    %t = math.tanh %e : f32
    %f = math.erf %t : f32
    %l = math.log %b : f32
    %p = math.powf %b, %f : f32
    %s = arith.addf %p, %l : f32
    memref.store %s, %out0[%i, %j, %k] : memref<2x8x131072xf32>
    scf.reduce
  }) : (index, index, index, index, index, index, index, index, index) -> ()
  func.return
}"""


def test_threaded_vector_maths_run_clean_under_address_sanitizer(tmp_path: Path) -> None:
    result = run_under_asan(tmp_path, [THREADED_MATHS.replace("SCOPE", SCOPES["c"])])
    assert result.returncode == 0, result.stderr[-3000:]
    # the library's translation units (the kernel's, the thread count's), in no set order
    sources = [path.read_text() for path in tmp_path.glob("xrelay/c-*.c")]
    assert any("omp for schedule(dynamic) nowait collapse(2)" in source for source in sources)


def test_address_sanitizer_catches_an_out_of_bounds_kernel(tmp_path: Path) -> None:
    result = run_under_asan(tmp_path, [OUT_OF_BOUNDS.replace("SCOPE", SCOPES["c"])])
    assert result.returncode != 0
    assert "AddressSanitizer: heap-buffer-overflow" in result.stderr and "k_oob" in result.stderr


# One instance of every pattern of the flag allow-list (`-fsanitize=address` needs ASan's
# runtime preloaded: the ASan tests above build with it).
ALLOWED_FLAGS = [
    "-O0", "-O1", "-O2", "-O3", "-Os", "-g", "-march=native", "-mtune=native", "-mavx2", "-mno-avx512f",
    "-mfma", "-msse4.2", "-ffast-math", "-fno-fast-math", "-funroll-loops", "-fno-tree-vectorize",
    "-fomit-frame-pointer", "-fsanitize=undefined",
]  # fmt: skip


def test_every_allowed_flag_matches_the_allow_list() -> None:
    patterns = set()
    for flag in [*ALLOWED_FLAGS, "-fsanitize=address"]:
        matching = [p for p in c_library.C_FLAG_ALLOW_LIST if re.fullmatch(p, flag)]
        assert matching, flag
        patterns.update(matching)
    assert patterns == set(c_library.C_FLAG_ALLOW_LIST)


@pytest.mark.parametrize("flag", ALLOWED_FLAGS)
def test_every_allowed_flag_builds_loads_and_runs(cache: Path, flag: str) -> None:
    """`c -ffast-math` once built a library that did not load (gcc called libmvec's
    _ZGVeN16v_expf, which was not linked): each flag builds a kernel with exp and tanh."""
    text = """func.func @main(%x: tensor<64xf32>) -> tensor<64xf32> {
  %0 = relay.exp %x : tensor<64xf32>
  %1 = relay.tanh %0 : tensor<64xf32>
  func.return %1 : tensor<64xf32>
}"""
    x = np.linspace(-3, 3, 64, dtype=np.float32)
    out = xrelay.build(text, targets=(f"c {flag}",)).run(x)
    np.testing.assert_allclose(out, np.tanh(np.exp(x)), rtol=1e-5)


# --- the cache is checked before anything in it runs (issue 33 item 2) -----------------------

EXP_PROGRAM = """
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.exp %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""

# A library that answers every kernel call with 42s, and whose constructor leaves a marker.
PLANTED = """
#include <stdio.h>
__attribute__((constructor)) static void planted(void) {{ FILE *f = fopen("{marker}", "w"); if (f) fclose(f); }}
void {name}(const float *x, float *out) {{ for (int i = 0; i < 4; i++) out[i] = 42.0f; }}
int xrelay_num_threads(void) {{ return 1; }}
"""


def plant(path: Path, name: str, marker: Path) -> None:
    source = path.with_name("planted.c")
    source.write_text(PLANTED.format(marker=marker, name=name))
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(path), str(source)], check=True)
    source.unlink()


def test_a_library_planted_at_an_artifacts_cache_path_is_not_loaded(cache: Path, tmp_path: Path) -> None:
    exe = xrelay.build(EXP_PROGRAM, targets=("c",))
    exe.save(tmp_path / "exp.xrelay")
    x = np.arange(4, dtype=np.float32)
    ((name,), library) = [k.name for k in exe.kernels], exe.loaded[0].library
    assert library is not None
    marker = tmp_path / "constructor-ran"
    planted = cache / f"c-saved-{hashlib.sha256(library).hexdigest()[:32]}.so"
    plant(planted, name, marker)
    out = xrelay.load(tmp_path / "exp.xrelay").run(x=x)
    np.testing.assert_allclose(out, np.exp(x), rtol=1e-6)
    assert not marker.exists()


def test_a_planted_or_damaged_cache_entry_is_rebuilt_not_loaded(cache: Path, tmp_path: Path) -> None:
    first = build_c(kernel_sources_of("c", [ELEMENTWISE]))
    marker = tmp_path / "constructor-ran"
    plant(first.path, "k_elementwise", marker)  # its recorded sha256 stays the built one
    for obj in cache.glob("*.o"):
        obj.write_bytes(obj.read_bytes()[:100])  # damaged
    second = build_c(kernel_sources_of("c", [ELEMENTWISE]))
    assert not second.cached and not marker.exists()
    run_c(second, ELEMENTWISE)
    assert build_c(kernel_sources_of("c", [ELEMENTWISE])).cached


def test_the_cache_directory_is_the_users_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    path = c_library.cache_dir()
    assert path.stat().st_mode & 0o777 == 0o700
    path.chmod(0o755)  # as xrelay made it before: narrowed
    assert c_library.cache_dir().stat().st_mode & 0o777 == 0o700
    monkeypatch.setattr(os, "getuid", lambda: path.stat().st_uid + 1)
    with pytest.raises(CompileError, match=r"refusing the kernel cache directory .*: it is owned by uid \d+, not"):
        c_library.cache_dir()
    monkeypatch.undo()
    other = tmp_path / "other"
    other.mkdir()
    (other / "xrelay").mkdir()
    path.rmdir()
    path.symlink_to(other / "xrelay")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    with pytest.raises(CompileError, match="it is a symbolic link"):
        c_library.cache_dir()
