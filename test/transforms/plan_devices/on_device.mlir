// RUN: opt-tool %s --split-input-file -p 'plan-devices{targets=c,opencl default-device=opencl}' | filecheck %s

// relay.on_device: with the default flags the operand is computed on the annotation's scope
// and each use of the result is planned on its own; the annotation itself disappears, or
// becomes a device_copy where a use ends up elsewhere.

// CHECK-LABEL: func.func @body_on_cpu_use_on_default
// CHECK-SAME:    %a: tensor<4xf32> {relay.se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">}
// CHECK-SAME:    %c: tensor<4xf32> {relay.se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">}
// CHECK:         %[[X:.*]] = relay.exp %a {se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">}
// CHECK-NEXT:    %[[COPY:.*]] = relay.device_copy %[[X]] {src_se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">, dst_se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">}
// CHECK-NEXT:    relay.subtract %[[COPY]], %c {se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">}
// CHECK-NOT:     relay.on_device
func.func @body_on_cpu_use_on_default(%a: tensor<4xf32>, %c: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.exp %a : tensor<4xf32>
  %1 = relay.on_device %0 {se_scope = #relay.se_scope<device = cpu>} : tensor<4xf32>
  %2 = relay.subtract %1, %c : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %2 : tensor<4xf32>
}

// -----

// An annotation that agrees with its uses disappears without a copy.

// CHECK-LABEL: func.func @agreeing_annotation
// CHECK:         %[[X:.*]] = relay.exp %a {se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">}
// CHECK-NEXT:    relay.negative %[[X]] {se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">}
// CHECK-NOT:     relay.on_device
// CHECK-NOT:     relay.device_copy
func.func @agreeing_annotation(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.exp %a : tensor<4xf32>
  %1 = relay.on_device %0 {se_scope = #relay.se_scope<device = opencl>} : tensor<4xf32>
  %2 = relay.negative %1 : tensor<4xf32>
  func.return %2 : tensor<4xf32>
}

// -----

// constrain_result = true also puts every use on the scope: no copy.

// CHECK-LABEL: func.func @constrain_result
// CHECK-SAME:    -> (tensor<4xf32> {relay.se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">})
// CHECK:         %[[X:.*]] = relay.exp %a {se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">}
// CHECK-NEXT:    relay.negative %[[X]] {se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">}
// CHECK-NOT:     relay.device_copy
// CHECK-NOT:     relay.on_device
func.func @constrain_result(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.exp %a : tensor<4xf32>
  %1 = relay.on_device %0 {se_scope = #relay.se_scope<device = cpu>, constrain_result = true} : tensor<4xf32>
  %2 = relay.negative %1 : tensor<4xf32>
  func.return %2 : tensor<4xf32>
}

// -----

// constrain_body = false, constrain_result = true: the operand is not constrained by the
// annotation (here it follows %a onto opencl), the uses are on cpu.

// CHECK-LABEL: func.func @result_only
// CHECK:         %[[X:.*]] = relay.exp %a {se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">}
// CHECK-NEXT:    %[[COPY:.*]] = relay.device_copy %[[X]] {src_se_scope = #relay.se_scope<device = opencl{{[^>]*}}>, dst_se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-NEXT:    relay.negative %[[COPY]] {se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">}
// CHECK-NOT:     relay.on_device
func.func @result_only(%a: tensor<4xf32> {relay.se_scope = #relay.se_scope<device = opencl>}) -> tensor<4xf32> {
  %0 = relay.exp %a : tensor<4xf32>
  %1 = relay.on_device %0 {se_scope = #relay.se_scope<device = cpu>, constrain_body = false, constrain_result = true} : tensor<4xf32>
  %2 = relay.negative %1 : tensor<4xf32>
  func.return %2 : tensor<4xf32>
}

// -----

// The same with an unconstrained parameter: the result is on cpu, the parameter defaults from
// the result, and the whole chain stays on cpu without a copy.

// CHECK-LABEL: func.func @result_only_param_follows
// CHECK-SAME:    %a: tensor<4xf32> {relay.se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">}
// CHECK:         relay.exp %a {se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-NOT:     relay.device_copy
func.func @result_only_param_follows(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.exp %a : tensor<4xf32>
  %1 = relay.on_device %0 {se_scope = #relay.se_scope<device = cpu>, constrain_body = false, constrain_result = true} : tensor<4xf32>
  %2 = relay.negative %1 : tensor<4xf32>
  func.return %2 : tensor<4xf32>
}

// -----

// Each use is planned on its own: one use is pinned to cpu and reads the value in place, the
// other defaults to opencl and reads a copy, made where the annotation stood.

// CHECK-LABEL: func.func @uses_apart
// CHECK:         %[[X:.*]] = relay.exp %a {se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-NEXT:    %[[COPY:.*]] = relay.device_copy %[[X]] {src_se_scope = #relay.se_scope<device = cpu{{[^>]*}}>, dst_se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK-NEXT:    %[[ON_CPU:.*]] = relay.abs %[[X]] {se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-NEXT:    %[[ON_CL:.*]] = relay.negative %[[COPY]] {se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK-NEXT:    func.return %[[ON_CPU]], %[[ON_CL]]
func.func @uses_apart(%a: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = relay.exp %a : tensor<4xf32>
  %1 = relay.on_device %0 {se_scope = #relay.se_scope<device = cpu>} : tensor<4xf32>
  %2 = relay.abs %1 {se_scope = #relay.se_scope<device = cpu>} : tensor<4xf32>
  %3 = relay.negative %1 : tensor<4xf32>
  func.return %2, %3 : tensor<4xf32>, tensor<4xf32>
}

// -----

// An annotation whose result the function returns fixes the function's result (TVM's phase 0).

// CHECK-LABEL: func.func @returned_annotation
// CHECK-SAME:    %a: tensor<4xf32> {relay.se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">}
// CHECK-SAME:    -> (tensor<4xf32> {relay.se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">})
// CHECK:         %[[X:.*]] = relay.exp %a {se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-NEXT:    func.return %[[X]]
func.func @returned_annotation(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.exp %a : tensor<4xf32>
  %1 = relay.on_device %0 {se_scope = #relay.se_scope<device = cpu>} : tensor<4xf32>
  func.return %1 : tensor<4xf32>
}

// -----

// The returned use is fixed; another use of the same annotation still defaults apart.

// CHECK-LABEL: func.func @returned_and_used
// CHECK-SAME:    -> (tensor<4xf32> {relay.se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}, tensor<4xf32> {relay.se_scope = #relay.se_scope<device = opencl{{[^>]*}}>})
// CHECK:         %[[X:.*]] = relay.exp %a {se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-NEXT:    %[[COPY:.*]] = relay.device_copy %[[X]] {src_se_scope = #relay.se_scope<device = cpu{{[^>]*}}>, dst_se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK-NEXT:    %[[Y:.*]] = relay.negative %[[COPY]] {se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK-NEXT:    func.return %[[X]], %[[Y]]
func.func @returned_and_used(%a: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = relay.exp %a : tensor<4xf32>
  %1 = relay.on_device %0 {se_scope = #relay.se_scope<device = cpu>} : tensor<4xf32>
  %2 = relay.negative %1 : tensor<4xf32>
  func.return %1, %2 : tensor<4xf32>, tensor<4xf32>
}

// -----

// Nested annotations: the value is computed on cpu (inner), and the consumer reads one copy
// made straight from it.

// CHECK-LABEL: func.func @nested
// CHECK:         %[[X:.*]] = relay.exp %a {se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-NEXT:    %[[COPY:.*]] = relay.device_copy %[[X]] {src_se_scope = #relay.se_scope<device = cpu{{[^>]*}}>, dst_se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK-NEXT:    relay.negative %[[COPY]] {se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK-NOT:     relay.device_copy
// CHECK-NOT:     relay.on_device
func.func @nested(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.exp %a : tensor<4xf32>
  %1 = relay.on_device %0 {se_scope = #relay.se_scope<device = cpu>} : tensor<4xf32>
  %2 = relay.on_device %1 {se_scope = #relay.se_scope<device = opencl>} : tensor<4xf32>
  %3 = relay.negative %2 : tensor<4xf32>
  func.return %3 : tensor<4xf32>
}

// -----

// A value is copied to a scope at most once, however many annotations or uses ask for it.

// CHECK-LABEL: func.func @copied_once
// CHECK:         %[[X:.*]] = relay.exp %a {se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-NEXT:    %[[COPY:.*]] = relay.device_copy %[[X]]
// CHECK-NEXT:    %[[N:.*]] = relay.negative %[[COPY]] {se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK-NEXT:    %[[T:.*]] = relay.tanh %[[COPY]] {se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK-NEXT:    relay.add %[[N]], %[[T]]
// CHECK-NOT:     relay.device_copy
func.func @copied_once(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.exp %a : tensor<4xf32>
  %1 = relay.on_device %0 {se_scope = #relay.se_scope<device = cpu>} : tensor<4xf32>
  %2 = relay.negative %1 : tensor<4xf32>
  %3 = relay.on_device %0 {se_scope = #relay.se_scope<device = cpu>} : tensor<4xf32>
  %4 = relay.tanh %3 : tensor<4xf32>
  %5 = relay.add %2, %4 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %5 : tensor<4xf32>
}
