// RUN: not opt-tool %s -p 'plan-devices{targets=c,opencl},fuse-ops' 2>&1 | filecheck %s

// A cycle once sent fuse-ops (and xrelay.build) into an endless loop: opt-tool verifies SSA
// dominance before the first pass, and exits 1 with the error, without a traceback.

// CHECK: opt-tool: error: {{.*}}dominance.mlir:10:3: operand %2 of 'relay.add' is used before its definition at {{.*}}dominance.mlir:11:3 ('relay.exp')
// CHECK-NOT: Traceback
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.on_device %a {se_scope = #relay.se_scope<device = opencl>} : tensor<4xf32>
  %1 = relay.add %0, %2 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %2 = relay.exp %1 : tensor<4xf32>
  func.return %2 : tensor<4xf32>
}
