"""
Test inputs for the emitters and builders: hand-written loop kernels, and relay groups to
lower with convert-relay-to-loops. Shared by test_targets.py and test_build.py.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

import xrelay
from xrelay.runtime.kernels import KernelSource
from xrelay.targets.kernels import kernel_sources

CPU = '#relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">'
OPENCL = '#relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">'
SCOPES = {"c": CPU, "opencl": OPENCL}


# --- hand-written loop kernels (convert-relay-to-loops' output form) ------------------------


@dataclass(frozen=True)
class LoopKernel:
    name: str
    text: str  # a func.func with {scope} for its scope attribute
    inputs: tuple[tuple[int, ...], ...]
    output: tuple[int, ...]
    reference: Callable[..., np.ndarray]

    def module_text(self, language: str) -> str:
        return self.text.replace("{scope}", SCOPES[language])


def _softmax_rows(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


ELEMENTWISE = LoopKernel(
    "k_elementwise",
    """
func.func @k_elementwise(%in0: memref<4x8xf32>, %in1: memref<8xf32>, %out0: memref<4x8xf32>) attributes {relay.se_scope = {scope}} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  "scf.parallel"(%c0, %c0, %c4, %c8, %c1, %c1) <{operandSegmentSizes = array<i32: 2, 2, 2, 0>}> ({
  ^bb0(%i: index, %j: index):
    %a = memref.load %in0[%i, %j] : memref<4x8xf32>
    %b = memref.load %in1[%j] : memref<8xf32>
    %s = arith.addf %a, %b : f32
    %e = math.tanh %s : f32
    %r = arith.maximumf %e, %zero : f32
    memref.store %r, %out0[%i, %j] : memref<4x8xf32>
    scf.reduce
  }) : (index, index, index, index, index, index) -> ()
  func.return
}""",
    ((4, 8), (8,)),
    (4, 8),
    lambda a, b: np.maximum(np.tanh(a + b), 0),
)

# out[i] = sum_j exp(in0[i, j]) - max_j in0[i, j]: two scf.for loops with iter_args.
REDUCTION = LoopKernel(
    "k_reduction",
    """
func.func @k_reduction(%in0: memref<5x7xf32>, %out0: memref<5xf32>) attributes {relay.se_scope = {scope}} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c5 = arith.constant 5 : index
  %c7 = arith.constant 7 : index
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  "scf.parallel"(%c0, %c5, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%i: index):
    %sum = scf.for %j = %c0 to %c7 step %c1 iter_args(%acc = %zero) -> (f32) {
      %x = memref.load %in0[%i, %j] : memref<5x7xf32>
      %e = math.exp %x : f32
      %n = arith.addf %acc, %e : f32
      scf.yield %n : f32
    }
    %max = scf.for %j = %c0 to %c7 step %c1 iter_args(%m = %ninf) -> (f32) {
      %x = memref.load %in0[%i, %j] : memref<5x7xf32>
      %n = arith.maximumf %m, %x : f32
      scf.yield %n : f32
    }
    %r = arith.subf %sum, %max : f32
    memref.store %r, %out0[%i] : memref<5xf32>
    scf.reduce
  }) : (index, index, index) -> ()
  func.return
}""",
    ((5, 7),),
    (5,),
    lambda a: np.exp(a).sum(axis=1) - a.max(axis=1),
)

# out[i] = in0[i] > 0 ? sqrt(in0[i]) : in1[i] * 2 (an scf.if with a result), and a cmpf/select.
SELECT = LoopKernel(
    "k_select",
    """
func.func @k_select(%in0: memref<3x5xf32>, %in1: memref<3x5xf32>, %out0: memref<3x5xf32>) attributes {relay.se_scope = {scope}} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c5 = arith.constant 5 : index
  %zero = arith.constant 0.0 : f32
  %two = arith.constant 2.0 : f32
  "scf.parallel"(%c0, %c0, %c3, %c5, %c1, %c1) <{operandSegmentSizes = array<i32: 2, 2, 2, 0>}> ({
  ^bb0(%i: index, %j: index):
    %a = memref.load %in0[%i, %j] : memref<3x5xf32>
    %b = memref.load %in1[%i, %j] : memref<3x5xf32>
    %pos = arith.cmpf ogt, %a, %zero : f32
    %r = scf.if %pos -> (f32) {
      %s = math.sqrt %a : f32
      scf.yield %s : f32
    } else {
      %d = arith.mulf %b, %two : f32
      scf.yield %d : f32
    }
    %small = arith.cmpf olt, %r, %b : f32
    %m = arith.select %small, %b, %r : f32
    memref.store %m, %out0[%i, %j] : memref<3x5xf32>
    scf.reduce
  }) : (index, index, index, index, index, index) -> ()
  func.return
}""",
    ((3, 5), (3, 5)),
    (3, 5),
    lambda a, b: np.maximum(np.where(a > 0, np.sqrt(np.abs(a)), b * 2), b),
)

# Row softmax through a private scratch buffer (memref.alloca) per work item.
SCRATCH = LoopKernel(
    "k_scratch",
    """
func.func @k_scratch(%in0: memref<4x6xf32>, %out0: memref<4x6xf32>) attributes {relay.se_scope = {scope}} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c6 = arith.constant 6 : index
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant -3.40282347E+38 : f32
  "scf.parallel"(%c0, %c4, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%i: index):
    %buf = memref.alloca() : memref<6xf32>
    %max = scf.for %j = %c0 to %c6 step %c1 iter_args(%m = %ninf) -> (f32) {
      %x = memref.load %in0[%i, %j] : memref<4x6xf32>
      %n = arith.maximumf %m, %x : f32
      scf.yield %n : f32
    }
    %sum = scf.for %j = %c0 to %c6 step %c1 iter_args(%acc = %zero) -> (f32) {
      %x = memref.load %in0[%i, %j] : memref<4x6xf32>
      %d = arith.subf %x, %max : f32
      %e = math.exp %d : f32
      memref.store %e, %buf[%j] : memref<6xf32>
      %n = arith.addf %acc, %e : f32
      scf.yield %n : f32
    }
    scf.for %j = %c0 to %c6 step %c1 {
      %e = memref.load %buf[%j] : memref<6xf32>
      %q = arith.divf %e, %sum : f32
      memref.store %q, %out0[%i, %j] : memref<4x6xf32>
    }
    scf.reduce
  }) : (index, index, index) -> ()
  func.return
}""",
    ((4, 6),),
    (4, 6),
    _softmax_rows,
)

# A 4-d top-level nest with a non-zero lower bound and a step (OpenCL merges the leading
# dims); an inner scf.parallel with a reduction region; index arithmetic and casts.
NDRANGE = LoopKernel(
    "k_ndrange",
    """
func.func @k_ndrange(%in0: memref<2x3x4x6xf32>, %out0: memref<2x3x4x6xf32>) attributes {relay.se_scope = {scope}} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c6 = arith.constant 6 : index
  %zero = arith.constant 0.0 : f32
  "scf.parallel"(%c0, %c0, %c0, %c0, %c2, %c3, %c4, %c6, %c1, %c1, %c1, %c1) <{operandSegmentSizes = array<i32: 4, 4, 4, 0>}> ({
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    %x = memref.load %in0[%a, %b, %c, %d] : memref<2x3x4x6xf32>
    %flat = arith.muli %b, %c4 : index
    %k = arith.addi %flat, %c : index
    %ki = arith.index_cast %k : index to i32
    %kf = arith.sitofp %ki : i32 to f32
    %rowsum = "scf.parallel"(%c0, %c6, %c1, %zero) <{operandSegmentSizes = array<i32: 1, 1, 1, 1>}> ({
    ^bb1(%e: index):
      %y = memref.load %in0[%a, %b, %c, %e] : memref<2x3x4x6xf32>
      scf.reduce(%y : f32) {
      ^bb2(%l: f32, %r: f32):
        %s = arith.addf %l, %r : f32
        scf.reduce.return %s : f32
      }
    }) : (index, index, index, f32) -> f32
    %odd = arith.remsi %d, %c2 : index
    %isodd = arith.cmpi eq, %odd, %c1 : index
    %v = arith.addf %x, %kf : f32
    %w = arith.select %isodd, %rowsum, %v : f32
    memref.store %w, %out0[%a, %b, %c, %d] : memref<2x3x4x6xf32>
    scf.reduce
  }) : (index, index, index, index, index, index, index, index, index, index, index, index) -> ()
  func.return
}""",
    ((2, 3, 4, 6),),
    (2, 3, 4, 6),
    lambda x: np.where(
        np.arange(6) % 2 == 1,
        x.sum(axis=3, keepdims=True),
        x + (np.arange(3)[:, None, None] * 4 + np.arange(4)[None, :, None]).astype(np.float32),
    ),
)

# Lower bound 1 and step 2 on the top-level nest: only odd rows are written.
STRIDED = LoopKernel(
    "k_strided",
    """
func.func @k_strided(%in0: memref<7x3xf32>, %out0: memref<7x3xf32>) attributes {relay.se_scope = {scope}} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c7 = arith.constant 7 : index
  "scf.parallel"(%c1, %c0, %c7, %c3, %c2, %c1) <{operandSegmentSizes = array<i32: 2, 2, 2, 0>}> ({
  ^bb0(%i: index, %j: index):
    %x = memref.load %in0[%i, %j] : memref<7x3xf32>
    %n = arith.negf %x : f32
    memref.store %n, %out0[%i, %j] : memref<7x3xf32>
    scf.reduce
  }) : (index, index, index, index, index, index) -> ()
  func.return
}""",
    ((7, 3),),
    (7, 3),
    lambda x: np.where((np.arange(7) % 2 == 1)[:, None], -x, 0),
)

# Three reductions in one loop (sum of squares, product, max) over the odd columns 1, 3, ...,
# 39: 20 trips, which OpenCL splits into 16 partial accumulators and a remainder of 4.
SPLIT = LoopKernel(
    "k_split",
    """
func.func @k_split(%in0: memref<3x40xf32>, %out0: memref<3x3xf32>) attributes {relay.se_scope = {scope}} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c40 = arith.constant 40 : index
  %half = arith.constant 0.5 : f32
  %one = arith.constant 1.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  "scf.parallel"(%c0, %c3, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%i: index):
    %r:3 = scf.for %j = %c1 to %c40 step %c2 iter_args(%s = %half, %p = %one, %m = %ninf) -> (f32, f32, f32) {
      %x = memref.load %in0[%i, %j] : memref<3x40xf32>
      %sq = arith.mulf %x, %x : f32
      %s2 = arith.addf %s, %sq : f32
      %p2 = arith.mulf %p, %x : f32
      %m2 = arith.maximumf %x, %m : f32
      scf.yield %s2, %p2, %m2 : f32, f32, f32
    }
    memref.store %r#0, %out0[%i, %c0] : memref<3x3xf32>
    memref.store %r#1, %out0[%i, %c1] : memref<3x3xf32>
    memref.store %r#2, %out0[%i, %c2] : memref<3x3xf32>
    scf.reduce
  }) : (index, index, index) -> ()
  func.return
}""",
    ((3, 40),),
    (3, 3),
    lambda x: np.stack([0.5 + (x[:, 1::2] ** 2).sum(axis=1), x[:, 1::2].prod(axis=1), x[:, 1::2].max(axis=1)], axis=1),
)

LOOP_KERNELS = (ELEMENTWISE, REDUCTION, SELECT, SCRATCH, NDRANGE, STRIDED, SPLIT)


# --- relay groups to lower ------------------------------------------------------------------


@dataclass(frozen=True)
class GroupCase:
    """One `relay.fused` group over @main's parameters; its last op is the result."""

    name: str
    params: str  # "x:2x3 w:4x3"
    body: str  # relay ops, one a line
    positive: bool = False  # inputs in [0.5, 2] (log, sqrt, power, ...)

    def module_text(self, language: str) -> str:
        return fused_module(self.params, self.body, f"k_{self.name}_{language}", SCOPES[language])


def _t(shape: str) -> str:
    return f"tensor<{shape}xf32>" if shape else "tensor<f32>"


def fused_module(params: str, body: str, name: str, scope: str) -> str:
    args = [p.split(":") for p in params.split()]
    lines = [line.strip() for line in body.strip().splitlines()]
    match = re.search(r"(tensor<[^>]*>)\s*$", lines[-1])
    assert match is not None
    result = match.group(1)
    last = lines[-1].split("=")[0].strip()
    types = ", ".join(_t(s) for _, s in args)
    body_text = "\n    ".join(lines)
    return f"""func.func @main({", ".join(f"%{n}_in: {_t(s)}" for n, s in args)}) -> {result} {{
  %out = relay.fused({", ".join(f"%{n}_in" for n, _ in args)}) {{kernel_name = "{name}", se_scope = {scope}}} : ({types}) -> {result} {{
  ^bb0({", ".join(f"%{n}: {_t(s)}" for n, s in args)}):
    {body_text}
    relay.yield {last} : {result}
  }}
  func.return %out : {result}
}}"""


def _unary(op: str, positive: bool = False) -> GroupCase:
    short = op.split(".")[-1]
    return GroupCase(short, "x:3x4", f"%r = {op} %x : tensor<3x4xf32>", positive)


def _binary(op: str, positive: bool = False) -> GroupCase:
    short = op.split(".")[-1]
    body = f"%r = {op} %a, %b : (tensor<3x1x4xf32>, tensor<2x1xf32>) -> tensor<3x2x4xf32>"
    return GroupCase(short, "a:3x1x4 b:2x1", body, positive)


def _conv(name: str, data: str, weight: str, attrs: str, result: str) -> GroupCase:
    body = f"%r = relay.nn.conv2d %x, %w {attrs} : ({_t(data)}, {_t(weight)}) -> {_t(result)}"
    return GroupCase(name, f"x:{data} w:{weight}", body)


GROUP_CASES: tuple[GroupCase, ...] = (
    *(_unary(op) for op in ("relay.negative", "relay.exp", "relay.tanh", "relay.sigmoid",
                             "relay.abs", "relay.erf", "relay.nn.relu")),
    *(_unary(op, positive=True) for op in ("relay.log", "relay.sqrt", "relay.rsqrt")),
    GroupCase("clip", "x:3x4", "%r = relay.clip %x {a_min = -0.5 : f32, a_max = 0.75 : f32} : tensor<3x4xf32>"),
    *(_binary(op) for op in ("relay.add", "relay.subtract", "relay.multiply", "relay.maximum",
                              "relay.minimum")),
    *(_binary(op, positive=True) for op in ("relay.divide", "relay.power")),
    GroupCase("bias_add", "x:2x3x4 b:3", "%r = relay.nn.bias_add %x, %b : (tensor<2x3x4xf32>, tensor<3xf32>) -> tensor<2x3x4xf32>"),
    GroupCase("reshape", "x:2x6", "%r = relay.reshape %x : (tensor<2x6xf32>) -> tensor<3x2x2xf32>"),
    GroupCase("transpose", "x:2x3x4", "%r = relay.transpose %x {axes = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>"),
    GroupCase("squeeze", "x:2x1x3", "%r = relay.squeeze %x {axis = array<i64: 1>} : (tensor<2x1x3xf32>) -> tensor<2x3xf32>"),
    GroupCase("expand_dims", "x:2x3", "%r = relay.expand_dims %x {axis = 1 : i64, num_newaxis = 2 : i64} : (tensor<2x3xf32>) -> tensor<2x1x1x3xf32>"),
    GroupCase("broadcast_to", "x:3x1", "%r = relay.broadcast_to %x : (tensor<3x1xf32>) -> tensor<2x3x4xf32>"),
    GroupCase("strided_slice", "x:5x6", "%r = relay.strided_slice %x {begin = array<i64: 4, 1>, end = array<i64: 0, 6>, strides = array<i64: -2, 2>} : (tensor<5x6xf32>) -> tensor<2x3xf32>"),
    GroupCase("concatenate", "a:2x3 b:2x2", "%r = relay.concatenate %a, %b {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x2xf32>) -> tensor<2x5xf32>"),
    GroupCase("sum", "x:2x3x4", "%r = relay.sum %x {axis = array<i64: 1>} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>"),
    GroupCase("mean", "x:2x3x4", "%r = relay.mean %x {axis = array<i64: 0, 2>, keepdims = true} : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>"),
    GroupCase("max", "x:2x3x4", "%r = relay.max %x : (tensor<2x3x4xf32>) -> tensor<f32>"),
    GroupCase("min", "x:2x3x4", "%r = relay.min %x {axis = array<i64: -1>} : (tensor<2x3x4xf32>) -> tensor<2x3xf32>"),
    GroupCase("dense", "x:4x6 w:5x6", "%r = relay.nn.dense %x, %w : (tensor<4x6xf32>, tensor<5x6xf32>) -> tensor<4x5xf32>"),
    GroupCase("batch_matmul", "x:2x3x4 y:2x5x4", "%r = relay.nn.batch_matmul %x, %y : (tensor<2x3x4xf32>, tensor<2x5x4xf32>) -> tensor<2x3x5xf32>"),
    _conv("conv2d", "1x2x5x5", "3x2x3x3", "", "1x3x3x3"),
    _conv("conv2d_strided_padded", "1x2x5x5", "2x2x3x3", "{strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>}", "1x2x3x3"),
    _conv("conv2d_dilated_grouped", "1x4x5x5", "4x2x2x2", "{groups = 2 : i64, dilation = array<i64: 2, 1>, padding = array<i64: 0, 1, 1, 0>}", "1x4x4x5"),
    # at least 4 wide: a work item per output row, through scratch rows
    _conv("conv2d_rows_padded", "1x2x6x7", "3x2x3x3", "{padding = array<i64: 1, 2, 3, 1>}", "1x3x8x8"),
    _conv("conv2d_rows_strided_dilated_grouped", "1x4x9x11", "4x2x3x2", "{groups = 2 : i64, strides = array<i64: 2, 1>, dilation = array<i64: 1, 2>, padding = array<i64: 1, 0, 2, 3>}", "1x4x5x12"),
    _conv("conv2d_channel_blocks_grouped", "1x4x5x18", "8x2x3x3", "{groups = 2 : i64, padding = array<i64: 1, 1, 1, 1>}", "1x8x5x18"),
    GroupCase("max_pool2d", "x:1x2x5x5", "%r = relay.nn.max_pool2d %x {pool_size = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : (tensor<1x2x5x5xf32>) -> tensor<1x2x3x3xf32>"),
    GroupCase("avg_pool2d", "x:2x1x4x4", "%r = relay.nn.avg_pool2d %x {pool_size = array<i64: 2, 3>, padding = array<i64: 1, 1, 0, 1>} : (tensor<2x1x4x4xf32>) -> tensor<2x1x4x4xf32>"),
    GroupCase("global_avg_pool2d", "x:2x3x4x5", "%r = relay.nn.global_avg_pool2d %x : (tensor<2x3x4x5xf32>) -> tensor<2x3x1x1xf32>"),
    # reductions OpenCL splits into float16 lanes: 37 = 2 * 16 + 5, 48 = 3 * 16
    GroupCase("dense_long", "x:3x37 w:4x37", "%r = relay.nn.dense %x, %w : (tensor<3x37xf32>, tensor<4x37xf32>) -> tensor<3x4xf32>"),
    GroupCase("dense_wide", "x:1x300 w:3x300", "%r = relay.nn.dense %x, %w : (tensor<1x300xf32>, tensor<3x300xf32>) -> tensor<1x3xf32>"),  # 4 * 64 + 2 * 16 + 12
    GroupCase("batch_matmul_long", "x:2x3x48 y:1x2x48", "%r = relay.nn.batch_matmul %x, %y : (tensor<2x3x48xf32>, tensor<1x2x48xf32>) -> tensor<2x3x2xf32>"),
    GroupCase("max_long", "x:2x35", "%r = relay.max %x {axis = array<i64: 1>} : (tensor<2x35xf32>) -> tensor<2xf32>"),
    GroupCase("softmax_long", "x:2x21", "%r = relay.nn.softmax %x : (tensor<2x21xf32>) -> tensor<2x21xf32>"),
    GroupCase("softmax", "x:3x7", "%r = relay.nn.softmax %x : (tensor<3x7xf32>) -> tensor<3x7xf32>"),
    GroupCase("softmax_axis0", "x:4x3", "%r = relay.nn.softmax %x {axis = 0 : i64} : (tensor<4x3xf32>) -> tensor<4x3xf32>"),
    # fused patterns
    GroupCase("conv_bias_relu", "x:1x3x6x6 w:4x3x3x3 b:4", """
        %c = relay.nn.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x3x6x6xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
        %d = relay.nn.bias_add %c, %b : (tensor<1x4x6x6xf32>, tensor<4xf32>) -> tensor<1x4x6x6xf32>
        %r = relay.nn.relu %d : tensor<1x4x6x6xf32>"""),
    GroupCase("conv_bias_relu_channel_blocks", "x:1x3x6x20 w:8x3x3x3 b:8", """
        %c = relay.nn.conv2d %x, %w {padding = array<i64: 1, 2, 0, 1>} : (tensor<1x3x6x20xf32>, tensor<8x3x3x3xf32>) -> tensor<1x8x5x21xf32>
        %d = relay.nn.bias_add %c, %b : (tensor<1x8x5x21xf32>, tensor<8xf32>) -> tensor<1x8x5x21xf32>
        %r = relay.nn.relu %d : tensor<1x8x5x21xf32>"""),
    # packed_conv (cpu, stride 1): edge blocks of channels (11 = 8 + 3) and positions, batch 2,
    # a residual epilogue; groups, dilation and uneven padding
    GroupCase("packed_conv_residual", "x:2x11x6x13 w:11x11x3x3 b:11", """
        %c = relay.nn.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>} : (tensor<2x11x6x13xf32>, tensor<11x11x3x3xf32>) -> tensor<2x11x6x13xf32>
        %d = relay.nn.bias_add %c, %b : (tensor<2x11x6x13xf32>, tensor<11xf32>) -> tensor<2x11x6x13xf32>
        %s = relay.add %d, %x : (tensor<2x11x6x13xf32>, tensor<2x11x6x13xf32>) -> tensor<2x11x6x13xf32>
        %r = relay.nn.relu %s : tensor<2x11x6x13xf32>"""),
    _conv("packed_conv_grouped_dilated", "1x8x12x16", "20x4x3x2", "{groups = 2 : i64, dilation = array<i64: 1, 2>, padding = array<i64: 2, 0, 1, 3>}", "1x20x13x17"),
    # packed_conv's row-aligned vectors: one input channel, 28 wide (2 vectors a row, the
    # second overlapping; on the cpu conv_taps takes it, with the same vectors, a conv of
    # no epilogue storing them whole); 14 wide (a vector a row, 2 lanes read the next row and
    # are dropped), with 8 output channels, which winograd_conv leaves to packed_conv
    _conv("packed_conv_one_channel", "1x1x28x28", "16x1x3x3", "{padding = array<i64: 1, 1, 1, 1>}", "1x16x28x28"),
    GroupCase("packed_conv_short_rows", "x:1x16x14x14 w:8x16x3x3 b:8", """
        %c = relay.nn.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x16x14x14xf32>, tensor<8x16x3x3xf32>) -> tensor<1x8x14x14xf32>
        %d = relay.nn.bias_add %c, %b : (tensor<1x8x14x14xf32>, tensor<8xf32>) -> tensor<1x8x14x14xf32>
        %r = relay.nn.relu %d : tensor<1x8x14x14xf32>"""),
    GroupCase("dense_add_tanh", "x:3x8 w:5x8 b:5", """
        %d = relay.nn.dense %x, %w : (tensor<3x8xf32>, tensor<5x8xf32>) -> tensor<3x5xf32>
        %a = relay.add %d, %b : (tensor<3x5xf32>, tensor<5xf32>) -> tensor<3x5xf32>
        %r = relay.tanh %a : tensor<3x5xf32>"""),
    # register blocks of dense and batch_matmul outputs, with their epilogues
    GroupCase("dense_blocks_bias_relu", "x:8x300 w:12x300 b:12", """
        %d = relay.nn.dense %x, %w : (tensor<8x300xf32>, tensor<12x300xf32>) -> tensor<8x12xf32>
        %e = relay.nn.bias_add %d, %b : (tensor<8x12xf32>, tensor<12xf32>) -> tensor<8x12xf32>
        %r = relay.nn.relu %e : tensor<8x12xf32>"""),  # blocks of 4 x 4
    GroupCase("dense_blocks_of_two", "x:6x260 w:10x260", "%r = relay.nn.dense %x, %w : (tensor<6x260xf32>, tensor<10x260xf32>) -> tensor<6x10xf32>"),  # 2 x 2
    GroupCase("dense_blocks_transposed", "x:4x5 w:4x5", """
        %d = relay.nn.dense %x, %w : (tensor<4x5xf32>, tensor<4x5xf32>) -> tensor<4x4xf32>
        %r = relay.transpose %d : (tensor<4x4xf32>) -> tensor<4x4xf32>"""),  # reads the dense off the rows (C) or block
    GroupCase("batch_matmul_blocks_add_tanh", "x:1x3x20 y:2x8x20 c:8", """
        %m = relay.nn.batch_matmul %x, %y : (tensor<1x3x20xf32>, tensor<2x8x20xf32>) -> tensor<2x3x8xf32>
        %a = relay.add %m, %c : (tensor<2x3x8xf32>, tensor<8xf32>) -> tensor<2x3x8xf32>
        %r = relay.tanh %a : tensor<2x3x8xf32>"""),  # batch broadcast, blocks of 1 x 4
    GroupCase("batch_matmul_rows_add_tanh", "x:3x8x20 y:1x6x20 c:6", """
        %m = relay.nn.batch_matmul %x, %y : (tensor<3x8x20xf32>, tensor<1x6x20xf32>) -> tensor<3x8x6xf32>
        %a = relay.add %m, %c : (tensor<3x8x6xf32>, tensor<6xf32>) -> tensor<3x8x6xf32>
        %r = relay.tanh %a : tensor<3x8x6xf32>"""),  # C: whole rows, 8 at a time; OpenCL: blocks of 1 x 2
    GroupCase("batch_matmul_row_blocks", "x:2x4x256 y:1x4x256", "%r = relay.nn.batch_matmul %x, %y : (tensor<2x4x256xf32>, tensor<1x4x256xf32>) -> tensor<2x4x4xf32>"),  # 4 x 4
    # C: packed panels and vector tiles (packed_matmul), with edge tiles, a partial second
    # block, a broadcast batch (test_packed_matmul.py has more, with looser tolerances)
    GroupCase("dense_packed_bias_tanh", "x:37x200 w:70x200 b:70", """
        %d = relay.nn.dense %x, %w : (tensor<37x200xf32>, tensor<70x200xf32>) -> tensor<37x70xf32>
        %e = relay.nn.bias_add %d, %b : (tensor<37x70xf32>, tensor<70xf32>) -> tensor<37x70xf32>
        %r = relay.tanh %e : tensor<37x70xf32>"""),
    GroupCase("batch_matmul_packed", "x:1x45x200 y:3x20x200", "%r = relay.nn.batch_matmul %x, %y : (tensor<1x45x200xf32>, tensor<3x20x200xf32>) -> tensor<3x45x20xf32>"),
    GroupCase("elementwise_chain", "a:2x1x4 b:3x1 c:4", """
        %s = relay.add %a, %b : (tensor<2x1x4xf32>, tensor<3x1xf32>) -> tensor<2x3x4xf32>
        %m = relay.multiply %c, %s : (tensor<4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
        %n = relay.negative %m : tensor<2x3x4xf32>
        %e = relay.sigmoid %n : tensor<2x3x4xf32>
        %r = relay.subtract %e, %s : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>"""),
    GroupCase("reshape_transpose_chain", "x:2x3x4", """
        %a = relay.reshape %x : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
        %b = relay.transpose %a {axes = array<i64: 1, 0>} : (tensor<6x4xf32>) -> tensor<4x6xf32>
        %c = relay.reshape %b : (tensor<4x6xf32>) -> tensor<2x2x6xf32>
        %r = relay.transpose %c {axes = array<i64: 2, 1, 0>} : (tensor<2x2x6xf32>) -> tensor<6x2x2xf32>"""),
    GroupCase("reduce_of_elementwise", "x:3x5 y:5", """
        %a = relay.multiply %x, %y : (tensor<3x5xf32>, tensor<5xf32>) -> tensor<3x5xf32>
        %e = relay.exp %a : tensor<3x5xf32>
        %r = relay.sum %e {axis = array<i64: 1>} : (tensor<3x5xf32>) -> tensor<3xf32>"""),
    GroupCase("softmax_of_scaled", "x:2x6 s:1", """
        %a = relay.multiply %x, %s : (tensor<2x6xf32>, tensor<1xf32>) -> tensor<2x6xf32>
        %r = relay.nn.softmax %a : (tensor<2x6xf32>) -> tensor<2x6xf32>"""),
    GroupCase("rank5", "x:2x1x2x3x2 y:2", """
        %r = relay.add %x, %y : (tensor<2x1x2x3x2xf32>, tensor<2xf32>) -> tensor<2x1x2x3x2xf32>"""),
    # the ops imported models need
    GroupCase("matmul_add", "x:2x3x5 y:5x4 c:4", """
        %m = relay.nn.matmul %x, %y : (tensor<2x3x5xf32>, tensor<5x4xf32>) -> tensor<2x3x4xf32>
        %r = relay.add %m, %c : (tensor<2x3x4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>"""),
    GroupCase("layer_norm_of_add", "x:3x8 y:3x8 g:8 b:8", """
        %s = relay.add %x, %y : (tensor<3x8xf32>, tensor<3x8xf32>) -> tensor<3x8xf32>
        %r = relay.nn.layer_norm %s, %g, %b : (tensor<3x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<3x8xf32>"""),
    GroupCase("leaky_relu", "x:3x4", "%r = relay.nn.leaky_relu %x {alpha = 0.1 : f32} : tensor<3x4xf32>"),
    GroupCase("pad_constant", "x:3x4", '%r = relay.nn.pad %x {pad_width = array<i64: 1, 0, 2, 1>, pad_value = 0.5 : f32} : (tensor<3x4xf32>) -> tensor<4x7xf32>'),
    GroupCase("pad_reflect", "x:3x4", '%r = relay.nn.pad %x {pad_width = array<i64: 2, 1, 0, 3>, pad_mode = "reflect"} : (tensor<3x4xf32>) -> tensor<6x7xf32>'),
    GroupCase("take", "x:5x4", "%r = relay.take %x {indices = dense<[[0, 1, 2], [3, -1, 0]]> : tensor<2x3xi64>, axis = 1 : i64} : (tensor<5x4xf32>) -> tensor<5x2x3xf32>"),
    # int64 and bool elements inside a group of float inputs and result (issue 32)
    GroupCase("compare_logic_where", "x:3x4 y:4", """
        %lt = relay.less %x, %y : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xi1>
        %le = relay.less_equal %x, %y : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xi1>
        %gt = relay.greater %x, %y : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xi1>
        %ge = relay.greater_equal %x, %y : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xi1>
        %eq = relay.equal %lt, %le : (tensor<3x4xi1>, tensor<3x4xi1>) -> tensor<3x4xi1>
        %ne = relay.not_equal %gt, %ge : (tensor<3x4xi1>, tensor<3x4xi1>) -> tensor<3x4xi1>
        %n = relay.logical_not %eq : tensor<3x4xi1>
        %a = relay.logical_and %n, %lt : (tensor<3x4xi1>, tensor<3x4xi1>) -> tensor<3x4xi1>
        %o = relay.logical_or %a, %ne : (tensor<3x4xi1>, tensor<3x4xi1>) -> tensor<3x4xi1>
        %r = relay.where %o, %x, %y : (tensor<3x4xi1>, tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>"""),
    GroupCase("int64_casts_take", "t:7x3 x:2x4", """
        %s = relay.constant {value = dense<3.0> : tensor<1xf32>} : tensor<1xf32>
        %xs = relay.multiply %x, %s : (tensor<2x4xf32>, tensor<1xf32>) -> tensor<2x4xf32>
        %i = relay.cast %xs {dtype = "int64"} : (tensor<2x4xf32>) -> tensor<2x4xi64>
        %one = relay.constant {value = dense<1> : tensor<1xi64>} : tensor<1xi64>
        %j = relay.subtract %i, %one : (tensor<2x4xi64>, tensor<1xi64>) -> tensor<2x4xi64>
        %e = relay.take %t, %j {axis = 0 : i64} : (tensor<7x3xf32>, tensor<2x4xi64>) -> tensor<2x4x3xf32>
        %b = relay.cast %x {dtype = "bool"} : (tensor<2x4xf32>) -> tensor<2x4xi1>
        %bf = relay.cast %b {dtype = "float32"} : (tensor<2x4xi1>) -> tensor<2x4xf32>
        %jf = relay.cast %j {dtype = "float32"} : (tensor<2x4xi64>) -> tensor<2x4xf32>
        %w = relay.add %bf, %jf : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
        %we = relay.expand_dims %w {axis = 2 : i64} : (tensor<2x4xf32>) -> tensor<2x4x1xf32>
        %r = relay.add %e, %we : (tensor<2x4x3xf32>, tensor<2x4x1xf32>) -> tensor<2x4x3xf32>"""),
)  # fmt: skip


def random_inputs(shapes: list[tuple[int, ...]], seed: int, positive: bool) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    if positive:
        return [rng.uniform(0.5, 2.0, s).astype(np.float32) for s in shapes]
    return [rng.standard_normal(s).astype(np.float32) for s in shapes]


def kernel_sources_of(language: str, kernels: Sequence[LoopKernel] = LOOP_KERNELS) -> list[KernelSource]:
    """The sources of `kernels` printed for `language` ("c" or "opencl")."""
    return [s for k in kernels for s in kernel_sources(xrelay.parse(k.module_text(language)))]
