// RUN: not opt-tool %s -p 'combine-parallel-dense{min-num-branches=1}' 2>&1 | filecheck %s

// CHECK: opt-tool: error: combine-parallel-dense expects min-num-branches >= 2 (the fewest denses it combines), but found 1; leave the pass out of the pipeline to combine none
func.func @f(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %w = relay.constant {value = dense<1.0> : tensor<3x4xf32>} : tensor<3x4xf32>
  %0 = relay.nn.dense %x, %w : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}
