"""The compilation config: targets per device type, the default and host scopes (DESIGN.md §2)."""

import re

import pytest

import xrelay
from xrelay.dialects.se_scope import SEScopeAttr
from xrelay.transforms.compilation_config import CompilationConfig, device_of_target


def test_defaults():
    config = CompilationConfig.from_options()
    assert config.targets == {"cpu": "c"}
    assert config.default_scope == SEScopeAttr("cpu", 0, "c")
    assert config.host_scope == SEScopeAttr("cpu", 0, "c", "global")


def test_default_device_is_the_first_targets_device():
    assert CompilationConfig.from_options(("opencl", "c")).default_scope.device == "opencl"
    assert CompilationConfig.from_options(("c", "opencl")).default_scope.device == "cpu"


def test_default_device_option():
    config = CompilationConfig.from_options(("c", "opencl"), default_device="opencl")
    assert config.default_scope == SEScopeAttr("opencl", 0, "opencl")
    assert config.targets == {"cpu": "c", "opencl": "opencl"}


def test_host_target_fills_in_the_cpu_target():
    config = CompilationConfig.from_options(("opencl",), host_target="llvm")
    assert config.targets == {"opencl": "opencl", "cpu": "llvm"}
    assert config.host_scope == SEScopeAttr("cpu", 0, "llvm", "global")
    assert config.default_scope.device == "opencl"


def test_target_options_are_kept():
    config = CompilationConfig.from_options(("c -O3", "opencl"))
    assert config.target_for("cpu") == "c -O3"
    assert device_of_target("c -O3") == "cpu"
    assert config.canonical(SEScopeAttr("cpu")) == SEScopeAttr("cpu", 0, "c -O3", "global")


@pytest.mark.parametrize(
    "kind, device",
    [("c", "cpu"), ("llvm", "cpu"), ("opencl", "opencl"), ("cuda", "cuda"), ("vulkan", "vulkan"), ("metal", "metal")],
)
def test_target_kinds(kind, device):
    assert device_of_target(kind) == device


@pytest.mark.parametrize(
    "options, message",
    [
        (
            dict(targets=("c", "llvm")),
            'two targets for device type cpu: "c" and "llvm"; give one target per device type',
        ),
        (dict(targets=("opencl", "opencl -fast")), "two targets for device type opencl"),
        (dict(targets=("fpga",)), "unknown target kind 'fpga' in target \"fpga\"; expected one of c, llvm, opencl"),
        (dict(targets=()), "targets must name at least one target"),
        (dict(targets=("c",), default_device="opencl"), "default-device opencl has no target; add one to targets"),
        (dict(targets=("c",), default_device="gpu"), "unknown default-device 'gpu'"),
        (
            dict(targets=("c",), host_target="opencl"),
            'host-target must compile for cpu, but "opencl" compiles for opencl',
        ),
        (dict(targets=("c",), host_target="wasm"), "unknown target kind 'wasm'"),
    ],
)
def test_config_errors(options, message):
    with pytest.raises(xrelay.ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")) as info:
        CompilationConfig.from_options(**options)
    assert isinstance(info.value, xrelay.Error)


def test_target_for_a_device_without_target():
    config = CompilationConfig.from_options(("c",))
    with pytest.raises(xrelay.ConfigError, match="no target for device type opencl"):
        config.target_for("opencl")
    with pytest.raises(xrelay.ConfigError, match="no target for device type opencl"):
        config.canonical(SEScopeAttr("opencl"))


def test_check():
    config = CompilationConfig.from_options(("c", "opencl"))
    assert config.check(SEScopeAttr()) is None
    assert config.check(SEScopeAttr("opencl", 1, "opencl")) is None
    assert config.check(SEScopeAttr(target="c")) is None
    assert "device type cuda, which has no target" in config.check(SEScopeAttr("cuda"))
    assert 'names target "c -O3", but the target configured for cpu is "c"' in config.check(
        SEScopeAttr("cpu", target="c -O3")
    )
    assert 'names target "opencl", but the target configured for cpu is "c"' in config.check(
        SEScopeAttr("cpu", target="opencl")
    )
    assert 'names target "vulkan"' in config.check(SEScopeAttr(target="vulkan"))


def test_canonical():
    config = CompilationConfig.from_options(("c", "opencl"), default_device="opencl")
    assert config.canonical(SEScopeAttr()) == SEScopeAttr("opencl", 0, "opencl", "global")
    assert config.canonical(SEScopeAttr("cpu", 2)) == SEScopeAttr("cpu", 2, "c", "global")
    assert config.canonical(SEScopeAttr(memory="local")) == SEScopeAttr("opencl", 0, "opencl", "local")


def test_canonical_takes_the_device_of_a_lone_target():
    config = CompilationConfig.from_options(("c", "opencl"), default_device="opencl")
    assert config.canonical(SEScopeAttr(target="c")) == SEScopeAttr("cpu", 0, "c", "global")
    assert config.canonical(SEScopeAttr(id=1, target="opencl")) == SEScopeAttr("opencl", 1, "opencl", "global")


@pytest.mark.parametrize(
    "target, message",
    [
        (
            "opencl -cl-fast-relaxed-math",
            "unknown option '-cl-fast-relaxed-math' in OpenCL target 'opencl -cl-fast-relaxed-math'; an OpenCL "
            "target takes -vector-width=N (the floats per vector its kernels use: 1, 2, 4, 8 or 16)",
        ),
        ("opencl -vector-width=3", "-vector-width takes 1, 2, 4, 8 or 16 floats"),
        ("c -lm", "unsupported C compiler flag '-lm' in target 'c -lm'"),
    ],
)
def test_target_options_are_checked_when_the_targets_are_configured(target: str, message: str) -> None:
    """Options after `opencl` were ignored silently (issue 33, item 7); each device kind's
    row names what checks its target strings' options."""
    with pytest.raises(xrelay.CompileError, match=re.escape(message)):
        CompilationConfig.from_options(("c", target) if target.startswith("opencl") else (target,))
    CompilationConfig.from_options(("c -O2", "opencl -vector-width=8"))
