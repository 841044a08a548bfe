// RUN: opt-tool %s -t opencl | filecheck %s

// PoCL's log, erf and pow stay scalar: the kernels call branch-free ones of their own, each
// defined once (inside an include guard) before the kernels, after the ones it needs.

// CHECK:       #define xr_as_float as_float
// CHECK:       #ifndef XR_EXPF
// CHECK:       float xr_expf(float x) {
// CHECK:       #ifndef XR_ERFF
// CHECK:       float xr_erff(float x) {
// CHECK-NOT:   xr_powf
// CHECK-LABEL: __kernel void maths(
// CHECK:         = xr_erff(
// CHECK:         = exp(
func.func @maths(%in0: memref<64xf32>, %out0: memref<64xf32>) attributes {relay.se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  "scf.parallel"(%c0, %c64, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%i: index):
    %a = memref.load %in0[%i] : memref<64xf32>
    %b = math.erf %a : f32
    %e = math.exp %b : f32
    memref.store %e, %out0[%i] : memref<64xf32>
    scf.reduce
  }) : (index, index, index) -> ()
  func.return
}
