"""`python -m xrelay.serve MODEL.xrelay --host H --port P [--replicas R] [--max-batch-size B]
[--batch-wait-ms W] [--address RAY_ADDRESS | --ingress haproxy|proxy] [--threads N] [--trust]`:
serves an artifact on Ray Serve until Ctrl-C or SIGTERM (see `xrelay.serve`)."""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import signal
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import xrelay.runtime
from xrelay.errors import ArtifactError, Error, UsageError
from xrelay.serve import ingress
from xrelay.serve.payload import Model, describe

APP_NAME = "xrelay"


@dataclass(frozen=True)
class Plan:
    """A deployment to start: the artifact, and how it is replicated and batched."""

    path: str
    digest: str
    model: Model
    replicas: int
    max_batch_size: int
    batch_wait_s: float
    threads: int


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m xrelay.serve", description="Serve an xrelay artifact on Ray Serve.")
    p.add_argument("model", help="the artifact (a directory saved by Executable.save)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="port to listen on (default 8000)")
    p.add_argument("--replicas", type=int, default=1, help="replicas of the model (default 1)")
    p.add_argument(
        "--max-batch-size", type=int, default=None, help="rows per batch (default: the artifact's largest batch size)"
    )
    p.add_argument("--batch-wait-ms", type=float, default=2.0, help="longest wait for a batch to fill (default 2)")
    p.add_argument("--address", default=None, help="join this Ray cluster (e.g. 'auto') instead of starting one")
    p.add_argument(
        "--ingress",
        choices=ingress.INGRESSES,
        default=None,
        help="how requests reach the replicas of the cluster this starts: HAProxy straight to each replica "
        "(default), or Ray Serve's Python proxy; a cluster joined with --address keeps its own",
    )
    p.add_argument("--threads", type=int, default=1, help="threads (and Ray CPUs) per replica (default 1)")
    p.add_argument("--trust", action="store_true", help="serve an artifact not signed under this user's key")
    return p.parse_args(argv)


def make_plan(args: argparse.Namespace) -> Plan:
    """Checks the artifact (its signature under this user's key unless --trust) and the options."""
    from xrelay.serve.deployment import manifest_digest  # (imports Ray)

    # The digest first: if the artifact changed between it and the signature check, the replicas
    # refuse what they find, rather than load bytes nobody checked.
    digest = manifest_digest(args.model)
    try:
        exe = xrelay.runtime.load(args.model, trust=args.trust)
    except ArtifactError as error:
        if "trust=True" not in str(error):
            raise
        raise ArtifactError(f"{error} (here: --trust)") from None
    model = describe(exe)
    for name in ("replicas", "threads"):
        if getattr(args, name) < 1:
            raise UsageError(f"--{name} must be at least 1, but is {getattr(args, name)}")
    if args.address is not None and args.ingress is not None:
        raise UsageError(
            "--ingress chooses the ingress of a cluster this command starts; a cluster joined with --address "
            "keeps the one it was started with (for HAProxy, start it with "
            + " ".join(f"{k}={v}" for k, v in ingress.HAPROXY_SETTINGS.items())
            + " ray start --head)"
        )
    if args.batch_wait_ms < 0:
        raise UsageError(f"--batch-wait-ms must be >= 0, but is {args.batch_wait_ms}")
    largest = model.largest_batch if model.batched else 1
    max_batch = largest if args.max_batch_size is None else args.max_batch_size
    if max_batch < 1 or (not model.batched and max_batch != 1):
        raise UsageError(
            "--max-batch-size must be at least 1"
            + ("" if model.batched else " and is 1 for an artifact built without batch_sizes (each request runs alone)")
            + f", but is {max_batch}"
        )
    return Plan(args.model, digest, model, args.replicas, max_batch, args.batch_wait_ms / 1000, args.threads)


def deploy(plan: Plan, host: str, port: int, name: str = APP_NAME, route_prefix: str = "/") -> None:
    """Starts Serve's HTTP proxy on host:port (unless Serve runs already on the cluster) and the
    replicas of application `name` at `route_prefix`; returns when they are ready."""
    from ray import serve

    from xrelay.serve.deployment import QUIET, XrelayReplica, application

    serve.start(http_options={"host": host, "port": port}, logging_config=QUIET)  # pyright: ignore[reportUnknownMemberType]
    args = (os.path.abspath(plan.path), plan.digest, plan.max_batch_size, plan.batch_wait_s)
    app = application(XrelayReplica, plan.replicas, plan.threads, plan.max_batch_size, *args)
    serve.run(app, name=name, route_prefix=route_prefix)  # pyright: ignore[reportUnknownMemberType]


def start_ray(address: str | None, cpus_needed: int, ingress_kind: str, scratch: Path) -> None:
    """Joins the cluster at `address`, or starts a local one with `ingress_kind` (HAProxy's files
    in `scratch`) and enough CPUs for the replicas (more than the machine's cores only when
    asked for more)."""
    import ray

    if address is not None:
        ray.init(address=address, logging_level=logging.WARNING)  # pyright: ignore[reportUnknownMemberType]
        return
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # (Ray's usage report, unless asked for)
    os.environ.update(ingress.environment(ingress_kind, scratch))  # (the cluster's processes inherit it)
    cores = os.cpu_count() or 1
    if cpus_needed > cores:
        print(f"warning: {cpus_needed} replica threads on {cores} cores: they will share them", file=sys.stderr)
    ray.init(  # pyright: ignore[reportUnknownMemberType]
        num_cpus=max(cores, cpus_needed),
        include_dashboard=False,
        object_store_memory=256 << 20,
        logging_level=logging.WARNING,
    )


def stop_on_signals() -> list[int]:
    """A list that SIGINT and SIGTERM append to from now on. (A plain list: an Event set by a
    signal handler can deadlock with the same thread's wait on it.)"""
    stopped: list[int] = []

    def handler(signum: int, frame: Any) -> None:
        stopped.append(signum)

    signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGTERM, handler)
    return stopped


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        plan = make_plan(args)
    except Error as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    start = time.perf_counter()
    scratch = ingress.scratch_directory()  # (HAProxy's files, if it starts a cluster)
    try:
        start_ray(args.address, plan.replicas * plan.threads, args.ingress or ingress.HAPROXY, scratch)
        return serve_until_stopped(plan, args, start)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def serve_until_stopped(plan: Plan, args: argparse.Namespace, start: float) -> int:
    """Deploys `plan` on the cluster this process is connected to and serves until SIGINT or
    SIGTERM; then deletes the application, and stops Serve and the cluster if it started them."""
    import ray
    from ray import serve

    stopped = stop_on_signals()  # (after ray.init, which sets a SIGTERM handler of its own)
    deployed = False
    try:
        try:
            deploy(plan, args.host, args.port)
        except Exception as error:  # Ray's own (a replica that failed to start, a port in use, ...)
            cause = [line for line in str(error).splitlines() if line.strip()][-1:] or [type(error).__name__]
            print(f"error: deploying {plan.path} failed: {cause[0].strip()}", file=sys.stderr)  # (Ray's last line)
            return 1
        deployed = True
        batching = f"batches of up to {plan.max_batch_size} rows, waiting {plan.batch_wait_s * 1000:g} ms"
        print(
            f"serving {plan.path} at http://{args.host}:{args.port}/ ({plan.replicas} replica(s) of "
            f"{plan.threads} thread(s), {batching}; ready in {time.perf_counter() - start:.1f} s); Ctrl-C stops",
            flush=True,
        )
        while not stopped:
            time.sleep(0.2)
    finally:
        print("shutting down", file=sys.stderr, flush=True)
        if deployed:
            serve.delete(APP_NAME)  # on a shared cluster, only this application
        if args.address is None:
            serve.shutdown()
        ray.shutdown()  # pyright: ignore[reportUnknownMemberType]
    return 0


if __name__ == "__main__":
    sys.exit(main())
