// RUN: opt-tool %s --split-input-file -p 'plan-devices{targets=c,opencl}' | filecheck %s

// relay.device_copy: the operand is on src_se_scope, the result on dst_se_scope. Copies are
// printed with canonical scopes; a copy whose scopes agree disappears; copies of one value to
// one scope merge, explicit or not.

// CHECK-LABEL: func.func @explicit_copy
// CHECK-SAME:    %a: tensor<4xf32> {relay.se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">}
// CHECK-SAME:    -> (tensor<4xf32> {relay.se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">})
// CHECK:         %[[X:.*]] = relay.exp %a {se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">}
// CHECK-NEXT:    %[[COPY:.*]] = relay.device_copy %[[X]] {src_se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">, dst_se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">}
// CHECK-NEXT:    %[[Y:.*]] = relay.negative %[[COPY]] {se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">}
// CHECK-NEXT:    func.return %[[Y]]
func.func @explicit_copy(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.exp %a : tensor<4xf32>
  %1 = relay.device_copy %0 {src_se_scope = #relay.se_scope<device = cpu>, dst_se_scope = #relay.se_scope<device = opencl>} : tensor<4xf32>
  %2 = relay.negative %1 : tensor<4xf32>
  func.return %2 : tensor<4xf32>
}

// -----

// A copy whose canonical scopes agree (id 0 is the default id) is redundant.

// CHECK-LABEL: func.func @redundant_copy
// CHECK:         %[[X:.*]] = relay.exp %a {se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK-NEXT:    relay.negative %[[X]] {se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK-NOT:     relay.device_copy
func.func @redundant_copy(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.exp %a : tensor<4xf32>
  %1 = relay.device_copy %0 {src_se_scope = #relay.se_scope<device = opencl>, dst_se_scope = #relay.se_scope<device = opencl, id = 0, memory = "global">} : tensor<4xf32>
  %2 = relay.negative %1 : tensor<4xf32>
  func.return %2 : tensor<4xf32>
}

// -----

// Two explicit copies of one value to one scope merge into the first.

// CHECK-LABEL: func.func @copies_merge
// CHECK:         %[[X:.*]] = relay.exp %a
// CHECK-NEXT:    %[[COPY:.*]] = relay.device_copy %[[X]]
// CHECK-NEXT:    %[[N:.*]] = relay.negative %[[COPY]]
// CHECK-NEXT:    %[[T:.*]] = relay.tanh %[[COPY]]
// CHECK-NEXT:    relay.add %[[N]], %[[T]]
// CHECK-NOT:     relay.device_copy
func.func @copies_merge(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.exp %a : tensor<4xf32>
  %1 = relay.device_copy %0 {src_se_scope = #relay.se_scope<device = cpu>, dst_se_scope = #relay.se_scope<device = opencl>} : tensor<4xf32>
  %2 = relay.negative %1 : tensor<4xf32>
  %3 = relay.device_copy %0 {src_se_scope = #relay.se_scope<device = cpu>, dst_se_scope = #relay.se_scope<device = opencl>} : tensor<4xf32>
  %4 = relay.tanh %3 : tensor<4xf32>
  %5 = relay.add %2, %4 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %5 : tensor<4xf32>
}

// -----

// An explicit copy and an annotation asking for the same copy merge too.

// CHECK-LABEL: func.func @copy_and_annotation_merge
// CHECK:         %[[X:.*]] = relay.exp %a {se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-NEXT:    %[[COPY:.*]] = relay.device_copy %[[X]]
// CHECK-NEXT:    %[[N:.*]] = relay.negative %[[COPY]] {se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK-NEXT:    %[[T:.*]] = relay.tanh %[[COPY]] {se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK-NOT:     relay.device_copy
// CHECK-NOT:     relay.on_device
func.func @copy_and_annotation_merge(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.exp %a : tensor<4xf32>
  %1 = relay.device_copy %0 {src_se_scope = #relay.se_scope<device = cpu>, dst_se_scope = #relay.se_scope<device = opencl>} : tensor<4xf32>
  %2 = relay.negative %1 : tensor<4xf32>
  %3 = relay.on_device %0 {se_scope = #relay.se_scope<device = cpu>} : tensor<4xf32>
  %4 = relay.tanh %3 {se_scope = #relay.se_scope<device = opencl>} : tensor<4xf32>
  %5 = relay.add %2, %4 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %5 : tensor<4xf32>
}

// -----

// A copy of a copy is a chain of two copy points: each copies from its operand's scope, so
// the second copies the first's result (DESIGN.md: a use never reads through an annotation).

// CHECK-LABEL: func.func @copy_of_copy
// CHECK:         %[[X:.*]] = relay.exp %a {se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-NEXT:    %[[COPY:.*]] = relay.device_copy %[[X]] {src_se_scope = #relay.se_scope<device = cpu{{[^>]*}}>, dst_se_scope = #relay.se_scope<device = opencl, id = 0{{[^>]*}}>}
// CHECK-NEXT:    %[[COPY2:.*]] = relay.device_copy %[[COPY]] {src_se_scope = #relay.se_scope<device = opencl, id = 0{{[^>]*}}>, dst_se_scope = #relay.se_scope<device = opencl, id = 1{{[^>]*}}>}
// CHECK-NEXT:    relay.negative %[[COPY2]] {se_scope = #relay.se_scope<device = opencl, id = 1{{[^>]*}}>}
// CHECK-NOT:     relay.device_copy
func.func @copy_of_copy(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.exp %a : tensor<4xf32>
  %1 = relay.device_copy %0 {src_se_scope = #relay.se_scope<device = cpu>, dst_se_scope = #relay.se_scope<device = opencl>} : tensor<4xf32>
  %2 = relay.device_copy %1 {src_se_scope = #relay.se_scope<device = opencl>, dst_se_scope = #relay.se_scope<device = opencl, id = 1>} : tensor<4xf32>
  %3 = relay.negative %2 : tensor<4xf32>
  func.return %3 : tensor<4xf32>
}

// -----

// A copy nobody reads still copies: it stays, with canonical scopes.

// CHECK-LABEL: func.func @unread_copy
// CHECK:         %[[X:.*]] = relay.exp %a
// CHECK-NEXT:    relay.device_copy %[[X]] {src_se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">, dst_se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">}
func.func @unread_copy(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.exp %a : tensor<4xf32>
  %1 = relay.device_copy %0 {src_se_scope = #relay.se_scope<device = cpu>, dst_se_scope = #relay.se_scope<device = opencl>} : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
