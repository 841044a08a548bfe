// RUN: opt-tool %s --split-input-file -p 'plan-devices{targets=c,opencl default-device=opencl}' | filecheck %s

// The pure-dataflow cases of TVM's tests/python/relay/test_pass_plan_devices.py, one function
// per test, named after it. TVM's CPU is cpu, its GPU (the default device there) is opencl.
// Differences from TVM, by design (DESIGN.md): a value is copied to a scope at most once
// (TVM copies once per annotation), and the output keeps no on_device. test_stack_overflow
// (a chain of 1555 adds) is ported in test/unit/test_plan_devices.py; the higher-order,
// tuple, ref, ADT, if, shape and memory-op tests have no counterpart in this IR.

// CHECK-LABEL: func.func @test_plain
// CHECK-SAME:    %a: tensor<5x7xf32> {relay.se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK-SAME:    %d: tensor<5x7xf32> {relay.se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK-SAME:    -> (tensor<5x7xf32> {relay.se_scope = #relay.se_scope<device = opencl{{[^>]*}}>})
// CHECK:         relay.add %a, %b {se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK-NEXT:    relay.add %c, %d {se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK-NEXT:    relay.subtract {{.*}} {se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK-NOT:     relay.device_copy
func.func @test_plain(%a: tensor<5x7xf32>, %b: tensor<5x7xf32>, %c: tensor<5x7xf32>, %d: tensor<5x7xf32>) -> tensor<5x7xf32> {
  %0 = relay.add %a, %b : (tensor<5x7xf32>, tensor<5x7xf32>) -> tensor<5x7xf32>
  %1 = relay.add %c, %d : (tensor<5x7xf32>, tensor<5x7xf32>) -> tensor<5x7xf32>
  %2 = relay.subtract %0, %1 : (tensor<5x7xf32>, tensor<5x7xf32>) -> tensor<5x7xf32>
  func.return %2 : tensor<5x7xf32>
}

// -----

// CHECK-LABEL: func.func @test_left_add_on_cpu
// CHECK-SAME:    %a: tensor<5x7xf32> {relay.se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-SAME:    %b: tensor<5x7xf32> {relay.se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-SAME:    %c: tensor<5x7xf32> {relay.se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK-SAME:    %d: tensor<5x7xf32> {relay.se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK-SAME:    -> (tensor<5x7xf32> {relay.se_scope = #relay.se_scope<device = opencl{{[^>]*}}>})
// CHECK:         %[[L:.*]] = relay.add %a, %b {se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-NEXT:    %[[COPY:.*]] = relay.device_copy %[[L]] {src_se_scope = #relay.se_scope<device = cpu{{[^>]*}}>, dst_se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK-NEXT:    %[[R:.*]] = relay.add %c, %d {se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK-NEXT:    relay.subtract %[[COPY]], %[[R]] {se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
func.func @test_left_add_on_cpu(%a: tensor<5x7xf32>, %b: tensor<5x7xf32>, %c: tensor<5x7xf32>, %d: tensor<5x7xf32>) -> tensor<5x7xf32> {
  %0 = relay.add %a, %b : (tensor<5x7xf32>, tensor<5x7xf32>) -> tensor<5x7xf32>
  %1 = relay.on_device %0 {se_scope = #relay.se_scope<device = cpu>} : tensor<5x7xf32>
  %2 = relay.add %c, %d : (tensor<5x7xf32>, tensor<5x7xf32>) -> tensor<5x7xf32>
  %3 = relay.subtract %1, %2 : (tensor<5x7xf32>, tensor<5x7xf32>) -> tensor<5x7xf32>
  func.return %3 : tensor<5x7xf32>
}

// -----

// CHECK-LABEL: func.func @test_left_add_on_cpu_via_copy
// CHECK-SAME:    %a: tensor<5x7xf32> {relay.se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-SAME:    %c: tensor<5x7xf32> {relay.se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK:         %[[L:.*]] = relay.add %a, %b {se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-NEXT:    %[[COPY:.*]] = relay.device_copy %[[L]] {src_se_scope = #relay.se_scope<device = cpu{{[^>]*}}>, dst_se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK-NEXT:    %[[R:.*]] = relay.add %c, %d {se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK-NEXT:    relay.subtract %[[COPY]], %[[R]] {se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
func.func @test_left_add_on_cpu_via_copy(%a: tensor<5x7xf32>, %b: tensor<5x7xf32>, %c: tensor<5x7xf32>, %d: tensor<5x7xf32>) -> tensor<5x7xf32> {
  %0 = relay.add %a, %b : (tensor<5x7xf32>, tensor<5x7xf32>) -> tensor<5x7xf32>
  %1 = relay.device_copy %0 {src_se_scope = #relay.se_scope<device = cpu>, dst_se_scope = #relay.se_scope<device = opencl>} : tensor<5x7xf32>
  %2 = relay.add %c, %d : (tensor<5x7xf32>, tensor<5x7xf32>) -> tensor<5x7xf32>
  %3 = relay.subtract %1, %2 : (tensor<5x7xf32>, tensor<5x7xf32>) -> tensor<5x7xf32>
  func.return %3 : tensor<5x7xf32>
}

// -----

// CHECK-LABEL: func.func @test_both_adds_on_cpu
// CHECK-SAME:    %a: tensor<5x7xf32> {relay.se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-SAME:    %d: tensor<5x7xf32> {relay.se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-SAME:    -> (tensor<5x7xf32> {relay.se_scope = #relay.se_scope<device = opencl{{[^>]*}}>})
// CHECK:         %[[L:.*]] = relay.add %a, %b {se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-NEXT:    %[[R:.*]] = relay.add %c, %d {se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-NEXT:    %[[LC:.*]] = relay.device_copy %[[L]]
// CHECK-NEXT:    %[[RC:.*]] = relay.device_copy %[[R]]
// CHECK-NEXT:    relay.subtract %[[LC]], %[[RC]] {se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
func.func @test_both_adds_on_cpu(%a: tensor<5x7xf32>, %b: tensor<5x7xf32>, %c: tensor<5x7xf32>, %d: tensor<5x7xf32>) -> tensor<5x7xf32> {
  %0 = relay.add %a, %b : (tensor<5x7xf32>, tensor<5x7xf32>) -> tensor<5x7xf32>
  %1 = relay.add %c, %d : (tensor<5x7xf32>, tensor<5x7xf32>) -> tensor<5x7xf32>
  %2 = relay.on_device %0 {se_scope = #relay.se_scope<device = cpu>} : tensor<5x7xf32>
  %3 = relay.on_device %1 {se_scope = #relay.se_scope<device = cpu>} : tensor<5x7xf32>
  %4 = relay.subtract %2, %3 : (tensor<5x7xf32>, tensor<5x7xf32>) -> tensor<5x7xf32>
  func.return %4 : tensor<5x7xf32>
}

// -----

// TVM copies once per annotation (two copies); here the value is copied once.

// CHECK-LABEL: func.func @test_sharing
// CHECK-SAME:    %a: tensor<5x7xf32> {relay.se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-SAME:    -> (tensor<5x7xf32> {relay.se_scope = #relay.se_scope<device = opencl{{[^>]*}}>})
// CHECK:         %[[X:.*]] = relay.add %a, %b {se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-NEXT:    %[[COPY:.*]] = relay.device_copy %[[X]]
// CHECK-NEXT:    relay.subtract %[[COPY]], %[[COPY]] {se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
func.func @test_sharing(%a: tensor<5x7xf32>, %b: tensor<5x7xf32>) -> tensor<5x7xf32> {
  %0 = relay.add %a, %b : (tensor<5x7xf32>, tensor<5x7xf32>) -> tensor<5x7xf32>
  %1 = relay.on_device %0 {se_scope = #relay.se_scope<device = cpu>} : tensor<5x7xf32>
  %2 = relay.on_device %0 {se_scope = #relay.se_scope<device = cpu>} : tensor<5x7xf32>
  %3 = relay.subtract %1, %2 : (tensor<5x7xf32>, tensor<5x7xf32>) -> tensor<5x7xf32>
  func.return %3 : tensor<5x7xf32>
}

// -----

// CHECK-LABEL: func.func @test_let_on_cpu
// CHECK-SAME:    %a: tensor<5x7xf32> {relay.se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-SAME:    %c: tensor<5x7xf32> {relay.se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK:         %[[L:.*]] = relay.add %a, %b {se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-NEXT:    %[[R:.*]] = relay.add %c, %d {se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK-NEXT:    %[[COPY:.*]] = relay.device_copy %[[L]]
// CHECK-NEXT:    relay.subtract %[[COPY]], %[[R]] {se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
func.func @test_let_on_cpu(%a: tensor<5x7xf32>, %b: tensor<5x7xf32>, %c: tensor<5x7xf32>, %d: tensor<5x7xf32>) -> tensor<5x7xf32> {
  %l = relay.add %a, %b : (tensor<5x7xf32>, tensor<5x7xf32>) -> tensor<5x7xf32>
  %r = relay.add %c, %d : (tensor<5x7xf32>, tensor<5x7xf32>) -> tensor<5x7xf32>
  %0 = relay.on_device %l {se_scope = #relay.se_scope<device = cpu>} : tensor<5x7xf32>
  %1 = relay.subtract %0, %r : (tensor<5x7xf32>, tensor<5x7xf32>) -> tensor<5x7xf32>
  func.return %1 : tensor<5x7xf32>
}

// -----

// TVM's local function %f becomes a module function; its on_device at the top of the body
// fixes its result on cpu, its parameters follow, and so does everything in @main.

// CHECK-LABEL: func.func @f
// CHECK-SAME:    %x: tensor<5x7xf32> {relay.se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-SAME:    %y: tensor<5x7xf32> {relay.se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-SAME:    -> (tensor<5x7xf32> {relay.se_scope = #relay.se_scope<device = cpu{{[^>]*}}>})
// CHECK:         relay.add %x, %y {se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-LABEL: func.func @test_func_param_on_cpu
// CHECK-SAME:    %a: tensor<5x7xf32> {relay.se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-SAME:    %d: tensor<5x7xf32> {relay.se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-SAME:    -> (tensor<5x7xf32> {relay.se_scope = #relay.se_scope<device = cpu{{[^>]*}}>})
// CHECK:         relay.add %c, %d {se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-NEXT:    relay.subtract {{.*}} {se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-NOT:     relay.device_copy
func.func @f(%x: tensor<5x7xf32>, %y: tensor<5x7xf32>) -> tensor<5x7xf32> {
  %0 = relay.add %x, %y : (tensor<5x7xf32>, tensor<5x7xf32>) -> tensor<5x7xf32>
  %1 = relay.on_device %0 {se_scope = #relay.se_scope<device = cpu>} : tensor<5x7xf32>
  func.return %1 : tensor<5x7xf32>
}
func.func @test_func_param_on_cpu(%a: tensor<5x7xf32>, %b: tensor<5x7xf32>, %c: tensor<5x7xf32>, %d: tensor<5x7xf32>) -> tensor<5x7xf32> {
  %0 = func.call @f(%a, %b) : (tensor<5x7xf32>, tensor<5x7xf32>) -> tensor<5x7xf32>
  %1 = relay.add %c, %d : (tensor<5x7xf32>, tensor<5x7xf32>) -> tensor<5x7xf32>
  %2 = relay.subtract %0, %1 : (tensor<5x7xf32>, tensor<5x7xf32>) -> tensor<5x7xf32>
  func.return %2 : tensor<5x7xf32>
}

// -----

// CHECK-LABEL: func.func @f
// CHECK-SAME:    %x: tensor<5x7xf32> {relay.se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-SAME:    -> (tensor<5x7xf32> {relay.se_scope = #relay.se_scope<device = cpu{{[^>]*}}>})
// CHECK:         relay.add %x, %y {se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-LABEL: func.func @test_func_result_on_cpu
// CHECK-SAME:    %a: tensor<5x7xf32> {relay.se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-SAME:    %c: tensor<5x7xf32> {relay.se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK-SAME:    -> (tensor<5x7xf32> {relay.se_scope = #relay.se_scope<device = opencl{{[^>]*}}>})
// CHECK:         %[[R:.*]] = func.call @f(%a, %b)
// CHECK-NEXT:    %[[COPY:.*]] = relay.device_copy %[[R]] {src_se_scope = #relay.se_scope<device = cpu{{[^>]*}}>, dst_se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK-NEXT:    %[[S:.*]] = relay.add %c, %d {se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK-NEXT:    relay.subtract %[[COPY]], %[[S]]
func.func @f(%x: tensor<5x7xf32>, %y: tensor<5x7xf32>) -> tensor<5x7xf32> {
  %0 = relay.add %x, %y : (tensor<5x7xf32>, tensor<5x7xf32>) -> tensor<5x7xf32>
  func.return %0 : tensor<5x7xf32>
}
func.func @test_func_result_on_cpu(%a: tensor<5x7xf32>, %b: tensor<5x7xf32>, %c: tensor<5x7xf32>, %d: tensor<5x7xf32>) -> tensor<5x7xf32> {
  %0 = func.call @f(%a, %b) : (tensor<5x7xf32>, tensor<5x7xf32>) -> tensor<5x7xf32>
  %1 = relay.on_device %0 {se_scope = #relay.se_scope<device = cpu>} : tensor<5x7xf32>
  %2 = relay.add %c, %d : (tensor<5x7xf32>, tensor<5x7xf32>) -> tensor<5x7xf32>
  %3 = relay.subtract %1, %2 : (tensor<5x7xf32>, tensor<5x7xf32>) -> tensor<5x7xf32>
  func.return %3 : tensor<5x7xf32>
}

// -----

// CHECK-LABEL: func.func @test_device_copy
// CHECK-SAME:    %x: tensor<5x7xf32> {relay.se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-SAME:    -> (tensor<5x7xf32> {relay.se_scope = #relay.se_scope<device = opencl{{[^>]*}}>})
// CHECK:         %[[COPY:.*]] = relay.device_copy %x {src_se_scope = #relay.se_scope<device = cpu{{[^>]*}}>, dst_se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK-NEXT:    %[[K:.*]] = relay.constant {{{.*}}se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK-NEXT:    relay.add %[[COPY]], %[[K]] {se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
func.func @test_device_copy(%x: tensor<5x7xf32>) -> tensor<5x7xf32> {
  %0 = relay.device_copy %x {src_se_scope = #relay.se_scope<device = cpu>, dst_se_scope = #relay.se_scope<device = opencl>} : tensor<5x7xf32>
  %k = relay.constant {value = dense<0.5> : tensor<5x7xf32>} : tensor<5x7xf32>
  %1 = relay.add %0, %k : (tensor<5x7xf32>, tensor<5x7xf32>) -> tensor<5x7xf32>
  func.return %1 : tensor<5x7xf32>
}

// -----

// Shapes are static here; the point of the TVM test is that nothing special happens.

// CHECK-LABEL: func.func @test_dynamic_input
// CHECK-SAME:    %x0: tensor<5x7xf32> {relay.se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK:         relay.add %x0, %x1 {se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
func.func @test_dynamic_input(%x0: tensor<5x7xf32>, %x1: tensor<5x7xf32>) -> tensor<5x7xf32> {
  %0 = relay.add %x0, %x1 : (tensor<5x7xf32>, tensor<5x7xf32>) -> tensor<5x7xf32>
  func.return %0 : tensor<5x7xf32>
}

// -----

// TVM copies %0 twice (once per annotation); here once.

// CHECK-LABEL: func.func @test_redundant_annotation
// CHECK-SAME:    %x: tensor<5x7xf32> {relay.se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-SAME:    %z: tensor<5x7xf32> {relay.se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK:         %[[X:.*]] = relay.add %x, %y {se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-NEXT:    %[[COPY:.*]] = relay.device_copy %[[X]]
// CHECK-NEXT:    %[[S:.*]] = relay.subtract %[[COPY]], %z {se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK-NEXT:    relay.add %[[S]], %[[COPY]] {se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK-NOT:     relay.device_copy
func.func @test_redundant_annotation(%x: tensor<5x7xf32>, %y: tensor<5x7xf32>, %z: tensor<5x7xf32>) -> tensor<5x7xf32> {
  %0 = relay.add %x, %y : (tensor<5x7xf32>, tensor<5x7xf32>) -> tensor<5x7xf32>
  %1 = relay.on_device %0 {se_scope = #relay.se_scope<device = cpu>} : tensor<5x7xf32>
  %2 = relay.subtract %1, %z : (tensor<5x7xf32>, tensor<5x7xf32>) -> tensor<5x7xf32>
  %3 = relay.on_device %0 {se_scope = #relay.se_scope<device = cpu>} : tensor<5x7xf32>
  %4 = relay.add %2, %3 : (tensor<5x7xf32>, tensor<5x7xf32>) -> tensor<5x7xf32>
  func.return %4 : tensor<5x7xf32>
}

// -----

// CHECK-LABEL: func.func @test_annotate_expr
// CHECK-SAME:    %x: tensor<5x7xf32> {relay.se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK-SAME:    %z: tensor<5x7xf32> {relay.se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-SAME:    -> (tensor<5x7xf32> {relay.se_scope = #relay.se_scope<device = cpu{{[^>]*}}>})
// CHECK:         %[[X:.*]] = relay.add %x, %y {se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK-NEXT:    %[[COPY:.*]] = relay.device_copy %[[X]] {src_se_scope = #relay.se_scope<device = opencl{{[^>]*}}>, dst_se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-NEXT:    %[[S:.*]] = relay.subtract %[[COPY]], %z {se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-NEXT:    func.return %[[S]]
func.func @test_annotate_expr(%x: tensor<5x7xf32>, %y: tensor<5x7xf32>, %z: tensor<5x7xf32>) -> tensor<5x7xf32> {
  %0 = relay.add %x, %y : (tensor<5x7xf32>, tensor<5x7xf32>) -> tensor<5x7xf32>
  %1 = relay.on_device %0 {se_scope = #relay.se_scope<device = opencl>} : tensor<5x7xf32>
  %2 = relay.subtract %1, %z : (tensor<5x7xf32>, tensor<5x7xf32>) -> tensor<5x7xf32>
  %3 = relay.on_device %2 {se_scope = #relay.se_scope<device = cpu>} : tensor<5x7xf32>
  func.return %3 : tensor<5x7xf32>
}

// -----

// CHECK-LABEL: func.func @test_annotate_all
// CHECK-SAME:    %x: tensor<5x7xf32> {relay.se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-SAME:    %z: tensor<5x7xf32> {relay.se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-SAME:    -> (tensor<5x7xf32> {relay.se_scope = #relay.se_scope<device = cpu{{[^>]*}}>})
// CHECK:         %[[X:.*]] = relay.add %x, %y {se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-NEXT:    relay.subtract %[[X]], %z {se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-NOT:     relay.device_copy
func.func @test_annotate_all(%x: tensor<5x7xf32>, %y: tensor<5x7xf32>, %z: tensor<5x7xf32>) -> tensor<5x7xf32> {
  %0 = relay.add %x, %y : (tensor<5x7xf32>, tensor<5x7xf32>) -> tensor<5x7xf32>
  %1 = relay.on_device %0 {se_scope = #relay.se_scope<device = cpu>} : tensor<5x7xf32>
  %2 = relay.subtract %1, %z : (tensor<5x7xf32>, tensor<5x7xf32>) -> tensor<5x7xf32>
  %3 = relay.on_device %2 {se_scope = #relay.se_scope<device = cpu>} : tensor<5x7xf32>
  func.return %3 : tensor<5x7xf32>
}

// -----

// Two convolutions on cpu feed an add on opencl, whose result goes back to cpu for the last
// convolution (smaller shapes than TVM's 1x64x56x56).

// CHECK-LABEL: func.func @test_conv_network
// CHECK-SAME:    %data1: tensor<1x2x6x6xf32> {relay.se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-SAME:    %data2: tensor<1x2x6x6xf32> {relay.se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-SAME:    %weight: tensor<2x2x3x3xf32> {relay.se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-SAME:    -> (tensor<1x2x6x6xf32> {relay.se_scope = #relay.se_scope<device = cpu{{[^>]*}}>})
// CHECK:         %[[C1:.*]] = relay.nn.conv2d %data1, %weight {{{.*}}se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-NEXT:    %[[C2:.*]] = relay.nn.conv2d %data2, %weight {{{.*}}se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-NEXT:    %[[D1:.*]] = relay.device_copy %[[C1]] {src_se_scope = #relay.se_scope<device = cpu{{[^>]*}}>, dst_se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK-NEXT:    %[[D2:.*]] = relay.device_copy %[[C2]] {src_se_scope = #relay.se_scope<device = cpu{{[^>]*}}>, dst_se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK-NEXT:    %[[SUM:.*]] = relay.add %[[D1]], %[[D2]] {se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK-NEXT:    %[[BACK:.*]] = relay.device_copy %[[SUM]] {src_se_scope = #relay.se_scope<device = opencl{{[^>]*}}>, dst_se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-NEXT:    relay.nn.conv2d %[[BACK]], %weight {{{.*}}se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
func.func @test_conv_network(%data1: tensor<1x2x6x6xf32>, %data2: tensor<1x2x6x6xf32>, %weight: tensor<2x2x3x3xf32>) -> tensor<1x2x6x6xf32> {
  %0 = relay.nn.conv2d %data1, %weight {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x2x6x6xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x6x6xf32>
  %1 = relay.nn.conv2d %data2, %weight {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x2x6x6xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x6x6xf32>
  %2 = relay.on_device %0 {se_scope = #relay.se_scope<device = cpu>} : tensor<1x2x6x6xf32>
  %3 = relay.on_device %1 {se_scope = #relay.se_scope<device = cpu>} : tensor<1x2x6x6xf32>
  %4 = relay.add %2, %3 : (tensor<1x2x6x6xf32>, tensor<1x2x6x6xf32>) -> tensor<1x2x6x6xf32>
  %5 = relay.on_device %4 {se_scope = #relay.se_scope<device = opencl>} : tensor<1x2x6x6xf32>
  %6 = relay.nn.conv2d %5, %weight {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x2x6x6xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x6x6xf32>
  %7 = relay.on_device %6 {se_scope = #relay.se_scope<device = cpu>} : tensor<1x2x6x6xf32>
  func.return %7 : tensor<1x2x6x6xf32>
}

// -----

// TVM copies the cpu negative twice (two annotations); here once.

// CHECK-LABEL: func.func @test_propogation
// CHECK-SAME:    %x: tensor<5x7xf32> {relay.se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-SAME:    -> (tensor<5x7xf32> {relay.se_scope = #relay.se_scope<device = cpu{{[^>]*}}>})
// CHECK:         %[[N0:.*]] = relay.negative %x {se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-NEXT:    %[[C0:.*]] = relay.device_copy %[[N0]]
// CHECK-NEXT:    %[[N1:.*]] = relay.negative %[[C0]] {se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK-NEXT:    %[[N2:.*]] = relay.negative %[[C0]] {se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK-NEXT:    %[[SUM:.*]] = relay.add %[[N1]], %[[N2]] {se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK-NEXT:    %[[C1:.*]] = relay.device_copy %[[SUM]]
// CHECK-NEXT:    %[[OUT:.*]] = relay.negative %[[C1]] {se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-NEXT:    func.return %[[OUT]]
func.func @test_propogation(%x: tensor<5x7xf32>) -> tensor<5x7xf32> {
  %0 = relay.negative %x : tensor<5x7xf32>
  %1 = relay.on_device %0 {se_scope = #relay.se_scope<device = cpu>} : tensor<5x7xf32>
  %2 = relay.negative %1 : tensor<5x7xf32>
  %3 = relay.on_device %0 {se_scope = #relay.se_scope<device = cpu>} : tensor<5x7xf32>
  %4 = relay.negative %3 : tensor<5x7xf32>
  %5 = relay.on_device %2 {se_scope = #relay.se_scope<device = opencl>} : tensor<5x7xf32>
  %6 = relay.on_device %4 {se_scope = #relay.se_scope<device = opencl>} : tensor<5x7xf32>
  %7 = relay.add %5, %6 : (tensor<5x7xf32>, tensor<5x7xf32>) -> tensor<5x7xf32>
  %8 = relay.on_device %7 {se_scope = #relay.se_scope<device = opencl>} : tensor<5x7xf32>
  %9 = relay.negative %8 : tensor<5x7xf32>
  %10 = relay.on_device %9 {se_scope = #relay.se_scope<device = cpu>} : tensor<5x7xf32>
  func.return %10 : tensor<5x7xf32>
}

// -----

// CHECK-LABEL: func.func @test_fusible_network
// CHECK-SAME:    %x: tensor<5x7xf32> {relay.se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK-SAME:    %y: tensor<5x7xf32> {relay.se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK-SAME:    -> (tensor<5x7xf32> {relay.se_scope = #relay.se_scope<device = cpu{{[^>]*}}>})
// CHECK:         %[[SUM:.*]] = relay.add %x, %y {se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK-NEXT:    %[[C0:.*]] = relay.device_copy %[[SUM]] {src_se_scope = #relay.se_scope<device = opencl{{[^>]*}}>, dst_se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-NEXT:    %[[N0:.*]] = relay.negative %[[C0]] {se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-NEXT:    %[[C1:.*]] = relay.device_copy %[[N0]] {src_se_scope = #relay.se_scope<device = cpu{{[^>]*}}>, dst_se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK-NEXT:    %[[N1:.*]] = relay.negative %[[SUM]] {se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK-NEXT:    %[[SUM2:.*]] = relay.add %[[C1]], %[[N1]] {se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK-NEXT:    %[[C2:.*]] = relay.device_copy %[[SUM2]] {src_se_scope = #relay.se_scope<device = opencl{{[^>]*}}>, dst_se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-NEXT:    relay.negative %[[C2]] {se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
func.func @test_fusible_network(%x: tensor<5x7xf32>, %y: tensor<5x7xf32>) -> tensor<5x7xf32> {
  %0 = relay.add %x, %y : (tensor<5x7xf32>, tensor<5x7xf32>) -> tensor<5x7xf32>
  %1 = relay.on_device %0 {se_scope = #relay.se_scope<device = opencl>} : tensor<5x7xf32>
  %2 = relay.negative %1 : tensor<5x7xf32>
  %3 = relay.on_device %2 {se_scope = #relay.se_scope<device = cpu>} : tensor<5x7xf32>
  %4 = relay.negative %0 : tensor<5x7xf32>
  %5 = relay.add %3, %4 : (tensor<5x7xf32>, tensor<5x7xf32>) -> tensor<5x7xf32>
  %6 = relay.on_device %5 {se_scope = #relay.se_scope<device = opencl>} : tensor<5x7xf32>
  %7 = relay.negative %6 : tensor<5x7xf32>
  %8 = relay.on_device %7 {se_scope = #relay.se_scope<device = cpu>} : tensor<5x7xf32>
  func.return %8 : tensor<5x7xf32>
}

// -----

// CHECK-LABEL: func.func @test_unpropagatable_graph
// CHECK-SAME:    %a: tensor<5x7xf32> {relay.se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-SAME:    %b: tensor<5x7xf32> {relay.se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-SAME:    %c: tensor<5x7xf32> {relay.se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK-SAME:    %d: tensor<5x7xf32> {relay.se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK-SAME:    -> (tensor<5x7xf32> {relay.se_scope = #relay.se_scope<device = cpu{{[^>]*}}>})
// CHECK:         %[[SUM:.*]] = relay.add %a, %b {se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-NEXT:    %[[PROD:.*]] = relay.multiply %c, %d {se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK-NEXT:    %[[COPY:.*]] = relay.device_copy %[[PROD]] {src_se_scope = #relay.se_scope<device = opencl{{[^>]*}}>, dst_se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-NEXT:    relay.subtract %[[SUM]], %[[COPY]] {se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
func.func @test_unpropagatable_graph(%a: tensor<5x7xf32>, %b: tensor<5x7xf32>, %c: tensor<5x7xf32>, %d: tensor<5x7xf32>) -> tensor<5x7xf32> {
  %0 = relay.add %a, %b : (tensor<5x7xf32>, tensor<5x7xf32>) -> tensor<5x7xf32>
  %1 = relay.multiply %c, %d : (tensor<5x7xf32>, tensor<5x7xf32>) -> tensor<5x7xf32>
  %2 = relay.on_device %0 {se_scope = #relay.se_scope<device = cpu>} : tensor<5x7xf32>
  %3 = relay.on_device %1 {se_scope = #relay.se_scope<device = opencl>} : tensor<5x7xf32>
  %4 = relay.subtract %2, %3 : (tensor<5x7xf32>, tensor<5x7xf32>) -> tensor<5x7xf32>
  %5 = relay.on_device %4 {se_scope = #relay.se_scope<device = cpu>} : tensor<5x7xf32>
  func.return %5 : tensor<5x7xf32>
}

// -----

// CHECK-LABEL: func.func @f
// CHECK-SAME:    %a: tensor<5x7xf32> {relay.se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK-SAME:    %b: tensor<5x7xf32> {relay.se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-SAME:    -> (tensor<5x7xf32> {relay.se_scope = #relay.se_scope<device = opencl{{[^>]*}}>})
// CHECK:         %[[COPY:.*]] = relay.device_copy %b {src_se_scope = #relay.se_scope<device = cpu{{[^>]*}}>, dst_se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK-NEXT:    relay.add %a, %[[COPY]] {se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK-LABEL: func.func @test_global
// CHECK-SAME:    %x: tensor<5x7xf32> {relay.se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-SAME:    %y: tensor<5x7xf32> {relay.se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK-SAME:    -> (tensor<5x7xf32> {relay.se_scope = #relay.se_scope<device = opencl{{[^>]*}}>})
// CHECK:         func.call @f(%y, %x)
func.func @f(%a: tensor<5x7xf32>, %b: tensor<5x7xf32>) -> tensor<5x7xf32> {
  %0 = relay.on_device %b {se_scope = #relay.se_scope<device = cpu>} : tensor<5x7xf32>
  %1 = relay.add %a, %0 : (tensor<5x7xf32>, tensor<5x7xf32>) -> tensor<5x7xf32>
  func.return %1 : tensor<5x7xf32>
}
func.func @test_global(%x: tensor<5x7xf32>, %y: tensor<5x7xf32>) -> tensor<5x7xf32> {
  %0 = func.call @f(%y, %x) : (tensor<5x7xf32>, tensor<5x7xf32>) -> tensor<5x7xf32>
  func.return %0 : tensor<5x7xf32>
}

// -----

// Free annotations as copy points between two memory scopes of the cpu: %a (no memory scope)
// takes scopeB from its use, %b (scopeA) is copied to scopeB, %c (scopeB) is not copied, and
// the result computed in scopeB is copied to the function's scopeA result.

// CHECK-LABEL: func.func @on_scope_b
// CHECK-LABEL: func.func @test_free_on_device
// CHECK-SAME:    %a: tensor<5x7xf32> {relay.se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "scopeB">}
// CHECK-SAME:    %b: tensor<5x7xf32> {relay.se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "scopeA">}
// CHECK-SAME:    %c: tensor<5x7xf32> {relay.se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "scopeB">}
// CHECK-SAME:    -> (tensor<5x7xf32> {relay.se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "scopeA">})
// CHECK:         %[[R0:.*]] = func.call @on_scope_b(%a)
// CHECK-NEXT:    %[[B:.*]] = relay.device_copy %b {src_se_scope = #relay.se_scope<{{.*}}memory = "scopeA">, dst_se_scope = #relay.se_scope<{{.*}}memory = "scopeB">}
// CHECK-NEXT:    %[[R1:.*]] = func.call @on_scope_b(%[[B]])
// CHECK-NEXT:    %[[R2:.*]] = func.call @on_scope_b(%c)
// CHECK-NEXT:    %[[S0:.*]] = relay.add %[[R0]], %[[R1]] {se_scope = #relay.se_scope<{{.*}}memory = "scopeB">}
// CHECK-NEXT:    %[[S1:.*]] = relay.add %[[S0]], %[[R2]] {se_scope = #relay.se_scope<{{.*}}memory = "scopeB">}
// CHECK-NEXT:    %[[OUT:.*]] = relay.device_copy %[[S1]] {src_se_scope = #relay.se_scope<{{.*}}memory = "scopeB">, dst_se_scope = #relay.se_scope<{{.*}}memory = "scopeA">}
// CHECK-NEXT:    func.return %[[OUT]]
func.func @on_scope_b(%x: tensor<5x7xf32> {relay.se_scope = #relay.se_scope<device = cpu, memory = "scopeB">}) -> (tensor<5x7xf32> {relay.se_scope = #relay.se_scope<device = cpu, memory = "scopeB">}) {
  func.return %x : tensor<5x7xf32>
}
func.func @test_free_on_device(%a: tensor<5x7xf32> {relay.se_scope = #relay.se_scope<device = cpu>}, %b: tensor<5x7xf32> {relay.se_scope = #relay.se_scope<device = cpu, memory = "scopeA">}, %c: tensor<5x7xf32> {relay.se_scope = #relay.se_scope<device = cpu, memory = "scopeB">}) -> (tensor<5x7xf32> {relay.se_scope = #relay.se_scope<device = cpu, memory = "scopeA">}) {
  %0 = relay.on_device %a {se_scope = #relay.se_scope<device = cpu>, constrain_body = false, constrain_result = false} : tensor<5x7xf32>
  %1 = func.call @on_scope_b(%0) : (tensor<5x7xf32>) -> tensor<5x7xf32>
  %2 = relay.on_device %b {se_scope = #relay.se_scope<device = cpu>, constrain_body = false, constrain_result = false} : tensor<5x7xf32>
  %3 = func.call @on_scope_b(%2) : (tensor<5x7xf32>) -> tensor<5x7xf32>
  %4 = relay.on_device %c {se_scope = #relay.se_scope<device = cpu>, constrain_body = false, constrain_result = false} : tensor<5x7xf32>
  %5 = func.call @on_scope_b(%4) : (tensor<5x7xf32>) -> tensor<5x7xf32>
  %6 = relay.add %1, %3 : (tensor<5x7xf32>, tensor<5x7xf32>) -> tensor<5x7xf32>
  %7 = relay.add %6, %5 : (tensor<5x7xf32>, tensor<5x7xf32>) -> tensor<5x7xf32>
  %8 = relay.on_device %7 {se_scope = #relay.se_scope<device = cpu>, constrain_body = false, constrain_result = false} : tensor<5x7xf32>
  func.return %8 : tensor<5x7xf32>
}
