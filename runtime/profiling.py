"""
Profiles: what profiled runs did, node by node, and their timeline as a Chrome trace.

    prof = exe.profile(x, runs=10)
    print(prof)                  # per node min and median, copies and waits per device
    prof.save_trace("run.json")  # open in https://ui.perfetto.dev or chrome://tracing

The executor runs each profiled run as `run` does (nodes of different devices overlap) and
times each node: a host node on the host, a queued device's node by the device's own timing
(OpenCL profiling events), on one clock; it hands the spans here with what it knows of each node (`Step`). From them:
- per node: the min and median over the runs;
- per device pair: the copies of one run, their bytes, and their median time;
- per device: the median time it *waited* in a run, idle while other devices worked (the
  run's wall time minus the time of its kernels and of the copies to or from it);
- per pair of devices: the median time of a run both were busy at once (they overlap);
- the timeline: every node of every run as a complete ("X") event of the Chrome trace-event
  format, on one track per device (`tid` = device index; a copy is on its destination's
  track), with its shape, bytes and run number as arguments.

Plain Python: the runtime imports nothing of the compiler.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# (start, end) of one node in one run, in seconds since the first run began
Span = tuple[float, float]


@dataclass(frozen=True)
class Step:
    """One node as the profile shows it: where it ran, what it made, what it read."""

    node: int  # index in the graph's `nodes`
    name: str
    kind: str  # "kernel" or "copy"
    device: int  # device index (the copy's destination for a copy)
    label: str  # the device as the program names it, "opencl:1"
    shape: tuple[int, ...]
    dtype: str
    nbytes: int
    input_shapes: tuple[tuple[int, ...], ...]
    source: str | None = None  # a copy's source device, as `label`
    source_device: int | None = None  # and its index


@dataclass(frozen=True)
class NodeTiming:
    """A node's times over the profiled runs, in seconds."""

    step: Step
    min_seconds: float
    median_seconds: float


@dataclass
class Profile:
    """What `runs` profiled runs did: times per node, copies per device pair, waits and pools
    (`pool_bytes` with the params, `activation_bytes` the peak of a run's own tensors).

    `nodes` keeps the one-run form `(node, device, seconds)` with the median, in execution
    order; `timings` has the min and median and what each node is."""

    outputs: Any = None
    runs: int = 1
    nodes: list[tuple[str, str, float]] = field(default_factory=list[tuple[str, str, float]])
    timings: list[NodeTiming] = field(default_factory=list[NodeTiming])
    # (source device, destination device) -> (count, bytes) in one run
    copies: dict[tuple[str, str], tuple[int, int]] = field(default_factory=dict[tuple[str, str], tuple[int, int]])
    # (source device, destination device) -> median seconds of a run's copies
    copy_seconds: dict[tuple[str, str], float] = field(default_factory=dict[tuple[str, str], float])
    # device -> median seconds of a run it spent idle while other devices worked
    wait_seconds: dict[str, float] = field(default_factory=dict[str, float])
    # (device, device) -> median seconds of a run both were busy at once (devices that overlap)
    overlap_seconds: dict[tuple[str, str], float] = field(default_factory=dict[tuple[str, str], float])
    pool_bytes: dict[str, int] = field(default_factory=dict[str, int])  # workspace and shared params
    activation_bytes: dict[str, int] = field(default_factory=dict[str, int])  # the workspace alone
    total_seconds: float = 0.0  # median wall time of a run
    min_total_seconds: float = 0.0
    tracks: list[str] = field(default_factory=list[str])  # a name per device index
    spans: list[list[Span]] = field(default_factory=list[list[Span]])  # per run, per step

    @classmethod
    def of_runs(cls, steps: Sequence[Step], spans: list[list[Span]], labels: list[str], tracks: list[str]) -> Profile:
        """The profile of runs that took `spans[run][step]`, on devices named `labels` (as the
        program does) and `tracks` (with the physical device), by device index."""
        timings = [_timing(step, [run[i] for run in spans]) for i, step in enumerate(steps)]
        totals = [_wall(run) for run in spans]
        return cls(
            runs=len(spans),
            nodes=[(t.step.name, t.step.label, t.median_seconds) for t in timings],
            timings=timings,
            copies=_copy_counts(steps),
            copy_seconds=_copy_seconds(steps, spans),
            wait_seconds=_waits(steps, spans, labels),
            overlap_seconds=_overlaps(steps, spans, labels),
            total_seconds=statistics.median(totals),
            min_total_seconds=min(totals),
            tracks=tracks,
            spans=spans,
        )

    def __str__(self) -> str:
        lines = [f"{'node':<48} {'device':<10} {'min us':>10} {'median us':>10}"]
        for t in self.timings:
            row = f"{t.step.name[:48]:<48} {t.step.label:<10} {t.min_seconds * 1e6:>10.1f} {t.median_seconds * 1e6:>10.1f}"
            lines.append(row)
        lines.append(f"{'total':<48} {'':<10} {self.min_total_seconds * 1e6:>10.1f} {self.total_seconds * 1e6:>10.1f}")
        lines.append(f"(min and median over {self.runs} run{'s' if self.runs != 1 else ''})")
        for (src, dst), (count, nbytes) in self.copies.items():
            seconds = self.copy_seconds.get((src, dst), 0.0)
            lines.append(f"copies {src} -> {dst}: {count}, {nbytes} bytes, {seconds * 1e6:.1f} us")
        for dev, seconds in self.wait_seconds.items():
            lines.append(f"waited {dev}: {seconds * 1e6:.1f} us")
        for (a, b), seconds in self.overlap_seconds.items():
            lines.append(f"busy at once {a} and {b}: {seconds * 1e6:.1f} us")
        for dev, nbytes in self.pool_bytes.items():
            activations = self.activation_bytes.get(dev, nbytes)
            lines.append(f"pool {dev}: {nbytes} bytes, of which activations {activations} (a run's peak)")
        return "\n".join(lines)

    # --- the timeline ----------------------------------------------------------------------

    def trace_events(self) -> list[dict[str, Any]]:
        """The Chrome trace events: track names, then a complete event per node per run."""
        events: list[dict[str, Any]] = [{"name": "process_name", "ph": "M", "pid": 1, "args": {"name": "xrelay"}}]
        for tid, track in enumerate(self.tracks):
            events.append({"name": "thread_name", "ph": "M", "pid": 1, "tid": tid, "args": {"name": track}})
            events.append({"name": "thread_sort_index", "ph": "M", "pid": 1, "tid": tid, "args": {"sort_index": tid}})
        for run, spans in enumerate(self.spans):
            events += [_event(t.step, span, run) for t, span in zip(self.timings, spans)]
        return events

    def save_trace(self, path: str | Path) -> Path:
        """Writes the timeline as Chrome trace-event JSON (Perfetto, chrome://tracing), one
        event per line."""
        path = Path(path)
        events = ",\n".join("  " + json.dumps(e, separators=(",", ":")) for e in self.trace_events())
        other = json.dumps({"producer": "xrelay", "runs": self.runs})
        path.write_text(f'{{"traceEvents": [\n{events}\n],\n"displayTimeUnit": "ms",\n"otherData": {other}}}\n')
        return path


def _wall(run: list[Span]) -> float:
    """A run's wall time: from its first node's start to its last node's end (nodes of
    different devices overlap, so neither need be the first or last in order)."""
    return max(end for _, end in run) - min(start for start, _ in run) if run else 0.0


def _timing(step: Step, spans: list[Span]) -> NodeTiming:
    seconds = [end - start for start, end in spans]
    return NodeTiming(step, min(seconds), statistics.median(seconds))


def _copy_counts(steps: Sequence[Step]) -> dict[tuple[str, str], tuple[int, int]]:
    copies: dict[tuple[str, str], tuple[int, int]] = {}
    for step in steps:
        if step.source is not None:
            count, nbytes = copies.get((step.source, step.label), (0, 0))
            copies[(step.source, step.label)] = (count + 1, nbytes + step.nbytes)
    return copies


def _copy_seconds(steps: Sequence[Step], spans: list[list[Span]]) -> dict[tuple[str, str], float]:
    per_run: dict[tuple[str, str], list[float]] = {}
    for run in spans:
        totals: dict[tuple[str, str], float] = {}
        for step, (start, end) in zip(steps, run):
            if step.source is not None:
                totals[(step.source, step.label)] = totals.get((step.source, step.label), 0.0) + end - start
        for pair, seconds in totals.items():
            per_run.setdefault(pair, []).append(seconds)
    return {pair: statistics.median(seconds) for pair, seconds in per_run.items()}


def _waits(steps: Sequence[Step], spans: list[list[Span]], labels: list[str]) -> dict[str, float]:
    """Per device, the median over runs of the run's wall time minus the device's busy time
    (its kernels, and the copies to or from it)."""
    waits: dict[str, list[float]] = {label: [] for label in labels}
    for run in spans:
        wall = _wall(run)
        for device, label in enumerate(labels):
            busy = sum(
                end - start for step, (start, end) in zip(steps, run) if device in (step.device, step.source_device)
            )
            waits[label].append(max(wall - busy, 0.0))
    return {label: statistics.median(seconds) for label, seconds in waits.items()}


def _overlaps(steps: Sequence[Step], spans: list[list[Span]], labels: list[str]) -> dict[tuple[str, str], float]:
    """Per pair of devices that both ran nodes, the median over runs of the time both were
    busy at once (a node busies its device; a copy its destination's track)."""
    per_run: dict[tuple[str, str], list[float]] = {}
    for run in spans:
        busy: dict[int, list[Span]] = {}
        for step, span in zip(steps, run):
            busy.setdefault(step.device, []).append(span)
        devices = sorted(busy)
        for i, a in enumerate(devices):
            for b in devices[i + 1 :]:
                both = sum(max(0.0, min(e1, e2) - max(s1, s2)) for s1, e1 in busy[a] for s2, e2 in busy[b])
                per_run.setdefault((labels[a], labels[b]), []).append(both)
    return {pair: statistics.median(seconds) for pair, seconds in per_run.items()}


def _event(step: Step, span: Span, run: int) -> dict[str, Any]:
    start, end = span
    args: dict[str, Any] = {
        "node": step.node,
        "run": run,
        "device": step.label,
        "shape": list(step.shape),
        "dtype": step.dtype,
        "bytes": step.nbytes,
        "input_shapes": [list(s) for s in step.input_shapes],
    }
    if step.source is not None:
        args["src"], args["dst"] = step.source, step.label
    return {
        "name": step.name,
        "cat": step.kind,
        "ph": "X",
        "ts": round(start * 1e6, 3),
        "dur": round((end - start) * 1e6, 3),
        "pid": 1,
        "tid": step.device,
        "args": args,
    }
