// RUN: opt-tool %s --split-input-file -p 'plan-devices{targets=c,opencl default-device=opencl},fuse-ops' | filecheck %s

// fuse-ops after plan-devices: groups take the planned (canonical) scopes, and stop at the
// copies plan-devices inserts.

// CHECK-LABEL: func.func @mlp
// CHECK:         %[[L1:.*]] = relay.fused(%x, %w1, %b1) {se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">, kernel_name = "fused_nn_dense_nn_bias_add_nn_relu"}
// CHECK:         %[[L2:.*]] = relay.fused(%[[L1]], %w2, %b2) {se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">, kernel_name = "fused_nn_dense_nn_bias_add"}
// CHECK:         %[[S:.*]] = relay.fused(%[[L2]]) {se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">, kernel_name = "fused_nn_softmax"}
// CHECK-NOT:     relay.fused
// CHECK:         func.return %[[S]]
func.func @mlp(%x: tensor<8x16xf32>, %w1: tensor<32x16xf32>, %b1: tensor<32xf32>, %w2: tensor<4x32xf32>, %b2: tensor<4xf32>) -> tensor<8x4xf32> {
  %0 = relay.nn.dense %x, %w1 : (tensor<8x16xf32>, tensor<32x16xf32>) -> tensor<8x32xf32>
  %1 = relay.nn.bias_add %0, %b1 : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  %2 = relay.nn.relu %1 : tensor<8x32xf32>
  %3 = relay.nn.dense %2, %w2 : (tensor<8x32xf32>, tensor<4x32xf32>) -> tensor<8x4xf32>
  %4 = relay.nn.bias_add %3, %b2 : (tensor<8x4xf32>, tensor<4xf32>) -> tensor<8x4xf32>
  %5 = relay.nn.softmax %4 : (tensor<8x4xf32>) -> tensor<8x4xf32>
  func.return %5 : tensor<8x4xf32>
}

// -----

// An on_device annotation in the middle of a chain: plan-devices inserts a copy there, and the
// chain becomes two groups, one per device.

// CHECK-LABEL: func.func @split_by_annotation
// CHECK:         %[[CPU:.*]] = relay.fused(%a) {se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">, kernel_name = "fused_exp_nn_relu"}
// CHECK:         %[[COPY:.*]] = relay.device_copy %[[CPU]]
// CHECK:         %[[CL:.*]] = relay.fused(%[[COPY]]) {se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">, kernel_name = "fused_tanh_negative"}
// CHECK-NOT:     relay.fused
// CHECK:         func.return %[[CL]]
func.func @split_by_annotation(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.exp %a : tensor<4xf32>
  %1 = relay.nn.relu %0 : tensor<4xf32>
  %2 = relay.on_device %1 {se_scope = #relay.se_scope<device = cpu>} : tensor<4xf32>
  %3 = relay.tanh %2 : tensor<4xf32>
  %4 = relay.negative %3 : tensor<4xf32>
  func.return %4 : tensor<4xf32>
}

// -----

// A constant used on two devices is materialised once per device; each group reads its own.

// CHECK-LABEL: func.func @constant_on_two_devices
// CHECK:         %[[KC:.*]] = relay.constant {{.*}}se_scope = #relay.se_scope<device = cpu
// CHECK:         %[[KL:.*]] = relay.constant {{.*}}se_scope = #relay.se_scope<device = opencl
// CHECK:         relay.fused(%a, %[[KC]]) {se_scope = #relay.se_scope<device = cpu, {{.*}}kernel_name = "fused_add"}
// CHECK:         relay.device_copy
// CHECK:         relay.fused(%{{.*}}, %[[KL]]) {se_scope = #relay.se_scope<device = opencl, {{.*}}kernel_name = "fused_multiply"}
// CHECK-NOT:     relay.fused
func.func @constant_on_two_devices(%a: tensor<4xf32>) -> tensor<4xf32> {
  %k = relay.constant {value = dense<2.0> : tensor<4xf32>} : tensor<4xf32>
  %0 = relay.add %a, %k : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = relay.on_device %0 {se_scope = #relay.se_scope<device = cpu>} : tensor<4xf32>
  %2 = relay.multiply %1, %k : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %2 : tensor<4xf32>
}
