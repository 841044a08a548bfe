"""Each distinct kernel built once (`targets/kernels.distinct_kernels`) and the build cache
(`xrelay.build_cache`): a second build of the same program and params skips the passes and
the emitters, any change to them misses, and a damaged entry is rebuilt."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import xrelay
from xrelay import build_cache as build_cache_module
from xrelay import driver
from xrelay.errors import CompileError
from xrelay.runtime.executor import immutable

# Two equal exp-add groups on different inputs (equal kernels but for their names), and a third
# of another shape (another kernel).
TWINS = """
func.func @main(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>, %z: tensor<8x4xf32>, %w: tensor<8xf32>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8x4xf32>) {
  %a = relay.exp %x : tensor<4x8xf32>
  %b = relay.add %a, %w : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %c = relay.exp %y : tensor<4x8xf32>
  %d = relay.add %c, %w : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %e = relay.exp %z : tensor<8x4xf32>
  return %b, %d, %e : tensor<4x8xf32>, tensor<4x8xf32>, tensor<8x4xf32>
}
"""


def inputs() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    shapes = {"x": (4, 8), "y": (4, 8), "z": (8, 4), "w": (8,)}
    return {n: rng.standard_normal(s).astype(np.float32) for n, s in shapes.items()}


def check(exe: xrelay.Executable, params: dict[str, np.ndarray] | None = None) -> None:
    args = {**inputs(), **(params or {})}
    expected = xrelay.interpret(TWINS, **args)
    run = {n: v for n, v in inputs().items() if n not in (params or {})}
    for out, ref in zip(exe.run(**run), expected, strict=True):
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("targets", [("c",), ("opencl",)])
def test_equal_kernels_are_one(targets: tuple[str, ...], tmp_path: Path) -> None:
    exe = xrelay.build(TWINS, targets=targets)
    assert len(exe.kernels) == 2
    called = [n["attrs"]["func_name"] for n in exe.graph["nodes"] if n["op"] == "tvm_op"]
    assert len(called) == 3 and len(set(called)) == 2 and set(called) == {k.name for k in exe.kernels}
    check(exe)
    exe.save(tmp_path / "twins.xrelay")
    assert len(list((tmp_path / "twins.xrelay" / "kernels").glob("*.c*"))) == 2  # stored once
    check(xrelay.load(tmp_path / "twins.xrelay"))


def test_kernels_that_differ_only_in_a_longer_name_are_not_merged() -> None:
    from xrelay.runtime.kernels import KernelSource
    from xrelay.targets.kernels import content_digest

    def kernel(name: str, body: str) -> KernelSource:
        return KernelSource(name, "c", f"void {name}(float *o) {{ {body} }}", (1,), 0)

    assert content_digest(kernel("k_1", "o[0] = 1;")) == content_digest(kernel("k_2", "o[0] = 1;"))
    assert content_digest(kernel("k_1", "k_12(o);")) != content_digest(kernel("k_2", "k_22(o);"))
    assert content_digest(kernel("k_1", "o[0] = 1;")) != content_digest(kernel("k_1", "o[0] = 2;"))


@pytest.fixture
def build_cache(cache: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XRELAY_BUILD_CACHE", "1")
    return cache


def lowering_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*args: object, **kwargs: object) -> None:
        raise CompileError("lowered again")

    monkeypatch.setattr(driver, "lower", fail)


def test_a_second_build_takes_the_first_from_the_cache(build_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    w = {"w": inputs()["w"]}
    check(xrelay.build(TWINS, targets=("c",), params=w), w)
    with monkeypatch.context() as m:
        lowering_fails(m)
        check(xrelay.build(TWINS, targets=("c",), params=w), w)
        for changed in (
            lambda: xrelay.build(TWINS, targets=("c",), params={"w": w["w"] + 1}),  # other weights
            lambda: xrelay.build(TWINS, targets=("c -O2",), params=w),  # other flags
            lambda: xrelay.build(TWINS, targets=("c",), params=w, num_threads=3),
            lambda: xrelay.build(TWINS.replace("%c = relay.exp", "%c = relay.tanh"), targets=("c",), params=w),
        ):
            with pytest.raises(CompileError, match="lowered again"):
                changed()


def test_params_of_every_rank_come_back_from_an_entry_as_stored(build_cache: Path) -> None:
    """A 0-d param (the reference transformer's 1/sqrt(d) scale, `bench/models.py`) had come
    back as [1] (np.ascontiguousarray makes 0-d arrays 1-d), and its warm build was refused."""
    params = {
        "scale": np.array(0.125, np.float32),
        "row": np.arange(3, dtype=np.float32),
        "strided": np.arange(12, dtype=np.float32).reshape(3, 4)[:, ::2],  # (not contiguous)
    }
    build_cache_module.store("ranks", build_cache_module.Built({"nodes": []}, [], params))
    found = build_cache_module.lookup("ranks")
    assert found is not None and found.params.keys() == params.keys()
    for name, value in params.items():
        assert found.params[name].shape == value.shape
        np.testing.assert_array_equal(found.params[name], value)


def last_byte_of_a_param(data: bytearray, entry: dict[str, Any]) -> bytes:
    place = max(entry["params"].values(), key=lambda p: p["offset"])
    data[place["offset"] + 4 * int(np.prod(place["shape"])) - 1] ^= 0x80
    return bytes(data)


def first_byte(data: bytearray, entry: dict[str, Any]) -> bytes:
    data[0] ^= 1
    return bytes(data)


@pytest.mark.parametrize(
    "damage",
    [first_byte, last_byte_of_a_param, lambda data, e: bytes(data[:-1]), lambda data, e: bytes(data) + b"\0"],
    ids=["first byte", "a param's last byte", "one byte short", "one byte long"],
)
def test_a_damaged_entry_is_rebuilt(
    damage: Callable[[bytearray, dict[str, Any]], bytes], build_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    params = {"w": inputs()["w"], "z": inputs()["z"]}
    xrelay.build(TWINS, targets=("c",), params=params)
    (stored,) = build_cache.glob("build-*.bin")
    (entry,) = build_cache.glob("build-*.json")
    stored.write_bytes(damage(bytearray(stored.read_bytes()), json.loads(entry.read_text())))
    with monkeypatch.context() as m:
        lowering_fails(m)
        with pytest.raises(CompileError, match="lowered again"):
            xrelay.build(TWINS, targets=("c",), params=params)
    check(xrelay.build(TWINS, targets=("c",), params=params), params)
    with monkeypatch.context() as m:
        lowering_fails(m)
        check(xrelay.build(TWINS, targets=("c",), params=params), params)  # rebuilt, stored again
    assert json.loads(entry.read_text())["format"] == build_cache_module.FORMAT
    assert build_cache.stat().st_mode & 0o777 == 0o700


def test_a_cached_build_runs_on_its_params_uncopied(build_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The params of a build from the cache are read-only views of the params file (mapped,
    after its sha256 checked), at cache-line offsets, and the host device runs on them as
    they are: a warm build holds the weights once (and the caller's)."""
    params = {"w": inputs()["w"], "z": inputs()["z"]}
    xrelay.build(TWINS, targets=("c",), params=params)
    with monkeypatch.context() as m:
        lowering_fails(m)
        exe = xrelay.build(TWINS, targets=("c",), params=params)
    check(exe, params)
    stored = list(exe.params.values())
    assert len(stored) == 2 and all(immutable(p) and p.ctypes.data % 64 == 0 for p in stored)
    shared = list(exe.executor.shared.values())
    assert all(any(np.shares_memory(p, buffer) for buffer in shared) for p in stored)


@pytest.mark.parametrize(
    "damage",
    [
        lambda e: [e],  # not an object
        lambda e: {**e, "kernels": 3},
        lambda e: {**e, "params": {n: {**p, "dtype": "|O"} for n, p in e["params"].items()}},  # Python objects
        lambda e: {k: v for k, v in e.items() if k != "graph"},
        lambda e: {**e, "params": {n: {**p, "offset": e["params_bytes"]} for n, p in e["params"].items()}},
        lambda e: {**e, "params": {n: {**p, "offset": p["offset"] + 4} for n, p in e["params"].items()}},
        lambda e: {k: v for k, v in e.items() if k != "params_sha256"},
        lambda e: {**e, "params_bytes": 1 << 60},
    ],
    ids=[
        "a list",
        "kernels a number",
        "object params",
        "no graph",
        "params past the file",
        "params off their alignment",
        "no sha256 of the params",
        "a file of another size",
    ],
)
def test_an_entry_of_another_shape_is_a_miss(
    damage: Callable[[dict[str, Any]], object], build_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    w = {"w": inputs()["w"]}
    xrelay.build(TWINS, targets=("c",), params=w)
    (entry,) = build_cache.glob("build-*.json")
    entry.write_text(json.dumps(damage(json.loads(entry.read_text()))))
    with monkeypatch.context() as m:
        lowering_fails(m)
        with pytest.raises(CompileError, match="lowered again"):
            xrelay.build(TWINS, targets=("c",), params=w)
    check(xrelay.build(TWINS, targets=("c",), params=w), w)


def test_the_tests_build_without_the_cache() -> None:
    from xrelay import build_cache

    assert not build_cache.enabled()  # (conftest.py: they patch the compiler's internals)


# Three multiply-by-a-constant groups: two by 2.0 (one kernel), one by 3.0 (its own: a splat
# constant is inlined into the kernel), and an exp of the same shape (its own).
SPLATS = """
func.func @main(%x: tensor<8xf32>, %y: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %two = relay.constant {value = dense<2.0> : tensor<8xf32>} : tensor<8xf32>
  %three = relay.constant {value = dense<3.0> : tensor<8xf32>} : tensor<8xf32>
  %a = relay.multiply %x, %two : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %b = relay.multiply %y, %two : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %c = relay.multiply %x, %three : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %d = relay.exp %y : tensor<8xf32>
  return %a, %b, %c, %d : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}
"""


def test_equal_groups_are_lowered_once() -> None:
    module = xrelay.parse(SPLATS)
    driver.lower(module, ("c",), None, "c")
    kernels = [op for op in module.ops if op.attributes.get("relay.schedule") is not None]
    assert len(kernels) == 3
    x, y = np.arange(8, dtype=np.float32), np.linspace(-1, 1, 8, dtype=np.float32)
    for out, ref in zip(xrelay.build(SPLATS).run(x=x, y=y), (2 * x, 2 * y, 3 * x, np.exp(y)), strict=True):
        np.testing.assert_allclose(out, ref, rtol=1e-6)


def test_kernels_compile_while_they_are_emitted(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """gcc starts on the kernels' units during emission (`driver.EarlyBuilds`); the runtime's
    `build_c` then compiles only its thread-count report and links."""
    from xrelay.runtime import c_library, cpu

    inside_build_c: list[bool] = [False]
    compiled_inside: list[tuple[str, ...]] = []
    compile_unit, build_c = c_library._compile_unit, cpu.build_c

    def compile_recorded(unit: c_library.Unit, *args: object) -> str | None:
        if inside_build_c[0]:
            compiled_inside.append(unit.names)
        return compile_unit(unit, *args)  # type: ignore[arg-type]

    def build_recorded(*args: object, **kwargs: object) -> c_library.CLibrary:
        inside_build_c[0] = True
        try:
            return build_c(*args, **kwargs)  # type: ignore[arg-type]
        finally:
            inside_build_c[0] = False

    monkeypatch.setattr(c_library, "_compile_unit", compile_recorded)
    monkeypatch.setattr(cpu, "build_c", build_recorded)
    exe = xrelay.build(TWINS, targets=("c -O1",))
    assert compiled_inside == [("xrelay_num_threads",)]
    assert len(list(cache.glob("*.o"))) >= 2
    check(exe)


def test_the_least_recently_used_builds_are_evicted(build_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XRELAY_BUILD_CACHE_MB", "0.00013")  # 130 bytes: two entries' params (32 each, padded to 64)
    ws = [{"w": np.full(8, float(i) + 0.5, np.float32)} for i in range(4)]
    entries: list[set[str]] = []
    for i in (0, 1, 0, 2):  # 0 used again after 1: 1 is the least recently used when 2 comes
        xrelay.build(TWINS, targets=("c",), params=ws[i])
        entries.append({p.name for p in build_cache.glob("build-*.json")})
    assert len(entries[1]) == 2 and entries[2] == entries[1]
    (evicted,) = entries[1] - entries[3]
    assert len(entries[3]) == 2 and not (build_cache / evicted).with_suffix(".bin").exists()
    with monkeypatch.context() as m:
        lowering_fails(m)
        check(xrelay.build(TWINS, targets=("c",), params=ws[0]), ws[0])  # kept: used last but one
