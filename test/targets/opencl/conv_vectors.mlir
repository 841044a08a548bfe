// RUN: opt-tool %s -p 'plan-devices{targets="opencl -vector-width=16"},fuse-ops,convert-relay-to-loops' | filecheck %s --check-prefix=IR
// RUN: opt-tool %s -p 'plan-devices{targets="opencl -vector-width=16"},fuse-ops,convert-relay-to-loops,dce,licm,cse,split-reductions' -t opencl | filecheck %s --check-prefix=CL

// An opencl conv2d (unit stride across) gets the conv_vectors schedule: a work item per
// output row of a block of 4 output channels, 10 columns in two float8 sums per channel,
// carried through the loops over input channels and window rows. Tap 0 falls on the
// padding at column 0 (lane 0 of the first vector), tap 2 at column 9 (lane 1 of the
// second): their weight vectors have 0 in those lanes, which meet the row's zeros, so a
// NaN or inf weight there adds nothing. The epilogue (bias, relu) reads the sums from a
// scratch block.

// IR:       func.func @fused_nn_conv2d_nn_bias_add_nn_relu({{.*}}) attributes {{{.*}}relay.schedule = "conv_vectors"}
// IR:         vector.fma

// CL-LABEL: __kernel void fused_nn_conv2d_nn_bias_add_nn_relu(
// CL:         if (gid0 >= 4) return;
// CL:         float [[ROW:buf[0-9]+]][18];
// CL:         float8 [[ZERO:v[0-9]+]] = (float8)(0.0f);
// CL:         for (long [[C:i[0-9]+]] = 0; [[C]] < 2; [[C]]++) {
// CL:           for (long [[I:i[0-9]+]] = {{.*}}) {
// CL:             float8 [[X0:v[0-9]+]] = *(const xr_float8u *)(&[[ROW]][0]);
// CL-NEXT:        float8 [[X1:v[0-9]+]] = *(const xr_float8u *)(&[[ROW]][8]);
// CL-NEXT:        float [[W:v[0-9]+]] = in1[{{.*}}];
// CL-NEXT:        float8 [[WV:v[0-9]+]] = (float8)([[W]]);
// CL-NEXT:        float8 [[WM:v[0-9]+]] = (float8)(0.0f, [[WV]].s1, [[WV]].s2, [[WV]].s3, [[WV]].s4, [[WV]].s5, [[WV]].s6, [[WV]].s7);
// CL-NEXT:        float8 {{v[0-9]+}} = fma([[X0]], [[WM]], {{v[0-9]+}});
// CL-NEXT:        float8 {{v[0-9]+}} = fma([[X1]], [[WV]], {{v[0-9]+}});
// CL:             float8 {{v[0-9]+}} = *(const xr_float8u *)(&[[ROW]][10]);
// CL:             float8 {{v[0-9]+}} = (float8)({{v[0-9]+}}.s0, 0.0f, {{.*}});
// CL:         float [[SUMS:buf[0-9]+]][64];
// CL:         *(xr_float8u *)(&[[SUMS]][0]) = {{v[0-9]+}};
// CL:         *(xr_float8u *)(&[[SUMS]][8]) = {{v[0-9]+}};
// CL:         for (long [[B:i[0-9]+]] = 0; [[B]] < 4; [[B]]++) {
// CL-NEXT:      for (long [[OW:i[0-9]+]] = 0; [[OW]] < 10; [[OW]]++) {
// CL-NEXT:        float {{v[0-9]+}} = [[SUMS]][[[B]] * 16 + [[OW]]];
func.func @main(%x: tensor<1x2x4x10xf32>, %w: tensor<4x2x3x3xf32>, %b: tensor<4xf32>) -> tensor<1x4x4x10xf32> {
  %0 = relay.nn.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x2x4x10xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x4x10xf32>
  %1 = relay.nn.bias_add %0, %b : (tensor<1x4x4x10xf32>, tensor<4xf32>) -> tensor<1x4x4x10xf32>
  %2 = relay.nn.relu %1 : tensor<1x4x4x10xf32>
  func.return %2 : tensor<1x4x4x10xf32>
}
