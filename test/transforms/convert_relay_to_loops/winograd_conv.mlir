// RUN: opt-tool %s -p convert-relay-to-loops --split-input-file | filecheck %s

// A cpu 3x3 conv2d of stride 1 with 16 channels in and out (with its bias and relu) gets
// winograd_conv, F(2x2, 3x3) at 12x12: a work item per image and block of tile rows (here one: 6 x 6 tiles); the
// weights' transform U (2 blocks of 8 channels x 16 positions x 16 x 8) from the taps copied
// per block; per chunk (4 tile rows of 6 tiles, pitch 7) the packed input (even and odd
// columns, 4 rows per tile row, 33 slots), its transform V (17 channel rows: one more than
// the 16), and per block of 8 channels the 16 products by the micro-kernel (vector sums),
// the output transform Y, the probe; when it is finite, the epilogue at each output column,
// else the block again output by output.

// CHECK-LABEL: func.func @fused_nn_conv2d_nn_bias_add_nn_relu(
// CHECK-SAME:    attributes {relay.se_scope = {{.*}}, relay.schedule = "winograd_conv"}
// CHECK:         "scf.parallel"
// CHECK:           memref.alloca() : memref<2x16x128xf32>
// CHECK:           memref.alloca() : memref<16x17x32xf32>
// CHECK:           memref.alloca() : memref<2x16x4x33xf32>
// CHECK:           memref.alloca() : memref<16x8x32xf32>
// CHECK:           memref.alloca() : memref<8x2x64xf32>
// CHECK:           memref.alloca() : memref<9x128xf32>
// CHECK:           arith.mulf %{{.*}}, %{{.*}} : f32
// CHECK:           arith.subf
// CHECK:           vector.fma {{.*}} : vector<16xf32>
// CHECK:           vector.store
// CHECK:           %[[FINITE:.*]] = arith.cmpf oeq, %{{.*}}, %{{.*}} : f32
// CHECK:           scf.if %[[FINITE]] {
// CHECK:             arith.maximumf
// CHECK:           } else {
// CHECK:             scf.for
// CHECK:             arith.maximumf
func.func @conv_bias_relu(%a: tensor<1x16x12x12xf32>, %w: tensor<16x16x3x3xf32>, %b: tensor<16xf32>) -> tensor<1x16x12x12xf32> {
  %0 = relay.fused(%a, %w, %b) {kernel_name = "fused_nn_conv2d_nn_bias_add_nn_relu", se_scope = #relay.se_scope<device = cpu, id = 0, target = "c -march=x86-64-v4", memory = "global">} : (tensor<1x16x12x12xf32>, tensor<16x16x3x3xf32>, tensor<16xf32>) -> tensor<1x16x12x12xf32> {
  ^bb0(%x: tensor<1x16x12x12xf32>, %y: tensor<16x16x3x3xf32>, %z: tensor<16xf32>):
    %1 = relay.nn.conv2d %x, %y {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x16x12x12xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x12x12xf32>
    %2 = relay.nn.bias_add %1, %z : (tensor<1x16x12x12xf32>, tensor<16xf32>) -> tensor<1x16x12x12xf32>
    %3 = relay.nn.relu %2 : tensor<1x16x12x12xf32>
    relay.yield %3 : tensor<1x16x12x12xf32>
  }
  func.return %0 : tensor<1x16x12x12xf32>
}

// -----

// At 32x32 (8 x 8 tiles of 4 x 4) it is F(4x4, 3x3): 36 products per tile; U (2 blocks x 36
// positions x 16 x 8), V (36 x 17 x 32 slots), the input packed by column mod 4 (4 x 16 x 6
// rows x 33 slots), M (36 x 8 x 32) and Y (8 channels x 4 rows x 4 x 32 columns).

// CHECK-LABEL: func.func @fused_nn_conv2d(
// CHECK-SAME:    attributes {relay.se_scope = {{.*}}, relay.schedule = "winograd_conv"}
// CHECK:         "scf.parallel"
// CHECK:           memref.alloca() : memref<2x36x128xf32>
// CHECK:           memref.alloca() : memref<36x17x32xf32>
// CHECK:           memref.alloca() : memref<4x16x6x33xf32>
// CHECK:           memref.alloca() : memref<36x8x32xf32>
// CHECK:           memref.alloca() : memref<8x4x128xf32>
// CHECK:           vector.fma {{.*}} : vector<16xf32>
// CHECK:           scf.if
func.func @conv_f4(%a: tensor<1x16x32x32xf32>, %w: tensor<16x16x3x3xf32>) -> tensor<1x16x32x32xf32> {
  %0 = relay.fused(%a, %w) {kernel_name = "fused_nn_conv2d", se_scope = #relay.se_scope<device = cpu, id = 0, target = "c -march=x86-64-v4", memory = "global">} : (tensor<1x16x32x32xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x32x32xf32> {
  ^bb0(%x: tensor<1x16x32x32xf32>, %y: tensor<16x16x3x3xf32>):
    %1 = relay.nn.conv2d %x, %y {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x16x32x32xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x32x32xf32>
    relay.yield %1 : tensor<1x16x32x32xf32>
  }
  func.return %0 : tensor<1x16x32x32xf32>
}
