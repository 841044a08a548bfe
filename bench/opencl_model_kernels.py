"""Per kernel of a reference model: the OpenCL kernel's device time on PoCL against the C kernel.

The model (bench/models.py's relay text, its weights bound as params: `random_inputs`, as
bench/models.py binds them) is lowered for each target as `xrelay.build` lowers it
(fuse-layer-norm to split-reductions; constant weights pre-packed where a schedule does so);
each kernel of the one is paired with the kernel of the same group (the same name and
argument shapes) of the other, both are run on the same inputs (a constant's value where the launch reads a
constant, pre-packed or not; random otherwise), their outputs compared (NaN where NaN: a
layer norm's rsqrt of a random negative), and timed in one interleaved run
(`timing.interleaved_medians`, --rounds rounds): the C kernel called directly at --threads
threads, the OpenCL kernel launched and waited for, timed by its profiling event (start to
end: the device's time, without the launch and the wait, which on a loaded machine swing
from 10 us to milliseconds). Each line names both schedules; the
last line sums the kernels (a model's time without its launches and copies). A group of
one target alone (fuse-conv-pool merges a conv and its pool on opencl that stay two groups
on the cpu) is timed alone, its line after the pairs, `-` for the other target. A kernel the
compiler gives a local size (`relay.work_group_per_item`: a work group per work item) is also
timed in the same rounds launched without one (PoCL then chooses: one work group for a small
NDRange), the last column.

    POCL_DEVICES="pthread pthread" POCL_MAX_PTHREAD_COUNT=1 \\
        .venv/bin/python bench/opencl_model_kernels.py transformer [--only NAME] [--threads N]
"""

from __future__ import annotations

import os

os.environ.setdefault("POCL_DEVICES", "pthread pthread")

import argparse
import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np
from models import MODELS, random_inputs
from timing import interleaved_medians
from xdsl.dialects import func
from xdsl.dialects.builtin import MemRefType, StringAttr
from xdsl.passes import PassPipeline

import xrelay
from xrelay.dialects import relay
from xrelay.driver import all_passes, bind_params
from xrelay.interpreter import constant_value, entry_function
from xrelay.runtime.c_library import build_c
from xrelay.runtime.kernels import KernelSource
from xrelay.runtime.opencl import OpenCLKernel, build_opencl, default_opencl_context, import_pyopencl
from xrelay.targets.c_style import lowered_kernels
from xrelay.targets.kernels import kernel_source

LOWERING = "convert-relay-to-loops,dce,licm,cse,split-reductions"

# A kernel: its function, its source, and the constant values its launch reads (by argument).
Kernel = tuple[func.FuncOp, KernelSource, dict[int, np.ndarray]]


def kernels(text: str, target: str) -> dict[str, Kernel]:
    """The kernels of `text` lowered for `target` alone, its weights bound, by name."""
    module = xrelay.parse(text)
    weights = random_inputs(text)
    weights.pop("x")
    bind_params(module, weights)
    spec = f"fuse-layer-norm,plan-devices{{targets={target}}},combine-parallel-dense,fuse-ops,fuse-conv-pool,fuse-attention,{LOWERING}"
    PassPipeline.parse_spec(all_passes(), spec).apply(xrelay.context(), module)
    constants = launch_constants(module)
    return {
        k.sym_name.data: (k, kernel_source(k), constants.get(k.sym_name.data, {}))
        for k in lowered_kernels(module, target)
    }


def launch_constants(module: Any) -> dict[str, dict[int, np.ndarray]]:
    """Per kernel name, the values of the `relay.constant`s its launch in @main reads, by argument."""
    found: dict[str, dict[int, np.ndarray]] = {}
    for op in entry_function(module).body.walk():
        if isinstance(op, relay.LaunchOp):
            found[op.callee.root_reference.data] = {
                i: constant_value(v.owner) for i, v in enumerate(op.inputs) if isinstance(v.owner, relay.ConstantOp)
            }
    return found


def schedule(kernel: func.FuncOp) -> str:
    attr = kernel.attributes["relay.schedule"]
    assert isinstance(attr, StringAttr)
    return attr.data


def shapes(kernel: func.FuncOp) -> list[tuple[int, ...]]:
    types = [arg.type for arg in kernel.args]
    assert all(isinstance(ty, MemRefType) for ty in types)
    return [tuple(ty.get_shape()) for ty in types]  # type: ignore[union-attr]


def groups(
    c_kernels: dict[str, Kernel], cl_kernels: dict[str, Kernel]
) -> list[tuple[str, Kernel | None, Kernel | None]]:
    """(name, C kernel, OpenCL kernel) of each group: paired where both targets have a kernel
    of that name and argument shapes, then the kernels of one target alone."""

    pairs = {
        name
        for name in c_kernels.keys() & cl_kernels.keys()
        if shapes(c_kernels[name][0]) == shapes(cl_kernels[name][0])
    }
    paired = [(name, kernel, cl_kernels[name]) for name, kernel in c_kernels.items() if name in pairs]
    c_alone = [(name, kernel, None) for name, kernel in c_kernels.items() if name not in pairs]
    cl_alone = [(name, None, kernel) for name, kernel in cl_kernels.items() if name not in pairs]
    return [*paired, *c_alone, *cl_alone]


def ms(seconds: float | None) -> str:
    return f"{'-':>8}" if seconds is None else f"{seconds * 1e3:8.3f}"


def time_pair(
    c_function: Any | None,
    opencl: OpenCLKernel | None,
    context: Any,
    queue: Any,
    shapes: list[tuple[int, ...]],
    c_constants: dict[int, np.ndarray],
    cl_constants: dict[int, np.ndarray],
    rounds: int,
) -> tuple[float | None, float | None, float | None]:
    """The C kernel's median time and the OpenCL kernel's median device time, in one
    interleaved run on the same random inputs, after checking that their outputs agree; and
    when the kernel has a local size, its median device time launched without one. A kernel
    of one target alone (the other None) is timed alone."""
    cl = import_pyopencl()
    rng = np.random.default_rng(0)
    *ins, out_shape = shapes
    arrays = [rng.standard_normal(s).astype(np.float32) for s in ins]
    c_arrays = [np.ascontiguousarray(c_constants.get(i, a), np.float32) for i, a in enumerate(arrays)]
    cl_arrays = [np.ascontiguousarray(cl_constants.get(i, a), np.float32) for i, a in enumerate(arrays)]
    c_out, cl_out = np.zeros(out_shape, np.float32), np.zeros(out_shape, np.float32)
    addresses = [a.ctypes.data for a in (*c_arrays, c_out)]
    mf = cl.mem_flags
    buffers = [cl.Buffer(context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a) for a in cl_arrays]
    buffers.append(cl.Buffer(context, mf.READ_WRITE, max(4, cl_out.nbytes)))
    device_seconds: dict[str, list[float]] = {"opencl": [], "no local": []}

    def launch(kernel: OpenCLKernel, times: list[float]) -> None:
        event = kernel(queue, *buffers)
        event.wait()
        times.append((event.profile.end - event.profile.start) * 1e-9)

    fns: dict[str, Callable[[], object]] = {}
    if c_function is not None:
        fns["c"] = lambda: c_function(*addresses)
    if opencl is not None:
        unlocalised = dataclasses.replace(opencl, local_size=None)
        fns["opencl"] = lambda: launch(opencl, device_seconds["opencl"])
        if opencl.local_size is not None:
            fns["no local"] = lambda: launch(unlocalised, device_seconds["no local"])
    times = interleaved_medians(fns, rounds)
    if opencl is None:
        return times["c"], None, None
    cl.enqueue_copy(queue, cl_out, buffers[-1])
    queue.finish()
    if c_function is not None:
        np.testing.assert_allclose(cl_out, c_out, rtol=1e-3, atol=1e-3, equal_nan=True)
    free = float(np.median(device_seconds["no local"])) if "no local" in fns else None
    return times.get("c"), float(np.median(device_seconds["opencl"])), free


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", choices=sorted(MODELS))
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--threads", type=int, default=1, help="the C kernels' OpenMP threads")
    parser.add_argument("--only", default="", help="the kernels whose name contains this")
    args = parser.parse_args()
    cl = import_pyopencl()
    context = default_opencl_context()
    queue = cl.CommandQueue(context, properties=cl.command_queue_properties.PROFILING_ENABLE)
    text = MODELS[args.model].text()
    c_kernels, cl_kernels = kernels(text, "c"), kernels(text, "opencl")
    library = build_c([source for _, source, _ in c_kernels.values()], num_threads=args.threads)
    program = build_opencl(context, [source for _, source, _ in cl_kernels.values()])
    threads = os.environ.get("POCL_MAX_PTHREAD_COUNT", "all cores")
    print(f"{args.model}: ms, medians of {args.rounds} interleaved rounds (C: {args.threads} thread(s); "
          f"OpenCL: device time on {context.devices[0].name}, {threads} threads)")  # fmt: skip
    print(f"  {'kernel':<50} {'c schedule':<23} {'opencl schedule':<30} {'c':>8} {'opencl':>8} {'ratio':>7} "
          f"{'no local':>9}")  # fmt: skip
    total_c = total_cl = 0.0
    for name, c_kernel, cl_kernel in groups(c_kernels, cl_kernels):
        if args.only not in name:
            continue
        kernel = next(k for k in (c_kernel, cl_kernel) if k is not None)[0]
        c, opencl, free = time_pair(
            library[name].function if c_kernel else None,
            program[name] if cl_kernel else None,
            context,
            queue,
            shapes(kernel),
            c_kernel[2] if c_kernel else {},
            cl_kernel[2] if cl_kernel else {},
            args.rounds,
        )
        total_c, total_cl = total_c + (c or 0.0), total_cl + (opencl or 0.0)
        ratio = f"{opencl / c:6.2f}x" if c and opencl else f"{'-':>7}"
        print(f"  {name[:50]:<50} {schedule(c_kernel[0]) if c_kernel else '-':<23} "
              f"{schedule(cl_kernel[0]) if cl_kernel else '-':<30} {ms(c)} {ms(opencl)} {ratio} "
              f"{'' if free is None else f'{free * 1e3:9.3f}'}")  # fmt: skip
    ratio = total_cl / total_c if total_c else float("nan")
    print(f"  {'all kernels':<105} {total_c * 1e3:8.3f} {total_cl * 1e3:8.3f} {ratio:6.2f}x")


if __name__ == "__main__":
    main()
