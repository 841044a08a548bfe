// RUN: opt-tool %s -p 'plan-devices,fuse-ops,convert-relay-to-loops,inline-calls,plan-memory' | filecheck %s

// A concatenation alone, at batch 1 along axis 1, of two kernels' results: each is stored in
// the concatenation's storage at its byte offset (%b after %a's 4 floats), so its kernel
// writes its slice of the result; the concatenation's launch, marked with its axis, is in
// the same storage and has nothing left to copy.
// CHECK:      %[[A:.*]] = relay.launch @fused_nn_softmax(%x) {relay.storage_id = [[C:[0-9]+]] : i64, relay.storage_offset = 0 : i64
// CHECK-NEXT: %[[B:.*]] = relay.launch @fused_nn_softmax_1(%y) {relay.storage_id = [[C]] : i64, relay.storage_offset = 16 : i64
// CHECK-NEXT: %[[CAT:.*]] = relay.launch @fused_concatenate(%[[A]], %[[B]]) {relay.concat_axis = 1 : i64, relay.storage_id = [[C]] : i64, se_scope
// CHECK-NEXT: relay.launch @fused_nn_softmax_2(%[[CAT]]) {relay.storage_id = {{[0-9]+}} : i64, se_scope
func.func @main(%x: tensor<1x4xf32>, %y: tensor<1x6xf32>) -> tensor<1x10xf32> {
  %a = relay.nn.softmax %x : (tensor<1x4xf32>) -> tensor<1x4xf32>
  %b = relay.nn.softmax %y : (tensor<1x6xf32>) -> tensor<1x6xf32>
  %c = relay.concatenate %a, %b {axis = 1 : i64} : (tensor<1x4xf32>, tensor<1x6xf32>) -> tensor<1x10xf32>
  %d = relay.nn.softmax %c : (tensor<1x10xf32>) -> tensor<1x10xf32>
  func.return %d : tensor<1x10xf32>
}
