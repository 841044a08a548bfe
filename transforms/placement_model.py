"""
The cost model and search of place-by-cost: a dataflow graph of nodes with measured times
per device, the predicted time of a run of a placement, and the search for the best one.

A *node* is a primitive op of @main or a parameter (its value enters from the host). Each
node has the devices it may be placed on (`choices`: one when an annotation pins it) and its
measured seconds on each (`times`). Moving a value between devices costs a `CopyCost`
(latency plus bytes over bandwidth, per ordered device pair), once per value and device that
reads it.

`predict` replays the concurrent executor (`runtime/executor.py`, item 4) over a placement
with the measured times, by the executor's own rules: `Steps` makes the placed graph the
executor's steps (kernels, inputs' writes, copies before their first reader) with their
lanes and DAG, `issue_plan` orders them and says where the host waits, and `replay` times
that order. So a queued device's kernels and its copies to and from the host run on its
queue while the host runs its own kernels, and the host waits for a copy only before a node
that needs it. Results on a queued device are read at the end. The prediction is when the
last lane is done, plus the run's overhead (`Model.overheads`).

`search`: for two devices, a minimum cut of the dataflow graph (node times as terminal edges,
copies as edges between nodes) is the exact optimum of the *serial* cost (the sum of node
and copy times); then moves of single nodes and of whole chains (a branch of a diamond, a
tower of a two-tower model), each accepted when `predict` says the run gets faster, at most
`budget` predictions. That finds the splits that win only because devices overlap. With more
devices, the start is the best single device and the moves the same. A split must win by
MIN_GAIN over the best single device.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

from xdsl.ir import SSAValue

from xrelay.dialects.se_scope import SEScopeAttr
from xrelay.runtime.executor import HOST, issue_plan, replay
from xrelay.transforms.compilation_config import CompilationConfig

INFINITE = float("inf")


@dataclass(frozen=True)
class CopyCost:
    """A copy between two devices: a fixed latency and a time per byte, in seconds."""

    latency: float
    seconds_per_byte: float

    def seconds(self, nbytes: int) -> float:
        return self.latency + nbytes * self.seconds_per_byte


@dataclass
class Node:
    """A primitive op of @main (or a parameter) as the cost model sees it."""

    name: str
    inputs: list[int]  # indices of the nodes whose values it reads
    nbytes: int  # its result's size
    choices: tuple[str, ...]  # devices it may be placed on (one when pinned)
    times: dict[str, float] = field(default_factory=dict[str, float])  # measured seconds per device
    pinned: bool = False
    is_input: bool = False  # a parameter: its value is written from the host
    is_output: bool = False  # returned: its value is read to the host


@dataclass
class Model:
    """The graph, the copy costs and the host device."""

    nodes: list[Node]
    copies: dict[tuple[str, str], CopyCost]
    host: str
    overheads: dict[str, float] = field(default_factory=dict[str, float])
    """Per device, what a run of a program all on it took beyond its nodes (the executor's
    own work, waking a device's worker): a run pays the host's, and each other device it
    uses adds what its own exceeds the host's."""
    units: list[list[int]] = field(default_factory=list[list[int]])
    """Nodes that move together: the ops of one fused group (of any device's measured
    build), whose measured time is the group's. Nodes in none are units of their own."""

    def unit_list(self) -> list[list[int]]:
        """Every node in exactly one unit, units in the order of their first node."""
        found = [list(u) for u in self.units if u]
        seen = {i for u in found for i in u}
        found += [[i] for i in range(len(self.nodes)) if i not in seen]
        return sorted(found, key=min)

    def time(self, node: int, device: str) -> float:
        return self.nodes[node].times.get(device, 0.0)

    def copy_seconds(self, src: str, dst: str, nbytes: int) -> float:
        if src == dst:
            return 0.0
        cost = self.copies.get((src, dst))
        if cost is None and self.host in (src, dst):
            return 0.0  # not calibrated
        if cost is None:  # through the host
            return self.copy_seconds(src, self.host, nbytes) + self.copy_seconds(self.host, dst, nbytes)
        return cost.seconds(nbytes)

    def consumers(self) -> list[list[int]]:
        users: list[list[int]] = [[] for _ in self.nodes]
        for i, node in enumerate(self.nodes):
            for j in dict.fromkeys(node.inputs):
                users[j].append(i)
        return users


Placement = list[str]  # a device per node


@dataclass(frozen=True)
class PlacementOptions:
    config: CompilationConfig
    targets: tuple[str, ...]
    host_target: str
    budget: int
    costs: str | None
    num_threads: int


@dataclass
class Graph:
    """@main's nodes for the cost model, with the IR they stand for."""

    model: Model
    values: list[SSAValue]  # each node's value: a parameter or a primitive op's result
    scopes: dict[str, SEScopeAttr]  # device label -> canonical scope
    candidates: tuple[str, ...]  # the labels of the devices free nodes may go to


def predict(model: Model, placement: Placement) -> float:
    """The predicted seconds of one run of `placement` (see the module docstring)."""
    steps = Steps(model, placement)
    order, waits, _ = issue_plan(steps.deps, steps.lanes, steps.started, steps.peers)
    end, free = replay(order, steps.lanes, steps.deps, waits, steps.seconds)
    finish = max(free.values())
    for i, node in enumerate(model.nodes):  # the results' reads, started after the run's issuing
        device = placement[i]
        if node.is_output and device != model.host:
            lane = steps.lane_of[device]
            free[lane] = max(free[HOST], free[lane], end[steps.at[i, device]]) + steps.copy(i, device, model.host)
            finish = max(finish, free[lane])
    return finish + run_overhead(model, placement)


class Steps:
    """A placement as the executor's steps, in program order: a kernel per node, a write per
    input placed off the host, and a copy per value and other device that reads it, just
    before its first reader there (as plan-devices inserts them); each step's lane, the
    dataflow DAG between them (fresh storage per value: plan-memory's reuse is not known
    yet) and its seconds. Devices other than the host are queued devices, a lane each."""

    def __init__(self, model: Model, placement: Placement):
        self.model, self.placement = model, placement
        self.lane_of = {d: k for k, d in enumerate(dict.fromkeys(d for d in placement if d != model.host))}
        self.lane_of[model.host] = HOST
        self.lanes: list[int] = []
        self.deps: list[frozenset[int]] = []
        self.seconds: list[float] = []
        self.started: set[int] = set()
        self.peers: set[int] = set()
        self.at: dict[tuple[int, str], int] = {}  # (node, device) -> the step that puts its value there
        for i, node in enumerate(model.nodes):
            device = placement[i]
            if node.is_input:
                if device != model.host:  # written from the host on the device's queue
                    self.at[i, device] = self._add(self.lane_of[device], (), self.copy(i, model.host, device))
                    self.started.add(self.at[i, device])
                continue
            inputs = [self._value(j, device) for j in dict.fromkeys(node.inputs)]
            self.at[i, device] = self._add(
                self.lane_of[device], [k for k in inputs if k is not None], model.time(i, device)
            )

    def copy(self, node: int, src: str, dst: str) -> float:
        return self.model.copy_seconds(src, dst, self.model.nodes[node].nbytes)

    def _add(self, lane: int, deps: Sequence[int], seconds: float) -> int:
        self.lanes.append(lane)
        self.deps.append(frozenset(deps))
        self.seconds.append(seconds)
        return len(self.lanes) - 1

    def _value(self, node: int, device: str) -> int | None:
        """The step that puts `node`'s value on `device` (a copy, made at its first reader
        there), or None for an input already in host memory."""
        src = self.placement[node]
        if (node, device) in self.at or src == device:
            return self.at.get((node, device))
        source = self.at.get((node, src))
        queued = [self.lane_of[d] for d in (src, device) if d != self.model.host]
        lane = queued[0] if len(queued) == 1 else HOST  # two queues: through the host
        k = self._add(lane, [] if source is None else [source], self.copy(node, src, device))
        if lane != HOST:
            self.started.add(k)
        elif len(queued) == 2:
            self.peers.add(k)
        self.at[node, device] = k
        return k


def run_overhead(model: Model, placement: Placement) -> float:
    host = model.overheads.get(model.host, 0.0)
    others = {d for d in placement if d != model.host}
    return host + sum(max(model.overheads.get(d, 0.0) - host, 0.0) for d in others)


def serial_seconds(model: Model, placement: Placement) -> float:
    """The sum of node and copy times of `placement` (each value copied once per device)."""
    total = sum(model.time(i, d) for i, d in enumerate(placement)) + run_overhead(model, placement)
    seen: set[tuple[int, str]] = set()
    for i, node in enumerate(model.nodes):
        for j in node.inputs:
            if placement[j] != placement[i] and (j, placement[i]) not in seen:
                seen.add((j, placement[i]))
                total += model.copy_seconds(placement[j], placement[i], model.nodes[j].nbytes)
    return total


def uniform(model: Model, device: str) -> Placement:
    """Every node on `device` where it may be, else on its first choice."""
    return [device if device in n.choices else n.choices[0] for n in model.nodes]


@dataclass
class SearchResult:
    placement: Placement
    seconds: float  # predicted
    evaluated: int  # predictions made


MIN_GAIN = 0.05
"""A placement across devices must be predicted this much faster than the best single device
(a fraction of its time) to be chosen: near-ties are within the measurement's noise. With the
executor's rules in `predict` (all-cpu, all-opencl and auto with either margin in one
interleaved run of bench/timing.py, load 0.7): resnet18's split, predicted 1.7% faster than
all-cpu, ran 3% slower; distilbert's, predicted 9.6% faster, ran 8% faster (the 10% margin
of the serial model had kept it on cpu)."""


def search(model: Model, devices: Sequence[str], budget: int, min_gain: float = MIN_GAIN) -> SearchResult:
    """The placement of least predicted time found within `budget` predictions, unless it is
    a split less than `min_gain` faster than the best single device."""
    uniforms = [(predict(model, p), k, p) for k, p in enumerate(uniform(model, d) for d in devices)]
    single_seconds, _, single = min(uniforms)
    scored = list(uniforms)
    if len(devices) == 2:
        cut = min_cut(model, devices[0], devices[1])
        scored.append((predict(model, cut), len(scored), cut))
    seconds, _, best = min(scored)
    result = SearchResult(best, seconds, len(scored))
    improve(model, devices, result, budget)
    if result.seconds > (1 - min_gain) * single_seconds:
        result.placement, result.seconds = single, single_seconds
    return result


def improve(model: Model, devices: Sequence[str], result: SearchResult, budget: int) -> None:
    """Moves of chains (grown to whole units), then of single units, each kept when the
    prediction improves; sweeps until a sweep keeps nothing or the budget is spent."""
    units = model.unit_list()
    unit_of = {i: k for k, unit in enumerate(units) for i in unit}
    moves: list[list[int]] = []
    for chain in chains(model):
        grown = sorted({i for node in chain for i in units[unit_of[node]]})
        if len(grown) > len(units[unit_of[chain[0]]]):
            moves.append(grown)
    moves += units
    moves = [m for m in moves if not all(model.nodes[i].pinned for i in m)]
    changed = True
    while changed and result.evaluated < budget:
        changed = False
        for move in moves:
            for device in devices:
                if result.evaluated >= budget:
                    return
                if all(result.placement[i] == device for i in move):
                    continue
                if any(device not in model.nodes[i].choices for i in move):
                    continue
                trial = list(result.placement)
                for i in move:
                    trial[i] = device
                seconds = predict(model, trial)
                result.evaluated += 1
                if seconds < result.seconds * (1 - 1e-9):
                    result.placement, result.seconds, changed = trial, seconds, True


def chains(model: Model) -> list[list[int]]:
    """Maximal chains of free nodes where each link is its successor's only input and its
    predecessor's only reader (a branch between a fork and a join)."""
    users = model.consumers()

    def links(i: int) -> int | None:
        if len(users[i]) != 1:
            return None
        j = users[i][0]
        ok = len(set(model.nodes[j].inputs)) == 1 and not model.nodes[j].pinned
        return j if ok else None

    found: list[list[int]] = []
    inner = {j for i in range(len(model.nodes)) if (j := links(i)) is not None}
    for i, node in enumerate(model.nodes):
        if i in inner or node.pinned or node.is_input:
            continue
        chain = [i]
        while (nxt := links(chain[-1])) is not None:
            chain.append(nxt)
        found.append(chain)
    return found


# --- The exact serial optimum for two devices: a minimum s-t cut ----------------------------


def min_cut(model: Model, a: str, b: str) -> Placement:
    """The placement on devices `a` (the source side) and `b` of least serial time, copies
    counted per edge (a value read on the other device by several nodes counts once per
    reader: the cut over-counts, never under-counts, such a value's copy)."""
    n = len(model.nodes)
    source, sink = n, n + 1
    flow = FlowGraph(n + 2)
    for i, node in enumerate(model.nodes):
        flow.add(source, i, terminal_seconds(model, i, b) if b in node.choices else INFINITE)  # cut: i on b
        flow.add(i, sink, terminal_seconds(model, i, a) if a in node.choices else INFINITE)  # cut: i on a
        for j in dict.fromkeys(node.inputs):
            nbytes = model.nodes[j].nbytes
            flow.add(j, i, model.copy_seconds(a, b, nbytes))  # j on a, i on b
            flow.add(i, j, model.copy_seconds(b, a, nbytes))  # j on b, i on a
    for unit in model.units:
        for i, j in zip(unit, unit[1:]):  # a fused group stays on one side
            flow.add(i, j, INFINITE)
            flow.add(j, i, INFINITE)
    on_source = flow.source_side(source, sink)
    return [a if i in on_source else b for i in range(n)]


def terminal_seconds(model: Model, i: int, device: str) -> float:
    """Node `i`'s time on `device`, with its input's write from the host or its result's
    read to the host."""
    node, seconds = model.nodes[i], model.time(i, device)
    if node.is_input:
        seconds += model.copy_seconds(model.host, device, node.nbytes)
    if node.is_output:
        seconds += model.copy_seconds(device, model.host, node.nbytes)
    return seconds


class FlowGraph:
    """Residual capacities of a small flow network; Edmonds-Karp max flow."""

    def __init__(self, size: int):
        self.capacity: list[dict[int, float]] = [{} for _ in range(size)]

    def add(self, u: int, v: int, capacity: float) -> None:
        self.capacity[u][v] = self.capacity[u].get(v, 0.0) + capacity
        self.capacity[v].setdefault(u, 0.0)

    def source_side(self, source: int, sink: int) -> set[int]:
        """The nodes reachable from `source` in the residual graph of a maximum flow."""
        while (path := self._augmenting_path(source, sink)) is not None:
            bottleneck = min(self.capacity[u][v] for u, v in path)
            if bottleneck == INFINITE:
                break  # an infinite path: the constraints cannot all hold; keep what we have
            for u, v in path:
                self.capacity[u][v] -= bottleneck
                self.capacity[v][u] += bottleneck
        return self._reachable(source)

    def _augmenting_path(self, source: int, sink: int) -> list[tuple[int, int]] | None:
        parent: dict[int, int] = {source: source}
        queue = deque([source])
        while queue:
            u = queue.popleft()
            for v, cap in self.capacity[u].items():
                if cap > 1e-15 and v not in parent:
                    parent[v] = u
                    if v == sink:
                        path: list[tuple[int, int]] = []
                        while v != source:
                            path.append((parent[v], v))
                            v = parent[v]
                        return path[::-1]
                    queue.append(v)
        return None

    def _reachable(self, source: int) -> set[int]:
        seen, queue = {source}, deque([source])
        while queue:
            u = queue.popleft()
            for v, cap in self.capacity[u].items():
                if cap > 1e-15 and v not in seen:
                    seen.add(v)
                    queue.append(v)
        return seen
