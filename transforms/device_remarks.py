"""
Placement remarks: why a value has its scope, read off the device domains' history.

A `Remark` names a value, its final (canonical) scope and the `Step`s that fixed it. Each
step names the fields it fixed (device, id, target, memory) and what fixed them: a constraint
(an annotation or attribute, where it is written), a Default step (the fallback, and the
steps that had fixed those fields of the fallback), or the canonical form (the compilation
config's target and "global" memory, id 0, for fields nothing else fixed):

    %h: cpu:1 — device from relay.on_device at model.mlir:7:8; id from @main result 0
    (opencl, id = 1) by defaulting, whose id came from relay.on_device at model.mlir:9:8

Steps are made from the `Source` of each field that `DeviceDomains` recorded while it
solved, so they cannot disagree with the plan. `plan-devices{explain=true}` prints a remark
for each value whose scope did not come entirely from its own annotation; `xrelay.explain`
returns them as data.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from xrelay.dialects.se_scope import FIELDS, SEScopeAttr
from xrelay.transforms.device_domains import Source, Sources

How = Literal["constraint", "default", "canonical"]


@dataclass(frozen=True)
class Step:
    """Some fields of a scope, and what fixed them."""

    fields: tuple[str, ...]
    """Field names, in FIELDS order: "device", "id", "target", "memory"."""
    origin: str
    """The op, attribute or fallback, e.g. "relay.on_device", "@main result 0 (opencl, id = 1)"."""
    location: str | None
    how: How
    via: tuple[Step, ...] = ()
    """For a Default from another value's scope: the steps that fixed those fields there."""
    note: str = ""
    """Said after the location, e.g. ", whose result the function returns"."""

    def __str__(self) -> str:
        return self.describe("from")

    def describe(self, verb: str) -> str:
        """`device from relay.on_device at f.mlir:8:3` (with `verb` "from")."""
        fields = _names(self.fields)
        if self.how == "canonical":
            return f"{fields} {verb} the canonical form"
        where = f" at {self.location}" if self.location is not None else ""
        text = f"{fields} {verb} {self.origin}{where}{self.note}"
        if self.how == "default":
            text += " by defaulting"
        if self.via:
            text += ", whose " + "; ".join(step.describe("came from") for step in self.via)
        return text


def _names(fields: tuple[str, ...]) -> str:
    return fields[0] if len(fields) == 1 else ", ".join(fields[:-1]) + " and " + fields[-1]


@dataclass(frozen=True)
class Remark:
    """Why `value` (as the IR names it) is on `scope`: the steps that fixed its fields."""

    value: str
    scope: SEScopeAttr
    steps: tuple[Step, ...]
    location: str
    """Where the value is defined: its op, or its function for a parameter."""
    local: bool = False
    """Whether the value's own annotations (its op's se_scope, its parameter attribute, an
    on_device or copy of it) fix every field the canonical form does not: then the pass
    prints no remark for it."""

    def __str__(self) -> str:
        shown = [str(step) for step in self.steps if _shown(step)]
        return f"{self.value}: {_device_id(self.scope)} — " + "; ".join(shown)


def _shown(step: Step) -> bool:
    """The text leaves out a canonical target and memory: they follow from the device."""
    return step.how != "canonical" or "device" in step.fields or "id" in step.fields


def _device_id(scope: SEScopeAttr) -> str:
    return f"{scope.device or '?'}:{scope.id if scope.id is not None else '?'}"


def steps_of(sources: Sources, canonical: bool = True) -> tuple[Step, ...]:
    """The steps for a class's fields, grouping fields with one source; fields without a
    source are from the canonical form when `canonical` (the final scope), else left out (a
    side of a conflict)."""
    steps: list[Step] = []
    groups: dict[int, list[str]] = {}
    by_source: dict[int, Source] = {}
    for name, source in zip(FIELDS, sources):
        key = id(source) if source is not None else 0
        if source is None and not canonical:
            continue
        if key not in groups:
            groups[key] = []
            if source is not None:
                by_source[key] = source
        groups[key].append(name)
    for key, names in groups.items():
        steps.append(_step(tuple(names), by_source.get(key)))
    return tuple(steps)


def _step(fields: tuple[str, ...], source: Source | None) -> Step:
    if source is None:
        return Step(fields, "the canonical form", None, "canonical")
    origin = source.origin
    if source.fallback is None:
        return Step(fields, origin.what, origin.location, "constraint", note=origin.note)
    via = _via_steps(fields, source.via)
    return Step(fields, origin.what, origin.location, "default", via, note=origin.note)


def _via_steps(fields: tuple[str, ...], via: Source | None) -> tuple[Step, ...]:
    if via is None:
        return ()
    return (_step(fields, via),)


def describe_scope(scope: SEScopeAttr) -> str:
    """A scope's fields as a remark shows a fallback: `opencl, id = 1, target = "opencl"`."""
    parts: list[str] = []
    if scope.device is not None:
        parts.append(scope.device)
    if scope.id is not None:
        parts.append(f"id = {scope.id}")
    if scope.target is not None:
        parts.append(f'target = "{scope.target}"')
    if scope.memory is not None:
        parts.append(f'memory = "{scope.memory}"')
    return ", ".join(parts) or "unconstrained"
