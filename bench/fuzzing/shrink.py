"""
Shrinking a failing input to a minimal reproducer, while the failure stays the same.

    small = shrink(text, fails, budget=400, valid_program=True)

`fails(text)` runs a candidate and says whether it fails the same way (same kind and
signature). A candidate that fails is kept and shrinking restarts from it; each call of
`fails` counts against `budget`.

For a valid program (a mismatch, a traceback from the compiler) the IR is shrunk first, on
the parsed module: @main returns an earlier value instead of its result, an op is bypassed
(its uses read an operand of the same type), an op's result becomes a new parameter of @main
(cutting off what computed it); then ops without uses, uncalled functions and unused
parameters of @main go. Then, for every input, lines are deleted (delta debugging, in
chunks and then one at a time), and then attribute entries and single tokens.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from fuzzing.mutants import ATTR_ENTRY, tokens


class Budget:
    def __init__(self, calls: int):
        self.calls = calls

    def spend(self) -> bool:
        self.calls -= 1
        return self.calls >= 0


def shrink(text: str, fails: Callable[[str], bool], budget: int = 400, valid_program: bool = False) -> str:
    left = Budget(budget)
    best = text
    if valid_program:
        best = greedy(best, ir_candidates, fails, left)
    best = shrink_lines(best, fails, left)
    best = greedy(best, entry_candidates, fails, left)
    best = greedy(best, token_candidates, fails, left)
    if valid_program:
        best = greedy(best, ir_candidates, fails, left)
    return best


def greedy(text: str, candidates: Callable[[str], Iterator[str]], fails: Callable[[str], bool], left: Budget) -> str:
    """Takes the first candidate that fails, and starts again from it, until none does."""
    best = text
    progress = True
    while progress:
        progress = False
        for candidate in candidates(best):
            if candidate == best or len(candidate) >= len(best) + 40:
                continue
            if not left.spend():
                return best
            if fails(candidate):
                best, progress = candidate, True
                break
    return best


# --- lines ----------------------------------------------------------------------------------


def shrink_lines(text: str, fails: Callable[[str], bool], left: Budget) -> str:
    """Delta debugging over lines: remove chunks, halving their size when none can go."""
    lines = text.split("\n")
    chunks = 2
    while lines:
        size = max(1, -(-len(lines) // chunks))
        removed = False
        for start in range(0, len(lines), size):
            candidate = lines[:start] + lines[start + size :]
            if not left.spend():
                return "\n".join(lines)
            if fails("\n".join(candidate)):
                lines, removed = candidate, True
                chunks = max(chunks - 1, 2)
                break
        if not removed:
            if size == 1:
                break
            chunks = min(chunks * 2, len(lines))
    return "\n".join(lines)


def entry_candidates(text: str) -> Iterator[str]:
    """Each `key = value` attribute entry removed, one at a time."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        for match in reversed(list(ATTR_ENTRY.finditer(line))):
            before, after = line[: match.start()], line[match.end() :]
            if after.startswith(", "):
                after = after[2:]
            elif before.endswith(", "):
                before = before[:-2]
            yield "\n".join(lines[:i] + [before + after] + lines[i + 1 :])


def token_candidates(text: str) -> Iterator[str]:
    """Each token removed, one at a time (lines of a mutant, where syntax may be broken)."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        for match in reversed(tokens(line)):
            yield "\n".join(lines[:i] + [line[: match.start()] + line[match.end() :]] + lines[i + 1 :])


# --- the IR of a valid program ----------------------------------------------------------------


def ir_candidates(text: str) -> Iterator[str]:
    from xdsl.dialects import func

    import xrelay

    try:
        module = xrelay.parse(text)
    except Exception:
        return
    functions = [op for op in module.ops if isinstance(op, func.FuncOp)]
    ops = [
        (fi, oi)
        for fi, fn in enumerate(functions)
        for oi, op in enumerate(fn.body.block.ops)
        if not isinstance(op, func.ReturnOp)
    ]
    yield from edited(module, cleanup_only)
    for fi, oi in ops:
        if functions[fi].sym_name.data == "main":
            yield from edited(module, lambda m, fi=fi, oi=oi: return_value(m, fi, oi))
    for fi, oi in reversed(ops):
        for k in range(4):
            yield from edited(module, lambda m, fi=fi, oi=oi, k=k: bypass(m, fi, oi, k))
    for fi, oi in reversed(ops):
        if functions[fi].sym_name.data == "main":
            yield from edited(module, lambda m, fi=fi, oi=oi: cut(m, fi, oi))


def edited(module, edit) -> Iterator[str]:
    from fuzzing.checks import print_module

    clone = module.clone()
    try:
        if edit(clone) is False:
            return
        clean(clone)
        yield print_module(clone)
    except Exception:
        return


def _fn_op(module, fi: int, oi: int):
    from xdsl.dialects import func

    fn = [op for op in module.ops if isinstance(op, func.FuncOp)][fi]
    return fn, list(fn.body.block.ops)[oi]


def cleanup_only(module) -> None:
    return None


def return_value(module, fi: int, oi: int) -> bool:
    """@main returns the op's first result."""
    fn, op = _fn_op(module, fi, oi)
    ret = fn.body.block.last_op
    if not op.results or ret is None:
        return False
    ret.operands = [op.results[0]]
    fn.res_attrs = None
    fn.update_function_type()
    return True


def bypass(module, fi: int, oi: int, k: int) -> bool:
    """The op's uses read its operand `k` instead (same type), and the op goes."""
    fn, op = _fn_op(module, fi, oi)
    if k >= len(op.operands) or len(op.results) != 1 or op.operands[k].type != op.results[0].type:
        return False
    op.results[0].replace_all_uses_with(op.operands[k])
    op.detach()
    op.erase()
    return True


def cut(module, fi: int, oi: int) -> bool:
    """The op's result becomes a new parameter of @main."""
    from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr

    fn, op = _fn_op(module, fi, oi)
    if len(op.results) != 1 or op.name == "relay.constant":
        return False
    block = fn.body.block
    arg = block.insert_arg(op.results[0].type, len(block.args))
    arg.name_hint = f"cut{len(block.args)}"
    op.results[0].replace_all_uses_with(arg)
    op.detach()
    op.erase()
    if fn.arg_attrs is not None:
        fn.arg_attrs = ArrayAttr([*fn.arg_attrs.data, DictionaryAttr({})])
    fn.update_function_type()
    return True


def clean(module) -> None:
    """Drops ops without uses, functions nobody calls, and unused parameters of @main."""
    from xdsl.dialects import func
    from xdsl.dialects.builtin import ArrayAttr

    changed = True
    while changed:
        changed = False
        for fn in [op for op in module.ops if isinstance(op, func.FuncOp)]:
            for op in reversed(list(fn.body.block.ops)):
                if not isinstance(op, func.ReturnOp) and op.results and all(not r.uses for r in op.results):
                    op.detach()
                    op.erase()
                    changed = True
        called = {op.callee.string_value() for op in module.walk() if isinstance(op, func.CallOp)}
        for fn in [op for op in module.ops if isinstance(op, func.FuncOp)]:
            if fn.sym_name.data != "main" and fn.sym_name.data not in called:
                fn.detach()
                fn.erase()
                changed = True
    main = next((op for op in module.ops if isinstance(op, func.FuncOp) and op.sym_name.data == "main"), None)
    if main is None:
        return
    block = main.body.block
    attrs = list(main.arg_attrs.data) if main.arg_attrs is not None else None
    for index in reversed(range(len(block.args))):
        if not block.args[index].uses:
            block.erase_arg(block.args[index])
            if attrs is not None:
                del attrs[index]
    if attrs is not None:
        main.arg_attrs = ArrayAttr(attrs)
    main.update_function_type()
