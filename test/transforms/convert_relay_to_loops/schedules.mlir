// RUN: opt-tool %s -p convert-relay-to-loops --split-input-file | filecheck %s

// Each kernel names the schedule it got (transforms/schedules/): the first of softmax_row,
// conv_rows, transposed_rows, matmul_block and elementwise whose test matches its group.

// A softmax result: a work item per row.

// CHECK-LABEL: func.func @softmax
// CHECK:       func.func @fused_nn_softmax({{.*}}) attributes {relay.se_scope = {{.*}}, relay.schedule = "softmax_row"}
func.func @softmax(%a: tensor<2x5xf32>) -> tensor<2x5xf32> {
  %0 = relay.fused(%a) {kernel_name = "fused_nn_softmax", se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">} : (tensor<2x5xf32>) -> tensor<2x5xf32> {
  ^bb0(%x: tensor<2x5xf32>):
    %1 = relay.nn.softmax %x : (tensor<2x5xf32>) -> tensor<2x5xf32>
    relay.yield %1 : tensor<2x5xf32>
  }
  func.return %0 : tensor<2x5xf32>
}

// -----

// A conv2d result at least 4 wide: a work item per output row.

// CHECK-LABEL: func.func @wide_conv
// CHECK:       func.func @fused_nn_conv2d_nn_relu({{.*}}) attributes {relay.se_scope = {{.*}}, relay.schedule = "conv_rows"}
func.func @wide_conv(%a: tensor<1x2x4x4xf32>, %w: tensor<3x2x3x3xf32>) -> tensor<1x3x4x4xf32> {
  %0 = relay.fused(%a, %w) {kernel_name = "fused_nn_conv2d_nn_relu", se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">} : (tensor<1x2x4x4xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x4x4xf32> {
  ^bb0(%x: tensor<1x2x4x4xf32>, %y: tensor<3x2x3x3xf32>):
    %1 = relay.nn.conv2d %x, %y {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x2x4x4xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x4x4xf32>
    %2 = relay.nn.relu %1 : tensor<1x3x4x4xf32>
    relay.yield %2 : tensor<1x3x4x4xf32>
  }
  func.return %0 : tensor<1x3x4x4xf32>
}

// -----

// A conv2d result narrower than 4: one element per work item.

// CHECK-LABEL: func.func @narrow_conv
// CHECK:       func.func @fused_nn_conv2d({{.*}}) attributes {relay.se_scope = {{.*}}, relay.schedule = "elementwise"}
func.func @narrow_conv(%a: tensor<1x2x4x4xf32>, %w: tensor<3x2x3x3xf32>) -> tensor<1x3x2x2xf32> {
  %0 = relay.fused(%a, %w) {kernel_name = "fused_nn_conv2d", se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">} : (tensor<1x2x4x4xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x2x2xf32> {
  ^bb0(%x: tensor<1x2x4x4xf32>, %y: tensor<3x2x3x3xf32>):
    %1 = relay.nn.conv2d %x, %y : (tensor<1x2x4x4xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x2x2xf32>
    relay.yield %1 : tensor<1x3x2x2xf32>
  }
  func.return %0 : tensor<1x3x2x2xf32>
}

// -----

// A cpu dense of short dot products with a small rhs: whole rows, the rhs transposed.

// CHECK-LABEL: func.func @cpu_short_dense
// CHECK:       func.func @fused_nn_dense({{.*}}) attributes {relay.se_scope = {{.*}}, relay.schedule = "transposed_rows"}
func.func @cpu_short_dense(%a: tensor<16x20xf32>, %w: tensor<12x20xf32>) -> tensor<16x12xf32> {
  %0 = relay.fused(%a, %w) {kernel_name = "fused_nn_dense", se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">} : (tensor<16x20xf32>, tensor<12x20xf32>) -> tensor<16x12xf32> {
  ^bb0(%x: tensor<16x20xf32>, %y: tensor<12x20xf32>):
    %1 = relay.nn.dense %x, %y : (tensor<16x20xf32>, tensor<12x20xf32>) -> tensor<16x12xf32>
    relay.yield %1 : tensor<16x12xf32>
  }
  func.return %0 : tensor<16x12xf32>
}

// -----

// The same dense on OpenCL: register blocks (no scratch in a work item's private memory).

// CHECK-LABEL: func.func @opencl_short_dense
// CHECK:       func.func @fused_nn_dense({{.*}}) attributes {relay.se_scope = {{.*}}, relay.schedule = "matmul_block"}
func.func @opencl_short_dense(%a: tensor<16x20xf32>, %w: tensor<12x20xf32>) -> tensor<16x12xf32> {
  %0 = relay.fused(%a, %w) {kernel_name = "fused_nn_dense", se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">} : (tensor<16x20xf32>, tensor<12x20xf32>) -> tensor<16x12xf32> {
  ^bb0(%x: tensor<16x20xf32>, %y: tensor<12x20xf32>):
    %1 = relay.nn.dense %x, %y : (tensor<16x20xf32>, tensor<12x20xf32>) -> tensor<16x12xf32>
    relay.yield %1 : tensor<16x12xf32>
  }
  func.return %0 : tensor<16x12xf32>
}

// -----

// A dense whose result axes are odd: no block divides them, one element per work item.

// CHECK-LABEL: func.func @odd_dense
// CHECK:       func.func @fused_nn_dense({{.*}}) attributes {relay.se_scope = {{.*}}, relay.schedule = "elementwise"}
func.func @odd_dense(%a: tensor<3x300xf32>, %w: tensor<7x300xf32>) -> tensor<3x7xf32> {
  %0 = relay.fused(%a, %w) {kernel_name = "fused_nn_dense", se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">} : (tensor<3x300xf32>, tensor<7x300xf32>) -> tensor<3x7xf32> {
  ^bb0(%x: tensor<3x300xf32>, %y: tensor<7x300xf32>):
    %1 = relay.nn.dense %x, %y : (tensor<3x300xf32>, tensor<7x300xf32>) -> tensor<3x7xf32>
    relay.yield %1 : tensor<3x7xf32>
  }
  func.return %0 : tensor<3x7xf32>
}

// -----

// A reduction fed by an elementwise op: one element per work item, the sum a loop inside it.

// CHECK-LABEL: func.func @sum_of_exp
// CHECK:       func.func @fused_exp_sum({{.*}}) attributes {relay.se_scope = {{.*}}, relay.schedule = "elementwise"}
func.func @sum_of_exp(%a: tensor<3x4xf32>) -> tensor<3xf32> {
  %0 = relay.fused(%a) {kernel_name = "fused_exp_sum", se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">} : (tensor<3x4xf32>) -> tensor<3xf32> {
  ^bb0(%x: tensor<3x4xf32>):
    %1 = relay.exp %x : tensor<3x4xf32>
    %2 = relay.sum %1 {axis = array<i64: 1>} : (tensor<3x4xf32>) -> tensor<3xf32>
    relay.yield %2 : tensor<3xf32>
  }
  func.return %0 : tensor<3xf32>
}

// -----

// A cpu group that only moves data and takes the input's last axis away from the last: 8 x 8
// tiles of the result's last two axes, the edge tiles clamped (21 columns: 8, 8, 5).

// CHECK-LABEL: func.func @transposed_copy
// CHECK:       func.func @fused_transpose({{.*}}) attributes {relay.se_scope = {{.*}}, relay.schedule = "transpose_tiles"}
// CHECK-DAG:     %[[C3:.*]] = arith.constant 3 : index
// CHECK-DAG:     %[[C2:.*]] = arith.constant 2 : index
// CHECK:         "scf.parallel"(%{{.*}}, %{{.*}}, %[[C3]], %[[C2]], %{{.*}}, %{{.*}})
func.func @transposed_copy(%a: tensor<13x21xf32>) -> tensor<21x13xf32> {
  %0 = relay.fused(%a) {kernel_name = "fused_transpose", se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">} : (tensor<13x21xf32>) -> tensor<21x13xf32> {
  ^bb0(%x: tensor<13x21xf32>):
    %1 = relay.transpose %x {axes = array<i64: 1, 0>} : (tensor<13x21xf32>) -> tensor<21x13xf32>
    relay.yield %1 : tensor<21x13xf32>
  }
  func.return %0 : tensor<21x13xf32>
}

// -----

// A result that is a reshape merging axes: nested over the reshape's input (3 x 4 x 5), each
// element stored at its merged position, with no division.

// CHECK-LABEL: func.func @merged_copy
// CHECK:       func.func @fused_transpose_reshape({{.*}}) attributes {relay.se_scope = {{.*}}, relay.schedule = "reshape_source"}
// CHECK-DAG:     %[[C3:.*]] = arith.constant 3 : index
// CHECK-DAG:     %[[C4:.*]] = arith.constant 4 : index
// CHECK-DAG:     %[[C5:.*]] = arith.constant 5 : index
// CHECK:         "scf.parallel"(%{{.*}}, %{{.*}}, %{{.*}}, %[[C3]], %[[C4]], %[[C5]], %{{.*}}, %{{.*}}, %{{.*}})
// CHECK-NOT:     arith.divsi
// CHECK-NOT:     arith.remsi
// CHECK:         scf.reduce
func.func @merged_copy(%a: tensor<4x3x5xf32>) -> tensor<3x20xf32> {
  %0 = relay.fused(%a) {kernel_name = "fused_transpose_reshape", se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">} : (tensor<4x3x5xf32>) -> tensor<3x20xf32> {
  ^bb0(%x: tensor<4x3x5xf32>):
    %1 = relay.transpose %x {axes = array<i64: 1, 0, 2>} : (tensor<4x3x5xf32>) -> tensor<3x4x5xf32>
    %2 = relay.reshape %1 : (tensor<3x4x5xf32>) -> tensor<3x20xf32>
    relay.yield %2 : tensor<3x20xf32>
  }
  func.return %0 : tensor<3x20xf32>
}
