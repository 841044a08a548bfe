"""runtime/machine.py: a target's features (ISA level, vector width, registers, FMA, caches),
and what a processor needs to run kernels built for each ISA level."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import xrelay
from xrelay.runtime import machine
from xrelay.runtime.machine import (
    Features,
    c_features,
    instruction_set,
    isa_of_flags,
    missing_extensions,
    opencl_features,
    target_features,
)

# --- instruction_set: gcc's predefined macros -> (level, floats, registers) ----------------

SSE = {"__SSE__", "__SSE2__"}
V2 = SSE | {"__SSE3__", "__SSSE3__", "__SSE4_1__", "__SSE4_2__", "__POPCNT__"}
V3 = V2 | {"__AVX__", "__AVX2__", "__FMA__", "__BMI__", "__BMI2__", "__F16C__"}
V4 = V3 | {"__AVX512F__", "__AVX512BW__", "__AVX512DQ__", "__AVX512VL__", "__AVX512CD__"}


@pytest.mark.parametrize(
    ("macros", "expected"),
    [
        (V4, ("x86-64-v4", 16, 32)),
        (V3 | {"__AVX512F__"}, ("x86-64 with AVX-512F", 16, 32)),
        (V3, ("x86-64-v3", 8, 16)),
        (V2 | {"__AVX__"}, ("x86-64 with AVX", 8, 16)),
        (V2, ("x86-64-v2", 4, 16)),
        (SSE, ("x86-64", 4, 16)),
        ({"__aarch64__", "__ARM_NEON", "__ARM_FEATURE_FMA"}, ("aarch64", 4, 32)),
    ],
    ids=["v4", "avx512f-only", "v3", "avx-no-fma", "v2", "x86-64", "aarch64"],
)
def test_instruction_set_of_macros(macros: set[str], expected: tuple[str, int, int]) -> None:
    assert instruction_set(frozenset(macros)) == expected


def test_instruction_set_without_known_macros_is_scalar() -> None:
    _, floats, registers = instruction_set(frozenset({"__linux__"}))
    assert (floats, registers) == (1, 16)


# --- target_features for C targets --------------------------------------------------------


def test_avx2_target_is_8_floats_in_16_registers_with_fma() -> None:
    f = target_features("c -march=x86-64-v3")
    assert (f.isa, f.vector_floats, f.vector_registers, f.fma) == ("x86-64-v3", 8, 16, True)


def test_sse42_target_is_4_floats_without_fma() -> None:
    f = target_features("c -march=x86-64-v2")
    assert (f.isa, f.vector_floats, f.vector_registers, f.fma) == ("x86-64-v2", 4, 16, False)


def test_avx512_target_is_16_floats_in_32_registers() -> None:
    """gcc never runs the code here, so v4 is described on any x86 host."""
    f = target_features("c -march=x86-64-v4")
    assert (f.isa, f.vector_floats, f.vector_registers, f.fma) == ("x86-64-v4", 16, 32, True)


def test_plain_c_target_is_the_host_as_gcc_native_builds_for_it() -> None:
    """Read from gcc's -march=native macros here, independently of `instruction_set`'s table."""
    out = subprocess.run(
        ["gcc", "-march=native", "-dM", "-E", "-x", "c", "/dev/null"], capture_output=True, text=True, check=True
    ).stdout
    if "__AVX512F__" in out:
        floats, registers = 16, 32
    elif "__AVX__" in out:
        floats, registers = 8, 16
    elif "__SSE2__" in out or "__ARM_NEON" in out:
        floats, registers = 4, 32 if "__ARM_NEON" in out else 16
    else:
        pytest.skip("a host without SSE2 or NEON")
    f = target_features("c")
    assert (f.vector_floats, f.vector_registers, f.fma) == (floats, registers, "#define __FMA__ 1" in out)
    assert f.name == machine.host_name()
    assert f.cores >= 1


def test_flags_other_than_machine_ones_are_ignored() -> None:
    assert target_features("c -O2 -g -funroll-loops") == target_features("c")
    assert target_features("c -O1 -march=x86-64-v3 -g") == target_features("c -march=x86-64-v3")
    assert target_features("llvm -march=x86-64-v2") == target_features("c -march=x86-64-v2")


def test_a_later_machine_flag_narrows_the_level() -> None:
    """`-mno-avx512f` after -march=native (or v4) leaves AVX2: 8 floats."""
    f = target_features("c -march=x86-64-v4 -mno-avx512f")
    assert (f.vector_floats, f.vector_registers) == (8, 16)


# --- Features as data ---------------------------------------------------------------------

SAMPLE = Features(
    name="Test CPU",
    isa="x86-64-v3",
    vector_floats=8,
    vector_registers=16,
    fma=True,
    l1d=32 << 10,
    l2=512 << 10,
    l3=16 << 20,
    cores=4,
)


def test_features_round_trip_through_json_text() -> None:
    for features in (SAMPLE, target_features("c"), Features(**{**SAMPLE.to_json(), "local_memory": 64 << 10})):
        assert Features.from_json(json.loads(json.dumps(features.to_json()))) == features


def test_summary_names_the_width_registers_and_caches() -> None:
    text = SAMPLE.summary()
    assert "x86-64-v3" in text
    assert "8 floats x 16 vector registers" in text
    assert "FMA" in text and "no FMA" not in text
    assert "L1d 32 KiB, L2 512 KiB, L3 16 MiB, 4 cores" in text
    assert "(Test CPU)" in text
    assert "local memory" not in text
    assert "no FMA" in Features(**{**SAMPLE.to_json(), "fma": False}).summary()
    assert "local memory 64 KiB" in Features(**{**SAMPLE.to_json(), "local_memory": 64 << 10}).summary()


# --- the host's caches from sysfs ---------------------------------------------------------


def fake_cache(root: Path, index: int, level: str, kind: str, size: str) -> None:
    d = root / f"index{index}"
    d.mkdir(parents=True)
    (d / "level").write_text(level + "\n")
    (d / "type").write_text(kind + "\n")
    (d / "size").write_text(size + "\n")


def test_host_caches_reads_sysfs(tmp_path: Path) -> None:
    fake_cache(tmp_path, 0, "1", "Data", "48K")
    fake_cache(tmp_path, 1, "1", "Instruction", "32K")  # not counted
    fake_cache(tmp_path, 2, "2", "Unified", "2048K")
    fake_cache(tmp_path, 3, "3", "Unified", "96M")
    assert machine.host_caches(tmp_path) == (48 << 10, 2 << 20, 96 << 20)


def test_host_caches_skips_unreadable_entries_and_defaults_missing_levels(tmp_path: Path) -> None:
    fake_cache(tmp_path, 0, "1", "Data", "64K")
    fake_cache(tmp_path, 1, "2", "Unified", "lots")  # not a size: skipped
    (tmp_path / "index2").mkdir()  # no files: skipped
    assert machine.host_caches(tmp_path) == (64 << 10, 512 << 10, 8 << 20)
    assert machine.host_caches(tmp_path / "absent") == (32 << 10, 512 << 10, 8 << 20)


def test_host_caches_of_this_host_are_plausible() -> None:
    l1d, l2, l3 = machine.host_caches()
    assert 4 << 10 <= l1d <= l2 <= max(l3, l2)


# --- OpenCL -------------------------------------------------------------------------------


def test_opencl_without_a_platform_is_the_host(monkeypatch: pytest.MonkeyPatch) -> None:
    """With no pyopencl (no platform), the OpenCL target is described as the host, as PoCL
    would compile for it."""
    monkeypatch.setitem(sys.modules, "pyopencl", None)  # `import pyopencl` raises ImportError
    machine.opencl_features.cache_clear()
    try:
        f = machine.opencl_features()
    finally:
        machine.opencl_features.cache_clear()
    host = target_features("c")
    assert f.isa == "opencl"
    assert f.name.startswith("no OpenCL platform")
    assert (f.vector_floats, f.vector_registers, f.fma, f.l1d, f.cores) == (
        host.vector_floats,
        host.vector_registers,
        host.fma,
        host.l1d,
        host.cores,
    )


def test_opencl_device_features_come_from_the_device() -> None:
    cl = pytest.importorskip("pyopencl")
    try:
        device = cl.get_platforms()[0].get_devices()[0]
    except Exception:
        pytest.skip("no OpenCL platform")
    f = machine.opencl_features()
    assert f.isa == "opencl"
    assert f.name == device.name
    assert f.vector_floats == max(1, device.preferred_vector_width_float)
    assert f.cores == device.max_compute_units
    assert f.local_memory == device.local_mem_size
    if device.type & cl.device_type.CPU:  # PoCL: the registers of its width's x86-64 level
        assert f.vector_registers == {16: 32, 8: 16, 4: 16}.get(f.vector_floats, f.vector_registers)


@pytest.mark.parametrize("width, registers", [(16, 32), (8, 16), (4, 16)])
def test_an_opencl_target_may_fix_its_vector_width(width: int, registers: int) -> None:
    """`opencl -vector-width=N`: kernels of N-float vectors, whatever the device prefers, and
    (on a CPU device such as PoCL) the registers of the x86-64 level of that width."""
    f = target_features(f"opencl -vector-width={width}")
    assert f.vector_floats == width
    assert f.vector_registers == registers or f.vector_registers == 64  # 64: a GPU's, kept


def test_a_bad_vector_width_is_an_error() -> None:
    with pytest.raises(xrelay.Error, match="-vector-width takes 1, 2, 4, 8 or 16 floats"):
        target_features("opencl -vector-width=12")


def test_the_avx2_host_compiler_is_gcc_for_x86_64_v3() -> None:
    """`make test-avx2-host` runs the suite with test/hosts/x86-64-v3/gcc first on PATH: it
    must be gcc whose -march=native is AVX2 with FMA and no AVX-512, whatever this host is."""
    wrapper = Path(__file__).resolve().parents[1] / "hosts" / "x86-64-v3" / "gcc"
    out = subprocess.run(
        [str(wrapper), "-march=native", "-dM", "-E", "-x", "c", "/dev/null"], capture_output=True, text=True, check=True
    ).stdout
    macros = frozenset(re.findall(r"^#define (\w+)", out, re.MULTILINE))
    assert instruction_set(macros) == ("x86-64-v3", 8, 16)


def test_target_features_ask_the_row() -> None:
    """A C target's features are the host's as its -march builds for it; opencl's the device's."""
    assert target_features("opencl -vector-width=16").name == opencl_features().name  # the device's own
    assert target_features("c -march=x86-64-v3") == c_features(("-march=x86-64-v3",))
    v3, v2 = target_features("c -march=x86-64-v3"), target_features("llvm -march=x86-64-v2")
    assert (v3.isa, v3.vector_floats, v3.vector_registers, v3.fma) == ("x86-64-v3", 8, 16, True)
    assert (v2.isa, v2.vector_floats, v2.vector_registers, v2.fma) == ("x86-64-v2", 4, 16, False)


def test_what_a_processor_lacks_for_a_level() -> None:
    v3_host = frozenset({"sse2", "ssse3", "sse4_2", "avx", "avx2", "fma"})
    assert isa_of_flags(v3_host) == "x86-64-v3"
    assert isa_of_flags(v3_host | {"avx512f", "avx512bw", "avx512dq", "avx512vl"}) == "x86-64-v4"
    assert isa_of_flags(frozenset({"neon"})) is None
    assert missing_extensions("x86-64-v4", v3_host) == ["avx512bw", "avx512dq", "avx512f", "avx512vl"]
    assert missing_extensions("x86-64-v3", v3_host) == []
    assert missing_extensions("x86-64-v2", v3_host) == []
    assert missing_extensions("x86-64-v3", frozenset({"sse2", "sse4_2"})) == ["avx2", "fma"]
    assert missing_extensions("opencl", frozenset()) == []  # not a processor's level


# --- host_memory: physical memory, RLIMIT_AS and the cgroup's limit (issue 33, item 6) -----


def fake_proc(tmp_path: Path, cgroup: str, vm_kb: int = 0) -> Path:
    proc = tmp_path / "proc"
    proc.mkdir()
    (proc / "cgroup").write_text(cgroup)
    (proc / "status").write_text(f"Name:\tpython\nVmSize:\t{vm_kb} kB\n")
    return proc


def test_host_memory_is_the_cgroup_v2_limit_of_the_group_or_above(tmp_path: Path) -> None:
    group = tmp_path / "cg" / "user.slice" / "job"
    group.mkdir(parents=True)
    (group / "memory.max").write_text("max\n")  # no limit of its own
    (group.parent / "memory.max").write_text(f"{3 << 20}\n")
    (tmp_path / "cg" / "memory.max").write_text(f"{5 << 20}\n")
    proc = fake_proc(tmp_path, "0::/user.slice/job\n")
    assert machine.host_memory(tmp_path / "cg", proc) == 3 << 20


def test_host_memory_is_the_cgroup_v1_limit(tmp_path: Path) -> None:
    group = tmp_path / "cg" / "memory" / "docker" / "abc"
    group.mkdir(parents=True)
    (group / "memory.limit_in_bytes").write_text(f"{7 << 20}\n")
    (tmp_path / "cg" / "memory" / "memory.limit_in_bytes").write_text("9223372036854771712\n")  # v1's "none"
    proc = fake_proc(tmp_path, "5:cpu,cpuacct:/docker/abc\n4:memory:/docker/abc\n0::/\n")
    assert machine.host_memory(tmp_path / "cg", proc) == 7 << 20


def test_host_memory_without_cgroups_is_at_most_the_physical_memory(tmp_path: Path) -> None:
    physical = machine._physical_memory()
    found = machine.host_memory(tmp_path / "none", tmp_path / "none")
    assert physical is not None and found is not None and 0 < found <= physical


ULIMIT_SCRIPT = """
import resource, sys
import xrelay
limit = 4 << 30
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
ty = "tensor<2x1024x1024x1024xf32>"  # 8 GiB
text = f"func.func @main(%x: {ty}) -> {ty} {{\\n  %0 = relay.exp %x : {ty}\\n  func.return %0 : {ty}\\n}}"
try:
    xrelay.build(text, targets=("c",))
except BaseException as e:
    print(type(e).__name__, e)
"""


def test_a_plan_larger_than_ulimit_v_is_a_device_error() -> None:
    """Under `ulimit -v` 4 GiB, an 8 GiB plan failed with numpy's _ArrayMemoryError (the
    limit was the physical memory)."""
    out = subprocess.run([sys.executable, "-c", ULIMIT_SCRIPT], capture_output=True, text=True, timeout=120)
    assert out.stdout.startswith("DeviceError "), out.stdout + out.stderr
    assert "input x (node 0, shape [2, 1024, 1024, 1024]) takes 8 GiB, but device cpu:0 allocates at most" in out.stdout
