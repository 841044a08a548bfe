// RUN: opt-tool %s --split-input-file -p 'plan-devices{targets=c,opencl}' | filecheck %s

// Primitive ops: an op, its operands and its result share one scope; each op instance is
// planned on its own; unconstrained ops, parameters and results take the default scope (the
// device of the first target, here cpu).

// CHECK-LABEL: func.func @plain
// CHECK-SAME:    %a: tensor<4xf32> {relay.se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">}
// CHECK-SAME:    %b: tensor<4xf32> {relay.se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">}
// CHECK-SAME:    -> (tensor<4xf32> {relay.se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">})
// CHECK:         %[[SUM:.*]] = relay.add %a, %b {se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">}
// CHECK:         %[[NEG:.*]] = relay.negative %[[SUM]] {se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">}
// CHECK-NOT:     relay.device_copy
// CHECK:         func.return %[[NEG]]
func.func @plain(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.add %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = relay.negative %0 : tensor<4xf32>
  func.return %1 : tensor<4xf32>
}

// -----

// A pinned op pulls its operands, its producers, the parameters and its consumers onto its scope.

// CHECK-LABEL: func.func @pinned_op_flows
// CHECK-SAME:    %a: tensor<4xf32> {relay.se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">}
// CHECK-SAME:    %b: tensor<4xf32> {relay.se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">}
// CHECK-SAME:    -> (tensor<4xf32> {relay.se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">})
// CHECK:         relay.exp %a {se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">}
// CHECK:         relay.add {{.*}} {se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">}
// CHECK:         relay.nn.relu {{.*}} {se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">}
// CHECK-NOT:     relay.device_copy
func.func @pinned_op_flows(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.exp %a : tensor<4xf32>
  %1 = relay.add %0, %b {se_scope = #relay.se_scope<device = opencl>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %2 = relay.nn.relu %1 : tensor<4xf32>
  func.return %2 : tensor<4xf32>
}

// -----

// Primitives are device-polymorphic: two instances of one op kind run on different scopes.

// CHECK-LABEL: func.func @polymorphic
// CHECK-SAME:    %a: tensor<4xf32> {relay.se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">}
// CHECK-SAME:    %b: tensor<4xf32> {relay.se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">}
// CHECK-SAME:    -> (tensor<4xf32> {relay.se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">}, tensor<4xf32> {relay.se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">})
// CHECK:         relay.tanh %a {se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">}
// CHECK:         relay.tanh %b {se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">}
// CHECK-NOT:     relay.device_copy
func.func @polymorphic(%a: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = relay.tanh %a {se_scope = #relay.se_scope<device = opencl>} : tensor<4xf32>
  %1 = relay.tanh %b : tensor<4xf32>
  func.return %0, %1 : tensor<4xf32>, tensor<4xf32>
}

// -----

// Every primitive kind takes part, variadic concatenate included: all operands share the scope.

// CHECK-LABEL: func.func @variadic
// CHECK-SAME:    %a: tensor<2x3xf32> {relay.se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">}
// CHECK-SAME:    %b: tensor<2x3xf32> {relay.se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">}
// CHECK-SAME:    %w: tensor<5x3xf32> {relay.se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">}
// CHECK:         relay.concatenate %a, %b {{{.*}}se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">}
// CHECK:         relay.nn.dense {{.*}} {se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">}
// CHECK:         relay.sum {{.*}}se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">
// CHECK-NOT:     relay.device_copy
func.func @variadic(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>, %w: tensor<5x3xf32>) -> tensor<5xf32> {
  %0 = relay.concatenate %a, %b {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
  %1 = relay.nn.dense %0, %w {se_scope = #relay.se_scope<device = opencl>} : (tensor<4x3xf32>, tensor<5x3xf32>) -> tensor<4x5xf32>
  %2 = relay.sum %1 {axis = array<i64: 0>} : (tensor<4x5xf32>) -> tensor<5xf32>
  func.return %2 : tensor<5xf32>
}

// -----

// plan-devices removes nothing but annotations: an op nobody reads stays, placed.

// CHECK-LABEL: func.func @unread_op_stays
// CHECK:         relay.exp %a {se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">}
// CHECK-NEXT:    func.return %a
func.func @unread_op_stays(%a: tensor<4xf32>) -> tensor<4xf32> {
  %unread = relay.exp %a : tensor<4xf32>
  func.return %a : tensor<4xf32>
}
