"""One table of device kinds: every layer's lookup is derived from `runtime/device_kinds.py`
(a row added or changed there changes them all)."""

from __future__ import annotations

import importlib
from typing import Any

import pytest

from xrelay import driver
from xrelay.diagnostics import ConfigError
from xrelay.errors import DeviceError
from xrelay.ir import parse
from xrelay.runtime import artifact, device, kernels
from xrelay.runtime.device_kinds import (
    DEVICE_KINDS,
    DeviceKind,
    device_kind,
    generating_kinds,
    kind_of_language,
    kind_of_target,
    language_name,
    target_kind,
    target_kinds,
)
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


# --- device_kinds -------------------------------------------------------------------------


def test_target_strings_name_their_device_kind() -> None:
    assert target_kind("c -march=x86-64-v3") == "c"
    assert target_kind("   ") == ""
    assert kind_of_target("c -march=x86-64-v3") is device_kind("cpu")
    assert kind_of_target("llvm") is device_kind("cpu")
    assert kind_of_target("opencl") is device_kind("opencl")
    assert kind_of_target("tpu") is None
    assert device_kind("tpu") is None
    assert target_kinds() == {"c": "cpu", "llvm": "cpu", "opencl": "opencl", "cuda": "cuda", "vulkan": "vulkan",
                              "metal": "metal"}  # fmt: skip


def test_only_c_and_opencl_generate_kernels() -> None:
    assert [k.name for k in generating_kinds()] == ["cpu", "opencl"]
    cuda = kind_of_target("cuda")
    assert cuda is not None and not cuda.generates_kernels
    assert kind_of_language("c") is device_kind("cpu")
    assert kind_of_language("opencl") is device_kind("opencl")
    assert kind_of_language("cuda") is None


def test_work_groups_and_default_specs() -> None:
    cpu, opencl = device_kind("cpu"), device_kind("opencl")
    assert cpu is not None and opencl is not None
    assert (cpu.work_groups, opencl.work_groups) == (False, True)
    assert (cpu.default_spec(3), opencl.default_spec(1)) == ("cpu", "opencl:1")
    assert (cpu.source_suffix, opencl.source_suffix) == (".c", ".cl")


@pytest.mark.parametrize("kind", generating_kinds(), ids=lambda k: k.name)
def test_each_generating_kind_names_an_emitter_and_a_runtime_device_that_exist(kind: DeviceKind) -> None:
    assert kind in DEVICE_KINDS
    row = kind
    module, _, name = row.emitter.partition(":")
    assert isinstance(getattr(importlib.import_module(module), name), type)
    module, _, name = row.runtime_device.partition(":")
    assert isinstance(getattr(importlib.import_module(f"xrelay.runtime.{module}"), name), type)
    assert row.language and row.language_name
