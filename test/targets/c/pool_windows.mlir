// RUN: opt-tool %s -p 'plan-devices{targets="c -march=x86-64-v4"},fuse-ops,convert-relay-to-loops' | filecheck %s --check-prefix=IR
// RUN: opt-tool %s -p 'plan-devices{targets="c -march=x86-64-v4"},fuse-ops,convert-relay-to-loops,dce,licm,cse' -t c | filecheck %s --check-prefix=C

// A cpu max_pool2d whose windows lie inside the input (7 rows and 19 columns, 2x2 windows of
// stride 2: the last row and column are never read) and whose rows are 9 outputs wide gets
// the pool_windows schedule: per output row (n, c, oh), two chunks of 8 outputs, the second
// the row's last 8 (starting at column 1), each a loop of constant trip count 8 with the
// window's 4 taps in straight-line code, the max as a tree of adjacent pairs, then the
// epilogue (relu); `#pragma GCC unroll 1` keeps gcc from peeling it into branches. A pool
// of 7-wide rows stays elementwise (a loop over the window).
// The target is pinned (AVX-512, x86-64-v4) so that the kernel is the same on every host when
// the chunk follows the target's vector width (plain "c" is the host's).

// IR:       func.func @fused_nn_max_pool2d_nn_relu({{.*}}) attributes {{{.*}}relay.schedule = "pool_windows"}
// IR:       func.func @fused_nn_max_pool2d_nn_relu_1({{.*}}) attributes {{{.*}}relay.schedule = "elementwise"}

// C-LABEL: void fused_nn_max_pool2d_nn_relu(
// C:         long {{v[0-9]+}} = {{i[0-9]+}} * 2;
// C-NEXT:    for (long [[CHUNK:i[0-9]+]] = 0; [[CHUNK]] < 2; [[CHUNK]]++) {
// C-NEXT:      long [[FIRST8:v[0-9]+]] = [[CHUNK]] * 8;
// C-NEXT:      int [[BEFORE:v[0-9]+]] = [[FIRST8]] < 1;
// C-NEXT:      long [[FIRST:v[0-9]+]] = [[BEFORE]] ? [[FIRST8]] : 1;
// C-NEXT:      #pragma GCC unroll 1
// C-NEXT:      for (long [[LANE:i[0-9]+]] = 0; [[LANE]] < 8; [[LANE]]++) {
// C-NEXT:        long [[OW:v[0-9]+]] = [[FIRST]] + [[LANE]];
// C-NEXT:        long [[COL:v[0-9]+]] = [[OW]] * 2;
// C-NEXT:        float [[T00:v[0-9]+]] = in0[[[WINDOW:.*]] + [[COL]]];
// C-NEXT:        float [[T01:v[0-9]+]] = in0[[[WINDOW]] + [[COL]] + 1];
// C-NEXT:        float [[T10:v[0-9]+]] = in0[[[WINDOW]] + [[COL]] + 19];
// C-NEXT:        float [[T11:v[0-9]+]] = in0[[[WINDOW]] + [[COL]] + 20];
// C-NEXT:        float [[M0:v[0-9]+]] = [[T00]] != [[T00]] ? [[T00]] : ([[T00]] > [[T01]] ? [[T00]] : [[T01]]);
// C-NEXT:        float [[M1:v[0-9]+]] = [[T10]] != [[T10]] ? [[T10]] : ([[T10]] > [[T11]] ? [[T10]] : [[T11]]);
// C-NEXT:        float [[M:v[0-9]+]] = [[M0]] != [[M0]] ? [[M0]] : ([[M0]] > [[M1]] ? [[M0]] : [[M1]]);
// C-NEXT:        float [[R:v[0-9]+]] = (0.0f >= [[M]] ? 0.0f : [[M]]);
// C-NEXT:        out0[{{.*}} + [[OW]]] = [[R]];
// C-NEXT:      }
// C-NEXT:    }
// C-LABEL: void fused_nn_max_pool2d_nn_relu_1(
// C:         for (long [[TAP:i[0-9]+]] = {{v[0-9]+}}; [[TAP]] < {{v[0-9]+}}; [[TAP]]++) {
func.func @main(%x: tensor<2x3x7x19xf32>, %y: tensor<1x2x8x14xf32>) -> (tensor<2x3x3x9xf32>, tensor<1x2x4x7xf32>) {
  %0 = relay.nn.max_pool2d %x {pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<2x3x7x19xf32>) -> tensor<2x3x3x9xf32>
  %1 = relay.nn.relu %0 : tensor<2x3x3x9xf32>
  %2 = relay.nn.max_pool2d %y {pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x2x8x14xf32>) -> tensor<1x2x4x7xf32>
  %3 = relay.nn.relu %2 : tensor<1x2x4x7xf32>
  func.return %1, %3 : tensor<2x3x3x9xf32>, tensor<1x2x4x7xf32>
}
