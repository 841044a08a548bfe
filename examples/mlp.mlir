// A three-layer MLP (784-256-128-10, batch 32) whose first layer is pinned to OpenCL; the rest
// is placed by plan-devices on the default device (the host, cpu), so one copy moves the first
// layer's activations from OpenCL to the host. Weights are parameters of @main.
func.func @main(%x: tensor<32x784xf32>, %w1: tensor<256x784xf32>, %b1: tensor<256xf32>,
                %w2: tensor<128x256xf32>, %b2: tensor<128xf32>,
                %w3: tensor<10x128xf32>, %b3: tensor<10xf32>) -> tensor<32x10xf32> {
  %0 = relay.nn.dense %x, %w1 : (tensor<32x784xf32>, tensor<256x784xf32>) -> tensor<32x256xf32>
  %1 = relay.nn.bias_add %0, %b1 : (tensor<32x256xf32>, tensor<256xf32>) -> tensor<32x256xf32>
  %2 = relay.nn.relu %1 : tensor<32x256xf32>
  %3 = relay.on_device %2 {se_scope = #relay.se_scope<device = opencl>} : tensor<32x256xf32>
  %4 = relay.nn.dense %3, %w2 : (tensor<32x256xf32>, tensor<128x256xf32>) -> tensor<32x128xf32>
  %5 = relay.nn.bias_add %4, %b2 : (tensor<32x128xf32>, tensor<128xf32>) -> tensor<32x128xf32>
  %6 = relay.nn.relu %5 : tensor<32x128xf32>
  %7 = relay.nn.dense %6, %w3 : (tensor<32x128xf32>, tensor<10x128xf32>) -> tensor<32x10xf32>
  %8 = relay.nn.bias_add %7, %b3 : (tensor<32x10xf32>, tensor<10xf32>) -> tensor<32x10xf32>
  %9 = relay.nn.softmax %8 : (tensor<32x10xf32>) -> tensor<32x10xf32>
  func.return %9 : tensor<32x10xf32>
}
