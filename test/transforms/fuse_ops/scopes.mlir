// RUN: opt-tool %s --split-input-file -p fuse-ops | filecheck %s

// Placement: two ops with different se_scope never share a group, no group spans a
// device_copy, and each group carries its ops' scope (the ops inside drop theirs).

// Two scopes side by side with a copy between them: each side fuses on its own.

// CHECK-LABEL: func.func @two_scopes
// CHECK:         %[[CPU:.*]] = relay.fused(%a) {se_scope = #relay.se_scope<device = cpu>, kernel_name = "fused_exp_nn_relu"}
// CHECK-NOT:       se_scope
// CHECK:           relay.yield
// CHECK:         %[[COPY:.*]] = relay.device_copy %[[CPU]]
// CHECK:         %[[CL:.*]] = relay.fused(%[[COPY]]) {se_scope = #relay.se_scope<device = opencl>, kernel_name = "fused_tanh_sigmoid"}
// CHECK-NOT:       se_scope
// CHECK:           relay.yield
// CHECK-NOT:     relay.fused
// CHECK:         func.return %[[CL]]
func.func @two_scopes(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.exp %a {se_scope = #relay.se_scope<device = cpu>} : tensor<4xf32>
  %1 = relay.nn.relu %0 {se_scope = #relay.se_scope<device = cpu>} : tensor<4xf32>
  %2 = relay.device_copy %1 {src_se_scope = #relay.se_scope<device = cpu>, dst_se_scope = #relay.se_scope<device = opencl>} : tensor<4xf32>
  %3 = relay.tanh %2 {se_scope = #relay.se_scope<device = opencl>} : tensor<4xf32>
  %4 = relay.sigmoid %3 {se_scope = #relay.se_scope<device = opencl>} : tensor<4xf32>
  func.return %4 : tensor<4xf32>
}

// -----

// A chain that alternates devices: one group per stretch.

// CHECK-LABEL: func.func @alternating
// CHECK-COUNT-3: relay.fused
// CHECK-NOT:     relay.fused
func.func @alternating(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.exp %a {se_scope = #relay.se_scope<device = cpu>} : tensor<4xf32>
  %1 = relay.device_copy %0 {src_se_scope = #relay.se_scope<device = cpu>, dst_se_scope = #relay.se_scope<device = opencl>} : tensor<4xf32>
  %2 = relay.exp %1 {se_scope = #relay.se_scope<device = opencl>} : tensor<4xf32>
  %3 = relay.device_copy %2 {src_se_scope = #relay.se_scope<device = opencl>, dst_se_scope = #relay.se_scope<device = cpu>} : tensor<4xf32>
  %4 = relay.exp %3 {se_scope = #relay.se_scope<device = cpu>} : tensor<4xf32>
  func.return %4 : tensor<4xf32>
}

// -----

// Two scopes with no copy between them (hand-written input; plan-devices would insert one):
// still two groups. Virtual device ids count: opencl:0 and opencl:1 are different scopes.

// CHECK-LABEL: func.func @adjacent_scopes
// CHECK:         relay.fused
// CHECK-SAME:    se_scope = #relay.se_scope<device = opencl, id = 0>, kernel_name = "fused_exp"
// CHECK:         relay.fused
// CHECK-SAME:    se_scope = #relay.se_scope<device = opencl, id = 1>, kernel_name = "fused_nn_relu_negative"
// CHECK-NOT:     relay.fused
func.func @adjacent_scopes(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.exp %a {se_scope = #relay.se_scope<device = opencl, id = 0>} : tensor<4xf32>
  %1 = relay.nn.relu %0 {se_scope = #relay.se_scope<device = opencl, id = 1>} : tensor<4xf32>
  %2 = relay.negative %1 {se_scope = #relay.se_scope<device = opencl, id = 1>} : tensor<4xf32>
  func.return %2 : tensor<4xf32>
}

// -----

// A diamond with one branch on another device: the branch through the copies keeps %0 from
// joining the add, but the cpu branch still joins it.

// CHECK-LABEL: func.func @diamond_across_devices
// CHECK:         relay.fused(%a) {se_scope = #relay.se_scope<device = cpu>, kernel_name = "fused_exp"}
// CHECK:         relay.fused({{.*}}) {se_scope = #relay.se_scope<device = opencl>, kernel_name = "fused_tanh"}
// CHECK:         relay.fused({{.*}}) {se_scope = #relay.se_scope<device = cpu>, kernel_name = "fused_nn_relu_add"}
// CHECK-NOT:     relay.fused
func.func @diamond_across_devices(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.exp %a {se_scope = #relay.se_scope<device = cpu>} : tensor<4xf32>
  %1 = relay.device_copy %0 {src_se_scope = #relay.se_scope<device = cpu>, dst_se_scope = #relay.se_scope<device = opencl>} : tensor<4xf32>
  %2 = relay.tanh %1 {se_scope = #relay.se_scope<device = opencl>} : tensor<4xf32>
  %3 = relay.device_copy %2 {src_se_scope = #relay.se_scope<device = opencl>, dst_se_scope = #relay.se_scope<device = cpu>} : tensor<4xf32>
  %4 = relay.nn.relu %0 {se_scope = #relay.se_scope<device = cpu>} : tensor<4xf32>
  %5 = relay.add %4, %3 {se_scope = #relay.se_scope<device = cpu>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %5 : tensor<4xf32>
}

// -----

// Without plan-devices the ops have no se_scope, and neither have the groups; an op that has
// one does not share a group with ops that have none.

// CHECK-LABEL: func.func @unplanned
// CHECK:         relay.fused(%a) {kernel_name = "fused_exp_negative"}
// CHECK:         relay.fused({{.*}}) {se_scope = #relay.se_scope<device = cpu>, kernel_name = "fused_nn_relu"}
// CHECK-NOT:     relay.fused
func.func @unplanned(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.exp %a : tensor<4xf32>
  %1 = relay.negative %0 : tensor<4xf32>
  %2 = relay.nn.relu %1 {se_scope = #relay.se_scope<device = cpu>} : tensor<4xf32>
  func.return %2 : tensor<4xf32>
}
