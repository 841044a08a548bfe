"""The Ray Serve deployment: one replica runs one artifact with `xrelay.runtime` alone.

A replica imports numpy, Ray Serve, Starlette and `xrelay.runtime` (never xDSL or the
compiler), so it is ready a fraction of a second after its process has Ray: `GET /` reports
the seconds it took to load the artifact, which compiler modules it holds (none), and how
requests reach it (`xrelay.serve.ingress`).

`POST /` takes an `.npz` of the named inputs (`xrelay.serve.payload`), checks it on its own,
and joins it to the next batch (`@serve.batch`, counted in rows, up to the max batch size,
waiting at most the batch wait; batches formed while another runs are joined into the next
run, `xrelay.serve.coalesce`); a batch runs as one `exe.run` on the replica's one run thread
and is split back per request. A request with more rows than the max batch runs alone
(the executable runs it in pieces). A bad request is a 400 with the runtime's message; an
error of the run itself is a 500 with its message; the replica lives on either way.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
from ray import serve
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

import xrelay.runtime
from xrelay.errors import ArtifactError, Error, InputError
from xrelay.serve import ingress
from xrelay.serve.coalesce import Coalescer
from xrelay.serve.payload import Model, concat, decode, describe, encode, named_outputs, rows, split

# Modules whose presence in a replica would mean it imported the compiler.
COMPILER_PACKAGES = ("xdsl", "onnx")
COMPILER_MODULES = ("xrelay.dialects", "xrelay.transforms", "xrelay.targets", "xrelay.driver", "xrelay.frontend")
NPZ = "application/octet-stream"
# No log line per request (Serve's access log costs each request as much as a small model's run).
QUIET: dict[str, object] = {"enable_access_log": False, "log_level": "WARNING"}
RECENT_RUNS = 1000
# The batches `@serve.batch` may hand over at once, to be joined while one runs (at most this
# many times the max batch size of requests are admitted to a replica).
COALESCED_BATCHES = 16  # the runs whose median `GET /` reports


def manifest_digest(path: str | Path) -> str:
    """The sha256 of an artifact's manifest, which holds the sha256 of each of its other files:
    it pins the artifact's whole contents."""
    try:
        return hashlib.sha256((Path(path) / "manifest.json").read_bytes()).hexdigest()
    except OSError as error:
        raise ArtifactError(f"{path}: cannot read the artifact's manifest.json: {error}") from error


def total_rows(requests: list[dict[str, np.ndarray]]) -> int:
    """A batch's size in rows (`@serve.batch`'s batch_size_fn)."""
    return sum(rows(r) for r in requests)


class BatchingReplica:
    """A replica's request handling around any `run` of a checked batch (`xrelay.runtime`'s
    here; the load test wraps onnxruntime in it too): `start` sets it up, `__call__` answers."""

    def start(
        self,
        model: Model,
        run: Callable[[dict[str, np.ndarray]], list[np.ndarray]],
        max_batch_size: int,
        batch_wait_s: float,
    ) -> None:
        self.model, self.run, self.max_batch_size = model, run, max_batch_size
        self.coalescer = Coalescer[dict[str, np.ndarray], list[np.ndarray]](self._run_requests, rows, max_batch_size)
        batching: Any = self.run_batch  # (serve.batch's setters are not in its types)
        batching.set_max_batch_size(max_batch_size)
        batching.set_batch_wait_timeout_s(batch_wait_s)
        self.runner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="xrelay-run")  # one run at a time
        self.batches, self.batch_rows, self.largest_rows = 0, 0, 0  # batches run, their rows, the most in one
        self.run_seconds: deque[float] = deque(maxlen=RECENT_RUNS)
        self.run_cpu_seconds: deque[float] = deque(maxlen=RECENT_RUNS)  # the run thread's CPU time in each
        self.run_thread_id: int | None = None  # its OS thread id (the load test attributes its CPU)
        self.ready_s = 0.0

    def info(self) -> dict[str, Any]:
        """What `GET /` answers: the model, the batching, how fast this replica started (its
        `ready_s`), and its recent runs."""
        runs, cpu = sorted(self.run_seconds), sorted(self.run_cpu_seconds)
        return {
            "inputs": {s.name: {"shape": list(s.shape), "dtype": str(s.dtype)} for s in self.model.inputs},
            "batch_sizes": list(self.model.batch_sizes),
            "max_batch_size": self.max_batch_size,
            "ready_seconds": self.ready_s,
            "batches": self.batches,
            "mean_batch_rows": self.batch_rows / self.batches if self.batches else 0.0,
            "largest_batch_rows": self.largest_rows,
            "median_run_seconds": runs[len(runs) // 2] if runs else None,
            "median_run_cpu_seconds": cpu[len(cpu) // 2] if cpu else None,
            "ingress": ingress.current(),
            "pid": os.getpid(),
            "run_thread_id": self.run_thread_id,
            "omp_thread_limit": os.environ.get("OMP_THREAD_LIMIT"),
            "compiler_modules": sorted(
                m for m in sys.modules if m.split(".")[0] in COMPILER_PACKAGES or m.startswith(COMPILER_MODULES)
            ),
        }

    async def __call__(self, request: Request) -> Response:
        if request.method == "GET":
            return JSONResponse(self.info())
        if request.method != "POST":
            return Response("POST an .npz of the inputs to /, or GET / for the model", status_code=405)
        try:
            inputs = decode(await request.body(), self.model)
        except InputError as error:
            return Response(str(error), status_code=400, media_type="text/plain")
        try:
            if self.model.batched and rows(inputs) <= self.max_batch_size:
                outputs = await self.run_batch(inputs)
            else:
                outputs = await self._run(inputs)
        except Error as error:  # the run's own failure, not the request's
            return Response(f"{type(error).__name__}: {error}", status_code=500, media_type="text/plain")
        return Response(encode(named_outputs(outputs)), media_type=NPZ)

    @serve.batch(  # pyright: ignore[reportUnknownMemberType]
        max_batch_size=1, batch_wait_timeout_s=0.0, batch_size_fn=total_rows, max_concurrent_batches=COALESCED_BATCHES
    )
    async def run_batch(self, requests: list[dict[str, np.ndarray]]) -> list[list[np.ndarray]]:
        """A batch `@serve.batch` formed, run with the others that wait (`xrelay.serve.coalesce`)."""
        return await self.coalescer(requests)

    async def _run_requests(self, requests: list[dict[str, np.ndarray]]) -> list[list[np.ndarray]]:
        """One run of the requests joined along axis 0, split back per request."""
        sizes = [rows(r) for r in requests]
        self.batches, self.batch_rows = self.batches + 1, self.batch_rows + sum(sizes)
        self.largest_rows = max(self.largest_rows, sum(sizes))
        outputs = await self._run(concat(requests))
        return split(outputs, sizes)

    async def _run(self, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
        """One run on the run thread; the event loop takes requests meanwhile."""
        return await asyncio.get_running_loop().run_in_executor(self.runner, self._timed_run, inputs)

    def _timed_run(self, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
        self.run_thread_id = threading.get_native_id()
        start, cpu = time.perf_counter(), time.thread_time()
        outputs = self.run(inputs)
        self.run_seconds.append(time.perf_counter() - start)
        self.run_cpu_seconds.append(time.thread_time() - cpu)
        return outputs


@serve.deployment(name="xrelay")  # pyright: ignore[reportUnknownMemberType]
class XrelayReplica(BatchingReplica):
    """One replica of an artifact. The server that deployed it has checked the artifact's
    signature (with its user's key, or was told to trust it) and passes the manifest's digest:
    the replica loads only those same bytes, so it needs neither the key nor the compiler."""

    def __init__(self, path: str, digest: str, max_batch_size: int, batch_wait_s: float):
        start = time.perf_counter()
        if manifest_digest(path) != digest:
            raise ArtifactError(
                f"{path} changed since the server checked its signature (manifest sha256 {digest}); restart the server"
            )
        exe = xrelay.runtime.load(path, trust=True)

        def run(inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
            result = exe.run(inputs)
            return list(result) if isinstance(result, tuple) else [result]

        self.start(describe(exe), run, max_batch_size, batch_wait_s)
        self.ready_s = time.perf_counter() - start  # loading the artifact, ready to run


def application(deployment: Any, replicas: int, threads: int, max_batch_size: int, *args: Any) -> Any:
    """`deployment` bound to its arguments, with `replicas` replicas of `threads` threads (and
    Ray CPUs) each, and room for the batches waiting while one runs."""
    count = str(threads)
    # The C kernels fix their OpenMP thread count when built (`num_threads(N)`); OMP_THREAD_LIMIT caps it.
    env = {"OMP_THREAD_LIMIT": count, "OMP_NUM_THREADS": count, "OPENBLAS_NUM_THREADS": count}
    return deployment.options(
        num_replicas=replicas,
        logging_config=QUIET,
        max_ongoing_requests=max(16, COALESCED_BATCHES * max_batch_size),
        ray_actor_options={"num_cpus": threads, "runtime_env": {"env_vars": env}},
    ).bind(*args)
