// RUN: opt-tool %s --split-input-file --print-debuginfo | filecheck %s

// Every op parsed by opt-tool carries the file:line:col of its first token (as in MLIR); in a
// later chunk of --split-input-file, lines count from the top of the whole file.

func.func @first(%a: tensor<2xf32>) -> tensor<2xf32> {
  %0 =
    relay.exp %a : tensor<2xf32>
  func.return %0 : tensor<2xf32>
}
// CHECK-LABEL: func.func @first
// CHECK:         relay.exp {{.*}} loc("{{.*}}locations.mlir":7:3)

// -----

func.func @second(%a: tensor<2xf32>) -> tensor<2xf32> {
  %0 = relay.fused(%a) : (tensor<2xf32>) -> tensor<2xf32> {
  ^bb0(%x: tensor<2xf32>):
    %1 = relay.negative %x : tensor<2xf32>
    relay.yield %1 : tensor<2xf32>
  }
  func.return %0 : tensor<2xf32>
}
// CHECK-LABEL: func.func @second
// CHECK:           relay.negative {{.*}} loc("{{.*}}locations.mlir":19:5)
// CHECK-NEXT:      relay.yield {{.*}} loc("{{.*}}locations.mlir":20:5)
// CHECK-NEXT:    } loc("{{.*}}locations.mlir":17:3)
// CHECK-NEXT:    func.return {{.*}} loc("{{.*}}locations.mlir":22:3)
// CHECK-NEXT:  } loc("{{.*}}locations.mlir":16:1)
