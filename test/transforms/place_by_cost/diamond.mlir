// RUN: opt-tool %s --split-input-file -p 'place-by-cost{targets=c,opencl default-device=cpu costs="%S/Inputs/diamond_costs.json"}' | filecheck %s
// RUN: opt-tool %s --split-input-file -p 'place-by-cost{targets=c,opencl default-device=cpu costs="%S/Inputs/diamond_costs.json"},plan-devices{targets=c,opencl default-device=cpu explain=true}' 2>&1 >/dev/null | filecheck %s --check-prefix=REMARK
// RUN: opt-tool %s --split-input-file -p 'place-by-cost{targets=c default-device=cpu},plan-devices{targets=c default-device=cpu}' | filecheck %s --check-prefix=ONE

// The costs (Inputs/diamond_costs.json): %b and %c 1 ms on cpu and 1.2 ms on opencl. Serially
// all on cpu is best; with opencl's queue working while the host runs %c, %b goes to opencl
// and the run takes about 1.2 ms instead of 2. Its value is read on cpu through one
// relay.on_device of its own scope, where plan-devices puts the copy. With one target, every
// op goes to cpu and nothing is read.

// CHECK-LABEL: func.func @main
// CHECK:       %a = relay.exp %x {relay.cost_placement = "measured on cpu 1.0 us, on opencl 1.0 us; runner-up opencl: {{.*}}", se_scope = #relay.se_scope<device = cpu,
// CHECK-NEXT:  %a_1 = relay.on_device %a {se_scope = #relay.se_scope<device = cpu,
// CHECK-NEXT:  %b = relay.tanh %a_1 {relay.cost_placement = "measured on cpu 1.00 ms, on opencl 1.20 ms; runner-up cpu: the run +{{.*}} predicted{{.*}}", se_scope = #relay.se_scope<device = opencl,
// CHECK-NEXT:  %b_1 = relay.on_device %b {se_scope = #relay.se_scope<device = opencl,
// CHECK-NEXT:  %c = relay.sigmoid %a {{{.*}}se_scope = #relay.se_scope<device = cpu,
// CHECK-NEXT:  %d = relay.add %b_1, %c {{{.*}}se_scope = #relay.se_scope<device = cpu,

// REMARK: remark: %b: opencl:0 — device, id, target and memory from place-by-cost at {{.*}}diamond.mlir:[[# @LINE + 5]]:3 (measured on cpu 1.00 ms, on opencl 1.20 ms; runner-up cpu: the run +{{.*}} predicted, node and copies -220.5 us, of which copies -20.5 us)

// ONE-NOT: device = opencl
func.func @main(%x: tensor<64xf32>) -> tensor<64xf32> {
  %a = "relay.exp"(%x) : (tensor<64xf32>) -> tensor<64xf32>
  %b = "relay.tanh"(%a) : (tensor<64xf32>) -> tensor<64xf32>
  %c = "relay.sigmoid"(%a) : (tensor<64xf32>) -> tensor<64xf32>
  %d = "relay.add"(%b, %c) : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
  func.return %d : tensor<64xf32>
}

// -----

// A user's annotation stays: %e is pinned to cpu by its relay.on_device although opencl is
// 100 times faster for it; its neighbours are free and stay on cpu (copies would cost more).

// CHECK-LABEL: func.func @main
// CHECK:       %e = relay.exp %x {se_scope = #relay.se_scope<device = cpu>}
// CHECK-NEXT:  relay.on_device %e {se_scope = #relay.se_scope<device = cpu>}
// CHECK:       %a = relay.exp %{{.*}} {relay.cost_placement = {{.*}}se_scope = #relay.se_scope<device = cpu,
func.func @main(%x: tensor<64xf32>) -> tensor<64xf32> {
  %e = "relay.exp"(%x) {se_scope = #relay.se_scope<device = cpu>} : (tensor<64xf32>) -> tensor<64xf32>
  %e1 = "relay.on_device"(%e) {se_scope = #relay.se_scope<device = cpu>} : (tensor<64xf32>) -> tensor<64xf32>
  %a = "relay.exp"(%e1) : (tensor<64xf32>) -> tensor<64xf32>
  func.return %a : tensor<64xf32>
}
