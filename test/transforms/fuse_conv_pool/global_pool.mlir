// RUN: opt-tool %s --split-input-file -p fuse-ops,fuse-conv-pool | filecheck %s

// A 1 x 1 conv group and the global_avg_pool2d group that alone reads it become one group
// yielding the pool (pointwise_conv sums each channel over its pixels); with a second reader
// of the conv's result, or a 3 x 3 conv (no schedule sums its blocks), the groups stay.

// MobileNetV2's last conv (bias, relu6) and its pool, made small: one group, ops in order.

// CHECK-LABEL: func.func @conv_relu6_global_pool
// CHECK-SAME:    (%[[X:.*]]: tensor<1x32x7x7xf32>, %[[W:.*]]: tensor<160x32x1x1xf32>, %[[B:.*]]: tensor<160xf32>)
// CHECK:         %[[G:.*]] = relay.fused(%[[X]], %[[W]], %[[B]]) {se_scope = #relay.se_scope<device = cpu>, kernel_name = "fused_nn_conv2d_nn_bias_add_clip_nn_global_avg_pool2d"}
// CHECK-SAME:        -> tensor<1x160x1x1xf32>
// CHECK-NEXT:    ^{{.*}}(%[[BX:.*]]: tensor<1x32x7x7xf32>, %[[BW:.*]]: tensor<160x32x1x1xf32>, %[[BB:.*]]: tensor<160xf32>):
// CHECK-NEXT:      %[[C:.*]] = relay.nn.conv2d %[[BX]], %[[BW]]
// CHECK-NEXT:      %[[D:.*]] = relay.nn.bias_add %[[C]], %[[BB]]
// CHECK-NEXT:      %[[R:.*]] = relay.clip %[[D]]
// CHECK-NEXT:      %[[P:.*]] = relay.nn.global_avg_pool2d %[[R]]
// CHECK-NEXT:      relay.yield %[[P]] : tensor<1x160x1x1xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[G]]
func.func @conv_relu6_global_pool(%x: tensor<1x32x7x7xf32>, %w: tensor<160x32x1x1xf32>, %b: tensor<160xf32>) -> tensor<1x160x1x1xf32> {
  %c = relay.nn.conv2d %x, %w {se_scope = #relay.se_scope<device = cpu>} : (tensor<1x32x7x7xf32>, tensor<160x32x1x1xf32>) -> tensor<1x160x7x7xf32>
  %d = relay.nn.bias_add %c, %b {se_scope = #relay.se_scope<device = cpu>} : (tensor<1x160x7x7xf32>, tensor<160xf32>) -> tensor<1x160x7x7xf32>
  %r = relay.clip %d {a_min = 0.0 : f32, a_max = 6.0 : f32, se_scope = #relay.se_scope<device = cpu>} : tensor<1x160x7x7xf32>
  %p = relay.nn.global_avg_pool2d %r {se_scope = #relay.se_scope<device = cpu>} : (tensor<1x160x7x7xf32>) -> tensor<1x160x1x1xf32>
  func.return %p : tensor<1x160x1x1xf32>
}

// -----

// The conv's result read by the pool and returned too (a squeeze-excite block's shape): two groups.

// CHECK-LABEL: func.func @two_readers
// CHECK:         relay.fused({{.*}}) {se_scope = #relay.se_scope<device = cpu>, kernel_name = "fused_nn_conv2d_clip"}
// CHECK:         relay.fused({{.*}}) {se_scope = #relay.se_scope<device = cpu>, kernel_name = "fused_nn_global_avg_pool2d"}
// CHECK-NOT:     relay.fused
func.func @two_readers(%x: tensor<1x32x7x7xf32>, %w: tensor<160x32x1x1xf32>) -> (tensor<1x160x1x1xf32>, tensor<1x160x7x7xf32>) {
  %c = relay.nn.conv2d %x, %w {se_scope = #relay.se_scope<device = cpu>} : (tensor<1x32x7x7xf32>, tensor<160x32x1x1xf32>) -> tensor<1x160x7x7xf32>
  %r = relay.clip %c {a_min = 0.0 : f32, a_max = 6.0 : f32, se_scope = #relay.se_scope<device = cpu>} : tensor<1x160x7x7xf32>
  %p = relay.nn.global_avg_pool2d %r {se_scope = #relay.se_scope<device = cpu>} : (tensor<1x160x7x7xf32>) -> tensor<1x160x1x1xf32>
  func.return %p, %r : tensor<1x160x1x1xf32>, tensor<1x160x7x7xf32>
}

// -----

// A 3 x 3 conv: no schedule sums its blocks, so the pool stays a group of its own.

// CHECK-LABEL: func.func @three_by_three
// CHECK-COUNT-2: relay.fused
// CHECK-NOT:     relay.fused
func.func @three_by_three(%x: tensor<1x64x7x7xf32>, %w: tensor<64x64x3x3xf32>) -> tensor<1x64x1x1xf32> {
  %c = relay.nn.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>, se_scope = #relay.se_scope<device = cpu>} : (tensor<1x64x7x7xf32>, tensor<64x64x3x3xf32>) -> tensor<1x64x7x7xf32>
  %p = relay.nn.global_avg_pool2d %c {se_scope = #relay.se_scope<device = cpu>} : (tensor<1x64x7x7xf32>) -> tensor<1x64x1x1xf32>
  func.return %p : tensor<1x64x1x1xf32>
}
