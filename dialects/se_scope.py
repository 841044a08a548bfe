"""
The SEScope attribute: where a value is stored and where the op producing it executes.

    #relay.se_scope<device = opencl, id = 1, target = "opencl", memory = "global">

Four fields, each optional (an absent field is unconstrained), printed in exactly this order.
`Join` and `Default` are the lattice operations device planning solves with; the canonical
form (every field set) comes from the compilation config (`transforms/compilation_config.py`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from xdsl.dialects.builtin import IntAttr, NoneAttr, StringAttr
from xdsl.ir import Attribute, ParametrizedAttribute
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

# DLPack device type names, in DLPack's order.
DEVICE_TYPES = ("cpu", "cuda", "opencl", "vulkan", "metal", "rocm", "hexagon", "webgpu", "ext_dev")

FIELDS = ("device", "id", "target", "memory")


_T = TypeVar("_T")


def _either(mine: _T | None, theirs: _T | None) -> _T | None:
    return mine if mine is not None else theirs


def _opt_str(value: str | None) -> StringAttr | NoneAttr:
    return NoneAttr() if value is None else StringAttr(value)


def _opt_int(value: int | None) -> IntAttr | NoneAttr:
    return NoneAttr() if value is None else IntAttr(value)


# The key under which a function argument, result or kernel carries its scope (the attribute's
# own name).
SCOPE_ATTR = "relay.se_scope"


@irdl_attr_definition
class SEScopeAttr(ParametrizedAttribute):
    """A (possibly partial) storage/execution scope: device type, virtual id, target, memory."""

    name = SCOPE_ATTR

    device_attr: StringAttr | NoneAttr
    id_attr: IntAttr | NoneAttr
    target_attr: StringAttr | NoneAttr
    memory_attr: StringAttr | NoneAttr

    def __init__(
        self,
        device: str | None = None,
        id: int | None = None,
        target: str | None = None,
        memory: str | None = None,
    ):
        super().__init__(_opt_str(device), _opt_int(id), _opt_str(target), _opt_str(memory))

    # --- field access -------------------------------------------------------------------

    @property
    def device(self) -> str | None:
        return None if isinstance(self.device_attr, NoneAttr) else self.device_attr.data

    @property
    def id(self) -> int | None:
        return None if isinstance(self.id_attr, NoneAttr) else self.id_attr.data

    @property
    def target(self) -> str | None:
        return None if isinstance(self.target_attr, NoneAttr) else self.target_attr.data

    @property
    def memory(self) -> str | None:
        return None if isinstance(self.memory_attr, NoneAttr) else self.memory_attr.data

    def fields(self) -> tuple[str | None, int | None, str | None, str | None]:
        return (self.device, self.id, self.target, self.memory)

    @property
    def is_unconstrained(self) -> bool:
        return all(f is None for f in self.fields())

    @property
    def is_fully_constrained(self) -> bool:
        return all(f is not None for f in self.fields())

    def verify(self) -> None:
        if self.device is not None and self.device not in DEVICE_TYPES:
            raise VerifyException(
                f"unknown device type '{self.device}' in se_scope; expected one of " + ", ".join(DEVICE_TYPES)
            )
        if self.id is not None and self.id < 0:
            raise VerifyException(f"se_scope id must be >= 0, but found {self.id}")

    # --- lattice operations ---------------------------------------------------------------

    def join(self, other: SEScopeAttr) -> SEScopeAttr | None:
        """Field by field the constrained value; None when both constrain a field differently."""
        for mine, theirs in zip(self.fields(), other.fields()):
            if mine is not None and theirs is not None and mine != theirs:
                return None
        return SEScopeAttr(
            _either(self.device, other.device),
            _either(self.id, other.id),
            _either(self.target, other.target),
            _either(self.memory, other.memory),
        )

    def default(self, fallback: SEScopeAttr) -> SEScopeAttr:
        """Our constrained fields; unconstrained ones from `fallback` (its target only when
        the device types agree)."""
        device = self.device if self.device is not None else fallback.device
        id = self.id if self.id is not None else fallback.id
        target = self.target
        if target is None and device == fallback.device:
            target = fallback.target
        memory = self.memory if self.memory is not None else fallback.memory
        return SEScopeAttr(device, id, target, memory)

    def short_str(self) -> str:
        """A compact human form for messages: `opencl:1`, `cpu:0 "c" global`, `<unconstrained>`."""
        if self.is_unconstrained:
            return "<unconstrained>"
        text = f"{self.device or '?'}:{self.id if self.id is not None else '?'}"
        if self.target is not None:
            text += f' "{self.target}"'
        if self.memory is not None:
            text += f" {self.memory}"
        return text

    # --- syntax ---------------------------------------------------------------------------

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        values: dict[str, StringAttr | IntAttr] = {}

        def parse_entry() -> None:
            start = parser.pos
            key = parser.parse_identifier(" (an se_scope key: device, id, target or memory)")
            if key not in FIELDS:
                parser.raise_error(
                    f"unknown se_scope key '{key}'; expected device, id, target or memory",
                    start,
                    parser.pos,
                )
            if key in values:
                parser.raise_error(f"duplicate se_scope key '{key}'", start, parser.pos)
            parser.parse_punctuation("=")
            values[key] = _parse_field_value(parser, key)

        parser.parse_punctuation("<")
        if parser.parse_optional_punctuation(">") is None:
            parser.parse_comma_separated_list(parser.Delimiter.NONE, parse_entry)
            parser.parse_punctuation(">")
        return tuple(values.get(key, NoneAttr()) for key in FIELDS)

    def print_parameters(self, printer: Printer) -> None:
        entries = [(key, value) for key, value in zip(FIELDS, self.fields()) if value is not None]
        printer.print_string("<")
        for i, (key, value) in enumerate(entries):
            printer.print_string(f"{', ' if i else ''}{key} = ")
            if isinstance(value, str) and key in ("target", "memory"):
                printer.print_string_literal(value)  # escaped, so any string round-trips
            else:
                printer.print_string(str(value))
        printer.print_string(">")


def _parse_field_value(parser: AttrParser, key: str) -> StringAttr | IntAttr:
    start = parser.pos
    if key == "device":
        device = parser.parse_identifier(" (a device type such as cpu or opencl)")
        if device not in DEVICE_TYPES:
            parser.raise_error(
                f"unknown device type '{device}'; expected one of " + ", ".join(DEVICE_TYPES),
                start,
                parser.pos,
            )
        return StringAttr(device)
    if key == "id":
        value = parser.parse_integer(allow_boolean=False, allow_negative=True)
        if value < 0:
            parser.raise_error(f"se_scope id must be >= 0, but found {value}", start, parser.pos)
        return IntAttr(value)
    return StringAttr(parser.parse_str_literal(f" (the se_scope {key}, a string)"))
