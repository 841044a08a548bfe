// RUN: not opt-tool %s -p 'plan-devices{targets=c,llvm}' 2>&1 | filecheck %s --check-prefix=PASS
// RUN: not opt-tool %s -p 'plan-devices{targets=fpga}' 2>&1 | filecheck %s --check-prefix=KIND
// RUN: not opt-tool %s -p 'cse{' 2>&1 | filecheck %s --check-prefix=SPEC
// RUN: not opt-tool %s -p 'cse{bogus=1}' 2>&1 | filecheck %s --check-prefix=OPTION
// RUN: not opt-tool %s -p no-such-pass 2>&1 | filecheck %s --check-prefix=UNKNOWN
// RUN: not opt-tool %s -t no-such-target 2>&1 | filecheck %s --check-prefix=TARGET
// RUN: not opt-tool %S/no_such_file.mlir 2>&1 | filecheck %s --check-prefix=MISSING

// Every user error exits 1 with one message and no Python traceback.

func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {
  %0 = relay.exp %a : tensor<2xf32>
  func.return %0 : tensor<2xf32>
}

// PASS: opt-tool: error: two targets for device type cpu: "c" and "llvm"; give one target per device type
// PASS-NOT: Traceback
// KIND: opt-tool: error: unknown target kind 'fpga' in target "fpga"; expected one of c, llvm, opencl, cuda, vulkan, metal
// KIND-NOT: Traceback
// SPEC: opt-tool: error: malformed pass pipeline: Error parsing pass pipeline specification:
// SPEC-NEXT: pass-pipeline:1:5
// SPEC-NEXT: cse{
// SPEC-NEXT: ^
// SPEC-NEXT: Expected argument name here
// SPEC-NOT: Traceback
// OPTION: opt-tool: error: invalid pass pipeline: cse has no option 'bogus'; its options are none
// OPTION-NOT: Traceback
// UNKNOWN: opt-tool: error: invalid pass pipeline: Unrecognized passes: ['no-such-pass']
// UNKNOWN-NOT: Traceback
// TARGET: opt-tool: error: argument -t/--target: invalid choice: 'no-such-target' (choose from {{.*}}c, opencl{{.*}})
// TARGET-NOT: Traceback
// MISSING: opt-tool: error: [Errno 2] No such file or directory: '{{.*}}no_such_file.mlir'
// MISSING-NOT: Traceback
