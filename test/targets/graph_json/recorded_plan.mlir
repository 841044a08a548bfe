// RUN: opt-tool %s -t graph-json | filecheck %s


#cl0 = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">
#cl1 = #relay.se_scope<device = opencl, id = 1, target = "opencl", memory = "global">
func.func private @k(memref<4xf32>, memref<4xf32>)

// Two OpenCL devices: sorted by id; the recorded storage plan is used as it is; a parameter
// named like a param keeps its name.
// CHECK:      {"op": "null", "name": "p0", "inputs": []},
// CHECK-NEXT: {"op": "null", "name": "p0_1", "inputs": []},
// CHECK:      "storage_id": ["list_int", [7, 8, 9, 10]],
// CHECK:      "device_index": ["list_int", [1, 1, 1, 0]]
// CHECK-NEXT: },
// CHECK-NEXT: "devices": [{"kind": "opencl", "id": 0, "target": "opencl", "memory": "global"}, {"kind": "opencl", "id": 1, "target": "opencl", "memory": "global"}]
func.func @main(%p0: tensor<4xf32> {relay.se_scope = #cl1, relay.storage_id = 7 : i64}) -> tensor<4xf32> {
  %k = relay.constant {value = dense<1.0> : tensor<4xf32>, se_scope = #cl1, relay.storage_id = 8 : i64} : tensor<4xf32>
  %0 = relay.launch @k(%p0) {se_scope = #cl1, relay.storage_id = 9 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  %1 = relay.device_copy %0 {src_se_scope = #cl1, dst_se_scope = #cl0, relay.storage_id = 10 : i64} : tensor<4xf32>
  func.return %1 : tensor<4xf32>
}
