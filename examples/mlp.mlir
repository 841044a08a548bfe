// A two-layer MLP (784-128-10) whose first layer is pinned to OpenCL; the rest is placed by
// plan-devices (on the default device). Weights are parameters of @main.
func.func @main(%x: tensor<8x784xf32>, %w1: tensor<128x784xf32>, %b1: tensor<128xf32>,
                %w2: tensor<10x128xf32>, %b2: tensor<10xf32>) -> tensor<8x10xf32> {
  %0 = relay.nn.dense %x, %w1 : (tensor<8x784xf32>, tensor<128x784xf32>) -> tensor<8x128xf32>
  %1 = relay.nn.bias_add %0, %b1 : (tensor<8x128xf32>, tensor<128xf32>) -> tensor<8x128xf32>
  %2 = relay.nn.relu %1 : tensor<8x128xf32>
  %3 = relay.on_device %2 {se_scope = #relay.se_scope<device = opencl>} : tensor<8x128xf32>
  %4 = relay.nn.dense %3, %w2 : (tensor<8x128xf32>, tensor<10x128xf32>) -> tensor<8x10xf32>
  %5 = relay.nn.bias_add %4, %b2 : (tensor<8x10xf32>, tensor<10xf32>) -> tensor<8x10xf32>
  %6 = relay.nn.softmax %5 : (tensor<8x10xf32>) -> tensor<8x10xf32>
  func.return %6 : tensor<8x10xf32>
}
