// RUN: opt-tool %s --split-input-file -p fuse-ops | filecheck %s

// OutEWiseFusable anchors (conv2d, dense, pooling) absorb the elementwise and broadcast ops that
// follow them, when every path to the post-dominator is elementwise.

// CHECK-LABEL: func.func @conv2d_bias_relu
// CHECK:         %[[R:.*]] = relay.fused(%x, %w, %b) {kernel_name = "fused_nn_conv2d_nn_bias_add_nn_relu"}
// CHECK-NEXT:    ^{{.*}}(%[[X:.*]]: tensor<1x3x8x8xf32>, %[[W:.*]]: tensor<4x3x3x3xf32>, %[[B:.*]]: tensor<4xf32>):
// CHECK-NEXT:      %[[C:.*]] = relay.nn.conv2d %[[X]], %[[W]]
// CHECK-NEXT:      %[[D:.*]] = relay.nn.bias_add %[[C]], %[[B]]
// CHECK-NEXT:      %[[E:.*]] = relay.nn.relu %[[D]]
// CHECK-NEXT:      relay.yield %[[E]]
// CHECK-NOT:     relay.fused
// CHECK:         func.return %[[R]]
func.func @conv2d_bias_relu(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>) -> tensor<1x4x6x6xf32> {
  %c = relay.nn.conv2d %x, %w : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  %d = relay.nn.bias_add %c, %b : (tensor<1x4x6x6xf32>, tensor<4xf32>) -> tensor<1x4x6x6xf32>
  %e = relay.nn.relu %d : tensor<1x4x6x6xf32>
  func.return %e : tensor<1x4x6x6xf32>
}

// -----

// CHECK-LABEL: func.func @dense_bias_relu
// CHECK:         relay.fused
// CHECK-SAME:    kernel_name = "fused_nn_dense_nn_bias_add_nn_relu"
// CHECK-NOT:     relay.fused
func.func @dense_bias_relu(%x: tensor<8x16xf32>, %w: tensor<32x16xf32>, %b: tensor<32xf32>) -> tensor<8x32xf32> {
  %0 = relay.nn.dense %x, %w : (tensor<8x16xf32>, tensor<32x16xf32>) -> tensor<8x32xf32>
  %1 = relay.nn.bias_add %0, %b : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  %2 = relay.nn.relu %1 : tensor<8x32xf32>
  func.return %2 : tensor<8x32xf32>
}

// -----

// Pooling is an anchor too.

// CHECK-LABEL: func.func @pool_then_elementwise
// CHECK:         relay.fused
// CHECK-SAME:    kernel_name = "fused_nn_max_pool2d_exp_negative"
// CHECK-NOT:     relay.fused
func.func @pool_then_elementwise(%x: tensor<1x2x8x8xf32>) -> tensor<1x2x4x4xf32> {
  %0 = relay.nn.max_pool2d %x {pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x2x8x8xf32>) -> tensor<1x2x4x4xf32>
  %1 = relay.exp %0 : tensor<1x2x4x4xf32>
  %2 = relay.negative %1 : tensor<1x2x4x4xf32>
  func.return %2 : tensor<1x2x4x4xf32>
}

// -----

// The anchor's result is used twice and the paths re-join: the whole diamond is one group.

// CHECK-LABEL: func.func @anchor_diamond
// CHECK:         relay.fused
// CHECK-SAME:    kernel_name = "fused_nn_dense_nn_relu_exp_add"
// CHECK-NOT:     relay.fused
func.func @anchor_diamond(%x: tensor<8x16xf32>, %w: tensor<32x16xf32>) -> tensor<8x32xf32> {
  %0 = relay.nn.dense %x, %w : (tensor<8x16xf32>, tensor<32x16xf32>) -> tensor<8x32xf32>
  %1 = relay.nn.relu %0 : tensor<8x32xf32>
  %2 = relay.exp %0 : tensor<8x32xf32>
  %3 = relay.add %1, %2 : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32>
  func.return %3 : tensor<8x32xf32>
}

// -----

// An anchor joins only an elementwise post-dominator: a reduction, an injective op, another
// anchor or a broadcast that grows the anchor's result each start a group of their own.

// CHECK-LABEL: func.func @anchor_then_reduce
// CHECK:         relay.fused
// CHECK-SAME:    kernel_name = "fused_nn_dense"
// CHECK:         relay.fused
// CHECK-SAME:    kernel_name = "fused_sum"
// CHECK-NOT:     relay.fused
func.func @anchor_then_reduce(%x: tensor<8x16xf32>, %w: tensor<32x16xf32>) -> tensor<8xf32> {
  %0 = relay.nn.dense %x, %w : (tensor<8x16xf32>, tensor<32x16xf32>) -> tensor<8x32xf32>
  %1 = relay.sum %0 {axis = array<i64: 1>} : (tensor<8x32xf32>) -> tensor<8xf32>
  func.return %1 : tensor<8xf32>
}

// -----

// CHECK-LABEL: func.func @anchor_then_injective
// CHECK:         relay.fused
// CHECK-SAME:    kernel_name = "fused_nn_dense"
// CHECK:         relay.fused
// CHECK-SAME:    kernel_name = "fused_transpose_exp"
// CHECK-NOT:     relay.fused
func.func @anchor_then_injective(%x: tensor<8x16xf32>, %w: tensor<32x16xf32>) -> tensor<32x8xf32> {
  %0 = relay.nn.dense %x, %w : (tensor<8x16xf32>, tensor<32x16xf32>) -> tensor<8x32xf32>
  %1 = relay.transpose %0 : (tensor<8x32xf32>) -> tensor<32x8xf32>
  %2 = relay.exp %1 : tensor<32x8xf32>
  func.return %2 : tensor<32x8xf32>
}

// -----

// CHECK-LABEL: func.func @anchor_then_anchor
// CHECK:         relay.fused
// CHECK-SAME:    kernel_name = "fused_nn_dense_nn_relu"
// CHECK:         relay.fused
// CHECK-SAME:    kernel_name = "fused_nn_dense"
// CHECK-NOT:     relay.fused
func.func @anchor_then_anchor(%x: tensor<8x16xf32>, %w1: tensor<32x16xf32>, %w2: tensor<4x32xf32>) -> tensor<8x4xf32> {
  %0 = relay.nn.dense %x, %w1 : (tensor<8x16xf32>, tensor<32x16xf32>) -> tensor<8x32xf32>
  %1 = relay.nn.relu %0 : tensor<8x32xf32>
  %2 = relay.nn.dense %1, %w2 : (tensor<8x32xf32>, tensor<4x32xf32>) -> tensor<8x4xf32>
  func.return %2 : tensor<8x4xf32>
}

// -----

// CHECK-LABEL: func.func @anchor_then_growing_broadcast
// CHECK:         relay.fused
// CHECK-SAME:    kernel_name = "fused_nn_dense"
// CHECK:         relay.fused
// CHECK-SAME:    kernel_name = "fused_add"
// CHECK-NOT:     relay.fused
func.func @anchor_then_growing_broadcast(%x: tensor<8x16xf32>, %w: tensor<32x16xf32>, %y: tensor<3x8x32xf32>) -> tensor<3x8x32xf32> {
  %0 = relay.nn.dense %x, %w : (tensor<8x16xf32>, tensor<32x16xf32>) -> tensor<8x32xf32>
  %1 = relay.add %0, %y : (tensor<8x32xf32>, tensor<3x8x32xf32>) -> tensor<3x8x32xf32>
  func.return %1 : tensor<3x8x32xf32>
}

// -----

// Elementwise ops before an anchor do not fuse into it.

// CHECK-LABEL: func.func @elementwise_then_anchor
// CHECK:         relay.fused
// CHECK-SAME:    kernel_name = "fused_nn_relu"
// CHECK:         relay.fused
// CHECK-SAME:    kernel_name = "fused_nn_dense"
// CHECK-NOT:     relay.fused
func.func @elementwise_then_anchor(%x: tensor<8x16xf32>, %w: tensor<32x16xf32>) -> tensor<8x32xf32> {
  %0 = relay.nn.relu %x : tensor<8x16xf32>
  %1 = relay.nn.dense %0, %w : (tensor<8x16xf32>, tensor<32x16xf32>) -> tensor<8x32xf32>
  func.return %1 : tensor<8x32xf32>
}
