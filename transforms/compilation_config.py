"""
The compilation config: which target each device type compiles for, where unconstrained
primitive ops run (the default scope), and the host scope; and the canonical form of a scope.
Which device type a target kind compiles for is the table's (`xrelay.runtime.device_kinds`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation

from xrelay.diagnostics import ConfigError
from xrelay.dialects.se_scope import DEVICE_TYPES, SEScopeAttr
from xrelay.runtime.device_kinds import (
    HOST_KIND,
    check_target_options,
    device_kind,
    generating_kinds,
    host_kind,
    kind_of_target,
    target_kind,
)
from xrelay.runtime.device_kinds import target_kinds as _target_kinds

# Target kinds (the first word of a target string) and the device type each compiles for.
TARGET_KIND_DEVICES = _target_kinds()
# The target kind each device type with a code generator compiles for by default.
DEVICE_TARGETS = {kind.name: kind.target_kinds[0] for kind in generating_kinds()}

DEFAULT_MEMORY = "global"


def device_of_target(target: str) -> str:
    kind = kind_of_target(target)
    if kind is None:
        raise ConfigError(
            f"unknown target kind '{target_kind(target)}' in target \"{target}\"; expected one of "
            + ", ".join(TARGET_KIND_DEVICES)
        )
    return kind.name


@dataclass(frozen=True)
class CompilationConfig:
    """Targets per device type, the default scope for primitive ops, and the host scope."""

    targets: dict[str, str]
    default_scope: SEScopeAttr
    host_scope: SEScopeAttr

    @staticmethod
    def from_options(
        targets: Sequence[str] = ("c",),
        default_device: str | None = None,
        host_target: str = "c",
    ) -> CompilationConfig:
        by_device = _targets_by_device(targets)
        host_device = device_of_target(host_target)
        if host_device != HOST_KIND:
            raise ConfigError(
                f'host-target must compile for {HOST_KIND}, but "{host_target}" compiles for {host_device}'
            )
        by_device.setdefault(HOST_KIND, host_target)
        device = _default_device(targets, default_device)
        if device not in by_device:
            raise ConfigError(
                f"default-device {device} has no target; add one to targets (configured: {', '.join(targets)})"
            )
        return CompilationConfig(
            targets=by_device,
            default_scope=SEScopeAttr(device, 0, by_device[device]),
            host_scope=SEScopeAttr(HOST_KIND, 0, by_device[HOST_KIND], DEFAULT_MEMORY),
        )

    def target_for(self, device: str) -> str:
        if device not in self.targets:
            raise ConfigError(
                f"no target for device type {device}; configured targets are "
                + ", ".join(f'"{t}" ({d})' for d, t in self.targets.items())
                + f"; add a {device} target to plan-devices' targets option"
            )
        return self.targets[device]

    def check(self, scope: SEScopeAttr) -> str | None:
        """Why `scope` cannot be used with this config, or None when it can."""
        if scope.device is not None and scope.device not in self.targets:
            return (
                f"scope {scope.short_str()} is on device type {scope.device}, which has no target "
                f"(configured: {', '.join(self.targets.values())})"
            )
        if scope.target is None:
            return None
        device = scope.device or _device_or_none(scope.target)
        if device is None or self.targets.get(device) != scope.target:
            configured = self.targets.get(device or "", "none")
            return (
                f'scope {scope.short_str()} names target "{scope.target}", but the target '
                f'configured for {device or "its device"} is "{configured}"'
            )
        return None

    def canonical(self, scope: SEScopeAttr) -> SEScopeAttr:
        """Every field set: the device of the scope's target or else the default device, id 0,
        the configured target and "global" memory when absent."""
        device = scope.device
        if device is None and scope.target is not None:
            device = _device_or_none(scope.target)
        if device is None:
            device = self.default_scope.device
        assert device is not None
        return SEScopeAttr(
            device,
            scope.id if scope.id is not None else 0,
            scope.target if scope.target is not None else self.target_for(device),
            scope.memory if scope.memory is not None else DEFAULT_MEMORY,
        )


def _targets_by_device(targets: Sequence[str]) -> dict[str, str]:
    if not targets:
        raise ConfigError("targets must name at least one target, e.g. targets=c,opencl")
    by_device: dict[str, str] = {}
    for target in targets:
        device = device_of_target(target)
        if device in by_device:
            raise ConfigError(
                f'two targets for device type {device}: "{by_device[device]}" and "{target}"; '
                "give one target per device type"
            )
        check_target_options(target)
        by_device[device] = target
    return by_device


def _default_device(targets: Sequence[str], default_device: str | None) -> str:
    if default_device is None:
        return device_of_target(targets[0])
    if default_device in DEVICE_TYPES:
        return default_device
    kind = kind_of_target(default_device)
    if kind is not None:
        return kind.name
    raise ConfigError(
        f"unknown default-device '{default_device}'; expected a device type such as " + ", ".join(DEVICE_TYPES)
    )


def _device_or_none(target: str) -> str | None:
    kind = kind_of_target(target)
    return kind.name if kind is not None else None


def targets_named_in(module: ModuleOp) -> tuple[str, ...]:
    """The host's target ("c"), and the target of every device kind with a code generator
    that the module's scopes name (opencl's "opencl")."""
    names = {a.device for op in module.walk() for a in scopes_of(op) if a.device is not None}
    kinds = [kind for name in names if (kind := device_kind(name)) is not None and kind.generates_kernels]
    host = host_kind().target_kinds[0]
    return (host, *sorted(k.target_kinds[0] for k in kinds if k.target_kinds[0] != host))


def scopes_of(op: Operation) -> list[SEScopeAttr]:
    values = [*op.properties.values(), *op.attributes.values()]
    if isinstance(op, func.FuncOp):
        for dicts in (op.arg_attrs, op.res_attrs):
            values += [v for d in (dicts.data if dicts else ()) for v in d.data.values()]
    return [v for v in values if isinstance(v, SEScopeAttr)]
