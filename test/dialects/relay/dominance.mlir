// RUN: opt-tool %s --split-input-file --verify-diagnostics | filecheck %s

// SSA dominance: every operand is defined before its use (xDSL's verify() does not check it).
// The error is at the first use in program order, naming the value and its definition.

// A cycle: reported at its first use.

func.func @cycle(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.add %a, %1 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = relay.exp %0 : tensor<4xf32>
  func.return %1 : tensor<4xf32>
}
// CHECK: dominance.mlir:9:3: operand %1 of 'relay.add' is used before its definition at {{.*}}dominance.mlir:10:3 ('relay.exp')

// -----

// Out of order, without a cycle.

func.func @out_of_order(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.exp %1 : tensor<4xf32>
  %1 = relay.negative %a : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
// CHECK: dominance.mlir:20:3: operand %1 of 'relay.exp' is used before its definition at {{.*}}dominance.mlir:21:3 ('relay.negative')

// -----

// An op reading its own result.

func.func @self_use(%a: tensor<4xf32>) -> tensor<4xf32> {
  %x = relay.exp %x : tensor<4xf32>
  func.return %x : tensor<4xf32>
}
// CHECK: dominance.mlir:31:3: operand %x of 'relay.exp' is its own result

// -----

// Any op, not only relay ops: a call reading one result of a later call.

func.func @pair(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  func.return %x, %x : tensor<4xf32>, tensor<4xf32>
}
func.func @call(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0:2 = func.call @pair(%1#1) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  %1:2 = func.call @pair(%a) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  func.return %0#0 : tensor<4xf32>
}
// CHECK: dominance.mlir:44:3: operand %1#1 of 'func.call' is used before its definition at {{.*}}dominance.mlir:45:3 ('func.call')

// -----

// Inside a region: the body of a fused group is checked like a function body.

func.func @fused_body(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.fused(%a) {se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">, kernel_name = "fused_exp_negative"} : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<4xf32>):
    %1 = relay.exp %2 : tensor<4xf32>
    %2 = relay.negative %x : tensor<4xf32>
    relay.yield %1 : tensor<4xf32>
  }
  func.return %0 : tensor<4xf32>
}
// CHECK: dominance.mlir:57:5: operand %2 of 'relay.exp' is used before its definition at {{.*}}dominance.mlir:58:5 ('relay.negative')

// -----

// A value defined before its use verifies, also when the use is in a nested region.

// CHECK-LABEL: func.func @in_order
// CHECK:         relay.fused
func.func @in_order(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.exp %a : tensor<4xf32>
  %1 = relay.fused(%0) {se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">, kernel_name = "fused_negative"} : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<4xf32>):
    %2 = relay.negative %x : tensor<4xf32>
    relay.yield %2 : tensor<4xf32>
  }
  func.return %1 : tensor<4xf32>
}
