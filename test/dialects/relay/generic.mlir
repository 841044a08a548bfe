// RUN: opt-tool %s | filecheck %s

// DESIGN.md §2's attribute-type contract: generic-form input spells integer lists as
// `array<i64: ...>`, integer scalars as `1 : i64`, a_min/a_max as `0.0 : f32`, flags as
// `true`/`false` and a constant's value as `dense<...>`, in the attribute dictionary `{...}`
// (which xDSL's generic parser turns into properties) or as properties `<{...}>`.
// Defaults: bias_add axis 1, softmax axis -1, all axes for an absent reduction axis, every
// size-1 axis for an absent squeeze axis.

// CHECK-LABEL: func.func @as_attributes
// CHECK-SAME:      (%[[X:.*]]: tensor<1x4x6x6xf32>, %[[W:.*]]: tensor<4x1x3x3xf32>, %[[B:.*]]: tensor<4xf32>)
// CHECK-NEXT:    %[[CONV:.*]] = relay.nn.conv2d %[[X]], %[[W]] {strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 4 : i64} : (tensor<1x4x6x6xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x6x6xf32>
// CHECK-NEXT:    %[[BIAS:.*]] = relay.nn.bias_add %[[CONV]], %[[B]] : (tensor<1x4x6x6xf32>, tensor<4xf32>) -> tensor<1x4x6x6xf32>
// CHECK-NEXT:    %[[CLIP:.*]] = relay.clip %[[BIAS]] {a_min = 0.000000e+00 : f32, a_max = 6.000000e+00 : f32} : tensor<1x4x6x6xf32>
// CHECK-NEXT:    %[[POOL:.*]] = relay.nn.avg_pool2d %[[CLIP]] {pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>} : (tensor<1x4x6x6xf32>) -> tensor<1x4x3x3xf32>
// CHECK-NEXT:    %[[MEAN:.*]] = relay.mean %[[POOL]] {axis = array<i64: 2, 3>, keepdims = true} : (tensor<1x4x3x3xf32>) -> tensor<1x4x1x1xf32>
// CHECK-NEXT:    %[[SQ:.*]] = relay.squeeze %[[MEAN]] : (tensor<1x4x1x1xf32>) -> tensor<4xf32>
// CHECK-NEXT:    %[[SQ2:.*]] = relay.squeeze %[[MEAN]] {axis = array<i64: 2, 3>} : (tensor<1x4x1x1xf32>) -> tensor<1x4xf32>
// CHECK-NEXT:    %[[SM:.*]] = relay.nn.softmax %[[SQ2]] : (tensor<1x4xf32>) -> tensor<1x4xf32>
// CHECK-NEXT:    %[[ALL:.*]] = relay.sum %[[SM]] : (tensor<1x4xf32>) -> tensor<f32>
// CHECK-NEXT:    %[[K:.*]] = relay.constant {value = dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<4xf32>} : tensor<4xf32>
// CHECK-NEXT:    %[[CAT:.*]] = relay.concatenate %[[SQ]], %[[K]] {axis = 0 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<8xf32>
// CHECK-NEXT:    %[[ED:.*]] = relay.expand_dims %[[CAT]] {axis = 0 : i64, num_newaxis = 2 : i64} : (tensor<8xf32>) -> tensor<1x1x8xf32>
// CHECK-NEXT:    %[[T:.*]] = relay.transpose %[[ED]] {axes = array<i64: 2, 0, 1>} : (tensor<1x1x8xf32>) -> tensor<8x1x1xf32>
// CHECK-NEXT:    %[[SL:.*]] = relay.strided_slice %[[T]] {begin = array<i64: 6>, end = array<i64: 0>, strides = array<i64: -2>} : (tensor<8x1x1xf32>) -> tensor<3x1x1xf32>
// CHECK-NEXT:    %[[ON:.*]] = relay.on_device %[[SL]] {se_scope = #relay.se_scope<device = opencl, id = 1, target = "opencl", memory = "global">, constrain_body = true, constrain_result = false} : tensor<3x1x1xf32>
// CHECK-NEXT:    %[[CP:.*]] = relay.device_copy %[[ON]] {src_se_scope = #relay.se_scope<device = opencl>, dst_se_scope = #relay.se_scope<>} : tensor<3x1x1xf32>
// CHECK-NEXT:    %[[MX:.*]] = relay.max %[[CP]] {axis = array<i64: -3>, keepdims = false} : (tensor<3x1x1xf32>) -> tensor<1x1xf32>
// CHECK-NEXT:    %[[FU:.*]] = relay.fused(%[[MX]]) {kernel_name = "fused_exp"} : (tensor<1x1xf32>) -> tensor<1x1xf32> {
// CHECK:           relay.yield
func.func @as_attributes(%x: tensor<1x4x6x6xf32>, %w: tensor<4x1x3x3xf32>, %b: tensor<4xf32>) -> (tensor<f32>, tensor<1x1xf32>) {
  %0 = "relay.nn.conv2d"(%x, %w) {strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 4 : i64} : (tensor<1x4x6x6xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x6x6xf32>
  %1 = "relay.nn.bias_add"(%0, %b) : (tensor<1x4x6x6xf32>, tensor<4xf32>) -> tensor<1x4x6x6xf32>
  %2 = "relay.clip"(%1) {a_min = 0.0 : f32, a_max = 6.0 : f32} : (tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32>
  %3 = "relay.nn.avg_pool2d"(%2) {pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>} : (tensor<1x4x6x6xf32>) -> tensor<1x4x3x3xf32>
  %4 = "relay.mean"(%3) {axis = array<i64: 2, 3>, keepdims = true} : (tensor<1x4x3x3xf32>) -> tensor<1x4x1x1xf32>
  %5 = "relay.squeeze"(%4) : (tensor<1x4x1x1xf32>) -> tensor<4xf32>
  %6 = "relay.squeeze"(%4) {axis = array<i64: 2, 3>} : (tensor<1x4x1x1xf32>) -> tensor<1x4xf32>
  %7 = "relay.nn.softmax"(%6) : (tensor<1x4xf32>) -> tensor<1x4xf32>
  %8 = "relay.sum"(%7) : (tensor<1x4xf32>) -> tensor<f32>
  %9 = "relay.constant"() {value = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>} : () -> tensor<4xf32>
  %10 = "relay.concatenate"(%5, %9) {axis = 0 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<8xf32>
  %11 = "relay.expand_dims"(%10) {axis = 0 : i64, num_newaxis = 2 : i64} : (tensor<8xf32>) -> tensor<1x1x8xf32>
  %12 = "relay.transpose"(%11) {axes = array<i64: 2, 0, 1>} : (tensor<1x1x8xf32>) -> tensor<8x1x1xf32>
  %13 = "relay.strided_slice"(%12) {begin = array<i64: 6>, end = array<i64: 0>, strides = array<i64: -2>} : (tensor<8x1x1xf32>) -> tensor<3x1x1xf32>
  %14 = "relay.on_device"(%13) {se_scope = #relay.se_scope<device = opencl, id = 1, target = "opencl", memory = "global">, constrain_body = true, constrain_result = false} : (tensor<3x1x1xf32>) -> tensor<3x1x1xf32>
  %15 = "relay.device_copy"(%14) {src_se_scope = #relay.se_scope<device = opencl>, dst_se_scope = #relay.se_scope<>} : (tensor<3x1x1xf32>) -> tensor<3x1x1xf32>
  %16 = "relay.max"(%15) {axis = array<i64: -3>, keepdims = false} : (tensor<3x1x1xf32>) -> tensor<1x1xf32>
  %17 = "relay.fused"(%16) ({
  ^bb0(%a: tensor<1x1xf32>):
    %e = "relay.exp"(%a) : (tensor<1x1xf32>) -> tensor<1x1xf32>
    "relay.yield"(%e) : (tensor<1x1xf32>) -> ()
  }) {kernel_name = "fused_exp"} : (tensor<1x1xf32>) -> tensor<1x1xf32>
  func.return %8, %17 : tensor<f32>, tensor<1x1xf32>
}

// CHECK-LABEL: func.func @as_properties
// CHECK-NEXT:    %{{.*}} = relay.nn.softmax %{{.*}} {axis = 0 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %{{.*}} = relay.min %{{.*}} {axis = array<i64: 1>, keepdims = true} : (tensor<2x3xf32>) -> tensor<2x1xf32>
// CHECK-NEXT:    %{{.*}} = relay.nn.max_pool2d %{{.*}} {pool_size = array<i64: 1, 3>, strides = array<i64: 1, 1>, padding = array<i64: 0, 1, 0, 1>} : (tensor<1x1x2x3xf32>) -> tensor<1x1x2x3xf32>
// CHECK-NEXT:    %{{.*}} = relay.launch @k(%{{.*}}) {se_scope = #relay.se_scope<device = cpu>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
func.func @as_properties(%x: tensor<2x3xf32>, %y: tensor<1x1x2x3xf32>) -> (tensor<2x3xf32>, tensor<2x1xf32>, tensor<1x1x2x3xf32>, tensor<2x3xf32>) {
  %0 = "relay.nn.softmax"(%x) <{axis = 0 : i64}> : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = "relay.min"(%x) <{axis = array<i64: 1>, keepdims = true}> : (tensor<2x3xf32>) -> tensor<2x1xf32>
  %2 = "relay.nn.max_pool2d"(%y) <{pool_size = array<i64: 1, 3>, strides = array<i64: 1, 1>, padding = array<i64: 0, 1, 0, 1>}> : (tensor<1x1x2x3xf32>) -> tensor<1x1x2x3xf32>
  %3 = "relay.launch"(%x) <{callee = @k, se_scope = #relay.se_scope<device = cpu>}> : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %0, %1, %2, %3 : tensor<2x3xf32>, tensor<2x1xf32>, tensor<1x1x2x3xf32>, tensor<2x3xf32>
}
func.func @k(%in0: memref<2x3xf32>, %out0: memref<2x3xf32>) {
  func.return
}
