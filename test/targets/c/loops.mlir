// RUN: opt-tool %s --split-input-file -t c | filecheck %s --check-prefix=C
// RUN: opt-tool %s --split-input-file -t opencl | filecheck %s --check-prefix=CL

// Inner loops are the same in both languages: scf.for with iter_args becomes a variable that
// the loop updates; scf.if with a result declares it first; memref.alloca is a private array.
// Each kernel is printed twice, once per scope, so both targets see it.

func.func @k_reduction(%in0: memref<5x7xf32>, %out0: memref<5xf32>) attributes {relay.se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c5 = arith.constant 5 : index
  %c7 = arith.constant 7 : index
  %ninf = arith.constant 0xFF800000 : f32
  "scf.parallel"(%c0, %c5, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%i: index):
    %max = scf.for %j = %c0 to %c7 step %c1 iter_args(%m = %ninf) -> (f32) {
      %x = memref.load %in0[%i, %j] : memref<5x7xf32>
      %n = arith.maximumf %m, %x : f32
      scf.yield %n : f32
    }
    memref.store %max, %out0[%i] : memref<5xf32>
    scf.reduce
  }) : (index, index, index) -> ()
  func.return
}
func.func @k_reduction_cl(%in0: memref<5x7xf32>, %out0: memref<5xf32>) attributes {relay.se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c5 = arith.constant 5 : index
  %c7 = arith.constant 7 : index
  %ninf = arith.constant 0xFF800000 : f32
  "scf.parallel"(%c0, %c5, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%i: index):
    %max = scf.for %j = %c0 to %c7 step %c1 iter_args(%m = %ninf) -> (f32) {
      %x = memref.load %in0[%i, %j] : memref<5x7xf32>
      %n = arith.maximumf %m, %x : f32
      scf.yield %n : f32
    }
    memref.store %max, %out0[%i] : memref<5xf32>
    scf.reduce
  }) : (index, index, index) -> ()
  func.return
}

// C-LABEL: void k_reduction(
// C-SAME: const float *restrict in0, float *restrict out0) {
// C-NEXT: for (long [[I:i_[0-9]+]] = 0; [[I]] < 5; [[I]]++) {
// C-NEXT: float [[MAX:max_[0-9]+]] = (-INFINITY);
// C-NEXT: for (long [[J:j_[0-9]+]] = 0; [[J]] < 7; [[J]]++) {
// C-NEXT: float [[X:x_[0-9]+]] = in0[[[I]] * 7 + [[J]]];
// C-NEXT: float [[N:n_[0-9]+]] = [[MAX]] != [[MAX]] ? [[MAX]] : ([[MAX]] > [[X]] ? [[MAX]] : [[X]]);
// C-NEXT: [[MAX]] = [[N]];
// C-NEXT: }
// C-NEXT: out0[[[I]]] = [[MAX]];
// C-NEXT: }
// C-NEXT: }
// C-NOT: k_reduction_cl

// CL-NOT: void k_reduction(
// CL-LABEL: __kernel void k_reduction_cl(
// CL-SAME: __global const float *in0, __global float *out0) {
// CL-NEXT: const long gid0 = get_global_id(0);
// CL-NEXT: if (gid0 >= 5) return;
// CL-NEXT: const long [[I:i_[0-9]+]] = gid0;
// CL-NEXT: float [[MAX:max_[0-9]+]] = (-INFINITY);
// CL-NEXT: for (long [[J:j_[0-9]+]] = 0; [[J]] < 7; [[J]]++) {
// CL-NEXT: float [[X:x_[0-9]+]] = in0[[[I]] * 7 + [[J]]];
// CL-NEXT: float [[N:n_[0-9]+]] = (([[MAX]] > [[X]]) | ([[MAX]] != [[MAX]])) ? [[MAX]] : [[X]];
// CL-NEXT: [[MAX]] = [[N]];
// CL-NEXT: }
// CL-NEXT: out0[[[I]]] = [[MAX]];
// CL-NEXT: }

// -----

func.func @k_select(%in0: memref<6xf32>, %out0: memref<6xf32>) attributes {relay.se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c6 = arith.constant 6 : index
  %zero = arith.constant 0.0 : f32
  "scf.parallel"(%c0, %c6, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%i: index):
    %buf = memref.alloca() : memref<2x3xf32>
    %a = memref.load %in0[%i] : memref<6xf32>
    %pos = arith.cmpf ogt, %a, %zero : f32
    %r = scf.if %pos -> (f32) {
      %s = math.sqrt %a : f32
      scf.yield %s : f32
    } else {
      %n = arith.negf %a : f32
      scf.yield %n : f32
    }
    memref.store %r, %buf[%c1, %c1] : memref<2x3xf32>
    %b = memref.load %buf[%c1, %c1] : memref<2x3xf32>
    memref.store %b, %out0[%i] : memref<6xf32>
    scf.reduce
  }) : (index, index, index) -> ()
  func.return
}

// C-LABEL: void k_select(
// C: float [[BUF:buf_[0-9]+]][6];
// C-NEXT: float [[A:a_[0-9]+]] = in0[[[I:i_[0-9]+]]];
// C-NEXT: int [[POS:pos_[0-9]+]] = [[A]] > 0.0f;
// C-NEXT: float [[R:r_[0-9]+]];
// C-NEXT: if ([[POS]]) {
// C-NEXT: float [[S:s_[0-9]+]] = sqrtf([[A]]);
// C-NEXT: [[R]] = [[S]];
// C-NEXT: } else {
// C-NEXT: float [[N:n_[0-9]+]] = -[[A]];
// C-NEXT: [[R]] = [[N]];
// C-NEXT: }
// C-NEXT: [[BUF]][4] = [[R]];
// C-NEXT: float [[B:b_[0-9]+]] = [[BUF]][4];
// C-NEXT: out0[[[I]]] = [[B]];

// The kernel is on cpu: nothing for OpenCL.
// CL-NOT: k_select

// -----

// An innermost loop whose iter_args are only reductions may reorder them: C marks it for
// vectorisation (the builder defines XRELAY_OMP_SIMD and passes -fopenmp-simd); a loop that
// also stores is left alone. OpenCL vectorises across work-items instead.

func.func @k_sum(%in0: memref<3x8xf32>, %out0: memref<3xf32>) attributes {relay.se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  "scf.parallel"(%c0, %c3, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%i: index):
    %buf = memref.alloca() : memref<8xf32>
    %sum = scf.for %j = %c0 to %c8 step %c1 iter_args(%acc = %zero) -> (f32) {
      %x = memref.load %in0[%i, %j] : memref<3x8xf32>
      %e = math.exp %x : f32
      %n = arith.addf %acc, %e : f32
      scf.yield %n : f32
    }
    %stored = scf.for %j = %c0 to %c8 step %c1 iter_args(%acc = %zero) -> (f32) {
      %x = memref.load %in0[%i, %j] : memref<3x8xf32>
      memref.store %x, %buf[%j] : memref<8xf32>
      %n = arith.addf %acc, %x : f32
      scf.yield %n : f32
    }
    %r = arith.addf %sum, %stored : f32
    memref.store %r, %out0[%i] : memref<3xf32>
    scf.reduce
  }) : (index, index, index) -> ()
  func.return
}
func.func @k_sum_cl(%in0: memref<3x8xf32>, %out0: memref<3xf32>) attributes {relay.se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  "scf.parallel"(%c0, %c3, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%i: index):
    %sum = scf.for %j = %c0 to %c8 step %c1 iter_args(%acc = %zero) -> (f32) {
      %x = memref.load %in0[%i, %j] : memref<3x8xf32>
      %n = arith.addf %acc, %x : f32
      scf.yield %n : f32
    }
    memref.store %sum, %out0[%i] : memref<3xf32>
    scf.reduce
  }) : (index, index, index) -> ()
  func.return
}

// C-LABEL: void k_sum(
// C: float [[SUM:sum_[0-9]+]] = 0.0f;
// C-NEXT: #ifdef XRELAY_OMP_SIMD
// C-NEXT: #pragma omp simd reduction(+:[[SUM]])
// C-NEXT: #endif
// C-NEXT: for (long [[J:j_[0-9]+]] = 0; [[J]] < 8; [[J]]++) {
// C: float [[STORED:stored_[0-9]+]] = 0.0f;
// C-NEXT: for (long
// C-NOT: pragma
// C: }
// C-NOT: k_sum_cl

// CL-NOT: pragma
// CL-LABEL: __kernel void k_sum_cl(
// CL-NOT: pragma

// -----

// A max or min marked fastmath<nnan> (softmax_row's peak: a NaN makes the row NaN whatever the
// peak) is one comparison, and a loop of them may be reordered: `reduction(max:...)` in C,
// which gcc vectorises. Without the flag (k_reduction above) neither.

func.func @k_no_nan(%in0: memref<3x8xf32>, %out0: memref<3x2xf32>) attributes {relay.se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c8 = arith.constant 8 : index
  %first = arith.constant 0.0 : f32
  "scf.parallel"(%c0, %c3, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%i: index):
    %peak, %low = scf.for %j = %c0 to %c8 step %c1 iter_args(%m = %first, %l = %first) -> (f32, f32) {
      %x = memref.load %in0[%i, %j] : memref<3x8xf32>
      %n = arith.maximumf %m, %x fastmath<nnan> : f32
      %k = arith.minimumf %l, %x fastmath<nnan> : f32
      scf.yield %n, %k : f32, f32
    }
    memref.store %peak, %out0[%i, %c0] : memref<3x2xf32>
    memref.store %low, %out0[%i, %c1] : memref<3x2xf32>
    scf.reduce
  }) : (index, index, index) -> ()
  func.return
}
func.func @k_no_nan_cl(%in0: memref<3x8xf32>, %out0: memref<3xf32>) attributes {relay.se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c8 = arith.constant 8 : index
  %first = arith.constant 0.0 : f32
  "scf.parallel"(%c0, %c3, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%i: index):
    %peak = scf.for %j = %c0 to %c8 step %c1 iter_args(%m = %first) -> (f32) {
      %x = memref.load %in0[%i, %j] : memref<3x8xf32>
      %n = arith.maximumf %m, %x fastmath<nnan> : f32
      scf.yield %n : f32
    }
    memref.store %peak, %out0[%i] : memref<3xf32>
    scf.reduce
  }) : (index, index, index) -> ()
  func.return
}

// C-LABEL: void k_no_nan(
// C: #pragma omp simd reduction(max:[[PEAK:peak_[0-9]+]]) reduction(min:[[LOW:low_[0-9]+]])
// C: float [[X:x_[0-9]+]] = in0[
// C-NEXT: float [[N:n_[0-9]+]] = [[PEAK]] > [[X]] ? [[PEAK]] : [[X]];
// C-NEXT: float [[K:k_[0-9]+]] = [[LOW]] < [[X]] ? [[LOW]] : [[X]];
// C-NOT: k_no_nan_cl

// CL-LABEL: __kernel void k_no_nan_cl(
// CL-NOT: pragma
// CL: float [[N:n_[0-9]+]] = [[PEAK:peak_[0-9]+]] > [[X:x_[0-9]+]] ? [[PEAK]] : [[X]];
