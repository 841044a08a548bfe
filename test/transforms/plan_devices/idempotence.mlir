// RUN: opt-tool %s --split-input-file -p 'plan-devices{targets=c,opencl default-device=opencl}' -o %t.once && opt-tool %s --split-input-file -p 'plan-devices{targets=c,opencl default-device=opencl},plan-devices{targets=c,opencl default-device=opencl}' -o %t.twice && diff %t.once %t.twice && filecheck %s --input-file %t.twice

// Running plan-devices on its own output changes nothing: the second run reads the scopes,
// copies and constants the first one wrote and finds them consistent.

// CHECK-LABEL: func.func @annotations_and_copies
// CHECK:         %[[X:.*]] = relay.exp %a {se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-NEXT:    %[[COPY:.*]] = relay.device_copy %[[X]]
// CHECK-NEXT:    relay.negative %[[COPY]] {se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK-NOT:     relay.on_device
func.func @annotations_and_copies(%a: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = relay.exp %a : tensor<4xf32>
  %1 = relay.on_device %0 {se_scope = #relay.se_scope<device = cpu>} : tensor<4xf32>
  %2 = relay.negative %1 : tensor<4xf32>
  %3 = relay.device_copy %0 {src_se_scope = #relay.se_scope<device = cpu>, dst_se_scope = #relay.se_scope<device = opencl>} : tensor<4xf32>
  %4 = relay.tanh %3 : tensor<4xf32>
  func.return %2, %4 : tensor<4xf32>, tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @constants_on_two_scopes
// CHECK-COUNT-2: relay.constant
func.func @constants_on_two_scopes(%a: tensor<4xf32> {relay.se_scope = #relay.se_scope<device = cpu>}, %b: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %k = relay.constant {value = dense<1.0> : tensor<4xf32>} : tensor<4xf32>
  %0 = relay.add %a, %k : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = relay.add %b, %k {se_scope = #relay.se_scope<device = opencl>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %2 = relay.on_device %0 {se_scope = #relay.se_scope<device = cpu>} : tensor<4xf32>
  func.return %2, %1 : tensor<4xf32>, tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @free_and_memory
// CHECK:         relay.device_copy
func.func @free_and_memory(%a: tensor<4xf32> {relay.se_scope = #relay.se_scope<device = cpu, memory = "scopeA">}) -> (tensor<4xf32> {relay.se_scope = #relay.se_scope<device = cpu, memory = "scopeB">}) {
  %0 = relay.exp %a : tensor<4xf32>
  %1 = relay.on_device %0 {se_scope = #relay.se_scope<device = cpu>, constrain_body = false, constrain_result = false} : tensor<4xf32>
  func.return %1 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @callee
// CHECK-LABEL: func.func @caller
// CHECK:         func.call @callee
// CHECK-NEXT:    relay.device_copy
func.func @callee(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.exp %x {se_scope = #relay.se_scope<device = opencl, id = 1>} : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
func.func @caller(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = func.call @callee(%a) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = relay.on_device %0 {se_scope = #relay.se_scope<device = opencl, id = 1>} : tensor<4xf32>
  %2 = relay.negative %1 : tensor<4xf32>
  func.return %2 : tensor<4xf32>
}
