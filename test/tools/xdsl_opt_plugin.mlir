// RUN: xdsl-opt %s -p 'plan-devices{targets=c,opencl default-device=opencl}' | filecheck %s

// A plain `xdsl-opt` (xDSL's own driver, not opt-tool) parses relay IR and runs xrelay's
// passes: installing xrelay registers its dialect, passes and targets through the
// `xdsl.universe` entry point (universe.py).

// CHECK-LABEL: func.func @main
// CHECK-SAME:    %a: tensor<4xf32> {relay.se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">}
// CHECK-SAME:    %b: tensor<4xf32> {relay.se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">}
// CHECK-SAME:    -> (tensor<4xf32> {relay.se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">})
// CHECK:         %[[X:.*]] = relay.exp %a {se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">}
// CHECK-NEXT:    %[[COPY:.*]] = relay.device_copy %[[X]] {src_se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">, dst_se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">}
// CHECK-NEXT:    %[[Y:.*]] = relay.add %[[COPY]], %b {se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">}
// CHECK-NEXT:    func.return %[[Y]]
// CHECK-NOT:     relay.on_device
func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.exp %a : tensor<4xf32>
  %1 = relay.on_device %0 {se_scope = #relay.se_scope<device = cpu>} : tensor<4xf32>
  %2 = relay.add %1, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %3 = relay.on_device %2 {se_scope = #relay.se_scope<device = opencl>} : tensor<4xf32>
  func.return %3 : tensor<4xf32>
}
