// RUN: opt-tool %s -p 'plan-devices{targets=c},fuse-ops,convert-relay-to-loops' -t c | filecheck %s --check-prefix=C
// RUN: opt-tool %s -p 'plan-devices{targets=opencl},fuse-ops,convert-relay-to-loops' -t opencl | filecheck %s --check-prefix=CL

// int64 and bool tensors in kernels: token ids index an embedding table (made non-negative
// and clipped into range), a mask compared and negated. int64 is C's and OpenCL's `long`;
// a bool element is stored in a byte (`unsigned char`, `uchar`) and computed as an int 0 or 1.

func.func @main(%ids: tensor<1x4xi64>, %mask: tensor<1x4xi64>, %e: tensor<50x8xf32>) -> (tensor<1x4x8xf32>, tensor<1x4xi1>) {
  %0 = relay.take %e, %ids {axis = 0 : i64} : (tensor<50x8xf32>, tensor<1x4xi64>) -> tensor<1x4x8xf32>
  %1 = relay.constant {value = dense<0> : tensor<1xi64>} : tensor<1xi64>
  %2 = relay.equal %mask, %1 : (tensor<1x4xi64>, tensor<1xi64>) -> tensor<1x4xi1>
  %3 = relay.logical_not %2 : tensor<1x4xi1>
  func.return %0, %3 : tensor<1x4x8xf32>, tensor<1x4xi1>
}

// C-LABEL: void fused_take(const float *restrict in0, const long *restrict in1, float *restrict out0) {
// C:         long [[ID:v[0-9]+]] = in1[{{.*}}];
// C-NEXT:    int [[NEG:v[0-9]+]] = [[ID]] < 0;
// C-NEXT:    long [[UP:v[0-9]+]] = [[ID]] + 50;
// C-NEXT:    long [[POS:v[0-9]+]] = [[NEG]] ? [[UP]] : [[ID]];
// C-NEXT:    long [[LO:v[0-9]+]] = [[POS]] > 0 ? [[POS]] : 0;
// C-NEXT:    long [[HI:v[0-9]+]] = [[LO]] < 49 ? [[LO]] : 49;
// C-NEXT:    long [[ROW:v[0-9]+]] = (long)[[HI]];
// C-NEXT:    float {{v[0-9]+}} = in0[[[ROW]] * 8 + {{.*}}];
// C-LABEL: void fused_equal_logical_not(const long *restrict in0, const long *restrict in1, unsigned char *restrict out0) {
// C:         int [[EQ:v[0-9]+]] = {{v[0-9]+}} == {{v[0-9]+}};
// C-NEXT:    int [[NOT:v[0-9]+]] = [[EQ]] ^ 1;
// C-NEXT:    out0[{{.*}}] = [[NOT]];

// CL-LABEL: __kernel void fused_take(__global const float *in0, __global const long *in1, __global float *out0) {
// CL-LABEL: __kernel void fused_equal_logical_not(__global const long *in0, __global const long *in1, __global uchar *out0) {
// CL:         int [[NOT:v[0-9]+]] = {{v[0-9]+}} ^ 1;
// CL-NEXT:    out0[{{.*}}] = [[NOT]];
