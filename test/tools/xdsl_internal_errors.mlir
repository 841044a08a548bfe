// RUN: not opt-tool %s 2>&1 | filecheck %s

// Input xDSL's parser accepts but cannot build (a dense array of i128) is an error at the op,
// with its location, not a traceback from inside xDSL.

func.func @main(%x: tensor<2x3xf32>) -> tensor<2xf32> {
  %0 = "relay.sum"(%x) {axis = array<i128: 1>} : (tensor<2x3xf32>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}

// CHECK:      opt-tool: error: {{.*}}xdsl_internal_errors.mlir:7:3
// CHECK:      xDSL cannot build this op (NotImplementedError: Format not implemented for i128)
// CHECK-NOT:  Traceback
