// RUN: opt-tool %s --split-input-file -p fuse-ops | filecheck %s

// Injective ops (reshape, transpose, squeeze, strided_slice, concatenate) fuse in chains, after
// the anchors are done (TVM's phase 1); elementwise ops fuse into them.

// CHECK-LABEL: func.func @injective_chain
// CHECK-COUNT-1: relay.fused(%a)
// CHECK-SAME:    kernel_name = "fused_reshape_transpose_squeeze_strided_slice"
// CHECK-NOT:     relay.fused
func.func @injective_chain(%a: tensor<4x6xf32>) -> tensor<2x2xf32> {
  %0 = relay.reshape %a : (tensor<4x6xf32>) -> tensor<1x2x12xf32>
  %1 = relay.transpose %0 {axes = array<i64: 2, 0, 1>} : (tensor<1x2x12xf32>) -> tensor<12x1x2xf32>
  %2 = relay.squeeze %1 : (tensor<12x1x2xf32>) -> tensor<12x2xf32>
  %3 = relay.strided_slice %2 {begin = array<i64: 0>, end = array<i64: 12>, strides = array<i64: 6>} : (tensor<12x2xf32>) -> tensor<2x2xf32>
  func.return %3 : tensor<2x2xf32>
}

// -----

// CHECK-LABEL: func.func @elementwise_injective_elementwise
// CHECK-COUNT-1: relay.fused(%a)
// CHECK-SAME:    kernel_name = "fused_exp_transpose_nn_relu"
// CHECK-NOT:     relay.fused
func.func @elementwise_injective_elementwise(%a: tensor<4x6xf32>) -> tensor<6x4xf32> {
  %0 = relay.exp %a : tensor<4x6xf32>
  %1 = relay.transpose %0 : (tensor<4x6xf32>) -> tensor<6x4xf32>
  %2 = relay.nn.relu %1 : tensor<6x4xf32>
  func.return %2 : tensor<6x4xf32>
}

// -----

// Parallel injective branches re-join at an elementwise op (TVM's
// test_fuse_parallel_injective).

// CHECK-LABEL: func.func @parallel_injective
// CHECK-COUNT-1: relay.fused(%a)
// CHECK-SAME:    kernel_name = "fused_exp_reshape_transpose_add"
// CHECK-NOT:     relay.fused
func.func @parallel_injective(%a: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = relay.exp %a : tensor<4x4xf32>
  %1 = relay.reshape %0 : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %2 = relay.transpose %0 : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %3 = relay.add %1, %2 : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  func.return %3 : tensor<4x4xf32>
}

// -----

// An injective op does not fuse into a reduction (only elementwise and broadcast ops do).

// CHECK-LABEL: func.func @injective_then_reduce
// CHECK:         relay.fused
// CHECK-SAME:    kernel_name = "fused_transpose"
// CHECK:         relay.fused
// CHECK-SAME:    kernel_name = "fused_sum"
// CHECK-NOT:     relay.fused
func.func @injective_then_reduce(%a: tensor<4x6xf32>) -> tensor<6xf32> {
  %0 = relay.transpose %a : (tensor<4x6xf32>) -> tensor<6x4xf32>
  %1 = relay.sum %0 {axis = array<i64: 1>} : (tensor<6x4xf32>) -> tensor<6xf32>
  func.return %1 : tensor<6xf32>
}

// -----

// concatenate reads a tuple of its operands (as in TVM): the tuple joins the concatenate, and
// the elementwise ops that feed the tuple join in the last phase.

// CHECK-LABEL: func.func @concatenate
// CHECK:         %[[R:.*]] = relay.fused(%a, %b, %c) {kernel_name = "fused_exp_nn_relu_concatenate_add"}
// CHECK:           relay.concatenate
// CHECK:           relay.add
// CHECK-NEXT:      relay.yield
// CHECK-NOT:     relay.fused
// CHECK:         func.return %[[R]]
func.func @concatenate(%a: tensor<2x4xf32>, %b: tensor<3x4xf32>, %c: tensor<4xf32>) -> tensor<5x4xf32> {
  %0 = relay.exp %a : tensor<2x4xf32>
  %1 = relay.nn.relu %b : tensor<3x4xf32>
  %2 = relay.concatenate %0, %1 {axis = 0 : i64} : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<5x4xf32>
  %3 = relay.add %2, %c : (tensor<5x4xf32>, tensor<4xf32>) -> tensor<5x4xf32>
  func.return %3 : tensor<5x4xf32>
}

// -----

// The operands of a concatenate that is the function's result: the tuple has nothing to join,
// so its fields stay in their own groups.

// CHECK-LABEL: func.func @concatenate_of_anchors
// CHECK:         relay.fused
// CHECK-SAME:    kernel_name = "fused_nn_dense_nn_relu"
// CHECK:         relay.fused
// CHECK-SAME:    kernel_name = "fused_nn_dense_nn_relu_1"
// CHECK:         relay.fused
// CHECK-SAME:    kernel_name = "fused_concatenate"
// CHECK-NOT:     relay.fused
func.func @concatenate_of_anchors(%x: tensor<2x4xf32>, %w1: tensor<3x4xf32>, %w2: tensor<5x4xf32>) -> tensor<2x8xf32> {
  %0 = relay.nn.dense %x, %w1 : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  %1 = relay.nn.relu %0 : tensor<2x3xf32>
  %2 = relay.nn.dense %x, %w2 : (tensor<2x4xf32>, tensor<5x4xf32>) -> tensor<2x5xf32>
  %3 = relay.nn.relu %2 : tensor<2x5xf32>
  %4 = relay.concatenate %1, %3 {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
  func.return %4 : tensor<2x8xf32>
}

// -----

// A value that feeds a concatenate and, on another path, the op after it: the path through the
// tuple blocks the fusion in phases 0 and 1, as in TVM, so %0 stays alone.

// CHECK-LABEL: func.func @tuple_on_the_path
// CHECK:         relay.fused
// CHECK-SAME:    kernel_name = "fused_exp"
// CHECK:         relay.fused
// CHECK-SAME:    kernel_name = "fused_negative_concatenate_add"
// CHECK-NOT:     relay.fused
func.func @tuple_on_the_path(%a: tensor<1x4xf32>, %b: tensor<3x4xf32>) -> tensor<4x4xf32> {
  %0 = relay.exp %a : tensor<1x4xf32>
  %1 = relay.negative %b : tensor<3x4xf32>
  %2 = relay.concatenate %0, %1 {axis = 0 : i64} : (tensor<1x4xf32>, tensor<3x4xf32>) -> tensor<4x4xf32>
  %3 = relay.add %2, %0 : (tensor<4x4xf32>, tensor<1x4xf32>) -> tensor<4x4xf32>
  func.return %3 : tensor<4x4xf32>
}
