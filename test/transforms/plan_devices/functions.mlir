// RUN: opt-tool %s --split-input-file -p 'plan-devices{targets=c,opencl}' | filecheck %s

// Functions: relay.se_scope argument and result attributes constrain parameters and returned
// values; func.return shares the function's result domains; func.call shares the callee's
// parameter and result domains (functions are not device-polymorphic).

// CHECK-LABEL: func.func @attributes_constrain
// CHECK-SAME:    %a: tensor<4xf32> {relay.se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">, other = "kept"}
// CHECK-SAME:    %b: tensor<4xf32> {relay.se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">}
// CHECK-SAME:    -> (tensor<4xf32> {relay.se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">})
// CHECK:         relay.add %a, %b {se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
func.func @attributes_constrain(%a: tensor<4xf32> {relay.se_scope = #relay.se_scope<device = opencl>, other = "kept"}, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.add %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

// A result attribute flows back through func.return into the body and the parameters.

// CHECK-LABEL: func.func @result_attribute
// CHECK-SAME:    %a: tensor<4xf32> {relay.se_scope = #relay.se_scope<device = opencl, id = 1, target = "opencl", memory = "global">}
// CHECK:         relay.exp %a {se_scope = #relay.se_scope<device = opencl, id = 1{{[^>]*}}>}
func.func @result_attribute(%a: tensor<4xf32>) -> (tensor<4xf32> {relay.se_scope = #relay.se_scope<device = opencl, id = 1>}) {
  %0 = relay.exp %a : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

// Calls: the callee pins its parameter %y to opencl; the caller's value flows in on opencl
// and the callee's result (defaulted to cpu) flows out.

// CHECK-LABEL: func.func @callee
// CHECK-SAME:    %x: tensor<4xf32> {relay.se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-SAME:    %y: tensor<4xf32> {relay.se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK-SAME:    -> (tensor<4xf32> {relay.se_scope = #relay.se_scope<device = cpu{{[^>]*}}>})
// CHECK:         %[[COPY:.*]] = relay.device_copy %y {src_se_scope = #relay.se_scope<device = opencl{{[^>]*}}>, dst_se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-NEXT:    relay.add %x, %[[COPY]] {se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-LABEL: func.func @caller
// CHECK-SAME:    %a: tensor<4xf32> {relay.se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-SAME:    %b: tensor<4xf32> {relay.se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK:         %[[T:.*]] = relay.tanh %b {se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK-NEXT:    %[[R:.*]] = func.call @callee(%a, %[[T]])
// CHECK-NEXT:    relay.negative %[[R]] {se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
func.func @callee(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.on_device %y {se_scope = #relay.se_scope<device = opencl>} : tensor<4xf32>
  %1 = relay.add %x, %0 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %1 : tensor<4xf32>
}
func.func @caller(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.tanh %b : tensor<4xf32>
  %1 = func.call @callee(%a, %0) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %2 = relay.negative %1 : tensor<4xf32>
  func.return %2 : tensor<4xf32>
}

// -----

// Constraints flow from a caller into a callee defined later, and through a chain of calls:
// @main -> @middle -> @leaf, the leaf's result pinned to opencl by its caller's annotation.

// CHECK-LABEL: func.func @main
// CHECK-SAME:    -> (tensor<4xf32> {relay.se_scope = #relay.se_scope<device = cpu{{[^>]*}}>})
// CHECK:         %[[R:.*]] = func.call @middle(%a)
// CHECK-NEXT:    %[[COPY:.*]] = relay.device_copy %[[R]] {src_se_scope = #relay.se_scope<device = opencl{{[^>]*}}>, dst_se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-NEXT:    relay.abs %[[COPY]] {se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
// CHECK-LABEL: func.func @middle
// CHECK-SAME:    %x: tensor<4xf32> {relay.se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK-SAME:    -> (tensor<4xf32> {relay.se_scope = #relay.se_scope<device = opencl{{[^>]*}}>})
// CHECK:         relay.exp %x {se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK-LABEL: func.func @leaf
// CHECK-SAME:    %y: tensor<4xf32> {relay.se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK-SAME:    -> (tensor<4xf32> {relay.se_scope = #relay.se_scope<device = opencl{{[^>]*}}>})
// CHECK:         relay.negative %y {se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = func.call @middle(%a) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = relay.on_device %0 {se_scope = #relay.se_scope<device = opencl>} : tensor<4xf32>
  %2 = relay.abs %1 : tensor<4xf32>
  func.return %2 : tensor<4xf32>
}
func.func @middle(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.exp %x : tensor<4xf32>
  %1 = func.call @leaf(%0) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %1 : tensor<4xf32>
}
func.func @leaf(%y: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.negative %y : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

// Parameters default from the function's first result; a partly constrained parameter is
// completed from it (here: id 1 from the attribute, device opencl from the result).

// CHECK-LABEL: func.func @partial_parameter
// CHECK-SAME:    %a: tensor<4xf32> {relay.se_scope = #relay.se_scope<device = opencl, id = 1, target = "opencl", memory = "global">}
// CHECK-SAME:    %b: tensor<4xf32> {relay.se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">}
// CHECK:         %[[COPY:.*]] = relay.device_copy %a {src_se_scope = #relay.se_scope<device = opencl, id = 1{{[^>]*}}>, dst_se_scope = #relay.se_scope<device = opencl, id = 0{{[^>]*}}>}
// CHECK-NEXT:    relay.add %[[COPY]], %b {se_scope = #relay.se_scope<device = opencl, id = 0{{[^>]*}}>}
func.func @partial_parameter(%a: tensor<4xf32> {relay.se_scope = #relay.se_scope<id = 1>}, %b: tensor<4xf32>) -> (tensor<4xf32> {relay.se_scope = #relay.se_scope<device = opencl>}) {
  %0 = relay.on_device %a {se_scope = #relay.se_scope<id = 1>} : tensor<4xf32>
  %1 = relay.add %0, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %1 : tensor<4xf32>
}

// -----

// A function without results: its parameters take the default scope.

// CHECK-LABEL: func.func @no_results
// CHECK-SAME:    %a: tensor<4xf32> {relay.se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">}
// CHECK:         relay.exp %a {se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
func.func @no_results(%a: tensor<4xf32>) {
  %0 = relay.exp %a : tensor<4xf32>
  func.return
}

// -----

// A call to a declaration shares the declaration's attributes (written in generic form:
// xDSL's custom syntax drops argument attributes of declarations).

// CHECK-LABEL: func.func @calls_external
// CHECK-SAME:    %a: tensor<4xf32> {relay.se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK-SAME:    -> (tensor<4xf32> {relay.se_scope = #relay.se_scope<device = cpu{{[^>]*}}>})
// CHECK:         %[[X:.*]] = relay.exp %a {se_scope = #relay.se_scope<device = opencl{{[^>]*}}>}
// CHECK-NEXT:    %[[R:.*]] = func.call @external(%[[X]])
// CHECK-NEXT:    relay.device_copy %[[R]] {src_se_scope = #relay.se_scope<device = opencl, id = 1{{[^>]*}}>, dst_se_scope = #relay.se_scope<device = cpu{{[^>]*}}>}
"func.func"() <{sym_name = "external", function_type = (tensor<4xf32>) -> tensor<4xf32>, sym_visibility = "private", arg_attrs = [{relay.se_scope = #relay.se_scope<device = opencl>}], res_attrs = [{relay.se_scope = #relay.se_scope<device = opencl, id = 1>}]}> ({
}) : () -> ()
func.func @calls_external(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.exp %a : tensor<4xf32>
  %1 = func.call @external(%0) : (tensor<4xf32>) -> tensor<4xf32>
  %2 = relay.on_device %1 {se_scope = #relay.se_scope<device = opencl, id = 1>} : tensor<4xf32>
  %3 = relay.negative %2 : tensor<4xf32>
  func.return %3 : tensor<4xf32>
}
