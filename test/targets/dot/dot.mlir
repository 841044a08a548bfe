// RUN: opt-tool %s --split-input-file -p 'plan-devices{targets=c,opencl default-device=cpu},fuse-ops' -t dot | filecheck %s
// RUN: opt-tool %s --split-input-file -p 'plan-devices{targets=c,opencl default-device=cpu}' -t dot | filecheck %s --check-prefix=PLANNED
// RUN: opt-tool %s --split-input-file -p 'plan-devices{targets=c,opencl default-device=cpu},fuse-ops,convert-relay-to-loops,inline-calls,plan-memory' -t dot | filecheck %s --check-prefix=LOWERED

// A legend row per canonical scope, host first; parameters and results double-bordered;
// a fused group is a cluster named after its kernel; the copy is one bold edge with its
// bytes (2x3 f32) and scope pair.

// CHECK:       subgraph cluster_legend {
// CHECK:         legend0 [label="cpu:0\ntarget c, memory global", fillcolor="[[CPU:#[0-9a-f]+]]"];
// CHECK-NEXT:    legend1 [label="opencl:0\ntarget opencl, memory global", fillcolor="[[CL:#[0-9a-f]+]]"];
// CHECK:       subgraph "cluster_fn_main" {
// CHECK:         [[X:param[0-9]+]] [label="%x\n2x4xf32", fillcolor="[[CL]]", shape=invhouse, peripheries=2];
// CHECK:         subgraph cluster_group{{[0-9]+}} {
// CHECK-NEXT:      label="fused_nn_dense_nn_bias_add"; style="rounded,bold"; color="[[CL]]";
// CHECK-NEXT:      [[DENSE:n[0-9]+]] [label="nn.dense\n2x3xf32", fillcolor="[[CL]]"];
// CHECK-NEXT:      [[BIAS:n[0-9]+]] [label="nn.bias_add\n2x3xf32", fillcolor="[[CL]]"];
// CHECK:           label="fused_nn_relu"; style="rounded,bold"; color="[[CPU]]";
// CHECK-NEXT:      [[RELU:n[0-9]+]] [label="nn.relu\n2x3xf32", fillcolor="[[CPU]]"];
// CHECK:         [[RES:result[0-9]+]] [label="result 0\n2x3xf32", fillcolor="[[CPU]]", shape=house, peripheries=2];
// CHECK:       [[X]] -> [[DENSE]];
// CHECK:       [[BIAS]] -> [[RELU]] [style=bold, penwidth=2.5, label="24 bytes\nopencl:0 → cpu:0"];
// CHECK-NEXT:  [[RELU]] -> [[RES]];

// PLANNED:     [[COPYSRC:n[0-9]+]] [label="nn.bias_add\n2x3xf32"
// PLANNED:     [[RELU:n[0-9]+]] [label="nn.relu\n2x3xf32"
// PLANNED:     [[COPYSRC]] -> [[RELU]] [style=bold, penwidth=2.5, label="24 bytes\nopencl:0 → cpu:0"];

// LOWERED:     label="fused_nn_dense_nn_bias_add"; style="rounded,bold"
// LOWERED-NEXT: [[L1:n[0-9]+]] [label="launch\n2x3xf32"
// LOWERED:     label="fused_nn_relu"; style="rounded,bold"
// LOWERED-NEXT: [[L2:n[0-9]+]] [label="launch\n2x3xf32"
// LOWERED-NOT: cluster_fn_fused
// LOWERED:     [[L1]] -> [[L2]] [style=bold, penwidth=2.5, label="24 bytes\nopencl:0 → cpu:0"];
func.func @main(%x: tensor<2x4xf32>, %w: tensor<3x4xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
  %0 = relay.nn.dense %x, %w : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  %1 = relay.nn.bias_add %0, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %2 = relay.on_device %1 {se_scope = #relay.se_scope<device = opencl>} : tensor<2x3xf32>
  %3 = relay.nn.relu %2 : tensor<2x3xf32>
  func.return %3 : tensor<2x3xf32>
}

// -----

// A copy whose result has two uses is a dot in the destination's colour: one bold edge
// into it (16 bytes: 4 f32), plain edges out. Only the scopes in use are in the legend.

// CHECK:       legend0 [label="opencl:0
// CHECK-NEXT:  legend1 [label="opencl:1\ntarget opencl, memory global", fillcolor="[[CL1:#[0-9a-f]+]]"];
// CHECK-NOT:   legend2
// CHECK:       [[EXP:n[0-9]+]] [label="exp\n4xf32"
// CHECK:       [[COPY:copy[0-9]+]] [label="", fillcolor="[[CL1]]", shape=point, width=0.15];
// CHECK:       [[EXP]] -> [[COPY]] [style=bold, penwidth=2.5, label="16 bytes\nopencl:0 → opencl:1"];
// CHECK-DAG:   [[COPY]] -> n{{[0-9]+}};
// CHECK-DAG:   [[COPY]] -> n{{[0-9]+}};
func.func @main(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = relay.exp %x {se_scope = #relay.se_scope<device = opencl, id = 0>} : tensor<4xf32>
  %1 = relay.device_copy %0 {src_se_scope = #relay.se_scope<device = opencl, id = 0>, dst_se_scope = #relay.se_scope<device = opencl, id = 1>} : tensor<4xf32>
  %2 = relay.negative %1 {se_scope = #relay.se_scope<device = opencl, id = 1>} : tensor<4xf32>
  %3 = relay.nn.relu %1 {se_scope = #relay.se_scope<device = opencl, id = 1>} : tensor<4xf32>
  func.return %2, %3 : tensor<4xf32>, tensor<4xf32>
}

// -----

// Each function is a cluster; a call is coloured by the callee's result scope and a constant
// is a note. (The other RUN lines draw this after lowering too.)

// CHECK:       subgraph "cluster_fn_f" {
// CHECK:       subgraph "cluster_fn_main" {
// CHECK:         [[C:n[0-9]+]] [label="constant\n4xf32", fillcolor="[[CPU:#[0-9a-f]+]]", shape=note];
// CHECK-NEXT:    [[CALL:n[0-9]+]] [label="call @f\n4xf32", fillcolor="[[CL:#[0-9a-f]+]]"];
// CHECK:           label="fused_add"; style="rounded,bold"; color="[[CPU]]";
// CHECK-NEXT:      [[ADD:n[0-9]+]] [label="add\n4xf32", fillcolor="[[CPU]]"];
// CHECK:       [[CALL]] -> [[ADD]] [style=bold, penwidth=2.5, label="16 bytes\nopencl:0 → cpu:0"];
// CHECK-NEXT:  [[C]] -> [[ADD]];
func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.exp %a : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c = relay.constant {value = dense<1.0> : tensor<4xf32>} : tensor<4xf32>
  %0 = func.call @f(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = relay.on_device %0 {se_scope = #relay.se_scope<device = opencl>} : tensor<4xf32>
  %2 = relay.add %1, %c : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %2 : tensor<4xf32>
}
