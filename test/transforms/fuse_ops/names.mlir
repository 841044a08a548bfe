// RUN: opt-tool %s --split-input-file -p fuse-ops | filecheck %s

// kernel_name: `fused_` + the group's op names in program order (without `relay.`, dots as
// `_`), cut to 80 characters; a name taken by an earlier group of the module (in module order)
// gets `_1`, `_2`, ...

// CHECK-LABEL: func.func @first
// CHECK:         kernel_name = "fused_exp"
// CHECK-LABEL: func.func @second
// CHECK:         kernel_name = "fused_exp_1"
// CHECK:         kernel_name = "fused_nn_softmax"
// CHECK:         kernel_name = "fused_exp_2"
// CHECK-LABEL: func.func @third
// CHECK:         kernel_name = "fused_nn_softmax_1"
func.func @first(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.exp %a : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
func.func @second(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.exp %a : tensor<4xf32>
  %1 = relay.nn.softmax %0 : (tensor<4xf32>) -> tensor<4xf32>
  %2 = relay.exp %1 : tensor<4xf32>
  func.return %2 : tensor<4xf32>
}
func.func @third(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.nn.softmax %a : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

// A long name is cut to 80 characters; two groups whose names differ only after the cut get
// the same cut name, made unique with a suffix.

// CHECK-LABEL: func.func @long
// CHECK:         kernel_name = "fused_sigmoid_sigmoid_sigmoid_sigmoid_sigmoid_sigmoid_sigmoid_sigmoid_sigmoid_si"
// CHECK-LABEL: func.func @long_again
// CHECK:         kernel_name = "fused_sigmoid_sigmoid_sigmoid_sigmoid_sigmoid_sigmoid_sigmoid_sigmoid_sigmoid_si_1"
func.func @long(%0: tensor<4xf32>) -> tensor<4xf32> {
  %1 = relay.sigmoid %0 : tensor<4xf32>
  %2 = relay.sigmoid %1 : tensor<4xf32>
  %3 = relay.sigmoid %2 : tensor<4xf32>
  %4 = relay.sigmoid %3 : tensor<4xf32>
  %5 = relay.sigmoid %4 : tensor<4xf32>
  %6 = relay.sigmoid %5 : tensor<4xf32>
  %7 = relay.sigmoid %6 : tensor<4xf32>
  %8 = relay.sigmoid %7 : tensor<4xf32>
  %9 = relay.sigmoid %8 : tensor<4xf32>
  %10 = relay.sigmoid %9 : tensor<4xf32>
  %11 = relay.sigmoid %10 : tensor<4xf32>
  %12 = relay.sigmoid %11 : tensor<4xf32>
  func.return %12 : tensor<4xf32>
}
func.func @long_again(%0: tensor<4xf32>) -> tensor<4xf32> {
  %1 = relay.sigmoid %0 : tensor<4xf32>
  %2 = relay.sigmoid %1 : tensor<4xf32>
  %3 = relay.sigmoid %2 : tensor<4xf32>
  %4 = relay.sigmoid %3 : tensor<4xf32>
  %5 = relay.sigmoid %4 : tensor<4xf32>
  %6 = relay.sigmoid %5 : tensor<4xf32>
  %7 = relay.sigmoid %6 : tensor<4xf32>
  %8 = relay.sigmoid %7 : tensor<4xf32>
  %9 = relay.sigmoid %8 : tensor<4xf32>
  %10 = relay.sigmoid %9 : tensor<4xf32>
  %11 = relay.sigmoid %10 : tensor<4xf32>
  %12 = relay.tanh %11 : tensor<4xf32>
  func.return %12 : tensor<4xf32>
}

// -----

// A name a function of the module already has is taken too (lowering turns each group into a
// function named after its kernel).

// CHECK-LABEL: func.func @fused_exp
// CHECK-LABEL: func.func @user
// CHECK:         kernel_name = "fused_exp_1"
func.func @fused_exp(%a: tensor<4xf32>) -> tensor<4xf32> {
  func.return %a : tensor<4xf32>
}
func.func @user(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.exp %a : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
