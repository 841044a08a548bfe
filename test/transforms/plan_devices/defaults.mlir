// RUN: opt-tool %s --split-input-file -p 'plan-devices{targets=opencl,c}' | filecheck %s

// Without default-device, unconstrained primitives go to the device of the first target
// (here opencl). Defaulting order: results, then parameters from the first result, then the
// rest.

// CHECK-LABEL: func.func @first_target
// CHECK-SAME:    %a: tensor<4xf32> {relay.se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">}
// CHECK-SAME:    -> (tensor<4xf32> {relay.se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">})
// CHECK:         relay.exp %a {se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">}
func.func @first_target(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.exp %a : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

// A parameter follows the first result even when the default scope is elsewhere.

// CHECK-LABEL: func.func @param_from_first_result
// CHECK-SAME:    %a: tensor<4xf32> {relay.se_scope = #relay.se_scope<device = cpu, id = 3, target = "c", memory = "global">}
// CHECK-SAME:    %b: tensor<4xf32> {relay.se_scope = #relay.se_scope<device = cpu, id = 3, target = "c", memory = "global">}
// CHECK:         %[[X:.*]] = relay.exp %a {se_scope = #relay.se_scope<device = cpu, id = 3{{[^>]*}}>}
// CHECK-NEXT:    %[[COPY:.*]] = relay.device_copy %[[X]] {src_se_scope = #relay.se_scope<device = cpu, id = 3{{[^>]*}}>, dst_se_scope = #relay.se_scope<device = opencl, id = 0{{[^>]*}}>}
// CHECK-NEXT:    relay.add %[[COPY]], %[[COPY]] {se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK:         relay.negative %b {se_scope = #relay.se_scope<device = cpu, id = 3{{[^>]*}}>}
func.func @param_from_first_result(%a: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<4xf32> {relay.se_scope = #relay.se_scope<device = cpu, id = 3>}, tensor<4xf32>) {
  %0 = relay.exp %a : tensor<4xf32>
  %1 = relay.on_device %0 {se_scope = #relay.se_scope<device = cpu, id = 3>} : tensor<4xf32>
  %2 = relay.add %1, %1 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %3 = relay.negative %b : tensor<4xf32>
  func.return %3, %2 : tensor<4xf32>, tensor<4xf32>
}

// -----

// A partly constrained result is completed from the default scope (its own id stays).

// CHECK-LABEL: func.func @partial_result
// CHECK-SAME:    -> (tensor<4xf32> {relay.se_scope = #relay.se_scope<device = opencl, id = 1, target = "opencl", memory = "global">})
func.func @partial_result(%a: tensor<4xf32>) -> (tensor<4xf32> {relay.se_scope = #relay.se_scope<id = 1>}) {
  %0 = relay.exp %a : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

// Domains tied to no parameter or result (here ops nobody reads) take Default(domain, default
// scope): the missing fields come from the default scope, its target only on its device.

// CHECK-LABEL: func.func @partial_inner
// CHECK:         relay.exp %[[K:.*]] {se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "texture">}
// CHECK-NEXT:    relay.exp %[[K1:.*]] {se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">}
func.func @partial_inner() {
  %k = relay.constant {value = dense<1.0> : tensor<4xf32>} : tensor<4xf32>
  %0 = relay.exp %k {se_scope = #relay.se_scope<memory = "texture">} : tensor<4xf32>
  %1 = relay.exp %k {se_scope = #relay.se_scope<device = cpu>} : tensor<4xf32>
  func.return
}
