// RUN: opt-tool %s -p 'plan-devices{targets=c},fuse-ops' | filecheck %s

// layer_norm is CommReduce: its elementwise producers (a residual add) fuse into it, its
// consumers do not (a reduction starts no fusion). matmul is OutEWiseFusable: its elementwise
// consumers fuse into it.

// CHECK-LABEL: func.func @residual_layer_norm
// CHECK:         relay.fused({{.*}}) {{.*}}kernel_name = "fused_add_nn_layer_norm"
// CHECK:           relay.add
// CHECK-NEXT:      relay.nn.layer_norm
// CHECK-NEXT:      relay.yield
// CHECK:         relay.fused({{.*}}) {{.*}}kernel_name = "fused_tanh"
func.func @residual_layer_norm(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = relay.add %x, %y : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = relay.nn.layer_norm %0, %g, %b : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %2 = relay.tanh %1 : tensor<4x8xf32>
  func.return %2 : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @matmul_add
// CHECK:         relay.fused({{.*}}) {{.*}}kernel_name = "fused_nn_matmul_add"
// CHECK:           relay.nn.matmul
// CHECK-NEXT:      relay.add
// CHECK-NEXT:      relay.yield
func.func @matmul_add(%x: tensor<2x4x8xf32>, %w: tensor<8x3xf32>, %b: tensor<3xf32>) -> tensor<2x4x3xf32> {
  %0 = relay.nn.matmul %x, %w : (tensor<2x4x8xf32>, tensor<8x3xf32>) -> tensor<2x4x3xf32>
  %1 = relay.add %0, %b : (tensor<2x4x3xf32>, tensor<3xf32>) -> tensor<2x4x3xf32>
  func.return %1 : tensor<2x4x3xf32>
}
