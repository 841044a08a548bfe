// RUN: opt-tool %s -p 'plan-devices{targets=c,opencl default-device=opencl},fuse-ops{max-depth=2}' | filecheck %s --check-prefix=DEPTH2
// RUN: opt-tool %s -p 'plan-devices{targets=c,opencl default-device=opencl},fuse-ops{max-depth=3}' | filecheck %s --check-prefix=DEPTH3

// Issue 33, item 8: a random program whose concatenates and transpose group differently from
// what the issue read TVM's rule to give (`{concatenate %3, transpose %4}` at max-depth=2).
// TVM (apache/tvm before a531d170b9, which removed relay) agrees with xrelay:
// - relay.concatenate takes a Tuple, and the tuple is a node of TVM's IndexedForwardGraph
//   (src/relay/transforms/fuse_ops.cc:220-233, VisitExpr_(TupleNode): pattern kTuple, each
//   field an Injective edge); fusion_graph.py gives each concatenate that virtual tuple node.
// - max-depth counts nodes, each once (src/relay/analysis/graph_partitioner.cc:207-226,
//   CountNodesUptoSink_ / CountFusedNodesWithNewChild: the sink's group's num_nodes plus the
//   num_nodes of each node's own group from the child up to the sink, a visited set making a
//   value read twice count once), checked before any fusion (:382).
// - So in phase 1 the tuple of %3 joins %3 (1 + 1 = 2 nodes), and %3 then cannot join the
//   transpose: 1 (the transpose's group) + 2 (%3's group: the concatenate and its tuple) = 3
//   > 2. The transpose cannot join anything either: its post-dominator is %24 (through %6,
//   the sums and %18), past the CommReduce sum of %22. %18's group is its concatenate and
//   tuple (2 nodes), reading the dense %8, the exp %6 and the transpose %4: three inputs.
// At max-depth=3 the concatenate, its tuple and the transpose are one group.

// DEPTH2:      %[[SUB:.*]] = relay.fused(%{{.*}}, %a2) {{.*}}kernel_name = "fused_subtract"
// DEPTH2:      %[[CAT:.*]] = relay.fused(%[[SUB]], %a1) {{.*}}kernel_name = "fused_concatenate"}
// DEPTH2-NEXT: ^bb0(%[[X:.*]]: tensor<4x5xf32>, %[[Y:.*]]: tensor<4x1xf32>):
// DEPTH2-NEXT:   relay.concatenate %[[X]], %[[Y]], %[[X]] {axis = -1 : i64}
// DEPTH2-NEXT:   relay.yield
// DEPTH2:      %[[T:.*]] = relay.fused(%[[CAT]]) {{.*}}kernel_name = "fused_transpose"}
// DEPTH2-NEXT: ^bb0
// DEPTH2-NEXT:   relay.transpose
// DEPTH2-NEXT:   relay.yield
// DEPTH2:      %[[EXP:.*]] = relay.fused(%[[T]]) {{.*}}kernel_name = "fused_exp"}
// DEPTH2:      %[[DENSE:.*]] = relay.fused({{.*}}) {{.*}}kernel_name = "fused_nn_dense"}
// DEPTH2:      relay.fused(%[[DENSE]], %[[EXP]], %[[T]]) {{.*}}kernel_name = "fused_concatenate_2"} : (tensor<4x4xf32>, tensor<11x4xf32>, tensor<11x4xf32>) -> tensor<26x4xf32>
// DEPTH2-NEXT: ^bb0
// DEPTH2-NEXT:   relay.concatenate
// DEPTH2-NEXT:   relay.yield

// DEPTH3:      %[[SUB:.*]] = relay.fused(%{{.*}}, %a2) {{.*}}kernel_name = "fused_subtract"
// DEPTH3:      %[[CT:.*]] = relay.fused(%[[SUB]], %a1) {{.*}}kernel_name = "fused_concatenate_transpose"}
// DEPTH3-NEXT: ^bb0
// DEPTH3-NEXT:   relay.concatenate
// DEPTH3-NEXT:   relay.transpose
// DEPTH3-NEXT:   relay.yield
// DEPTH3-NOT:  kernel_name = "fused_transpose"
// DEPTH3:      relay.fused(%{{.*}}, %{{.*}}, %[[CT]]) {{.*}}kernel_name = "fused_concatenate_1"}

"builtin.module"() ({
  "func.func"() <{sym_name = "main", function_type = (tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x5xf32>) -> tensor<26x4xf32>}> ({
  ^bb0(%a0: tensor<4x1xf32>, %a1: tensor<4x1xf32>, %a2: tensor<4x5xf32>):
    %0 = "relay.constant"() {value = dense<[1.050300e+00, 7.995000e-01, 1.289600e+00, 7.098000e-01, 5.358000e-01]> : tensor<5xf32>} : () -> tensor<5xf32>
    %1 = "relay.subtract"(%0, %a2) : (tensor<5xf32>, tensor<4x5xf32>) -> tensor<4x5xf32>
    %2 = "relay.reshape"(%a1) : (tensor<4x1xf32>) -> tensor<4xf32>
    %3 = "relay.concatenate"(%1, %a1, %1) {axis = -1 : i64} : (tensor<4x5xf32>, tensor<4x1xf32>, tensor<4x5xf32>) -> tensor<4x11xf32>
    %4 = "relay.transpose"(%3) {axes = array<i64: 1, 0>} : (tensor<4x11xf32>) -> tensor<11x4xf32>
    %5 = "relay.nn.relu"(%a0) : (tensor<4x1xf32>) -> tensor<4x1xf32>
    %6 = "relay.exp"(%4) : (tensor<11x4xf32>) -> tensor<11x4xf32>
    %7 = "relay.constant"() {value = dense<[[-4.945000e-01], [-4.316000e-01], [-5.104000e-01], [7.148000e-01]]> : tensor<4x1xf32>} : () -> tensor<4x1xf32>
    %8 = "relay.nn.dense"(%5, %7) : (tensor<4x1xf32>, tensor<4x1xf32>) -> tensor<4x4xf32>
    %9 = "relay.concatenate"(%a1, %7) {axis = 0 : i64} : (tensor<4x1xf32>, tensor<4x1xf32>) -> tensor<8x1xf32>
    %10 = "relay.reshape"(%6) : (tensor<11x4xf32>) -> tensor<44xf32>
    %11 = "relay.exp"(%2) : (tensor<4xf32>) -> tensor<4xf32>
    %12 = "relay.sum"(%1) {keepdims = true} : (tensor<4x5xf32>) -> tensor<1x1xf32>
    %13 = "relay.nn.softmax"(%11) {axis = -1 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    %14 = "relay.constant"() {value = dense<[[1.295200e+00], [7.143000e-01]]> : tensor<2x1xf32>} : () -> tensor<2x1xf32>
    %15 = "relay.nn.dense"(%9, %14) : (tensor<8x1xf32>, tensor<2x1xf32>) -> tensor<8x2xf32>
    %16 = "relay.negative"(%10) : (tensor<44xf32>) -> tensor<44xf32>
    %17 = "relay.minimum"(%16, %12) : (tensor<44xf32>, tensor<1x1xf32>) -> tensor<1x44xf32>
    %18 = "relay.concatenate"(%8, %6, %4) {axis = 0 : i64} : (tensor<4x4xf32>, tensor<11x4xf32>, tensor<11x4xf32>) -> tensor<26x4xf32>
    %19 = "relay.sum"(%13) {keepdims = true} : (tensor<4xf32>) -> tensor<1xf32>
    %20 = "relay.reshape"(%19) : (tensor<1xf32>) -> tensor<1xf32>
    %21 = "relay.maximum"(%15, %20) : (tensor<8x2xf32>, tensor<1xf32>) -> tensor<8x2xf32>
    %22 = "relay.sum"(%17) {keepdims = true} : (tensor<1x44xf32>) -> tensor<1x1xf32>
    %23 = "relay.reshape"(%22) : (tensor<1x1xf32>) -> tensor<1xf32>
    %24 = "relay.minimum"(%18, %23) : (tensor<26x4xf32>, tensor<1xf32>) -> tensor<26x4xf32>
    %25 = "relay.sum"(%21) {keepdims = true} : (tensor<8x2xf32>) -> tensor<1x1xf32>
    %26 = "relay.reshape"(%25) : (tensor<1x1xf32>) -> tensor<1xf32>
    %27 = "relay.minimum"(%24, %26) : (tensor<26x4xf32>, tensor<1xf32>) -> tensor<26x4xf32>
    "func.return"(%27) : (tensor<26x4xf32>) -> ()
  }) : () -> ()
}) : () -> ()
