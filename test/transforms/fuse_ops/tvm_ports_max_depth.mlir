// RUN: opt-tool %s --split-input-file -p 'fuse-ops{max-depth=11}' | filecheck %s

// TVM's test_fuse_max and test_fuse_max_diamond (tests/python/relay/test_pass_fuse_ops.py),
// with relay.FuseOps.max_depth = 11 (TVM's test_fuse_max uses 10 ops of 20; here 11 of 22).

// test_fuse_max: a chain of 22 exps splits into two groups of 11.

// CHECK-LABEL: func.func @test_fuse_max
// CHECK:         %[[F1:.*]] = relay.fused(%0) {kernel_name = "fused_exp_exp_exp_exp_exp_exp_exp_exp_exp_exp_exp"}
// CHECK-COUNT-11:  relay.exp
// CHECK-NEXT:      relay.yield
// CHECK:         %[[F2:.*]] = relay.fused(%[[F1]]) {kernel_name = "fused_exp_exp_exp_exp_exp_exp_exp_exp_exp_exp_exp_1"}
// CHECK-COUNT-11:  relay.exp
// CHECK-NEXT:      relay.yield
// CHECK-NOT:     relay.fused
// CHECK:         func.return %[[F2]]
func.func @test_fuse_max(%0: tensor<10x20xf32>) -> tensor<10x20xf32> {
  %1 = relay.exp %0 : tensor<10x20xf32>
  %2 = relay.exp %1 : tensor<10x20xf32>
  %3 = relay.exp %2 : tensor<10x20xf32>
  %4 = relay.exp %3 : tensor<10x20xf32>
  %5 = relay.exp %4 : tensor<10x20xf32>
  %6 = relay.exp %5 : tensor<10x20xf32>
  %7 = relay.exp %6 : tensor<10x20xf32>
  %8 = relay.exp %7 : tensor<10x20xf32>
  %9 = relay.exp %8 : tensor<10x20xf32>
  %10 = relay.exp %9 : tensor<10x20xf32>
  %11 = relay.exp %10 : tensor<10x20xf32>
  %12 = relay.exp %11 : tensor<10x20xf32>
  %13 = relay.exp %12 : tensor<10x20xf32>
  %14 = relay.exp %13 : tensor<10x20xf32>
  %15 = relay.exp %14 : tensor<10x20xf32>
  %16 = relay.exp %15 : tensor<10x20xf32>
  %17 = relay.exp %16 : tensor<10x20xf32>
  %18 = relay.exp %17 : tensor<10x20xf32>
  %19 = relay.exp %18 : tensor<10x20xf32>
  %20 = relay.exp %19 : tensor<10x20xf32>
  %21 = relay.exp %20 : tensor<10x20xf32>
  %22 = relay.exp %21 : tensor<10x20xf32>
  func.return %22 : tensor<10x20xf32>
}

// -----

// test_fuse_max_diamond: three diamonds of two 5-exp branches and an add (11 ops each); each
// diamond is one group, and no group takes ops of two diamonds.

// CHECK-LABEL: func.func @test_fuse_max_diamond
// CHECK:         %[[D1:.*]] = relay.fused(%x)
// CHECK-COUNT-10:  relay.exp
// CHECK-NEXT:      relay.add
// CHECK-NEXT:      relay.yield
// CHECK:         %[[D2:.*]] = relay.fused(%[[D1]])
// CHECK-COUNT-10:  relay.exp
// CHECK-NEXT:      relay.add
// CHECK-NEXT:      relay.yield
// CHECK:         %[[D3:.*]] = relay.fused(%[[D2]])
// CHECK-COUNT-10:  relay.exp
// CHECK-NEXT:      relay.add
// CHECK-NEXT:      relay.yield
// CHECK-NOT:     relay.fused
// CHECK:         func.return %[[D3]]
func.func @test_fuse_max_diamond(%x: tensor<10x20xf32>) -> tensor<10x20xf32> {
  %a0 = relay.exp %x : tensor<10x20xf32>
  %b0 = relay.exp %x : tensor<10x20xf32>
  %a1 = relay.exp %a0 : tensor<10x20xf32>
  %b1 = relay.exp %b0 : tensor<10x20xf32>
  %a2 = relay.exp %a1 : tensor<10x20xf32>
  %b2 = relay.exp %b1 : tensor<10x20xf32>
  %a3 = relay.exp %a2 : tensor<10x20xf32>
  %b3 = relay.exp %b2 : tensor<10x20xf32>
  %a4 = relay.exp %a3 : tensor<10x20xf32>
  %b4 = relay.exp %b3 : tensor<10x20xf32>
  %d0 = relay.add %a4, %b4 : (tensor<10x20xf32>, tensor<10x20xf32>) -> tensor<10x20xf32>
  %a10 = relay.exp %d0 : tensor<10x20xf32>
  %b10 = relay.exp %d0 : tensor<10x20xf32>
  %a11 = relay.exp %a10 : tensor<10x20xf32>
  %b11 = relay.exp %b10 : tensor<10x20xf32>
  %a12 = relay.exp %a11 : tensor<10x20xf32>
  %b12 = relay.exp %b11 : tensor<10x20xf32>
  %a13 = relay.exp %a12 : tensor<10x20xf32>
  %b13 = relay.exp %b12 : tensor<10x20xf32>
  %a14 = relay.exp %a13 : tensor<10x20xf32>
  %b14 = relay.exp %b13 : tensor<10x20xf32>
  %d10 = relay.add %a14, %b14 : (tensor<10x20xf32>, tensor<10x20xf32>) -> tensor<10x20xf32>
  %a20 = relay.exp %d10 : tensor<10x20xf32>
  %b20 = relay.exp %d10 : tensor<10x20xf32>
  %a21 = relay.exp %a20 : tensor<10x20xf32>
  %b21 = relay.exp %b20 : tensor<10x20xf32>
  %a22 = relay.exp %a21 : tensor<10x20xf32>
  %b22 = relay.exp %b21 : tensor<10x20xf32>
  %a23 = relay.exp %a22 : tensor<10x20xf32>
  %b23 = relay.exp %b22 : tensor<10x20xf32>
  %a24 = relay.exp %a23 : tensor<10x20xf32>
  %b24 = relay.exp %b23 : tensor<10x20xf32>
  %d20 = relay.add %a24, %b24 : (tensor<10x20xf32>, tensor<10x20xf32>) -> tensor<10x20xf32>
  func.return %d20 : tensor<10x20xf32>
}
