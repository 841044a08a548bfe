// RUN: opt-tool %s -p fuse-layer-norm --split-input-file | filecheck %s

// The transformer's norm (bench/models.py): mean, subtract, square, mean, + eps, rsqrt,
// multiply, * gamma, + beta becomes one relay.nn.layer_norm; the pattern's ops go.

// CHECK-LABEL: func.func @rsqrt_form
// CHECK-SAME:    (%[[X:.*]]: tensor<4x8xf32>, %[[G:.*]]: tensor<8xf32>, %[[B:.*]]: tensor<8xf32>)
// CHECK-NEXT:    %[[N:.*]] = relay.nn.layer_norm %[[X]], %[[G]], %[[B]] {axis = 1 : i64, epsilon = 1.000000e-05 : f32}
// CHECK-NEXT:    func.return %[[N]]
func.func @rsqrt_form(%x: tensor<4x8xf32>, %gamma: tensor<8xf32>, %beta: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = relay.mean %x {axis = array<i64: -1>, keepdims = true} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %1 = relay.subtract %x, %0 : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %2 = relay.multiply %1, %1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %3 = relay.mean %2 {axis = array<i64: -1>, keepdims = true} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %4 = relay.constant {value = dense<1.0e-05> : tensor<f32>} : tensor<f32>
  %5 = relay.add %3, %4 : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %6 = relay.rsqrt %5 : tensor<4x1xf32>
  %7 = relay.multiply %1, %6 : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %8 = relay.multiply %7, %gamma : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %9 = relay.add %8, %beta : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  func.return %9 : tensor<4x8xf32>
}

// -----

// ONNX's decomposition (bench/models.py's transformer_onnx): divide by sqrt, operands of the
// adds and multiplies commuted, two trailing axes normalised, eps of shape 1x1x1.

// CHECK-LABEL: func.func @sqrt_form
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3x5xf32>, %[[G:.*]]: tensor<3x5xf32>, %[[B:.*]]: tensor<3x5xf32>)
// CHECK-NEXT:    %[[N:.*]] = relay.nn.layer_norm %[[X]], %[[G]], %[[B]] {axis = 1 : i64, epsilon = 1.000000e-03 : f32}
// CHECK-NEXT:    func.return %[[N]]
func.func @sqrt_form(%x: tensor<2x3x5xf32>, %gamma: tensor<3x5xf32>, %beta: tensor<3x5xf32>) -> tensor<2x3x5xf32> {
  %0 = relay.mean %x {axis = array<i64: 2, 1>, keepdims = true} : (tensor<2x3x5xf32>) -> tensor<2x1x1xf32>
  %1 = relay.subtract %x, %0 : (tensor<2x3x5xf32>, tensor<2x1x1xf32>) -> tensor<2x3x5xf32>
  %2 = relay.multiply %1, %1 : (tensor<2x3x5xf32>, tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  %3 = relay.mean %2 {axis = array<i64: 1, 2>, keepdims = true} : (tensor<2x3x5xf32>) -> tensor<2x1x1xf32>
  %4 = relay.constant {value = dense<1.0e-03> : tensor<1x1x1xf32>} : tensor<1x1x1xf32>
  %5 = relay.add %4, %3 : (tensor<1x1x1xf32>, tensor<2x1x1xf32>) -> tensor<2x1x1xf32>
  %6 = relay.sqrt %5 : tensor<2x1x1xf32>
  %7 = relay.divide %1, %6 : (tensor<2x3x5xf32>, tensor<2x1x1xf32>) -> tensor<2x3x5xf32>
  %8 = relay.multiply %gamma, %7 : (tensor<3x5xf32>, tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  %9 = relay.add %beta, %8 : (tensor<3x5xf32>, tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  func.return %9 : tensor<2x3x5xf32>
}

// -----

// A value of the pattern used outside it (the centred %1 is returned too): nothing changes.

// CHECK-LABEL: func.func @centred_used_elsewhere
// CHECK-NOT:     relay.nn.layer_norm
// CHECK:         relay.rsqrt
func.func @centred_used_elsewhere(%x: tensor<4x8xf32>, %gamma: tensor<8xf32>, %beta: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %0 = relay.mean %x {axis = array<i64: -1>, keepdims = true} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %1 = relay.subtract %x, %0 : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %2 = relay.multiply %1, %1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %3 = relay.mean %2 {axis = array<i64: -1>, keepdims = true} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %4 = relay.constant {value = dense<1.0e-05> : tensor<f32>} : tensor<f32>
  %5 = relay.add %3, %4 : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %6 = relay.rsqrt %5 : tensor<4x1xf32>
  %7 = relay.multiply %1, %6 : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %8 = relay.multiply %7, %gamma : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %9 = relay.add %8, %beta : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  func.return %9, %1 : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// gamma of another shape than the normalised axes (4x8 where relay.nn.layer_norm takes 8).

// CHECK-LABEL: func.func @gamma_of_the_data_shape
// CHECK-NOT:     relay.nn.layer_norm
func.func @gamma_of_the_data_shape(%x: tensor<4x8xf32>, %gamma: tensor<4x8xf32>, %beta: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = relay.mean %x {axis = array<i64: -1>, keepdims = true} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %1 = relay.subtract %x, %0 : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %2 = relay.multiply %1, %1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %3 = relay.mean %2 {axis = array<i64: -1>, keepdims = true} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %4 = relay.constant {value = dense<1.0e-05> : tensor<f32>} : tensor<f32>
  %5 = relay.add %3, %4 : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %6 = relay.rsqrt %5 : tensor<4x1xf32>
  %7 = relay.multiply %1, %6 : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %8 = relay.multiply %7, %gamma : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %9 = relay.add %8, %beta : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  func.return %9 : tensor<4x8xf32>
}

// -----

// The means reduce different axes (the variance over the leading axis): not a layer norm.

// CHECK-LABEL: func.func @means_over_other_axes
// CHECK-NOT:     relay.nn.layer_norm
func.func @means_over_other_axes(%x: tensor<4x8xf32>, %gamma: tensor<8xf32>, %beta: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = relay.mean %x {axis = array<i64: -1>, keepdims = true} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %1 = relay.subtract %x, %0 : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %2 = relay.multiply %1, %1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %3 = relay.mean %2 {axis = array<i64: 0>, keepdims = true} : (tensor<4x8xf32>) -> tensor<1x8xf32>
  %4 = relay.constant {value = dense<1.0e-05> : tensor<f32>} : tensor<f32>
  %5 = relay.add %3, %4 : (tensor<1x8xf32>, tensor<f32>) -> tensor<1x8xf32>
  %6 = relay.rsqrt %5 : tensor<1x8xf32>
  %7 = relay.multiply %1, %6 : (tensor<4x8xf32>, tensor<1x8xf32>) -> tensor<4x8xf32>
  %8 = relay.multiply %7, %gamma : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %9 = relay.add %8, %beta : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  func.return %9 : tensor<4x8xf32>
}

// -----

// A normalisation over a leading axis only (axis 0 of 2): the axes must be trailing.

// CHECK-LABEL: func.func @leading_axis
// CHECK-NOT:     relay.nn.layer_norm
func.func @leading_axis(%x: tensor<4x8xf32>, %gamma: tensor<4x1xf32>, %beta: tensor<4x1xf32>) -> tensor<4x8xf32> {
  %0 = relay.mean %x {axis = array<i64: 0>, keepdims = true} : (tensor<4x8xf32>) -> tensor<1x8xf32>
  %1 = relay.subtract %x, %0 : (tensor<4x8xf32>, tensor<1x8xf32>) -> tensor<4x8xf32>
  %2 = relay.multiply %1, %1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %3 = relay.mean %2 {axis = array<i64: 0>, keepdims = true} : (tensor<4x8xf32>) -> tensor<1x8xf32>
  %4 = relay.constant {value = dense<1.0e-05> : tensor<f32>} : tensor<f32>
  %5 = relay.add %3, %4 : (tensor<1x8xf32>, tensor<f32>) -> tensor<1x8xf32>
  %6 = relay.rsqrt %5 : tensor<1x8xf32>
  %7 = relay.multiply %1, %6 : (tensor<4x8xf32>, tensor<1x8xf32>) -> tensor<4x8xf32>
  %8 = relay.multiply %7, %gamma : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %9 = relay.add %8, %beta : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  func.return %9 : tensor<4x8xf32>
}

// -----

// The ops on two scopes (the final add pinned to opencl after plan-devices): left alone.

// CHECK-LABEL: func.func @two_scopes
// CHECK-NOT:     relay.nn.layer_norm
func.func @two_scopes(%x: tensor<4x8xf32>, %gamma: tensor<8xf32>, %beta: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = relay.mean %x {axis = array<i64: -1>, keepdims = true} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %1 = relay.subtract %x, %0 : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %2 = relay.multiply %1, %1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %3 = relay.mean %2 {axis = array<i64: -1>, keepdims = true} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %4 = relay.constant {value = dense<1.0e-05> : tensor<f32>} : tensor<f32>
  %5 = relay.add %3, %4 : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %6 = relay.rsqrt %5 : tensor<4x1xf32>
  %7 = relay.multiply %1, %6 : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %8 = relay.multiply %7, %gamma : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %9 = relay.add %8, %beta {se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  func.return %9 : tensor<4x8xf32>
}
