// RUN: opt-tool %s --split-input-file -p 'plan-devices{targets=c,opencl default-device=opencl}' | filecheck %s

// Whole graphs: deep chains, diamonds, values consumed on several scopes.

// A chain that changes scope every two ops: one copy per change, nothing else.

// CHECK-LABEL: func.func @deep_chain
// CHECK:         %[[A:.*]] = relay.exp %x {se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-NEXT:    %[[B:.*]] = relay.negative %[[A]] {se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-NEXT:    %[[C1:.*]] = relay.device_copy %[[B]] {src_se_scope = #relay.se_scope<device = cpu{{[^>]*}}>, dst_se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK-NEXT:    %[[C:.*]] = relay.tanh %[[C1]] {se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK-NEXT:    %[[D:.*]] = relay.abs %[[C]] {se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK-NEXT:    %[[C2:.*]] = relay.device_copy %[[D]] {src_se_scope = #relay.se_scope<device = opencl{{[^>]*}}>, dst_se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-NEXT:    %[[E:.*]] = relay.sigmoid %[[C2]] {se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-NEXT:    %[[F:.*]] = relay.nn.relu %[[E]] {se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-NEXT:    %[[C3:.*]] = relay.device_copy %[[F]] {src_se_scope = #relay.se_scope<device = cpu{{[^>]*}}>, dst_se_scope = #relay.se_scope<device = opencl, id = 1{{[^>]*}}>}
// CHECK-NEXT:    %[[G:.*]] = relay.erf %[[C3]] {se_scope = #relay.se_scope<device = opencl, id = 1{{[^>]*}}>}
// CHECK-NEXT:    %[[H:.*]] = relay.negative %[[G]] {se_scope = #relay.se_scope<device = opencl, id = 1{{[^>]*}}>}
// CHECK-NEXT:    %[[C4:.*]] = relay.device_copy %[[H]] {src_se_scope = #relay.se_scope<device = opencl, id = 1{{[^>]*}}>, dst_se_scope = #relay.se_scope<device = opencl, id = 0{{[^>]*}}>}
// CHECK-NEXT:    %[[I:.*]] = relay.exp %[[C4]] {se_scope = #relay.se_scope<device = opencl, id = 0{{[^>]*}}>}
// CHECK-NEXT:    func.return %[[I]]
func.func @deep_chain(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.exp %x : tensor<4xf32>
  %1 = relay.negative %0 {se_scope = #relay.se_scope<device = cpu>} : tensor<4xf32>
  %2 = relay.on_device %1 {se_scope = #relay.se_scope<device = cpu>} : tensor<4xf32>
  %3 = relay.tanh %2 : tensor<4xf32>
  %4 = relay.abs %3 : tensor<4xf32>
  %5 = relay.on_device %4 {se_scope = #relay.se_scope<device = opencl>} : tensor<4xf32>
  %6 = relay.sigmoid %5 {se_scope = #relay.se_scope<device = cpu>} : tensor<4xf32>
  %7 = relay.nn.relu %6 : tensor<4xf32>
  %8 = relay.device_copy %7 {src_se_scope = #relay.se_scope<device = cpu>, dst_se_scope = #relay.se_scope<device = opencl, id = 1>} : tensor<4xf32>
  %9 = relay.erf %8 : tensor<4xf32>
  %10 = relay.negative %9 : tensor<4xf32>
  %11 = relay.on_device %10 {se_scope = #relay.se_scope<device = opencl, id = 1>} : tensor<4xf32>
  %12 = relay.exp %11 : tensor<4xf32>
  func.return %12 : tensor<4xf32>
}

// -----

// A diamond: the top on cpu, the two arms on opencl and cpu, the join on opencl. The top is
// copied to opencl once, and the cpu arm once.

// CHECK-LABEL: func.func @diamond
// CHECK:         %[[TOP:.*]] = relay.exp %x {se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-NEXT:    %[[TOP_CL:.*]] = relay.device_copy %[[TOP]]
// CHECK-NEXT:    %[[LEFT:.*]] = relay.tanh %[[TOP_CL]] {se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK-NEXT:    %[[RIGHT:.*]] = relay.negative %[[TOP]] {se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-NEXT:    %[[RIGHT_CL:.*]] = relay.device_copy %[[RIGHT]]
// CHECK-NEXT:    relay.add %[[LEFT]], %[[RIGHT_CL]] {se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK-NOT:     relay.device_copy
func.func @diamond(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.exp %x : tensor<4xf32>
  %1 = relay.on_device %0 {se_scope = #relay.se_scope<device = cpu>} : tensor<4xf32>
  %2 = relay.tanh %1 : tensor<4xf32>
  %3 = relay.negative %1 {se_scope = #relay.se_scope<device = cpu>} : tensor<4xf32>
  %4 = relay.on_device %3 {se_scope = #relay.se_scope<device = cpu>} : tensor<4xf32>
  %5 = relay.add %2, %4 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %5 : tensor<4xf32>
}

// -----

// One value consumed on three scopes through one annotation: read in place on cpu, one copy
// per other scope, shared by the two uses on opencl id 1.

// CHECK-LABEL: func.func @three_scopes
// CHECK:         %[[X:.*]] = relay.exp %x {se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-NEXT:    %[[CL0:.*]] = relay.device_copy %[[X]] {{{.*}}dst_se_scope = #relay.se_scope<device = opencl, id = 0{{[^>]*}}>}
// CHECK-NEXT:    %[[CL1:.*]] = relay.device_copy %[[X]] {{{.*}}dst_se_scope = #relay.se_scope<device = opencl, id = 1{{[^>]*}}>}
// CHECK-NEXT:    relay.tanh %[[CL0]] {se_scope = #relay.se_scope<device = opencl, id = 0{{[^>]*}}>}
// CHECK-NEXT:    relay.negative %[[CL1]] {se_scope = #relay.se_scope<device = opencl, id = 1{{[^>]*}}>}
// CHECK-NEXT:    relay.abs %[[X]] {se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-NEXT:    relay.sigmoid %[[CL1]] {se_scope = #relay.se_scope<device = opencl, id = 1{{[^>]*}}>}
func.func @three_scopes(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %0 = relay.exp %x : tensor<4xf32>
  %1 = relay.on_device %0 {se_scope = #relay.se_scope<device = cpu>} : tensor<4xf32>
  %2 = relay.tanh %1 : tensor<4xf32>
  %3 = relay.negative %1 {se_scope = #relay.se_scope<device = opencl, id = 1>} : tensor<4xf32>
  %4 = relay.abs %1 {se_scope = #relay.se_scope<device = cpu>} : tensor<4xf32>
  %5 = relay.sigmoid %1 {se_scope = #relay.se_scope<device = opencl, id = 1>} : tensor<4xf32>
  func.return %2, %3, %4 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}
