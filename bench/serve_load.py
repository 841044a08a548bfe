"""A load test of `xrelay.serve` on 127.0.0.1: N concurrent clients of batch-1 requests against
the Ray Serve deployment of an artifact, with dynamic batching and without (max batch 1), and
the same deployment around an onnxruntime session, at 1 and 2 replicas of one thread each.

The load runs go round the configurations in shuffled rounds (`timing.round_orders`), so a
slow spell of this shared machine falls on all alike; the medians over the rounds are printed.
Each run deploys its configuration alone on one local Ray cluster, warms it and deletes it
after (idle replicas of the others would take Serve's CPU from it). Each run is bounded in requests and seconds; its clients
are threads with keep-alive HTTP connections, each sending one pre-encoded request after
another and keeping the answer's bytes: every answer is checked after the timed window (on 2
cores a check inside it would compete with Serve's proxy and replicas) against onnxruntime's on
the same input (rtol 1e-3, atol 1e-4), and one request in 25 is a bad one (float64 input), which
must be answered 400; the replicas' processes must be the same at the end (no crash). The
table reports the clients' CPU per request.

The cluster's ingress is HAProxy, as `python -m xrelay.serve` starts its own (`--ingress proxy`:
Ray Serve's Python proxy actor, Serve's default; `xrelay.serve.ingress`).

The goals are read against ceilings measured in the same run: the runtime alone (no Serve) per
sample at each batch size, xrelay and onnxruntime, and Serve alone (a replica that answers at
once, in the same shuffled rounds as the deployments).

Models: the MLP of bench/onnx_zoo.py, and ResNet-18 (/work/zoo-models/resnet18.onnx,
bench/zoo_export.py). The goals of issue 31 are checked at the end.

    make bench-setup   # (the bench and serve extras)
    .venv/bin/python bench/serve_load.py [--models mlp,resnet18] [--clients 16] [--rounds 3]
        [--seconds 5] [--requests 40000] [--batch-wait-ms 2] [--ingress haproxy|proxy] [--json out.json]
"""

from __future__ import annotations

import os

os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

import argparse
import http.client
import io
import json
import logging
import shutil
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import onnx
import onnx_zoo
from models import machine_info, machine_lines
from onnx_models import ort_session
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from timing import round_orders

import xrelay
from xrelay.errors import InputError
from xrelay.serve import ingress
from xrelay.serve.deployment import QUIET, BatchingReplica, XrelayReplica, application, manifest_digest
from xrelay.serve.payload import InputSpec, Model, encode

RESNET18 = Path("/work/zoo-models/resnet18.onnx")
BATCH_SIZES = (1, 4, 8, 16)
RTOL, ATOL = 1e-3, 1e-4
BAD_EVERY = 25  # one request in this many is a bad one
DISTINCT_INPUTS = 8


# --- the onnxruntime deployment (in the bench only) -------------------------------------------


class OrtReplica(BatchingReplica):
    """The same replica around an onnxruntime session of a model with a symbolic batch."""

    def __init__(self, onnx_path: str, max_batch_size: int, batch_wait_s: float):
        start = time.perf_counter()
        session = ort_session(onnx.load(onnx_path))
        specs = tuple(InputSpec(i.name, (1, *i.shape[1:]), np.dtype(np.float32)) for i in session.get_inputs())

        def run(inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
            return list(session.run(None, inputs))

        self.start(Model(specs, (max_batch_size,), lambda arrays: check_like_the_runtime(specs, arrays)), run,
                   max_batch_size, batch_wait_s)  # fmt: skip
        self.ready_s = time.perf_counter() - start


ECHO = b"ok"


class EchoReplica:
    """A replica that answers at once (no decode, no model): what Serve's proxy and replica
    cost per request alone, the ceiling of any deployment's throughput on this machine."""

    def __init__(self, bad: bytes):
        self.bad, self.ready_s = bad, 0.0

    async def __call__(self, request: Request) -> Response:
        if request.method == "GET":
            info = {"pid": os.getpid(), "ready_seconds": 0.0, "median_run_seconds": None, "mean_batch_rows": 0.0}
            return JSONResponse(info)
        body = await request.body()
        return Response("bad", status_code=400) if body == self.bad else Response(ECHO)


def check_like_the_runtime(specs: tuple[InputSpec, ...], arrays: Mapping[str, np.ndarray]) -> None:
    """Names, per-sample shapes and dtypes, as xrelay's runtime checks them."""
    if set(arrays) != {s.name for s in specs}:
        raise InputError(f"the program takes inputs {', '.join(s.name for s in specs)}")
    for s in specs:
        a = arrays[s.name]
        if a.ndim != len(s.shape) or a.shape[1:] != s.shape[1:] or a.shape[0] < 1:
            raise InputError(f"input {s.name} must have shape [N, {', '.join(map(str, s.shape[1:]))}]")
        if a.dtype != s.dtype:
            raise InputError(f"input {s.name} must have dtype {s.dtype}, but has dtype {a.dtype}")


# --- the models ---------------------------------------------------------------------------------


@dataclass
class Prepared:
    """A model as both deployments take it, and the inputs and answers of the load."""

    name: str
    artifact: Path
    onnx_path: Path
    bodies: list[bytes]  # batch-1 requests
    expected: list[np.ndarray]  # onnxruntime's output_0 for each
    bad: bytes
    build_s: float


def symbolic_batch(proto: onnx.ModelProto) -> onnx.ModelProto:
    """The model with its inputs' and outputs' leading dim symbolic, for onnxruntime's batches."""
    for value in [*proto.graph.input, *proto.graph.output]:
        dim = value.type.tensor_type.shape.dim[0]
        dim.ClearField("dim_value")
        dim.dim_param = "N"
    return proto


def prepare(name: str, root: Path) -> Prepared:
    proto = onnx_zoo.mlp(batch=1) if name == "mlp" else onnx.load(str(RESNET18))
    start = time.perf_counter()
    module, params = xrelay.from_onnx(proto)
    exe = xrelay.build(module, targets=("c",), params=params, num_threads=1, batch_sizes=BATCH_SIZES)
    build_s = time.perf_counter() - start
    artifact, onnx_path = root / f"{name}.xrelay", root / f"{name}.onnx"
    exe.save(artifact)
    onnx.save(symbolic_batch(proto), str(onnx_path))
    session = ort_session(onnx.load(str(onnx_path)))
    rng = np.random.default_rng(0)
    specs = session.get_inputs()
    inputs = [
        {i.name: rng.standard_normal((1, *i.shape[1:])).astype(np.float32) for i in specs}
        for _ in range(DISTINCT_INPUTS)
    ]
    expected = [np.asarray(session.run(None, x)[0]) for x in inputs]
    bad = encode({i.name: np.zeros((1, *i.shape[1:]), np.float64) for i in specs})
    return Prepared(name, artifact, onnx_path, [encode(x) for x in inputs], expected, bad, build_s)


# --- the load -----------------------------------------------------------------------------------


@dataclass
class Run:
    """One load run against one route: the answers are kept as bytes in the timed window and
    checked after it, so the clients' own work stays small while the clock runs."""

    config: str
    seconds: float
    latencies: list[float] = field(default_factory=list)  # of the good requests
    wrong: int = 0  # a good request answered wrongly, or not 200; a bad one not 400
    bad_answered: int = 0
    client_cpu_s: float = 0.0  # this process's CPU time in the window (the clients' cost)
    thread_cpu_s: dict[Task, float] = field(default_factory=dict)  # every thread's CPU time in the window

    @property
    def throughput(self) -> float:
        return len(self.latencies) / self.seconds

    @property
    def client_cpu_ms_per_request(self) -> float:
        return 1000 * self.client_cpu_s / max(1, len(self.latencies) + self.bad_answered)

    def percentile(self, q: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


Answer = tuple[int, int, bytes]  # request index, HTTP status, body


def load(port: int, route: str, model: Prepared, clients: int, seconds: float, requests: int,
         check: Callable[[int, bytes], bool] | None = None) -> Run:  # fmt: skip
    """`clients` threads sending pre-encoded requests one after another until `requests` in all
    or `seconds`; every answer is checked after the window (`check`, by default against
    onnxruntime's output)."""
    run = Run(route, seconds)
    lock, counter = threading.Lock(), iter(range(requests))
    answers: list[Answer] = []
    deadline = time.perf_counter() + seconds

    def client() -> None:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        mine: list[Answer] = []
        took: list[float] = []
        while time.perf_counter() < deadline:
            with lock:
                i = next(counter, None)
            if i is None:
                break
            bad = i % BAD_EVERY == BAD_EVERY - 1
            body = model.bad if bad else model.bodies[i % len(model.bodies)]
            start = time.perf_counter()
            connection.request("POST", route, body=body)
            response = connection.getresponse()
            mine.append((i, response.status, response.read()))
            if not bad:
                took.append(time.perf_counter() - start)
        connection.close()
        with lock:
            answers.extend(mine)
            run.latencies.extend(took)

    before = thread_cpu()
    cpu, start = time.process_time(), time.perf_counter()
    threads = [threading.Thread(target=client) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    run.seconds = time.perf_counter() - start
    run.client_cpu_s = time.process_time() - cpu
    after = thread_cpu()
    run.thread_cpu_s = {task: seconds - before.get(task, 0.0) for task, seconds in after.items()}
    good = check or (lambda i, answer: correct(answer, model.expected[i % len(model.bodies)]))
    for i, status, answer in answers:
        if i % BAD_EVERY == BAD_EVERY - 1:
            run.bad_answered += 1
            run.wrong += status != 400
        else:
            run.wrong += status != 200 or not good(i, answer)
    return run


# --- where the CPU went -------------------------------------------------------------------------

Task = tuple[int, int]  # (pid, tid)
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
RUN, REQUESTS, IDLE, INGRESS, CLIENTS, RAY, OTHER = (
    "run thread", "its other threads", "idle replicas", "ingress", "load generator", "Ray, other", "other load",
)  # fmt: skip
CPU_KINDS = (RUN, REQUESTS, IDLE, INGRESS, CLIENTS, RAY, OTHER)  # (the first two: the replicas under load)


def thread_cpu() -> dict[Task, float]:
    """The CPU seconds (user + system) of every thread on this machine, from /proc (in ticks of
    1 / SC_CLK_TCK s: 10 ms, against load runs of seconds)."""
    out: dict[Task, float] = {}
    for stat in Path("/proc").glob("[0-9]*/task/[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:  # (a thread that ended)
            continue
        fields = text[text.rindex(")") + 2 :].split()  # fields 3... of proc(5): utime, stime are 14, 15
        out[(int(stat.parts[2]), int(stat.parts[4]))] = (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
    return out


def cpu_kind(task: Task, run_threads: set[int], loaded: set[int], scratch: str, kinds: dict[int, str]) -> str:
    """Which of CPU_KINDS a thread is: of a replica under load (pid in `loaded`; its run thread
    in `run_threads`), or by its process's title (Ray names its actors' processes; HAProxy's
    names its configuration in this run's scratch directory: a reloaded HAProxy is no longer
    this process's descendant: `scratch`)."""
    pid, tid = task
    if pid in loaded:
        return RUN if tid in run_threads else REQUESTS
    if pid not in kinds:
        try:
            title = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            title = ""
        kinds[pid] = (
            INGRESS if scratch in title
            else OTHER if not descends_from_this(pid)  # (another user's Ray, say)
            else IDLE if "ServeReplica" in title
            else INGRESS if "ProxyActor" in title or "haproxy" in title
            else RAY if "ray" in title
            else OTHER
        )  # fmt: skip
    return kinds[pid]


def descends_from_this(pid: int) -> bool:
    """Whether process `pid` is this one's child, grandchild, ... (the Ray cluster it started)."""
    while pid > 1:
        try:
            text = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return False
        pid = int(text[text.rindex(")") + 2 :].split()[1])  # field 4: the parent
        if pid == os.getpid():
            return True
    return False


def cpu_cores(run: Run, run_threads: set[int], loaded: set[int], scratch: str) -> dict[str, float]:
    """The cores (CPU seconds per second of the run) each of CPU_KINDS took during `run` (the
    load generator's from this process's CPU time: its client threads end before the count)."""
    cores: dict[str, float] = dict.fromkeys(CPU_KINDS, 0.0)
    kinds: dict[int, str] = {}
    for task, seconds in run.thread_cpu_s.items():
        if task[0] != os.getpid():
            cores[cpu_kind(task, run_threads, loaded, scratch, kinds)] += seconds / run.seconds
    cores[CLIENTS] = run.client_cpu_s / run.seconds
    return cores


def correct(answer: bytes, expected: np.ndarray) -> bool:
    try:
        with np.load(io.BytesIO(answer), allow_pickle=False) as npz:
            out = npz["output_0"]
    except (ValueError, OSError, KeyError):  # not an .npz of output_0: a wrong answer
        return False
    return out.shape == expected.shape and bool(np.allclose(out, expected, rtol=RTOL, atol=ATOL))


def replica_infos(port: int, route: str, replicas: int, timeout_s: float = 60.0) -> list[dict[str, Any]]:
    """`GET` answers of every replica of a route: until each of `replicas` pids answered (HAProxy
    may take a moment to add a new replica to its backends)."""
    found: dict[int, dict[str, Any]] = {}
    deadline = time.perf_counter() + timeout_s
    while len(found) < replicas:
        if time.perf_counter() > deadline:
            raise RuntimeError(f"{route}: {len(found)} of {replicas} replicas answered GET within {timeout_s:g} s")
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{route}", timeout=30) as response:
            info = json.loads(response.read())
        found[info["pid"]] = info
        if len(found) < replicas:
            time.sleep(0.01)
    return list(found.values())


# --- the ceilings -------------------------------------------------------------------------------


@dataclass
class Ceiling:
    """The runtime alone (no Serve, no HTTP) at a batch of n: median ms per sample."""

    model: str
    n: int
    xrelay_ms: float
    onnxruntime_ms: float


def ceilings(model: Prepared, rounds: int) -> list[Ceiling]:
    """xrelay's runtime and onnxruntime, 1 thread each, at every batch size, interleaved in
    shuffled rounds in this process (before the cluster starts): what batching can gain at most."""
    import xrelay.runtime

    exe = xrelay.runtime.load(model.artifact, trust=True)
    session = ort_session(onnx.load(str(model.onnx_path)))
    rng = np.random.default_rng(1)
    inputs = {
        n: {i.name: rng.standard_normal((n, *i.shape[1:])).astype(np.float32) for i in session.get_inputs()}
        for n in BATCH_SIZES
    }
    runners: dict[str, Callable[[], object]] = {}
    for n, x in inputs.items():
        runners[f"xrelay {n}"] = lambda x=x: exe.run(x)
        runners[f"onnxruntime {n}"] = lambda x=x: session.run(None, x)
    for run in runners.values():  # warm: workspaces, first-call costs
        run()
    times: dict[str, list[float]] = {name: [] for name in runners}
    for order in round_orders(list(runners), rounds):
        for name in order:
            start = time.perf_counter()
            runners[name]()
            times[name].append(time.perf_counter() - start)
    per = {name: 1000 * statistics.median(t) / int(name.split()[-1]) for name, t in times.items()}
    return [Ceiling(model.name, n, per[f"xrelay {n}"], per[f"onnxruntime {n}"]) for n in BATCH_SIZES]


def ceiling_table(rows: list[Ceiling], echo: list[Result]) -> str:
    """The ceilings as req/s on one core: 1000 / (ms per sample), and Serve's own with no model."""
    head = (
        "| model | n | xrelay ms/sample | req/s | vs n=1 | onnxruntime ms/sample | req/s | vs n=1 | xrelay/ORT speed |"
    )
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    first = {r.model: r for r in rows if r.n == BATCH_SIZES[0]}
    for r in rows:
        f = first[r.model]
        lines.append(f"| {r.model} | {r.n} | {r.xrelay_ms:.3f} | {1000 / r.xrelay_ms:.0f} | {f.xrelay_ms / r.xrelay_ms:.2f}x | "
                     f"{r.onnxruntime_ms:.3f} | {1000 / r.onnxruntime_ms:.0f} | {f.onnxruntime_ms / r.onnxruntime_ms:.2f}x | "
                     f"{r.onnxruntime_ms / r.xrelay_ms:.2f} |")  # fmt: skip
    for e in echo:
        lines.append(f"serve alone (a replica that answers at once, {e.model}'s request bodies): {e.throughput:.0f} req/s, "
                     f"p50 {e.p50_ms:.1f} ms; the load generator took {e.client_cpu_ms:.2f} ms CPU per request")  # fmt: skip
    return "\n".join(lines)


# --- the configurations -------------------------------------------------------------------------


@dataclass(frozen=True)
class Config:
    engine: str  # xrelay or onnxruntime
    batched: bool
    replicas: int

    @property
    def name(self) -> str:
        if self.engine == "echo":
            return f"serve alone (echo) x{self.replicas}"
        return f"{self.engine} {'batched' if self.batched else 'max batch 1'} x{self.replicas}"

    def route(self, model: str) -> str:
        return f"/{model}-{self.engine}-{'b' if self.batched else 'u'}{self.replicas}"


def configs(replicas: list[int]) -> list[Config]:
    engines = [Config(e, b, r) for r in replicas for e in ("xrelay", "onnxruntime") for b in (True, False)]
    return [*engines, Config("echo", False, 1)]


def deploy(model: Prepared, c: Config, wait_s: float) -> None:
    from ray import serve

    max_batch = max(BATCH_SIZES) if c.batched else 1
    if c.engine == "echo":
        echo = serve.deployment(name="echo")(EchoReplica)
        app = application(echo, c.replicas, 1, 1, model.bad)
    elif c.engine == "xrelay":
        args: tuple[Any, ...] = (str(model.artifact), manifest_digest(model.artifact), max_batch, wait_s)
        app = application(XrelayReplica, c.replicas, 1, max_batch, *args)
    else:
        deployment = serve.deployment(name="onnxruntime")(OrtReplica)
        app = application(deployment, c.replicas, 1, max_batch, str(model.onnx_path), max_batch, wait_s)
    serve.run(app, name=c.route(model.name)[1:], route_prefix=c.route(model.name))


@dataclass
class Measured:
    """One load run of a configuration, and its replicas' `GET /` answers after it."""

    run: Run
    infos: list[dict[str, Any]]
    same_pids: bool  # the replicas that answered after the run are those before it (no crash)


def measure_one(model: Prepared, c: Config, args: argparse.Namespace, port: int) -> Measured:
    """Deploys `c` alone, warms its replicas (workspaces for the batch sizes they meet), runs
    the load, reads the replicas and deletes the deployment."""
    from ray import serve

    route = c.route(model.name)
    check = (lambda i, answer: answer == ECHO) if c.engine == "echo" else None
    deploy(model, c, args.batch_wait_ms / 1000)
    pids = {i["pid"] for i in replica_infos(port, route, c.replicas)}
    load(port, route, model, args.clients, min(args.seconds, 2.0), 4 * args.clients, check)
    run = load(port, route, model, args.clients, args.seconds, args.requests, check)
    infos = replica_infos(port, route, c.replicas)
    serve.delete(route[1:])
    return Measured(run, infos, {i["pid"] for i in infos} == pids)


# --- the report ---------------------------------------------------------------------------------


@dataclass
class Result:
    model: str
    config: str
    throughput: float  # median over rounds, requests/s
    p50_ms: float
    p99_ms: float
    wrong: int
    bad_answered: int
    good: int
    ready_s: float
    median_run_ms: float | None
    median_run_cpu_ms: float | None  # the run thread's CPU time in a run (below run ms: it waited for a core)
    mean_batch_rows: float
    same_pids: bool
    client_cpu_ms: float  # the load generator's CPU per request, in the median run
    cores: dict[str, float]  # the cores each of CPU_KINDS took in the median run


def measure(model: Prepared, args: argparse.Namespace, port: int) -> list[Result]:
    chosen = configs(args.replicas)
    measured: dict[Config, list[Measured]] = {c: [] for c in chosen}
    names = {c.name: c for c in chosen}
    for order in round_orders(list(names), args.rounds):
        for name in order:
            c = names[name]
            measured[c].append(measure_one(model, c, args, port))
            print(f"  {model.name} {name}: {measured[c][-1].run.throughput:.1f} req/s", file=sys.stderr, flush=True)
    results = []
    for c in chosen:
        runs = [m.run for m in measured[c]]
        median = sorted(measured[c], key=lambda m: m.run.throughput)[len(runs) // 2]
        best, infos = median.run, median.infos
        run_threads = {i["run_thread_id"] for i in infos if i.get("run_thread_id")}
        run_ms = [i["median_run_seconds"] * 1000 for i in infos if i["median_run_seconds"] is not None]
        cpu_ms = [i["median_run_cpu_seconds"] * 1000 for i in infos if i.get("median_run_cpu_seconds") is not None]
        results.append(Result(
            model.name, c.name, best.throughput, best.percentile(0.5) * 1000, best.percentile(0.99) * 1000,
            sum(r.wrong for r in runs), sum(r.bad_answered for r in runs), sum(len(r.latencies) for r in runs),
            max(i["ready_seconds"] for m in measured[c] for i in m.infos), statistics.median(run_ms) if run_ms else None,
            statistics.median(cpu_ms) if cpu_ms else None,
            statistics.mean(i["mean_batch_rows"] for i in infos), all(m.same_pids for m in measured[c]),
            best.client_cpu_ms_per_request, cpu_cores(best, run_threads, {i["pid"] for i in infos}, str(args.scratch)),
        ))  # fmt: skip
    return results


def table(results: list[Result]) -> str:
    head = "| model | deployment | req/s | p50 ms | p99 ms | batch run ms | its CPU ms | rows/batch | ready s | wrong | bad->400 | crashes | client CPU ms/req |"
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in results:
        run = f"{r.median_run_ms:.1f}" if r.median_run_ms is not None else "-"
        cpu = f"{r.median_run_cpu_ms:.1f}" if r.median_run_cpu_ms is not None else "-"
        lines.append(f"| {r.model} | {r.config} | {r.throughput:.1f} | {r.p50_ms:.1f} | {r.p99_ms:.1f} | {run} | {cpu} | "
                     f"{r.mean_batch_rows:.1f} | {r.ready_s:.3f} | {r.wrong} | {r.bad_answered} | "
                     f"{'0' if r.same_pids else 'yes'} | {r.client_cpu_ms:.2f} |")  # fmt: skip
    return "\n".join(lines)


def cpu_table(results: list[Result]) -> str:
    """Where the machine's CPU went in each median run, in cores (of os.cpu_count())."""
    head = f"| model | deployment | {' | '.join(CPU_KINDS)} | all |"
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in results:
        cells = " | ".join(f"{r.cores[k]:.2f}" for k in CPU_KINDS)
        lines.append(f"| {r.model} | {r.config} | {cells} | {sum(r.cores.values()):.2f} |")
    return "\n".join(lines)


def goals(results: list[Result], wait_ms: float) -> list[str]:
    """Issue 31's goals, each with its measured number and PASS or MISS."""
    by = {(r.model, r.config): r for r in results}
    lines: list[str] = []

    def goal(text: str, value: float, ok: bool) -> None:
        lines.append(f"- {'PASS' if ok else 'MISS'} {text}: {value:.2f}")

    for model in dict.fromkeys(r.model for r in results):
        x1, u1 = by.get((model, "xrelay batched x1")), by.get((model, "xrelay max batch 1 x1"))
        o1, x2 = by.get((model, "onnxruntime batched x1")), by.get((model, "xrelay batched x2"))
        ou1, u2 = by.get((model, "onnxruntime max batch 1 x1")), by.get((model, "xrelay max batch 1 x2"))
        if x1 and u1:
            goal(
                f"{model}: batched / unbatched throughput >= 3",
                x1.throughput / u1.throughput,
                x1.throughput >= 3 * u1.throughput,
            )
        if x1 and o1:
            goal(
                f"{model}: xrelay / onnxruntime throughput, batched, 1 replica >= 1",
                x1.throughput / o1.throughput,
                x1.throughput >= o1.throughput,
            )
        if u1 and ou1:
            goal(
                f"{model}: xrelay / onnxruntime throughput, max batch 1, 1 replica >= 1",
                u1.throughput / ou1.throughput,
                u1.throughput >= ou1.throughput,
            )
        if x1 and x1.median_run_ms is not None:
            bound = 2 * (x1.median_run_ms + wait_ms)
            goal(
                f"{model}: batched p99 / 2x(batch run {x1.median_run_ms:.1f} ms + wait {wait_ms:g} ms) <= 1",
                x1.p99_ms / bound,
                x1.p99_ms <= bound,
            )
        for one, two in ((x1, x2), (u1, u2)):
            if one and two:
                goal(
                    f"{model}: {two.config} / {one.config} throughput >= 1.6",
                    two.throughput / one.throughput,
                    two.throughput >= 1.6 * one.throughput,
                )
    xrelay = [r for r in results if r.config.startswith("xrelay")]
    if xrelay:
        slowest = max(r.ready_s for r in xrelay)
        goal("slowest xrelay replica's load, seconds <= 1", slowest, slowest <= 1.0)
    wrong, crashed = sum(r.wrong for r in results), sum(not r.same_pids for r in results)
    goal(
        f"wrong answers ({sum(r.good + r.bad_answered for r in results)} answers, bad requests included) == 0",
        wrong,
        wrong == 0,
    )
    goal("replica crashes == 0", crashed, crashed == 0)
    return lines


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--models", default="mlp,resnet18")
    p.add_argument("--clients", type=int, default=16)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--seconds", type=float, default=5.0, help="at most this long per load run")
    p.add_argument("--requests", type=int, default=40000, help="at most this many requests per load run")
    p.add_argument("--replicas", default="1,2")
    p.add_argument("--batch-wait-ms", type=float, default=2.0)
    p.add_argument("--ceiling-rounds", type=int, default=9, help="rounds of the runtime-alone ceilings")
    p.add_argument("--ingress", choices=ingress.INGRESSES, default=ingress.HAPROXY)
    p.add_argument("--json", type=Path, default=None)
    args = p.parse_args()
    args.replicas = [int(r) for r in args.replicas.split(",")]

    import ray
    from ray import serve

    machine = machine_info()
    print("\n".join(machine_lines(machine)))
    results: list[Result] = []
    with tempfile.TemporaryDirectory() as tmp:
        names = args.models.split(",")
        if "resnet18" in names and not RESNET18.exists():
            print(f"no {RESNET18} (bench/zoo_export.py writes it): ResNet-18 left out")
            names.remove("resnet18")
        prepared = [prepare(name, Path(tmp)) for name in names]
        limits: list[Ceiling] = []
        for m in prepared:
            print(f"{m.name}: built for batch sizes {BATCH_SIZES} in {m.build_s:.1f} s", flush=True)
            limits += ceilings(m, args.ceiling_rounds)
            print(f"load average after {m.name}'s ceilings: {loadavg()}", flush=True)
        scratch = args.scratch = ingress.scratch_directory()
        os.environ.update(ingress.environment(args.ingress, scratch))  # (the cluster's processes inherit it)
        # a logical CPU for each replica deployed at once, and the echo one (idle ones take none of the 2 cores)
        ray.init(num_cpus=4 * sum(args.replicas) + 1, include_dashboard=False, object_store_memory=256 << 20,
                 logging_level=logging.ERROR, log_to_driver=False)  # fmt: skip
        port = free_port()
        serve.start(http_options={"host": "127.0.0.1", "port": port}, logging_config=QUIET)
        try:
            for m in prepared:
                print(f"load average before {m.name}: {loadavg()}", flush=True)
                results += measure(m, args, port)
        finally:
            serve.shutdown()
            ray.shutdown()
            shutil.rmtree(scratch, ignore_errors=True)
    print(f"load average after: {loadavg()}")
    print(f"ingress: {args.ingress}; {args.clients} clients of batch-1 requests, batch wait {args.batch_wait_ms:g} ms, batch sizes {BATCH_SIZES}, "
          f"medians of {args.rounds} rounds of <= {args.seconds:g} s / {args.requests} requests, 1 thread per replica")  # fmt: skip
    print("Ceilings: the runtime alone, 1 thread, batch of n (medians of shuffled rounds), and Serve alone")
    print(ceiling_table(limits, [r for r in results if r.config.startswith("serve alone")]))
    print(table(results))
    print(
        f"Where the CPU went in each median run, in cores of {os.cpu_count()} (from /proc; the first two: the replicas under load)"
    )
    print(cpu_table(results))
    print("\n".join(goals(results, args.batch_wait_ms)))
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "machine": machine,
                    "ingress": args.ingress,
                    "ceilings": [asdict(c) for c in limits],
                    "results": [asdict(r) for r in results],
                },
                indent=1,
            )
        )


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def loadavg() -> str:
    return Path("/proc/loadavg").read_text().strip()


if __name__ == "__main__":
    main()
