// RUN: not opt-tool %s --split-input-file 2>&1 | filecheck %s
// RUN: opt-tool %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s --check-prefix=DIAG

// Errors in a chunk of `--split-input-file` report lines of the whole file. Without the
// diagnostics flags the first error stops the tool (exit 1, no traceback); with them every
// chunk is reported.

func.func @fine(%a: tensor<2xf32>) -> tensor<2xf32> {
  %0 = relay.exp %a : tensor<2xf32>
  func.return %0 : tensor<2xf32>
}

// -----

func.func @parse_error(%a: tensor<2xf32>) -> tensor<2xf32> {
  %0 = relay.exp %a : tensor<2xf32
  func.return %0 : tensor<2xf32>
}

// -----

func.func @verify_error(%a: tensor<2x3xf32>) -> tensor<2xf32> {
  %0 = relay.sum %a {axis = array<i64: 0>} : (tensor<2x3xf32>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}

// -----

func.func @custom_syntax_error(%a: tensor<2xf32>) -> tensor<2xf32> {
  %0 = relay.exp %a : (tensor<2xf32>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}

// CHECK:      opt-tool: error: {{.*}}split_input_file.mlir:17:3
// CHECK-NEXT:   func.return %0 : tensor<2xf32>
// CHECK-NEXT:   ^^^^^^^^^^^
// CHECK-NEXT:   Expected '>' after builtin parameter list
// CHECK-NOT:  Traceback

// DIAG:      func.func @fine
// DIAG:      split_input_file.mlir:17:3
// DIAG:      Expected '>' after builtin parameter list
// DIAG:      split_input_file.mlir:23:3: expected result type tensor<3xf32> for 'relay.sum', but found tensor<2xf32>
// DIAG:      split_input_file.mlir:30:3
// DIAG-NEXT:   %0 = relay.exp %a : (tensor<2xf32>) -> tensor<2xf32>
// DIAG-NEXT:   ^^
// DIAG-NEXT:   (tensor<2xf32>) -> tensor<2xf32> should be of base attribute tensor
