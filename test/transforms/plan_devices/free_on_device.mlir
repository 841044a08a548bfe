// RUN: opt-tool %s --split-input-file -p 'plan-devices{targets=c,opencl default-device=opencl}' | filecheck %s

// A free on_device (constrain_body = false, constrain_result = false) is a copy point that
// constrains nothing: before any other defaulting each use takes Default(use, operand), then
// the operand Default(operand, first use); a copy appears only where they still differ.

// An unconstrained operand follows its use: no copy, although the default scope is opencl.

// CHECK-LABEL: func.func @operand_follows_use
// CHECK-SAME:    %a: tensor<4xf32> {relay.se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">}
// CHECK:         %[[X:.*]] = relay.exp %a {se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-NEXT:    relay.negative %[[X]] {se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-NOT:     relay.device_copy
// CHECK-NOT:     relay.on_device
func.func @operand_follows_use(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.exp %a : tensor<4xf32>
  %1 = relay.on_device %0 {se_scope = #relay.se_scope<device = opencl>, constrain_body = false, constrain_result = false} : tensor<4xf32>
  %2 = relay.negative %1 {se_scope = #relay.se_scope<device = cpu>} : tensor<4xf32>
  func.return %2 : tensor<4xf32>
}

// -----

// An unconstrained use follows the operand.

// CHECK-LABEL: func.func @use_follows_operand
// CHECK-SAME:    -> (tensor<4xf32> {relay.se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">})
// CHECK:         %[[X:.*]] = relay.exp %a {se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-NEXT:    relay.negative %[[X]] {se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-NOT:     relay.device_copy
func.func @use_follows_operand(%a: tensor<4xf32> {relay.se_scope = #relay.se_scope<device = cpu>}) -> tensor<4xf32> {
  %0 = relay.exp %a : tensor<4xf32>
  %1 = relay.on_device %0 {se_scope = #relay.se_scope<device = opencl>, constrain_body = false, constrain_result = false} : tensor<4xf32>
  %2 = relay.negative %1 : tensor<4xf32>
  func.return %2 : tensor<4xf32>
}

// -----

// Operand and use constrained differently: the annotation becomes a copy.

// CHECK-LABEL: func.func @both_constrained
// CHECK:         %[[X:.*]] = relay.exp %a {se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-NEXT:    %[[COPY:.*]] = relay.device_copy %[[X]] {src_se_scope = #relay.se_scope<device = cpu{{[^>]*}}>, dst_se_scope = #relay.se_scope<device = opencl, id = 1{{[^>]*}}>}
// CHECK-NEXT:    relay.negative %[[COPY]] {se_scope = #relay.se_scope<device = opencl, id = 1, target = "opencl", memory = "global">}
func.func @both_constrained(%a: tensor<4xf32> {relay.se_scope = #relay.se_scope<device = cpu>}) -> tensor<4xf32> {
  %0 = relay.exp %a : tensor<4xf32>
  %1 = relay.on_device %0 {se_scope = #relay.se_scope<device = cpu>, constrain_body = false, constrain_result = false} : tensor<4xf32>
  %2 = relay.negative %1 {se_scope = #relay.se_scope<device = opencl, id = 1>} : tensor<4xf32>
  func.return %2 : tensor<4xf32>
}

// -----

// Two uses: the operand follows the first use in program order; the second use reads a copy.

// CHECK-LABEL: func.func @first_use_wins
// CHECK:         %[[X:.*]] = relay.exp %a {se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK-NEXT:    %[[COPY:.*]] = relay.device_copy %[[X]] {src_se_scope = #relay.se_scope<device = opencl{{[^>]*}}>, dst_se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-NEXT:    relay.abs %[[X]] {se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK-NEXT:    relay.negative %[[COPY]] {se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
func.func @first_use_wins(%a: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = relay.exp %a : tensor<4xf32>
  %1 = relay.on_device %0 {se_scope = #relay.se_scope<device = cpu>, constrain_body = false, constrain_result = false} : tensor<4xf32>
  %2 = relay.abs %1 {se_scope = #relay.se_scope<device = opencl>} : tensor<4xf32>
  %3 = relay.negative %1 {se_scope = #relay.se_scope<device = cpu>} : tensor<4xf32>
  func.return %2, %3 : tensor<4xf32>, tensor<4xf32>
}

// -----

// A partly constrained use is completed from the operand (Default(use, operand)): the
// negative keeps its memory scope and takes the operand's device and id.

// CHECK-LABEL: func.func @use_completed
// CHECK:         %[[X:.*]] = relay.exp %a {se_scope = #relay.se_scope<device = opencl, id = 1, target = "opencl", memory = "global">}
// CHECK-NEXT:    %[[COPY:.*]] = relay.device_copy %[[X]] {src_se_scope = #relay.se_scope<device = opencl, id = 1, target = "opencl", memory = "global">, dst_se_scope = #relay.se_scope<device = opencl, id = 1, target = "opencl", memory = "texture">}
// CHECK-NEXT:    relay.negative %[[COPY]] {se_scope = #relay.se_scope<device = opencl, id = 1, target = "opencl", memory = "texture">}
func.func @use_completed(%a: tensor<4xf32> {relay.se_scope = #relay.se_scope<device = opencl, id = 1, memory = "global">}) -> tensor<4xf32> {
  %0 = relay.exp %a : tensor<4xf32>
  %1 = relay.on_device %0 {se_scope = #relay.se_scope<device = cpu>, constrain_body = false, constrain_result = false} : tensor<4xf32>
  %2 = relay.negative %1 {se_scope = #relay.se_scope<memory = "texture">} : tensor<4xf32>
  func.return %2 : tensor<4xf32>
}
