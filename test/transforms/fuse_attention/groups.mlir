// RUN: opt-tool %s --split-input-file -p fuse-ops,fuse-attention | filecheck %s

// Attention's scores group (batch_matmul, scale), its softmax group and the batch_matmul group
// that multiplies the softmax by v become one group, where attention_rows lowers it; elsewhere
// the three groups stay.

// The transformer's attention at 2 heads: one group, the ops in order, named after them.

// CHECK-LABEL: func.func @attention
// CHECK-SAME:    (%[[Q:.*]]: tensor<2x128x64xf32>, %[[K:.*]]: tensor<2x128x64xf32>, %[[V:.*]]: tensor<2x64x128xf32>, %[[S:.*]]: tensor<f32>)
// CHECK:         %[[G:.*]] = relay.fused(%[[Q]], %[[K]], %[[S]], %[[V]]) {se_scope = #relay.se_scope<device = cpu>, kernel_name = "fused_nn_batch_matmul_multiply_nn_softmax_nn_batch_matmul"}
// CHECK-SAME:        -> tensor<2x128x64xf32>
// CHECK-NEXT:    ^{{.*}}(%[[BQ:.*]]: tensor<2x128x64xf32>, %[[BK:.*]]: tensor<2x128x64xf32>, %[[BS:.*]]: tensor<f32>, %[[BV:.*]]: tensor<2x64x128xf32>):
// CHECK-NEXT:      %[[A:.*]] = relay.nn.batch_matmul %[[BQ]], %[[BK]]
// CHECK-NEXT:      %[[M:.*]] = relay.multiply %[[A]], %[[BS]]
// CHECK-NEXT:      %[[P:.*]] = relay.nn.softmax %[[M]]
// CHECK-NEXT:      %[[O:.*]] = relay.nn.batch_matmul %[[P]], %[[BV]]
// CHECK-NEXT:      relay.yield %[[O]] : tensor<2x128x64xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[G]]
func.func @attention(%q: tensor<2x128x64xf32>, %k: tensor<2x128x64xf32>, %v: tensor<2x64x128xf32>, %s: tensor<f32>) -> tensor<2x128x64xf32> {
  %a = relay.nn.batch_matmul %q, %k {se_scope = #relay.se_scope<device = cpu>} : (tensor<2x128x64xf32>, tensor<2x128x64xf32>) -> tensor<2x128x128xf32>
  %m = relay.multiply %a, %s {se_scope = #relay.se_scope<device = cpu>} : (tensor<2x128x128xf32>, tensor<f32>) -> tensor<2x128x128xf32>
  %p = relay.nn.softmax %m {se_scope = #relay.se_scope<device = cpu>} : (tensor<2x128x128xf32>) -> tensor<2x128x128xf32>
  %o = relay.nn.batch_matmul %p, %v {se_scope = #relay.se_scope<device = cpu>} : (tensor<2x128x128xf32>, tensor<2x64x128xf32>) -> tensor<2x128x64xf32>
  func.return %o : tensor<2x128x64xf32>
}

// -----

// The scores used twice (returned too): three groups.

// CHECK-LABEL: func.func @scores_used_twice
// CHECK-COUNT-3: relay.fused
// CHECK-NOT:     relay.fused
func.func @scores_used_twice(%q: tensor<1x32x16xf32>, %k: tensor<1x32x16xf32>, %v: tensor<1x16x32xf32>) -> (tensor<1x32x16xf32>, tensor<1x32x32xf32>) {
  %a = relay.nn.batch_matmul %q, %k {se_scope = #relay.se_scope<device = cpu>} : (tensor<1x32x16xf32>, tensor<1x32x16xf32>) -> tensor<1x32x32xf32>
  %p = relay.nn.softmax %a {se_scope = #relay.se_scope<device = cpu>} : (tensor<1x32x32xf32>) -> tensor<1x32x32xf32>
  %o = relay.nn.batch_matmul %p, %v {se_scope = #relay.se_scope<device = cpu>} : (tensor<1x32x32xf32>, tensor<1x16x32xf32>) -> tensor<1x32x16xf32>
  func.return %o, %a : tensor<1x32x16xf32>, tensor<1x32x32xf32>
}

// -----

// A softmax along another axis than the last: three groups.

// CHECK-LABEL: func.func @softmax_on_another_axis
// CHECK-COUNT-3: relay.fused
// CHECK-NOT:     relay.fused
func.func @softmax_on_another_axis(%q: tensor<1x32x16xf32>, %k: tensor<1x32x16xf32>, %v: tensor<1x16x32xf32>) -> tensor<1x32x16xf32> {
  %a = relay.nn.batch_matmul %q, %k {se_scope = #relay.se_scope<device = cpu>} : (tensor<1x32x16xf32>, tensor<1x32x16xf32>) -> tensor<1x32x32xf32>
  %p = relay.nn.softmax %a {axis = 1 : i64, se_scope = #relay.se_scope<device = cpu>} : (tensor<1x32x32xf32>) -> tensor<1x32x32xf32>
  %o = relay.nn.batch_matmul %p, %v {se_scope = #relay.se_scope<device = cpu>} : (tensor<1x32x32xf32>, tensor<1x16x32xf32>) -> tensor<1x32x16xf32>
  func.return %o : tensor<1x32x16xf32>
}

// -----

// The softmax on another device than the two batch_matmuls (the copies between them are
// plan-devices' business; here the scopes differ): three groups.

// CHECK-LABEL: func.func @different_scopes
// CHECK-COUNT-3: relay.fused
// CHECK-NOT:     relay.fused
func.func @different_scopes(%q: tensor<1x32x16xf32>, %k: tensor<1x32x16xf32>, %v: tensor<1x16x32xf32>) -> tensor<1x32x16xf32> {
  %a = relay.nn.batch_matmul %q, %k {se_scope = #relay.se_scope<device = cpu>} : (tensor<1x32x16xf32>, tensor<1x32x16xf32>) -> tensor<1x32x32xf32>
  %p = relay.nn.softmax %a {se_scope = #relay.se_scope<device = opencl>} : (tensor<1x32x32xf32>) -> tensor<1x32x32xf32>
  %o = relay.nn.batch_matmul %p, %v {se_scope = #relay.se_scope<device = cpu>} : (tensor<1x32x32xf32>, tensor<1x16x32xf32>) -> tensor<1x32x16xf32>
  func.return %o : tensor<1x32x16xf32>
}

// -----

// A softmax of something else than a batch_matmul (an input plus a mask): three groups.

// CHECK-LABEL: func.func @softmax_of_something_else
// CHECK-COUNT-3: relay.fused
// CHECK-NOT:     relay.fused
func.func @softmax_of_something_else(%x: tensor<1x32x32xf32>, %mask: tensor<1x32x32xf32>, %v: tensor<1x16x32xf32>) -> tensor<1x32x16xf32> {
  %a = relay.add %x, %mask {se_scope = #relay.se_scope<device = cpu>} : (tensor<1x32x32xf32>, tensor<1x32x32xf32>) -> tensor<1x32x32xf32>
  %p = relay.nn.softmax %a {se_scope = #relay.se_scope<device = cpu>} : (tensor<1x32x32xf32>) -> tensor<1x32x32xf32>
  %o = relay.nn.batch_matmul %p, %v {se_scope = #relay.se_scope<device = cpu>} : (tensor<1x32x32xf32>, tensor<1x16x32xf32>) -> tensor<1x32x16xf32>
  func.return %o : tensor<1x32x16xf32>
}

// -----

// Too many keys (4096): a work item's scratch would pass 320 KiB, attention_rows does not
// take the group: three groups.

// CHECK-LABEL: func.func @too_many_keys
// CHECK-COUNT-3: relay.fused
// CHECK-NOT:     relay.fused
func.func @too_many_keys(%q: tensor<1x64x16xf32>, %k: tensor<1x4096x16xf32>, %v: tensor<1x16x4096xf32>) -> tensor<1x64x16xf32> {
  %a = relay.nn.batch_matmul %q, %k {se_scope = #relay.se_scope<device = opencl>} : (tensor<1x64x16xf32>, tensor<1x4096x16xf32>) -> tensor<1x64x4096xf32>
  %p = relay.nn.softmax %a {se_scope = #relay.se_scope<device = opencl>} : (tensor<1x64x4096xf32>) -> tensor<1x64x4096xf32>
  %o = relay.nn.batch_matmul %p, %v {se_scope = #relay.se_scope<device = opencl>} : (tensor<1x64x4096xf32>, tensor<1x16x4096xf32>) -> tensor<1x64x16xf32>
  func.return %o : tensor<1x64x16xf32>
}

// -----

// q, k and v as the heads of one tensor (a Q/K/V dense's result: strided slice, reshape,
// transpose each): their three move groups join the attention's group, read where they lie;
// the group is named after the attention's ops.

// CHECK-LABEL: func.func @heads_of_one_tensor
// CHECK-SAME:    (%[[X:.*]]: tensor<32x96xf32>, %[[S:.*]]: tensor<f32>)
// CHECK:         %[[G:.*]] = relay.fused(%[[X]], %[[S]]) {se_scope = #relay.se_scope<device = cpu>, kernel_name = "fused_nn_batch_matmul_multiply_nn_softmax_nn_batch_matmul"}
// CHECK-COUNT-3: relay.strided_slice
// CHECK:         relay.nn.batch_matmul
// CHECK:         relay.nn.softmax
// CHECK:         relay.nn.batch_matmul
// CHECK:         func.return %[[G]]
// CHECK-NOT:     relay.fused
func.func @heads_of_one_tensor(%x: tensor<32x96xf32>, %s: tensor<f32>) -> tensor<2x32x16xf32> {
  %qs = relay.strided_slice %x {begin = array<i64: 0, 0>, end = array<i64: 32, 32>, se_scope = #relay.se_scope<device = cpu>} : (tensor<32x96xf32>) -> tensor<32x32xf32>
  %qr = relay.reshape %qs {newshape = array<i64: 32, 2, 16>, se_scope = #relay.se_scope<device = cpu>} : (tensor<32x32xf32>) -> tensor<32x2x16xf32>
  %q = relay.transpose %qr {axes = array<i64: 1, 0, 2>, se_scope = #relay.se_scope<device = cpu>} : (tensor<32x2x16xf32>) -> tensor<2x32x16xf32>
  %ks = relay.strided_slice %x {begin = array<i64: 0, 32>, end = array<i64: 32, 64>, se_scope = #relay.se_scope<device = cpu>} : (tensor<32x96xf32>) -> tensor<32x32xf32>
  %kr = relay.reshape %ks {newshape = array<i64: 32, 2, 16>, se_scope = #relay.se_scope<device = cpu>} : (tensor<32x32xf32>) -> tensor<32x2x16xf32>
  %k = relay.transpose %kr {axes = array<i64: 1, 0, 2>, se_scope = #relay.se_scope<device = cpu>} : (tensor<32x2x16xf32>) -> tensor<2x32x16xf32>
  %vs = relay.strided_slice %x {begin = array<i64: 0, 64>, end = array<i64: 32, 96>, se_scope = #relay.se_scope<device = cpu>} : (tensor<32x96xf32>) -> tensor<32x32xf32>
  %vr = relay.reshape %vs {newshape = array<i64: 32, 2, 16>, se_scope = #relay.se_scope<device = cpu>} : (tensor<32x32xf32>) -> tensor<32x2x16xf32>
  %v = relay.transpose %vr {axes = array<i64: 1, 2, 0>, se_scope = #relay.se_scope<device = cpu>} : (tensor<32x2x16xf32>) -> tensor<2x16x32xf32>
  %a = relay.nn.batch_matmul %q, %k {se_scope = #relay.se_scope<device = cpu>} : (tensor<2x32x16xf32>, tensor<2x32x16xf32>) -> tensor<2x32x32xf32>
  %m = relay.multiply %a, %s {se_scope = #relay.se_scope<device = cpu>} : (tensor<2x32x32xf32>, tensor<f32>) -> tensor<2x32x32xf32>
  %p = relay.nn.softmax %m {se_scope = #relay.se_scope<device = cpu>} : (tensor<2x32x32xf32>) -> tensor<2x32x32xf32>
  %o = relay.nn.batch_matmul %p, %v {se_scope = #relay.se_scope<device = cpu>} : (tensor<2x32x32xf32>, tensor<2x16x32xf32>) -> tensor<2x32x16xf32>
  func.return %o : tensor<2x32x16xf32>
}
