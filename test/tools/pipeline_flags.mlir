// RUN: not opt-tool %s -p 'plan-devices{bogus=1}' 2>&1 | filecheck %s --check-prefix=UNKNOWN
// RUN: not opt-tool %s -p 'plan-devices{targets=c default-device}' 2>&1 | filecheck %s --check-prefix=NOVALUE
// RUN: not opt-tool %s -p 'plan-devices{targets=c targets=c,opencl}' 2>&1 | filecheck %s --check-prefix=TWICE
// RUN: opt-tool %s -p 'plan-devices{targets=c,opencl}' -p fuse-ops | filecheck %s --check-prefix=JOINED
// RUN: opt-tool %s -p 'plan-devices{targets=c,opencl},fuse-ops,convert-relay-to-loops,inline-calls,plan-memory' --time-passes -t graph-json 2>%t.err | filecheck %s --check-prefix=JSON
// RUN: filecheck %s --check-prefix=TIMES < %t.err
// RUN: not opt-tool %s -t llvm 2>&1 | filecheck %s --check-prefix=LLVM
// RUN: not opt-tool %s -p fuse-ops,convert-relay-to-loops 2>&1 | filecheck %s --check-prefix=UNPLANNED

// opt-tool's flags beyond xdsl-opt's: options by their CLI names, each given once and with a
// value; several -p flags run one after the other; timings go to stderr, so stdout stays the
// output; a target that needs a missing package says which; a pass that needs planning names
// the op, with its location, and the passes to run first.

func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {
  %0 = relay.exp %a : tensor<2xf32>
  %1 = relay.on_device %0 {se_scope = #relay.se_scope<device = opencl>} : tensor<2xf32>
  %2 = relay.nn.relu %1 : tensor<2xf32>
  func.return %2 : tensor<2xf32>
}

// UNKNOWN: opt-tool: error: invalid pass pipeline: plan-devices has no option 'bogus'; its options are targets, default-device, host-target, explain
// NOVALUE: opt-tool: error: invalid pass pipeline: option 'default-device' of plan-devices needs a value, e.g. default-device=...
// TWICE: opt-tool: error: invalid pass pipeline: option 'targets' is given twice in 'plan-devices{targets=c targets=c,opencl}'; give each option once
// JOINED-COUNT-2: relay.fused
// JSON: {
// JSON-NEXT: "nodes": [
// TIMES: Pass plan-devices took
// TIMES: Pass plan-memory took
// LLVM: opt-tool: error: target 'llvm' needs the Python package 'llvmlite', which is not installed; install it (pip install llvmlite) or use another
// UNPLANNED: opt-tool: error: convert-relay-to-loops expects relay.fused to carry 'se_scope' (at {{.*}}pipeline_flags.mlir:16:3), but it has none; run plan-devices and fuse-ops first
