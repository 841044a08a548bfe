func.func @main(%x: tensor<2x4xf32>, %w: tensor<3x4xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
  %0 = relay.nn.dense %x, %w : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  %1 = relay.nn.bias_add %0, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %2 = relay.on_device %1 {se_scope = #relay.se_scope<device = opencl>} : tensor<2x3xf32>
  %3 = relay.nn.relu %2 : tensor<2x3xf32>
  func.return %3 : tensor<2x3xf32>
}
