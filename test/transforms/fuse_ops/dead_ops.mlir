// RUN: opt-tool %s --split-input-file -p fuse-ops | filecheck %s

// Ops whose results are unused are removed first, repeatedly, so that they neither join nor
// split a group.

// CHECK-LABEL: func.func @dead_chain
// CHECK-NOT:     relay.tanh
// CHECK-NOT:     relay.sigmoid
// CHECK-NOT:     relay.constant
// CHECK-NOT:     relay.device_copy
// CHECK:         relay.fused(%a) {kernel_name = "fused_exp"}
// CHECK-NOT:     relay.fused
func.func @dead_chain(%a: tensor<4xf32>) -> tensor<4xf32> {
  %k = relay.constant {value = dense<1.0> : tensor<4xf32>} : tensor<4xf32>
  %0 = relay.tanh %a : tensor<4xf32>
  %1 = relay.add %0, %k : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %2 = relay.device_copy %1 {src_se_scope = #relay.se_scope<device = cpu>, dst_se_scope = #relay.se_scope<device = opencl>} : tensor<4xf32>
  %3 = relay.sigmoid %2 : tensor<4xf32>
  %4 = relay.exp %a : tensor<4xf32>
  func.return %4 : tensor<4xf32>
}

// -----

// Were the dead tanh kept, the exp would have two consumers that never re-join; removed, the
// exp joins the relu.

// CHECK-LABEL: func.func @dead_branch
// CHECK:         relay.fused(%a) {kernel_name = "fused_exp_nn_relu"}
// CHECK-NOT:     relay.fused
// CHECK-NOT:     relay.tanh
func.func @dead_branch(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.exp %a : tensor<4xf32>
  %1 = relay.tanh %0 : tensor<4xf32>
  %2 = relay.nn.relu %0 : tensor<4xf32>
  func.return %2 : tensor<4xf32>
}
