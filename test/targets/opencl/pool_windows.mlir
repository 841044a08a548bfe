// RUN: opt-tool %s -p 'plan-devices{targets="opencl -vector-width=16"},fuse-ops,convert-relay-to-loops' | filecheck %s --check-prefix=IR
// RUN: opt-tool %s -p 'plan-devices{targets="opencl -vector-width=16"},fuse-ops,convert-relay-to-loops,dce,licm,cse,split-reductions' -t opencl | filecheck %s --check-prefix=CL

// An opencl max_pool2d whose windows lie inside the input (7 rows and 9 columns, 2x2 windows
// of stride 2: the last row and column are never read) gets the pool_windows schedule: a
// work item per output row (n, c, oh), a loop of constant trip count over its 4 columns,
// and each window's 4 taps in straight-line code, the max in row-major tap order, then the
// epilogue (relu). No loop over the window, no clipping of it.

// IR:       func.func @fused_nn_max_pool2d_nn_relu({{.*}}) attributes {{{.*}}relay.schedule = "pool_windows"}

// CL-LABEL: __kernel void fused_nn_max_pool2d_nn_relu(
// CL:         if (gid0 >= 3) return;
// CL:         if (gid1 >= 3) return;
// CL:         if (gid2 >= 2) return;
// CL:         for (long [[OW:i[0-9]+]] = 0; [[OW]] < 4; [[OW]]++) {
// CL-NEXT:      long [[COL:v[0-9]+]] = [[OW]] * 2;
// CL-NEXT:      float [[T00:v[0-9]+]] = in0[[[WINDOW:.*]] + [[COL]]];
// CL-NEXT:      float [[T01:v[0-9]+]] = in0[[[WINDOW]] + [[COL]] + 1];
// CL-NEXT:      float [[T10:v[0-9]+]] = in0[[[WINDOW]] + [[COL]] + 9];
// CL-NEXT:      float [[T11:v[0-9]+]] = in0[[[WINDOW]] + [[COL]] + 10];
// CL-NEXT:      float [[M0:v[0-9]+]] = (([[T00]] > [[T01]]) | ([[T00]] != [[T00]])) ? [[T00]] : [[T01]];
// CL-NEXT:      float [[M1:v[0-9]+]] = (([[M0]] > [[T10]]) | ([[M0]] != [[M0]])) ? [[M0]] : [[T10]];
// CL-NEXT:      float [[M2:v[0-9]+]] = (([[M1]] > [[T11]]) | ([[M1]] != [[M1]])) ? [[M1]] : [[T11]];
// CL-NEXT:      float [[R:v[0-9]+]] = (([[M2]] > 0.0f) | ([[M2]] != [[M2]])) ? [[M2]] : 0.0f;
// CL-NEXT:      out0[{{.*}}] = [[R]];
// CL-NEXT:    }
// CL-NOT:     for (
func.func @main(%x: tensor<2x3x7x9xf32>) -> tensor<2x3x3x4xf32> {
  %0 = relay.nn.max_pool2d %x {pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<2x3x7x9xf32>) -> tensor<2x3x3x4xf32>
  %1 = relay.nn.relu %0 : tensor<2x3x3x4xf32>
  func.return %1 : tensor<2x3x3x4xf32>
}
