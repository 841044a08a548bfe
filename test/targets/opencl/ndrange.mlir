// RUN: opt-tool %s --split-input-file -t opencl | filecheck %s --check-prefix=CL
// RUN: opt-tool %s --split-input-file -t c | filecheck %s --check-prefix=C

// The outermost scf.parallel is the NDRange: one get_global_id per dimension with a bounds
// check, the innermost loop dimension first (neighbouring work-items, neighbouring elements);
// beyond three dimensions the leading ones share the last NDRange dimension. Lower bounds and
// steps map work-item ids back to loop indices. C keeps the nest as loops.

func.func @k_rank4(%in0: memref<2x3x4x5xf32>, %out0: memref<2x3x4x5xf32>) attributes {relay.se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  "scf.parallel"(%c0, %c0, %c0, %c0, %c2, %c3, %c4, %c5, %c1, %c1, %c1, %c1) <{operandSegmentSizes = array<i32: 4, 4, 4, 0>}> ({
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    %x = memref.load %in0[%a, %b, %c, %d] : memref<2x3x4x5xf32>
    %e = math.exp %x : f32
    memref.store %e, %out0[%a, %b, %c, %d] : memref<2x3x4x5xf32>
    scf.reduce
  }) : (index, index, index, index, index, index, index, index, index, index, index, index) -> ()
  func.return
}

// CL-LABEL: __kernel void k_rank4(
// CL-SAME: __global const float *in0, __global float *out0) {
// CL-NEXT: const long gid0 = get_global_id(0);
// CL-NEXT: if (gid0 >= 5) return;
// CL-NEXT: const long [[D:d_[0-9]+]] = gid0;
// CL-NEXT: const long gid1 = get_global_id(1);
// CL-NEXT: if (gid1 >= 4) return;
// CL-NEXT: const long [[KC:c_[0-9]+]] = gid1;
// CL-NEXT: const long gid2 = get_global_id(2);
// CL-NEXT: if (gid2 >= 6) return;
// CL-NEXT: const long [[A:a_[0-9]+]] = gid2 / 3;
// CL-NEXT: const long [[B:b_[0-9]+]] = gid2 % 3;
// CL-NEXT: float [[X:x_[0-9]+]] = in0[[[A]] * 60 + [[B]] * 20 + [[KC]] * 5 + [[D]]];
// CL-NEXT: float [[E:e_[0-9]+]] = exp([[X]]);
// CL-NEXT: out0[[[A]] * 60 + [[B]] * 20 + [[KC]] * 5 + [[D]]] = [[E]];
// CL-NEXT: }

// C: #include <math.h>
// C-NOT: k_rank4

// -----

func.func @k_strided(%in0: memref<7x3xf32>, %out0: memref<7x3xf32>) attributes {relay.se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c7 = arith.constant 7 : index
  %zero = arith.constant 0.0 : f32
  "scf.parallel"(%c1, %c0, %c7, %c3, %c2, %c1) <{operandSegmentSizes = array<i32: 2, 2, 2, 0>}> ({
  ^bb0(%i: index, %j: index):
    %sum = "scf.parallel"(%c0, %c3, %c1, %zero) <{operandSegmentSizes = array<i32: 1, 1, 1, 1>}> ({
    ^bb1(%k: index):
      %y = memref.load %in0[%i, %k] : memref<7x3xf32>
      scf.reduce(%y : f32) {
      ^bb2(%l: f32, %r: f32):
        %s = arith.addf %l, %r : f32
        scf.reduce.return %s : f32
      }
    }) : (index, index, index, f32) -> f32
    memref.store %sum, %out0[%i, %j] : memref<7x3xf32>
    scf.reduce
  }) : (index, index, index, index, index, index) -> ()
  func.return
}

// CL-LABEL: __kernel void k_strided(
// CL-NEXT: const long gid0 = get_global_id(0);
// CL-NEXT: if (gid0 >= 3) return;
// CL-NEXT: const long [[J:j_[0-9]+]] = gid0;
// CL-NEXT: const long gid1 = get_global_id(1);
// CL-NEXT: if (gid1 >= 3) return;
// CL-NEXT: const long [[I:i_[0-9]+]] = 1 + gid1 * 2;
// CL-NEXT: float [[SUM:sum_[0-9]+]] = 0.0f;
// CL-NEXT: for (long [[K:k_[0-9]+]] = 0; [[K]] < 3; [[K]]++) {
// CL-NEXT: float [[Y:y_[0-9]+]] = in0[[[I]] * 3 + [[K]]];
// CL-NEXT: {
// CL-NEXT: float [[S:s_[0-9]+]] = [[SUM]] + [[Y]];
// CL-NEXT: [[SUM]] = [[S]];
// CL-NEXT: }
// CL-NEXT: }
// CL-NEXT: out0[[[I]] * 3 + [[J]]] = [[SUM]];
// CL-NEXT: }

// C-NOT: k_strided
