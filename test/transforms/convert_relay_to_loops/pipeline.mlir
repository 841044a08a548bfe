// RUN: opt-tool %s -p 'plan-devices{targets=c,opencl default-device=opencl},fuse-ops,convert-relay-to-loops' | filecheck %s

// Unfused input through the whole front of the pipeline: one kernel per fused group, each a
// single parallel nest; the anchors keep their elementwise epilogues. The reshape-only
// group's launch is marked (its result is its input's storage: its kernel never runs).

// CHECK-LABEL: func.func @main
// CHECK:         %[[CONV:.*]] = relay.launch @fused_nn_conv2d_nn_bias_add_nn_relu(%{{.*}}, %{{.*}}, %{{.*}}) {se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">}
// CHECK-NEXT:    %[[FLAT:.*]] = relay.launch @fused_reshape(%[[CONV]]) {relay.reshape_only, se_scope
// CHECK-NEXT:    %[[DENSE:.*]] = relay.launch @fused_nn_dense_add_tanh(%[[FLAT]], %{{.*}}, %{{.*}})
// CHECK-NOT:     relay.reshape_only
// CHECK-NEXT:    %[[SOFT:.*]] = relay.launch @fused_nn_softmax(%[[DENSE]])
// CHECK-NEXT:    func.return %[[SOFT]]

// CHECK:       func.func @fused_nn_conv2d_nn_bias_add_nn_relu({{.*}}) attributes {relay.se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">, relay.schedule = "elementwise"} {
// CHECK:         "scf.parallel"
// CHECK:           scf.for
// CHECK:           arith.maximumf
// CHECK:           memref.store
// CHECK:         func.return

// The flattening reshape is nested over its input (reshape_source): no division.
// CHECK:       func.func @fused_reshape(%[[IN:.*]]: memref<1x3x3x3xf32>, %[[OUT:.*]]: memref<1x27xf32>) attributes {{{.*}}relay.schedule = "reshape_source"}
// CHECK:         "scf.parallel"
// CHECK-NOT:       arith.divsi
// CHECK:           memref.load %[[IN]]
// CHECK:           memref.store

// A work item of the dense computes 4 consecutive outputs (j0 .. j0 + 3): one loop, one
// accumulator each, x[0, k] loaded once for the four; then the epilogue of each.
// CHECK:       func.func @fused_nn_dense_add_tanh(%[[X:.*]]: memref<1x27xf32>, %[[W:.*]]: memref<8x27xf32>, %[[B:.*]]: memref<8xf32>, %[[Y:.*]]: memref<1x8xf32>)
// CHECK:         "scf.parallel"
// CHECK-NEXT:    ^{{.*}}(%[[TILE:.*]]: index):
// CHECK-NEXT:      %[[J0:.*]] = arith.muli %[[TILE]], %{{.*}} : index
// CHECK-NEXT:      %[[J1:.*]] = arith.addi %[[J0]], %{{.*}} : index
// CHECK-NEXT:      %[[J2:.*]] = arith.addi %[[J0]], %{{.*}} : index
// CHECK-NEXT:      %[[J3:.*]] = arith.addi %[[J0]], %{{.*}} : index
// CHECK-NEXT:      %[[D0:.*]], %[[D1:.*]], %[[D2:.*]], %[[D3:.*]] = scf.for %[[K:.*]] = {{.*}} iter_args(%[[A0:.*]] = %{{.*}}, %[[A1:.*]] = %{{.*}}, %[[A2:.*]] = %{{.*}}, %[[A3:.*]] = %{{.*}}) -> (f32, f32, f32, f32) {
// CHECK-NEXT:        %[[XV:.*]] = memref.load %[[X]][%{{.*}}, %[[K]]]
// CHECK-NEXT:        %[[W0:.*]] = memref.load %[[W]][%[[J0]], %[[K]]]
// CHECK-NEXT:        %[[P0:.*]] = arith.mulf %[[XV]], %[[W0]]
// CHECK-NEXT:        %[[W1:.*]] = memref.load %[[W]][%[[J1]], %[[K]]]
// CHECK-NEXT:        %[[P1:.*]] = arith.mulf %[[XV]], %[[W1]]
// CHECK-NEXT:        %[[W2:.*]] = memref.load %[[W]][%[[J2]], %[[K]]]
// CHECK-NEXT:        %[[P2:.*]] = arith.mulf %[[XV]], %[[W2]]
// CHECK-NEXT:        %[[W3:.*]] = memref.load %[[W]][%[[J3]], %[[K]]]
// CHECK-NEXT:        %[[P3:.*]] = arith.mulf %[[XV]], %[[W3]]
// CHECK-NEXT:        %[[S0:.*]] = arith.addf %[[A0]], %[[P0]]
// CHECK-NEXT:        %[[S1:.*]] = arith.addf %[[A1]], %[[P1]]
// CHECK-NEXT:        %[[S2:.*]] = arith.addf %[[A2]], %[[P2]]
// CHECK-NEXT:        %[[S3:.*]] = arith.addf %[[A3]], %[[P3]]
// CHECK-NEXT:        scf.yield %[[S0]], %[[S1]], %[[S2]], %[[S3]]
// CHECK-NEXT:      }
// CHECK-NEXT:      %[[BV0:.*]] = memref.load %[[B]][%[[J0]]]
// CHECK-NEXT:      %[[E0:.*]] = arith.addf %[[D0]], %[[BV0]]
// CHECK-NEXT:      %[[T0:.*]] = math.tanh %[[E0]]
// CHECK-NEXT:      memref.store %[[T0]], %[[Y]][%{{.*}}, %[[J0]]]
// CHECK:           memref.store %{{.*}}, %[[Y]][%{{.*}}, %[[J1]]]
// CHECK:           memref.store %{{.*}}, %[[Y]][%{{.*}}, %[[J2]]]
// CHECK:           memref.store %{{.*}}, %[[Y]][%{{.*}}, %[[J3]]]
// CHECK-NEXT:      scf.reduce

// CHECK:       func.func @fused_nn_softmax
func.func @main(%x: tensor<1x2x5x5xf32>, %w: tensor<3x2x3x3xf32>, %b: tensor<3xf32>, %d: tensor<8x27xf32>, %c: tensor<8xf32>) -> tensor<1x8xf32> {
  %0 = relay.nn.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x2x5x5xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x3x3xf32>
  %1 = relay.nn.bias_add %0, %b : (tensor<1x3x3x3xf32>, tensor<3xf32>) -> tensor<1x3x3x3xf32>
  %2 = relay.nn.relu %1 : tensor<1x3x3x3xf32>
  %3 = relay.reshape %2 : (tensor<1x3x3x3xf32>) -> tensor<1x27xf32>
  %4 = relay.nn.dense %3, %d : (tensor<1x27xf32>, tensor<8x27xf32>) -> tensor<1x8xf32>
  %5 = relay.add %4, %c : (tensor<1x8xf32>, tensor<8xf32>) -> tensor<1x8xf32>
  %6 = relay.tanh %5 : tensor<1x8xf32>
  %7 = relay.nn.softmax %6 : (tensor<1x8xf32>) -> tensor<1x8xf32>
  func.return %7 : tensor<1x8xf32>
}
