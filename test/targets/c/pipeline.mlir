// RUN: opt-tool %s -p 'plan-devices{targets=c,opencl default-device=cpu},fuse-ops,convert-relay-to-loops' -t c | filecheck %s --check-prefix=C
// RUN: opt-tool %s -p 'plan-devices{targets=c,opencl default-device=cpu},fuse-ops,convert-relay-to-loops' -t opencl | filecheck %s --check-prefix=CL

// The whole pipeline: dense+bias_add+relu on the cpu, softmax pinned to opencl. Each target
// prints the kernels of its own scope, with the signatures of DESIGN.md §3. A dense work item
// computes 2 outputs (6 columns: the largest block up to 4 that divides them).

func.func @main(%x: tensor<4x8xf32>, %w: tensor<6x8xf32>, %b: tensor<6xf32>) -> tensor<4x6xf32> {
  %0 = relay.nn.dense %x, %w : (tensor<4x8xf32>, tensor<6x8xf32>) -> tensor<4x6xf32>
  %1 = relay.nn.bias_add %0, %b : (tensor<4x6xf32>, tensor<6xf32>) -> tensor<4x6xf32>
  %2 = relay.nn.relu %1 : tensor<4x6xf32>
  %h = relay.on_device %2 {se_scope = #relay.se_scope<device = cpu>} : tensor<4x6xf32>
  %3 = relay.nn.softmax %h : (tensor<4x6xf32>) -> tensor<4x6xf32>
  %4 = relay.on_device %3 {se_scope = #relay.se_scope<device = opencl>} : tensor<4x6xf32>
  func.return %4 : tensor<4x6xf32>
}

// C: #include <math.h>
// C-LABEL: void fused_nn_dense_nn_bias_add_nn_relu(
// C-SAME: const float *restrict in0, const float *restrict in1, const float *restrict in2, float *restrict out0) {
// C-NEXT: for (long [[I:[a-z_0-9]+]] = 0; [[I]] < 4; [[I]]++) {
// C-NEXT: for (long [[JB:[a-z_0-9]+]] = 0; [[JB]] < 3; [[JB]]++) {
// C-NEXT: long [[J0:[a-z_0-9]+]] = [[JB]] * 2;
// C-NEXT: long [[J1:[a-z_0-9]+]] = [[J0]] + 1;
// C: #pragma omp simd reduction(+:[[A0:[a-z_0-9]+]]) reduction(+:[[A1:[a-z_0-9]+]])
// C: for (long [[K:[a-z_0-9]+]] = 0; [[K]] < 8; [[K]]++) {
// C: in0[[[I]] * 8 + [[K]]]
// C: in1[[[J0]] * 8 + [[K]]]
// C: in1[[[J1]] * 8 + [[K]]]
// C: in2[[[J0]]]
// C: ? {{.*}} : 0.0f;
// C: out0[[[I]] * 6 + [[J0]]] =
// C: in2[[[J1]]]
// C: ? {{.*}} : 0.0f;
// C: out0[[[I]] * 6 + [[J1]]] =
// C-NOT: softmax

// CL-NOT: dense
// CL-LABEL: __kernel void fused_nn_softmax(
// CL-SAME: __global const float *in0, __global float *out0) {
// CL-NEXT: const long gid0 = get_global_id(0);
// CL-NEXT: if (gid0 >= 4) return;
// CL: exp(
// CL-NOT: dense
