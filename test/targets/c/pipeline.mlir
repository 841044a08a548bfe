// RUN: opt-tool %s -p 'plan-devices{targets=c,opencl default-device=cpu},fuse-ops,convert-relay-to-loops' -t c | filecheck %s --check-prefix=C
// RUN: opt-tool %s -p 'plan-devices{targets=c,opencl default-device=cpu},fuse-ops,convert-relay-to-loops' -t opencl | filecheck %s --check-prefix=CL

// The whole pipeline: dense+bias_add+relu on the cpu, softmax pinned to opencl. Each target
// prints the kernels of its own scope, with the signatures of DESIGN.md §3. The C dense (a
// short dot product) takes rows of outputs per work item: its weight copied transposed into
// scratch, the rows summed with the columns innermost, then the epilogue along the rows.

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
// C-NEXT: for (long [[T:[a-z_0-9]+]] = 0; [[T]] < 1; [[T]]++) {
// C-NEXT: float [[WT:[a-z_0-9]+]][48];
// C-NEXT: for (long [[J:[a-z_0-9]+]] = 0; [[J]] < 6; [[J]]++) {
// C-NEXT: for (long [[K:[a-z_0-9]+]] = 0; [[K]] < 8; [[K]]++) {
// C-NEXT: float [[W:[a-z_0-9]+]] = in1[[[J]] * 8 + [[K]]];
// C-NEXT: [[WT]][[[K]] * 6 + [[J]]] = [[W]];
// C: float [[ACC:[a-z_0-9]+]][24];
// C: [[ACC]][{{.*}}] = 0.0f;
// C: for (long [[I:[a-z_0-9]+]] = 0; [[I]] < 4; [[I]]++) {
// C-NEXT: for (long [[K2:[a-z_0-9]+]] = 0; [[K2]] < 8; [[K2]]++) {
// C-NEXT: float [[X:[a-z_0-9]+]] = in0[[[I]] * 8 + [[K2]]];
// C-NEXT: for (long [[J2:[a-z_0-9]+]] = 0; [[J2]] < 6; [[J2]]++) {
// C-NEXT: float [[WV:[a-z_0-9]+]] = [[WT]][[[K2]] * 6 + [[J2]]];
// C-NEXT: float [[S:[a-z_0-9]+]] = [[ACC]][[[I]] * 6 + [[J2]]];
// C-NEXT: float [[P:[a-z_0-9]+]] = [[X]] * [[WV]];
// C-NEXT: float [[N:[a-z_0-9]+]] = [[S]] + [[P]];
// C-NEXT: [[ACC]][[[I]] * 6 + [[J2]]] = [[N]];
// C: for (long [[I3:[a-z_0-9]+]] = 0; [[I3]] < 4; [[I3]]++) {
// C-NEXT: #pragma GCC unroll 1
// C-NEXT: for (long [[J3:[a-z_0-9]+]] = 0; [[J3]] < 6; [[J3]]++) {
// C-NEXT: float [[D:[a-z_0-9]+]] = [[ACC]][[[I3]] * 6 + [[J3]]];
// C-NEXT: float [[BV:[a-z_0-9]+]] = in2[[[J3]]];
// C-NEXT: float [[E:[a-z_0-9]+]] = [[D]] + [[BV]];
// C-NEXT: float [[R:[a-z_0-9]+]] = (0.0f >= [[E]] ? 0.0f : [[E]]);
// C-NEXT: out0[[[I3]] * 6 + [[J3]]] = [[R]];
// C-NOT: softmax

// CL-NOT: dense
// CL-LABEL: __kernel void fused_nn_softmax(
// CL-SAME: __global const float *in0, __global float *out0) {
// CL-NEXT: const long gid0 = get_global_id(0);
// CL-NEXT: if (gid0 >= 4) return;
// CL: exp(
// CL-NOT: dense
