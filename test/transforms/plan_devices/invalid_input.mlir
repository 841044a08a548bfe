// RUN: opt-tool %s --split-input-file --verify-diagnostics -p 'plan-devices{targets=c,opencl}' | filecheck %s

// plan-devices runs before fusion and lowering: fused groups and kernel launches in its input
// are errors naming the pass order; ops it cannot place are errors too.

func.func @fused(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "relay.fused"(%a) ({
  ^bb0(%x: tensor<4xf32>):
    %y = "relay.exp"(%x) : (tensor<4xf32>) -> tensor<4xf32>
    "relay.yield"(%y) : (tensor<4xf32>) -> ()
  }) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
// CHECK: 'relay.fused' at {{.*}}invalid_input.mlir:7:3 may not appear in the input of plan-devices, which runs before fusion and lowering (pass order: plan-devices, fuse-ops, convert-relay-to-loops)

// -----

func.func @launch(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.launch @kernel(%a) {se_scope = #relay.se_scope<device = cpu>} : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
func.func @kernel(%in0: memref<4xf32>, %out0: memref<4xf32>) {
  func.return
}
// CHECK: 'relay.launch' at {{.*}}invalid_input.mlir:19:3 may not appear in the input of plan-devices, which runs before fusion and lowering (pass order: plan-devices, fuse-ops, convert-relay-to-loops)

// -----

func.func @foreign_op(%a: tensor<4xf32>) -> tensor<4xf32> {
  %c = arith.constant 1.0 : f32
  func.return %a : tensor<4xf32>
}
// CHECK: plan-devices cannot place 'arith.constant' at {{.*}}invalid_input.mlir:30:3; expected relay ops, func.call and func.return in function bodies

// -----

func.func @not_a_scope(%a: tensor<4xf32> {relay.se_scope = "cpu"}) -> tensor<4xf32> {
  func.return %a : tensor<4xf32>
}
// CHECK: expected relay.se_scope of argument %a of @not_a_scope ({{.*}}invalid_input.mlir:37:1) to be a #relay.se_scope, but found "cpu"

// -----

// A parameter no op uses has its type checked too (fuzz seed 1, mutant 14668: the executor met
// complex<f32> at run time, a TypeError).
func.func @main(%p0: tensor<2x3xcomplex<f32>>, %p1: tensor<3xf32>) -> tensor<3xf32> {
  %0 = relay.nn.relu %p1 : tensor<3xf32>
  func.return %0 : tensor<3xf32>
}
// CHECK: argument %p0 of @main at {{.*}}invalid_input.mlir:{{[0-9]+}}:1 has type tensor<2x3xcomplex<f32>>, but relay values are tensors of f32, i64 or i1 with a static shape (e.g. tensor<2x3xf32>); change its type

// -----

func.func @main(%p0: tensor<3xf32>, %p1: tensor<?xf32>) -> tensor<3xf32> {
  %0 = relay.nn.relu %p0 : tensor<3xf32>
  func.return %0 : tensor<3xf32>
}
// CHECK: argument %p1 of @main at {{.*}}invalid_input.mlir:{{[0-9]+}}:1 has type tensor<?xf32>, but relay values are tensors of f32
