// RUN: opt-tool %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s

// Verifier (and attribute syntax) errors of the relay ops, one per chunk.

func.func @wrong_result(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %0 = relay.exp %a : (tensor<2x3xf32>) -> tensor<3x2xf32>
  func.return %0 : tensor<3x2xf32>
}
// CHECK: (tensor<2x3xf32>) -> tensor<3x2xf32> should be of base attribute tensor

// -----

func.func @wrong_result_generic(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %0 = "relay.exp"(%a) : (tensor<2x3xf32>) -> tensor<3x2xf32>
  func.return %0 : tensor<3x2xf32>
}
// CHECK: result 'res' at position 0 does not verify:
// CHECK-NEXT: attribute tensor<2x3xf32> expected from variable 'T', but got tensor<3x2xf32>

// -----

func.func @wrong_result_binary(%a: tensor<2x3xf32>) -> tensor<3xf32> {
  %0 = relay.add %a, %a : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}
// CHECK: expected result type tensor<2x3xf32> for 'relay.add', but found tensor<3xf32>

// -----

func.func @not_f32(%a: tensor<2xi32>) -> tensor<2xi32> {
  %0 = relay.exp %a : tensor<2xi32>
  func.return %0 : tensor<2xi32>
}
// CHECK: 'relay.exp' takes float32 tensors, but operand 0 is tensor<2xi32>

// -----

func.func @exp_of_int64(%a: tensor<2xi64>) -> tensor<2xi64> {
  %0 = relay.exp %a : tensor<2xi64>
  func.return %0 : tensor<2xi64>
}
// CHECK: 'relay.exp' takes float32 tensors, but operand 0 is tensor<2xi64>

// -----

func.func @mixed_element_types(%a: tensor<2xi64>, %b: tensor<2xf32>) -> tensor<2xi64> {
  %0 = relay.add %a, %b : (tensor<2xi64>, tensor<2xf32>) -> tensor<2xi64>
  func.return %0 : tensor<2xi64>
}
// CHECK: 'relay.add' takes operands of one element type, but found tensor<2xi64>, tensor<2xf32>

// -----

func.func @compare_gives_bool(%a: tensor<2xi64>) -> tensor<2xi64> {
  %0 = relay.equal %a, %a : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>
  func.return %0 : tensor<2xi64>
}
// CHECK: expected result type tensor<2xi1> for 'relay.equal', but found tensor<2xi64>

// -----

func.func @take_of_float_indices(%e: tensor<5x3xf32>, %i: tensor<2xf32>) -> tensor<2x3xf32> {
  %0 = relay.take %e, %i {axis = 0 : i64} : (tensor<5x3xf32>, tensor<2xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}
// CHECK: 'relay.take' takes int64 tensors, but operand 1 is tensor<2xf32>

// -----

func.func @cast_to_float16(%a: tensor<2xi64>) -> tensor<2xf32> {
  %0 = relay.cast %a {dtype = "float16"} : (tensor<2xi64>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}
// CHECK: expected dtype to be one of float32, int64, bool, but found 'float16'

// -----

func.func @where_of_int_condition(%c: tensor<2xi64>, %a: tensor<2xf32>) -> tensor<2xf32> {
  %0 = relay.where %c, %a, %a : (tensor<2xi64>, tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}
// CHECK: 'relay.where' takes bool tensors, but operand 0 is tensor<2xi64>

// -----

func.func @not_broadcastable(%a: tensor<2x3xf32>, %b: tensor<4xf32>) -> tensor<2x3xf32> {
  %0 = relay.multiply %a, %b : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}
// CHECK: operand shapes [2, 3] and [4] are not broadcast-compatible

// -----

func.func @clip_range(%a: tensor<2xf32>) -> tensor<2xf32> {
  %0 = relay.clip %a {a_min = 1.0 : f32, a_max = 0.0 : f32} : tensor<2xf32>
  func.return %0 : tensor<2xf32>
}
// CHECK: expected a_min <= a_max, but found a_min = 1.0 and a_max = 0.0

// -----

func.func @bias_shape(%a: tensor<2x3xf32>, %b: tensor<2xf32>) -> tensor<2x3xf32> {
  %0 = relay.nn.bias_add %a, %b : (tensor<2x3xf32>, tensor<2xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}
// CHECK: expected a bias of shape [3] (axis 1 of data), but found [2]

// -----

func.func @bias_axis(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
  %0 = relay.nn.bias_add %a, %b {axis = 2 : i64} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}
// CHECK: axis 2 is out of range for a tensor of rank 2; expected -2 <= axis < 2

// -----

func.func @reshape_count(%a: tensor<2x3xf32>) -> tensor<7xf32> {
  %0 = relay.reshape %a : (tensor<2x3xf32>) -> tensor<7xf32>
  func.return %0 : tensor<7xf32>
}
// CHECK: cannot reshape [2, 3] (6 elements) to [7] (7 elements)

// -----

func.func @transpose_not_perm(%a: tensor<2x3xf32>) -> tensor<2x2xf32> {
  %0 = relay.transpose %a {axes = array<i64: 0, 0>} : (tensor<2x3xf32>) -> tensor<2x2xf32>
  func.return %0 : tensor<2x2xf32>
}
// CHECK: axes [0, 0] are not a permutation of 0..1

// -----

func.func @transpose_count(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %0 = relay.transpose %a {axes = array<i64: 1, 0, 2>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  func.return %0 : tensor<3x2xf32>
}
// CHECK: expected 2 axes for a tensor of rank 2, but found [1, 0, 2]

// -----

func.func @squeeze_not_one(%a: tensor<2x1xf32>) -> tensor<1xf32> {
  %0 = relay.squeeze %a {axis = array<i64: 0>} : (tensor<2x1xf32>) -> tensor<1xf32>
  func.return %0 : tensor<1xf32>
}
// CHECK: cannot squeeze axis 0 of size 2; it must be 1

// -----

func.func @squeeze_range(%a: tensor<2x1xf32>) -> tensor<2xf32> {
  %0 = relay.squeeze %a {axis = array<i64: 2>} : (tensor<2x1xf32>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}
// CHECK: axis 2 is out of range for a tensor of rank 2; expected -2 <= axis < 2

// -----

func.func @expand_dims_range(%a: tensor<2xf32>) -> tensor<2x1xf32> {
  %0 = relay.expand_dims %a {axis = 3 : i64} : (tensor<2xf32>) -> tensor<2x1xf32>
  func.return %0 : tensor<2x1xf32>
}
// CHECK: axis 3 is out of range for expanding a tensor of rank 1; expected -2 <= axis <= 1

// -----

func.func @expand_dims_negative_count(%a: tensor<2xf32>) -> tensor<2xf32> {
  %0 = relay.expand_dims %a {axis = 0 : i64, num_newaxis = -1 : i64} : (tensor<2xf32>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}
// CHECK: expected num_newaxis >= 0, but found -1

// -----

func.func @broadcast_to_bad(%a: tensor<3xf32>) -> tensor<2x4xf32> {
  %0 = relay.broadcast_to %a : (tensor<3xf32>) -> tensor<2x4xf32>
  func.return %0 : tensor<2x4xf32>
}
// CHECK: cannot broadcast shape [3] to [2, 4]

// -----

func.func @slice_lengths(%a: tensor<4xf32>) -> tensor<2xf32> {
  %0 = relay.strided_slice %a {begin = array<i64: 0>, end = array<i64: 2, 3>} : (tensor<4xf32>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}
// CHECK: expected begin, end and strides of one length, but found 1, 2 and 1

// -----

func.func @slice_zero_stride(%a: tensor<4xf32>) -> tensor<2xf32> {
  %0 = relay.strided_slice %a {begin = array<i64: 0>, end = array<i64: 2>, strides = array<i64: 0>} : (tensor<4xf32>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}
// CHECK: expected nonzero strides, but found [0]

// -----

func.func @slice_rank(%a: tensor<4xf32>) -> tensor<2xf32> {
  %0 = relay.strided_slice %a {begin = array<i64: 0, 0>, end = array<i64: 2, 2>} : (tensor<4xf32>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}
// CHECK: expected at most 1 slice entries for a tensor of rank 1, but found 2

// -----

func.func @slice_result(%a: tensor<4xf32>) -> tensor<3xf32> {
  %0 = relay.strided_slice %a {begin = array<i64: 0>, end = array<i64: 4>, strides = array<i64: 2>} : (tensor<4xf32>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}
// CHECK: expected result type tensor<2xf32> for 'relay.strided_slice', but found tensor<3xf32>

// -----

func.func @concat_mismatch(%a: tensor<2x3xf32>, %b: tensor<3x3xf32>) -> tensor<2x6xf32> {
  %0 = relay.concatenate %a, %b {axis = 1 : i64} : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<2x6xf32>
  func.return %0 : tensor<2x6xf32>
}
// CHECK: input 1 of shape [3, 3] does not match input 0 of shape [2, 3] outside axis 1

// -----

func.func @concat_empty() -> tensor<2xf32> {
  %0 = relay.concatenate {axis = 0 : i64} : () -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}
// CHECK: relay.concatenate needs at least one input

// -----

func.func @concat_axis(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = relay.concatenate %a {axis = 2 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}
// CHECK: axis 2 is out of range for a tensor of rank 2; expected -2 <= axis < 2

// -----

func.func @reduce_axis_range(%a: tensor<2x3xf32>) -> tensor<2xf32> {
  %0 = relay.sum %a {axis = array<i64: 2>} : (tensor<2x3xf32>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}
// CHECK: axis 2 is out of range for a tensor of rank 2; expected -2 <= axis < 2

// -----

func.func @reduce_axis_twice(%a: tensor<2x3xf32>) -> tensor<2xf32> {
  %0 = relay.mean %a {axis = array<i64: 1, -1>} : (tensor<2x3xf32>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}
// CHECK: axis [1, -1] names an axis twice

// -----

func.func @reduce_keepdims_result(%a: tensor<2x3xf32>) -> tensor<2xf32> {
  %0 = relay.max %a {axis = array<i64: 1>, keepdims = true} : (tensor<2x3xf32>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}
// CHECK: expected result type tensor<2x1xf32> for 'relay.max', but found tensor<2xf32>

// -----

func.func @dense_shape(%a: tensor<2x3xf32>, %w: tensor<4x5xf32>) -> tensor<2x4xf32> {
  %0 = relay.nn.dense %a, %w : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x4xf32>
  func.return %0 : tensor<2x4xf32>
}
// CHECK: expected weight of shape [units, 3] for data of shape [2, 3], but found [4, 5]

// -----

func.func @batch_matmul_rank(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x2xf32> {
  %0 = relay.nn.batch_matmul %a, %b : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x2xf32>
  func.return %0 : tensor<2x2xf32>
}
// CHECK: expected rank-3 operands, but found [2, 3] and [2, 3]

// -----

func.func @batch_matmul_k(%a: tensor<2x3x4xf32>, %b: tensor<2x3x5xf32>) -> tensor<2x3x3xf32> {
  %0 = relay.nn.batch_matmul %a, %b : (tensor<2x3x4xf32>, tensor<2x3x5xf32>) -> tensor<2x3x3xf32>
  func.return %0 : tensor<2x3x3xf32>
}
// CHECK: expected lhs [b, m, k] and rhs [b, n, k], but found [2, 3, 4] and [2, 3, 5]

// -----

// A batch of 1 broadcasts to 0, as in numpy (found by bench/fuzz.py: the verifier said 1).
func.func @batch_matmul_broadcast_to_empty(%a: tensor<0x3x2xf32>, %b: tensor<1x4x2xf32>) -> tensor<1x3x4xf32> {
  %0 = relay.nn.batch_matmul %a, %b : (tensor<0x3x2xf32>, tensor<1x4x2xf32>) -> tensor<1x3x4xf32>
  func.return %0 : tensor<1x3x4xf32>
}
// CHECK: expected result type tensor<0x3x4xf32> for 'relay.nn.batch_matmul', but found tensor<1x3x4xf32>

// -----

func.func @conv_rank(%x: tensor<1x3x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %0 = relay.nn.conv2d %x, %w : (tensor<1x3x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return %0 : tensor<1x4x6x6xf32>
}
// CHECK: expected NCHW data and OIHW weight of rank 4, but found [1, 3, 8] and [4, 3, 3, 3]

// -----

func.func @conv_groups(%x: tensor<1x4x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %0 = relay.nn.conv2d %x, %w {groups = 2 : i64} : (tensor<1x4x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return %0 : tensor<1x4x6x6xf32>
}
// CHECK: expected weight input channels * groups == data channels and output channels divisible by groups, but found data [1, 4, 8, 8], weight [4, 3, 3, 3], groups 2

// -----

func.func @conv_strides_count(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %0 = relay.nn.conv2d %x, %w {strides = array<i64: 1, 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return %0 : tensor<1x4x6x6xf32>
}
// CHECK: expected 2 values in strides, but found [1, 1, 1]

// -----

func.func @conv_zero_stride(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %0 = relay.nn.conv2d %x, %w {strides = array<i64: 0, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return %0 : tensor<1x4x6x6xf32>
}
// CHECK: expected positive height stride and dilation, but found stride 0 and dilation 1

// -----

func.func @conv_window_too_big(%x: tensor<1x3x2x2xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x1x1xf32> {
  %0 = relay.nn.conv2d %x, %w : (tensor<1x3x2x2xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x1x1xf32>
  func.return %0 : tensor<1x4x1x1xf32>
}
// CHECK: the height window 3 (dilation 1, stride 1) does not fit an input of size 2 with padding 0

// -----

func.func @conv_negative_padding(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %0 = relay.nn.conv2d %x, %w {padding = array<i64: 0, -1, 0, 0>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return %0 : tensor<1x4x6x6xf32>
}
// CHECK: expected padding [top, left, bottom, right] of non-negative values, but found [0, -1, 0, 0]

// -----

func.func @pool_size_count(%x: tensor<1x3x8x8xf32>) -> tensor<1x3x7x7xf32> {
  %0 = relay.nn.max_pool2d %x {pool_size = array<i64: 2>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x7x7xf32>
  func.return %0 : tensor<1x3x7x7xf32>
}
// CHECK: expected 2 values in pool_size, but found [2]

// -----

func.func @pool_size_zero(%x: tensor<1x3x8x8xf32>) -> tensor<1x3x9x8xf32> {
  %0 = relay.nn.avg_pool2d %x {pool_size = array<i64: 0, 1>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x9x8xf32>
  func.return %0 : tensor<1x3x9x8xf32>
}
// CHECK: expected a positive pool_size, but found [0, 1]

// -----

func.func @pool_stride_zero(%x: tensor<1x3x8x8xf32>) -> tensor<1x3x7x7xf32> {
  %0 = relay.nn.max_pool2d %x {pool_size = array<i64: 2, 2>, strides = array<i64: 1, 0>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x7x7xf32>
  func.return %0 : tensor<1x3x7x7xf32>
}
// CHECK: expected positive width stride and dilation, but found stride 0 and dilation 1

// -----

func.func @conv_dilation_zero(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %0 = relay.nn.conv2d %x, %w {dilation = array<i64: 0, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return %0 : tensor<1x4x6x6xf32>
}
// CHECK: expected positive height stride and dilation, but found stride 1 and dilation 0

// -----

func.func @pool_padding_too_big(%x: tensor<1x3x8x8xf32>) -> tensor<1x3x9x9xf32> {
  %0 = relay.nn.avg_pool2d %x {pool_size = array<i64: 2, 2>, padding = array<i64: 2, 2>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x9x9xf32>
  func.return %0 : tensor<1x3x9x9xf32>
}
// CHECK: expected padding smaller than pool_size [2, 2], but found [2, 2, 2, 2]

// -----

func.func @pool_missing_size(%x: tensor<1x3x8x8xf32>) -> tensor<1x3x8x8xf32> {
  %0 = relay.nn.avg_pool2d %x : (tensor<1x3x8x8xf32>) -> tensor<1x3x8x8xf32>
  func.return %0 : tensor<1x3x8x8xf32>
}
// CHECK: property 'pool_size' expected in operation 'relay.nn.avg_pool2d'

// -----

func.func @global_pool_rank(%x: tensor<3x8x8xf32>) -> tensor<3x1x1xf32> {
  %0 = relay.nn.global_avg_pool2d %x : (tensor<3x8x8xf32>) -> tensor<3x1x1xf32>
  func.return %0 : tensor<3x1x1xf32>
}
// CHECK: expected NCHW data of rank 4, but found [3, 8, 8]

// -----

func.func @softmax_axis(%x: tensor<3x8xf32>) -> tensor<3x8xf32> {
  %0 = relay.nn.softmax %x {axis = 2 : i64} : (tensor<3x8xf32>) -> tensor<3x8xf32>
  func.return %0 : tensor<3x8xf32>
}
// CHECK: axis 2 is out of range for a tensor of rank 2; expected -2 <= axis < 2

// -----

func.func @constant_type() -> tensor<3xf32> {
  %0 = relay.constant {value = dense<1.0> : tensor<4xf32>} : tensor<3xf32>
  func.return %0 : tensor<3xf32>
}
// CHECK: expected the value's type tensor<4xf32> to equal the result type tensor<3xf32>

// -----

func.func @scope_key(%x: tensor<3xf32>) -> tensor<3xf32> {
  %0 = relay.on_device %x {se_scope = #relay.se_scope<device = cpu, colour = "red">} : tensor<3xf32>
  func.return %0 : tensor<3xf32>
}
// CHECK: unknown se_scope key 'colour'; expected device, id, target or memory

// -----

func.func @scope_device(%x: tensor<3xf32>) -> tensor<3xf32> {
  %0 = relay.on_device %x {se_scope = #relay.se_scope<device = gpu>} : tensor<3xf32>
  func.return %0 : tensor<3xf32>
}
// CHECK: unknown device type 'gpu'; expected one of cpu, cuda, opencl, vulkan, metal, rocm, hexagon, webgpu, ext_dev

// -----

func.func @scope_id(%x: tensor<3xf32>) -> tensor<3xf32> {
  %0 = relay.on_device %x {se_scope = #relay.se_scope<device = cpu, id = -1>} : tensor<3xf32>
  func.return %0 : tensor<3xf32>
}
// CHECK: se_scope id must be >= 0, but found -1

// -----

func.func @scope_dup(%x: tensor<3xf32>) -> tensor<3xf32> {
  %0 = relay.on_device %x {se_scope = #relay.se_scope<device = cpu, device = cpu>} : tensor<3xf32>
  func.return %0 : tensor<3xf32>
}
// CHECK: duplicate se_scope key 'device'

// -----

func.func @on_device_no_scope(%x: tensor<3xf32>) -> tensor<3xf32> {
  %0 = relay.on_device %x : tensor<3xf32>
  func.return %0 : tensor<3xf32>
}
// CHECK: property 'se_scope' expected in operation 'relay.on_device'

// -----

func.func @on_device_type(%x: tensor<3xf32>) -> tensor<4xf32> {
  %0 = "relay.on_device"(%x) {se_scope = #relay.se_scope<>} : (tensor<3xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
// CHECK: result 'res' at position 0 does not verify:
// CHECK-NEXT: attribute tensor<3xf32> expected from variable 'T', but got tensor<4xf32>

// -----

func.func @device_copy_missing(%x: tensor<3xf32>) -> tensor<3xf32> {
  %0 = relay.device_copy %x {src_se_scope = #relay.se_scope<device = cpu>} : tensor<3xf32>
  func.return %0 : tensor<3xf32>
}
// CHECK: property 'dst_se_scope' expected in operation 'relay.device_copy'

// -----

func.func @fused_block_args(%x: tensor<3xf32>) -> tensor<3xf32> {
  %0 = relay.fused(%x) : (tensor<3xf32>) -> tensor<3xf32> {
  ^bb0(%a: tensor<4xf32>):
    relay.yield %a : tensor<4xf32>
  }
  func.return %0 : tensor<3xf32>
}
// CHECK: expected the block argument types (tensor<4xf32>) to match the input types (tensor<3xf32>)

// -----

func.func @fused_yield_type(%x: tensor<3xf32>) -> tensor<3xf32> {
  %0 = relay.fused(%x) : (tensor<3xf32>) -> tensor<3xf32> {
  ^bb0(%a: tensor<3xf32>):
    %b = relay.sum %a : (tensor<3xf32>) -> tensor<f32>
    relay.yield %b : tensor<f32>
  }
  func.return %0 : tensor<3xf32>
}
// CHECK: expected the yielded type tensor<f32> to equal the result type tensor<3xf32>

// -----

func.func @fused_yield_two(%x: tensor<3xf32>) -> tensor<3xf32> {
  %0 = relay.fused(%x) : (tensor<3xf32>) -> tensor<3xf32> {
  ^bb0(%a: tensor<3xf32>):
    relay.yield %a, %a : tensor<3xf32>, tensor<3xf32>
  }
  func.return %0 : tensor<3xf32>
}
// CHECK: expected the body to end in relay.yield of exactly one value

// -----

func.func @fused_captures(%x: tensor<3xf32>) -> tensor<3xf32> {
  %0 = relay.fused() : () -> tensor<3xf32> {
    %b = relay.exp %x : tensor<3xf32>
    relay.yield %b : tensor<3xf32>
  }
  func.return %0 : tensor<3xf32>
}
// CHECK: Operation using value defined out of its IsolatedFromAbove parent: ExpOp(%b = relay.exp %x : tensor<3xf32>)

// -----

func.func @yield_outside(%x: tensor<3xf32>) -> tensor<3xf32> {
  relay.yield %x : tensor<3xf32>
}
// CHECK: 'relay.yield' expects parent op 'relay.fused'

// -----

func.func @launch_no_scope(%x: tensor<3xf32>) -> tensor<3xf32> {
  %0 = relay.launch @k(%x) : (tensor<3xf32>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}
// CHECK: property 'se_scope' expected in operation 'relay.launch'

// -----

// A max or min over an empty axis has no value (numpy raises); sum and mean are defined.
func.func @max_of_nothing(%a: tensor<0x4xf32>) -> tensor<4xf32> {
  // CHECK: 'relay.max' reduces axis 0 of length 0, which has no maximum; reduce a non-empty axis
  %0 = relay.max %a {axis = array<i64: 0>} : (tensor<0x4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @min_of_nothing(%a: tensor<3x0xf32>) -> tensor<3xf32> {
  // CHECK: 'relay.min' reduces axis 1 of length 0, which has no minimum; reduce a non-empty axis
  %0 = relay.min %a {axis = array<i64: -1>} : (tensor<3x0xf32>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}

// -----

func.func @matmul_rank(%a: tensor<3xf32>, %b: tensor<3x2xf32>) -> tensor<2xf32> {
  // CHECK: expected lhs [..., m, k] and rhs [..., k, n] of rank >= 2, but found [3] and [3, 2]
  %0 = relay.nn.matmul %a, %b : (tensor<3xf32>, tensor<3x2xf32>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}

// -----

func.func @matmul_k(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // CHECK: expected lhs [..., m, k] and rhs [..., k, n] of rank >= 2, but found [2, 3] and [2, 3]
  %0 = relay.nn.matmul %a, %b : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}

// -----

func.func @matmul_batch(%a: tensor<2x1x3xf32>, %b: tensor<3x3x4xf32>) -> tensor<3x1x4xf32> {
  // CHECK: the batch axes [2] of lhs [2, 1, 3] and [3] of rhs [3, 3, 4] are not broadcast-compatible
  %0 = relay.nn.matmul %a, %b : (tensor<2x1x3xf32>, tensor<3x3x4xf32>) -> tensor<3x1x4xf32>
  func.return %0 : tensor<3x1x4xf32>
}

// -----

// Batch axes broadcast as in numpy: [2, 1] with [4] is [2, 4].
func.func @matmul_result(%a: tensor<2x1x3x5xf32>, %b: tensor<4x5x6xf32>) -> tensor<2x1x3x6xf32> {
  // CHECK: expected result type tensor<2x4x3x6xf32> for 'relay.nn.matmul', but found tensor<2x1x3x6xf32>
  %0 = relay.nn.matmul %a, %b : (tensor<2x1x3x5xf32>, tensor<4x5x6xf32>) -> tensor<2x1x3x6xf32>
  func.return %0 : tensor<2x1x3x6xf32>
}

// -----

func.func @layer_norm_gamma(%a: tensor<2x3x5xf32>, %g: tensor<5xf32>) -> tensor<2x3x5xf32> {
  // CHECK: expected gamma of shape [3, 5] (data axes 1.. of [2, 3, 5]), but found [5]
  %0 = relay.nn.layer_norm %a, %g, %g {axis = 1 : i64} : (tensor<2x3x5xf32>, tensor<5xf32>, tensor<5xf32>) -> tensor<2x3x5xf32>
  func.return %0 : tensor<2x3x5xf32>
}

// -----

func.func @layer_norm_beta(%a: tensor<2x3x5xf32>, %g: tensor<5xf32>, %b: tensor<3xf32>) -> tensor<2x3x5xf32> {
  // CHECK: expected beta of shape [5] (data axes 2.. of [2, 3, 5]), but found [3]
  %0 = relay.nn.layer_norm %a, %g, %b : (tensor<2x3x5xf32>, tensor<5xf32>, tensor<3xf32>) -> tensor<2x3x5xf32>
  func.return %0 : tensor<2x3x5xf32>
}

// -----

func.func @layer_norm_axis(%a: tensor<2x3xf32>, %g: tensor<3xf32>) -> tensor<2x3xf32> {
  // CHECK: axis 2 is out of range for a tensor of rank 2; expected -2 <= axis < 2
  %0 = relay.nn.layer_norm %a, %g, %g {axis = 2 : i64} : (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}

// -----

func.func @layer_norm_epsilon(%a: tensor<2x3xf32>, %g: tensor<3xf32>) -> tensor<2x3xf32> {
  // CHECK: expected epsilon >= 0, but found -1.0
  %0 = relay.nn.layer_norm %a, %g, %g {epsilon = -1.0 : f32} : (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}

// -----

func.func @leaky_relu_alpha(%a: tensor<2xf32>) -> tensor<2xf32> {
  // CHECK: Operation does not verify: 1 : i64 should be of base attribute float
  %0 = relay.nn.leaky_relu %a {alpha = 1 : i64} : tensor<2xf32>
  func.return %0 : tensor<2xf32>
}

// -----

func.func @pad_width_count(%a: tensor<2x3xf32>) -> tensor<4x3xf32> {
  // CHECK: expected pad_width to hold 2 values (before, after) per axis, 4 for a tensor of rank 2, but found 2
  %0 = relay.nn.pad %a {pad_width = array<i64: 1, 1>} : (tensor<2x3xf32>) -> tensor<4x3xf32>
  func.return %0 : tensor<4x3xf32>
}

// -----

func.func @pad_crop_too_much(%a: tensor<2x3xf32>) -> tensor<2x0xf32> {
  // CHECK: pads (-2, -2) crop more than the 3 elements of axis 1
  %0 = relay.nn.pad %a {pad_width = array<i64: 0, 0, -2, -2>} : (tensor<2x3xf32>) -> tensor<2x0xf32>
  func.return %0 : tensor<2x0xf32>
}

// -----

func.func @pad_mode(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // CHECK: expected pad_mode to be one of 'constant', 'edge', 'reflect', 'wrap', but found 'symmetric'
  %0 = relay.nn.pad %a {pad_width = array<i64: 0, 0, 0, 0>, pad_mode = "symmetric"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}

// -----

func.func @pad_reflect_too_far(%a: tensor<2x3xf32>) -> tensor<2x6xf32> {
  // CHECK: reflect pads (3, 0) of axis 1 must be smaller than its length 3
  %0 = relay.nn.pad %a {pad_width = array<i64: 0, 0, 3, 0>, pad_mode = "reflect"} : (tensor<2x3xf32>) -> tensor<2x6xf32>
  func.return %0 : tensor<2x6xf32>
}

// -----

func.func @pad_edge_of_nothing(%a: tensor<0x3xf32>) -> tensor<1x3xf32> {
  // CHECK: cannot pad axis 0 of length 0 in edge mode; it has no border
  %0 = relay.nn.pad %a {pad_width = array<i64: 1, 0, 0, 0>, pad_mode = "edge"} : (tensor<0x3xf32>) -> tensor<1x3xf32>
  func.return %0 : tensor<1x3xf32>
}

// -----

func.func @pad_result(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // CHECK: expected result type tensor<3x5xf32> for 'relay.nn.pad', but found tensor<2x3xf32>
  %0 = relay.nn.pad %a {pad_width = array<i64: 1, 0, 1, 1>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}

// -----

func.func @take_out_of_range(%a: tensor<5x4xf32>) -> tensor<2x4xf32> {
  // CHECK: index -6 is out of range for axis 0 of length 5; expected -5 <= index < 5
  %0 = relay.take %a {indices = dense<[1, -6]> : tensor<2xi64>, axis = 0 : i64} : (tensor<5x4xf32>) -> tensor<2x4xf32>
  func.return %0 : tensor<2x4xf32>
}

// -----

func.func @take_float_indices(%a: tensor<5x4xf32>) -> tensor<2x4xf32> {
  // CHECK: expected indices of element type i64, but found tensor<2xf32>
  %0 = relay.take %a {indices = dense<[1.0, 2.0]> : tensor<2xf32>, axis = 0 : i64} : (tensor<5x4xf32>) -> tensor<2x4xf32>
  func.return %0 : tensor<2x4xf32>
}

// -----

func.func @take_axis(%a: tensor<5x4xf32>) -> tensor<5x4xf32> {
  // CHECK: axis 2 is out of range for a tensor of rank 2; expected -2 <= axis < 2
  %0 = relay.take %a {indices = dense<1> : tensor<i64>, axis = 2 : i64} : (tensor<5x4xf32>) -> tensor<5x4xf32>
  func.return %0 : tensor<5x4xf32>
}

// -----

func.func @take_result(%a: tensor<5x4xf32>) -> tensor<5x4xf32> {
  // CHECK: expected result type tensor<5x1x3xf32> for 'relay.take', but found tensor<5x4xf32>
  %0 = relay.take %a {indices = dense<[[1, 2, 3]]> : tensor<1x3xi64>, axis = 1 : i64} : (tensor<5x4xf32>) -> tensor<5x4xf32>
  func.return %0 : tensor<5x4xf32>
}

// -----

// Dilation 3 with padding 1: window 0 reads rows -1 and 2, but the input has two rows.
func.func @pool_empty_window(%a: tensor<1x1x2x4xf32>) -> tensor<1x1x1x4xf32> {
  // CHECK: pooling window 0 along the height (taps -1, 2, ... with dilation 3) holds no element of the input of size 2; reduce the padding or the dilation
  %0 = relay.nn.max_pool2d %a {pool_size = array<i64: 2, 1>, dilation = array<i64: 3, 1>, padding = array<i64: 1, 0, 1, 0>} : (tensor<1x1x2x4xf32>) -> tensor<1x1x1x4xf32>
  func.return %0 : tensor<1x1x1x4xf32>
}

// -----

// ceil_mode: 8 rows give (8 - 3) / 2 + 1 = 3.5, rounded up to 4; 7 columns give exactly 3.
func.func @pool_ceil_mode(%a: tensor<1x1x8x7xf32>) -> tensor<1x1x3x3xf32> {
  // CHECK: expected result type tensor<1x1x4x3xf32> for 'relay.nn.max_pool2d', but found tensor<1x1x3x3xf32>
  %0 = relay.nn.max_pool2d %a {pool_size = array<i64: 3, 3>, strides = array<i64: 2, 2>, ceil_mode = true} : (tensor<1x1x8x7xf32>) -> tensor<1x1x3x3xf32>
  func.return %0 : tensor<1x1x3x3xf32>
}
