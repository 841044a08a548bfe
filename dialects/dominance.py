"""
SSA dominance in straight-line code: every value is defined before it is used.

xDSL 0.74 verifies each op on its own, and its `xdsl.irdl.dominance.DominanceInfo` relates
blocks, not values, so `verify()` accepts a use before its definition, even a cycle
(`%0 = relay.add %a, %1` ... `%1 = relay.exp %0`), and passes that walk the dataflow graph
then loop or fail. `verify_dominance` is the missing check; `xrelay.parse`, opt-tool (wherever
it verifies) and plan-devices run it after `verify()`.

The rule, for single-block regions (every region of relay programs, fused groups and lowered
loops): an operand is a block argument of an enclosing block, or the result of an op before
its user in the same block, or before the user's ancestor in an enclosing block. Regions of
several blocks (control flow between blocks) are not checked. The first offending use in
program order is reported, so a cycle is reported at its first use.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NoReturn
from weakref import WeakKeyDictionary

from xdsl.dialects.builtin import FileLineColLoc
from xdsl.ir import Block, BlockArgument, Operation, SSAValue
from xdsl.utils.exceptions import VerifyException

from xrelay.diagnostics import location_of

SOURCE_NAMES: WeakKeyDictionary[SSAValue, str] = WeakKeyDictionary()
"""The textual name (`%1`) of values used before their definition in parsed text, kept by
the parser for messages: xDSL keeps no name hint for numeric names."""


def verify_dominance(root: Operation, error: type[Exception] = VerifyException) -> None:
    """Raises `error` (through `emit_error`, so its notes show the op) at the first use, in
    program order, of a value not defined before it, naming the value and its definition."""
    _check_regions(root, set(), error)


def _check_regions(op: Operation, visible: set[SSAValue], error: type[Exception]) -> None:
    for region in op.regions:
        if len(region.blocks) != 1:
            continue
        block = region.blocks.first
        assert block is not None
        added: list[SSAValue] = list(block.args)
        visible.update(added)
        for inner in block.ops:
            for index, operand in enumerate(inner.operands):
                if operand not in visible:
                    _report(inner, index, operand, error)
            if inner.regions:
                _check_regions(inner, visible, error)
            visible.update(inner.results)
            added.extend(inner.results)
        visible.difference_update(added)


def _report(op: Operation, index: int, value: SSAValue, error: type[Exception]) -> NoReturn:
    what = f"operand {_name(value, index)} of '{op.name}'"
    owner = value.owner
    if isinstance(owner, Block):
        problem = f"{what} is an argument of a block that does not enclose its use"
    elif owner is op:
        problem = f"{what} is its own result"
    elif any(block is owner.parent_block() for block in _enclosing_blocks(op)):
        problem = f"{what} is used before its definition {_where(owner)}"
    else:
        problem = f"{what} is defined {_where(owner)}, in a region that does not enclose its use"
    message = f"{location_of(op)}: {problem}" if _known(op) else problem
    op.emit_error(message, error(message))


def _name(value: SSAValue, index: int) -> str:
    if value.name_hint:
        return f"%{value.name_hint}"
    if value in SOURCE_NAMES:
        return SOURCE_NAMES[value]
    if isinstance(value, BlockArgument):
        return f"#{index} (block argument #{value.index})"
    return f"#{index}"


def _enclosing_blocks(op: Operation) -> Iterable[Block]:
    block = op.parent_block()
    while block is not None:
        yield block
        parent = block.parent_op()
        block = parent.parent_block() if parent is not None else None


def _where(op: Operation) -> str:
    return f"at {location_of(op)} ('{op.name}')" if _known(op) else f"by '{op.name}'"


def _known(op: Operation) -> bool:
    return isinstance(op.location, FileLineColLoc)
