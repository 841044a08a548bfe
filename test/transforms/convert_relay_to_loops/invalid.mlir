// RUN: opt-tool %s -p convert-relay-to-loops --split-input-file --verify-diagnostics | filecheck %s

// The pass lowers only fuse-ops' output; anything else is rejected before the module changes.

func.func @unfused(%a: tensor<2xf32>) -> tensor<2xf32> {
  %0 = relay.exp %a : tensor<2xf32>
  func.return %0 : tensor<2xf32>
}
// CHECK: convert-relay-to-loops expects every primitive op inside a relay.fused group, but found 'relay.exp' outside one (at {{.*}}invalid.mlir:6:3); run fuse-ops first

// -----

func.func @no_kernel_name(%a: tensor<2xf32>) -> tensor<2xf32> {
  %0 = relay.fused(%a) {se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">} : (tensor<2xf32>) -> tensor<2xf32> {
  ^bb0(%x: tensor<2xf32>):
    %1 = relay.exp %x : tensor<2xf32>
    relay.yield %1 : tensor<2xf32>
  }
  func.return %0 : tensor<2xf32>
}
// CHECK: convert-relay-to-loops expects relay.fused to carry 'kernel_name' (at {{.*}}invalid.mlir:14:3), but it has none; run plan-devices and fuse-ops first

// -----

func.func @no_scope(%a: tensor<2xf32>) -> tensor<2xf32> {
  %0 = relay.fused(%a) {kernel_name = "fused_exp"} : (tensor<2xf32>) -> tensor<2xf32> {
  ^bb0(%x: tensor<2xf32>):
    %1 = relay.exp %x : tensor<2xf32>
    relay.yield %1 : tensor<2xf32>
  }
  func.return %0 : tensor<2xf32>
}
// CHECK: convert-relay-to-loops expects relay.fused to carry 'se_scope' (at {{.*}}invalid.mlir:26:3), but it has none; run plan-devices and fuse-ops first

// -----

func.func @on_device_left(%a: tensor<2xf32>) -> tensor<2xf32> {
  %0 = relay.on_device %a {se_scope = #relay.se_scope<device = cpu>} : tensor<2xf32>
  func.return %0 : tensor<2xf32>
}
// CHECK: convert-relay-to-loops expects no relay.on_device (at {{.*}}invalid.mlir:38:3); run plan-devices first

// -----

func.func @fused_exp(%a: tensor<2xf32>) -> tensor<2xf32> {
  %0 = relay.fused(%a) {kernel_name = "fused_exp", se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">} : (tensor<2xf32>) -> tensor<2xf32> {
  ^bb0(%x: tensor<2xf32>):
    %1 = relay.exp %x : tensor<2xf32>
    relay.yield %1 : tensor<2xf32>
  }
  func.return %0 : tensor<2xf32>
}
// CHECK: convert-relay-to-loops needs a unique kernel_name, but @fused_exp (at {{.*}}invalid.mlir:46:3) is already a function or another group's kernel; rename the group

// -----

func.func @non_splat_constant(%a: tensor<2xf32>) -> tensor<2xf32> {
  %0 = relay.fused(%a) {kernel_name = "fused_add", se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">} : (tensor<2xf32>) -> tensor<2xf32> {
  ^bb0(%x: tensor<2xf32>):
    %k = relay.constant {value = dense<[1.0, 2.0]> : tensor<2xf32>} : tensor<2xf32>
    %1 = relay.add %x, %k : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    relay.yield %1 : tensor<2xf32>
  }
  func.return %0 : tensor<2xf32>
}
// CHECK: convert-relay-to-loops inlines only splat constants into a kernel, but found a non-splat relay.constant of type tensor<2xf32> inside a relay.fused group (at {{.*}}invalid.mlir:60:5); keep it outside the group, as fuse-ops does, so that it becomes a kernel input

// -----

func.func @copy_inside(%a: tensor<2xf32>) -> tensor<2xf32> {
  %0 = relay.fused(%a) {kernel_name = "fused_copy", se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">} : (tensor<2xf32>) -> tensor<2xf32> {
  ^bb0(%x: tensor<2xf32>):
    %1 = relay.device_copy %x {src_se_scope = #relay.se_scope<device = cpu>, dst_se_scope = #relay.se_scope<device = opencl>} : tensor<2xf32>
    relay.yield %1 : tensor<2xf32>
  }
  func.return %0 : tensor<2xf32>
}
// CHECK: convert-relay-to-loops expects only primitive relay ops inside relay.fused, but found 'relay.device_copy' (at {{.*}}invalid.mlir:73:5); run fuse-ops on a module before lowering it
