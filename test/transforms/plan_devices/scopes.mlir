// RUN: opt-tool %s --split-input-file -p 'plan-devices{targets=c,opencl}' | filecheck %s

// Scopes are compared in canonical form: device ids and memory scopes count, so opencl id 0
// and id 1 differ, and two memory scopes on one device differ. A target without a device
// implies its device.

// CHECK-LABEL: func.func @device_ids_differ
// CHECK:         %[[X:.*]] = relay.exp %a {se_scope = #relay.se_scope<device = opencl, id = 1, target = "opencl", memory = "global">}
// CHECK-NEXT:    %[[COPY:.*]] = relay.device_copy %[[X]] {src_se_scope = #relay.se_scope<device = opencl, id = 1, target = "opencl", memory = "global">, dst_se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">}
// CHECK-NEXT:    relay.negative %[[COPY]] {se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">}
func.func @device_ids_differ(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.exp %a : tensor<4xf32>
  %1 = relay.on_device %0 {se_scope = #relay.se_scope<device = opencl, id = 1>} : tensor<4xf32>
  %2 = relay.negative %1 {se_scope = #relay.se_scope<device = opencl>} : tensor<4xf32>
  func.return %2 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @memory_scopes_differ
// CHECK-SAME:    %a: tensor<4xf32> {relay.se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "scopeA">}
// CHECK-SAME:    -> (tensor<4xf32> {relay.se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "scopeB">})
// CHECK:         %[[X:.*]] = relay.exp %a {se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "scopeA">}
// CHECK-NEXT:    %[[COPY:.*]] = relay.device_copy %[[X]] {src_se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "scopeA">, dst_se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "scopeB">}
// CHECK-NEXT:    %[[Y:.*]] = relay.negative %[[COPY]] {se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "scopeB">}
func.func @memory_scopes_differ(%a: tensor<4xf32> {relay.se_scope = #relay.se_scope<device = cpu, memory = "scopeA">}) -> (tensor<4xf32> {relay.se_scope = #relay.se_scope<device = cpu, memory = "scopeB">}) {
  %0 = relay.exp %a : tensor<4xf32>
  %1 = relay.on_device %0 {se_scope = #relay.se_scope<device = cpu>} : tensor<4xf32>
  %2 = relay.negative %1 : tensor<4xf32>
  func.return %2 : tensor<4xf32>
}

// -----

// Same scope written two ways (partial and canonical): no copy.

// CHECK-LABEL: func.func @same_scope_two_spellings
// CHECK:         %[[X:.*]] = relay.exp %a
// CHECK-NEXT:    relay.negative %[[X]]
// CHECK-NOT:     relay.device_copy
func.func @same_scope_two_spellings(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.exp %a {se_scope = #relay.se_scope<device = opencl>} : tensor<4xf32>
  %1 = relay.on_device %0 {se_scope = #relay.se_scope<device = opencl>} : tensor<4xf32>
  %2 = relay.negative %1 {se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">} : tensor<4xf32>
  func.return %2 : tensor<4xf32>
}

// -----

// A scope that names only a target is on that target's device.

// CHECK-LABEL: func.func @target_implies_device
// CHECK:         relay.exp %a {se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">}
func.func @target_implies_device(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.exp %a {se_scope = #relay.se_scope<target = "opencl">} : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

// Partial constraints from different places join field by field: id from one, memory from
// another, device from a third.

// CHECK-LABEL: func.func @fields_join
// CHECK:         relay.add %a, %b {se_scope = #relay.se_scope<device = opencl, id = 2, target = "opencl", memory = "local">}
func.func @fields_join(%a: tensor<4xf32> {relay.se_scope = #relay.se_scope<id = 2>}, %b: tensor<4xf32> {relay.se_scope = #relay.se_scope<memory = "local">}) -> tensor<4xf32> {
  %0 = relay.add %a, %b {se_scope = #relay.se_scope<device = opencl>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

// The same for an annotation whose result is constrained: its uses land on opencl too.

// CHECK-LABEL: func.func @target_implies_device_for_uses
// CHECK-SAME:    -> (tensor<4xf32> {relay.se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">})
// CHECK:         relay.negative {{.*}} {se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">}
func.func @target_implies_device_for_uses(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.exp %a : tensor<4xf32>
  %1 = relay.on_device %0 {se_scope = #relay.se_scope<target = "opencl">, constrain_body = false, constrain_result = true} : tensor<4xf32>
  %2 = relay.negative %1 : tensor<4xf32>
  func.return %2 : tensor<4xf32>
}
