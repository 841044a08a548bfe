// RUN: opt-tool %s -p convert-relay-to-loops | filecheck %s

// A cpu conv2d of one input channel (with its bias and relu) gets conv_taps: a work item per
// image (its 30 padded rows of 30, then 48 zeros); the weights' finite test, a sum per tap;
// when they are finite, per output vector its 9 taps loaded once, then a loop over the 16
// output channels, each a chain of 9 fused multiply-adds whose sums get the epilogue; else
// every output of the work item directly.

// CHECK-LABEL: func.func @fused_nn_conv2d_nn_bias_add_nn_relu(
// CHECK-SAME:    attributes {relay.se_scope = {{.*}}, relay.schedule = "conv_taps"}
// CHECK:         "scf.parallel"
// CHECK:           memref.alloca() : memref<948xf32>
// CHECK:           scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) -> (f32, f32, f32, f32, f32, f32, f32, f32, f32)
// CHECK:           %[[FINITE:.*]] = arith.cmpf oeq, %{{.*}}, %{{.*}} : f32
// CHECK:           scf.if %[[FINITE]] {
// CHECK-COUNT-9:     vector.load
// CHECK:             scf.for
// CHECK-COUNT-9:       vector.fma {{.*}} : vector<16xf32>
// CHECK:               arith.maximumf
// CHECK:           } else {
// CHECK:             scf.for
// CHECK:             arith.maximumf
func.func @conv_bias_relu(%a: tensor<2x1x28x28xf32>, %w: tensor<16x1x3x3xf32>, %b: tensor<16xf32>) -> tensor<2x16x28x28xf32> {
  %0 = relay.fused(%a, %w, %b) {kernel_name = "fused_nn_conv2d_nn_bias_add_nn_relu", se_scope = #relay.se_scope<device = cpu, id = 0, target = "c -march=x86-64-v4", memory = "global">} : (tensor<2x1x28x28xf32>, tensor<16x1x3x3xf32>, tensor<16xf32>) -> tensor<2x16x28x28xf32> {
  ^bb0(%x: tensor<2x1x28x28xf32>, %y: tensor<16x1x3x3xf32>, %z: tensor<16xf32>):
    %1 = relay.nn.conv2d %x, %y {padding = array<i64: 1, 1, 1, 1>} : (tensor<2x1x28x28xf32>, tensor<16x1x3x3xf32>) -> tensor<2x16x28x28xf32>
    %2 = relay.nn.bias_add %1, %z : (tensor<2x16x28x28xf32>, tensor<16xf32>) -> tensor<2x16x28x28xf32>
    %3 = relay.nn.relu %2 : tensor<2x16x28x28xf32>
    relay.yield %3 : tensor<2x16x28x28xf32>
  }
  func.return %0 : tensor<2x16x28x28xf32>
}
