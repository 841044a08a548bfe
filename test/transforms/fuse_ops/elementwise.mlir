// RUN: opt-tool %s --split-input-file -p fuse-ops | filecheck %s

// Elementwise and broadcast ops: chains fuse, diamonds fuse at the op where the paths re-join,
// and they fuse into a reduction or an injective op that post-dominates them.

// CHECK-LABEL: func.func @chain
// CHECK:         %[[R:.*]] = relay.fused(%a) {kernel_name = "fused_exp_negative_nn_relu_sigmoid"}
// CHECK-NEXT:    ^{{.*}}(%[[A:.*]]: tensor<4x8xf32>):
// CHECK-NEXT:      %[[E:.*]] = relay.exp %[[A]]
// CHECK-NEXT:      %[[N:.*]] = relay.negative %[[E]]
// CHECK-NEXT:      %[[R1:.*]] = relay.nn.relu %[[N]]
// CHECK-NEXT:      %[[S:.*]] = relay.sigmoid %[[R1]]
// CHECK-NEXT:      relay.yield %[[S]]
// CHECK-NOT:     relay.fused
// CHECK:         func.return %[[R]]
func.func @chain(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = relay.exp %a : tensor<4x8xf32>
  %1 = relay.negative %0 : tensor<4x8xf32>
  %2 = relay.nn.relu %1 : tensor<4x8xf32>
  %3 = relay.sigmoid %2 : tensor<4x8xf32>
  func.return %3 : tensor<4x8xf32>
}

// -----

// Broadcasting binary ops join the chain; the block arguments are the group's inputs, in the
// order TVM's FuseMutator allocates them (a post-order walk from the last op).

// CHECK-LABEL: func.func @broadcast_chain
// CHECK-COUNT-1: relay.fused(%c, %a, %b)
// CHECK-SAME:    kernel_name = "fused_exp_add_multiply"
// CHECK-NOT:     relay.fused
func.func @broadcast_chain(%a: tensor<4x8xf32>, %b: tensor<8xf32>, %c: tensor<4x1xf32>) -> tensor<4x8xf32> {
  %0 = relay.exp %b : tensor<8xf32>
  %1 = relay.add %a, %0 : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %2 = relay.multiply %c, %1 : (tensor<4x1xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %2 : tensor<4x8xf32>
}

// -----

// A value used twice whose paths re-join: one group, rooted at the op where they meet.

// CHECK-LABEL: func.func @diamond
// CHECK:         %[[R:.*]] = relay.fused(%a) {kernel_name = "fused_exp_nn_relu_tanh_add"}
// CHECK-NEXT:    ^{{.*}}(%[[A:.*]]: tensor<4x8xf32>):
// CHECK-NEXT:      %[[E:.*]] = relay.exp %[[A]]
// CHECK-NEXT:      %[[L:.*]] = relay.nn.relu %[[E]]
// CHECK-NEXT:      %[[T:.*]] = relay.tanh %[[E]]
// CHECK-NEXT:      %[[S:.*]] = relay.add %[[L]], %[[T]]
// CHECK-NEXT:      relay.yield %[[S]]
// CHECK-NOT:     relay.fused
// CHECK:         func.return %[[R]]
func.func @diamond(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = relay.exp %a : tensor<4x8xf32>
  %1 = relay.nn.relu %0 : tensor<4x8xf32>
  %2 = relay.tanh %0 : tensor<4x8xf32>
  %3 = relay.add %1, %2 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %3 : tensor<4x8xf32>
}

// -----

// Elementwise ops fuse into the reduction they feed; the ops after a reduction start a new
// group (a reduction starts no fusion).

// CHECK-LABEL: func.func @reduction_fed_by_elementwise
// CHECK:         %[[S:.*]] = relay.fused(%a, %b) {kernel_name = "fused_exp_multiply_sum"}
// CHECK:           relay.sum
// CHECK-NEXT:      relay.yield
// CHECK:         %[[R:.*]] = relay.fused(%[[S]]) {kernel_name = "fused_nn_relu"}
// CHECK-NOT:     relay.fused
// CHECK:         func.return %[[R]]
func.func @reduction_fed_by_elementwise(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> tensor<4xf32> {
  %0 = relay.exp %a : tensor<4x8xf32>
  %1 = relay.multiply %0, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = relay.sum %1 {axis = array<i64: 1>} : (tensor<4x8xf32>) -> tensor<4xf32>
  %3 = relay.nn.relu %2 : tensor<4xf32>
  func.return %3 : tensor<4xf32>
}

// -----

// A diamond through a reduction (softmax written out): the paths from %0 re-join at the
// subtract, but one passes the reduction, so %0 stays alone; the reduction is alone too.

// CHECK-LABEL: func.func @diamond_through_reduction
// CHECK-COUNT-3: relay.fused
// CHECK-NOT:     relay.fused
func.func @diamond_through_reduction(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = relay.exp %a : tensor<4x8xf32>
  %1 = relay.max %0 {axis = array<i64: 1>, keepdims = true} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %2 = relay.subtract %0, %1 : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  func.return %2 : tensor<4x8xf32>
}

// -----

// A broadcast fuses into the injective op that consumes it.

// CHECK-LABEL: func.func @broadcast_into_injective
// CHECK-COUNT-1: relay.fused
// CHECK-SAME:    kernel_name = "fused_add_reshape"
// CHECK-NOT:     relay.fused
func.func @broadcast_into_injective(%a: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<32xf32> {
  %0 = relay.add %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %1 = relay.reshape %0 : (tensor<4x8xf32>) -> tensor<32xf32>
  func.return %1 : tensor<32xf32>
}

// -----

// A value returned and also used by a later op ends its group: the function's results are a
// tuple, which nothing is fused into.

// CHECK-LABEL: func.func @returned_and_reused
// CHECK:         %[[E:.*]] = relay.fused(%a) {kernel_name = "fused_exp"}
// CHECK:         %[[L:.*]] = relay.fused(%[[E]]) {kernel_name = "fused_nn_relu"}
// CHECK-NOT:     relay.fused
// CHECK:         func.return %[[E]], %[[L]]
func.func @returned_and_reused(%a: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %0 = relay.exp %a : tensor<4x8xf32>
  %1 = relay.nn.relu %0 : tensor<4x8xf32>
  func.return %0, %1 : tensor<4x8xf32>, tensor<4x8xf32>
}
