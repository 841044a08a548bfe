// RUN: opt-tool %s -p 'plan-devices{targets="opencl -vector-width=16"},fuse-ops,convert-relay-to-loops' | filecheck %s --check-prefix=IR
// RUN: opt-tool %s -p 'plan-devices{targets="opencl -vector-width=16"},fuse-ops,convert-relay-to-loops,dce,licm,cse,split-reductions' -t opencl | filecheck %s --check-prefix=CL

// An opencl conv2d of stride 1 with enough work gets packed_conv, as on the cpu: the input
// rows packed with their padding into a private array, then register blocks of 8 output
// channels x 3 vectors of 16 pixels, summed by broadcast-FMAs on `float16`s (one load of
// each pixel vector per tap, one broadcast weight per channel; the 3x3 taps unrolled in the
// loop over input channels), stored to a scratch block for the epilogue. (The 12 rows are
// two blocks of 6, so that two threads get a work item each: each is a work group of its
// own, `relay.work_group_per_item`, which PoCL spreads over its threads.)

// IR:       func.func @fused_nn_conv2d_nn_bias_add_nn_relu({{.*}}) attributes {{{.*}}relay.schedule = "packed_conv", relay.work_group_per_item}
// IR:         vector.fma

// CL-LABEL: __kernel void fused_nn_conv2d_nn_bias_add_nn_relu(
// CL:         if (gid0 >= 2) return;
// CL:         float [[PACKED:buf[0-9]+]][944];
// CL:         float16 [[ZERO:v[0-9]+]] = (float16)(0.0f);
// CL:         for (long [[C:i[0-9]+]] = 0; [[C]] < 8; [[C]]++) {
// CL:           float16 [[P0:v[0-9]+]] = *(const xr_float16u *)(&[[PACKED]][{{v[0-9]+}}]);
// CL:           float16 [[P1:v[0-9]+]] = *(const xr_float16u *)(&[[PACKED]][{{v[0-9]+}}]);
// CL:           float16 [[P2:v[0-9]+]] = *(const xr_float16u *)(&[[PACKED]][{{v[0-9]+}}]);
// CL-NEXT:      float [[W:v[0-9]+]] = in1[{{.*}}];
// CL-NEXT:      float16 [[WV:v[0-9]+]] = (float16)([[W]]);
// CL-NEXT:      float16 {{v[0-9]+}} = fma([[P0]], [[WV]], {{v[0-9]+}});
// CL-NEXT:      float16 {{v[0-9]+}} = fma([[P1]], [[WV]], {{v[0-9]+}});
// CL-NEXT:      float16 {{v[0-9]+}} = fma([[P2]], [[WV]], {{v[0-9]+}});
// CL:         *(xr_float16u *)(&{{buf[0-9]+}}[0]) = {{v[0-9]+}};
func.func @main(%x: tensor<1x8x12x12xf32>, %w: tensor<8x8x3x3xf32>, %b: tensor<8xf32>) -> tensor<1x8x12x12xf32> {
  %0 = relay.nn.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x8x12x12xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x12x12xf32>
  %1 = relay.nn.bias_add %0, %b : (tensor<1x8x12x12xf32>, tensor<8xf32>) -> tensor<1x8x12x12xf32>
  %2 = relay.nn.relu %1 : tensor<1x8x12x12xf32>
  func.return %2 : tensor<1x8x12x12xf32>
}
