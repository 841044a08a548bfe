// RUN: not opt-tool %s -p 'plan-devices{targets=c,opencl}' 2>&1 | filecheck %s

// Without --verify-diagnostics a conflict exits 1 with the message and the op underlined, and
// no Python traceback.

func.func @conflict(%a: tensor<4xf32>) -> tensor<4xf32> {
  %x = relay.exp %a : tensor<4xf32>
  %0 = relay.negative %x {se_scope = #relay.se_scope<device = cpu>} : tensor<4xf32>
  %1 = relay.abs %x {se_scope = #relay.se_scope<device = opencl>} : tensor<4xf32>
  %2 = relay.add %0, %1 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %2 : tensor<4xf32>
}
// CHECK-NOT: Traceback
// CHECK: opt-tool: error: conflicting scopes for %x at its use in 'relay.abs' ({{.*}}conflict_exit.mlir:9:3): cpu:? (se_scope of 'relay.negative' at {{.*}}conflict_exit.mlir:8:3) and opencl:? (se_scope of 'relay.abs' at {{.*}}conflict_exit.mlir:9:3); insert relay.on_device or relay.device_copy to say where the copy goes
// CHECK: "relay.abs"(%x)
// CHECK-NEXT: ^^^^^^^^^^^^^^^^
// CHECK-NOT: Traceback
