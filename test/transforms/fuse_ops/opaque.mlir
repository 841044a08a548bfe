// RUN: opt-tool %s --split-input-file -p fuse-ops | filecheck %s

// Opaque ops stand alone: softmax is a group of one, and device_copy, constants, calls and other
// non-primitive ops stay outside every group.

// CHECK-LABEL: func.func @softmax_alone
// CHECK:         %[[E:.*]] = relay.fused(%a) {kernel_name = "fused_exp"}
// CHECK:         %[[S:.*]] = relay.fused(%[[E]]) {kernel_name = "fused_nn_softmax"}
// CHECK-NEXT:    ^{{.*}}(%[[ARG:.*]]: tensor<4x8xf32>):
// CHECK-NEXT:      %[[IN:.*]] = relay.nn.softmax %[[ARG]]
// CHECK-NEXT:      relay.yield %[[IN]]
// CHECK:         %[[R:.*]] = relay.fused(%[[S]]) {kernel_name = "fused_nn_relu"}
// CHECK-NOT:     relay.fused
// CHECK:         func.return %[[R]]
func.func @softmax_alone(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = relay.exp %a : tensor<4x8xf32>
  %1 = relay.nn.softmax %0 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = relay.nn.relu %1 : tensor<4x8xf32>
  func.return %2 : tensor<4x8xf32>
}

// -----

// A constant stays outside: its value becomes an input of the group that reads it (of each
// group, when several read it).

// CHECK-LABEL: func.func @constants_outside
// CHECK:         %[[K:.*]] = relay.constant
// CHECK-NOT:     relay.constant
// CHECK:         %[[G:.*]] = relay.fused(%a, %[[K]]) {kernel_name = "fused_add_exp"}
// CHECK-NOT:       relay.constant
// CHECK:         %[[S:.*]] = relay.fused(%[[G]]) {kernel_name = "fused_nn_softmax"}
// CHECK:         relay.fused(%[[S]], %[[K]]) {kernel_name = "fused_multiply"}
// CHECK-NOT:       relay.constant
func.func @constants_outside(%a: tensor<4xf32>) -> tensor<4xf32> {
  %k = relay.constant {value = dense<2.0> : tensor<4xf32>} : tensor<4xf32>
  %0 = relay.add %a, %k : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = relay.exp %0 : tensor<4xf32>
  %2 = relay.nn.softmax %1 : (tensor<4xf32>) -> tensor<4xf32>
  %3 = relay.multiply %2, %k : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %3 : tensor<4xf32>
}

// -----

// A device_copy is never inside a group, and no group reaches across it.

// CHECK-LABEL: func.func @copy_outside
// CHECK:         %[[E:.*]] = relay.fused(%a) {se_scope = #relay.se_scope<device = cpu>, kernel_name = "fused_exp"}
// CHECK-NOT:       relay.device_copy
// CHECK:           relay.yield
// CHECK:         %[[C:.*]] = relay.device_copy %[[E]]
// CHECK:         relay.fused(%[[C]]) {se_scope = #relay.se_scope<device = opencl>, kernel_name = "fused_nn_relu"}
// CHECK-NOT:       relay.device_copy
// CHECK:           relay.yield
func.func @copy_outside(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.exp %a {se_scope = #relay.se_scope<device = cpu>} : tensor<4xf32>
  %1 = relay.device_copy %0 {src_se_scope = #relay.se_scope<device = cpu>, dst_se_scope = #relay.se_scope<device = opencl>} : tensor<4xf32>
  %2 = relay.nn.relu %1 {se_scope = #relay.se_scope<device = opencl>} : tensor<4xf32>
  func.return %2 : tensor<4xf32>
}

// -----

// A call is opaque: it neither joins a group nor lets one pass through it.

func.func @callee(%x: tensor<4xf32>) -> tensor<4xf32> {
  func.return %x : tensor<4xf32>
}

// CHECK-LABEL: func.func @call_between
// CHECK:         %[[E:.*]] = relay.fused(%a) {kernel_name = "fused_exp"}
// CHECK:         %[[C:.*]] = func.call @callee(%[[E]])
// CHECK:         relay.fused(%[[C]], %[[E]]) {kernel_name = "fused_add"}
// CHECK-NOT:     relay.fused
func.func @call_between(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.exp %a : tensor<4xf32>
  %1 = func.call @callee(%0) : (tensor<4xf32>) -> tensor<4xf32>
  %2 = relay.add %1, %0 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %2 : tensor<4xf32>
}

// -----

// Ops the walk from the returned values does not reach (here they feed a call without
// results, which is kept) are still fused: the call starts a walk of its own.

func.func private @consume(tensor<4xf32>)

// CHECK-LABEL: func.func @unreturned
// CHECK:         %[[G:.*]] = relay.fused(%a) {kernel_name = "fused_exp_nn_relu"}
// CHECK:         func.call @consume(%[[G]])
// CHECK:         %[[N:.*]] = relay.fused(%a) {kernel_name = "fused_negative"}
// CHECK-NOT:     relay.fused
// CHECK:         func.return %[[N]]
func.func @unreturned(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.exp %a : tensor<4xf32>
  %1 = relay.nn.relu %0 : tensor<4xf32>
  func.call @consume(%1) : (tensor<4xf32>) -> ()
  %2 = relay.negative %a : tensor<4xf32>
  func.return %2 : tensor<4xf32>
}
