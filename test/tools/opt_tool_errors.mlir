// RUN: not opt-tool %s 2>&1 | filecheck %s
// RUN: opt-tool %s --verify-diagnostics | filecheck %s --check-prefix=DIAG

// A verification failure exits 1 with the op's location, the message and the op underlined,
// and no traceback.
func.func @bad_result(%a: tensor<2xf32>) -> tensor<3xf32> {
  %0 = relay.add %a, %a : (tensor<2xf32>, tensor<2xf32>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}
// CHECK: opt-tool: error: {{.*}}opt_tool_errors.mlir:7:3: expected result type tensor<2xf32> for 'relay.add', but found tensor<3xf32>
// CHECK: "relay.add"(%a, %a)
// CHECK-NEXT: ^^^^
// CHECK-NOT: Traceback
// DIAG: opt_tool_errors.mlir:7:3: expected result type tensor<2xf32> for 'relay.add', but found tensor<3xf32>
