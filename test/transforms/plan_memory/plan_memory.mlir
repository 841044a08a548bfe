// RUN: opt-tool %s -p plan-memory --split-input-file --verify-diagnostics | filecheck %s

#cpu = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">
#cl = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">
func.func private @k(memref<8xf32>, memref<8xf32>)

// A chain on one device: the third tensor reuses the first one's storage once it is dead;
// the parameter and the returned tensor keep storages of their own.
// CHECK-LABEL: func.func @main
// CHECK-SAME:    relay.storage_id = [[A:[0-9]+]] : i64
// CHECK:         relay.launch @k(%a) {relay.storage_id = [[S0:[0-9]+]] : i64
// CHECK-NEXT:    relay.launch @k(%{{.*}}) {relay.storage_id = [[S1:[0-9]+]] : i64
// CHECK-NEXT:    relay.launch @k(%{{.*}}) {relay.storage_id = [[S0]] : i64
// CHECK-NEXT:    relay.launch @k(%{{.*}}) {relay.storage_id = [[S1]] : i64
// CHECK-NEXT:    relay.launch @k(%{{.*}}) {relay.storage_id = [[OUT:[0-9]+]] : i64
// CHECK-NOT:     relay.storage_id = [[A]] :
func.func @main(%a: tensor<8xf32> {relay.se_scope = #cpu}) -> (tensor<8xf32> {relay.se_scope = #cpu}) {
  %0 = relay.launch @k(%a) {se_scope = #cpu} : (tensor<8xf32>) -> tensor<8xf32>
  %1 = relay.launch @k(%0) {se_scope = #cpu} : (tensor<8xf32>) -> tensor<8xf32>
  %2 = relay.launch @k(%1) {se_scope = #cpu} : (tensor<8xf32>) -> tensor<8xf32>
  %3 = relay.launch @k(%2) {se_scope = #cpu} : (tensor<8xf32>) -> tensor<8xf32>
  %4 = relay.launch @k(%3) {se_scope = #cpu} : (tensor<8xf32>) -> tensor<8xf32>
  func.return %4 : tensor<8xf32>
}

// -----

#cpu = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">
#cl = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">
func.func private @k(memref<8xf32>, memref<8xf32>)

// A dead opencl tensor's storage is not reused on the cpu; a dead cpu one is.
// CHECK-LABEL: func.func @main
// CHECK:         relay.launch @k(%a) {relay.storage_id = [[CL:[0-9]+]] : i64
// CHECK-NEXT:    relay.device_copy %{{.*}} {relay.storage_id = [[C0:[0-9]+]] : i64
// CHECK-NEXT:    relay.launch @k(%{{.*}}) {relay.storage_id = [[C1:[0-9]+]] : i64
// CHECK-NOT:     relay.storage_id = [[CL]] :
// CHECK-NEXT:    relay.launch @k(%{{.*}}) {relay.storage_id = [[C0]] : i64
func.func @main(%a: tensor<8xf32> {relay.se_scope = #cl}) -> (tensor<8xf32> {relay.se_scope = #cpu}) {
  %0 = relay.launch @k(%a) {se_scope = #cl} : (tensor<8xf32>) -> tensor<8xf32>
  %1 = relay.device_copy %0 {src_se_scope = #cl, dst_se_scope = #cpu} : tensor<8xf32>
  %2 = relay.launch @k(%1) {se_scope = #cpu} : (tensor<8xf32>) -> tensor<8xf32>
  %3 = relay.launch @k(%2) {se_scope = #cpu} : (tensor<8xf32>) -> tensor<8xf32>
  %4 = relay.launch @k(%3) {se_scope = #cpu} : (tensor<8xf32>) -> tensor<8xf32>
  func.return %4 : tensor<8xf32>
}

// -----

#cpu = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">
func.func private @k2(memref<8xf32>, memref<8xf32>, memref<8xf32>)
func.func private @k(memref<8xf32>, memref<8xf32>)

// A tensor used twice stays live until its last use; constants never share.
// CHECK-LABEL: func.func @main
// CHECK:         relay.constant {relay.storage_id = [[K:[0-9]+]] : i64
// CHECK-NEXT:    relay.launch @k(%a) {relay.storage_id = [[X:[0-9]+]] : i64
// CHECK-NEXT:    relay.launch @k(%{{.*}}) {relay.storage_id = [[Y:[0-9]+]] : i64
// CHECK-NEXT:    relay.launch @k2(%{{.*}}, %{{.*}}) {relay.storage_id = [[Z:[0-9]+]] : i64
// CHECK-NEXT:    relay.launch @k2(%{{.*}}, %{{.*}}) {relay.storage_id = [[X]] : i64
func.func @main(%a: tensor<8xf32> {relay.se_scope = #cpu}) -> (tensor<8xf32> {relay.se_scope = #cpu}) {
  %k = relay.constant {value = dense<1.0> : tensor<8xf32>, se_scope = #cpu} : tensor<8xf32>
  %0 = relay.launch @k(%a) {se_scope = #cpu} : (tensor<8xf32>) -> tensor<8xf32>
  %1 = relay.launch @k(%0) {se_scope = #cpu} : (tensor<8xf32>) -> tensor<8xf32>
  %2 = relay.launch @k2(%0, %1) {se_scope = #cpu} : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %3 = relay.launch @k2(%2, %k) {se_scope = #cpu} : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %4 = relay.launch @k2(%3, %k) {se_scope = #cpu} : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  func.return %4 : tensor<8xf32>
}

// -----

#cpu = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">
func.func @main(%a: tensor<8xf32> {relay.se_scope = #cpu}) -> tensor<8xf32> {
  // CHECK: plan-memory expects a lowered @main (relay.launch, relay.device_copy, relay.constant, func.return), but found relay.exp; run convert-relay-to-loops first
  %0 = relay.exp %a {se_scope = #cpu} : tensor<8xf32>
  func.return %0 : tensor<8xf32>
}

// -----

#cpu = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">
func.func @f(%a: tensor<8xf32>) -> tensor<8xf32> {
  func.return %a : tensor<8xf32>
}
func.func @main(%a: tensor<8xf32> {relay.se_scope = #cpu}) -> tensor<8xf32> {
  // CHECK: plan-memory expects no calls in @main, but found a call to @f; run inline-calls first
  %0 = func.call @f(%a) : (tensor<8xf32>) -> tensor<8xf32>
  func.return %0 : tensor<8xf32>
}

// -----

// CHECK: plan-memory needs the canonical scope of every tensor, but parameter %a of @main has no relay.se_scope attribute; run plan-devices first
func.func @main(%a: tensor<8xf32>) -> tensor<8xf32> {
  func.return %a : tensor<8xf32>
}

// -----

#cpu = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">
func.func private @k(memref<8xf32>, memref<8xf32>)
func.func @main(%a: tensor<8xf32> {relay.se_scope = #cpu}) -> tensor<8xf32> {
  // CHECK: plan-memory needs the canonical scope of every tensor, but relay.launch has the partial se_scope #relay.se_scope<device = cpu>; run plan-devices first
  %0 = relay.launch @k(%a) {se_scope = #relay.se_scope<device = cpu>} : (tensor<8xf32>) -> tensor<8xf32>
  func.return %0 : tensor<8xf32>
}

// -----

// CHECK: plan-memory expects a function @main (the program the executor runs), but the module has none
func.func @f(%a: tensor<8xf32>) -> tensor<8xf32> {
  func.return %a : tensor<8xf32>
}

// -----

// @main takes tensors; a memref parameter is named (it was an AssertionError).
// CHECK: plan-memory expects @main's values to be tensors (the executor's buffers), but parameter %x is memref<4xf32>; @main takes and returns tensors, memrefs belong to kernels
func.func @main(%x: memref<4xf32>) -> memref<4xf32> {
  func.return %x : memref<4xf32>
}
