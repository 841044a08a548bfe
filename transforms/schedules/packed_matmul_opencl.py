"""
packed_matmul_opencl: packed_matmul's nest on a device launched in work groups (opencl): its
blocks of outputs, packed panels, the micro-kernel with the device's tile (`blocking_of`: on
PoCL here 16 x 1 vectors of 16 floats, the device's preferred width), the epilogue over a
block of sums, for a dense,
batch_matmul or matmul big enough for packed_matmul; with the rhs a constant of @main,
"packed_matmul_opencl_prepacked" reads it pre-packed, as packed_matmul_prepacked does on cpu.

PoCL's LLVM compiles the micro-kernel's `float16` FMAs to the same zmm broadcast-FMA loop gcc
makes of it. The epilogue runs in a unit-stride loop over the block's sums; its arithmetic
vectorises, a maths call does not: the GELU dense (bias, GELU with `xr_tanhf`, which calls
PoCL's `exp`) took 0.82 ms of device time, 0.62 without its epilogue, 0.66 with the bias
alone, 0.76 with the same epilogue written by hand in `float16`s (hand-edited kernels, one
run, medians of 30, load 3). What PoCL does worst is the rhs packing: LLVM makes gathers of the
strided loads (dense's and batch_matmul's rhs is [N, K], a panel's 16 columns per k lie K
floats apart), slow on this AMD CPU (perf: 38-45% of the kernel's time, where gcc transposes
16 x 16 floats in registers). With the rhs a constant (the models' weights, bound at build
time) there is no packing at all; the lhs rows are copied unit-stride (`copy_rows`), which
PoCL does at memcpy speed.

Device time (OpenCL profiling events) on PoCL at 1 thread against the C kernel of the same
group at 1 thread (packed_matmul_prepacked for constant weights, else packed_matmul),
bench/opencl_model_kernels.py, medians of 30 interleaved rounds, load 1.7-1.9 on 2 cores,
matmul_block (with split-reductions) -> this schedule:

    MLP dense 64x784.512x784 + bias + relu      0.545 -> 0.468 ms (C 0.48-0.50), prepacked
    MLP dense 64x512.512x512 + bias + relu      0.373 -> 0.306 ms (C 0.31), prepacked
    transformer dense 128x256.256x256 + bias    0.19-0.23 -> 0.15-0.17 ms (C 0.15-0.17), prepacked
    transformer FFN 128x1024.256x1024 + GELU    1.015 -> 0.823 ms (C 0.75-0.78), prepacked
      (packing it per work item, as before: 1.0-1.2 ms)
    transformer FFN 128x256.1024x256 + residual 0.697 -> 0.647 ms (C 0.64-0.69), prepacked
    transformer batch_matmul 4x128x64.4x128x64  0.156 -> 0.097 ms (C 0.087), packed
    transformer batch_matmul 4x128x128.4x64x128 0.118-0.170 -> 0.103 ms (C 0.090), packed

Blocks: ROWS x COLUMNS = 128 x 128 (earlier, packing the GELU dense per work item: blocks of
64 x 64 1.81 ms, 128 x 128 1.28-1.44, 128 x 256 1.28 with 4 work items, too few for more
threads, 128 x 64 or k-blocks of 128 1.50-1.59); pre-packed, blocks of 64 or 32 rows took the
transformer's denses as long at 1 thread (within 3%, one run, load 2.8), and at 2 PoCL
threads the runs were too noisy to choose (the second thread often joins late); so it takes
packed_matmul's nest as it is, for whose blocks the pre-packed constants' panels are laid out. Each
work item is a work group of its own (`one_group_per_item`): its scratch (sums, panels,
rows: up to 320 KiB) is private, on the stack of the PoCL thread that runs it.

Smaller products (under packed_matmul's MIN_WORK, narrower than a vector, shorter than a
tile: the CNN's dense, the MLP's 512 -> 10) keep matmul_block.
"""

from __future__ import annotations

from xdsl.dialects import scf
from xdsl.ir import SSAValue

from xrelay.dialects import relay
from xrelay.transforms.scalar_ops import GroupEmitter
from xrelay.transforms.schedules import Schedule, kind_of, one_group_per_item, packed_matmul
from xrelay.transforms.schedules.matmul_block import matmul_anchor


def matches(group: relay.FusedOp) -> bool:
    matmul = matmul_anchor(group)
    if group.se_scope is None or not kind_of(group).work_groups or matmul is None:
        return False
    return packed_matmul.big_enough(matmul, packed_matmul.blocking_of(group).tile)


def matches_prepacked(group: relay.FusedOp) -> bool:
    return matches(group) and packed_matmul.constant_rhs(group) is not None


def build(emitter: GroupEmitter, group: relay.FusedOp, out: SSAValue) -> scf.ParallelOp:
    return one_group_per_item(packed_matmul.build_blocks(emitter, group, out, prepacked=False), group)


def build_prepacked(emitter: GroupEmitter, group: relay.FusedOp, out: SSAValue) -> scf.ParallelOp:
    return one_group_per_item(packed_matmul.build_blocks(emitter, group, out, prepacked=True), group)


SCHEDULE = Schedule("packed_matmul_opencl", matches, build)
PREPACKED = Schedule("packed_matmul_opencl_prepacked", matches_prepacked, build_prepacked, packed_matmul.prepare)
