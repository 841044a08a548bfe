// RUN: opt-tool %s -p convert-relay-to-loops | filecheck %s

// A cpu conv2d of stride 1 (with its bias and relu) gets packed_conv: a work item per image
// and block of output rows; the packed tile (4 channels x 14 padded rows of 22, then 48
// zeros); the micro-kernel's vector sums (8 channels x 3 vectors) stored to a scratch
// block; when they are all finite, the epilogue at each output column that is not padding,
// else the block again output by output.

// CHECK-LABEL: func.func @fused_nn_conv2d_nn_bias_add_nn_relu(
// CHECK-SAME:    attributes {relay.se_scope = {{.*}}, relay.schedule = "packed_conv"}
// CHECK:         "scf.parallel"
// CHECK:           memref.alloca() : memref<1280xf32>
// CHECK:           vector.fma {{.*}} : vector<16xf32>
// CHECK:           memref.alloca() : memref<8x48xf32>
// CHECK:           %[[FINITE:.*]] = arith.cmpf oeq, %{{.*}}, %{{.*}} : f32
// CHECK:           scf.if %[[FINITE]] {
// CHECK:             arith.maximumf
// CHECK:           } else {
// CHECK:             scf.for
// CHECK:             arith.maximumf
func.func @conv_bias_relu(%a: tensor<2x4x12x20xf32>, %w: tensor<8x4x3x3xf32>, %b: tensor<8xf32>) -> tensor<2x8x12x20xf32> {
  %0 = relay.fused(%a, %w, %b) {kernel_name = "fused_nn_conv2d_nn_bias_add_nn_relu", se_scope = #relay.se_scope<device = cpu, id = 0, target = "c -march=x86-64-v4", memory = "global">} : (tensor<2x4x12x20xf32>, tensor<8x4x3x3xf32>, tensor<8xf32>) -> tensor<2x8x12x20xf32> {
  ^bb0(%x: tensor<2x4x12x20xf32>, %y: tensor<8x4x3x3xf32>, %z: tensor<8xf32>):
    %1 = relay.nn.conv2d %x, %y {padding = array<i64: 1, 1, 1, 1>} : (tensor<2x4x12x20xf32>, tensor<8x4x3x3xf32>) -> tensor<2x8x12x20xf32>
    %2 = relay.nn.bias_add %1, %z : (tensor<2x8x12x20xf32>, tensor<8xf32>) -> tensor<2x8x12x20xf32>
    %3 = relay.nn.relu %2 : tensor<2x8x12x20xf32>
    relay.yield %3 : tensor<2x8x12x20xf32>
  }
  func.return %0 : tensor<2x8x12x20xf32>
}
