// The explain transcript of examples/three_scopes.mlir is examples/three_scopes.remarks, word
// for word (run from examples/, as its header says, so locations read three_scopes.mlir:L:C);
// and the plan it explains: %h on cpu:1, %e on cpu:0 with a host-to-host copy between them,
// the product on opencl:1.

// RUN: cd %S/../../examples && opt-tool three_scopes.mlir -p 'plan-devices{targets=c,opencl default-device=opencl explain=true}' 2>&1 >/dev/null | diff three_scopes.remarks -
// RUN: opt-tool %S/../../examples/three_scopes.mlir -p 'plan-devices{targets=c,opencl default-device=opencl explain=true}' 2>/dev/null | filecheck %s

// CHECK:      func.func @main(%h: tensor<8xf32> {relay.se_scope = #relay.se_scope<device = cpu, id = 1, {{.*}}}, %w: tensor<8xf32> {relay.se_scope = #relay.se_scope<device = opencl, id = 1,
// CHECK-NEXT:   %[[H0:.*]] = relay.device_copy %h {src_se_scope = #relay.se_scope<device = cpu, id = 1, {{.*}}>, dst_se_scope = #relay.se_scope<device = cpu, id = 0, {{.*}}>}
// CHECK-NEXT:   %e = relay.exp %[[H0]] {se_scope = #relay.se_scope<device = cpu, id = 0,
// CHECK-NEXT:   %[[E1:.*]] = relay.device_copy %e {src_se_scope = #relay.se_scope<device = cpu, id = 0, {{.*}}>, dst_se_scope = #relay.se_scope<device = opencl, id = 1, {{.*}}>}
// CHECK-NEXT:   %r = relay.multiply %[[E1]], %w {se_scope = #relay.se_scope<device = opencl, id = 1,
