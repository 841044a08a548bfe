"""
runtime/c_steps.py: consecutive C kernels of a run made by one ctypes call; the results equal
the interpreter's, a kernel of more than MAX_ARGS buffers is in the run (up to MAX_WIDE_ARGS,
past which it is called on its own), and the
host-C-and-OpenCL graph (whose C calls release the queues first) is left as it was.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

import numpy as np
import pytest

import xrelay
from xrelay.runtime import c_steps
from xrelay.runtime.cpu import CCall


def chain(width: int, steps: int, wide: int) -> tuple[xrelay.Builder, list[object]]:
    """`steps` dependent kernels (a dense and a tanh each: separate kernels, the tanh reading
    a slice), then a concatenation of `wide` slices of the last (a kernel of wide + 1 buffers)."""
    rng = np.random.default_rng(0)
    b = xrelay.Builder()
    h = b.input("x", (1, width))
    for _ in range(steps):
        d = b.nn.dense(h, rng.standard_normal((2 * width, width)).astype(np.float32) / width)
        h = b.tanh(b.add(b.strided_slice(d, [0, 0], [1, width]), b.strided_slice(d, [0, width], [1, 2 * width])))
    parts = [b.multiply(b.strided_slice(h, [0, i % width], [1, i % width + 1]), float(i)) for i in range(wide)]
    return b, [h, b.concatenate(parts, 1)]


@pytest.mark.parametrize("max_wide", [c_steps.MAX_WIDE_ARGS, c_steps.MAX_ARGS + 3])
def test_a_chain_of_kernels_is_one_call_and_equal_to_the_interpreter(
    max_wide: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The concatenation's kernel (more than MAX_ARGS + 3 buffers) joins the run through a case of its
    own count; with MAX_WIDE_ARGS below that, it is called on its own."""
    monkeypatch.setattr(c_steps, "MAX_WIDE_ARGS", max_wide)
    b, results = chain(8, 6, c_steps.MAX_ARGS + 3)
    module = b.finish(*results)  # pyright: ignore[reportArgumentType]
    x = np.random.default_rng(1).standard_normal((1, 8)).astype(np.float32)
    exe = xrelay.build(module, targets=("c",))
    with exe.executor.workspace() as workspace:
        workspace_runs = workspace.runs
    steps = [run for run in workspace_runs if isinstance(run, c_steps.StepRun)]
    alone = [run for run in workspace_runs if isinstance(run, CCall)]
    assert steps
    if max_wide > c_steps.MAX_ARGS + 3:
        assert not alone and max(max(run.counts) for run in steps) > c_steps.MAX_ARGS + 3
    else:
        assert alone and all(len(run.args) > max_wide for run in alone), "only the too-wide kernel on its own"
    want = xrelay.interpret(module, {"x": x})
    got = exe.run({"x": x})
    for g, w in zip(got, want):  # pyright: ignore[reportUnknownArgumentType, reportUnknownVariableType]
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)  # pyright: ignore[reportUnknownArgumentType]


def test_wide_counts_get_their_own_cases() -> None:
    """A run's library has a case for each count up to MAX_ARGS and for each wide count given."""
    text = c_steps.source((c_steps.MAX_ARGS + 9, 300))
    cases = [line for line in text.splitlines() if line.strip().startswith("case ")]
    assert [int(line.split()[1].rstrip(":")) for line in cases] == [
        *range(1, c_steps.MAX_ARGS + 1),
        c_steps.MAX_ARGS + 9,
        300,
    ]


def test_runs_keep_order_and_the_calls_outside_them() -> None:
    """`batched` merges only runs of two or more C calls, in order, around other steps."""
    seen: list[str] = []
    other_a, other_b = (lambda: seen.append("a")), (lambda: seen.append("b"))
    out = np.zeros(4, np.float32)
    calls = [CCall(_fill(), out.ctypes.data) for _ in range(3)]
    runs = c_steps.batched([other_a, *calls, other_b, calls[0]])
    assert runs[0] is other_a and isinstance(runs[1], c_steps.StepRun) and runs[2] is other_b and runs[3] is calls[0]
    for run in runs:
        run()
    assert seen == ["a", "b"] and out.tolist() == [4.0, 4.0, 4.0, 4.0]  # four increments of one


def _fill() -> Callable[..., None]:
    """A C function adding 1 to each of 4 floats at its argument (built with the steps' cache)."""
    import ctypes
    import subprocess

    from xrelay.runtime.c_library import cache_dir, content_key

    text = "void xr_add_one(float *p) { for (int i = 0; i < 4; i++) p[i] += 1.0f; }\n"
    library = cache_dir() / f"test-add-one-{content_key(text)}.so"
    if not library.exists():
        source = library.with_suffix(".c")
        source.write_text(text)
        subprocess.run(["gcc", "-O2", "-fPIC", "-shared", "-o", str(library), str(source)], check=True)
    function = ctypes.CDLL(str(library)).xr_add_one
    function.argtypes = [ctypes.c_void_p]
    function.restype = None
    return cast(Callable[..., None], function)
