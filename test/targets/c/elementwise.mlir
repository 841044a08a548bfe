// RUN: opt-tool %s --split-input-file -t c | filecheck %s --check-prefix=C
// RUN: opt-tool %s --split-input-file -t opencl | filecheck %s --check-prefix=CL

// An elementwise kernel with a broadcast operand: C keeps the parallel nest as loops, OpenCL
// takes each dimension from get_global_id with a bounds check.

func.func @fused_add_relu(%in0: memref<4x8xf32>, %in1: memref<8xf32>, %out0: memref<4x8xf32>) attributes {relay.se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">} {
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
    %r = arith.maximumf %s, %zero : f32
    memref.store %r, %out0[%i, %j] : memref<4x8xf32>
    scf.reduce
  }) : (index, index, index, index, index, index) -> ()
  func.return
}

// C: #include <math.h>
// C-LABEL: void fused_add_relu(
// C-SAME: const float *restrict in0, const float *restrict in1, float *restrict out0) {
// C-NEXT: for (long [[I:i_[0-9]+]] = 0; [[I]] < 4; [[I]]++) {
// C-NEXT: for (long [[J:j_[0-9]+]] = 0; [[J]] < 8; [[J]]++) {
// C-NEXT: float [[A:a_[0-9]+]] = in0[[[I]] * 8 + [[J]]];
// C-NEXT: float [[B:b_[0-9]+]] = in1[[[J]]];
// C-NEXT: float [[S:s_[0-9]+]] = [[A]] + [[B]];
// C-NEXT: float [[R:r_[0-9]+]] = (0.0f >= [[S]] ? 0.0f : [[S]]);
// C-NEXT: out0[[[I]] * 8 + [[J]]] = [[R]];
// C-NEXT: }
// C-NEXT: }
// C-NEXT: }

// The kernel is on cpu: the OpenCL target prints nothing for it.
// CL-NOT: fused_add_relu

// -----

func.func @fused_exp_tanh(%in0: memref<16xf32>, %out0: memref<16xf32>) attributes {relay.se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %m = arith.constant -1.5 : f32
  "scf.parallel"(%c0, %c16, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%i: index):
    %a = memref.load %in0[%i] : memref<16xf32>
    %e = math.exp %a : f32
    %t = math.tanh %e : f32
    %q = math.rsqrt %t : f32
    %n = arith.minimumf %q, %m : f32
    memref.store %n, %out0[%i] : memref<16xf32>
    scf.reduce
  }) : (index, index, index) -> ()
  func.return
}

// The kernel is on opencl: the C target prints only the header.
// C-NOT: fused_exp_tanh

// CL-LABEL: __kernel void fused_exp_tanh(
// CL-SAME: __global const float *in0, __global float *out0) {
// CL-NEXT: const long gid0 = get_global_id(0);
// CL-NEXT: if (gid0 >= 16) return;
// CL-NEXT: const long [[I:i_[0-9]+]] = gid0;
// CL-NEXT: float [[A:a_[0-9]+]] = in0[[[I]]];
// CL-NEXT: float [[E:e_[0-9]+]] = exp([[A]]);
// CL-NEXT: float [[T:t_[0-9]+]] = xr_tanhf([[E]]);
// CL-NEXT: float [[Q:q_[0-9]+]] = rsqrt([[T]]);
// CL-NEXT: float [[N:n_[0-9]+]] = (([[Q]] < (-1.5f)) | ([[Q]] != [[Q]])) ? [[Q]] : (-1.5f);
// CL-NEXT: out0[[[I]]] = [[N]];
// CL-NEXT: }
