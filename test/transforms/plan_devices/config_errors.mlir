// RUN: opt-tool %s --split-input-file --verify-diagnostics -p 'plan-devices{targets=c,opencl}' | filecheck %s

// Every scope in the input is checked against the compilation config: a device type with no
// target, or a target other than the one configured for its device, is an error at the op.

func.func @device_without_target(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.on_device %a {se_scope = #relay.se_scope<device = cuda>} : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
// CHECK: se_scope of 'relay.on_device' at {{.*}}config_errors.mlir:7:3: scope cuda:? is on device type cuda, which has no target (configured: c, opencl); add the target to plan-devices' targets option or change the scope
// CHECK: "relay.on_device"(%a)
// CHECK-NEXT: ^^^^^^^^^^^^^^^^^^^^^^-

// -----

func.func @other_target(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.exp %a {se_scope = #relay.se_scope<device = cpu, target = "llvm">} : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
// CHECK: se_scope of 'relay.exp' at {{.*}}config_errors.mlir:17:3: scope cpu:? "llvm" names target "llvm", but the target configured for cpu is "c"; add the target to plan-devices' targets option or change the scope

// -----

func.func @argument_attribute(%a: tensor<4xf32> {relay.se_scope = #relay.se_scope<device = vulkan>}) -> tensor<4xf32> {
  func.return %a : tensor<4xf32>
}
// CHECK: relay.se_scope of argument %a of @argument_attribute ({{.*}}config_errors.mlir:24:1): scope vulkan:? is on device type vulkan, which has no target (configured: c, opencl)

// -----

func.func @copy_destination(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.device_copy %a {src_se_scope = #relay.se_scope<device = cpu>, dst_se_scope = #relay.se_scope<device = cuda, id = 1>} : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
// CHECK: dst_se_scope of 'relay.device_copy' at {{.*}}config_errors.mlir:32:3: scope cuda:1 is on device type cuda, which has no target (configured: c, opencl)

// -----

func.func @target_of_unknown_kind(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.exp %a {se_scope = #relay.se_scope<target = "cuda">} : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
// CHECK: se_scope of 'relay.exp' at {{.*}}config_errors.mlir:40:3: scope ?:? "cuda" names target "cuda", but the target configured for cuda is "none"; add the target to plan-devices' targets option or change the scope
