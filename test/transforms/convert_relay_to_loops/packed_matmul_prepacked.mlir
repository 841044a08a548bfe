// RUN: opt-tool %s -p convert-relay-to-loops,dce --split-input-file | filecheck %s
// RUN: opt-tool %s -p convert-relay-to-loops,dce,licm,cse -t c --split-input-file | filecheck %s --check-prefix=C

// A cpu dense of enough work whose weight is a constant of @main (a param bound at build
// time): packed_matmul_prepacked. The weight (80 columns: one block of 80, five panels of
// 16) becomes a new constant in the micro-kernel's panels [n / 16, k, n % 16], marked
// relay.packed_from, and the launch passes it in place of the weight, which dce drops (no
// other user). The kernel has no panel scratch and no pack loop: the micro-kernel loads its
// vectors from the packed input, each step after a prefetch of the packed stream PREFETCH_AHEAD (128) steps
// on, panel by panel (5), each for both row tiles in turn. (A splat keeps the test short; a
// bound param is not one.)

// CHECK-LABEL: func.func @dense_bias
// CHECK-NOT:     } : tensor<80x72xf32>
// CHECK:         %[[P:.*]] = relay.constant {relay.packed_from = "dense weight tensor<80x72xf32>: panels [n / 16, k, n % 16]", value = dense<5.000000e-01> : tensor<5x72x16xf32>{{.*}}} : tensor<5x72x16xf32>
// CHECK-NOT:     } : tensor<80x72xf32>
// CHECK:         relay.launch @fused_dense_bias(%{{.*}}, %[[P]], %{{.*}}) {{.*}} : (tensor<32x72xf32>, tensor<5x72x16xf32>, tensor<80xf32>) -> tensor<32x80xf32>
// CHECK:       func.func @fused_dense_bias(%in0: memref<32x72xf32>, %in1: memref<5x72x16xf32>, %in2: memref<80xf32>, %out0: memref<32x80xf32>) attributes {relay.se_scope = {{.*}}, relay.schedule = "packed_matmul_prepacked"}
// CHECK:         "scf.parallel"
// CHECK:           memref.alloca() : memref<32x80xf32>
// CHECK-NOT:       memref.alloca() : memref<5x72x16xf32>
// CHECK:           memref.alloca() : memref<2x16x76xf32>
// CHECK-NOT:       memref.alloca
// CHECK:           cpu.prefetch %in1[
// CHECK-NEXT:        vector.load %in1[
// CHECK-COUNT-16:    vector.fma
// C-LABEL:     void fused_dense_bias(
// C-NOT:         float buf{{[0-9]+}}[5760];
// C:             for (long [[P:i[0-9]+]] = 0; [[P]] < 5; [[P]]++) {
// C:               for (long [[T:i[0-9]+]] = 0; [[T]] < 2; [[T]]++) {
// C:                 __builtin_prefetch((const void *)((__UINTPTR_TYPE__)in1 + sizeof *in1 * (
// C-COUNT-16:    = xr_fma_f32x16(
func.func @dense_bias(%a: tensor<32x72xf32>, %b: tensor<80xf32>) -> tensor<32x80xf32> {
  %w = relay.constant {value = dense<0.5> : tensor<80x72xf32>, se_scope = #relay.se_scope<device = cpu, id = 0, target = "c -march=x86-64-v4", memory = "global">} : tensor<80x72xf32>
  %0 = relay.fused(%a, %w, %b) {kernel_name = "fused_dense_bias", se_scope = #relay.se_scope<device = cpu, id = 0, target = "c -march=x86-64-v4", memory = "global">} : (tensor<32x72xf32>, tensor<80x72xf32>, tensor<80xf32>) -> tensor<32x80xf32> {
  ^bb0(%x: tensor<32x72xf32>, %y: tensor<80x72xf32>, %z: tensor<80xf32>):
    %1 = relay.nn.dense %x, %y : (tensor<32x72xf32>, tensor<80x72xf32>) -> tensor<32x80xf32>
    %2 = relay.nn.bias_add %1, %z : (tensor<32x80xf32>, tensor<80xf32>) -> tensor<32x80xf32>
    relay.yield %2 : tensor<32x80xf32>
  }
  func.return %0 : tensor<32x80xf32>
}

// -----

// The weight is also read outside a dense's weight (here by a tanh): it is kept for that
// group, next to its packed form for the dense's.

// CHECK-LABEL: func.func @shared
// CHECK:         %[[W:.*]] = relay.constant {value = dense<5.000000e-01> : tensor<80x72xf32>{{.*}}} : tensor<80x72xf32>
// CHECK-NEXT:    %[[P:.*]] = relay.constant {relay.packed_from = "dense weight tensor<80x72xf32>: panels [n / 16, k, n % 16]"{{.*}}} : tensor<5x72x16xf32>
// CHECK:         relay.launch @fused_dense(%{{.*}}, %[[P]])
// CHECK:         relay.launch @fused_tanh(%[[W]])
// CHECK:       func.func @fused_dense({{.*}}) attributes {{{.*}}relay.schedule = "packed_matmul_prepacked"}
func.func @shared(%a: tensor<32x72xf32>) -> (tensor<32x80xf32>, tensor<80x72xf32>) {
  %w = relay.constant {value = dense<0.5> : tensor<80x72xf32>, se_scope = #relay.se_scope<device = cpu, id = 0, target = "c -march=x86-64-v4", memory = "global">} : tensor<80x72xf32>
  %0 = relay.fused(%a, %w) {kernel_name = "fused_dense", se_scope = #relay.se_scope<device = cpu, id = 0, target = "c -march=x86-64-v4", memory = "global">} : (tensor<32x72xf32>, tensor<80x72xf32>) -> tensor<32x80xf32> {
  ^bb0(%x: tensor<32x72xf32>, %y: tensor<80x72xf32>):
    %1 = relay.nn.dense %x, %y : (tensor<32x72xf32>, tensor<80x72xf32>) -> tensor<32x80xf32>
    relay.yield %1 : tensor<32x80xf32>
  }
  %2 = relay.fused(%w) {kernel_name = "fused_tanh", se_scope = #relay.se_scope<device = cpu, id = 0, target = "c -march=x86-64-v4", memory = "global">} : (tensor<80x72xf32>) -> tensor<80x72xf32> {
  ^bb0(%y: tensor<80x72xf32>):
    %3 = relay.tanh %y : tensor<80x72xf32>
    relay.yield %3 : tensor<80x72xf32>
  }
  func.return %0, %2 : tensor<32x80xf32>, tensor<80x72xf32>
}
