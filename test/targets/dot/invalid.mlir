// RUN: not opt-tool %s -t dot 2>&1 | filecheck %s

// Before plan-devices there is no placement to draw: the error names the first op without
// a scope and the pass to run.

// CHECK: opt-tool: error: the dot target draws where values live, so it expects a module after plan-devices, but relay.exp at {{.*}}invalid.mlir:[[# @LINE + 2]]:3 has no canonical se_scope; run plan-devices first (e.g. -p 'plan-devices{targets=c,opencl},fuse-ops' -t dot)
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.exp %x : tensor<4xf32>
  %1 = relay.on_device %0 {se_scope = #relay.se_scope<device = opencl>} : tensor<4xf32>
  func.return %1 : tensor<4xf32>
}
