// RUN: opt-tool %s -p convert-relay-to-loops --split-input-file | filecheck %s

// The ops imported models need (matmul, layer_norm, leaky_relu, pad, take), lowered.

// A matmul whose rhs is [k, n] (not transposed) and has no batch axis: the batch index of the
// lhs is the work item's, the rhs's is dropped (broadcast); register blocks of 4 columns, the
// rhs read at [k, j].

// CHECK-LABEL: func.func @matmul
// CHECK:       func.func @fused_nn_matmul(%[[A:.*]]: memref<2x3x5xf32>, %[[B:.*]]: memref<5x4xf32>, %[[OUT:.*]]: memref<2x3x4xf32>)
// CHECK-SAME:    relay.schedule = "matmul_block"
// CHECK:         ^{{.*}}(%[[N:.*]]: index, %[[I:.*]]: index):
// CHECK-NEXT:      %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} = scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args
// CHECK-NEXT:        %[[X:.*]] = memref.load %[[A]][%[[N]], %[[I]], %[[K]]] : memref<2x3x5xf32>
// CHECK-NEXT:        %[[Y:.*]] = memref.load %[[B]][%[[K]], %{{.*}}] : memref<5x4xf32>
// CHECK-NEXT:        arith.mulf %[[X]], %[[Y]] : f32
func.func @matmul(%a: tensor<2x3x5xf32>, %b: tensor<5x4xf32>) -> tensor<2x3x4xf32> {
  %0 = relay.fused(%a, %b) {kernel_name = "fused_nn_matmul", se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">} : (tensor<2x3x5xf32>, tensor<5x4xf32>) -> tensor<2x3x4xf32> {
  ^bb0(%x: tensor<2x3x5xf32>, %y: tensor<5x4xf32>):
    %1 = relay.nn.matmul %x, %y : (tensor<2x3x5xf32>, tensor<5x4xf32>) -> tensor<2x3x4xf32>
    relay.yield %1 : tensor<2x3x4xf32>
  }
  func.return %0 : tensor<2x3x4xf32>
}
