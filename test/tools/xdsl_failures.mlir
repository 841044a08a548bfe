// RUN: opt-tool %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s
// RUN: not opt-tool %s 2>&1 | filecheck %s --check-prefix=EXIT

// Inputs on which xDSL's parser or verifiers raise a Python exception instead of a
// diagnostic (found by bench/fuzz.py): each is an error at the op, never a traceback.

func.func @real_values_for_complex_elements() -> tensor<2xf32> {
  %0 = relay.constant {value = dense<[1.0, 2.0]> : tensor<2xcomplex<f32>>} : tensor<2xf32>
  func.return %0 : tensor<2xf32>
}
// CHECK: 8:3
// CHECK: cannot parse this op: AssertionError
// EXIT: opt-tool: error: {{.*}}xdsl_failures.mlir:8:3
// EXIT: cannot parse this op: AssertionError
// EXIT-NOT: Traceback

// -----

func.func @float32_overflow() -> tensor<2xf32> {
  %0 = relay.constant {value = dense<1.0e+39> : tensor<2xf32>} : tensor<2xf32>
  func.return %0 : tensor<2xf32>
}
// CHECK: 20:3
// CHECK: cannot parse this op: OverflowError: float too large to pack with f format

// -----

func.func @i128_array(%a: tensor<2x3xf32>) -> tensor<3xf32> {
  %0 = relay.sum %a {axis = array<i128: 0>} : (tensor<2x3xf32>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}
// CHECK: 29:3
// CHECK: cannot parse this op: NotImplementedError: Format not implemented for i128

// -----

func.func @memref_store_with_too_few_indices(%m: memref<2xf32>, %v: f32) {
  memref.store %v, %m[] : memref<2xf32>
  func.return
}
// CHECK: xdsl_failures.mlir:38:3: 'memref.store' does not verify: Exception: Expected an index for each dimension

// -----

"func.func"() ({
  "func.return"() : () -> ()
}) : () -> ()
// CHECK: xdsl_failures.mlir:46:3: 'func.return' does not verify: KeyError: 'function_type'
