// RUN: opt-tool %s --split-input-file -p 'plan-devices{targets=c,opencl}' | filecheck %s

// relay.constant is free and device-polymorphic: each use plans it on its own, and it is
// materialised once per distinct scope it is used on, without a copy.

// CHECK-LABEL: func.func @two_scopes
// CHECK:         %[[K:.*]] = relay.constant {value = dense<1.000000e+00> : tensor<4xf32>, se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">}
// CHECK-NEXT:    %[[K1:.*]] = relay.constant {value = dense<1.000000e+00> : tensor<4xf32>, se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">}
// CHECK-NEXT:    %[[X:.*]] = relay.add %a, %[[K]] {se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK-NEXT:    %[[Y:.*]] = relay.add %b, %[[K1]] {se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-NEXT:    %[[Z:.*]] = relay.multiply %b, %[[K1]] {se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-NOT:     relay.device_copy
// CHECK-NOT:     relay.constant
func.func @two_scopes(%a: tensor<4xf32> {relay.se_scope = #relay.se_scope<device = opencl>}, %b: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %k = relay.constant {value = dense<1.0> : tensor<4xf32>} : tensor<4xf32>
  %0 = relay.add %a, %k : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = relay.add %b, %k : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %2 = relay.multiply %b, %k : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %0, %1, %2 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// An explicit annotation on a constant is honoured: on_device(k, cpu) used on opencl is a copy.

// CHECK-LABEL: func.func @annotated_constant
// CHECK:         %[[K:.*]] = relay.constant {{{.*}}se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-NEXT:    %[[COPY:.*]] = relay.device_copy %[[K]] {src_se_scope = #relay.se_scope<device = cpu{{[^>]*}}>, dst_se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK-NEXT:    relay.add %a, %[[COPY]] {se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
func.func @annotated_constant(%a: tensor<4xf32> {relay.se_scope = #relay.se_scope<device = opencl>}) -> tensor<4xf32> {
  %k = relay.constant {value = dense<1.0> : tensor<4xf32>} : tensor<4xf32>
  %0 = relay.on_device %k {se_scope = #relay.se_scope<device = cpu>} : tensor<4xf32>
  %1 = relay.add %a, %0 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %1 : tensor<4xf32>
}

// -----

// A constant that already has an se_scope (pinned, or from an earlier run) is an ordinary
// value: its consumers follow it.

// CHECK-LABEL: func.func @pinned_constant
// CHECK-SAME:    %a: tensor<4xf32> {relay.se_scope = #relay.se_scope<device = opencl, id = 1{{[^>]*}}>}
// CHECK:         %[[K:.*]] = relay.constant {{{.*}}se_scope = #relay.se_scope<device = opencl, id = 1, target = "opencl", memory = "global">}
// CHECK-NEXT:    relay.add %a, %[[K]] {se_scope = #relay.se_scope<device = opencl, id = 1{{[^>]*}}>}
func.func @pinned_constant(%a: tensor<4xf32>) -> tensor<4xf32> {
  %k = relay.constant {value = dense<1.0> : tensor<4xf32>, se_scope = #relay.se_scope<device = opencl, id = 1>} : tensor<4xf32>
  %0 = relay.add %a, %k : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

// A returned constant is on the result's scope; an unused one takes the default scope.

// CHECK-LABEL: func.func @returned_and_unused
// CHECK-SAME:    -> (tensor<4xf32> {relay.se_scope = #relay.se_scope<device = opencl{{[^>]*}}>})
// CHECK:         relay.constant {value = dense<1.000000e+00> : tensor<4xf32>, se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK-NEXT:    relay.constant {value = dense<2.000000e+00> : tensor<4xf32>, se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
func.func @returned_and_unused() -> (tensor<4xf32> {relay.se_scope = #relay.se_scope<device = opencl>}) {
  %k = relay.constant {value = dense<1.0> : tensor<4xf32>} : tensor<4xf32>
  %unused = relay.constant {value = dense<2.0> : tensor<4xf32>} : tensor<4xf32>
  func.return %k : tensor<4xf32>
}

// -----

// A constant flowing through a free annotation lands where its use is: still no copy.

// CHECK-LABEL: func.func @constant_through_free_annotation
// CHECK:         %[[K:.*]] = relay.constant {{{.*}}se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK-NEXT:    relay.add %a, %[[K]]
// CHECK-NOT:     relay.device_copy
func.func @constant_through_free_annotation(%a: tensor<4xf32> {relay.se_scope = #relay.se_scope<device = opencl>}) -> tensor<4xf32> {
  %k = relay.constant {value = dense<1.0> : tensor<4xf32>} : tensor<4xf32>
  %0 = relay.on_device %k {se_scope = #relay.se_scope<device = cpu>, constrain_body = false, constrain_result = false} : tensor<4xf32>
  %1 = relay.add %a, %0 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %1 : tensor<4xf32>
}
