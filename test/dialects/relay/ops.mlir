// RUN: opt-tool %s | opt-tool | filecheck %s
// RUN: opt-tool %s --print-op-generic | opt-tool | filecheck %s
// RUN: opt-tool %s --print-op-generic | opt-tool --print-op-generic | filecheck %s --check-prefix=GENERIC

// Every relay op in its custom syntax: printed and reparsed (first RUN line), and through the
// generic form and back (second), which prints as below (third).

// CHECK-LABEL: func.func @elementwise
// CHECK-SAME:      (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NEXT:    %[[NEG:.*]] = relay.negative %[[X]] : tensor<2x3xf32>
// CHECK-NEXT:    %[[EXP:.*]] = relay.exp %[[NEG]] : tensor<2x3xf32>
// CHECK-NEXT:    %[[LOG:.*]] = relay.log %[[EXP]] : tensor<2x3xf32>
// CHECK-NEXT:    %[[SQRT:.*]] = relay.sqrt %[[LOG]] : tensor<2x3xf32>
// CHECK-NEXT:    %[[RSQRT:.*]] = relay.rsqrt %[[SQRT]] : tensor<2x3xf32>
// CHECK-NEXT:    %[[TANH:.*]] = relay.tanh %[[RSQRT]] : tensor<2x3xf32>
// CHECK-NEXT:    %[[SIG:.*]] = relay.sigmoid %[[TANH]] : tensor<2x3xf32>
// CHECK-NEXT:    %[[ABS:.*]] = relay.abs %[[SIG]] : tensor<2x3xf32>
// CHECK-NEXT:    %[[ERF:.*]] = relay.erf %[[ABS]] : tensor<2x3xf32>
// CHECK-NEXT:    %[[RELU:.*]] = relay.nn.relu %[[ERF]] : tensor<2x3xf32>
// CHECK-NEXT:    %[[CLIP:.*]] = relay.clip %[[RELU]] {a_min = 0.000000e+00 : f32, a_max = 6.000000e+00 : f32} : tensor<2x3xf32>
// CHECK-NEXT:    func.return %[[CLIP]] : tensor<2x3xf32>
// GENERIC-LABEL: sym_name = "elementwise"
// GENERIC:         "relay.negative"(%{{.*}}) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// GENERIC:         "relay.clip"(%{{.*}}) <{a_min = 0.000000e+00 : f32, a_max = 6.000000e+00 : f32}> : (tensor<2x3xf32>) -> tensor<2x3xf32>
func.func @elementwise(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = relay.negative %x : tensor<2x3xf32>
  %1 = relay.exp %0 : tensor<2x3xf32>
  %2 = relay.log %1 : tensor<2x3xf32>
  %3 = relay.sqrt %2 : tensor<2x3xf32>
  %4 = relay.rsqrt %3 : tensor<2x3xf32>
  %5 = relay.tanh %4 : tensor<2x3xf32>
  %6 = relay.sigmoid %5 : tensor<2x3xf32>
  %7 = relay.abs %6 : tensor<2x3xf32>
  %8 = relay.erf %7 : tensor<2x3xf32>
  %9 = relay.nn.relu %8 : tensor<2x3xf32>
  %10 = relay.clip %9 {a_min = 0.0 : f32, a_max = 6.0 : f32} : tensor<2x3xf32>
  func.return %10 : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @broadcast
// CHECK-SAME:      (%[[A:.*]]: tensor<2x3xf32>, %[[B:.*]]: tensor<3xf32>, %[[C:.*]]: tensor<2x1xf32>, %[[D:.*]]: tensor<2xf32>)
// CHECK-NEXT:    %[[ADD:.*]] = relay.add %[[A]], %[[B]] : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %[[SUB:.*]] = relay.subtract %[[C]], %[[ADD]] : (tensor<2x1xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %[[MUL:.*]] = relay.multiply %[[SUB]], %[[B]] : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %[[DIV:.*]] = relay.divide %[[MUL]], %[[C]] : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %[[MAX:.*]] = relay.maximum %[[DIV]], %[[A]] : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %[[MIN:.*]] = relay.minimum %[[MAX]], %[[A]] : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %[[POW:.*]] = relay.power %[[MIN]], %[[B]] : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %[[OUTER:.*]] = relay.add %[[C]], %[[B]] : (tensor<2x1xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %[[BIAS:.*]] = relay.nn.bias_add %[[POW]], %[[B]] : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %[[BIAS0:.*]] = relay.nn.bias_add %[[BIAS]], %[[D]] {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %[[EXP:.*]] = relay.expand_dims %[[BIAS0]] {axis = 1 : i64} : (tensor<2x3xf32>) -> tensor<2x1x3xf32>
// CHECK-NEXT:    %[[EXP2:.*]] = relay.expand_dims %[[EXP]] {axis = -1 : i64, num_newaxis = 2 : i64} : (tensor<2x1x3xf32>) -> tensor<2x1x3x1x1xf32>
// CHECK-NEXT:    %[[BCAST:.*]] = relay.broadcast_to %[[C]] : (tensor<2x1xf32>) -> tensor<4x2x3xf32>
// GENERIC-LABEL: sym_name = "broadcast"
// GENERIC:         "relay.nn.bias_add"(%{{.*}}, %{{.*}}) <{axis = 0 : i64}> : (tensor<2x3xf32>, tensor<2xf32>) -> tensor<2x3xf32>
// GENERIC:         "relay.expand_dims"(%{{.*}}) <{axis = -1 : i64, num_newaxis = 2 : i64}> : (tensor<2x1x3xf32>) -> tensor<2x1x3x1x1xf32>
func.func @broadcast(%a: tensor<2x3xf32>, %b: tensor<3xf32>, %c: tensor<2x1xf32>, %d: tensor<2xf32>)
    -> (tensor<2x3xf32>, tensor<2x1x3x1x1xf32>, tensor<4x2x3xf32>) {
  %0 = relay.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %1 = relay.subtract %c, %0 : (tensor<2x1xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = relay.multiply %1, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %3 = relay.divide %2, %c : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
  %4 = relay.maximum %3, %a : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %5 = relay.minimum %4, %a : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %6 = relay.power %5, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %7 = relay.add %c, %b : (tensor<2x1xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %8 = relay.nn.bias_add %6, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %9 = relay.nn.bias_add %8, %d {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2xf32>) -> tensor<2x3xf32>
  %10 = relay.expand_dims %9 {axis = 1 : i64} : (tensor<2x3xf32>) -> tensor<2x1x3xf32>
  %11 = relay.expand_dims %10 {axis = -1 : i64, num_newaxis = 2 : i64} : (tensor<2x1x3xf32>) -> tensor<2x1x3x1x1xf32>
  %12 = relay.broadcast_to %c : (tensor<2x1xf32>) -> tensor<4x2x3xf32>
  func.return %7, %11, %12 : tensor<2x3xf32>, tensor<2x1x3x1x1xf32>, tensor<4x2x3xf32>
}

// CHECK-LABEL: func.func @injective
// CHECK-SAME:      (%[[X:.*]]: tensor<2x1x6xf32>, %[[Y:.*]]: tensor<2x3x6xf32>)
// CHECK-NEXT:    %[[R:.*]] = relay.reshape %[[X]] : (tensor<2x1x6xf32>) -> tensor<3x4xf32>
// CHECK-NEXT:    %[[T:.*]] = relay.transpose %[[Y]] {axes = array<i64: 2, 0, 1>} : (tensor<2x3x6xf32>) -> tensor<6x2x3xf32>
// CHECK-NEXT:    %[[REV:.*]] = relay.transpose %[[Y]] : (tensor<2x3x6xf32>) -> tensor<6x3x2xf32>
// CHECK-NEXT:    %[[S:.*]] = relay.squeeze %[[X]] {axis = array<i64: 1>} : (tensor<2x1x6xf32>) -> tensor<2x6xf32>
// CHECK-NEXT:    %[[SALL:.*]] = relay.squeeze %[[X]] : (tensor<2x1x6xf32>) -> tensor<2x6xf32>
// CHECK-NEXT:    %[[SL:.*]] = relay.strided_slice %[[Y]] {begin = array<i64: 0, 2>, end = array<i64: 2, -3>, strides = array<i64: 1, -1>} : (tensor<2x3x6xf32>) -> tensor<2x2x6xf32>
// CHECK-NEXT:    %[[SL2:.*]] = relay.strided_slice %[[Y]] {begin = array<i64: 1>, end = array<i64: 2>} : (tensor<2x3x6xf32>) -> tensor<1x3x6xf32>
// CHECK-NEXT:    %[[CAT:.*]] = relay.concatenate %[[X]], %[[Y]], %[[SL]] {axis = 1 : i64} : (tensor<2x1x6xf32>, tensor<2x3x6xf32>, tensor<2x2x6xf32>) -> tensor<2x6x6xf32>
// CHECK-NEXT:    %[[CAT1:.*]] = relay.concatenate %[[Y]] {axis = -1 : i64} : (tensor<2x3x6xf32>) -> tensor<2x3x6xf32>
// GENERIC-LABEL: sym_name = "injective"
// GENERIC:         "relay.transpose"(%{{.*}}) <{axes = array<i64: 2, 0, 1>}>
// GENERIC:         "relay.strided_slice"(%{{.*}}) <{begin = array<i64: 0, 2>, end = array<i64: 2, -3>, strides = array<i64: 1, -1>}>
// GENERIC:         "relay.concatenate"(%{{.*}}, %{{.*}}, %{{.*}}) <{axis = 1 : i64}>
func.func @injective(%x: tensor<2x1x6xf32>, %y: tensor<2x3x6xf32>)
    -> (tensor<3x4xf32>, tensor<6x2x3xf32>, tensor<6x3x2xf32>, tensor<2x6xf32>, tensor<2x6xf32>, tensor<1x3x6xf32>, tensor<2x6x6xf32>, tensor<2x3x6xf32>) {
  %0 = relay.reshape %x : (tensor<2x1x6xf32>) -> tensor<3x4xf32>
  %1 = relay.transpose %y {axes = array<i64: 2, 0, 1>} : (tensor<2x3x6xf32>) -> tensor<6x2x3xf32>
  %2 = relay.transpose %y : (tensor<2x3x6xf32>) -> tensor<6x3x2xf32>
  %3 = relay.squeeze %x {axis = array<i64: 1>} : (tensor<2x1x6xf32>) -> tensor<2x6xf32>
  %4 = relay.squeeze %x : (tensor<2x1x6xf32>) -> tensor<2x6xf32>
  %5 = relay.strided_slice %y {begin = array<i64: 0, 2>, end = array<i64: 2, -3>, strides = array<i64: 1, -1>} : (tensor<2x3x6xf32>) -> tensor<2x2x6xf32>
  %6 = relay.strided_slice %y {begin = array<i64: 1>, end = array<i64: 2>} : (tensor<2x3x6xf32>) -> tensor<1x3x6xf32>
  %7 = relay.concatenate %x, %y, %5 {axis = 1 : i64} : (tensor<2x1x6xf32>, tensor<2x3x6xf32>, tensor<2x2x6xf32>) -> tensor<2x6x6xf32>
  %8 = relay.concatenate %y {axis = -1 : i64} : (tensor<2x3x6xf32>) -> tensor<2x3x6xf32>
  func.return %0, %1, %2, %3, %4, %6, %7, %8 : tensor<3x4xf32>, tensor<6x2x3xf32>, tensor<6x3x2xf32>, tensor<2x6xf32>, tensor<2x6xf32>, tensor<1x3x6xf32>, tensor<2x6x6xf32>, tensor<2x3x6xf32>
}

// CHECK-LABEL: func.func @reductions
// CHECK-SAME:      (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NEXT:    %{{.*}} = relay.sum %[[X]] : (tensor<2x3x4xf32>) -> tensor<f32>
// CHECK-NEXT:    %{{.*}} = relay.mean %[[X]] {axis = array<i64: 1>} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %{{.*}} = relay.max %[[X]] {axis = array<i64: 0, -1>, keepdims = true} : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
// CHECK-NEXT:    %{{.*}} = relay.min %[[X]] {axis = array<i64: 2>, keepdims = false} : (tensor<2x3x4xf32>) -> tensor<2x3xf32>
// GENERIC-LABEL: sym_name = "reductions"
// GENERIC:         "relay.max"(%{{.*}}) <{axis = array<i64: 0, -1>, keepdims = true}>
func.func @reductions(%x: tensor<2x3x4xf32>) -> (tensor<f32>, tensor<2x4xf32>, tensor<1x3x1xf32>, tensor<2x3xf32>) {
  %0 = relay.sum %x : (tensor<2x3x4xf32>) -> tensor<f32>
  %1 = relay.mean %x {axis = array<i64: 1>} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
  %2 = relay.max %x {axis = array<i64: 0, -1>, keepdims = true} : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
  %3 = relay.min %x {axis = array<i64: 2>, keepdims = false} : (tensor<2x3x4xf32>) -> tensor<2x3xf32>
  func.return %0, %1, %2, %3 : tensor<f32>, tensor<2x4xf32>, tensor<1x3x1xf32>, tensor<2x3xf32>
}

// CHECK-LABEL: func.func @anchors
// CHECK-SAME:      (%[[X:.*]]: tensor<1x4x7x7xf32>, %[[W:.*]]: tensor<6x2x3x3xf32>, %[[M:.*]]: tensor<3x5xf32>, %[[U:.*]]: tensor<8x5xf32>, %[[B:.*]]: tensor<2x3x5xf32>)
// CHECK-NEXT:    %{{.*}} = relay.nn.dense %[[M]], %[[U]] : (tensor<3x5xf32>, tensor<8x5xf32>) -> tensor<3x8xf32>
// CHECK-NEXT:    %{{.*}} = relay.nn.batch_matmul %[[B]], %[[B]] : (tensor<2x3x5xf32>, tensor<2x3x5xf32>) -> tensor<2x3x3xf32>
// CHECK-NEXT:    %{{.*}} = relay.nn.conv2d %[[X]], %[[W]] {strides = array<i64: 2, 1>, padding = array<i64: 1, 0, 1, 2>, dilation = array<i64: 1, 2>, groups = 2 : i64} : (tensor<1x4x7x7xf32>, tensor<6x2x3x3xf32>) -> tensor<1x6x4x5xf32>
// CHECK-NEXT:    %{{.*}} = relay.nn.max_pool2d %[[X]] {pool_size = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : (tensor<1x4x7x7xf32>) -> tensor<1x4x4x4xf32>
// CHECK-NEXT:    %{{.*}} = relay.nn.avg_pool2d %[[X]] {pool_size = array<i64: 2, 2>} : (tensor<1x4x7x7xf32>) -> tensor<1x4x6x6xf32>
// CHECK-NEXT:    %{{.*}} = relay.nn.global_avg_pool2d %[[X]] : (tensor<1x4x7x7xf32>) -> tensor<1x4x1x1xf32>
// CHECK-NEXT:    %{{.*}} = relay.nn.softmax %[[M]] : (tensor<3x5xf32>) -> tensor<3x5xf32>
// CHECK-NEXT:    %{{.*}} = relay.nn.softmax %[[M]] {axis = 0 : i64} : (tensor<3x5xf32>) -> tensor<3x5xf32>
// GENERIC-LABEL: sym_name = "anchors"
// GENERIC:         "relay.nn.conv2d"(%{{.*}}, %{{.*}}) <{strides = array<i64: 2, 1>, padding = array<i64: 1, 0, 1, 2>, dilation = array<i64: 1, 2>, groups = 2 : i64}>
// GENERIC:         "relay.nn.max_pool2d"(%{{.*}}) <{pool_size = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>}>
// GENERIC:         "relay.nn.softmax"(%{{.*}}) <{axis = 0 : i64}>
func.func @anchors(%x: tensor<1x4x7x7xf32>, %w: tensor<6x2x3x3xf32>, %m: tensor<3x5xf32>, %u: tensor<8x5xf32>, %b: tensor<2x3x5xf32>)
    -> (tensor<3x8xf32>, tensor<2x3x3xf32>, tensor<1x6x4x5xf32>, tensor<1x4x4x4xf32>, tensor<1x4x6x6xf32>, tensor<1x4x1x1xf32>, tensor<3x5xf32>, tensor<3x5xf32>) {
  %0 = relay.nn.dense %m, %u : (tensor<3x5xf32>, tensor<8x5xf32>) -> tensor<3x8xf32>
  %1 = relay.nn.batch_matmul %b, %b : (tensor<2x3x5xf32>, tensor<2x3x5xf32>) -> tensor<2x3x3xf32>
  %2 = relay.nn.conv2d %x, %w {strides = array<i64: 2, 1>, padding = array<i64: 1, 0, 1, 2>, dilation = array<i64: 1, 2>, groups = 2 : i64} : (tensor<1x4x7x7xf32>, tensor<6x2x3x3xf32>) -> tensor<1x6x4x5xf32>
  %3 = relay.nn.max_pool2d %x {pool_size = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : (tensor<1x4x7x7xf32>) -> tensor<1x4x4x4xf32>
  %4 = relay.nn.avg_pool2d %x {pool_size = array<i64: 2, 2>} : (tensor<1x4x7x7xf32>) -> tensor<1x4x6x6xf32>
  %5 = relay.nn.global_avg_pool2d %x : (tensor<1x4x7x7xf32>) -> tensor<1x4x1x1xf32>
  %6 = relay.nn.softmax %m : (tensor<3x5xf32>) -> tensor<3x5xf32>
  %7 = relay.nn.softmax %m {axis = 0 : i64} : (tensor<3x5xf32>) -> tensor<3x5xf32>
  func.return %0, %1, %2, %3, %4, %5, %6, %7 : tensor<3x8xf32>, tensor<2x3x3xf32>, tensor<1x6x4x5xf32>, tensor<1x4x4x4xf32>, tensor<1x4x6x6xf32>, tensor<1x4x1x1xf32>, tensor<3x5xf32>, tensor<3x5xf32>
}

// CHECK-LABEL: func.func @placement
// CHECK-SAME:      (%[[X:.*]]: tensor<4xf32> {relay.se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">})
// CHECK-SAME:      -> (tensor<4xf32> {relay.se_scope = #relay.se_scope<device = opencl, id = 1>})
// CHECK-NEXT:    %[[K:.*]] = relay.constant {value = dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<4xf32>} : tensor<4xf32>
// CHECK-NEXT:    %[[SPLAT:.*]] = relay.constant {value = dense<5.000000e-01> : tensor<4xf32>, se_scope = #relay.se_scope<device = cpu>} : tensor<4xf32>
// CHECK-NEXT:    %[[ADD:.*]] = relay.add %[[X]], %[[K]] {se_scope = #relay.se_scope<>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    %[[ON:.*]] = relay.on_device %[[ADD]] {se_scope = #relay.se_scope<device = cpu, id = 0>} : tensor<4xf32>
// CHECK-NEXT:    %[[FREE:.*]] = relay.on_device %[[ON]] {se_scope = #relay.se_scope<memory = "global">, constrain_body = false, constrain_result = false} : tensor<4xf32>
// CHECK-NEXT:    %[[PIN:.*]] = relay.on_device %[[FREE]] {se_scope = #relay.se_scope<target = "c">, constrain_result = true} : tensor<4xf32>
// CHECK-NEXT:    %[[COPY:.*]] = relay.device_copy %[[PIN]] {src_se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">, dst_se_scope = #relay.se_scope<device = opencl, id = 1, target = "opencl", memory = "global">} : tensor<4xf32>
// CHECK-NEXT:    %{{.*}} = relay.multiply %[[COPY]], %[[SPLAT]] : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// GENERIC-LABEL: sym_name = "placement"
// GENERIC:         "relay.constant"() <{value = dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<4xf32>}> : () -> tensor<4xf32>
// GENERIC:         "relay.on_device"(%{{.*}}) <{se_scope = #relay.se_scope<memory = "global">, constrain_body = false, constrain_result = false}>
// GENERIC:         "relay.device_copy"(%{{.*}}) <{src_se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">, dst_se_scope = #relay.se_scope<device = opencl, id = 1, target = "opencl", memory = "global">}>
func.func @placement(%x: tensor<4xf32> {relay.se_scope = #relay.se_scope<memory = "global", target = "c", id = 0, device = cpu>})
    -> (tensor<4xf32> {relay.se_scope = #relay.se_scope<device = opencl, id = 1>}) {
  %k = relay.constant {value = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>} : tensor<4xf32>
  %h = relay.constant {value = dense<0.5> : tensor<4xf32>, se_scope = #relay.se_scope<device = cpu>} : tensor<4xf32>
  %0 = relay.add %x, %k {se_scope = #relay.se_scope<>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = relay.on_device %0 {se_scope = #relay.se_scope<device = cpu, id = 0>} : tensor<4xf32>
  %2 = relay.on_device %1 {se_scope = #relay.se_scope<memory = "global">, constrain_body = false, constrain_result = false} : tensor<4xf32>
  %3 = relay.on_device %2 {se_scope = #relay.se_scope<target = "c">, constrain_result = true} : tensor<4xf32>
  %4 = relay.device_copy %3 {src_se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">, dst_se_scope = #relay.se_scope<device = opencl, id = 1, target = "opencl", memory = "global">} : tensor<4xf32>
  %5 = relay.multiply %4, %h : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %5 : tensor<4xf32>
}

// CHECK-LABEL: func.func @fusion
// CHECK-SAME:      (%[[A:.*]]: tensor<2x3xf32>, %[[B:.*]]: tensor<3xf32>)
// CHECK-NEXT:    %[[F:.*]] = relay.fused(%[[A]], %[[B]]) {se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">, kernel_name = "fused_add_exp"} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32> {
// CHECK-NEXT:    ^{{.*}}(%[[X:.*]]: tensor<2x3xf32>, %[[Y:.*]]: tensor<3xf32>):
// CHECK-NEXT:      %[[S:.*]] = relay.add %[[X]], %[[Y]] : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:      %[[E:.*]] = relay.exp %[[S]] : tensor<2x3xf32>
// CHECK-NEXT:      relay.yield %[[E]] : tensor<2x3xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[L:.*]] = relay.launch @fused_add_exp(%[[F]], %[[B]]) {se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %[[L]] : tensor<2x3xf32>
// GENERIC-LABEL: sym_name = "fusion"
// GENERIC:         "relay.fused"(%{{.*}}, %{{.*}}) <{se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">, kernel_name = "fused_add_exp"}> ({
// GENERIC:           "relay.yield"(%{{.*}}) : (tensor<2x3xf32>) -> ()
// GENERIC:         }) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// GENERIC:         "relay.launch"(%{{.*}}, %{{.*}}) <{callee = @fused_add_exp, se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">}> : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
func.func @fusion(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
  %0 = relay.fused(%a, %b) {se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">, kernel_name = "fused_add_exp"} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32> {
  ^bb0(%x: tensor<2x3xf32>, %y: tensor<3xf32>):
    %1 = relay.add %x, %y : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    %2 = relay.exp %1 : tensor<2x3xf32>
    relay.yield %2 : tensor<2x3xf32>
  }
  %3 = relay.launch @fused_add_exp(%0, %b) {se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  func.return %3 : tensor<2x3xf32>
}
// The kernel a launch names: one memref per input, one for the result.
func.func @fused_add_exp(%in0: memref<2x3xf32>, %in1: memref<3xf32>, %out0: memref<2x3xf32>) {
  func.return
}

// The ops imported models need.

// CHECK-LABEL: func.func @model_ops
// CHECK-SAME:      (%[[A:.*]]: tensor<2x3x5xf32>, %[[B:.*]]: tensor<5x4xf32>, %[[G:.*]]: tensor<3x5xf32>, %[[V:.*]]: tensor<5xf32>, %{{.*}}: tensor<1x2x8x8xf32>)
// CHECK-NEXT:    %{{.*}} = relay.nn.matmul %[[A]], %[[B]] : (tensor<2x3x5xf32>, tensor<5x4xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    %{{.*}} = relay.nn.layer_norm %[[A]], %[[G]], %[[G]] {axis = 1 : i64, epsilon = 1.000000e-03 : f32} : (tensor<2x3x5xf32>, tensor<3x5xf32>, tensor<3x5xf32>) -> tensor<2x3x5xf32>
// CHECK-NEXT:    %{{.*}} = relay.nn.layer_norm %[[A]], %[[V]], %[[V]] : (tensor<2x3x5xf32>, tensor<5xf32>, tensor<5xf32>) -> tensor<2x3x5xf32>
// CHECK-NEXT:    %{{.*}} = relay.nn.leaky_relu %[[A]] {alpha = 1.000000e-01 : f32} : tensor<2x3x5xf32>
// CHECK-NEXT:    %{{.*}} = relay.nn.leaky_relu %[[A]] : tensor<2x3x5xf32>
// CHECK-NEXT:    %{{.*}} = relay.nn.pad %[[A]] {pad_width = array<i64: 0, 0, 1, -1, 2, 3>} : (tensor<2x3x5xf32>) -> tensor<2x3x10xf32>
// CHECK-NEXT:    %{{.*}} = relay.nn.pad %[[A]] {pad_width = array<i64: 1, 1, 0, 0, 4, 4>, pad_value = -1.000000e+00 : f32, pad_mode = "reflect"} : (tensor<2x3x5xf32>) -> tensor<4x3x13xf32>
// CHECK-NEXT:    %{{.*}} = relay.take %[[A]] {indices = dense<[[0, -1], [2, 1]]> : tensor<2x2xi64>, axis = 1 : i64} : (tensor<2x3x5xf32>) -> tensor<2x2x2x5xf32>
// CHECK-NEXT:    %{{.*}} = relay.take %[[A]] {indices = dense<4> : tensor<i64>, axis = -1 : i64} : (tensor<2x3x5xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %{{.*}} = relay.nn.avg_pool2d %[[P:.*]] {pool_size = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 2>, ceil_mode = true, count_include_pad = true} : (tensor<1x2x8x8xf32>) -> tensor<1x2x5x4xf32>
// CHECK-NEXT:    %{{.*}} = relay.nn.max_pool2d %[[P]] {pool_size = array<i64: 2, 2>, dilation = array<i64: 3, 3>, ceil_mode = false} : (tensor<1x2x8x8xf32>) -> tensor<1x2x5x5xf32>
// GENERIC-LABEL: sym_name = "model_ops"
// GENERIC:         "relay.nn.matmul"(%{{.*}}, %{{.*}}) : (tensor<2x3x5xf32>, tensor<5x4xf32>) -> tensor<2x3x4xf32>
// GENERIC:         "relay.nn.layer_norm"(%{{.*}}, %{{.*}}, %{{.*}}) <{axis = 1 : i64, epsilon = 1.000000e-03 : f32}> : (tensor<2x3x5xf32>, tensor<3x5xf32>, tensor<3x5xf32>) -> tensor<2x3x5xf32>
// GENERIC:         "relay.nn.leaky_relu"(%{{.*}}) <{alpha = 1.000000e-01 : f32}> : (tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
// GENERIC:         "relay.nn.pad"(%{{.*}}) <{pad_width = array<i64: 0, 0, 1, -1, 2, 3>}> : (tensor<2x3x5xf32>) -> tensor<2x3x10xf32>
// GENERIC:         "relay.take"(%{{.*}}) <{indices = dense<{{\[\[}}0, -1], [2, 1]]> : tensor<2x2xi64>, axis = 1 : i64}> : (tensor<2x3x5xf32>) -> tensor<2x2x2x5xf32>
func.func @model_ops(%a: tensor<2x3x5xf32>, %b: tensor<5x4xf32>, %g: tensor<3x5xf32>, %v: tensor<5xf32>, %p: tensor<1x2x8x8xf32>) -> tensor<2x3x4xf32> {
  %0 = relay.nn.matmul %a, %b : (tensor<2x3x5xf32>, tensor<5x4xf32>) -> tensor<2x3x4xf32>
  %1 = relay.nn.layer_norm %a, %g, %g {axis = 1 : i64, epsilon = 1.0e-3 : f32} : (tensor<2x3x5xf32>, tensor<3x5xf32>, tensor<3x5xf32>) -> tensor<2x3x5xf32>
  %2 = relay.nn.layer_norm %a, %v, %v : (tensor<2x3x5xf32>, tensor<5xf32>, tensor<5xf32>) -> tensor<2x3x5xf32>
  %3 = relay.nn.leaky_relu %a {alpha = 0.1 : f32} : tensor<2x3x5xf32>
  %4 = relay.nn.leaky_relu %a : tensor<2x3x5xf32>
  %5 = relay.nn.pad %a {pad_width = array<i64: 0, 0, 1, -1, 2, 3>} : (tensor<2x3x5xf32>) -> tensor<2x3x10xf32>
  %6 = relay.nn.pad %a {pad_width = array<i64: 1, 1, 0, 0, 4, 4>, pad_value = -1.0 : f32, pad_mode = "reflect"} : (tensor<2x3x5xf32>) -> tensor<4x3x13xf32>
  %7 = relay.take %a {indices = dense<[[0, -1], [2, 1]]> : tensor<2x2xi64>, axis = 1 : i64} : (tensor<2x3x5xf32>) -> tensor<2x2x2x5xf32>
  %8 = relay.take %a {indices = dense<4> : tensor<i64>, axis = -1 : i64} : (tensor<2x3x5xf32>) -> tensor<2x3xf32>
  %9 = relay.nn.avg_pool2d %p {pool_size = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 2>, ceil_mode = true, count_include_pad = true} : (tensor<1x2x8x8xf32>) -> tensor<1x2x5x4xf32>
  %10 = relay.nn.max_pool2d %p {pool_size = array<i64: 2, 2>, dilation = array<i64: 3, 3>, ceil_mode = false} : (tensor<1x2x8x8xf32>) -> tensor<1x2x5x5xf32>
  func.return %0 : tensor<2x3x4xf32>
}

// int64 and bool tensors: token ids into an embedding, a mask made float, comparisons,
// logic, where and int64 arithmetic.
// CHECK-LABEL: func.func @element_types
// CHECK-SAME:      (%[[IDS:.*]]: tensor<1x4xi64>, %[[MASK:.*]]: tensor<1x4xi64>, %[[E:.*]]: tensor<50x8xf32>)
// CHECK-NEXT:    %[[EMB:.*]] = relay.take %[[E]], %[[IDS]] {axis = 0 : i64} : (tensor<50x8xf32>, tensor<1x4xi64>) -> tensor<1x4x8xf32>
// CHECK-NEXT:    %[[MF:.*]] = relay.cast %[[MASK]] {dtype = "float32"} : (tensor<1x4xi64>) -> tensor<1x4xf32>
// CHECK-NEXT:    %[[ZERO:.*]] = relay.constant {value = dense<0> : tensor<1xi64>} : tensor<1xi64>
// CHECK-NEXT:    %[[EQ:.*]] = relay.equal %[[MASK]], %[[ZERO]] : (tensor<1x4xi64>, tensor<1xi64>) -> tensor<1x4xi1>
// CHECK-NEXT:    %[[NE:.*]] = relay.not_equal %[[IDS]], %[[ZERO]] : (tensor<1x4xi64>, tensor<1xi64>) -> tensor<1x4xi1>
// CHECK-NEXT:    %[[LT:.*]] = relay.less %[[IDS]], %[[MASK]] : (tensor<1x4xi64>, tensor<1x4xi64>) -> tensor<1x4xi1>
// CHECK-NEXT:    %[[LE:.*]] = relay.less_equal %[[MF]], %[[MF]] : (tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<1x4xi1>
// CHECK-NEXT:    %[[GT:.*]] = relay.greater %[[IDS]], %[[ZERO]] : (tensor<1x4xi64>, tensor<1xi64>) -> tensor<1x4xi1>
// CHECK-NEXT:    %[[GE:.*]] = relay.greater_equal %[[IDS]], %[[ZERO]] : (tensor<1x4xi64>, tensor<1xi64>) -> tensor<1x4xi1>
// CHECK-NEXT:    %[[NOT:.*]] = relay.logical_not %[[EQ]] : tensor<1x4xi1>
// CHECK-NEXT:    %[[AND:.*]] = relay.logical_and %[[NOT]], %[[LT]] : (tensor<1x4xi1>, tensor<1x4xi1>) -> tensor<1x4xi1>
// CHECK-NEXT:    %[[OR:.*]] = relay.logical_or %[[AND]], %[[LE]] : (tensor<1x4xi1>, tensor<1x4xi1>) -> tensor<1x4xi1>
// CHECK-NEXT:    %[[NEG:.*]] = relay.constant {value = dense<-1.000000e+04> : tensor<1xf32>} : tensor<1xf32>
// CHECK-NEXT:    %[[W:.*]] = relay.where %[[OR]], %[[MF]], %[[NEG]] : (tensor<1x4xi1>, tensor<1x4xf32>, tensor<1xf32>) -> tensor<1x4xf32>
// CHECK-NEXT:    %[[SUB:.*]] = relay.subtract %[[IDS]], %[[MASK]] : (tensor<1x4xi64>, tensor<1x4xi64>) -> tensor<1x4xi64>
// CHECK-NEXT:    %[[B:.*]] = relay.cast %[[GT]] {dtype = "int64"} : (tensor<1x4xi1>) -> tensor<1x4xi64>
// GENERIC-LABEL: sym_name = "element_types"
// GENERIC:         "relay.take"(%{{.*}}, %{{.*}}) <{axis = 0 : i64}> : (tensor<50x8xf32>, tensor<1x4xi64>) -> tensor<1x4x8xf32>
// GENERIC:         "relay.cast"(%{{.*}}) <{dtype = "float32"}> : (tensor<1x4xi64>) -> tensor<1x4xf32>
// GENERIC:         "relay.where"(%{{.*}}, %{{.*}}, %{{.*}}) : (tensor<1x4xi1>, tensor<1x4xf32>, tensor<1xf32>) -> tensor<1x4xf32>
func.func @element_types(%ids: tensor<1x4xi64>, %mask: tensor<1x4xi64>, %e: tensor<50x8xf32>) -> tensor<1x4x8xf32> {
  %0 = relay.take %e, %ids {axis = 0 : i64} : (tensor<50x8xf32>, tensor<1x4xi64>) -> tensor<1x4x8xf32>
  %1 = relay.cast %mask {dtype = "float32"} : (tensor<1x4xi64>) -> tensor<1x4xf32>
  %2 = relay.constant {value = dense<0> : tensor<1xi64>} : tensor<1xi64>
  %3 = relay.equal %mask, %2 : (tensor<1x4xi64>, tensor<1xi64>) -> tensor<1x4xi1>
  %4 = relay.not_equal %ids, %2 : (tensor<1x4xi64>, tensor<1xi64>) -> tensor<1x4xi1>
  %5 = relay.less %ids, %mask : (tensor<1x4xi64>, tensor<1x4xi64>) -> tensor<1x4xi1>
  %6 = relay.less_equal %1, %1 : (tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<1x4xi1>
  %7 = relay.greater %ids, %2 : (tensor<1x4xi64>, tensor<1xi64>) -> tensor<1x4xi1>
  %8 = relay.greater_equal %ids, %2 : (tensor<1x4xi64>, tensor<1xi64>) -> tensor<1x4xi1>
  %9 = relay.logical_not %3 : tensor<1x4xi1>
  %10 = relay.logical_and %9, %5 : (tensor<1x4xi1>, tensor<1x4xi1>) -> tensor<1x4xi1>
  %11 = relay.logical_or %10, %6 : (tensor<1x4xi1>, tensor<1x4xi1>) -> tensor<1x4xi1>
  %12 = relay.constant {value = dense<-1.0e4> : tensor<1xf32>} : tensor<1xf32>
  %13 = relay.where %11, %1, %12 : (tensor<1x4xi1>, tensor<1x4xf32>, tensor<1xf32>) -> tensor<1x4xf32>
  %14 = relay.subtract %ids, %mask : (tensor<1x4xi64>, tensor<1x4xi64>) -> tensor<1x4xi64>
  %15 = relay.cast %7 {dtype = "int64"} : (tensor<1x4xi1>) -> tensor<1x4xi64>
  func.return %0 : tensor<1x4x8xf32>
}
