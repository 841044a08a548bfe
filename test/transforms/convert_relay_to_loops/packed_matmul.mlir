// RUN: opt-tool %s -p convert-relay-to-loops --split-input-file | filecheck %s
// RUN: opt-tool %s -p convert-relay-to-loops,dce,licm,cse -t c --split-input-file | filecheck %s --check-prefix=C

// A cpu dense of enough work: packed_matmul. A work item is a block of 128 x 128 outputs,
// here cut to the result's 64 rows; its rhs columns are packed into panels of 16 (a vector)
// by the k-block (256 of 784, three times, then 16), the block's sums kept in scratch; the
// micro-kernel adds broadcast-FMA products to 16 x 1 vectors per step, its 16 rows read
// where they lie in the input (784 floats apart, so in 16 L1 sets; four blocks of columns
// would otherwise copy them four times); then the bias and tanh are applied to the block as
// it is stored.

// CHECK-LABEL: func.func @dense_bias_tanh
// CHECK:       func.func @fused_dense_bias_tanh({{.*}}) attributes {relay.se_scope = {{.*}}, relay.schedule = "packed_matmul"}
// CHECK:         "scf.parallel"
// CHECK:           memref.alloca() : memref<64x128xf32>
// CHECK:           memref.alloca() : memref<8x256x16xf32>
// CHECK-NOT:       memref.alloca
// CHECK:           scf.for
// CHECK:             memref.load %{{.*}} : memref<64x784xf32>
// CHECK-COUNT-16:    vector.fma
// CHECK:           math.tanh
// C-LABEL:     void fused_dense_bias_tanh(
// C:             float buf{{[0-9]+}}[8192];
// C-COUNT-16:    = xr_fma_f32x16(
func.func @dense_bias_tanh(%a: tensor<64x784xf32>, %w: tensor<512x784xf32>, %b: tensor<512xf32>) -> tensor<64x512xf32> {
  %0 = relay.fused(%a, %w, %b) {kernel_name = "fused_dense_bias_tanh", se_scope = #relay.se_scope<device = cpu, id = 0, target = "c -march=x86-64-v4", memory = "global">} : (tensor<64x784xf32>, tensor<512x784xf32>, tensor<512xf32>) -> tensor<64x512xf32> {
  ^bb0(%x: tensor<64x784xf32>, %y: tensor<512x784xf32>, %z: tensor<512xf32>):
    %1 = relay.nn.dense %x, %y : (tensor<64x784xf32>, tensor<512x784xf32>) -> tensor<64x512xf32>
    %2 = relay.nn.bias_add %1, %z : (tensor<64x512xf32>, tensor<512xf32>) -> tensor<64x512xf32>
    %3 = relay.tanh %2 : tensor<64x512xf32>
    relay.yield %3 : tensor<64x512xf32>
  }
  func.return %0 : tensor<64x512xf32>
}

// -----

// A batch_matmul (rhs transposed) of 4 x 128 x 64 by 4 x 128 x 64: the nest spans the batch
// (one block of 128 x 128 each); a single k-block (64); the rows copied (once: one block of
// columns).

// CHECK-LABEL: func.func @batch_matmul
// CHECK:       func.func @fused_batch_matmul({{.*}}) attributes {relay.se_scope = {{.*}}, relay.schedule = "packed_matmul"}
// CHECK:         %{{.*}} = arith.constant 4 : index
// CHECK:         "scf.parallel"
// CHECK:           memref.alloca() : memref<128x128xf32>
// CHECK:           memref.alloca() : memref<8x64x16xf32>
// CHECK:           memref.alloca() : memref<8x16x68xf32>
// C-LABEL:     void fused_batch_matmul(
// C:             for (long {{.*}} < 4;
// C:             xr_f32x16
func.func @batch_matmul(%a: tensor<4x128x64xf32>, %b: tensor<4x128x64xf32>) -> tensor<4x128x128xf32> {
  %0 = relay.fused(%a, %b) {kernel_name = "fused_batch_matmul", se_scope = #relay.se_scope<device = cpu, id = 0, target = "c -march=x86-64-v4", memory = "global">} : (tensor<4x128x64xf32>, tensor<4x128x64xf32>) -> tensor<4x128x128xf32> {
  ^bb0(%x: tensor<4x128x64xf32>, %y: tensor<4x128x64xf32>):
    %1 = relay.nn.batch_matmul %x, %y : (tensor<4x128x64xf32>, tensor<4x128x64xf32>) -> tensor<4x128x128xf32>
    relay.yield %1 : tensor<4x128x128xf32>
  }
  func.return %0 : tensor<4x128x128xf32>
}

// -----

// The same dense on opencl: packed_matmul_opencl, a work group per block.

// CHECK-LABEL: func.func @opencl_dense
// CHECK:       func.func @fused_opencl_dense({{.*}}) attributes {relay.se_scope = {{.*}}, relay.schedule = "packed_matmul_opencl", relay.work_group_per_item}
func.func @opencl_dense(%a: tensor<64x784xf32>, %w: tensor<512x784xf32>) -> tensor<64x512xf32> {
  %0 = relay.fused(%a, %w) {kernel_name = "fused_opencl_dense", se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl -vector-width=16", memory = "global">} : (tensor<64x784xf32>, tensor<512x784xf32>) -> tensor<64x512xf32> {
  ^bb0(%x: tensor<64x784xf32>, %y: tensor<512x784xf32>):
    %1 = relay.nn.dense %x, %y : (tensor<64x784xf32>, tensor<512x784xf32>) -> tensor<64x512xf32>
    relay.yield %1 : tensor<64x512xf32>
  }
  func.return %0 : tensor<64x512xf32>
}
