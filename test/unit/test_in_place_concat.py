"""In-place concatenations: plan-memory stores a concatenation's inputs in slices of its storage
and the concatenation runs nothing (`transforms/in_place_concat.py`).

Plan-memory on hand-written lowered programs: in place where allowed (offsets, one storage,
its lifetime), and not where an input is a parameter, a constant, returned, twice in the
concatenation, on another scope, in two concatenations, or where the axis is not contiguous or
an OpenCL offset is not aligned. End to end: a SqueezeNet fire module and a concatenation of
three convs (odd channel counts, one conv also read by a pool) equal `xrelay.interpret` on C
at each ISA level, on OpenCL, split across both, and after save and load, with no kernel node
for the concatenation.
"""

from __future__ import annotations

import os

os.environ.setdefault("POCL_DEVICES", "pthread pthread")

from pathlib import Path

import numpy as np
import pytest
from isa_levels import isa_params
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

import xrelay
from xrelay.dialects.lowered_graph import STORAGE_ID_ATTR, STORAGE_OFFSET_ATTR, main_function
from xrelay.transforms.plan_memory import PlanMemoryPass

CPU = '#relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">'
CL = '#relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">'


def lowered(body: str, args: str = "%x: tensor<1x4xf32>", result: str = "tensor<1x8xf32>", scope: str = CPU) -> str:
    """A lowered @main of kernels @k (1x4 -> 1x4), @p (1x4 -> 1x2) and concatenations @c2
    (two 1x4 -> 1x8 along axis 1) and @c3 (three); every value on `scope` but where said."""
    decls = [
        "func.func private @k(memref<1x4xf32>, memref<1x4xf32>)",
        "func.func private @c2(memref<1x4xf32>, memref<1x4xf32>, memref<1x8xf32>)",
        "func.func private @c3(memref<1x4xf32>, memref<1x4xf32>, memref<1x4xf32>, memref<1x12xf32>)",
        "func.func private @u(memref<1x8xf32>, memref<1x8xf32>)",
    ]
    arg_list = ", ".join(f"{a} {{relay.se_scope = {scope}}}" for a in args.split(", "))
    text = "\n".join(decls) + f"\nfunc.func @main({arg_list}) -> {result} {{\n{body}\n}}"
    return text.replace("$S", scope).replace("$CL", CL).replace("$CPU", CPU)


def plan(text: str) -> dict[str, tuple[int, int | None]]:
    """(storage id, storage offset or None) of each named value of @main after plan-memory."""
    module = xrelay.parse(text)
    PlanMemoryPass().apply(xrelay.context(), module)
    return planned(module)


def planned(module: ModuleOp) -> dict[str, tuple[int, int | None]]:
    main = main_function(module)
    out: dict[str, tuple[int, int | None]] = {}
    for op in main.body.block.ops:
        if isinstance(op, func.ReturnOp):
            continue
        offset = op.attributes.get(STORAGE_OFFSET_ATTR)
        out[op.results[0].name_hint or "?"] = (
            op.attributes[STORAGE_ID_ATTR].value.data,  # type: ignore[attr-defined]
            None if offset is None else offset.value.data,  # type: ignore[attr-defined]
        )
    return out


FIRE = """
  %a = relay.launch @k(%x) {se_scope = $S} : (tensor<1x4xf32>) -> tensor<1x4xf32>
  %b = relay.launch @k(%x) {se_scope = $S} : (tensor<1x4xf32>) -> tensor<1x4xf32>
  %e = relay.launch @k(%a) {se_scope = $S} : (tensor<1x4xf32>) -> tensor<1x4xf32>
  %c = relay.launch @c2(%a, %b) {relay.concat_axis = 1 : i64, se_scope = $S} : (tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<1x8xf32>
  %d = relay.launch @u(%c) {se_scope = $S} : (tensor<1x8xf32>) -> tensor<1x8xf32>
  func.return %d, %e : tensor<1x8xf32>, tensor<1x4xf32>"""


def test_inputs_are_stored_in_slices_of_the_concatenation() -> None:
    got = plan(lowered(FIRE, result="(tensor<1x8xf32>, tensor<1x4xf32>)"))
    assert got["a"] == (got["c"][0], 0) and got["b"] == (got["c"][0], 16)
    assert got["c"][1] is None
    # %e reads %a's slice; %e's own storage is another (the concatenation's is live)
    assert got["e"][0] != got["c"][0] and got["d"][0] != got["c"][0]


def test_planning_twice_changes_nothing() -> None:
    module = xrelay.parse(lowered(FIRE, result="(tensor<1x8xf32>, tensor<1x4xf32>)"))
    PlanMemoryPass().apply(xrelay.context(), module)
    once = planned(module)
    assert once["b"][1] == 16
    PlanMemoryPass().apply(xrelay.context(), module)
    assert planned(module) == once


def test_the_storage_lives_from_its_first_input() -> None:
    """%t is computed between the two inputs: it may not take the storage %a is already in."""
    body = """
  %a = relay.launch @k(%x) {se_scope = $S} : (tensor<1x4xf32>) -> tensor<1x4xf32>
  %t = relay.launch @k(%x) {se_scope = $S} : (tensor<1x4xf32>) -> tensor<1x4xf32>
  %b = relay.launch @k(%t) {se_scope = $S} : (tensor<1x4xf32>) -> tensor<1x4xf32>
  %c = relay.launch @c2(%a, %b) {relay.concat_axis = 1 : i64, se_scope = $S} : (tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<1x8xf32>
  %d = relay.launch @u(%c) {se_scope = $S} : (tensor<1x8xf32>) -> tensor<1x8xf32>
  func.return %d : tensor<1x8xf32>"""
    got = plan(lowered(body, result="tensor<1x8xf32>"))
    assert got["a"][0] == got["b"][0] == got["c"][0] != got["t"][0]


def concat_of(a: str, b: str, rest: str = "", result: str = "tensor<1x8xf32>") -> str:
    return f"""
  %a = relay.launch @k(%x) {{se_scope = $S}} : (tensor<1x4xf32>) -> tensor<1x4xf32>
  %b = relay.launch @k(%x) {{se_scope = $S}} : (tensor<1x4xf32>) -> tensor<1x4xf32>{rest}
  %c = relay.launch @c2({a}, {b}) {{relay.concat_axis = 1 : i64, se_scope = $S}} : (tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<1x8xf32>
  %d = relay.launch @u(%c) {{se_scope = $S}} : (tensor<1x8xf32>) -> tensor<1x8xf32>
  func.return %d{", %a" if result != "tensor<1x8xf32>" else ""} : {result}"""


NOT_IN_PLACE = {
    "a_parameter": lowered(concat_of("%a", "%x")),
    "a_constant": lowered(
        concat_of(
            "%a",
            "%q",
            "\n  %q = relay.constant {value = dense<1.0> : tensor<1x4xf32>, se_scope = $S} : tensor<1x4xf32>",
        )
    ),
    "returned": lowered(
        concat_of("%a", "%b", result="tensor<1x8xf32>, tensor<1x4xf32>"), result="(tensor<1x8xf32>, tensor<1x4xf32>)"
    ),
    "twice": lowered(concat_of("%a", "%a")),
    "another_scope": lowered(
        concat_of(
            "%a",
            "%g",
            "\n  %q = relay.device_copy %x {src_se_scope = $CPU, dst_se_scope = $CL} : tensor<1x4xf32>"
            "\n  %g = relay.launch @k(%q) {se_scope = $CL} : (tensor<1x4xf32>) -> tensor<1x4xf32>",
        )
    ),
}


@pytest.mark.parametrize("case", NOT_IN_PLACE)
def test_not_in_place(case: str) -> None:
    """Each case differs from `concat_of("%a", "%b")`, which is in place, by what it names."""
    base = plan(lowered(concat_of("%a", "%b")))
    assert base["a"] == (base["c"][0], 0) and base["b"] == (base["c"][0], 16)
    got = plan(NOT_IN_PLACE[case])
    assert all(offset is None for _, offset in got.values())
    assert got["a"][0] != got["c"][0]


def test_not_along_an_axis_after_one_of_extent_above_1() -> None:
    body = """
  %a = relay.launch @k(%x) {se_scope = $S} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %b = relay.launch @k(%x) {se_scope = $S} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %c = relay.launch @c2(%a, %b) {relay.concat_axis = 1 : i64, se_scope = $S} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x8xf32>
  %d = relay.launch @u(%c) {se_scope = $S} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  func.return %d : tensor<2x8xf32>"""
    text = lowered(body, args="%x: tensor<2x4xf32>", result="tensor<2x8xf32>").replace("memref<1x", "memref<2x")
    got = plan(text)
    assert all(offset is None for _, offset in got.values())
    # along axis 0 it is contiguous
    got = plan(text.replace("concat_axis = 1", "concat_axis = 0").replace("2x8", "4x4"))
    assert got["a"] == (got["c"][0], 0) and got["b"] == (got["c"][0], 32)


def test_an_input_of_two_concatenations_is_in_the_first_only() -> None:
    body = """
  %a = relay.launch @k(%x) {se_scope = $S} : (tensor<1x4xf32>) -> tensor<1x4xf32>
  %b = relay.launch @k(%x) {se_scope = $S} : (tensor<1x4xf32>) -> tensor<1x4xf32>
  %e = relay.launch @k(%x) {se_scope = $S} : (tensor<1x4xf32>) -> tensor<1x4xf32>
  %c = relay.launch @c2(%a, %b) {relay.concat_axis = 1 : i64, se_scope = $S} : (tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<1x8xf32>
  %f = relay.launch @c2(%e, %b) {relay.concat_axis = 1 : i64, se_scope = $S} : (tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<1x8xf32>
  %d = relay.launch @u(%c) {se_scope = $S} : (tensor<1x8xf32>) -> tensor<1x8xf32>
  %g = relay.launch @u(%f) {se_scope = $S} : (tensor<1x8xf32>) -> tensor<1x8xf32>
  func.return %d, %g : tensor<1x8xf32>, tensor<1x8xf32>"""
    got = plan(lowered(body, result="(tensor<1x8xf32>, tensor<1x8xf32>)"))
    assert got["a"] == (got["c"][0], 0) and got["b"] == (got["c"][0], 16)
    assert got["e"][1] is None and got["e"][0] != got["f"][0]


def test_opencl_offsets_are_sub_buffer_aligned() -> None:
    """16 bytes is no multiple of OpenCL's 128: not in place; 128 is."""
    assert all(
        offset is None
        for _, offset in plan(lowered(FIRE, result="(tensor<1x8xf32>, tensor<1x4xf32>)", scope=CL)).values()
    )
    wide = lowered(FIRE, result="(tensor<1x64xf32>, tensor<1x32xf32>)", scope=CL, args="%x: tensor<1x32xf32>")
    wide = wide.replace("1x4x", "1x32x").replace("1x8x", "1x64x").replace("1x4xf", "1x32xf").replace("1x8xf", "1x64xf")
    got = plan(wide)
    assert got["a"] == (got["c"][0], 0) and got["b"] == (got["c"][0], 128)


# --- end to end ------------------------------------------------------------------------------


def t(*shape: int) -> str:
    return f"tensor<{'x'.join(map(str, shape))}xf32>"


def conv(out: str, x: str, w: str, cin: int, cout: int, k: int, hw: int) -> list[str]:
    p = k // 2
    return [
        f"%{out}0 = relay.nn.conv2d %{x}, %{w} {{padding = array<i64: {p}, {p}, {p}, {p}>}} : "
        f"({t(1, cin, hw, hw)}, {t(cout, cin, k, k)}) -> {t(1, cout, hw, hw)}",
        f"%{out} = relay.nn.relu %{out}0 : {t(1, cout, hw, hw)}",
    ]


def fire(hw: int = 9, cin: int = 16, s: int = 6, e1: int = 10, e3: int = 13) -> str:
    """SqueezeNet's fire module: concat(relu(conv1x1(s)), relu(conv3x3(s))) of a squeeze."""
    lines = (
        conv("s", "x", "ws", cin, s, 1, hw) + conv("a", "s", "w1", s, e1, 1, hw) + conv("b", "s", "w3", s, e3, 3, hw)
    )
    out = t(1, e1 + e3, hw, hw)
    lines.append(
        f"%c = relay.concatenate %a, %b {{axis = 1 : i64}} : ({t(1, e1, hw, hw)}, {t(1, e3, hw, hw)}) -> {out}"
    )
    args = f"%x: {t(1, cin, hw, hw)}, %ws: {t(s, cin, 1, 1)}, %w1: {t(e1, s, 1, 1)}, %w3: {t(e3, s, 3, 3)}"
    return f"func.func @main({args}) -> {out} {{\n  " + "\n  ".join(lines) + f"\n  func.return %c : {out}\n}}"


def three_convs(hw: int = 8, cin: int = 3, cs: tuple[int, int, int] = (5, 11, 7), reverse: bool = False) -> str:
    """concat(conv(x), conv(x), conv(x)) with odd channel counts, the second also read by a
    max pool; both returned through a conv each (so the concatenation's inputs are
    intermediates). `reverse`: concatenated last first, so each is computed after the slice
    behind it was written (a kernel writing past its result's end would show)."""
    lines: list[str] = []
    for i, (c, k) in enumerate(zip(cs, (1, 3, 1))):
        lines += conv(f"y{i}", "x", f"w{i}", cin, c, k, hw)
    total, order = sum(cs), [2, 1, 0] if reverse else [0, 1, 2]
    types = ", ".join(t(1, cs[i], hw, hw) for i in order)
    names = ", ".join(f"%y{i}" for i in order)
    lines.append(f"%c = relay.concatenate {names} {{axis = 1 : i64}} : ({types}) -> {t(1, total, hw, hw)}")
    lines.append(
        f"%p = relay.nn.max_pool2d %y1 {{pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>}} : "
        f"({t(1, cs[1], hw, hw)}) -> {t(1, cs[1], hw // 2, hw // 2)}"
    )
    lines += conv("o", "c", "wo", total, 4, 1, hw)
    args = [f"%x: {t(1, cin, hw, hw)}"] + [f"%w{i}: {t(c, cin, k, k)}" for i, (c, k) in enumerate(zip(cs, (1, 3, 1)))]
    args.append(f"%wo: {t(4, total, 1, 1)}")
    results = f"{t(1, 4, hw, hw)}, {t(1, cs[1], hw // 2, hw // 2)}"
    return (
        f"func.func @main({', '.join(args)}) -> ({results}) {{\n  "
        + "\n  ".join(lines)
        + f"\n  func.return %o, %p : {results}\n}}"
    )


PROGRAMS = {
    "fire": fire(),
    "three_convs": three_convs(),
    "fire_13x13": fire(hw=13, cin=32, s=16, e1=64, e3=64),
    # odd images, written last slice first, with channels enough for the packed conv schedules
    "reversed_7x7": three_convs(hw=7, cin=32, cs=(48, 80, 19), reverse=True),
    "reversed_8x8": three_convs(hw=8, cin=32, cs=(48, 80, 19), reverse=True),  # slices of 128 bytes
}
DEVICES = {
    "opencl": dict(targets=("c", "opencl"), default_device="opencl"),
    "split": dict(targets=("c", "opencl")),  # the concatenation and its inputs on OpenCL, the rest on cpu
}


def arrays(text: str, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    main = next(iter(xrelay.parse(text).ops))
    assert isinstance(main, func.FuncOp)
    return {a.name_hint or "": rng.standard_normal(a.type.get_shape()).astype(np.float32) for a in main.args}  # type: ignore[attr-defined]


def check(exe: xrelay.Executable, text: str, seed: int) -> None:
    given = arrays(text, seed)
    expected = xrelay.interpret(xrelay.parse(text), given)
    got = exe.run(**given)
    for g, e in zip(got if isinstance(got, tuple) else [got], expected if isinstance(expected, tuple) else [expected]):
        np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-4)


def concat_nodes(exe: xrelay.Executable) -> list[dict[str, object]]:
    return [n for n in exe.graph["nodes"] if str(n["name"]).startswith("fused_concatenate")]


def assert_in_place(exe: xrelay.Executable) -> None:
    """The concatenation is a `__nop` node that no step runs, and its inputs are in its storage."""
    nodes = concat_nodes(exe)
    assert nodes and all(n["attrs"]["func_name"] == "__nop" for n in nodes)  # type: ignore[index]
    index = exe.graph["nodes"].index(nodes[0])
    assert index not in {i for _, i in exe.executor.steps}
    ids = exe.graph["attrs"]["storage_id"][1]
    assert all(ids[i] == ids[index] for i, *_ in nodes[0]["inputs"])  # type: ignore[union-attr]
    assert any(exe.graph["attrs"]["storage_offset"][1])


def split(text: str) -> str:
    """`text` (a fire module) with its squeeze and a relu after the concatenation on cpu, the
    expands and the concatenation on OpenCL."""
    lines = text.split("\n")
    out = lines[0].split("-> ")[1].rstrip(" {")
    squeeze = next(i for i, line in enumerate(lines) if line.strip().startswith("%s = "))
    ty = lines[squeeze].rsplit(": ", 1)[1]
    lines[squeeze] = (
        lines[squeeze].replace("%s = ", "%s_ = ") + f"\n  %s = relay.on_device %s_ {{se_scope = {CPU}}} : {ty}"
    )
    for i, line in enumerate(lines):
        for name in ("%a0", "%b0", "%c"):
            if line.strip().startswith(f"{name} = "):
                rhs_ty = line.rsplit("-> ", 1)[1]
                lines[i] = (
                    line.replace(f"{name} = ", f"{name}_ = ")
                    + f"\n  {name} = relay.on_device {name}_ {{se_scope = {CL}}} : {rhs_ty}"
                )
    ret = next(i for i, line in enumerate(lines) if "func.return %c" in line)
    lines[ret] = (
        f"  %r_ = relay.nn.relu %c : {out}\n  %r = relay.on_device %r_ {{se_scope = {CPU}}} : {out}\n  func.return %r : {out}"
    )
    return "\n".join(lines)


@pytest.mark.parametrize("target", isa_params())
@pytest.mark.parametrize("program", PROGRAMS)
def test_in_place_on_c(program: str, target: str) -> None:
    text = PROGRAMS[program]
    exe = xrelay.build(text, targets=(target,))
    assert_in_place(exe)
    for seed in (0, 1):  # the second run reuses the workspace
        check(exe, text, seed)


@pytest.mark.parametrize("program", ["fire_13x13", "three_convs", "reversed_8x8"])
def test_in_place_on_opencl(program: str) -> None:
    text = PROGRAMS[program]
    exe = xrelay.build(text, **DEVICES["opencl"])  # type: ignore[arg-type]
    assert_in_place(exe)
    check(exe, text, 0)
    check(exe, text, 1)


def test_unaligned_on_opencl_stays_a_copy() -> None:
    """9x9 images of 10 channels: 3240 bytes, no multiple of a sub-buffer's 128."""
    text = PROGRAMS["fire"]
    exe = xrelay.build(text, **DEVICES["opencl"])  # type: ignore[arg-type]
    assert all(n["attrs"]["func_name"] != "__nop" for n in concat_nodes(exe))  # type: ignore[index]
    check(exe, text, 0)
    assert_in_place(xrelay.build(text))  # (on cpu it is)


def test_in_place_split_across_cpu_and_opencl() -> None:
    """The fire module on OpenCL, fed and read by cpu kernels."""
    text = split(PROGRAMS["fire_13x13"])
    exe = xrelay.build(text, targets=("c", "opencl"))
    devices = [d["kind"] for d in exe.graph["devices"]]
    kinds = {devices[i] for i in exe.graph["attrs"]["device_index"][1]}
    assert kinds == {"cpu", "opencl"}
    assert_in_place(exe)
    index = exe.graph["nodes"].index(concat_nodes(exe)[0])
    assert devices[exe.graph["attrs"]["device_index"][1][index]] == "opencl"
    check(exe, text, 0)


@pytest.mark.parametrize("device", ["c", "opencl"])
def test_saved_and_loaded(tmp_path: Path, device: str) -> None:
    import xrelay.runtime

    text = PROGRAMS["fire_13x13"] if device == "opencl" else PROGRAMS["three_convs"]
    exe = xrelay.build(text, **(DEVICES["opencl"] if device == "opencl" else {}))  # type: ignore[arg-type]
    exe.save(tmp_path / "m.xrelay")
    loaded = xrelay.runtime.load(tmp_path / "m.xrelay")
    assert loaded.graph["attrs"]["storage_offset"] == exe.graph["attrs"]["storage_offset"]
    assert_in_place(loaded)  # type: ignore[arg-type]
    check(loaded, text, 2)  # type: ignore[arg-type]


def test_a_loaded_graph_with_wrong_offsets_is_refused() -> None:
    """The artifact check and the executor refuse a `__nop` whose inputs are not its bytes end
    to end, and an offset the device kind cannot take."""
    import copy

    from xrelay.errors import ArtifactError, DeviceError
    from xrelay.runtime.executor import GraphExecutor
    from xrelay.runtime.graph_check import check_graph

    exe = xrelay.build(PROGRAMS["fire_13x13"], **DEVICES["opencl"])  # type: ignore[arg-type]
    check_graph(exe.graph, exe.kernels, exe.params, "m")
    offsets = exe.graph["attrs"]["storage_offset"][1]
    second = max(range(len(offsets)), key=offsets.__getitem__)
    for shift, message in ((128, "views its input node"), (64, "takes multiples of 128 bytes")):
        graph = copy.deepcopy(exe.graph)
        graph["attrs"]["storage_offset"][1][second] += shift
        with pytest.raises(ArtifactError, match=message):
            check_graph(graph, exe.kernels, exe.params, "m")
    graph = copy.deepcopy(exe.graph)
    graph["attrs"]["storage_offset"][1][second] += 128
    with pytest.raises(DeviceError, match="must view its inputs' bytes"):
        GraphExecutor(graph, exe.devices, [k.kernels for k in exe.loaded], exe.params)


def test_in_place_at_batch_1_only_of_a_batched_build() -> None:
    """A build of batch sizes 1 and 4: the concatenation is in place in the graph of 1 (its
    inputs contiguous), a copy kernel in the graph of 4; runs of 1, 3 and 4 are right."""
    text = PROGRAMS["three_convs"]
    rng = np.random.default_rng(5)
    params = {k: v for k, v in arrays(text, 5).items() if k != "x"}
    exe = xrelay.build(text, params=params, batch_sizes=(1, 4))
    nops = {
        size: [n["attrs"]["func_name"] == "__nop" for n in g["nodes"] if "concat" in n["name"]]
        for size, g in exe.batches.items()
    }
    assert nops == {1: [True], 4: [False]}
    for n in (1, 3, 4):
        x = rng.standard_normal((n, 3, 8, 8)).astype(np.float32)
        got = exe.run(x=x)
        want = [xrelay.interpret(xrelay.parse(text), {"x": x[i : i + 1], **params}) for i in range(n)]
        for k in range(2):
            np.testing.assert_allclose(got[k], np.concatenate([w[k] for w in want]), rtol=1e-4, atol=1e-4)
