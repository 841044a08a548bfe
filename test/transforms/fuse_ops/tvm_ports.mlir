// RUN: opt-tool %s --split-input-file -p fuse-ops | filecheck %s

// The dataflow cases of TVM's tests/python/relay/test_pass_fuse_ops.py, one chunk per test,
// with smaller shapes. Where TVM uses an op xrelay lacks, a stand-in of the same pattern kind
// is named in the comment. TVM inlines scalar constants into its groups; here a constant stays
// outside and is an input of the group. Not ported: test_stop_fusion (no stop_fusion op),
// test_fuse_myia_regression and test_split (control flow, references), test_fuse_take,
// test_fuse_gather_nd, test_fuse_max_num_args, test_fuse_dynamic_squeeze_slice_take (ops,
// options and dynamic shapes xrelay does not have), test_immutable (no IRModule sharing).
// test_fuse_max and test_fuse_max_diamond are in tvm_ports_max_depth.mlir.

// test_fuse_simple

// CHECK-LABEL: func.func @test_fuse_simple
// CHECK:         %[[K:.*]] = relay.constant
// CHECK:         relay.fused(%x, %[[K]]) {kernel_name = "fused_add_exp_squeeze"}
// CHECK-NOT:     relay.fused
func.func @test_fuse_simple(%x: tensor<10x20xf32>) -> tensor<10x20xf32> {
  %c = relay.constant {value = dense<1.0> : tensor<f32>} : tensor<f32>
  %y = relay.add %x, %c : (tensor<10x20xf32>, tensor<f32>) -> tensor<10x20xf32>
  %z = relay.exp %y : tensor<10x20xf32>
  %w = relay.squeeze %z : (tensor<10x20xf32>) -> tensor<10x20xf32>
  func.return %w : tensor<10x20xf32>
}

// -----

// test_conv2d_fuse: the add before the first conv2d stays alone; the conv2d absorbs the diamond
// of adds after it; of the two conv2d that read %y2, the first in TVM's order (1x1, on %w2) takes
// the final add and the second (3x3, on %w3) stays alone.

// CHECK-LABEL: func.func @test_conv2d_fuse
// CHECK:         %[[A:.*]] = relay.fused(%x, %{{.*}}) {kernel_name = "fused_add"}
// CHECK:         %[[Y:.*]] = relay.fused(%[[A]], %w1, %{{.*}}) {kernel_name = "fused_nn_conv2d_add_add"}
// CHECK:         %[[Z3:.*]] = relay.fused(%[[Y]], %w3) {kernel_name = "fused_nn_conv2d"}
// CHECK:         %[[Z:.*]] = relay.fused(%[[Y]], %w2, %[[Z3]]) {kernel_name = "fused_nn_conv2d_add"}
// CHECK-NOT:     relay.fused
// CHECK:         func.return %[[Z]]
func.func @test_conv2d_fuse(%x: tensor<1x16x8x8xf32>, %w1: tensor<16x16x3x3xf32>, %w2: tensor<16x16x1x1xf32>, %w3: tensor<16x16x3x3xf32>) -> tensor<1x16x8x8xf32> {
  %c = relay.constant {value = dense<1.0> : tensor<f32>} : tensor<f32>
  %x1 = relay.add %x, %c : (tensor<1x16x8x8xf32>, tensor<f32>) -> tensor<1x16x8x8xf32>
  %y = relay.nn.conv2d %x1, %w1 {padding = array<i64: 1, 1>} : (tensor<1x16x8x8xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x8x8xf32>
  %y1 = relay.add %c, %y : (tensor<f32>, tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  %y2 = relay.add %y, %y1 : (tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  %z2 = relay.nn.conv2d %y2, %w2 : (tensor<1x16x8x8xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x8x8xf32>
  %z3 = relay.nn.conv2d %y2, %w3 {padding = array<i64: 1, 1>} : (tensor<1x16x8x8xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x8x8xf32>
  %z = relay.add %z2, %z3 : (tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  func.return %z : tensor<1x16x8x8xf32>
}

// -----

// test_concatenate (reshape stands in for upsampling, both Injective)

// CHECK-LABEL: func.func @test_concatenate
// CHECK:         %[[P:.*]] = relay.fused(%x) {kernel_name = "fused_nn_max_pool2d"}
// CHECK:         relay.fused(%[[P]], %x, %{{.*}}) {kernel_name = "fused_reshape_concatenate_add"}
// CHECK-NOT:     relay.fused
func.func @test_concatenate(%x: tensor<1x16x8x8xf32>) -> tensor<1x20x8x8xf32> {
  %pooled = relay.nn.max_pool2d %x {pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x16x8x8xf32>) -> tensor<1x16x4x4xf32>
  %up = relay.reshape %pooled : (tensor<1x16x4x4xf32>) -> tensor<1x4x8x8xf32>
  %concat = relay.concatenate %up, %x {axis = 1 : i64} : (tensor<1x4x8x8xf32>, tensor<1x16x8x8xf32>) -> tensor<1x20x8x8xf32>
  %c = relay.constant {value = dense<1.0> : tensor<f32>} : tensor<f32>
  %out = relay.add %concat, %c : (tensor<1x20x8x8xf32>, tensor<f32>) -> tensor<1x20x8x8xf32>
  func.return %out : tensor<1x20x8x8xf32>
}

// -----

// test_tuple_root (reshape stands in for upsampling): the returned tuple is a group of its own
// that nothing joins.

// CHECK-LABEL: func.func @test_tuple_root
// CHECK:         %[[P:.*]] = relay.fused(%x) {kernel_name = "fused_nn_max_pool2d"}
// CHECK:         %[[U:.*]] = relay.fused(%[[P]]) {kernel_name = "fused_reshape"}
// CHECK-NOT:     relay.fused
// CHECK:         func.return %[[U]], %x
func.func @test_tuple_root(%x: tensor<1x16x8x8xf32>) -> (tensor<1x4x8x8xf32>, tensor<1x16x8x8xf32>) {
  %pooled = relay.nn.max_pool2d %x {pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x16x8x8xf32>) -> tensor<1x16x4x4xf32>
  %up = relay.reshape %pooled : (tensor<1x16x4x4xf32>) -> tensor<1x4x8x8xf32>
  func.return %up, %x : tensor<1x4x8x8xf32>, tensor<1x16x8x8xf32>
}

// -----

// test_fuse_tuple_get_elemwise (three strided_slice stand in for split and its TupleGetItems,
// all Injective): the dense stays alone, everything after it is one group.

// CHECK-LABEL: func.func @test_fuse_tuple_get_elemwise
// CHECK:         %[[M:.*]] = relay.fused(%X, %W) {kernel_name = "fused_nn_dense"}
// CHECK:         relay.fused(%[[M]]) {kernel_name = "fused_strided_slice_sigmoid_strided_slice_tanh_strided_slice_exp_multiply_add"}
// CHECK-NOT:     relay.fused
func.func @test_fuse_tuple_get_elemwise(%X: tensor<1x10xf32>, %W: tensor<30x10xf32>) -> tensor<1x10xf32> {
  %matmul = relay.nn.dense %X, %W : (tensor<1x10xf32>, tensor<30x10xf32>) -> tensor<1x30xf32>
  %s0 = relay.strided_slice %matmul {begin = array<i64: 0, 0>, end = array<i64: 1, 10>} : (tensor<1x30xf32>) -> tensor<1x10xf32>
  %a = relay.sigmoid %s0 : tensor<1x10xf32>
  %s1 = relay.strided_slice %matmul {begin = array<i64: 0, 10>, end = array<i64: 1, 20>} : (tensor<1x30xf32>) -> tensor<1x10xf32>
  %b = relay.tanh %s1 : tensor<1x10xf32>
  %s2 = relay.strided_slice %matmul {begin = array<i64: 0, 20>, end = array<i64: 1, 30>} : (tensor<1x30xf32>) -> tensor<1x10xf32>
  %c = relay.exp %s2 : tensor<1x10xf32>
  %bc = relay.multiply %b, %c : (tensor<1x10xf32>, tensor<1x10xf32>) -> tensor<1x10xf32>
  %out = relay.add %a, %bc : (tensor<1x10xf32>, tensor<1x10xf32>) -> tensor<1x10xf32>
  func.return %out : tensor<1x10xf32>
}

// -----

// test_tuple_get_root (strided_slice stands in for split + TupleGetItem)

// CHECK-LABEL: func.func @test_tuple_get_root
// CHECK:         %[[S:.*]] = relay.fused(%X) {kernel_name = "fused_strided_slice"}
// CHECK:         relay.fused(%[[S]], %W) {kernel_name = "fused_nn_dense"}
// CHECK-NOT:     relay.fused
func.func @test_tuple_get_root(%X: tensor<1x30xf32>, %W: tensor<10x10xf32>) -> tensor<1x10xf32> {
  %s0 = relay.strided_slice %X {begin = array<i64: 0, 0>, end = array<i64: 1, 10>} : (tensor<1x30xf32>) -> tensor<1x10xf32>
  %out = relay.nn.dense %s0, %W : (tensor<1x10xf32>, tensor<10x10xf32>) -> tensor<1x10xf32>
  func.return %out : tensor<1x10xf32>
}

// -----

// test_tuple_intermediate: a tuple in the middle of injective and elementwise ops; all is one group.

// CHECK-LABEL: func.func @test_tuple_intermediate
// CHECK-COUNT-1: relay.fused(%x, %{{[a-z0-9_]+}})
// CHECK-SAME:    kernel_name = "fused_squeeze_add_squeeze_add_add_add_concatenate_squeeze_add"
// CHECK-NOT:     relay.fused
func.func @test_tuple_intermediate(%x: tensor<1x16x4x4xf32>) -> tensor<16x12x4xf32> {
  %c = relay.constant {value = dense<1.0> : tensor<f32>} : tensor<f32>
  %inj = relay.squeeze %x : (tensor<1x16x4x4xf32>) -> tensor<16x4x4xf32>
  %y1 = relay.add %inj, %c : (tensor<16x4x4xf32>, tensor<f32>) -> tensor<16x4x4xf32>
  %t0 = relay.squeeze %inj : (tensor<16x4x4xf32>) -> tensor<16x4x4xf32>
  %t1 = relay.add %t0, %c : (tensor<16x4x4xf32>, tensor<f32>) -> tensor<16x4x4xf32>
  %y2 = relay.add %t1, %c : (tensor<16x4x4xf32>, tensor<f32>) -> tensor<16x4x4xf32>
  %y3 = relay.add %inj, %c : (tensor<16x4x4xf32>, tensor<f32>) -> tensor<16x4x4xf32>
  %concat = relay.concatenate %y1, %y2, %y3 {axis = 1 : i64} : (tensor<16x4x4xf32>, tensor<16x4x4xf32>, tensor<16x4x4xf32>) -> tensor<16x12x4xf32>
  %out_inj = relay.squeeze %concat : (tensor<16x12x4xf32>) -> tensor<16x12x4xf32>
  %out = relay.add %out_inj, %c : (tensor<16x12x4xf32>, tensor<f32>) -> tensor<16x12x4xf32>
  func.return %out : tensor<16x12x4xf32>
}

// -----

// test_tuple_consecutive: three intermediate tuples feeding a fourth; the pooling anchor takes
// the add after it, and the second add (returned, like the first) is alone.

// CHECK-LABEL: func.func @test_tuple_consecutive
// CHECK:         %[[F0:.*]] = relay.fused(%x, %{{.*}}) {kernel_name = "fused_add_add_add_concatenate_add_add_add_add_concatenate_add_add_add_add_concat"}
// CHECK-COUNT-12:  relay.add
// CHECK-NEXT:      relay.concatenate
// CHECK-NEXT:      relay.yield
// CHECK:         %[[F1:.*]] = relay.fused(%[[F0]], %{{.*}}) {kernel_name = "fused_nn_max_pool2d_add"}
// CHECK:         %[[F2:.*]] = relay.fused(%[[F1]], %{{.*}}) {kernel_name = "fused_add"}
// CHECK-NOT:     relay.fused
// CHECK:         func.return %[[F1]], %[[F2]]
func.func @test_tuple_consecutive(%x: tensor<1x16x4x4xf32>) -> (tensor<1x144x2x2xf32>, tensor<1x144x2x2xf32>) {
  %c = relay.constant {value = dense<1.0> : tensor<f32>} : tensor<f32>
  %v1 = relay.add %x, %c : (tensor<1x16x4x4xf32>, tensor<f32>) -> tensor<1x16x4x4xf32>
  %v2 = relay.add %x, %c : (tensor<1x16x4x4xf32>, tensor<f32>) -> tensor<1x16x4x4xf32>
  %v3 = relay.add %x, %c : (tensor<1x16x4x4xf32>, tensor<f32>) -> tensor<1x16x4x4xf32>
  %v4 = relay.concatenate %v1, %v2, %v3 {axis = 1 : i64} : (tensor<1x16x4x4xf32>, tensor<1x16x4x4xf32>, tensor<1x16x4x4xf32>) -> tensor<1x48x4x4xf32>
  %v5 = relay.add %v4, %c : (tensor<1x48x4x4xf32>, tensor<f32>) -> tensor<1x48x4x4xf32>
  %v6 = relay.add %x, %c : (tensor<1x16x4x4xf32>, tensor<f32>) -> tensor<1x16x4x4xf32>
  %v7 = relay.add %x, %c : (tensor<1x16x4x4xf32>, tensor<f32>) -> tensor<1x16x4x4xf32>
  %v8 = relay.add %x, %c : (tensor<1x16x4x4xf32>, tensor<f32>) -> tensor<1x16x4x4xf32>
  %v9 = relay.concatenate %v6, %v7, %v8 {axis = 1 : i64} : (tensor<1x16x4x4xf32>, tensor<1x16x4x4xf32>, tensor<1x16x4x4xf32>) -> tensor<1x48x4x4xf32>
  %v10 = relay.add %v9, %c : (tensor<1x48x4x4xf32>, tensor<f32>) -> tensor<1x48x4x4xf32>
  %v11 = relay.add %x, %c : (tensor<1x16x4x4xf32>, tensor<f32>) -> tensor<1x16x4x4xf32>
  %v12 = relay.add %x, %c : (tensor<1x16x4x4xf32>, tensor<f32>) -> tensor<1x16x4x4xf32>
  %v13 = relay.add %x, %c : (tensor<1x16x4x4xf32>, tensor<f32>) -> tensor<1x16x4x4xf32>
  %v14 = relay.concatenate %v11, %v12, %v13 {axis = 1 : i64} : (tensor<1x16x4x4xf32>, tensor<1x16x4x4xf32>, tensor<1x16x4x4xf32>) -> tensor<1x48x4x4xf32>
  %v15 = relay.add %v14, %c : (tensor<1x48x4x4xf32>, tensor<f32>) -> tensor<1x48x4x4xf32>
  %v16 = relay.concatenate %v5, %v10, %v15 {axis = 1 : i64} : (tensor<1x48x4x4xf32>, tensor<1x48x4x4xf32>, tensor<1x48x4x4xf32>) -> tensor<1x144x4x4xf32>
  %pooled = relay.nn.max_pool2d %v16 {pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x144x4x4xf32>) -> tensor<1x144x2x2xf32>
  %out = relay.add %pooled, %c : (tensor<1x144x2x2xf32>, tensor<f32>) -> tensor<1x144x2x2xf32>
  %out2 = relay.add %out, %c : (tensor<1x144x2x2xf32>, tensor<f32>) -> tensor<1x144x2x2xf32>
  func.return %out, %out2 : tensor<1x144x2x2xf32>, tensor<1x144x2x2xf32>
}

// -----

// test_inception_like: each conv2d takes its relu; the concatenates stay alone.

// CHECK-LABEL: func.func @test_inception_like
// CHECK:         %[[C0:.*]] = relay.fused(%x, %w1) {kernel_name = "fused_nn_conv2d_nn_relu"}
// CHECK:         %[[C1:.*]] = relay.fused(%x, %w2) {kernel_name = "fused_nn_conv2d_nn_relu_1"}
// CHECK:         %[[I1:.*]] = relay.fused(%[[C0]], %[[C1]]) {kernel_name = "fused_concatenate"}
// CHECK:         %[[C2:.*]] = relay.fused(%[[I1]], %w3) {kernel_name = "fused_nn_conv2d_nn_relu_2"}
// CHECK:         %[[C3:.*]] = relay.fused(%[[I1]], %w4) {kernel_name = "fused_nn_conv2d_nn_relu_3"}
// CHECK:         %[[I2:.*]] = relay.fused(%[[C2]], %[[C3]]) {kernel_name = "fused_concatenate_1"}
// CHECK-NOT:     relay.fused
// CHECK:         func.return %[[I2]]
func.func @test_inception_like(%x: tensor<1x16x4x4xf32>, %w1: tensor<16x16x3x3xf32>, %w2: tensor<16x16x3x3xf32>, %w3: tensor<16x32x3x3xf32>, %w4: tensor<16x32x3x3xf32>) -> tensor<1x32x4x4xf32> {
  %0 = relay.nn.conv2d %x, %w1 {padding = array<i64: 1, 1>} : (tensor<1x16x4x4xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x4x4xf32>
  %1 = relay.nn.relu %0 : tensor<1x16x4x4xf32>
  %2 = relay.nn.conv2d %x, %w2 {padding = array<i64: 1, 1>} : (tensor<1x16x4x4xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x4x4xf32>
  %3 = relay.nn.relu %2 : tensor<1x16x4x4xf32>
  %4 = relay.concatenate %1, %3 {axis = 1 : i64} : (tensor<1x16x4x4xf32>, tensor<1x16x4x4xf32>) -> tensor<1x32x4x4xf32>
  %5 = relay.nn.conv2d %4, %w3 {padding = array<i64: 1, 1>} : (tensor<1x32x4x4xf32>, tensor<16x32x3x3xf32>) -> tensor<1x16x4x4xf32>
  %6 = relay.nn.relu %5 : tensor<1x16x4x4xf32>
  %7 = relay.nn.conv2d %4, %w4 {padding = array<i64: 1, 1>} : (tensor<1x32x4x4xf32>, tensor<16x32x3x3xf32>) -> tensor<1x16x4x4xf32>
  %8 = relay.nn.relu %7 : tensor<1x16x4x4xf32>
  %9 = relay.concatenate %6, %8 {axis = 1 : i64} : (tensor<1x16x4x4xf32>, tensor<1x16x4x4xf32>) -> tensor<1x32x4x4xf32>
  func.return %9 : tensor<1x32x4x4xf32>
}

// -----

// test_fuse_parallel_injective (add stands in for left_shift, both Broadcast)

// CHECK-LABEL: func.func @test_fuse_parallel_injective
// CHECK-COUNT-1: relay.fused(%x, %{{[a-z0-9_]+}})
// CHECK-SAME:    kernel_name = "fused_add_squeeze_transpose_add"
// CHECK-NOT:     relay.fused
func.func @test_fuse_parallel_injective(%x: tensor<10x20xf32>) -> tensor<10x20xf32> {
  %c = relay.constant {value = dense<1.0> : tensor<f32>} : tensor<f32>
  %y = relay.add %x, %c : (tensor<10x20xf32>, tensor<f32>) -> tensor<10x20xf32>
  %z = relay.squeeze %y : (tensor<10x20xf32>) -> tensor<10x20xf32>
  %u = relay.transpose %y {axes = array<i64: 0, 1>} : (tensor<10x20xf32>) -> tensor<10x20xf32>
  %w = relay.add %z, %u : (tensor<10x20xf32>, tensor<10x20xf32>) -> tensor<10x20xf32>
  func.return %w : tensor<10x20xf32>
}

// -----

// test_fuse_bcast_reduce_scalar (subtract stands in for less, both Broadcast)

// CHECK-LABEL: func.func @test_fuse_bcast_reduce_scalar
// CHECK-COUNT-1: relay.fused(%x, %{{[a-z0-9_]+}})
// CHECK-SAME:    kernel_name = "fused_subtract_min"
// CHECK-NOT:     relay.fused
func.func @test_fuse_bcast_reduce_scalar(%x: tensor<f32>) -> tensor<f32> {
  %c = relay.constant {value = dense<10.0> : tensor<f32>} : tensor<f32>
  %less = relay.subtract %x, %c : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %z = relay.min %less : (tensor<f32>) -> tensor<f32>
  func.return %z : tensor<f32>
}

// -----

// test_fuse_softmax (relu stands in for cast). Deviation: TVM now marks softmax
// OutEWiseFusable and fuses the cast into it; in xrelay softmax is Opaque (DESIGN.md), so it
// stays alone.

// CHECK-LABEL: func.func @test_fuse_softmax
// CHECK:         %[[S:.*]] = relay.fused(%x) {kernel_name = "fused_nn_softmax"}
// CHECK:         relay.fused(%[[S]]) {kernel_name = "fused_nn_relu"}
// CHECK-NOT:     relay.fused
func.func @test_fuse_softmax(%x: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %softmax = relay.nn.softmax %x : (tensor<16x16xf32>) -> tensor<16x16xf32>
  %out = relay.nn.relu %softmax : tensor<16x16xf32>
  func.return %out : tensor<16x16xf32>
}
