// RUN: opt-tool %s -p 'plan-devices{targets=c,opencl default-device=opencl},fuse-ops,convert-relay-to-loops' | filecheck %s

// Unfused input through the whole front of the pipeline: one kernel per fused group, each a
// single parallel nest; the anchors keep their elementwise epilogues.

// CHECK-LABEL: func.func @main
// CHECK:         %[[CONV:.*]] = relay.launch @fused_nn_conv2d_nn_bias_add_nn_relu(%{{.*}}, %{{.*}}, %{{.*}}) {se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">}
// CHECK-NEXT:    %[[FLAT:.*]] = relay.launch @fused_reshape(%[[CONV]])
// CHECK-NEXT:    %[[DENSE:.*]] = relay.launch @fused_nn_dense_add_tanh(%[[FLAT]], %{{.*}}, %{{.*}})
// CHECK-NEXT:    %[[SOFT:.*]] = relay.launch @fused_nn_softmax(%[[DENSE]])
// CHECK-NEXT:    func.return %[[SOFT]]

// CHECK:       func.func @fused_nn_conv2d_nn_bias_add_nn_relu({{.*}}) attributes {relay.se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">} {
// CHECK:         "scf.parallel"
// CHECK:           scf.for
// CHECK:           arith.maximumf
// CHECK:           memref.store
// CHECK:         func.return

// CHECK:       func.func @fused_reshape(%[[IN:.*]]: memref<1x3x3x3xf32>, %[[OUT:.*]]: memref<1x27xf32>)
// CHECK:         "scf.parallel"
// CHECK:           arith.divsi
// CHECK:           memref.load %[[IN]]
// CHECK:           memref.store

// CHECK:       func.func @fused_nn_dense_add_tanh(%[[X:.*]]: memref<1x27xf32>, %[[W:.*]]: memref<4x27xf32>, %[[B:.*]]: memref<4xf32>, %[[Y:.*]]: memref<1x4xf32>)
// CHECK:         "scf.parallel"
// CHECK-NEXT:    ^{{.*}}(%[[J:.*]]: index):
// CHECK-NEXT:      %[[DOT:.*]] = scf.for %[[K:.*]] = {{.*}} iter_args(%[[ACC:.*]] = %{{.*}}) -> (f32) {
// CHECK-NEXT:        %[[XV:.*]] = memref.load %[[X]][%{{.*}}, %[[K]]]
// CHECK-NEXT:        %[[WV:.*]] = memref.load %[[W]][%[[J]], %[[K]]]
// CHECK-NEXT:        %[[P:.*]] = arith.mulf %[[XV]], %[[WV]]
// CHECK-NEXT:        %[[S:.*]] = arith.addf %[[ACC]], %[[P]]
// CHECK-NEXT:        scf.yield %[[S]]
// CHECK-NEXT:      }
// CHECK-NEXT:      %[[BV:.*]] = memref.load %[[B]][%[[J]]]
// CHECK-NEXT:      %[[A:.*]] = arith.addf %[[DOT]], %[[BV]]
// CHECK-NEXT:      %[[T:.*]] = math.tanh %[[A]]
// CHECK-NEXT:      memref.store %[[T]], %[[Y]][%{{.*}}, %[[J]]]

// CHECK:       func.func @fused_nn_softmax
func.func @main(%x: tensor<1x2x5x5xf32>, %w: tensor<3x2x3x3xf32>, %b: tensor<3xf32>, %d: tensor<4x27xf32>, %c: tensor<4xf32>) -> tensor<1x4xf32> {
  %0 = relay.nn.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x2x5x5xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x3x3xf32>
  %1 = relay.nn.bias_add %0, %b : (tensor<1x3x3x3xf32>, tensor<3xf32>) -> tensor<1x3x3x3xf32>
  %2 = relay.nn.relu %1 : tensor<1x3x3x3xf32>
  %3 = relay.reshape %2 : (tensor<1x3x3x3xf32>) -> tensor<1x27xf32>
  %4 = relay.nn.dense %3, %d : (tensor<1x27xf32>, tensor<4x27xf32>) -> tensor<1x4xf32>
  %5 = relay.add %4, %c : (tensor<1x4xf32>, tensor<4xf32>) -> tensor<1x4xf32>
  %6 = relay.tanh %5 : tensor<1x4xf32>
  %7 = relay.nn.softmax %6 : (tensor<1x4xf32>) -> tensor<1x4xf32>
  func.return %7 : tensor<1x4xf32>
}
