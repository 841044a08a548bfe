// RUN: opt-tool %s -p 'plan-devices{targets=c,opencl default-device=opencl},cse' -o %t
// RUN: filecheck %s --input-file %t

// A pipeline of an xrelay pass with options and one of xDSL's own passes, written with -o.

// CHECK-LABEL: func.func @main
// CHECK-SAME:      #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">
// CHECK-COUNT-1: relay.add
// CHECK-NOT:     relay.add
// CHECK:         relay.multiply {{.*}}se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">
func.func @main(%a: tensor<2xf32>, %b: tensor<2xf32>) -> tensor<2xf32> {
  %0 = relay.add %a, %b : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %1 = relay.add %a, %b : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %2 = relay.multiply %0, %1 : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return %2 : tensor<2xf32>
}
