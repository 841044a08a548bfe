// RUN: opt-tool %s -p plan-memory --split-input-file --verify-diagnostics | filecheck %s

// A reshape-only launch's result is stored in its input's storage, which stays live while
// either is: %t may not take %s's storage while %r, its alias, is still to be read, though
// %s itself is read no more.
// CHECK-LABEL: func.func @main
// CHECK:         %s = relay.launch @k(%x) {relay.storage_id = [[S:[0-9]+]] : i64
// CHECK-NEXT:    relay.launch @r(%s) {relay.reshape_only, relay.storage_id = [[S]] : i64
// CHECK-NOT:     relay.storage_id = [[S]] :
// CHECK:         relay.launch @k2
// CHECK-NEXT:    relay.launch @k(%{{.*}}) {relay.storage_id = [[S]] : i64
#cpu = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">
func.func private @k(memref<8xf32>, memref<8xf32>)
func.func private @r(memref<8xf32>, memref<2x4xf32>)
func.func private @k2(memref<2x4xf32>, memref<8xf32>, memref<8xf32>)
func.func @main(%x: tensor<8xf32> {relay.se_scope = #cpu}, %y: tensor<8xf32> {relay.se_scope = #cpu}) -> (tensor<8xf32> {relay.se_scope = #cpu}) {
  %s = relay.launch @k(%x) {se_scope = #cpu} : (tensor<8xf32>) -> tensor<8xf32>
  %r = relay.launch @r(%s) {relay.reshape_only, se_scope = #cpu} : (tensor<8xf32>) -> tensor<2x4xf32>
  %t = relay.launch @k(%y) {se_scope = #cpu} : (tensor<8xf32>) -> tensor<8xf32>
  %u = relay.launch @k2(%r, %t) {se_scope = #cpu} : (tensor<2x4xf32>, tensor<8xf32>) -> tensor<8xf32>
  %v = relay.launch @k(%u) {se_scope = #cpu} : (tensor<8xf32>) -> tensor<8xf32>
  %w = relay.launch @k(%v) {se_scope = #cpu} : (tensor<8xf32>) -> tensor<8xf32>
  func.return %w : tensor<8xf32>
}

// -----

// A returned reshape of a parameter, and of a constant through a chain of two, share the
// storage of the tensor under them, never another's; an unmarked launch of the same kernel
// gets a storage of its own.
// CHECK-LABEL: func.func @main
// CHECK-SAME:    relay.storage_id = [[A:[0-9]+]] : i64
// CHECK:         relay.constant {relay.storage_id = [[K:[0-9]+]] : i64
// CHECK-NEXT:    relay.launch @r(%a) {relay.reshape_only, relay.storage_id = [[A]] : i64
// CHECK-NEXT:    relay.launch @q(%k) {relay.reshape_only, relay.storage_id = [[K]] : i64
// CHECK-NEXT:    relay.launch @p(%{{.*}}) {relay.reshape_only, relay.storage_id = [[K]] : i64
// CHECK-NEXT:    relay.launch @k(%{{.*}}) {relay.storage_id = [[OUT:[0-9]+]] : i64
// CHECK-NEXT:    relay.launch @r(%a) {relay.storage_id = [[OWN:[0-9]+]] : i64
// CHECK-NOT:     relay.storage_id = [[A]] :
// CHECK-NOT:     relay.storage_id = [[K]] :
#cpu = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">
func.func private @k(memref<8xf32>, memref<8xf32>)
func.func private @r(memref<8xf32>, memref<2x4xf32>)
func.func private @q(memref<8xf32>, memref<4x2xf32>)
func.func private @p(memref<4x2xf32>, memref<8xf32>)
func.func @main(%a: tensor<8xf32> {relay.se_scope = #cpu}) -> (tensor<2x4xf32>, tensor<8xf32>, tensor<2x4xf32>) {
  %k = relay.constant {value = dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]> : tensor<8xf32>, se_scope = #cpu} : tensor<8xf32>
  %r = relay.launch @r(%a) {relay.reshape_only, se_scope = #cpu} : (tensor<8xf32>) -> tensor<2x4xf32>
  %k1 = relay.launch @q(%k) {relay.reshape_only, se_scope = #cpu} : (tensor<8xf32>) -> tensor<4x2xf32>
  %k2 = relay.launch @p(%k1) {relay.reshape_only, se_scope = #cpu} : (tensor<4x2xf32>) -> tensor<8xf32>
  %o = relay.launch @k(%k2) {se_scope = #cpu} : (tensor<8xf32>) -> tensor<8xf32>
  %c = relay.launch @r(%a) {se_scope = #cpu} : (tensor<8xf32>) -> tensor<2x4xf32>
  func.return %r, %o, %c : tensor<2x4xf32>, tensor<8xf32>, tensor<2x4xf32>
}

// -----

// An alias lives in its input's storage, so on its input's scope.
#cpu = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">
#cl = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">
func.func private @r(memref<8xf32>, memref<2x4xf32>)
func.func @main(%a: tensor<8xf32> {relay.se_scope = #cl}) -> tensor<2x4xf32> {
  // CHECK: plan-memory expects a reshape-only launch on its input's scope (it is stored in the input's storage)
  %r = relay.launch @r(%a) {relay.reshape_only, se_scope = #cpu} : (tensor<8xf32>) -> tensor<2x4xf32>
  func.return %r : tensor<2x4xf32>
}
