// Three scopes: cpu:1, cpu:0 and opencl:1. %h and %e are both annotated `device = cpu`, yet %h
// lands on cpu:1 and %e on cpu:0, with a host-to-host copy between them: a parameter takes
// its missing fields, id included, from the function's first result (opencl, id = 1 here),
// and other values from the default scope (id 0). Ask plan-devices why
// (examples/three_scopes.remarks is what this prints):
//   opt-tool examples/three_scopes.mlir -p 'plan-devices{targets=c,opencl default-device=opencl explain=true}'
func.func @main(%h: tensor<8xf32>, %w: tensor<8xf32>) -> tensor<8xf32> {
  %0 = relay.on_device %h {se_scope = #relay.se_scope<device = cpu>} : tensor<8xf32>
  %e = relay.exp %0 : tensor<8xf32>
  %1 = relay.on_device %e {se_scope = #relay.se_scope<device = cpu>} : tensor<8xf32>
  %r = relay.multiply %1, %w : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %2 = relay.on_device %r {se_scope = #relay.se_scope<device = opencl, id = 1>} : tensor<8xf32>
  func.return %2 : tensor<8xf32>
}
