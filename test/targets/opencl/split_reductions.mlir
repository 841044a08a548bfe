// RUN: opt-tool %s --split-input-file -p split-reductions -t opencl | filecheck %s

// The OpenCL C of split-reductions' loops (test/transforms/split_reductions/ checks their
// IR): the vector<16xf32> accumulators are float16s; each iteration's body is printed once
// (the pass cloned it), and the 16 values of a vector.insert chain make one constructor.
// The vectors fold pairwise, their lanes by halves (.lo, .hi), into the accumulator, and
// the remainder loop does the last trips % 16.

// 20 trips (lb 1, step 2): one main iteration of 16 copies, then 4 remainder trips.
func.func @sum_with_remainder(%in0: memref<40xf32>, %out0: memref<1xf32>) attributes {relay.se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl -vector-width=16", memory = "global">} {
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
// CHECK:       float16 [[START:sum_lanes_[0-9]+]] = (float16)((-0.0f));
// CHECK-NEXT:  float16 [[ACC:sum_lanes_[0-9]+]] = [[START]];
// CHECK-NEXT:  for (long [[J:j_[0-9]+]] = 1; [[J]] < 33; [[J]] += 32) {
// CHECK-NEXT:    float [[X0:x_[0-9]+]] = in0[[[J]]];
// CHECK-NEXT:    float [[X1:x_[0-9]+]] = in0[[[J]] + 2];
// CHECK:         float [[X15:x_[0-9]+]] = in0[[[J]] + 30];
// CHECK-NEXT:    float16 [[LANES:v[0-9]+]] = (float16)([[X0]], [[X1]], {{.*}}, [[X15]]);
// CHECK-NEXT:    float16 [[NEXT:v[0-9]+]] = [[ACC]] + [[LANES]];
// CHECK-NEXT:    [[ACC]] = [[NEXT]];
// CHECK-NEXT:  }
// CHECK-NEXT:  float8 [[F:sum_lanes_[0-9]+]]_h8 = [[ACC]].lo + [[ACC]].hi;
// CHECK-NEXT:  float4 [[F]]_h4 = [[F]]_h8.lo + [[F]]_h8.hi;
// CHECK-NEXT:  float2 [[F]]_h2 = [[F]]_h4.lo + [[F]]_h4.hi;
// CHECK-NEXT:  float [[F]] = [[F]]_h2.lo + [[F]]_h2.hi;
// CHECK-NEXT:  float [[SUM:sum_[0-9]+]] = 0.5f + [[F]];
// CHECK-NEXT:  float [[REST:sum_[0-9]+]] = [[SUM]];
// CHECK-NEXT:  for (long [[R:j_[0-9]+]] = 33; [[R]] < 40; [[R]] += 2) {
// CHECK-NEXT:    float [[X:x_[0-9]+]] = in0[[[R]]];
// CHECK-NEXT:    float [[N:n_[0-9]+]] = [[REST]] + [[X]];
// CHECK-NEXT:    [[REST]] = [[N]];
// CHECK-NEXT:  }
// CHECK-NEXT:  out0[0] = [[REST]];

// -----

// 276 trips (a loop of at least 256): four iterations of 64 into the four vectors, one of 16
// into the first, then 4.
func.func @sum_of_products(%in0: memref<276xf32>, %in1: memref<276xf32>, %out0: memref<1xf32>) attributes {relay.se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl -vector-width=16", memory = "global">} {
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
// CHECK:       float16 [[START:sum_lanes_[0-9]+]] = (float16)((-0.0f));
// CHECK-NEXT:  float16 [[A0:sum_lanes_[0-9]+]] = [[START]];
// CHECK-NEXT:  float16 [[A1:sum_lanes_[0-9]+]] = [[START]];
// CHECK-NEXT:  float16 [[A2:sum_lanes_[0-9]+]] = [[START]];
// CHECK-NEXT:  float16 [[A3:sum_lanes_[0-9]+]] = [[START]];
// CHECK-NEXT:  for (long [[J:j_[0-9]+]] = 0; [[J]] < 256; [[J]] += 64) {
// CHECK-NEXT:    float [[X0:x_[0-9]+]] = in0[[[J]]];
// CHECK-NEXT:    float [[Y0:y_[0-9]+]] = in1[[[J]]];
// CHECK-NEXT:    float [[P0:p_[0-9]+]] = [[X0]] * [[Y0]];
// CHECK:         float16 [[L0:v[0-9]+]] = (float16)([[P0]], {{.*}});
// CHECK-NEXT:    float16 [[N0:v[0-9]+]] = [[A0]] + [[L0]];
// CHECK-NEXT:    float {{x_[0-9]+}} = in0[[[J]] + 16];
// CHECK:         float16 [[N1:v[0-9]+]] = [[A1]] + {{v[0-9]+}};
// CHECK:         float16 [[N2:v[0-9]+]] = [[A2]] + {{v[0-9]+}};
// CHECK:         float {{y_[0-9]+}} = in1[[[J]] + 63];
// CHECK:         float16 [[N3:v[0-9]+]] = [[A3]] + {{v[0-9]+}};
// CHECK-NEXT:    [[A0]] = [[N0]];
// CHECK-NEXT:    [[A1]] = [[N1]];
// CHECK-NEXT:    [[A2]] = [[N2]];
// CHECK-NEXT:    [[A3]] = [[N3]];
// CHECK-NEXT:  }
// CHECK-NEXT:  float16 [[B0:sum_lanes_[0-9]+]] = [[A0]];
// CHECK-NEXT:  for (long [[K:j_[0-9]+]] = 256; [[K]] < 272; [[K]] += 16) {
// CHECK:         float {{y_[0-9]+}} = in1[[[K]] + 15];
// CHECK:         [[B0]] = {{v[0-9]+}};
// CHECK-NEXT:  }
// CHECK-NEXT:  float16 [[F01:v[0-9]+]] = [[B0]] + [[A1]];
// CHECK-NEXT:  float16 [[F23:v[0-9]+]] = [[A2]] + [[A3]];
// CHECK-NEXT:  float16 [[F:v[0-9]+]] = [[F01]] + [[F23]];
// CHECK-NEXT:  float8 [[H:sum_lanes_[0-9]+]]_h8 = [[F]].lo + [[F]].hi;
// CHECK:       float [[SUM:sum_[0-9]+]] = 0.0f + [[H]];
// CHECK-NEXT:  float [[REST:sum_[0-9]+]] = [[SUM]];
// CHECK-NEXT:  for (long [[R:j_[0-9]+]] = 272; [[R]] < 276; [[R]]++) {

// -----

// 32 trips of a max: partials start from the initial value; no remainder loop.
func.func @max_without_remainder(%in0: memref<32xf32>, %out0: memref<1xf32>) attributes {relay.se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl -vector-width=16", memory = "global">} {
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
// CHECK:       float16 [[START:max_lanes_[0-9]+]] = (float16)((-INFINITY));
// CHECK-NEXT:  float16 [[M:max_lanes_[0-9]+]] = [[START]];
// CHECK-NEXT:  for (long [[J:j_[0-9]+]] = 0; [[J]] < 32; [[J]] += 16) {
// CHECK:         float {{x_[0-9]+}} = in0[[[J]] + 15];
// CHECK:         float16 [[L:v[0-9]+]] = (float16)({{.*}});
// CHECK-NEXT:    float16 [[N:v[0-9]+]] = (([[M]] > [[L]]) | ([[M]] != [[M]])) ? [[M]] : [[L]];
// CHECK-NEXT:    [[M]] = [[N]];
// CHECK-NEXT:  }
// CHECK-NEXT:  float8 [[H:max_lanes_[0-9]+]]_h8 = (([[M]].lo > [[M]].hi) | ([[M]].lo != [[M]].lo)) ? [[M]].lo : [[M]].hi;
// CHECK:       float [[H]] = (([[H]]_h2.lo > [[H]]_h2.hi) | ([[H]]_h2.lo != [[H]]_h2.lo)) ? [[H]]_h2.lo : [[H]]_h2.hi;
// CHECK-NEXT:  float [[MAX:max_[0-9]+]] = (((-INFINITY) > [[H]]) | ((-INFINITY) != (-INFINITY))) ? (-INFINITY) : [[H]];
// CHECK-NEXT:  out0[0] = [[MAX]];

// -----

// 15 trips: too short to split; the loop stays as it is.
func.func @short_sum(%in0: memref<15xf32>, %out0: memref<1xf32>) attributes {relay.se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl -vector-width=16", memory = "global">} {
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
