"""C kernels on several threads: `xrelay.build(num_threads=N)`, XRELAY_NUM_THREADS, and the
count kept by save and load."""

from __future__ import annotations

import ctypes
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import xrelay
from xrelay.errors import Error
from xrelay.runtime import cpu
from xrelay.targets.c import JOIN, CEmitter

N = 1 << 22

# Big enough that every kernel gets an `omp parallel` region: an elementwise chain with a tanh
# and NaN-aware max, a broadcast, and a softmax along rows (reductions inside each row).
PROGRAM = f"""
func.func @main(%x: tensor<64x{N // 64}xf32>, %b: tensor<{N // 64}xf32>) -> tensor<64x{N // 64}xf32> {{
  %0 = relay.add %x, %b : (tensor<64x{N // 64}xf32>, tensor<{N // 64}xf32>) -> tensor<64x{N // 64}xf32>
  %1 = relay.tanh %0 : tensor<64x{N // 64}xf32>
  %2 = relay.exp %1 : tensor<64x{N // 64}xf32>
  %3 = relay.nn.relu %2 : tensor<64x{N // 64}xf32>
  %4 = relay.nn.softmax %3 : (tensor<64x{N // 64}xf32>) -> tensor<64x{N // 64}xf32>
  func.return %4 : tensor<64x{N // 64}xf32>
}}
"""


def inputs() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, N // 64)).astype(np.float32)
    x[0, 0] = x[63, 5] = np.nan  # a NaN in the first and the last row
    return {"x": x, "b": rng.standard_normal(N // 64).astype(np.float32)}


def test_one_and_two_threads_agree_with_the_interpreter() -> None:
    expected = xrelay.interpret(xrelay.parse(PROGRAM), inputs())
    one = xrelay.build(PROGRAM, num_threads=1).run(inputs())
    two = xrelay.build(PROGRAM, num_threads=2)
    assert all("omp for schedule(dynamic)" in k.source for k in two.kernels)
    out = two.run(inputs())
    np.testing.assert_array_equal(out, one)  # each row is one thread's: no reassociation
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-7, equal_nan=True)
    assert np.isnan(out[0]).all() and np.isnan(out[63]).all() and not np.isnan(out[1:63]).any()


def library_threads(path: Path) -> int:
    function = ctypes.CDLL(str(path)).xrelay_num_threads
    function.restype = ctypes.c_int
    return int(function())


def test_num_threads_is_recorded_and_kept_by_save_and_load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    exe = xrelay.build(PROGRAM, num_threads=2)
    assert exe.graph["devices"][0]["num_threads"] == 2
    exe.save(tmp_path / "model.xrelay")
    assert library_threads(tmp_path / "model.xrelay" / "kernels" / "device0.so") == 2
    loaded = xrelay.load(tmp_path / "model.xrelay")
    assert loaded.graph["devices"][0]["num_threads"] == 2
    np.testing.assert_array_equal(loaded.run(inputs()), exe.run(inputs()))
    # a library rebuilt from the saved sources (another machine) is built with the saved count
    counts: list[Any] = []
    build = cpu.build_c

    def spy(sources: Any, flags: Any = (), num_threads: int | None = None) -> Any:
        counts.append(num_threads)
        return build(sources, flags, num_threads)

    monkeypatch.setattr(cpu, "build_c", spy)
    monkeypatch.setenv("XRELAY_NUM_THREADS", "1")
    rebuilt = xrelay.runtime.Executable(loaded.graph, loaded.kernels, loaded.params)
    assert counts == [2]
    library = rebuilt.loaded[0].library
    assert library is not None
    (tmp_path / "rebuilt.so").write_bytes(library)
    assert library_threads(tmp_path / "rebuilt.so") == 2


def test_environment_sets_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XRELAY_NUM_THREADS", "3")
    assert xrelay.build(PROGRAM).graph["devices"][0]["num_threads"] == 3
    assert xrelay.build(PROGRAM, num_threads=1).graph["devices"][0]["num_threads"] == 1
    monkeypatch.delenv("XRELAY_NUM_THREADS")
    assert xrelay.build(PROGRAM).graph["devices"][0]["num_threads"] >= 1


@pytest.mark.parametrize("value", ["0", "two", "-1"])
def test_a_bad_count_is_an_error(value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XRELAY_NUM_THREADS", value)
    with pytest.raises(Error, match="XRELAY_NUM_THREADS must be a positive integer"):
        xrelay.build(PROGRAM)
    monkeypatch.delenv("XRELAY_NUM_THREADS")
    with pytest.raises(Error, match="num_threads must be a positive integer"):
        xrelay.build(PROGRAM, num_threads=int(value) if value != "two" else value)  # type: ignore[arg-type]


# xr_join on its own: 2 threads, thread 1 arriving after `delay_us`; the caller's thread
# prints the count it saw on return.
JOIN_PROBE = r"""
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
int main(int argc, char **argv) {
  int delay_us = atoi(argv[1]), joined = 0;
  #pragma omp parallel num_threads(2)
  {
    if (omp_get_thread_num() == 1) nanosleep(&(struct timespec){0, delay_us * 1000L}, NULL);
    JOIN(&joined);
    if (omp_get_thread_num() == 0) printf("%d\n", __atomic_load_n(&joined, __ATOMIC_ACQUIRE));
  }
  return 0;
}
"""


def join_probe(directory: Path, spin_seconds: float | None = None) -> Path:
    """The probe built with the C kernels' prelude (and its spin bound, or `spin_seconds`)."""
    source = directory / "probe.c"
    source.write_text(CEmitter.prelude_for(f"{JOIN}(") + JOIN_PROBE.replace("JOIN", JOIN))
    binary = directory / f"probe-{spin_seconds}"
    bound = [] if spin_seconds is None else [f"-DXRELAY_JOIN_SPIN_SECONDS={spin_seconds}"]
    subprocess.run(["gcc", "-O2", "-fopenmp", *bound, str(source), "-o", str(binary)], check=True)
    return binary


def joined_seen_by_caller(probe: Path, delay_us: int) -> int:
    return int(subprocess.run([str(probe), str(delay_us)], capture_output=True, text=True, check=True).stdout)


def test_join_waits_for_every_thread(tmp_path: Path) -> None:
    """The caller's thread returns from xr_join once every thread has counted itself in (here
    with a bound of 10 s, so that a loaded machine cannot make the other thread miss it),
    and so reaches the region's closing barrier last."""
    probe = join_probe(tmp_path, spin_seconds=10.0)
    assert joined_seen_by_caller(probe, delay_us=0) == 2
    assert joined_seen_by_caller(probe, delay_us=50_000) == 2


def test_join_spins_for_a_bounded_time(tmp_path: Path) -> None:
    """With the kernels' bound (JOIN_SPIN_SECONDS), a thread 300 ms late (descheduled, say)
    is not waited for: the caller's thread stops spinning and goes on to the barrier,
    having seen only itself."""
    assert joined_seen_by_caller(join_probe(tmp_path), delay_us=300_000) == 1
