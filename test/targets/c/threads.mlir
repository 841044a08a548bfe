// RUN: opt-tool %s --split-input-file -t c | filecheck %s

// A nest that does enough work is shared by XRELAY_NUM_THREADS OpenMP threads; its leading
// loops are collapsed until they give 16 iterations, the innermost stays a loop of its own.
// After it each thread counts itself in (xr_join), and the caller's thread waits for the
// others there, spinning, rather than in the region's closing barrier.

// CHECK:       #ifndef XRELAY_NUM_THREADS
// CHECK-NEXT:  #define XRELAY_NUM_THREADS 1
// CHECK:       static inline void xr_join(int *joined) {
// CHECK-LABEL: void big(
// CHECK-NEXT:    #ifdef _OPENMP
// CHECK-NEXT:    {
// CHECK-NEXT:    int xr_joined = 0;
// CHECK-NEXT:    #pragma omp parallel num_threads(XRELAY_NUM_THREADS)
// CHECK-NEXT:    {
// CHECK-NEXT:    #pragma omp for schedule(dynamic) nowait collapse(2)
// CHECK-NEXT:    #endif
// CHECK-NEXT:    for (long
// CHECK:         #ifdef _OPENMP
// CHECK-NEXT:    xr_join(&xr_joined);
// CHECK-NEXT:    }
// CHECK-NEXT:    }
// CHECK-NEXT:    #endif
// CHECK-NEXT:  }
func.func @big(%in0: memref<2x8x262144xf32>, %out0: memref<2x8x262144xf32>) attributes {relay.se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  %cn = arith.constant 262144 : index
  "scf.parallel"(%c0, %c0, %c0, %c2, %c8, %cn, %c1, %c1, %c1) <{operandSegmentSizes = array<i32: 3, 3, 3, 0>}> ({
  ^bb0(%i: index, %j: index, %k: index):
    %a = memref.load %in0[%i, %j, %k] : memref<2x8x262144xf32>
    %e = math.exp %a : f32
    memref.store %e, %out0[%i, %j, %k] : memref<2x8x262144xf32>
    scf.reduce
  }) : (index, index, index, index, index, index, index, index, index) -> ()
  func.return
}

// -----

// A nest of one loop is shared in 16 strips (`schedule(dynamic, ceil(trips / 16))`), each a
// loop gcc vectorises: chunks of one iteration would leave it scalar, a dispatch an element.

// CHECK-LABEL: void flat(
// CHECK:         #pragma omp for schedule(dynamic, 262144) nowait
// CHECK-NEXT:    #endif
// CHECK-NEXT:    for (long
func.func @flat(%in0: memref<4194304xf32>, %out0: memref<4194304xf32>) attributes {relay.se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cn = arith.constant 4194304 : index
  "scf.parallel"(%c0, %cn, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%i: index):
    %a = memref.load %in0[%i] : memref<4194304xf32>
    %e = math.exp %a : f32
    memref.store %e, %out0[%i] : memref<4194304xf32>
    scf.reduce
  }) : (index, index, index) -> ()
  func.return
}

// -----

// A small nest stays on the calling thread.

// CHECK-NOT:   XRELAY_NUM_THREADS
// CHECK-LABEL: void small(
// CHECK-NOT:   omp parallel
func.func @small(%in0: memref<64xf32>, %out0: memref<64xf32>) attributes {relay.se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  "scf.parallel"(%c0, %c64, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%i: index):
    %a = memref.load %in0[%i] : memref<64xf32>
    %e = math.exp %a : f32
    memref.store %e, %out0[%i] : memref<64xf32>
    scf.reduce
  }) : (index, index, index) -> ()
  func.return
}
