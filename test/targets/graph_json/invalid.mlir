// RUN: opt-tool %s -t graph-json --verify-diagnostics | filecheck %s

// The executor graph needs a memory plan; the target says which passes make one.
#cpu = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">
func.func private @k(memref<4xf32>, memref<4xf32>)

// CHECK: the graph-json target expects a memory plan, but %x of @main has no storage id; run inline-calls,plan-memory first
func.func @main(%x: tensor<4xf32> {relay.se_scope = #cpu}) -> tensor<4xf32> {
  %0 = relay.launch @k(%x) {se_scope = #cpu} : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
