// RUN: opt-tool %s -p 'plan-devices,fuse-ops,convert-relay-to-loops,inline-calls,plan-memory' -t graph-json | filecheck %s

// A reshape-only group is a tvm_op node named after the group whose func_name is "__nop", as
// TVM marks a reshape-only function; it is stored in its input's storage (entry 2 in entry 1's).
// CHECK:      "nodes": [
// CHECK-NEXT:   {"op": "null", "name": "x", "inputs": []},
// CHECK-NEXT:   {"op": "tvm_op", "name": "fused_nn_softmax", "attrs": {"func_name": "fused_nn_softmax", {{.*}}"inputs": {{\[\[}}0, 0, 0]]},
// CHECK-NEXT:   {"op": "tvm_op", "name": "fused_reshape", "attrs": {"func_name": "__nop", "num_inputs": "1", "num_outputs": "1", "flatten_data": "0"}, "inputs": {{\[\[}}1, 0, 0]]},
// CHECK-NEXT:   {"op": "tvm_op", "name": "fused_nn_softmax_1", "attrs": {"func_name": "fused_nn_softmax_1", {{.*}}"inputs": {{\[\[}}2, 0, 0]]}
// CHECK-NEXT: ],
// CHECK:      "storage_id": ["list_int", [0, [[S:[0-9]+]], [[S]], {{[0-9]+}}]],
// CHECK-NEXT: "shape": ["list_shape", {{\[\[}}2, 16], [2, 16], [4, 8], [4, 8]]],
func.func @main(%x: tensor<2x16xf32>) -> tensor<4x8xf32> {
  %s = relay.nn.softmax %x : (tensor<2x16xf32>) -> tensor<2x16xf32>
  %r = relay.reshape %s : (tensor<2x16xf32>) -> tensor<4x8xf32>
  %t = relay.nn.softmax %r : (tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %t : tensor<4x8xf32>
}
