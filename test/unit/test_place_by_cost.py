"""place-by-cost: the search on small graphs with injected (fake) costs, so that its answers
are known; the pass on IR with a cost table file; and `placement="auto"` end to end against
`xrelay.interpret` on c + opencl."""

from __future__ import annotations

import dataclasses
import itertools
import json
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp

import xrelay
from xrelay.dialects import relay
from xrelay.errors import UsageError
from xrelay.ir import context
from xrelay.runtime.device_kinds import device_kind
from xrelay.transforms import place_by_cost
from xrelay.transforms.place_by_cost import PlaceByCostPass
from xrelay.transforms.placement_model import CopyCost, Model, Node, predict, search, serial_seconds
from xrelay.transforms.plan_devices import PlanDevicesPass

CPU, CL = "cpu", "opencl"
BOTH = (CPU, CL)
COPY = {(CPU, CL): CopyCost(10e-6, 1e-9), (CL, CPU): CopyCost(10e-6, 1e-9)}
US = 1e-6


def node(name: str, inputs: list[int], cpu: float, cl: float, **kw: bool) -> Node:
    return Node(name, inputs, 1000, BOTH, {CPU: cpu * US, CL: cl * US}, **kw)


def brute_force(model: Model) -> float:
    free = [i for i, n in enumerate(model.nodes) if not n.pinned]
    best = float("inf")
    for choice in itertools.product(BOTH, repeat=len(free)):
        placement = [n.choices[0] for n in model.nodes]
        for i, device in zip(free, choice):
            placement[i] = device
        if all(p in n.choices for p, n in zip(placement, model.nodes)):
            best = min(best, predict(model, placement))
    return best


# --- the search with fake costs ---------------------------------------------------------------


def test_chain_takes_the_known_optimum() -> None:
    """x -> a -> b -> c -> d: b and c are much faster on opencl, a and d slightly faster on
    cpu. Moving b, c pays two copies (20 us) and saves 180 us: the answer is cpu, cl, cl, cpu."""
    model = Model(
        [
            Node("%x", [], 1000, BOTH, is_input=True),
            node("%a", [0], 5, 8),
            node("%b", [1], 100, 10),
            node("%c", [2], 100, 10),
            node("%d", [3], 5, 8, is_output=True),
        ],
        COPY,
        CPU,
    )
    result = search(model, BOTH, budget=500)
    assert result.placement == [CPU, CPU, CL, CL, CPU]
    assert result.seconds == pytest.approx(brute_force(model))
    assert result.seconds == pytest.approx(predict(model, result.placement))


def test_chain_stays_when_copies_cost_more_than_they_save() -> None:
    model = Model([Node("%x", [], 1000, BOTH, is_input=True), node("%a", [0], 30, 15, is_output=True)], COPY, CPU)
    assert search(model, BOTH, budget=100).placement == [CPU, CPU]  # 15 us saved, 2 x 11 us of copies


def diamond() -> Model:
    """a -> (b, c) -> d with b and c 1 ms on cpu, 1.2 ms on opencl."""
    return Model(
        [
            Node("%x", [], 1000, BOTH, is_input=True),
            node("%a", [0], 1, 1),
            node("%b", [1], 1000, 1200),
            node("%c", [1], 1000, 1200),
            node("%d", [2, 3], 1, 1, is_output=True),
        ],
        COPY,
        CPU,
    )


def test_diamond_splits_only_because_devices_overlap() -> None:
    model = diamond()
    all_cpu = [CPU] * 5
    result = search(model, BOTH, budget=500)
    # serially every move to opencl loses: the sum's optimum is all on cpu
    assert min(serial_seconds(model, result.placement), serial_seconds(model, all_cpu)) == serial_seconds(
        model, all_cpu
    )
    assert sorted([result.placement[2], result.placement[3]]) == [CPU, CL]
    assert result.seconds < 0.7 * predict(model, all_cpu)
    assert result.seconds == pytest.approx(brute_force(model))


def test_budget_bounds_the_predictions() -> None:
    result = search(diamond(), BOTH, budget=4)
    assert result.evaluated <= 4


def test_pinned_nodes_stay_where_they_are() -> None:
    model = diamond()
    model.nodes[2] = dataclasses.replace(model.nodes[2], choices=(CL,), pinned=True)
    model.nodes[3] = dataclasses.replace(model.nodes[3], choices=(CL,), pinned=True)
    result = search(model, BOTH, budget=500)
    assert result.placement[2:4] == [CL, CL]


# --- the pass on IR, with a cost table file ---------------------------------------------------

DIAMOND = """
func.func @main(%x: tensor<64xf32>) -> tensor<64xf32> {
  %a = "relay.exp"(%x) : (tensor<64xf32>) -> tensor<64xf32>
  %b = "relay.tanh"(%a) : (tensor<64xf32>) -> tensor<64xf32>
  %c = "relay.sigmoid"(%a) : (tensor<64xf32>) -> tensor<64xf32>
  %d = "relay.add"(%b, %c) : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
  func.return %d : tensor<64xf32>
}
"""
DIAMOND_COSTS = {
    "ops": {
        "%a": {"cpu": 1e-6, "opencl": 1e-6},
        "%b": {"cpu": 1e-3, "opencl": 1.2e-3},
        "%c": {"cpu": 1e-3, "opencl": 1.2e-3},
        "%d": {"cpu": 1e-6, "opencl": 1e-6},
    },
    "copies": {
        "cpu->opencl": {"latency": 1e-5, "bandwidth": 1e9},
        "opencl->cpu": {"latency": 1e-5, "bandwidth": 1e9},
    },
}


@pytest.fixture
def costs(tmp_path: Path) -> str:
    path = tmp_path / "costs.json"
    path.write_text(json.dumps(DIAMOND_COSTS))
    return str(path)


def placed(text: str, costs: str, targets: tuple[str, ...] = ("c", "opencl")) -> dict[str, str]:
    """Each named primitive op's device after place-by-cost and plan-devices."""
    module = xrelay.parse(text)
    PlaceByCostPass(targets, "cpu", costs=costs).apply(context(), module)
    PlanDevicesPass(targets, "cpu").apply(context(), module)
    module.verify()
    found: dict[str, str] = {}
    for op in module.walk():
        if isinstance(op, relay.RelayOp) and op.results and op.results[0].name_hint and op.se_scope is not None:
            found.setdefault(op.results[0].name_hint, op.se_scope.device or "?")
    return found


def test_pass_splits_the_diamond(costs: str) -> None:
    where = placed(DIAMOND, costs)
    assert where["a"] == where["d"] == CPU
    assert sorted([where["b"], where["c"]]) == [CPU, CL]


def scopes_of(module: ModuleOp) -> list[str]:
    return [str(op.se_scope) for op in module.walk() if isinstance(op, relay.RelayOp) and op.se_scope is not None]


def test_a_chosen_placement_replays_on_an_equal_module_only(costs: str) -> None:
    """What place-by-cost chose on one module is written back on another parse of the same
    program as it was (no costs read: the table is gone); on a different program it is a
    LoweringError naming the first node that differs."""
    options = PlaceByCostPass(("c", "opencl"), "cpu", costs=costs).options()
    first = xrelay.parse(DIAMOND)
    choice = place_by_cost.chosen(place_by_cost.place(first, options))
    assert sorted(choice.placement[2:4]) == [CPU, CL]
    Path(costs).unlink()
    again = xrelay.parse(DIAMOND)
    place_by_cost.replay(again, options.config, choice)
    assert scopes_of(again) == scopes_of(first) and str(again) == str(first)
    other = xrelay.parse(DIAMOND.replace('"relay.sigmoid"(%a)', '"relay.sigmoid"(%x)').replace("%c", "%e"))
    with pytest.raises(
        xrelay.LoweringError, match="cannot replay a placement .* node 3 of 5 is %e, but the placement's is %c"
    ):
        place_by_cost.replay(other, options.config, choice)


def test_pass_keeps_annotations(costs: str) -> None:
    """%c pinned to opencl by the user: %b goes to cpu, whatever the costs say of %c."""
    text = DIAMOND.replace(
        '%d = "relay.add"(%b, %c)',
        '%c2 = "relay.on_device"(%c) {se_scope = #relay.se_scope<device = opencl>} : '
        '(tensor<64xf32>) -> tensor<64xf32>\n  %d = "relay.add"(%b, %c2)',
    )
    where = placed(text, costs)
    assert where["c"] == CL and where["b"] == CPU


def test_dtype_a_device_lacks_is_never_placed_there(costs: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """With an opencl kind that holds no int64, an op computing int64 stays on cpu even when
    the costs favour opencl."""
    opencl = device_kind("opencl")
    assert opencl is not None
    lacking = dataclasses.replace(opencl, dtypes=("float32", "bool"))
    monkeypatch.setattr(place_by_cost, "device_kind", lambda name: lacking if name == "opencl" else device_kind(name))
    text = """
func.func @main(%x: tensor<64xf32>) -> tensor<64xi64> {
  %a = "relay.exp"(%x) : (tensor<64xf32>) -> tensor<64xf32>
  %b = "relay.cast"(%a) {dtype = "int64"} : (tensor<64xf32>) -> tensor<64xi64>
  func.return %b : tensor<64xi64>
}
"""
    table = {"ops": {"%a": {"cpu": 1e-3, "opencl": 1e-6}, "%b": {"cpu": 1e-3, "opencl": 1e-6}}}
    path = Path(costs).with_name("int.json")
    path.write_text(json.dumps(table))
    where = placed(text, str(path))
    assert where == {"a": CL, "b": CPU}


def test_one_device_places_everything_there_without_costs() -> None:
    where = placed(DIAMOND, "/nonexistent/costs.json", targets=("c",))
    assert set(where.values()) == {CPU}


def test_unreadable_cost_table_is_an_error_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text("{")
    with pytest.raises(xrelay.Error, match="cannot read the cost table .*bad.json"):
        placed(DIAMOND, str(path))


def test_explain_gives_the_measured_times_and_runner_up(costs: str) -> None:
    import os

    os.environ[place_by_cost.COSTS_ENVIRONMENT] = costs
    try:
        (remark,) = xrelay.explain(DIAMOND, "%c", targets=("c", "opencl"), default_device="cpu", placement="auto")
    finally:
        del os.environ[place_by_cost.COSTS_ENVIRONMENT]
    text = str(remark)
    assert "place-by-cost" in text and "on cpu 1.00 ms, on opencl 1.20 ms" in text
    assert "runner-up" in text and "copies" in text


def test_unknown_placement_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="placement must be one of 'annotated', 'auto'"):
        xrelay.build(DIAMOND, targets=("c",), placement="fastest")


# --- end to end ---------------------------------------------------------------------------------


def test_auto_matches_the_interpreter_with_a_split(costs: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(place_by_cost.COSTS_ENVIRONMENT, costs)
    monkeypatch.setenv("XRELAY_BUILD_CACHE", "0")
    exe = xrelay.build(DIAMOND, targets=("c", "opencl"), default_device="cpu", placement="auto")
    assert {"cpu:0", "opencl:0"} <= {device for _, device in exe.placement()}
    x = np.random.default_rng(3).standard_normal(64).astype(np.float32)
    np.testing.assert_allclose(exe.run(x=x), xrelay.interpret(DIAMOND, {"x": x}), rtol=1e-5, atol=1e-6)


def test_auto_measures_and_matches_the_interpreter(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Measured costs (a fresh cache), on a conv + dense model."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("XRELAY_BUILD_CACHE", "0")
    b = xrelay.Builder()
    x = b.input("x", (1, 3, 16, 16))
    rng = np.random.default_rng(0)
    y = b.nn.relu(b.nn.conv2d(x, b.const(rng.standard_normal((8, 3, 3, 3)).astype(np.float32)), padding=(1, 1)))
    y = b.reshape(y, (1, -1))
    y = b.nn.dense(y, b.const(rng.standard_normal((10, 8 * 16 * 16)).astype(np.float32)))
    module = b.finish(b.nn.softmax(y))
    exe = xrelay.build(module, targets=("c", "opencl"), default_device="cpu", placement="auto")
    data = rng.standard_normal((1, 3, 16, 16)).astype(np.float32)
    np.testing.assert_allclose(exe.run(x=data), xrelay.interpret(module, {"x": data}), rtol=1e-4, atol=1e-5)
    assert list((tmp_path / "xrelay" / "placement").glob("*.json"))  # measured, and cached


def test_a_fused_group_moves_as_one_unit() -> None:
    """%a and %b are one fused group: %a alone is faster on opencl, but the group is faster
    on cpu, so neither the cut nor a move splits it."""
    model = Model(
        [
            Node("%x", [], 1000, BOTH, is_input=True),
            node("%a", [0], 100, 10),
            node("%b", [1], 10, 200, is_output=True),
        ],
        COPY,
        CPU,
        units=[[1, 2]],
    )
    result = search(model, BOTH, budget=500)
    assert result.placement[1] == result.placement[2] == CPU
    model.units = []
    assert search(model, BOTH, budget=500).placement[1:] == [CL, CPU]


def test_a_run_pays_the_overhead_of_each_device_it_uses() -> None:
    model = Model([Node("%x", [], 1000, BOTH, is_input=True), node("%a", [0], 30, 5, is_output=True)], COPY, CPU)
    model.overheads = {CPU: 5 * US, CL: 50 * US}
    assert predict(model, [CPU, CPU]) == pytest.approx(35 * US)
    assert predict(model, [CPU, CL]) == pytest.approx((11 + 5 + 11 + 5 + 45) * US)  # write, a, read, overheads
    assert search(model, BOTH, budget=100).placement == [CPU, CPU]  # without overheads, opencl won
    model.overheads = {}
    assert search(model, BOTH, budget=100).placement[1] == CL


def test_a_split_must_win_by_the_margin() -> None:
    """Moving %a to opencl saves 4 us of 110 (after copies): less than MIN_GAIN, so all stays
    on cpu (all on opencl is far slower: %b)."""
    model = Model(
        [
            Node("%x", [], 1000, BOTH, is_input=True),
            node("%a", [0], 100, 74),
            node("%b", [1], 10, 1000, is_output=True),
        ],
        COPY,
        CPU,
    )
    assert predict(model, [CPU, CL, CPU]) < predict(model, [CPU, CPU, CPU])
    assert search(model, BOTH, budget=100).placement == [CPU, CPU, CPU]
    assert search(model, BOTH, budget=100, min_gain=0.0).placement[1:] == [CL, CPU]


def test_prediction_follows_the_concurrent_executors_rules() -> None:
    """%a on opencl, %b and %c on cpu: the write of %x (11 us), %a (10) and the read of %a
    (11) run on opencl's queue while the host runs %b; the host waits for that read only
    before %c, which needs it. So the run is %b + %c when %b is longer than the queue's 32 us,
    and the read's end + %c when it is shorter (the old serial model held the host for each
    copy: 67 us for the first)."""
    x = Node("%x", [], 1000, BOTH, is_input=True)
    for b_us, expected in ((40, 45), (20, 37)):
        model = Model(
            [x, node("%a", [0], 100, 10), node("%b", [0], b_us, 100), node("%c", [1, 2], 5, 100, is_output=True)],
            COPY,
            CPU,
        )
        assert predict(model, [CPU, CL, CPU, CPU]) == pytest.approx(expected * US)
