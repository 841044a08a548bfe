// RUN: opt-tool %s --split-input-file -p 'fuse-ops{max-depth=3}' | filecheck %s

// max-depth bounds a group's size as TVM's max_fuse_depth does: a node joins its
// post-dominator only if the post-dominator's group plus the groups on the paths between them
// hold at most max-depth nodes.

// A chain of seven: groups of 3, 3 and 1.

// CHECK-LABEL: func.func @chain
// CHECK:         relay.fused
// CHECK-SAME:    kernel_name = "fused_exp_exp_exp"
// CHECK:         relay.fused
// CHECK-SAME:    kernel_name = "fused_exp_exp_exp_1"
// CHECK:         relay.fused
// CHECK-SAME:    kernel_name = "fused_exp"
// CHECK-NOT:     relay.fused
func.func @chain(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.exp %a : tensor<4xf32>
  %1 = relay.exp %0 : tensor<4xf32>
  %2 = relay.exp %1 : tensor<4xf32>
  %3 = relay.exp %2 : tensor<4xf32>
  %4 = relay.exp %3 : tensor<4xf32>
  %5 = relay.exp %4 : tensor<4xf32>
  %6 = relay.exp %5 : tensor<4xf32>
  func.return %6 : tensor<4xf32>
}

// -----

// A diamond of four ops: %0 comes first in TVM's order and would bring the whole diamond (4
// nodes), so it stays alone; the two branches then join the add (3 nodes).

// CHECK-LABEL: func.func @diamond
// CHECK:         relay.fused
// CHECK-SAME:    kernel_name = "fused_exp"
// CHECK:         relay.fused
// CHECK-SAME:    kernel_name = "fused_nn_relu_tanh_add"
// CHECK-NOT:     relay.fused
func.func @diamond(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.exp %a : tensor<4xf32>
  %1 = relay.nn.relu %0 : tensor<4xf32>
  %2 = relay.tanh %0 : tensor<4xf32>
  %3 = relay.add %1, %2 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %3 : tensor<4xf32>
}

// -----

// The tuple of a concatenate counts as a node, as in TVM: the tuple, the concatenate and the add
// make 3, so the exp (a fourth) stays alone.

// CHECK-LABEL: func.func @tuple_counts
// CHECK:         relay.fused
// CHECK-SAME:    kernel_name = "fused_exp"
// CHECK:         relay.fused
// CHECK-SAME:    kernel_name = "fused_concatenate_add"
// CHECK-NOT:     relay.fused
func.func @tuple_counts(%a: tensor<2x4xf32>, %b: tensor<4xf32>) -> tensor<2x4xf32> {
  %0 = relay.exp %a : tensor<2x4xf32>
  %1 = relay.concatenate %0 {axis = 0 : i64} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %2 = relay.add %1, %b : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  func.return %2 : tensor<2x4xf32>
}
