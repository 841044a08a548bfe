// RUN: opt-tool %s -p 'plan-devices{targets="opencl -vector-width=16"},fuse-ops,convert-relay-to-loops' | filecheck %s --check-prefix=IR
// RUN: opt-tool %s -p 'plan-devices{targets="opencl -vector-width=16"},fuse-ops,convert-relay-to-loops,dce,licm,cse,split-reductions' -t opencl | filecheck %s --check-prefix=CL

// An opencl 3x3 conv2d of stride 1 with enough work per image gets winograd_conv, as on the
// cpu: F(2x2, 3x3) here (12 x 12 tiles). One work item per image (too few tiles for two),
// launched as a work group of its own (`relay.work_group_per_item`: PoCL spreads such
// groups over its threads), its scratch as private arrays: U (4 blocks of 8
// channels x 16 positions x 32 x 8), V (16 positions x 33 channel rows, one more than the
// channels, x 32 slots), the packed chunk (2 x 32 channels x 4 rows x 33 slots), M, Y and
// the taps; the input transform V in `float16` vectors of 16 slots (2 per
// channel); the products are the micro-kernel's broadcast-FMAs on `float16`s (2 vectors of
// slots per channel of a block of 8), stored as float16s; then the probe, and the
// epilogue from Y when it is finite, else output by output.

// IR:       func.func @fused_nn_conv2d_nn_bias_add_nn_relu({{.*}}) attributes {{{.*}}relay.schedule = "winograd_conv", relay.work_group_per_item}
// IR:         vector.fma

// CL-LABEL: __kernel void fused_nn_conv2d_nn_bias_add_nn_relu(
// CL:         if (gid0 >= 1) return;
// CL-NEXT:    const long [[N:i[0-9]+]] = gid0;
// CL-NEXT:    float [[U:buf[0-9]+]][16384];
// CL-NEXT:    float [[V:buf[0-9]+]][16896];
// CL-NEXT:    float [[PACKED:buf[0-9]+]][8448];
// CL-NEXT:    float [[M:buf[0-9]+]][4096];
// CL-NEXT:    float [[Y:buf[0-9]+]][1024];
// CL-NEXT:    float [[TAPS:buf[0-9]+]][2304];
// CL:           long [[SLOT:v[0-9]+]] = {{i[0-9]+}} * 16;
// CL-NEXT:      float16 {{v[0-9]+}} = *(const xr_float16u *)(&[[PACKED]][[[IC:i[0-9]+]] * 132 + [[SLOT]]]);
// CL:           *(xr_float16u *)(&[[V]][[[IC]] * 32 + [[SLOT]]]) = {{v[0-9]+}};
// CL:         for (long [[XI:i[0-9]+]] = 0; [[XI]] < 16; [[XI]]++) {
// CL:           for (long [[C:i[0-9]+]] = 0; [[C]] < 32; [[C]]++) {
// CL-NEXT:        float16 [[V0:v[0-9]+]] = *(const xr_float16u *)(&[[V]][[[XI]] * 1056 + [[C]] * 32]);
// CL-NEXT:        float16 [[V1:v[0-9]+]] = *(const xr_float16u *)(&[[V]][[[XI]] * 1056 + [[C]] * 32 + 16]);
// CL-NEXT:        long {{v[0-9]+}} = [[C]] * 8;
// CL-NEXT:        float [[W:v[0-9]+]] = [[U]][{{.*}}];
// CL-NEXT:        float16 [[WV:v[0-9]+]] = (float16)([[W]]);
// CL-NEXT:        float16 {{v[0-9]+}} = fma([[V0]], [[WV]], {{v[0-9]+}});
// CL-NEXT:        float16 {{v[0-9]+}} = fma([[V1]], [[WV]], {{v[0-9]+}});
// CL:           *(xr_float16u *)(&[[M]][[[XI]] * 256]) = {{v[0-9]+}};
// CL:         int [[FINITE:v[0-9]+]] = {{v[0-9]+}} == 0.0f;
// CL-NEXT:    if ([[FINITE]]) {
// CL:         } else {
func.func @main(%x: tensor<1x32x24x24xf32>, %w: tensor<32x32x3x3xf32>, %b: tensor<32xf32>) -> tensor<1x32x24x24xf32> {
  %0 = relay.nn.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x32x24x24xf32>, tensor<32x32x3x3xf32>) -> tensor<1x32x24x24xf32>
  %1 = relay.nn.bias_add %0, %b : (tensor<1x32x24x24xf32>, tensor<32xf32>) -> tensor<1x32x24x24xf32>
  %2 = relay.nn.relu %1 : tensor<1x32x24x24xf32>
  func.return %2 : tensor<1x32x24x24xf32>
}
