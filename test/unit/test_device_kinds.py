"""One table of device kinds: every layer's lookup is derived from `runtime/device_kinds.py`
(a row added or changed there changes them all), and `runtime/machine.py`'s ISA levels say
what a processor needs to run kernels built for each."""

from __future__ import annotations

from typing import Any

import pytest

from xrelay import driver
from xrelay.diagnostics import ConfigError
from xrelay.errors import DeviceError
from xrelay.ir import parse
from xrelay.runtime import artifact, device, kernels, machine
from xrelay.runtime.device_kinds import DEVICE_KINDS, device_kind, generating_kinds, kind_of_language, language_name
from xrelay.targets import kernels as target_kernels
from xrelay.targets.c import CEmitter
from xrelay.targets.opencl import OpenCLEmitter
from xrelay.transforms import compilation_config as config


def test_compilation_config_target_kinds_come_from_the_rows() -> None:
    assert {t: k.name for k in DEVICE_KINDS for t in k.target_kinds} == config.TARGET_KIND_DEVICES
    assert config.TARGET_KIND_DEVICES["llvm"] == "cpu" and config.TARGET_KIND_DEVICES["vulkan"] == "vulkan"
    assert config.DEVICE_TARGETS == {"cpu": "c", "opencl": "opencl"}
    assert config.target_kind("c -march=x86-64-v3") == "c"
    assert [config.device_of_target(t) for t in ("c -O2", "llvm", "opencl", "cuda")] == ["cpu", "cpu", "opencl", "cuda"]
    with pytest.raises(ConfigError, match="unknown target kind 'rust' in target \"rust -O\"; expected one of c, llvm"):
        config.device_of_target("rust -O")


def test_targets_named_in_a_module_are_the_host_and_each_generating_kind() -> None:
    scope = '#relay.se_scope<device = {}, id = 0, target = "{}", memory = "global">'
    text = (
        "func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {{\n"
        '  %y = "relay.on_device"(%x) <{{se_scope = {}}}> : (tensor<2xf32>) -> tensor<2xf32>\n'
        "  func.return %y : tensor<2xf32>\n}}\n"
    )
    assert config.targets_named_in(parse(text.format(scope.format("opencl", "opencl")))) == ("c", "opencl")
    assert config.targets_named_in(parse(text.format(scope.format("cpu", "c")))) == ("c",)
    # cuda has a target kind but no code generator: nothing to build it with
    assert config.targets_named_in(parse(text.format(scope.format("cuda", "cuda")))) == ("c",)


def test_driver_generated_devices_and_threads_follow_the_rows() -> None:
    assert driver.GENERATED_DEVICES == {"cpu": "C", "opencl": "OpenCL C"}
    assert driver.language_name("opencl") == "OpenCL C" and driver.language_name("c") == "C"
    graph: dict[str, Any] = {
        "devices": [
            {"kind": "cpu", "id": 0, "target": "c"},
            {"kind": "opencl", "id": 0, "target": "opencl"},
            {"kind": "cpu", "id": 1, "target": "c"},
        ]
    }
    driver.record_threads(graph, 3)
    assert [entry.get("num_threads") for entry in graph["devices"]] == [3, None, 3]
    with pytest.raises(ConfigError, match='target "cuda" is for device type cuda, but xrelay generates kernels only'):
        driver.target_list(("c", "cuda"))


def test_the_emitter_and_language_of_a_kernel_are_its_kinds() -> None:
    cpu, opencl = device_kind("cpu"), device_kind("opencl")
    assert cpu is not None and opencl is not None
    assert target_kernels.emitter_of(cpu) is CEmitter and target_kernels.emitter_of(opencl) is OpenCLEmitter
    assert (cpu.work_groups, opencl.work_groups) == (False, True)  # only opencl kernels get a local_size
    assert [k.name for k in generating_kinds()] == ["cpu", "opencl"]


def test_runtime_lookups_come_from_the_rows() -> None:
    assert kernels.LANGUAGES == ("c", "opencl")
    assert artifact.SUFFIXES == {"c": ".c", "opencl": ".cl"}
    assert device.DEVICE_KINDS == {
        "cpu": "cpu:CPUDevice",
        "opencl": "opencl:OpenCLDevice",
        "numpy": "numpy_device:NumpyDevice",  # the runtime's own test device
    }
    assert [device.default_spec(d, 2) for d in ("cpu", "opencl")] == ["cpu", "opencl:2"]
    with pytest.raises(DeviceError, match="no runtime device for scope cuda:0; xrelay runs cpu and opencl scopes"):
        device.default_spec("cuda", 0)
    with pytest.raises(DeviceError, match="expected kind\\[:index\\] with kind one of cpu, opencl, numpy"):
        device.parse_spec("cuda:0")
    assert type(device.open_device("numpy")).__name__ == "NumpyDevice"
    assert (language_name("opencl"), language_name("c"), language_name("wgsl")) == ("OpenCL C", "C", "wgsl")
    language = kind_of_language("c")
    assert language is not None and language.name == "cpu"


def test_target_features_ask_the_row() -> None:
    """A C target's features are the host's as its -march builds for it; opencl's the device's."""
    assert machine.target_features("opencl") == machine.opencl_features()
    assert machine.target_features("c -march=x86-64-v3") == machine.c_features(("-march=x86-64-v3",))
    v3, v2 = machine.target_features("c -march=x86-64-v3"), machine.target_features("llvm -march=x86-64-v2")
    assert (v3.isa, v3.vector_floats, v3.vector_registers, v3.fma) == ("x86-64-v3", 8, 16, True)
    assert (v2.isa, v2.vector_floats, v2.vector_registers, v2.fma) == ("x86-64-v2", 4, 16, False)


@pytest.mark.parametrize(
    ("macros", "isa", "floats", "registers"),
    [
        (
            {
                "__SSE2__",
                "__SSE4_2__",
                "__AVX__",
                "__AVX2__",
                "__FMA__",
                "__AVX512F__",
                "__AVX512BW__",
                "__AVX512DQ__",
                "__AVX512VL__",
            },
            "x86-64-v4",
            16,
            32,
        ),  # fmt: skip
        ({"__SSE2__", "__AVX__", "__AVX512F__"}, "x86-64 with AVX-512F", 16, 32),
        ({"__SSE2__", "__SSE4_2__", "__AVX__", "__AVX2__", "__FMA__"}, "x86-64-v3", 8, 16),
        ({"__SSE2__", "__SSE4_2__", "__AVX__"}, "x86-64 with AVX", 8, 16),
        ({"__SSE2__", "__SSE4_2__"}, "x86-64-v2", 4, 16),
        ({"__SSE2__"}, "x86-64", 4, 16),
        ({"__ARM_NEON"}, "aarch64", 4, 32),
    ],
)
def test_isa_levels_from_gcc_macros(macros: set[str], isa: str, floats: int, registers: int) -> None:
    assert machine.instruction_set(frozenset(macros)) == (isa, floats, registers)


def test_what_a_processor_lacks_for_a_level() -> None:
    v3_host = frozenset({"sse2", "ssse3", "sse4_2", "avx", "avx2", "fma"})
    assert machine.isa_of_flags(v3_host) == "x86-64-v3"
    assert machine.isa_of_flags(v3_host | {"avx512f", "avx512bw", "avx512dq", "avx512vl"}) == "x86-64-v4"
    assert machine.isa_of_flags(frozenset({"neon"})) is None
    assert machine.missing_extensions("x86-64-v4", v3_host) == ["avx512bw", "avx512dq", "avx512f", "avx512vl"]
    assert machine.missing_extensions("x86-64-v3", v3_host) == []
    assert machine.missing_extensions("x86-64-v2", v3_host) == []
    assert machine.missing_extensions("x86-64-v3", frozenset({"sse2", "sse4_2"})) == ["avx2", "fma"]
    assert machine.missing_extensions("opencl", frozenset()) == []  # not a processor's level
