// RUN: opt-tool %s -p convert-relay-to-loops --split-input-file | filecheck %s

// The ops imported models need (matmul, layer_norm, leaky_relu, pad, take), lowered.

// A matmul whose rhs is [k, n] (not transposed) and has no batch axis: the batch index of the
// lhs is the work item's, the rhs's is dropped (broadcast); register blocks of 4 columns, the
// rhs read at [k, j].

// CHECK-LABEL: func.func @matmul
// CHECK:       func.func @fused_nn_matmul(%[[A:.*]]: memref<2x3x5xf32>, %[[B:.*]]: memref<5x4xf32>, %[[OUT:.*]]: memref<2x3x4xf32>)
// CHECK-SAME:    relay.schedule = "matmul_block"
// CHECK:         ^{{.*}}(%[[N:.*]]: index, %[[I:.*]]: index):
// CHECK-NEXT:      %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} = scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args
// CHECK-NEXT:        %[[X:.*]] = memref.load %[[A]][%[[N]], %[[I]], %[[K]]] : memref<2x3x5xf32>
// CHECK-NEXT:        %[[Y:.*]] = memref.load %[[B]][%[[K]], %{{.*}}] : memref<5x4xf32>
// CHECK-NEXT:        arith.mulf %[[X]], %[[Y]] : f32
func.func @matmul(%a: tensor<2x3x5xf32>, %b: tensor<5x4xf32>) -> tensor<2x3x4xf32> {
  %0 = relay.fused(%a, %b) {kernel_name = "fused_nn_matmul", se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">} : (tensor<2x3x5xf32>, tensor<5x4xf32>) -> tensor<2x3x4xf32> {
  ^bb0(%x: tensor<2x3x5xf32>, %y: tensor<5x4xf32>):
    %1 = relay.nn.matmul %x, %y : (tensor<2x3x5xf32>, tensor<5x4xf32>) -> tensor<2x3x4xf32>
    relay.yield %1 : tensor<2x3x4xf32>
  }
  func.return %0 : tensor<2x3x4xf32>
}

// -----

// A layer_norm over its last two axes: a work item per row (the axis before), the mean (the
// row's first element plus the mean difference from it) and 1/std in two loop nests over the
// row, then a nest storing (x - mean) * rstd * gamma + beta.

// CHECK-LABEL: func.func @layer_norm
// CHECK:       func.func @fused_nn_layer_norm(%[[X:.*]]: memref<2x3x4xf32>, %[[G:.*]]: memref<3x4xf32>, %[[B:.*]]: memref<3x4xf32>, %[[OUT:.*]]: memref<2x3x4xf32>)
// CHECK-SAME:    relay.schedule = "layer_norm_rows"
// CHECK-DAG:     %[[COUNT:.*]] = arith.constant 1.200000e+01 : f32
// CHECK-DAG:     %[[EPS:.*]] = arith.constant 1.000000e-03 : f32
// CHECK:         "scf.parallel"
// CHECK-NEXT:    ^{{.*}}(%[[N:.*]]: index):
// CHECK-NEXT:      %[[FIRST:.*]] = memref.load %[[X]][%[[N]], %[[C0:.*]], %[[C0]]]
// CHECK-NEXT:      %[[SUM:.*]] = scf.for
// CHECK-NEXT:        scf.for
// CHECK-NEXT:          %[[E:.*]] = memref.load %[[X]][%[[N]], %{{.*}}, %{{.*}}]
// CHECK-NEXT:          arith.subf %[[E]], %[[FIRST]] : f32
// CHECK:           %[[MEAN_D:.*]] = arith.divf %[[SUM]], %[[COUNT]] : f32
// CHECK-NEXT:      %[[MEAN:.*]] = arith.addf %[[FIRST]], %[[MEAN_D]] : f32
// CHECK-NEXT:      %[[SQ:.*]] = scf.for
// CHECK-NEXT:        scf.for
// CHECK-NEXT:          memref.load %[[X]]
// CHECK-NEXT:          %[[D:.*]] = arith.subf %{{.*}}, %[[MEAN]] : f32
// CHECK-NEXT:          arith.mulf %[[D]], %[[D]] : f32
// CHECK:           %[[VAR:.*]] = arith.divf %[[SQ]], %[[COUNT]] : f32
// CHECK-NEXT:      %[[VE:.*]] = arith.addf %[[VAR]], %[[EPS]] : f32
// CHECK-NEXT:      %[[RSTD:.*]] = math.rsqrt %[[VE]] : f32
// CHECK-NEXT:      scf.for %[[I:.*]] = {{.*}} {
// CHECK-NEXT:        scf.for %[[J:.*]] = {{.*}} {
// CHECK-NEXT:          %[[V:.*]] = memref.load %[[X]][%[[N]], %[[I]], %[[J]]]
// CHECK-NEXT:          %[[C:.*]] = arith.subf %[[V]], %[[MEAN]] : f32
// CHECK-NEXT:          %[[S:.*]] = arith.mulf %[[C]], %[[RSTD]] : f32
// CHECK-NEXT:          %[[GV:.*]] = memref.load %[[G]][%[[I]], %[[J]]]
// CHECK-NEXT:          %[[SG:.*]] = arith.mulf %[[S]], %[[GV]] : f32
// CHECK-NEXT:          %[[BV:.*]] = memref.load %[[B]][%[[I]], %[[J]]]
// CHECK-NEXT:          %[[R:.*]] = arith.addf %[[SG]], %[[BV]] : f32
// CHECK-NEXT:          memref.store %[[R]], %[[OUT]][%[[N]], %[[I]], %[[J]]]
func.func @layer_norm(%a: tensor<2x3x4xf32>, %g: tensor<3x4xf32>, %b: tensor<3x4xf32>) -> tensor<2x3x4xf32> {
  %0 = relay.fused(%a, %g, %b) {kernel_name = "fused_nn_layer_norm", se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">} : (tensor<2x3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<2x3x4xf32> {
  ^bb0(%x: tensor<2x3x4xf32>, %y: tensor<3x4xf32>, %z: tensor<3x4xf32>):
    %1 = relay.nn.layer_norm %x, %y, %z {axis = 1 : i64, epsilon = 1.0e-3 : f32} : (tensor<2x3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<2x3x4xf32>
    relay.yield %1 : tensor<2x3x4xf32>
  }
  func.return %0 : tensor<2x3x4xf32>
}

// -----

// leaky_relu: x where x > 0 (ordered: false for NaN), else alpha * x (NaN stays NaN).

// CHECK-LABEL: func.func @leaky_relu
// CHECK:       func.func @fused_nn_leaky_relu(%[[X:.*]]: memref<5xf32>, %[[OUT:.*]]: memref<5xf32>)
// CHECK-DAG:     %[[ALPHA:.*]] = arith.constant 1.000000e-01 : f32
// CHECK-DAG:     %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK:           %[[V:.*]] = memref.load %[[X]]
// CHECK-NEXT:      %[[S:.*]] = arith.mulf %[[V]], %[[ALPHA]] : f32
// CHECK-NEXT:      %[[P:.*]] = arith.cmpf ogt, %[[V]], %[[ZERO]] : f32
// CHECK-NEXT:      %[[R:.*]] = arith.select %[[P]], %[[V]], %[[S]] : f32
// CHECK-NEXT:      memref.store %[[R]], %[[OUT]]
func.func @leaky_relu(%a: tensor<5xf32>) -> tensor<5xf32> {
  %0 = relay.fused(%a) {kernel_name = "fused_nn_leaky_relu", se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">} : (tensor<5xf32>) -> tensor<5xf32> {
  ^bb0(%x: tensor<5xf32>):
    %1 = relay.nn.leaky_relu %x {alpha = 0.1 : f32} : tensor<5xf32>
    relay.yield %1 : tensor<5xf32>
  }
  func.return %0 : tensor<5xf32>
}

// -----

// A constant pad: the input index is the output's minus the pad before; one scf.if on the
// axes padded (row: before, column: after) reads the input inside and yields the pad value
// outside.

// CHECK-LABEL: func.func @pad_constant
// CHECK:       func.func @fused_nn_pad(%[[X:.*]]: memref<3x4xf32>, %[[OUT:.*]]: memref<4x6xf32>)
// CHECK-DAG:     %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG:     %[[CM1:.*]] = arith.constant -1 : index
// CHECK-DAG:     %[[C4:.*]] = arith.constant 4 : index
// CHECK-DAG:     %[[VALUE:.*]] = arith.constant 5.000000e+00 : f32
// CHECK:         ^{{.*}}(%[[I:.*]]: index, %[[J:.*]]: index):
// CHECK-NEXT:      %[[R:.*]] = arith.addi %[[I]], %[[CM1]] : index
// CHECK-NEXT:      %[[T1:.*]] = arith.cmpi sge, %[[R]], %[[C0]] : index
// CHECK-NEXT:      %[[T2:.*]] = arith.cmpi slt, %[[J]], %[[C4]] : index
// CHECK-NEXT:      %[[IN:.*]] = arith.select %[[T1]], %[[T2]], %[[T1]] : i1
// CHECK-NEXT:      %[[V:.*]] = scf.if %[[IN]] -> (f32) {
// CHECK-NEXT:        %[[L:.*]] = memref.load %[[X]][%[[R]], %[[J]]] : memref<3x4xf32>
// CHECK-NEXT:        scf.yield %[[L]] : f32
// CHECK-NEXT:      } else {
// CHECK-NEXT:        scf.yield %[[VALUE]] : f32
// CHECK-NEXT:      }
// CHECK-NEXT:      memref.store %[[V]], %[[OUT]][%[[I]], %[[J]]]
func.func @pad_constant(%a: tensor<3x4xf32>) -> tensor<4x6xf32> {
  %0 = relay.fused(%a) {kernel_name = "fused_nn_pad", se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">} : (tensor<3x4xf32>) -> tensor<4x6xf32> {
  ^bb0(%x: tensor<3x4xf32>):
    %1 = relay.nn.pad %x {pad_width = array<i64: 1, 0, 0, 2>, pad_value = 5.0 : f32} : (tensor<3x4xf32>) -> tensor<4x6xf32>
    relay.yield %1 : tensor<4x6xf32>
  }
  func.return %0 : tensor<4x6xf32>
}

// -----

// A reflect pad (2 before, 1 after the columns): the column index mirrored at 0 (-j) and at
// the last column 3 (6 - j), no test.

// CHECK-LABEL: func.func @pad_reflect
// CHECK:       func.func @fused_nn_pad(%[[X:.*]]: memref<3x4xf32>, %[[OUT:.*]]: memref<3x7xf32>)
// CHECK-DAG:     %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG:     %[[CM2:.*]] = arith.constant -2 : index
// CHECK-DAG:     %[[C3:.*]] = arith.constant 3 : index
// CHECK-DAG:     %[[C6:.*]] = arith.constant 6 : index
// CHECK:         ^{{.*}}(%[[I:.*]]: index, %[[J:.*]]: index):
// CHECK-NEXT:      %[[S:.*]] = arith.addi %[[J]], %[[CM2]] : index
// CHECK-NEXT:      %[[NEG:.*]] = arith.cmpi slt, %[[S]], %[[C0]] : index
// CHECK-NEXT:      %[[M:.*]] = arith.subi %[[C0]], %[[S]] : index
// CHECK-NEXT:      %[[S1:.*]] = arith.select %[[NEG]], %[[M]], %[[S]] : index
// CHECK-NEXT:      %[[PAST:.*]] = arith.cmpi sgt, %[[S1]], %[[C3]] : index
// CHECK-NEXT:      %[[M2:.*]] = arith.subi %[[C6]], %[[S1]] : index
// CHECK-NEXT:      %[[S2:.*]] = arith.select %[[PAST]], %[[M2]], %[[S1]] : index
// CHECK-NEXT:      %[[V:.*]] = memref.load %[[X]][%[[I]], %[[S2]]] : memref<3x4xf32>
// CHECK-NEXT:      memref.store %[[V]], %[[OUT]][%[[I]], %[[J]]]
func.func @pad_reflect(%a: tensor<3x4xf32>) -> tensor<3x7xf32> {
  %0 = relay.fused(%a) {kernel_name = "fused_nn_pad", se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">} : (tensor<3x4xf32>) -> tensor<3x7xf32> {
  ^bb0(%x: tensor<3x4xf32>):
    %1 = relay.nn.pad %x {pad_width = array<i64: 0, 0, 2, 1>, pad_mode = "reflect"} : (tensor<3x4xf32>) -> tensor<3x7xf32>
    relay.yield %1 : tensor<3x7xf32>
  }
  func.return %0 : tensor<3x7xf32>
}

// -----

// take with constant indices [[0, 1, 2], [3, -1, 0]] on axis 1 (of length 4): the output's
// position p in the indices (j * 3 + k) maps to the index it holds by runs of arithmetic
// progressions: 0, 1, 2, 3 is p, and 3, 0 (-1 normalised to 3) is 3 - 3 * (p - 4).

// CHECK-LABEL: func.func @take
// CHECK:       func.func @fused_take(%[[X:.*]]: memref<5x4xf32>, %[[OUT:.*]]: memref<5x2x3xf32>)
// CHECK-DAG:     %[[C3:.*]] = arith.constant 3 : index
// CHECK-DAG:     %[[CM4:.*]] = arith.constant -4 : index
// CHECK-DAG:     %[[CM3:.*]] = arith.constant -3 : index
// CHECK-DAG:     %[[C4:.*]] = arith.constant 4 : index
// CHECK:         ^{{.*}}(%[[N:.*]]: index, %[[J:.*]]: index, %[[K:.*]]: index):
// CHECK-NEXT:      %[[J3:.*]] = arith.muli %[[J]], %[[C3]] : index
// CHECK-NEXT:      %[[P:.*]] = arith.addi %[[K]], %[[J3]] : index
// CHECK-NEXT:      %[[P4:.*]] = arith.addi %[[P]], %[[CM4]] : index
// CHECK-NEXT:      %[[D:.*]] = arith.muli %[[P4]], %[[CM3]] : index
// CHECK-NEXT:      %[[LINE:.*]] = arith.addi %[[D]], %[[C3]] : index
// CHECK-NEXT:      %[[LATER:.*]] = arith.cmpi sge, %[[P]], %[[C4]] : index
// CHECK-NEXT:      %[[I:.*]] = arith.select %[[LATER]], %[[LINE]], %[[P]] : index
// CHECK-NEXT:      %[[V:.*]] = memref.load %[[X]][%[[N]], %[[I]]] : memref<5x4xf32>
// CHECK-NEXT:      memref.store %[[V]], %[[OUT]][%[[N]], %[[J]], %[[K]]]
func.func @take(%a: tensor<5x4xf32>) -> tensor<5x2x3xf32> {
  %0 = relay.fused(%a) {kernel_name = "fused_take", se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">} : (tensor<5x4xf32>) -> tensor<5x2x3xf32> {
  ^bb0(%x: tensor<5x4xf32>):
    %1 = relay.take %x {indices = dense<[[0, 1, 2], [3, -1, 0]]> : tensor<2x3xi64>, axis = 1 : i64} : (tensor<5x4xf32>) -> tensor<5x2x3xf32>
    relay.yield %1 : tensor<5x2x3xf32>
  }
  func.return %0 : tensor<5x2x3xf32>
}

// -----

// A scalar index (rank-0 indices) -2 of 5: the constant row 3, and the axis is gone.

// CHECK-LABEL: func.func @take_scalar
// CHECK:       func.func @fused_take(%[[X:.*]]: memref<5x4xf32>, %[[OUT:.*]]: memref<4xf32>)
// CHECK-DAG:     %[[C3:.*]] = arith.constant 3 : index
// CHECK:         ^{{.*}}(%[[J:.*]]: index):
// CHECK-NEXT:      %[[V:.*]] = memref.load %[[X]][%[[C3]], %[[J]]] : memref<5x4xf32>
// CHECK-NEXT:      memref.store %[[V]], %[[OUT]][%[[J]]]
func.func @take_scalar(%a: tensor<5x4xf32>) -> tensor<4xf32> {
  %0 = relay.fused(%a) {kernel_name = "fused_take", se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">} : (tensor<5x4xf32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<5x4xf32>):
    %1 = relay.take %x {indices = dense<-2> : tensor<i64>, axis = 0 : i64} : (tensor<5x4xf32>) -> tensor<4xf32>
    relay.yield %1 : tensor<4xf32>
  }
  func.return %0 : tensor<4xf32>
}

// -----

// An avg_pool2d with dilation 2, ceil_mode and count_include_pad: the taps inside the input
// are t in [lo, hi) with 0 <= row0 + 2 t < 5 (tap t reads row row0 + 2 t); the divisor counts
// the taps inside the padded input, 0 <= 2 oh + 2 t < 7 (5 rows and 1 + 1 of padding).

// CHECK-LABEL: func.func @avg_pool_dilated_counting_padding
// CHECK:       func.func @fused_nn_avg_pool2d(%[[X:.*]]: memref<1x1x5x5xf32>, %[[OUT:.*]]: memref<1x1x3x3xf32>)
// CHECK-DAG:     %[[C2:.*]] = arith.constant 2 : index
// CHECK-DAG:     %[[C5:.*]] = arith.constant 5 : index
// CHECK-DAG:     %[[C7:.*]] = arith.constant 7 : index
// CHECK:         ^{{.*}}(%[[OH:.*]]: index, %[[OW:.*]]: index):
// CHECK-NEXT:      %[[R2:.*]] = arith.muli %[[OH]], %[[C2]] : index
// CHECK-NEXT:      %[[ROW0:.*]] = arith.addi %[[R2]], %{{.*}} : index
// CHECK:           arith.subi %[[C5]], %[[ROW0]] : index
// CHECK:           scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step
// CHECK-NEXT:        scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step
// CHECK-NEXT:          %[[DI:.*]] = arith.muli %[[I]], %[[C2]] : index
// CHECK-NEXT:          %[[ROW:.*]] = arith.addi %[[ROW0]], %[[DI]] : index
// CHECK:               memref.load %[[X]][%{{.*}}, %{{.*}}, %[[ROW]], %{{.*}}]
// CHECK:           arith.subi %[[C7]], %[[R2]] : index
// CHECK:           arith.sitofp
// CHECK-NEXT:      arith.divf
func.func @avg_pool_dilated_counting_padding(%a: tensor<1x1x5x5xf32>) -> tensor<1x1x3x3xf32> {
  %0 = relay.fused(%a) {kernel_name = "fused_nn_avg_pool2d", se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">} : (tensor<1x1x5x5xf32>) -> tensor<1x1x3x3xf32> {
  ^bb0(%x: tensor<1x1x5x5xf32>):
    %1 = relay.nn.avg_pool2d %x {pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>, dilation = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, ceil_mode = true, count_include_pad = true} : (tensor<1x1x5x5xf32>) -> tensor<1x1x3x3xf32>
    relay.yield %1 : tensor<1x1x3x3xf32>
  }
  func.return %0 : tensor<1x1x3x3xf32>
}

// -----

// A wrap pad of 5 before the 4 columns: (j - 5 + 8) % 4, the shift a multiple of 4 that
// keeps the dividend non-negative.

// CHECK-LABEL: func.func @pad_wrap
// CHECK:       func.func @fused_nn_pad(%[[X:.*]]: memref<3x4xf32>, %[[OUT:.*]]: memref<3x10xf32>)
// CHECK-DAG:     %[[C3:.*]] = arith.constant 3 : index
// CHECK-DAG:     %[[C4:.*]] = arith.constant 4 : index
// CHECK:         ^{{.*}}(%[[I:.*]]: index, %[[J:.*]]: index):
// CHECK-NEXT:      %[[S:.*]] = arith.addi %[[J]], %[[C3]] : index
// CHECK-NEXT:      %[[W:.*]] = arith.remsi %[[S]], %[[C4]] : index
// CHECK-NEXT:      memref.load %[[X]][%[[I]], %[[W]]] : memref<3x4xf32>
func.func @pad_wrap(%a: tensor<3x4xf32>) -> tensor<3x10xf32> {
  %0 = relay.fused(%a) {kernel_name = "fused_nn_pad", se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">} : (tensor<3x4xf32>) -> tensor<3x10xf32> {
  ^bb0(%x: tensor<3x4xf32>):
    %1 = relay.nn.pad %x {pad_width = array<i64: 0, 0, 5, 1>, pad_mode = "wrap"} : (tensor<3x4xf32>) -> tensor<3x10xf32>
    relay.yield %1 : tensor<3x10xf32>
  }
  func.return %0 : tensor<3x10xf32>
}
