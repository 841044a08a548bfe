// RUN: opt-tool %s --split-input-file -p 'plan-devices{targets=c,opencl default-device=opencl}' | filecheck %s

// With default-device, unconstrained primitives, results and parameters go there instead of
// the first target's device.

// CHECK-LABEL: func.func @all_default
// CHECK-SAME:    %a: tensor<4xf32> {relay.se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">}
// CHECK-SAME:    -> (tensor<4xf32> {relay.se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">})
// CHECK:         %[[K:.*]] = relay.constant {{{.*}}se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK:         relay.add %a, %[[K]] {se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">}
func.func @all_default(%a: tensor<4xf32>) -> tensor<4xf32> {
  %k = relay.constant {value = dense<1.0> : tensor<4xf32>} : tensor<4xf32>
  %0 = relay.add %a, %k : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

// The host part of a model stays where it is pinned; only the unconstrained rest moves.

// CHECK-LABEL: func.func @mixed
// CHECK-SAME:    %a: tensor<4xf32> {relay.se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-SAME:    %b: tensor<4xf32> {relay.se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK:         %[[X:.*]] = relay.exp %a {se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-NEXT:    %[[COPY:.*]] = relay.device_copy %[[X]]
// CHECK-NEXT:    relay.add %[[COPY]], %b {se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
func.func @mixed(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.exp %a {se_scope = #relay.se_scope<device = cpu>} : tensor<4xf32>
  %1 = relay.on_device %0 {se_scope = #relay.se_scope<device = cpu>} : tensor<4xf32>
  %2 = relay.add %1, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %2 : tensor<4xf32>
}
