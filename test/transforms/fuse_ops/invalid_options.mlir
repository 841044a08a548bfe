// RUN: not opt-tool %s -p 'fuse-ops{max-depth=0}' 2>&1 | filecheck %s

// CHECK: opt-tool: error: fuse-ops expects max-depth >= 1 (the most ops a group may hold), but found 0; use max-depth=1 to keep every op in a group of its own
func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.exp %a : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
