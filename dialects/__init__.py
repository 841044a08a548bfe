"""xrelay's dialects, by name, each imported on first use (like xDSL's `get_all_dialects`)."""

from collections.abc import Callable

from xdsl.ir import Dialect


def _relay() -> Dialect:
    from xrelay.dialects.relay import Relay

    return Relay


def _cpu() -> Dialect:
    from xrelay.dialects.cpu import CPU

    return CPU


def get_all_dialects() -> dict[str, Callable[[], Dialect]]:
    return {"relay": _relay, "cpu": _cpu}
