// RUN: not opt-tool %s -p 'plan-devices{targets=c default-device=opencl}' 2>&1 | filecheck %s

// Inconsistent options are a config error before anything is planned, without a traceback.

func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  func.return %a : tensor<4xf32>
}
// CHECK-NOT: Traceback
// CHECK: opt-tool: error: default-device opencl has no target; add one to targets (configured: c)
// CHECK-NOT: Traceback
