// RUN: opt-tool %s --split-input-file -p fuse-ops,fuse-ops | filecheck %s

// A second run changes nothing: fused groups are opaque and their bodies are left alone.

// CHECK-LABEL: func.func @twice
// CHECK:         %[[G:.*]] = relay.fused(%x, %w, %b) {kernel_name = "fused_nn_dense_nn_bias_add_nn_relu"}
// CHECK-NOT:       relay.fused
// CHECK:           relay.nn.dense
// CHECK-NEXT:      relay.nn.bias_add
// CHECK-NEXT:      relay.nn.relu
// CHECK-NEXT:      relay.yield
// CHECK:         %[[S:.*]] = relay.fused(%[[G]]) {kernel_name = "fused_nn_softmax"}
// CHECK-NOT:       relay.fused
// CHECK:           relay.nn.softmax
// CHECK-NOT:     relay.fused
// CHECK:         func.return %[[S]]
func.func @twice(%x: tensor<8x16xf32>, %w: tensor<32x16xf32>, %b: tensor<32xf32>) -> tensor<8x32xf32> {
  %0 = relay.nn.dense %x, %w : (tensor<8x16xf32>, tensor<32x16xf32>) -> tensor<8x32xf32>
  %1 = relay.nn.bias_add %0, %b : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  %2 = relay.nn.relu %1 : tensor<8x32xf32>
  %3 = relay.nn.softmax %2 : (tensor<8x32xf32>) -> tensor<8x32xf32>
  func.return %3 : tensor<8x32xf32>
}
