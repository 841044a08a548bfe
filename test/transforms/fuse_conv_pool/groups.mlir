// RUN: opt-tool %s --split-input-file -p fuse-ops,fuse-conv-pool | filecheck %s

// A conv2d group (conv, bias, relu) and the max_pool2d group that reads it become one group
// yielding the pool, where the conv's schedule pools in its stores (winograd_conv; conv_taps
// on opencl); elsewhere the two groups stay.

// The CNN's second conv and pool (at batch 1): one group, the ops in order, named after them.

// CHECK-LABEL: func.func @conv_bias_relu_pool
// CHECK-SAME:    (%[[X:.*]]: tensor<1x16x14x14xf32>, %[[W:.*]]: tensor<32x16x3x3xf32>, %[[B:.*]]: tensor<32xf32>)
// CHECK:         %[[G:.*]] = relay.fused(%[[X]], %[[W]], %[[B]]) {se_scope = #relay.se_scope<device = cpu>, kernel_name = "fused_nn_conv2d_nn_bias_add_nn_relu_nn_max_pool2d"}
// CHECK-SAME:        -> tensor<1x32x7x7xf32>
// CHECK-NEXT:    ^{{.*}}(%[[BX:.*]]: tensor<1x16x14x14xf32>, %[[BW:.*]]: tensor<32x16x3x3xf32>, %[[BB:.*]]: tensor<32xf32>):
// CHECK-NEXT:      %[[C:.*]] = relay.nn.conv2d %[[BX]], %[[BW]]
// CHECK-NEXT:      %[[D:.*]] = relay.nn.bias_add %[[C]], %[[BB]]
// CHECK-NEXT:      %[[R:.*]] = relay.nn.relu %[[D]]
// CHECK-NEXT:      %[[P:.*]] = relay.nn.max_pool2d %[[R]] {pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>}
// CHECK-NEXT:      relay.yield %[[P]] : tensor<1x32x7x7xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[G]]
func.func @conv_bias_relu_pool(%x: tensor<1x16x14x14xf32>, %w: tensor<32x16x3x3xf32>, %b: tensor<32xf32>) -> tensor<1x32x7x7xf32> {
  %c = relay.nn.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>, se_scope = #relay.se_scope<device = cpu>} : (tensor<1x16x14x14xf32>, tensor<32x16x3x3xf32>) -> tensor<1x32x14x14xf32>
  %d = relay.nn.bias_add %c, %b {se_scope = #relay.se_scope<device = cpu>} : (tensor<1x32x14x14xf32>, tensor<32xf32>) -> tensor<1x32x14x14xf32>
  %r = relay.nn.relu %d {se_scope = #relay.se_scope<device = cpu>} : tensor<1x32x14x14xf32>
  %p = relay.nn.max_pool2d %r {pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>, se_scope = #relay.se_scope<device = cpu>} : (tensor<1x32x14x14xf32>) -> tensor<1x32x7x7xf32>
  func.return %p : tensor<1x32x7x7xf32>
}

// -----

// Two pairs, on opencl, one of odd size (the pool drops the conv's last row and column): two
// groups, the second name made unique.

// CHECK-LABEL: func.func @two_pairs
// CHECK:         %[[G1:.*]] = relay.fused(%{{.*}}) {se_scope = #relay.se_scope<device = opencl>, kernel_name = "fused_nn_conv2d_nn_max_pool2d"}
// CHECK-SAME:        -> tensor<2x16x6x6xf32>
// CHECK:         %[[G2:.*]] = relay.fused(%{{.*}}) {se_scope = #relay.se_scope<device = opencl>, kernel_name = "fused_nn_conv2d_nn_max_pool2d_1"}
// CHECK-SAME:        -> tensor<2x16x7x7xf32>
// CHECK-NOT:     relay.fused
// CHECK:         func.return %[[G1]], %[[G2]]
func.func @two_pairs(%x: tensor<2x16x13x13xf32>, %y: tensor<2x16x14x14xf32>, %w: tensor<16x16x3x3xf32>) -> (tensor<2x16x6x6xf32>, tensor<2x16x7x7xf32>) {
  %c = relay.nn.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>, se_scope = #relay.se_scope<device = opencl>} : (tensor<2x16x13x13xf32>, tensor<16x16x3x3xf32>) -> tensor<2x16x13x13xf32>
  %p = relay.nn.max_pool2d %c {pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>, se_scope = #relay.se_scope<device = opencl>} : (tensor<2x16x13x13xf32>) -> tensor<2x16x6x6xf32>
  %c2 = relay.nn.conv2d %y, %w {padding = array<i64: 1, 1, 1, 1>, se_scope = #relay.se_scope<device = opencl>} : (tensor<2x16x14x14xf32>, tensor<16x16x3x3xf32>) -> tensor<2x16x14x14xf32>
  %p2 = relay.nn.max_pool2d %c2 {pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>, se_scope = #relay.se_scope<device = opencl>} : (tensor<2x16x14x14xf32>) -> tensor<2x16x7x7xf32>
  func.return %p, %p2 : tensor<2x16x6x6xf32>, tensor<2x16x7x7xf32>
}

// -----

// A pool with padding: its windows are not whole windows of the conv's tiles; two groups.

// CHECK-LABEL: func.func @padded_pool
// CHECK-COUNT-2: relay.fused
// CHECK-NOT:     relay.fused
func.func @padded_pool(%x: tensor<1x16x14x14xf32>, %w: tensor<32x16x3x3xf32>) -> tensor<1x32x8x8xf32> {
  %c = relay.nn.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>, se_scope = #relay.se_scope<device = cpu>} : (tensor<1x16x14x14xf32>, tensor<32x16x3x3xf32>) -> tensor<1x32x14x14xf32>
  %p = relay.nn.max_pool2d %c {pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, se_scope = #relay.se_scope<device = cpu>} : (tensor<1x32x14x14xf32>) -> tensor<1x32x8x8xf32>
  func.return %p : tensor<1x32x8x8xf32>
}

// -----

// Overlapping windows (3 x 3 at stride 2): two groups.

// CHECK-LABEL: func.func @overlapping_windows
// CHECK-COUNT-2: relay.fused
// CHECK-NOT:     relay.fused
func.func @overlapping_windows(%x: tensor<1x16x14x14xf32>, %w: tensor<32x16x3x3xf32>) -> tensor<1x32x6x6xf32> {
  %c = relay.nn.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>, se_scope = #relay.se_scope<device = cpu>} : (tensor<1x16x14x14xf32>, tensor<32x16x3x3xf32>) -> tensor<1x32x14x14xf32>
  %p = relay.nn.max_pool2d %c {pool_size = array<i64: 3, 3>, strides = array<i64: 2, 2>, se_scope = #relay.se_scope<device = cpu>} : (tensor<1x32x14x14xf32>) -> tensor<1x32x6x6xf32>
  func.return %p : tensor<1x32x6x6xf32>
}

// -----

// The conv's result read by two pools: it stays in memory, and so do the three groups.

// CHECK-LABEL: func.func @conv_used_twice
// CHECK-COUNT-3: relay.fused
// CHECK-NOT:     relay.fused
func.func @conv_used_twice(%x: tensor<1x16x14x14xf32>, %w: tensor<32x16x3x3xf32>) -> (tensor<1x32x7x7xf32>, tensor<1x32x7x7xf32>) {
  %c = relay.nn.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>, se_scope = #relay.se_scope<device = cpu>} : (tensor<1x16x14x14xf32>, tensor<32x16x3x3xf32>) -> tensor<1x32x14x14xf32>
  %p = relay.nn.max_pool2d %c {pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>, se_scope = #relay.se_scope<device = cpu>} : (tensor<1x32x14x14xf32>) -> tensor<1x32x7x7xf32>
  %q = relay.nn.max_pool2d %c {pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>, dilation = array<i64: 1, 1>, se_scope = #relay.se_scope<device = cpu>} : (tensor<1x32x14x14xf32>) -> tensor<1x32x7x7xf32>
  func.return %p, %q : tensor<1x32x7x7xf32>, tensor<1x32x7x7xf32>
}

// -----

// Conv and pool on different scopes (cpu:0 and cpu:1): two groups.

// CHECK-LABEL: func.func @different_scopes
// CHECK-COUNT-2: relay.fused
// CHECK-NOT:     relay.fused
func.func @different_scopes(%x: tensor<1x16x14x14xf32>, %w: tensor<32x16x3x3xf32>) -> tensor<1x32x7x7xf32> {
  %c = relay.nn.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>, se_scope = #relay.se_scope<device = cpu, id = 0>} : (tensor<1x16x14x14xf32>, tensor<32x16x3x3xf32>) -> tensor<1x32x14x14xf32>
  %p = relay.nn.max_pool2d %c {pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>, se_scope = #relay.se_scope<device = cpu, id = 1>} : (tensor<1x32x14x14xf32>) -> tensor<1x32x7x7xf32>
  func.return %p : tensor<1x32x7x7xf32>
}

// -----

// A pool after a group that is no conv group (an exp): two groups.

// CHECK-LABEL: func.func @pool_after_exp
// CHECK-COUNT-2: relay.fused
// CHECK-NOT:     relay.fused
func.func @pool_after_exp(%x: tensor<1x32x14x14xf32>) -> tensor<1x32x7x7xf32> {
  %e = relay.exp %x {se_scope = #relay.se_scope<device = cpu>} : tensor<1x32x14x14xf32>
  %p = relay.nn.max_pool2d %e {pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>, se_scope = #relay.se_scope<device = cpu>} : (tensor<1x32x14x14xf32>) -> tensor<1x32x7x7xf32>
  func.return %p : tensor<1x32x7x7xf32>
}

// -----

// A conv that winograd_conv does not take (one input channel, the CNN's first): on the cpu
// its schedule (conv_taps) does not pool, so the two groups stay.

// CHECK-LABEL: func.func @conv_of_another_schedule
// CHECK-COUNT-2: relay.fused
// CHECK-NOT:     relay.fused
func.func @conv_of_another_schedule(%x: tensor<1x1x28x28xf32>, %w: tensor<16x1x3x3xf32>) -> tensor<1x16x14x14xf32> {
  %c = relay.nn.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>, se_scope = #relay.se_scope<device = cpu>} : (tensor<1x1x28x28xf32>, tensor<16x1x3x3xf32>) -> tensor<1x16x28x28xf32>
  %p = relay.nn.max_pool2d %c {pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>, se_scope = #relay.se_scope<device = cpu>} : (tensor<1x16x28x28xf32>) -> tensor<1x16x14x14xf32>
  func.return %p : tensor<1x16x14x14xf32>
}

// -----

// An average pool: two groups.

// CHECK-LABEL: func.func @average_pool
// CHECK-COUNT-2: relay.fused
// CHECK-NOT:     relay.fused
func.func @average_pool(%x: tensor<1x16x14x14xf32>, %w: tensor<32x16x3x3xf32>) -> tensor<1x32x7x7xf32> {
  %c = relay.nn.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>, se_scope = #relay.se_scope<device = cpu>} : (tensor<1x16x14x14xf32>, tensor<32x16x3x3xf32>) -> tensor<1x32x14x14xf32>
  %p = relay.nn.avg_pool2d %c {pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>, se_scope = #relay.se_scope<device = cpu>} : (tensor<1x32x14x14xf32>) -> tensor<1x32x7x7xf32>
  func.return %p : tensor<1x32x7x7xf32>
}

// -----

// Ops after the pool (`relu(max_pool2d(conv(x)))`, here with a bias read on both sides of
// the pool and another input after it): one group, the pool group's inputs after the conv
// group's, each value once.

// CHECK-LABEL: func.func @ops_after_the_pool
// CHECK-SAME:    (%[[X:.*]]: tensor<1x16x14x14xf32>, %[[W:.*]]: tensor<32x16x3x3xf32>, %[[B:.*]]: tensor<32xf32>, %[[S:.*]]: tensor<1x32x7x7xf32>)
// CHECK:         %[[G:.*]] = relay.fused(%[[X]], %[[W]], %[[B]], %[[S]]) {se_scope = #relay.se_scope<device = cpu>, kernel_name = "fused_nn_conv2d_nn_bias_add_nn_max_pool2d_nn_bias_add_add_nn_relu"}
// CHECK-NEXT:    ^{{.*}}(%[[BX:.*]]: tensor<1x16x14x14xf32>, %[[BW:.*]]: tensor<32x16x3x3xf32>, %[[BB:.*]]: tensor<32xf32>, %[[BS:.*]]: tensor<1x32x7x7xf32>):
// CHECK-NEXT:      %[[C:.*]] = relay.nn.conv2d %[[BX]], %[[BW]]
// CHECK-NEXT:      %[[D:.*]] = relay.nn.bias_add %[[C]], %[[BB]]
// CHECK-NEXT:      %[[P:.*]] = relay.nn.max_pool2d %[[D]]
// CHECK-NEXT:      %[[E:.*]] = relay.nn.bias_add %[[P]], %[[BB]]
// CHECK-NEXT:      %[[A:.*]] = relay.add %[[E]], %[[BS]]
// CHECK-NEXT:      %[[R:.*]] = relay.nn.relu %[[A]]
// CHECK-NEXT:      relay.yield %[[R]] : tensor<1x32x7x7xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[G]]
func.func @ops_after_the_pool(%x: tensor<1x16x14x14xf32>, %w: tensor<32x16x3x3xf32>, %b: tensor<32xf32>, %s: tensor<1x32x7x7xf32>) -> tensor<1x32x7x7xf32> {
  %c = relay.nn.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>, se_scope = #relay.se_scope<device = cpu>} : (tensor<1x16x14x14xf32>, tensor<32x16x3x3xf32>) -> tensor<1x32x14x14xf32>
  %d = relay.nn.bias_add %c, %b {se_scope = #relay.se_scope<device = cpu>} : (tensor<1x32x14x14xf32>, tensor<32xf32>) -> tensor<1x32x14x14xf32>
  %p = relay.nn.max_pool2d %d {pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>, se_scope = #relay.se_scope<device = cpu>} : (tensor<1x32x14x14xf32>) -> tensor<1x32x7x7xf32>
  %e = relay.nn.bias_add %p, %b {se_scope = #relay.se_scope<device = cpu>} : (tensor<1x32x7x7xf32>, tensor<32xf32>) -> tensor<1x32x7x7xf32>
  %a = relay.add %e, %s {se_scope = #relay.se_scope<device = cpu>} : (tensor<1x32x7x7xf32>, tensor<1x32x7x7xf32>) -> tensor<1x32x7x7xf32>
  %r = relay.nn.relu %a {se_scope = #relay.se_scope<device = cpu>} : tensor<1x32x7x7xf32>
  func.return %r : tensor<1x32x7x7xf32>
}

// -----

// The same on opencl: conv_taps pools 2 x 2 windows in its stores there; one group.

// CHECK-LABEL: func.func @conv_taps_on_opencl
// CHECK:         relay.fused({{.*}}) {se_scope = #relay.se_scope<device = opencl>, kernel_name = "fused_nn_conv2d_nn_max_pool2d"}
// CHECK-SAME:        -> tensor<1x16x14x14xf32>
// CHECK-NOT:     relay.fused
func.func @conv_taps_on_opencl(%x: tensor<1x1x28x28xf32>, %w: tensor<16x1x3x3xf32>) -> tensor<1x16x14x14xf32> {
  %c = relay.nn.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>, se_scope = #relay.se_scope<device = opencl>} : (tensor<1x1x28x28xf32>, tensor<16x1x3x3xf32>) -> tensor<1x16x28x28xf32>
  %p = relay.nn.max_pool2d %c {pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>, se_scope = #relay.se_scope<device = opencl>} : (tensor<1x16x28x28xf32>) -> tensor<1x16x14x14xf32>
  func.return %p : tensor<1x16x14x14xf32>
}
