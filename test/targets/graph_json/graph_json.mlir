// RUN: opt-tool %s -p inline-calls,plan-memory -t graph-json | filecheck %s

#cpu = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">
#cl = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">
func.func private @fused_add(memref<4xf32>, memref<4xf32>, memref<4xf32>)
func.func private @fused_exp(memref<4xf32>, memref<4xf32>)

// Parameters, then constants (params p0, ...), then kernels and copies in program order;
// device_index indexes "devices" (plain data: kind, virtual id, target, memory), the host first.
// CHECK:      "nodes": [
// CHECK-NEXT:   {"op": "null", "name": "x", "inputs": []},
// CHECK-NEXT:   {"op": "null", "name": "p0", "inputs": []},
// CHECK-NEXT:   {"op": "null", "name": "p1", "inputs": []},
// CHECK-NEXT:   {"op": "tvm_op", "name": "fused_add", "attrs": {"func_name": "fused_add", "num_inputs": "2", "num_outputs": "1", "flatten_data": "0"}, "inputs": {{\[\[}}0, 0, 0], [1, 0, 0]]},
// CHECK-NEXT:   {"op": "tvm_op", "name": "__copy", "attrs": {"func_name": "__copy", "num_inputs": "1", "num_outputs": "1", "flatten_data": "0"}, "inputs": {{\[\[}}3, 0, 0]]},
// CHECK-NEXT:   {"op": "tvm_op", "name": "fused_exp", "attrs": {"func_name": "fused_exp", "num_inputs": "1", "num_outputs": "1", "flatten_data": "0"}, "inputs": {{\[\[}}4, 0, 0]]},
// CHECK-NEXT:   {"op": "tvm_op", "name": "fused_add", "attrs": {"func_name": "fused_add", "num_inputs": "2", "num_outputs": "1", "flatten_data": "0"}, "inputs": {{\[\[}}5, 0, 0], [2, 0, 0]]}
// CHECK-NEXT: ],
// CHECK-NEXT: "arg_nodes": [0, 1, 2],
// CHECK-NEXT: "heads": {{\[\[}}6, 0, 0], [3, 0, 0]],
// CHECK-NEXT: "node_row_ptr": [0, 1, 2, 3, 4, 5, 6, 7],
// CHECK-NEXT: "attrs": {
// CHECK-NEXT:   "storage_id": ["list_int", [0, 1, 5, 2, 3, 4, 6]],
// CHECK-NEXT:   "shape": ["list_shape", {{\[\[}}4], [4], [4], [4], [4], [4], [4]]],
// CHECK-NEXT:   "dltype": ["list_str", ["float32", "float32", "float32", "float32", "float32", "float32", "float32"]],
// CHECK-NEXT:   "device_index": ["list_int", [1, 1, 0, 1, 0, 0, 0]]
// CHECK-NEXT: },
// CHECK-NEXT: "devices": [{"kind": "cpu", "id": 0, "target": "c", "memory": "global"}, {"kind": "opencl", "id": 0, "target": "opencl", "memory": "global"}]
func.func @main(%x: tensor<4xf32> {relay.se_scope = #cl}) -> (tensor<4xf32>, tensor<4xf32>) {
  %k = relay.constant {value = dense<1.0> : tensor<4xf32>, se_scope = #cl} : tensor<4xf32>
  %0 = relay.launch @fused_add(%x, %k) {se_scope = #cl} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = relay.device_copy %0 {src_se_scope = #cl, dst_se_scope = #cpu} : tensor<4xf32>
  %2 = relay.launch @fused_exp(%1) {se_scope = #cpu} : (tensor<4xf32>) -> tensor<4xf32>
  %k2 = relay.constant {value = dense<2.0> : tensor<4xf32>, se_scope = #cpu} : tensor<4xf32>
  %3 = relay.launch @fused_add(%2, %k2) {se_scope = #cpu} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %3, %0 : tensor<4xf32>, tensor<4xf32>
}
