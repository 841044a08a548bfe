// RUN: opt-tool %s --split-input-file -p 'plan-devices{targets=c,opencl default-device=opencl host-target=c}' | filecheck %s

// Chains of annotations: every relay.on_device and relay.device_copy in a chain is its own copy
// point, a copy from its operand's scope to its use's scope where the two differ; an explicit
// copy's source is its src_se_scope. A use never reads through an annotation to the value
// under it, so a chain of k annotations may cost k copies.

// The program of issue 13: %2's result is constrained to opencl, and the explicit copy reads
// it on opencl; the value itself is computed on cpu, with %r2. So a copy cpu -> opencl at %2,
// and the explicit copy opencl -> cpu at %3.

// CHECK-LABEL: func.func @issue_example
// CHECK:         %[[MIN:.*]] = relay.minimum %r2, %{{.*}} {se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-NEXT:    %[[TO_CL:.*]] = relay.device_copy %[[MIN]] {src_se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">, dst_se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">}
// CHECK-NEXT:    %[[TO_CPU:.*]] = relay.device_copy %[[TO_CL]] {src_se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">, dst_se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">}
// CHECK-NEXT:    relay.sum %[[TO_CPU]] {keepdims = true, se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-NOT:     relay.device_copy
func.func @issue_example(%r1: tensor<10x1x1xf32>, %r2: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %0 = "relay.reshape"(%r1) : (tensor<10x1x1xf32>) -> tensor<5x1x2xf32>
  %1 = "relay.minimum"(%r2, %0) : (tensor<2x2xf32>, tensor<5x1x2xf32>) -> tensor<5x2x2xf32>
  %2 = "relay.on_device"(%1) {se_scope = #relay.se_scope<device = opencl>, constrain_body = false, constrain_result = true} : (tensor<5x2x2xf32>) -> tensor<5x2x2xf32>
  %3 = "relay.device_copy"(%2) {src_se_scope = #relay.se_scope<device = opencl>, dst_se_scope = #relay.se_scope<>} : (tensor<5x2x2xf32>) -> tensor<5x2x2xf32>
  %4 = "relay.on_device"(%r2) {se_scope = #relay.se_scope<device = cpu>} : (tensor<2x2xf32>) -> tensor<2x2xf32>
  %5 = "relay.sum"(%3) {keepdims = true} : (tensor<5x2x2xf32>) -> tensor<1x1x1xf32>
  %6 = "relay.reshape"(%5) : (tensor<1x1x1xf32>) -> tensor<1xf32>
  %7 = "relay.maximum"(%4, %6) : (tensor<2x2xf32>, tensor<1xf32>) -> tensor<2x2xf32>
  %8 = "relay.sum"(%r2) {keepdims = true} : (tensor<2x2xf32>) -> tensor<1x1xf32>
  %9 = "relay.reshape"(%8) : (tensor<1x1xf32>) -> tensor<1xf32>
  %10 = "relay.add"(%7, %9) : (tensor<2x2xf32>, tensor<1xf32>) -> tensor<2x2xf32>
  func.return %10 : tensor<2x2xf32>
}

// -----

// on_device -> on_device, id only then memory only: %1 puts its use (%2's operand) on id 1,
// which the default device completes to opencl:1; %2 puts its use on "texture" memory, on
// opencl:0. Two copies: cpu -> opencl:1, then opencl:1 -> opencl:0 "texture".

// CHECK-LABEL: func.func @on_device_on_device
// CHECK:         %[[X:.*]] = relay.exp %a {se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">}
// CHECK-NEXT:    %[[C1:.*]] = relay.device_copy %[[X]] {src_se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">, dst_se_scope = #relay.se_scope<device = opencl, id = 1, target = "opencl", memory = "global">}
// CHECK-NEXT:    %[[C2:.*]] = relay.device_copy %[[C1]] {src_se_scope = #relay.se_scope<device = opencl, id = 1, target = "opencl", memory = "global">, dst_se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "texture">}
// CHECK-NEXT:    relay.negative %[[C2]] {se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "texture">}
// CHECK-NOT:     relay.device_copy
func.func @on_device_on_device(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.exp %a {se_scope = #relay.se_scope<device = cpu, memory = "global">} : tensor<4xf32>
  %1 = relay.on_device %0 {se_scope = #relay.se_scope<id = 1>, constrain_body = false, constrain_result = true} : tensor<4xf32>
  %2 = relay.on_device %1 {se_scope = #relay.se_scope<memory = "texture">, constrain_body = false, constrain_result = true} : tensor<4xf32>
  %3 = relay.negative %2 : tensor<4xf32>
  func.return %3 : tensor<4xf32>
}

// -----

// on_device -> device_copy: %1 puts its use on id 1, and the explicit copy reads on opencl, so
// it reads on opencl:1; the copy writes "texture" memory, on the default device. Two copies.

// CHECK-LABEL: func.func @on_device_device_copy
// CHECK:         %[[X:.*]] = relay.exp %a {se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">}
// CHECK-NEXT:    %[[C1:.*]] = relay.device_copy %[[X]] {src_se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">, dst_se_scope = #relay.se_scope<device = opencl, id = 1, target = "opencl", memory = "global">}
// CHECK-NEXT:    %[[C2:.*]] = relay.device_copy %[[C1]] {src_se_scope = #relay.se_scope<device = opencl, id = 1, target = "opencl", memory = "global">, dst_se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "texture">}
// CHECK-NEXT:    relay.negative %[[C2]] {se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "texture">}
// CHECK-NOT:     relay.device_copy
func.func @on_device_device_copy(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.exp %a {se_scope = #relay.se_scope<device = cpu, memory = "global">} : tensor<4xf32>
  %1 = relay.on_device %0 {se_scope = #relay.se_scope<id = 1>, constrain_body = false, constrain_result = true} : tensor<4xf32>
  %2 = relay.device_copy %1 {src_se_scope = #relay.se_scope<device = opencl>, dst_se_scope = #relay.se_scope<memory = "texture">} : tensor<4xf32>
  %3 = relay.negative %2 : tensor<4xf32>
  func.return %3 : tensor<4xf32>
}

// -----

// device_copy -> on_device: the copy reads in "texture" memory and writes on id 1; the
// on_device (default flags) fixes its operand, the copy's result, on cpu (so cpu:1), and its
// use takes the default scope. The parameter and %0, in "texture" memory, complete the rest
// from the function's result (opencl:0).
// Two copies: opencl:0 "texture" -> cpu:1, then cpu:1 -> opencl:0.

// CHECK-LABEL: func.func @device_copy_on_device
// CHECK-SAME:    %a: tensor<4xf32> {relay.se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "texture">}
// CHECK:         %[[X:.*]] = relay.exp %a {se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "texture">}
// CHECK-NEXT:    %[[C1:.*]] = relay.device_copy %[[X]] {src_se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "texture">, dst_se_scope = #relay.se_scope<device = cpu, id = 1, target = "c", memory = "global">}
// CHECK-NEXT:    %[[C2:.*]] = relay.device_copy %[[C1]] {src_se_scope = #relay.se_scope<device = cpu, id = 1, target = "c", memory = "global">, dst_se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">}
// CHECK-NEXT:    relay.negative %[[C2]] {se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">}
// CHECK-NOT:     relay.device_copy
func.func @device_copy_on_device(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.exp %a : tensor<4xf32>
  %1 = relay.device_copy %0 {src_se_scope = #relay.se_scope<memory = "texture">, dst_se_scope = #relay.se_scope<id = 1>} : tensor<4xf32>
  %2 = relay.on_device %1 {se_scope = #relay.se_scope<device = cpu>} : tensor<4xf32>
  %3 = relay.negative %2 : tensor<4xf32>
  func.return %3 : tensor<4xf32>
}

// -----

// device_copy -> free on_device: the free annotation's use (memory only) is completed from its
// operand (id only), and the operand from the use; they agree, so only the explicit copy
// remains, cpu -> opencl:1 "texture".

// CHECK-LABEL: func.func @device_copy_free_on_device
// CHECK:         %[[X:.*]] = relay.exp %a {se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-NEXT:    %[[C1:.*]] = relay.device_copy %[[X]] {src_se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">, dst_se_scope = #relay.se_scope<device = opencl, id = 1, target = "opencl", memory = "texture">}
// CHECK-NEXT:    relay.negative %[[C1]] {se_scope = #relay.se_scope<device = opencl, id = 1, target = "opencl", memory = "texture">}
// CHECK-NOT:     relay.device_copy
func.func @device_copy_free_on_device(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.exp %a {se_scope = #relay.se_scope<device = cpu, id = 0, memory = "global">} : tensor<4xf32>
  %1 = relay.device_copy %0 {src_se_scope = #relay.se_scope<device = cpu>, dst_se_scope = #relay.se_scope<id = 1>} : tensor<4xf32>
  %2 = relay.on_device %1 {se_scope = #relay.se_scope<device = cpu>, constrain_body = false, constrain_result = false} : tensor<4xf32>
  %3 = relay.negative %2 {se_scope = #relay.se_scope<memory = "texture">} : tensor<4xf32>
  func.return %3 : tensor<4xf32>
}

// -----

// A chain of three whose links agree costs nothing: each link's operand and use share a scope
// (the last on_device constrains both its operand and its use).

// CHECK-LABEL: func.func @agreeing_chain
// CHECK:         %[[X:.*]] = relay.exp %a {se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-NEXT:    relay.negative %[[X]] {se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-NOT:     relay.device_copy
// CHECK-NOT:     relay.on_device
func.func @agreeing_chain(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.exp %a {se_scope = #relay.se_scope<device = cpu>} : tensor<4xf32>
  %1 = relay.on_device %0 {se_scope = #relay.se_scope<device = cpu>, constrain_body = true, constrain_result = true} : tensor<4xf32>
  %2 = relay.device_copy %1 {src_se_scope = #relay.se_scope<device = cpu>, dst_se_scope = #relay.se_scope<id = 0, memory = "global">} : tensor<4xf32>
  %3 = relay.on_device %2 {se_scope = #relay.se_scope<device = cpu>, constrain_result = true} : tensor<4xf32>
  %4 = relay.negative %3 : tensor<4xf32>
  func.return %4 : tensor<4xf32>
}

// -----

// A returned chain: the outer on_device (default flags, memory only) fixes both its operand and,
// being returned, the function's result; the inner one fixes only its operand. One copy, at
// the inner link: opencl:0 -> opencl:0 "texture"; the outer link's two ends agree.

// CHECK-LABEL: func.func @returned_chain
// CHECK-SAME:    -> (tensor<4xf32> {relay.se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "texture">})
// CHECK:         %[[X:.*]] = relay.exp %a {se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">}
// CHECK-NEXT:    %[[C1:.*]] = relay.device_copy %[[X]] {src_se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">, dst_se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "texture">}
// CHECK-NEXT:    func.return %[[C1]]
func.func @returned_chain(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.exp %a : tensor<4xf32>
  %1 = relay.on_device %0 {se_scope = #relay.se_scope<device = opencl, memory = "global">} : tensor<4xf32>
  %2 = relay.on_device %1 {se_scope = #relay.se_scope<memory = "texture">} : tensor<4xf32>
  func.return %2 : tensor<4xf32>
}

// -----

// A chain over a constant: the on_device materialises it on cpu; its use, the explicit copy's
// source (memory only), takes the default device, so the on_device copies cpu -> opencl and
// the explicit copy, opencl -> opencl, is redundant.

// CHECK-LABEL: func.func @constant_chain
// CHECK:         %[[K:.*]] = relay.constant {value = dense<2.000000e+00> : tensor<4xf32>, se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">}
// CHECK-NEXT:    %[[C1:.*]] = relay.device_copy %[[K]] {src_se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">, dst_se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">}
// CHECK-NEXT:    relay.add %a, %[[C1]] {se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK-NOT:     relay.device_copy
func.func @constant_chain(%a: tensor<4xf32>) -> tensor<4xf32> {
  %k = relay.constant {value = dense<2.0> : tensor<4xf32>} : tensor<4xf32>
  %1 = relay.on_device %k {se_scope = #relay.se_scope<device = cpu>} : tensor<4xf32>
  %2 = relay.device_copy %1 {src_se_scope = #relay.se_scope<memory = "global">, dst_se_scope = #relay.se_scope<device = opencl>} : tensor<4xf32>
  %3 = relay.add %a, %2 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %3 : tensor<4xf32>
}
