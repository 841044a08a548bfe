// RUN: opt-tool %s --split-input-file -p 'plan-devices{targets=c,opencl default-device=opencl explain=true}' 2>&1 >/dev/null | filecheck %s

// plan-devices{explain=true} prints, to stderr, one remark per value whose scope is not all
// from its own annotation: `<file>:<line>:<col>: remark: <value>: <device>:<id> — <steps>`,
// each step naming the fields it fixed and what fixed them, with its location.

// Every field from the value's own annotation (its op's se_scope, its parameter attribute,
// an on_device of it), even where another constraint fixed it first: no remark.
func.func @all_local(%a: tensor<4xf32> {relay.se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">}) -> tensor<4xf32> {
  %x = relay.exp %a {se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">} : tensor<4xf32>
  %0 = relay.on_device %x {se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">} : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
// CHECK-NOT: explain.mlir:{{9|10}}:{{[0-9]+}}: remark:

// -----

// Unannotated values take every field from a pinned op they share a domain with (a primitive
// op, its operands and its result share one): the parameter, the operand and the op reading
// the result. The pinned op's own result is explained by its annotation.
func.func @pinned_reader(%a: tensor<4xf32>) -> tensor<4xf32> {
  %p = relay.exp %a : tensor<4xf32>
  %n = relay.negative %p {se_scope = #relay.se_scope<device = opencl, id = 1, target = "opencl", memory = "global">} : tensor<4xf32>
  %s = relay.sigmoid %n : tensor<4xf32>
  func.return %s : tensor<4xf32>
}
// CHECK: explain.mlir:[[# @LINE - 6]]:1: remark: %a: opencl:1 — device, id, target and memory from se_scope of 'relay.negative' at {{.*}}explain.mlir:[[# @LINE - 4]]:3{{$}}
// CHECK-NEXT: explain.mlir:[[# @LINE - 6]]:3: remark: %p: opencl:1 — device, id, target and memory from se_scope of 'relay.negative' at {{.*}}explain.mlir:[[# @LINE - 5]]:3{{$}}
// CHECK-NEXT: explain.mlir:[[# @LINE - 5]]:3: remark: %s: opencl:1 — device, id, target and memory from se_scope of 'relay.negative' at {{.*}}explain.mlir:[[# @LINE - 6]]:3{{$}}

// -----

// A partial annotation: the device from the annotation; the id from the function's first
// result (a parameter shares the domain), whose id is the default scope's; the target and
// memory from the canonical form (not shown).
func.func @partial(%a: tensor<4xf32>) -> tensor<4xf32> {
  %c = relay.exp %a : tensor<4xf32>
  %0 = relay.on_device %c {se_scope = #relay.se_scope<device = cpu>} : tensor<4xf32>
  %d = relay.negative %0 : tensor<4xf32>
  func.return %d : tensor<4xf32>
}
// CHECK: explain.mlir:[[# @LINE - 5]]:3: remark: %c: cpu:0 — device from relay.on_device at {{.*}}explain.mlir:[[# @LINE - 4]]:3; id from @partial result 0 (opencl, id = 0, target = "opencl") at {{.*}}explain.mlir:[[# @LINE - 6]]:1 by defaulting, whose id came from the default scope (opencl, id = 0, target = "opencl") by defaulting{{$}}
// CHECK-NEXT: explain.mlir:[[# @LINE - 4]]:3: remark: %d: opencl:0 — device, id and target from the default scope (opencl, id = 0, target = "opencl") by defaulting{{$}}

// -----

// A parameter takes its missing fields from the function's first result, whose id came from
// the annotation on the returned value: the chain goes through the Default step.
func.func @from_result(%q: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.on_device %q {se_scope = #relay.se_scope<device = cpu>} : tensor<4xf32>
  %e = relay.exp %0 : tensor<4xf32>
  %1 = relay.on_device %e {se_scope = #relay.se_scope<device = opencl, id = 2>} : tensor<4xf32>
  func.return %1 : tensor<4xf32>
}
// CHECK: explain.mlir:[[# @LINE - 6]]:1: remark: %q: cpu:2 — device from relay.on_device at {{.*}}explain.mlir:[[# @LINE - 5]]:3; id from @from_result result 0 (opencl, id = 2, target = "opencl") at {{.*}}explain.mlir:[[# @LINE - 6]]:1 by defaulting, whose id came from relay.on_device at {{.*}}explain.mlir:[[# @LINE - 3]]:3, whose result the function returns{{$}}

// -----

// A free on_device: its operand takes every field from its first use, which has them from
// its own annotation.
func.func @free(%f: tensor<4xf32>) -> (tensor<4xf32> {relay.se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">}) {
  %0 = relay.on_device %f {se_scope = #relay.se_scope<device = cpu>, constrain_body = false, constrain_result = false} : tensor<4xf32>
  %g = relay.exp %0 {se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">} : tensor<4xf32>
  func.return %g : tensor<4xf32>
}
// CHECK: explain.mlir:[[# @LINE - 5]]:1: remark: %f: cpu:0 — device, id, target and memory from the first use of the free relay.on_device, in 'relay.exp' at {{.*}}explain.mlir:[[# @LINE - 3]]:3 by defaulting, whose device, id, target and memory came from se_scope of 'relay.exp' at {{.*}}explain.mlir:[[# @LINE - 3]]:3{{$}}
// CHECK-NOT: remark: %g:
