// RUN: opt-tool %s -p 'plan-devices,fuse-ops,convert-relay-to-loops,inline-calls,plan-memory' -t graph-json | filecheck %s

// A concatenation planned in place is a `__nop` node, as a reshape-only one: its inputs'
// kernels wrote its result. Its inputs are in its storage, and the one column TVM's format
// lacks says where: `storage_offset`, bytes into the storage (%b after %a's 4 floats).
// CHECK:      {"op": "tvm_op", "name": "fused_concatenate", "attrs": {"func_name": "__nop", "num_inputs": "2", "num_outputs": "1", "flatten_data": "0"}, "inputs": {{\[\[}}2, 0, 0], [3, 0, 0]]},
// CHECK:      "storage_id": ["list_int", [0, 1, [[C:[0-9]+]], [[C]], [[C]], {{[0-9]+}}]],
// CHECK-NEXT: "shape": ["list_shape", {{\[\[}}1, 4], [1, 6], [1, 4], [1, 6], [1, 10], [1, 10]]],
// CHECK-NEXT: "dltype": ["list_str", ["float32", "float32", "float32", "float32", "float32", "float32"]],
// CHECK-NEXT: "device_index": ["list_int", [0, 0, 0, 0, 0, 0]],
// CHECK-NEXT: "storage_offset": ["list_int", [0, 0, 0, 16, 0, 0]]
// CHECK-NEXT: },
func.func @main(%x: tensor<1x4xf32>, %y: tensor<1x6xf32>) -> tensor<1x10xf32> {
  %a = relay.nn.softmax %x : (tensor<1x4xf32>) -> tensor<1x4xf32>
  %b = relay.nn.softmax %y : (tensor<1x6xf32>) -> tensor<1x6xf32>
  %c = relay.concatenate %a, %b {axis = 1 : i64} : (tensor<1x4xf32>, tensor<1x6xf32>) -> tensor<1x10xf32>
  %d = relay.nn.softmax %c : (tensor<1x10xf32>) -> tensor<1x10xf32>
  func.return %d : tensor<1x10xf32>
}

// The same concatenation at batch 2 is not one byte range per input: a copy kernel, and
// the graph has TVM's columns alone.
// RUN: sed 's/1x/2x/g; s/\[1, /[2, /g' %s | opt-tool -p 'plan-devices,fuse-ops,convert-relay-to-loops,inline-calls,plan-memory' -t graph-json | filecheck %s --check-prefix=COPY
// COPY:     {"op": "tvm_op", "name": "fused_concatenate", "attrs": {"func_name": "fused_concatenate",
// COPY-NOT: storage_offset
