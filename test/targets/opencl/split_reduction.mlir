// RUN: opt-tool %s --split-input-file -t opencl | filecheck %s

// A pure reduction loop of at least 16 trips accumulates in the lanes of float16s: 64
// iterations at a time (16 into each of four vectors; loops of 256 or more), then 16 at a
// time into the first; the body is
// printed once per iteration without its combine, and 16 iterations' values combine into a
// vector. The vectors, then the lanes, fold pairwise into the accumulator, and a remainder
// loop does the last trips % 16.

// 20 trips (lb 1, step 2): one main iteration of 16 copies, then 4 remainder trips.
func.func @sum_with_remainder(%in0: memref<40xf32>, %out0: memref<1xf32>) attributes {relay.se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c40 = arith.constant 40 : index
  %init = arith.constant 0.5 : f32
  "scf.parallel"(%c0, %c1, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%i: index):
    %sum = scf.for %j = %c1 to %c40 step %c2 iter_args(%acc = %init) -> (f32) {
      %x = memref.load %in0[%j] : memref<40xf32>
      %n = arith.addf %acc, %x : f32
      scf.yield %n : f32
    }
    memref.store %sum, %out0[%c0] : memref<1xf32>
    scf.reduce
  }) : (index, index, index) -> ()
  func.return
}

// CHECK-LABEL: __kernel void sum_with_remainder(
// CHECK:       float [[ACC:sum_[0-9]+]] = 0.5f;
// CHECK-NEXT:  float16 [[ACC]]_v0 = (float16)(0.0f);
// CHECK-NEXT:  for (long [[J:j_[0-9]+]] = 1; [[J]] < 33; [[J]] += 32) {
// CHECK-NEXT:    float [[X0:x_[0-9]+]] = in0[[[J]]];
// CHECK-NEXT:    const long [[J]]_1 = [[J]] + 2;
// CHECK-NEXT:    float [[X1:x_[0-9]+]] = in0[[[J]]_1];
// CHECK:         const long [[J]]_15 = [[J]] + 30;
// CHECK-NEXT:    float [[X15:x_[0-9]+]] = in0[[[J]]_15];
// CHECK-NEXT:    const float16 [[ACC]]_x0 = (float16)([[X0]], [[X1]], {{.*}}, [[X15]]);
// CHECK-NEXT:    [[ACC]]_v0 = [[ACC]]_v0 + [[ACC]]_x0;
// CHECK-NEXT:  }
// CHECK-NEXT:  float8 [[ACC]]_h8 = [[ACC]]_v0.lo + [[ACC]]_v0.hi;
// CHECK-NEXT:  float4 [[ACC]]_h4 = [[ACC]]_h8.lo + [[ACC]]_h8.hi;
// CHECK-NEXT:  float2 [[ACC]]_h2 = [[ACC]]_h4.lo + [[ACC]]_h4.hi;
// CHECK-NEXT:  float [[ACC]]_h1 = [[ACC]]_h2.lo + [[ACC]]_h2.hi;
// CHECK-NEXT:  [[ACC]] = [[ACC]] + [[ACC]]_h1;
// CHECK-NEXT:  for (long [[R:j_[0-9]+]] = 33; [[R]] < 40; [[R]] += 2) {
// CHECK-NEXT:    float [[X:x_[0-9]+]] = in0[[[R]]];
// CHECK-NEXT:    float [[N:n_[0-9]+]] = [[ACC]] + [[X]];
// CHECK-NEXT:    [[ACC]] = [[N]];
// CHECK-NEXT:  }
// CHECK-NEXT:  out0[0] = [[ACC]];

// -----

// 276 trips (a loop of at least 256): four iterations of 64 into the four vectors, one of 16
// into the first, then 4.
func.func @sum_of_products(%in0: memref<276xf32>, %in1: memref<276xf32>, %out0: memref<1xf32>) attributes {relay.se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c276 = arith.constant 276 : index
  %zero = arith.constant 0.0 : f32
  "scf.parallel"(%c0, %c1, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%i: index):
    %sum = scf.for %j = %c0 to %c276 step %c1 iter_args(%acc = %zero) -> (f32) {
      %x = memref.load %in0[%j] : memref<276xf32>
      %y = memref.load %in1[%j] : memref<276xf32>
      %p = arith.mulf %x, %y : f32
      %n = arith.addf %acc, %p : f32
      scf.yield %n : f32
    }
    memref.store %sum, %out0[%c0] : memref<1xf32>
    scf.reduce
  }) : (index, index, index) -> ()
  func.return
}

// CHECK-LABEL: __kernel void sum_of_products(
// CHECK:       float16 [[ACC:sum_[0-9]+]]_v0 = (float16)(0.0f), {{.*}}, [[ACC]]_v3 = (float16)(0.0f);
// CHECK-NEXT:  for (long [[J:j_[0-9]+]] = 0; [[J]] < 256; [[J]] += 64) {
// CHECK-NEXT:    float [[X0:x_[0-9]+]] = in0[[[J]]];
// CHECK-NEXT:    float [[Y0:y_[0-9]+]] = in1[[[J]]];
// CHECK-NEXT:    float [[P0:p_[0-9]+]] = [[X0]] * [[Y0]];
// CHECK:         const float16 [[ACC]]_x0 = (float16)([[P0]], {{.*}});
// CHECK-NEXT:    [[ACC]]_v0 = [[ACC]]_v0 + [[ACC]]_x0;
// CHECK-NEXT:    const long [[J]]_16 = [[J]] + 16;
// CHECK:         [[ACC]]_v1 = [[ACC]]_v1 + [[ACC]]_x1;
// CHECK:         [[ACC]]_v2 = [[ACC]]_v2 + [[ACC]]_x2;
// CHECK:         const long [[J]]_63 = [[J]] + 63;
// CHECK:         [[ACC]]_v3 = [[ACC]]_v3 + [[ACC]]_x3;
// CHECK-NEXT:  }
// CHECK-NEXT:  for (long [[K:j_[0-9]+]] = 256; [[K]] < 272; [[K]] += 16) {
// CHECK:         const long [[K]]_15 = [[K]] + 15;
// CHECK:         [[ACC]]_v0 = [[ACC]]_v0 + [[ACC]]_x0;
// CHECK-NEXT:  }
// CHECK-NEXT:  [[ACC]]_v0 = [[ACC]]_v0 + [[ACC]]_v1;
// CHECK-NEXT:  [[ACC]]_v2 = [[ACC]]_v2 + [[ACC]]_v3;
// CHECK-NEXT:  [[ACC]]_v0 = [[ACC]]_v0 + [[ACC]]_v2;
// CHECK:       [[ACC]] = [[ACC]] + [[ACC]]_h1;
// CHECK-NEXT:  for (long [[R:j_[0-9]+]] = 272; [[R]] < 276; [[R]]++) {

// -----

// 32 trips of a max: partials start from the initial value; no remainder loop.
func.func @max_without_remainder(%in0: memref<32xf32>, %out0: memref<1xf32>) attributes {relay.se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %ninf = arith.constant 0xFF800000 : f32
  "scf.parallel"(%c0, %c1, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%i: index):
    %max = scf.for %j = %c0 to %c32 step %c1 iter_args(%m = %ninf) -> (f32) {
      %x = memref.load %in0[%j] : memref<32xf32>
      %n = arith.maximumf %m, %x : f32
      scf.yield %n : f32
    }
    memref.store %max, %out0[%c0] : memref<1xf32>
    scf.reduce
  }) : (index, index, index) -> ()
  func.return
}

// CHECK-LABEL: __kernel void max_without_remainder(
// CHECK:       float [[M:max_[0-9]+]] = (-INFINITY);
// CHECK-NEXT:  float16 [[M]]_v0 = (float16)([[M]]);
// CHECK-NEXT:  for (long [[J:j_[0-9]+]] = 0; [[J]] < 32; [[J]] += 16) {
// CHECK:         const long [[J]]_15 = [[J]] + 15;
// CHECK:         const float16 [[M]]_x0 = (float16)({{.*}});
// CHECK-NEXT:    [[M]]_v0 = ([[M]]_v0 > [[M]]_x0 || isnan([[M]]_v0)) ? [[M]]_v0 : [[M]]_x0;
// CHECK-NEXT:  }
// CHECK-NEXT:  float8 [[M]]_h8 = ([[M]]_v0.lo > [[M]]_v0.hi || isnan([[M]]_v0.lo)) ? [[M]]_v0.lo : [[M]]_v0.hi;
// CHECK:       float [[M]]_h1 = ([[M]]_h2.lo > [[M]]_h2.hi || isnan([[M]]_h2.lo)) ? [[M]]_h2.lo : [[M]]_h2.hi;
// CHECK-NEXT:  [[M]] = ([[M]] > [[M]]_h1 || isnan([[M]])) ? [[M]] : [[M]]_h1;
// CHECK-NEXT:  out0[0] = [[M]];

// -----

// 15 trips: too short to split; the loop stays as it is.
func.func @short_sum(%in0: memref<15xf32>, %out0: memref<1xf32>) attributes {relay.se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c15 = arith.constant 15 : index
  %zero = arith.constant 0.0 : f32
  "scf.parallel"(%c0, %c1, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%i: index):
    %sum = scf.for %j = %c0 to %c15 step %c1 iter_args(%acc = %zero) -> (f32) {
      %x = memref.load %in0[%j] : memref<15xf32>
      %n = arith.addf %acc, %x : f32
      scf.yield %n : f32
    }
    memref.store %sum, %out0[%c0] : memref<1xf32>
    scf.reduce
  }) : (index, index, index) -> ()
  func.return
}

// CHECK-LABEL: __kernel void short_sum(
// CHECK:       float [[ACC:sum_[0-9]+]] = 0.0f;
// CHECK-NEXT:  for (long [[J:j_[0-9]+]] = 0; [[J]] < 15; [[J]]++) {
// CHECK-NOT:   float16
// CHECK:       out0[0] = [[ACC]];
