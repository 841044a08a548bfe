// RUN: opt-tool %s --split-input-file --verify-diagnostics -p 'plan-devices{targets=c,opencl}' | filecheck %s

// Conflicts: a Join that fails is an error at the op where it arises, naming the value, both
// scopes and where each came from, and suggesting relay.on_device or relay.device_copy.

// A value without an annotation that two consumers need on different scopes.
func.func @two_consumers(%a: tensor<4xf32>) -> tensor<4xf32> {
  %x = relay.exp %a : tensor<4xf32>
  %0 = relay.negative %x {se_scope = #relay.se_scope<device = cpu>} : tensor<4xf32>
  %1 = relay.abs %x {se_scope = #relay.se_scope<device = opencl>} : tensor<4xf32>
  %2 = relay.add %0, %1 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %2 : tensor<4xf32>
}
// CHECK: conflicting scopes for %x at its use in 'relay.abs' ({{.*}}conflicts.mlir:10:3): cpu:? (se_scope of 'relay.negative' at {{.*}}conflicts.mlir:9:3) and opencl:? (se_scope of 'relay.abs' at {{.*}}conflicts.mlir:10:3); insert relay.on_device or relay.device_copy to say where the copy goes
// CHECK: %1 = "relay.abs"(%x)
// CHECK-NEXT: ^^^^^^^^^^^^^^^^

// -----

// An annotation on a parameter pinned elsewhere by its attribute.
func.func @annotation_vs_attribute(%a: tensor<4xf32> {relay.se_scope = #relay.se_scope<device = cpu>}) -> tensor<4xf32> {
  %0 = relay.on_device %a {se_scope = #relay.se_scope<device = opencl>} : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
// CHECK: conflicting scopes for %a at its use in 'relay.on_device' ({{.*}}conflicts.mlir:22:3): cpu:? (relay.se_scope of argument %a of @annotation_vs_attribute at {{.*}}conflicts.mlir:{{[0-9]+}}:1) and opencl:? (relay.on_device at {{.*}}conflicts.mlir:22:3); insert relay.on_device or relay.device_copy

// -----

// A pinned op reading the result of an op pinned elsewhere.
func.func @pinned_chain(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.exp %a {se_scope = #relay.se_scope<device = opencl>} : tensor<4xf32>
  %1 = relay.negative %0 {se_scope = #relay.se_scope<device = cpu>} : tensor<4xf32>
  func.return %1 : tensor<4xf32>
}
// CHECK: conflicting scopes for the result of 'relay.exp' ({{.*}}conflicts.mlir:31:3) at its use in 'relay.negative' ({{.*}}conflicts.mlir:32:3): opencl:? (se_scope of 'relay.exp' at {{.*}}conflicts.mlir:31:3) and cpu:? (se_scope of 'relay.negative' at {{.*}}conflicts.mlir:32:3)

// -----

// A returned value pinned elsewhere than the function's result attribute says.
func.func @result_attribute(%a: tensor<4xf32>) -> (tensor<4xf32> {relay.se_scope = #relay.se_scope<device = opencl, id = 1>}) {
  %0 = relay.exp %a {se_scope = #relay.se_scope<device = opencl, id = 0>} : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
// CHECK: conflicting scopes for the result of 'relay.exp' ({{.*}}conflicts.mlir:41:3) at its use in 'func.return' ({{.*}}conflicts.mlir:42:3): opencl:0 (se_scope of 'relay.exp' at {{.*}}conflicts.mlir:41:3) and opencl:1 (relay.se_scope of result #0 of @result_attribute at {{.*}}conflicts.mlir:{{[0-9]+}}:1)

// -----

// A call passing a value on cpu to a parameter the callee pins to opencl.
func.func @callee(%x: tensor<4xf32> {relay.se_scope = #relay.se_scope<device = opencl>}) -> tensor<4xf32> {
  func.return %x : tensor<4xf32>
}
func.func @caller(%a: tensor<4xf32>) -> tensor<4xf32> {
  %y = relay.exp %a {se_scope = #relay.se_scope<device = cpu>} : tensor<4xf32>
  %0 = func.call @callee(%y) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
// CHECK: conflicting scopes for %y at its use in 'func.call' ({{.*}}conflicts.mlir:54:3): cpu:? (se_scope of 'relay.exp' at {{.*}}conflicts.mlir:53:3) and opencl:? (relay.se_scope of argument %x of @callee at {{.*}}conflicts.mlir:{{[0-9]+}}:1)

// -----

// constrain_result puts every use on the annotation's scope.
func.func @constrain_result(%a: tensor<4xf32>) -> tensor<4xf32> {
  %r = relay.on_device %a {se_scope = #relay.se_scope<device = cpu>, constrain_result = true} : tensor<4xf32>
  %0 = relay.exp %r {se_scope = #relay.se_scope<device = opencl>} : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
// CHECK: conflicting scopes for %r at its use in 'relay.exp' ({{.*}}conflicts.mlir:64:3): opencl:? (se_scope of 'relay.exp' at {{.*}}conflicts.mlir:64:3) and cpu:? (relay.on_device at {{.*}}conflicts.mlir:63:3)

// -----

// A returned annotation fixes the function result, which its attribute pins elsewhere.
func.func @returned_annotation(%a: tensor<4xf32>) -> (tensor<4xf32> {relay.se_scope = #relay.se_scope<device = opencl>}) {
  %r = relay.on_device %a {se_scope = #relay.se_scope<device = cpu>} : tensor<4xf32>
  func.return %r : tensor<4xf32>
}
// CHECK: conflicting scopes for %r at its use in 'func.return' ({{.*}}conflicts.mlir:74:3): opencl:? (relay.se_scope of result #0 of @returned_annotation at {{.*}}conflicts.mlir:{{[0-9]+}}:1) and cpu:? (relay.on_device at {{.*}}conflicts.mlir:73:3, whose result the function returns)

// -----

// Device ids count: opencl id 0 and opencl id 1 are different places.
func.func @device_ids(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %x = relay.exp %a {se_scope = #relay.se_scope<device = opencl, id = 1>} : tensor<4xf32>
  %0 = relay.add %x, %b {se_scope = #relay.se_scope<device = opencl, id = 0>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
// CHECK: conflicting scopes for %x at its use in 'relay.add' ({{.*}}conflicts.mlir:83:3): opencl:1 (se_scope of 'relay.exp' at {{.*}}conflicts.mlir:82:3) and opencl:0 (se_scope of 'relay.add' at {{.*}}conflicts.mlir:83:3)

// -----

// Memory scopes count: two memory scopes on one device are different places.
func.func @memory_scopes(%a: tensor<4xf32> {relay.se_scope = #relay.se_scope<device = cpu, memory = "scopeA">}) -> tensor<4xf32> {
  %0 = relay.exp %a {se_scope = #relay.se_scope<memory = "scopeB">} : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
// CHECK: conflicting scopes for %a at its use in 'relay.exp' ({{.*}}conflicts.mlir:92:3): cpu:? scopeA (relay.se_scope of argument %a of @memory_scopes at {{.*}}conflicts.mlir:{{[0-9]+}}:1) and ?:? scopeB (se_scope of 'relay.exp' at {{.*}}conflicts.mlir:92:3)
