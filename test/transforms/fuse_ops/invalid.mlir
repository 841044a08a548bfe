// RUN: opt-tool %s --split-input-file --verify-diagnostics -p fuse-ops | filecheck %s

// fuse-ops handles dataflow functions: primitive ops at the top level of one-block bodies.

func.func @nested(%a: tensor<4xf32>) -> tensor<4xf32> {
  %t = "test.op"() ({
    // CHECK: fuse-ops expects 'relay.exp' at the top level of a function body, but found it inside 'test.op'; move it out of the region, or call a function that holds it
    %0 = relay.exp %a : tensor<4xf32>
    "test.termop"(%0) : (tensor<4xf32>) -> ()
  }) : () -> tensor<4xf32>
  func.return %t : tensor<4xf32>
}

// -----

// CHECK: fuse-ops expects functions of one block, but @blocks has 2; fuse-ops handles dataflow functions only
func.func @blocks(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.exp %a : tensor<4xf32>
  cf.br ^bb1
^bb1:
  func.return %0 : tensor<4xf32>
}
