"""
c_steps: a run of consecutive C kernel calls made by one ctypes call.

The executor calls each node's kernel through ctypes with its buffer addresses bound once
(`cpu.CCall`), about 0.3 us a call. A graph of hundreds of tiny kernels (an LSTM or GRU
unrolled over 100 steps: 400 to 600 kernels of a few hundred floats each) spends more in those
calls than in the kernels. `StepRun` holds such a run's function pointers and addresses in C
arrays and calls `xrelay_run_steps`, a loop in C over them: one ctypes call for the run.

The loop casts each function pointer to the type of a function of its number of pointer
arguments (every C kernel takes only its buffers' addresses: `targets/c.py`): a case for each
count up to MAX_ARGS, and one for each wider kernel's count (up to MAX_WIDE_ARGS; a wider one
is called on its own). The unrolled recurrences' outputs are such kernels: a concatenation
of every step's state (lstm.onnx: two of 103 buffers, gru.onnx: one of 205), where ctypes
alone took 3.5 us a call of 103 addresses. The library is built once per machine, compiler
and set of wide counts, in the cache of `c_library`.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Sequence
from functools import cache
from typing import Any, cast

from xrelay.runtime.c_library import C_COMPILER, atomic_path, c_compiler_version, cache_dir, content_key, machine
from xrelay.runtime.cpu import CCall

MAX_ARGS = 24  # every library has a case for each count of arguments up to this
MAX_WIDE_ARGS = 1024  # a kernel of more arguments than this is not put in a run
RUN_STEPS = "xrelay_run_steps"


def source(wide: Sequence[int] = ()) -> str:
    """The C of `xrelay_run_steps(n, functions, counts, args)`: calls function i with its
    counts[i] arguments, taken in order from `args`; counts up to MAX_ARGS and those in `wide`."""
    cases: list[str] = []
    for count in sorted({*range(1, MAX_ARGS + 1), *wide}):
        params = ", ".join(["void *"] * count)
        values = ", ".join(f"a[{i}]" for i in range(count))
        cases.append(f"    case {count}: ((void (*)({params}))f[i])({values}); break;")
    body = "\n".join(cases)
    return (
        f"void {RUN_STEPS}(long n, void *const *f, const long *counts, void *const *a) {{\n"
        "  for (long i = 0; i < n; a += counts[i], i++) {\n"
        "    switch (counts[i]) {\n"
        f"{body}\n"
        "    }\n"
        "  }\n"
        "}\n"
    )


@cache
def run_steps_function(wide: tuple[int, ...] = ()) -> Any:
    """`xrelay_run_steps` (with cases for the counts in `wide` too) from its library, built
    into the cache on first use."""
    import subprocess

    text = source(wide)
    library = cache_dir() / f"c-steps-{content_key(text, c_compiler_version(), machine())}.so"
    if not library.exists():
        c_file = library.with_suffix(".c")
        c_file.write_text(text)
        with atomic_path(library) as tmp:
            subprocess.run([C_COMPILER, "-O2", "-fPIC", "-shared", "-o", str(tmp), str(c_file)], check=True)
    function = ctypes.CDLL(str(library))[RUN_STEPS]
    function.argtypes = [ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    function.restype = None
    return function


def runnable(call: object) -> bool:
    """Whether `call` can be one of a run's calls: a C kernel's, of at most MAX_WIDE_ARGS buffers."""
    return isinstance(call, CCall) and len(call.args) <= MAX_WIDE_ARGS


class StepRun:
    """`calls` (C kernel calls, `runnable`) made in order by one call of `xrelay_run_steps`."""

    def __init__(self, calls: Sequence[CCall]):
        n = len(calls)
        addresses = [address for call in calls for address in call.args]
        self.functions = (ctypes.c_void_p * n)(
            *(ctypes.cast(cast(Any, call.func), ctypes.c_void_p).value for call in calls)
        )
        self.counts = (ctypes.c_long * n)(*(len(call.args) for call in calls))
        self.args = (ctypes.c_void_p * len(addresses))(*addresses)
        self.n = n
        wide = tuple(sorted({len(call.args) for call in calls if len(call.args) > MAX_ARGS}))
        self.function: Callable[..., None] = run_steps_function(wide)

    def __call__(self) -> None:
        self.function(self.n, self.functions, self.counts, self.args)


def batched(steps: Sequence[Callable[[], None]]) -> list[Callable[[], None]]:
    """`steps` with each run of two or more consecutive `runnable` calls made one `StepRun`."""
    out: list[Callable[[], None]] = []
    pending: list[CCall] = []

    def flush() -> None:
        if len(pending) > 1:
            out.append(StepRun(list(pending)))
        else:
            out.extend(pending)
        pending.clear()

    for step in steps:
        if runnable(step):
            assert isinstance(step, CCall)
            pending.append(step)
        else:
            flush()
            out.append(step)
    flush()
    return out
