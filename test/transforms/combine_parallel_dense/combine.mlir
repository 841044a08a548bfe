// RUN: opt-tool %s -p combine-parallel-dense --split-input-file | filecheck %s

// The transformer's queries, keys and values in small: three denses of %x with constant
// weights, each + a constant bias, become one dense over the stacked weights, one bias_add
// over the joined biases, and a slice of the units axis per branch, named as the branch was.

// CHECK-LABEL: func.func @combined
// CHECK-SAME:    (%[[X:.*]]: tensor<2x4xf32>)
// CHECK-NEXT:    %wq_wk_wv = relay.constant {value = dense<{{\[}}[1.000000e+00, 1.000000e+00, 1.000000e+00, 1.000000e+00], [2.000000e+00, 2.000000e+00, 2.000000e+00, 2.000000e+00], [2.000000e+00, 2.000000e+00, 2.000000e+00, 2.000000e+00], [3.000000e+00, 3.000000e+00, 3.000000e+00, 3.000000e+00]]> : tensor<4x4xf32>} : tensor<4x4xf32>
// CHECK-NEXT:    %[[D:.*]] = relay.nn.dense %[[X]], %wq_wk_wv : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %bq_bk_bv = relay.constant {value = dense<[1.000000e-01, 2.000000e-01, 3.000000e-01, 4.000000e-01]> : tensor<4xf32>} : tensor<4xf32>
// CHECK-NEXT:    %[[BIASED:.*]] = relay.nn.bias_add %[[D]], %bq_bk_bv : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %q = relay.strided_slice %[[BIASED]] {begin = array<i64: 0, 0>, end = array<i64: 2, 1>} : (tensor<2x4xf32>) -> tensor<2x1xf32>
// CHECK-NEXT:    %k = relay.strided_slice %[[BIASED]] {begin = array<i64: 0, 1>, end = array<i64: 2, 3>} : (tensor<2x4xf32>) -> tensor<2x2xf32>
// CHECK-NEXT:    %v = relay.strided_slice %[[BIASED]] {begin = array<i64: 0, 3>, end = array<i64: 2, 4>} : (tensor<2x4xf32>) -> tensor<2x1xf32>
// CHECK-NEXT:    func.return %q, %k, %v
func.func @combined(%x: tensor<2x4xf32>) -> (tensor<2x1xf32>, tensor<2x2xf32>, tensor<2x1xf32>) {
  %wq = relay.constant {value = dense<1.0> : tensor<1x4xf32>} : tensor<1x4xf32>
  %bq = relay.constant {value = dense<0.1> : tensor<1xf32>} : tensor<1xf32>
  %wk = relay.constant {value = dense<2.0> : tensor<2x4xf32>} : tensor<2x4xf32>
  %bk = relay.constant {value = dense<[0.2, 0.3]> : tensor<2xf32>} : tensor<2xf32>
  %wv = relay.constant {value = dense<3.0> : tensor<1x4xf32>} : tensor<1x4xf32>
  %bv = relay.constant {value = dense<0.4> : tensor<1xf32>} : tensor<1xf32>
  %0 = relay.nn.dense %x, %wq : (tensor<2x4xf32>, tensor<1x4xf32>) -> tensor<2x1xf32>
  %q = relay.nn.bias_add %0, %bq : (tensor<2x1xf32>, tensor<1xf32>) -> tensor<2x1xf32>
  %1 = relay.nn.dense %x, %wk : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x2xf32>
  %k = relay.nn.bias_add %1, %bk : (tensor<2x2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  %2 = relay.nn.dense %x, %wv : (tensor<2x4xf32>, tensor<1x4xf32>) -> tensor<2x1xf32>
  %v = relay.nn.bias_add %2, %bv : (tensor<2x1xf32>, tensor<1xf32>) -> tensor<2x1xf32>
  func.return %q, %k, %v : tensor<2x1xf32>, tensor<2x2xf32>, tensor<2x1xf32>
}

// -----

// Followers combine while every branch has one of the same kind and attributes: the adds of
// a scalar and of a row (each broadcast to its branch's units), the clips; not the relu that
// only one branch has. The scopes of the denses go onto every new op.

// CHECK-LABEL: func.func @followers
// CHECK:         %[[D:.*]] = relay.nn.dense %{{.*}}, %{{.*}} {se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">} : (tensor<3x2xf32>, tensor<5x2xf32>) -> tensor<3x5xf32>
// CHECK-NEXT:    %half_row = relay.constant {value = dense<{{\[}}[5.000000e-01, 5.000000e-01, 1.000000e+00, 2.000000e+00, 3.000000e+00]]> : tensor<1x5xf32>, se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">} : tensor<1x5xf32>
// CHECK-NEXT:    %[[A:.*]] = relay.add %half_row, %[[D]] {se_scope = {{.*}}} : (tensor<1x5xf32>, tensor<3x5xf32>) -> tensor<3x5xf32>
// CHECK-NEXT:    %[[C:.*]] = relay.clip %[[A]] {a_min = 0.000000e+00 : f32, a_max = 6.000000e+00 : f32, se_scope = {{.*}}} : tensor<3x5xf32>
// CHECK-NEXT:    %[[L:.*]] = relay.strided_slice %[[C]] {begin = array<i64: 0, 0>, end = array<i64: 3, 2>, se_scope = {{.*}}} : (tensor<3x5xf32>) -> tensor<3x2xf32>
// CHECK-NEXT:    %[[R:.*]] = relay.strided_slice %[[C]] {begin = array<i64: 0, 2>, end = array<i64: 3, 5>, se_scope = {{.*}}} : (tensor<3x5xf32>) -> tensor<3x3xf32>
// CHECK-NEXT:    %[[RELU:.*]] = relay.nn.relu %[[L]]
// CHECK-NEXT:    func.return %[[RELU]], %[[R]]
func.func @followers(%x: tensor<3x2xf32>) -> (tensor<3x2xf32>, tensor<3x3xf32>) {
  %w0 = relay.constant {value = dense<1.0> : tensor<2x2xf32>, se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">} : tensor<2x2xf32>
  %w1 = relay.constant {value = dense<2.0> : tensor<3x2xf32>, se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">} : tensor<3x2xf32>
  %half = relay.constant {value = dense<0.5> : tensor<f32>, se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">} : tensor<f32>
  %row = relay.constant {value = dense<[[1.0, 2.0, 3.0]]> : tensor<1x3xf32>, se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">} : tensor<1x3xf32>
  %0 = relay.nn.dense %x, %w0 {se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">} : (tensor<3x2xf32>, tensor<2x2xf32>) -> tensor<3x2xf32>
  %1 = relay.add %half, %0 {se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">} : (tensor<f32>, tensor<3x2xf32>) -> tensor<3x2xf32>
  %2 = relay.clip %1 {a_min = 0.0 : f32, a_max = 6.0 : f32, se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">} : tensor<3x2xf32>
  %3 = relay.nn.relu %2 {se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">} : tensor<3x2xf32>
  %4 = relay.nn.dense %x, %w1 {se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">} : (tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<3x3xf32>
  %5 = relay.add %row, %4 {se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">} : (tensor<1x3xf32>, tensor<3x3xf32>) -> tensor<3x3xf32>
  %6 = relay.clip %5 {a_min = 0.0 : f32, a_max = 6.0 : f32, se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">} : tensor<3x3xf32>
  func.return %3, %6 : tensor<3x2xf32>, tensor<3x3xf32>
}

// -----

// A dense whose result is also used elsewhere, and a bias on one branch only: the denses
// combine, the slices feed the old users, the bias_add stays on its branch.

// CHECK-LABEL: func.func @dense_used_twice
// CHECK:         %[[D:.*]] = relay.nn.dense %{{.*}}, %{{.*}} : (tensor<2x4xf32>, tensor<5x4xf32>) -> tensor<2x5xf32>
// CHECK-NEXT:    %[[A:.*]] = relay.strided_slice %[[D]] {begin = array<i64: 0, 0>, end = array<i64: 2, 3>} : (tensor<2x5xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %[[B:.*]] = relay.strided_slice %[[D]] {begin = array<i64: 0, 3>, end = array<i64: 2, 5>} : (tensor<2x5xf32>) -> tensor<2x2xf32>
// CHECK-NEXT:    relay.nn.bias_add %[[A]]
// CHECK-NEXT:    relay.exp %[[A]]
// CHECK-NEXT:    relay.exp %[[B]]
// CHECK-NOT:     relay.nn.dense
func.func @dense_used_twice(%x: tensor<2x4xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x2xf32>) {
  %w0 = relay.constant {value = dense<1.0> : tensor<3x4xf32>} : tensor<3x4xf32>
  %b0 = relay.constant {value = dense<1.0> : tensor<3xf32>} : tensor<3xf32>
  %w1 = relay.constant {value = dense<2.0> : tensor<2x4xf32>} : tensor<2x4xf32>
  %0 = relay.nn.dense %x, %w0 : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  %1 = relay.nn.bias_add %0, %b0 : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %2 = relay.exp %0 : tensor<2x3xf32>
  %3 = relay.nn.dense %x, %w1 : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x2xf32>
  %4 = relay.exp %3 : tensor<2x2xf32>
  func.return %1, %2, %4 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x2xf32>
}

// -----

// Declined: weights that are parameters (not bound by params=, so not constants).

// CHECK-LABEL: func.func @weights_not_constant
// CHECK-COUNT-2: relay.nn.dense
// CHECK-NOT:     relay.strided_slice
func.func @weights_not_constant(%x: tensor<2x4xf32>, %w0: tensor<3x4xf32>, %w1: tensor<3x4xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  %0 = relay.nn.dense %x, %w0 : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  %1 = relay.nn.dense %x, %w1 : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  func.return %0, %1 : tensor<2x3xf32>, tensor<2x3xf32>
}

// -----

// Declined: denses of different data.

// CHECK-LABEL: func.func @different_data
// CHECK-COUNT-2: relay.nn.dense
// CHECK-NOT:     relay.strided_slice
func.func @different_data(%x: tensor<2x4xf32>, %y: tensor<2x4xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  %w = relay.constant {value = dense<1.0> : tensor<3x4xf32>} : tensor<3x4xf32>
  %0 = relay.nn.dense %x, %w : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  %1 = relay.nn.dense %y, %w : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  func.return %0, %1 : tensor<2x3xf32>, tensor<2x3xf32>
}

// -----

// Declined: denses on different scopes (one on the host, one on opencl).

// CHECK-LABEL: func.func @different_scopes
// CHECK-COUNT-2: relay.nn.dense
// CHECK-NOT:     relay.strided_slice
func.func @different_scopes(%x: tensor<2x4xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  %w0 = relay.constant {value = dense<1.0> : tensor<3x4xf32>, se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">} : tensor<3x4xf32>
  %w1 = relay.constant {value = dense<1.0> : tensor<3x4xf32>, se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">} : tensor<3x4xf32>
  %0 = relay.nn.dense %x, %w0 {se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">} : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  %1 = relay.nn.dense %x, %w1 {se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">} : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  func.return %0, %1 : tensor<2x3xf32>, tensor<2x3xf32>
}

// -----

// Declined: a single dense.

// CHECK-LABEL: func.func @single_dense
// CHECK-NEXT:    relay.constant
// CHECK-NEXT:    relay.nn.dense
// CHECK-NEXT:    func.return
func.func @single_dense(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %w = relay.constant {value = dense<1.0> : tensor<3x4xf32>} : tensor<3x4xf32>
  %0 = relay.nn.dense %x, %w : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}
