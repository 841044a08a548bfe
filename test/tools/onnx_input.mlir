// An .onnx input is imported (initializers bound as constants); every pass and target works on it.
// RUN: %python %S/../Inputs/onnx/make_model.py %t.onnx
// RUN: opt-tool %t.onnx | filecheck %s
// RUN: opt-tool %t.onnx --elide-constants | filecheck %s --check-prefix=ELIDED
// RUN: opt-tool %t.onnx -p 'plan-devices{targets=c},fuse-ops,convert-relay-to-loops' -t c | filecheck %s --check-prefix=C
// RUN: %python %S/../Inputs/onnx/make_model.py %t.bad.onnx bad
// RUN: not opt-tool %t.bad.onnx 2>&1 | filecheck %s --check-prefix=BAD
// RUN: %python %S/../Inputs/onnx/make_model.py %t.dynamic.onnx dynamic
// RUN: opt-tool %t.dynamic.onnx 2>&1 | filecheck %s --check-prefix=DYNAMIC
// RUN: opt-tool %t.dynamic.onnx --input-shape input.1=2x1x5x5 | filecheck %s --check-prefix=FIXED
// RUN: not opt-tool %t.dynamic.onnx --input-shape input.1=2,1 2>&1 | filecheck %s --check-prefix=BAD-FLAG

// CHECK:       func.func @main(%input.1: tensor<1x1x5x5xf32>) -> tensor<1x4x5x5xf32> {
// CHECK-NEXT:    %conv.weight = relay.constant {value = dense<{{\[\[\[\[}}-1.000000e+00
// CHECK-NEXT:    %[[CONV:.*]] = relay.nn.conv2d %input.1, %conv.weight {{.*}}padding = array<i64: 1, 1, 1, 1>
// CHECK-NEXT:    %[[RELU:.*]] = relay.nn.relu %[[CONV]] : tensor<1x4x5x5xf32>
// CHECK-NEXT:    func.return %[[RELU]]

// ELIDED:      %conv.weight = relay.constant {value = dense<"..."> /* elided */ : tensor<4x1x3x3xf32>}

// C:           void fused_nn_conv2d_nn_relu(const float *restrict

// BAD:         opt-tool: error: ONNX node Hardmax 'act': op Hardmax is not supported by the importer
// BAD-NOT:     Traceback

// DYNAMIC:     opt-tool: warning: input 'input.1' has a dynamic shape [N, 1, 5, 5]; its symbolic dims are taken as 1, so it is imported as [1, 1, 5, 5]: give the shape {{.*}} (opt-tool: --input-shape input.1=1x1x5x5)
// DYNAMIC:     func.func @main(%input.1: tensor<1x1x5x5xf32>) -> tensor<1x4x5x5xf32>

// FIXED:       func.func @main(%input.1: tensor<2x1x5x5xf32>) -> tensor<2x4x5x5xf32>

// BAD-FLAG:    opt-tool: error: --input-shape expects NAME=DIMS such as input.1=1x3x224x224, but got 'input.1=2,1'
