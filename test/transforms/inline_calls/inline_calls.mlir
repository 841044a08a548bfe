// RUN: opt-tool %s -p inline-calls --split-input-file --verify-diagnostics | filecheck %s

#cpu = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">
func.func private @k(memref<8xf32>, memref<8xf32>)

// A call (and the call inside the callee) are replaced by the callee's launches; the relay
// functions go, the kernel stays.
// CHECK-LABEL: func.func private @k
// CHECK-NOT:   func.func @f
// CHECK-NOT:   func.func @g
// CHECK-LABEL: func.func @main
// CHECK-NEXT:    %[[X:.*]] = relay.launch @k(%a)
// CHECK-NEXT:    %[[Y:.*]] = relay.launch @k(%[[X]])
// CHECK-NEXT:    %[[Z:.*]] = relay.launch @k(%[[Y]])
// CHECK-NEXT:    func.return %[[Z]], %[[X]]
func.func @g(%x: tensor<8xf32> {relay.se_scope = #cpu}) -> (tensor<8xf32> {relay.se_scope = #cpu}) {
  %0 = relay.launch @k(%x) {se_scope = #cpu} : (tensor<8xf32>) -> tensor<8xf32>
  func.return %0 : tensor<8xf32>
}
func.func @f(%x: tensor<8xf32> {relay.se_scope = #cpu}) -> (tensor<8xf32> {relay.se_scope = #cpu}) {
  %0 = relay.launch @k(%x) {se_scope = #cpu} : (tensor<8xf32>) -> tensor<8xf32>
  %1 = func.call @g(%0) : (tensor<8xf32>) -> tensor<8xf32>
  func.return %1 : tensor<8xf32>
}
func.func @main(%a: tensor<8xf32> {relay.se_scope = #cpu}) -> (tensor<8xf32>, tensor<8xf32>) {
  %0 = relay.launch @k(%a) {se_scope = #cpu} : (tensor<8xf32>) -> tensor<8xf32>
  %1 = func.call @f(%0) : (tensor<8xf32>) -> tensor<8xf32>
  func.return %1, %0 : tensor<8xf32>, tensor<8xf32>
}

// -----

func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  %0 = func.call @f(%x) : (tensor<8xf32>) -> tensor<8xf32>
  func.return %0 : tensor<8xf32>
}
func.func @main(%a: tensor<8xf32>) -> tensor<8xf32> {
  %0 = func.call @f(%a) : (tensor<8xf32>) -> tensor<8xf32>
  // CHECK: cannot inline the call to @f: the functions are recursive
  func.return %0 : tensor<8xf32>
}

// -----

func.func private @k(memref<8xf32>, memref<8xf32>)
func.func @main(%a: memref<8xf32>, %b: memref<8xf32>) {
  // CHECK: cannot inline the call to @k: the module has no function @k with a body
  func.call @k(%a, %b) : (memref<8xf32>, memref<8xf32>) -> ()
  func.return
}

// -----

#cpu = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">
func.func @k(%in0: memref<8xf32>, %out0: memref<8xf32>) attributes {relay.se_scope = #cpu} {
  func.return
}
func.func @main(%a: memref<8xf32>, %b: memref<8xf32>) {
  // CHECK: cannot inline the call to @k: it is a kernel; launch it with relay.launch
  func.call @k(%a, %b) : (memref<8xf32>, memref<8xf32>) -> ()
  func.return
}
