// RUN: opt-tool %s -p convert-relay-to-loops --split-input-file | filecheck %s

// An elementwise group with broadcasting: one kernel over memrefs, one parallel loop over the
// result, the group replaced by a launch with the group's scope.

// CHECK-LABEL: func.func @add_relu
// CHECK-SAME:    (%[[A:.*]]: tensor<2x3xf32>, %[[B:.*]]: tensor<3xf32>)
// CHECK:         %[[R:.*]] = relay.launch @fused_add_nn_relu(%[[A]], %[[B]]) {se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %[[R]]
// CHECK:       func.func @fused_add_nn_relu(%[[IN0:.*]]: memref<2x3xf32>, %[[IN1:.*]]: memref<3xf32>, %[[OUT:.*]]: memref<2x3xf32>)
// CHECK-SAME:    attributes {relay.se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">, relay.schedule = "elementwise"}
// CHECK-DAG:     %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG:     %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG:     %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG:     %[[C2:.*]] = arith.constant 2 : index
// CHECK-DAG:     %[[C3:.*]] = arith.constant 3 : index
// CHECK:         "scf.parallel"(%[[C0]], %[[C0]], %[[C2]], %[[C3]], %[[C1]], %[[C1]])
// CHECK-NEXT:    ^{{.*}}(%[[I:.*]]: index, %[[J:.*]]: index):
// CHECK-NEXT:      %[[X:.*]] = memref.load %[[IN0]][%[[I]], %[[J]]] : memref<2x3xf32>
// CHECK-NEXT:      %[[Y:.*]] = memref.load %[[IN1]][%[[J]]] : memref<3xf32>
// CHECK-NEXT:      %[[S:.*]] = arith.addf %[[X]], %[[Y]] : f32
// CHECK-NEXT:      %[[M:.*]] = arith.maximumf %[[S]], %[[ZERO]] : f32
// CHECK-NEXT:      memref.store %[[M]], %[[OUT]][%[[I]], %[[J]]] : memref<2x3xf32>
// CHECK-NEXT:      scf.reduce
// CHECK-NEXT:    })
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
func.func @add_relu(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
  %0 = relay.fused(%a, %b) {kernel_name = "fused_add_nn_relu", se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32> {
  ^bb0(%x: tensor<2x3xf32>, %y: tensor<3xf32>):
    %1 = relay.add %x, %y : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    %2 = relay.nn.relu %1 : tensor<2x3xf32>
    relay.yield %2 : tensor<2x3xf32>
  }
  func.return %0 : tensor<2x3xf32>
}

// -----

// conv2d + bias_add + relu, 4 wide: a work item per output row, so the parallel loop spans
// the result's axes but the size-1 batch and the width. The sums accumulate in a scratch row;
// for each input channel and window row inside the input (bounds from index min/max, no test
// per tap), the input row is copied into a scratch row at its padded columns. Each column
// sums only the taps that read the input there: ow = 0 taps 1 and 2, ow = 1 and 2 all three
// (an interior this narrow is not worth whole-row loops, which take multiples of 8 columns),
// ow = 3 taps 0 and 1. Padding is never read, and there is no test in the work item. The
// epilogue runs on the row's sums. (Rows 16 or more wide would be computed for blocks of 4
// output channels; here a block is 1.)

// CHECK-LABEL: func.func @conv_bias_relu
// CHECK:         relay.launch @fused_nn_conv2d_nn_bias_add_nn_relu
// CHECK:       func.func @fused_nn_conv2d_nn_bias_add_nn_relu(%[[X:.*]]: memref<1x2x4x4xf32>, %[[W:.*]]: memref<3x2x3x3xf32>, %[[B:.*]]: memref<3xf32>, %[[OUT:.*]]: memref<1x3x4x4xf32>)
// CHECK-SAME:    attributes {relay.se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">, relay.schedule = "conv_rows"}
// CHECK-DAG:     %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG:     %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG:     %[[C2:.*]] = arith.constant 2 : index
// CHECK-DAG:     %[[C3:.*]] = arith.constant 3 : index
// CHECK-DAG:     %[[C4:.*]] = arith.constant 4 : index
// CHECK-DAG:     %[[CM1:.*]] = arith.constant -1 : index
// CHECK-DAG:     %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK:         "scf.parallel"(%[[C0]], %[[C0]], %[[C3]], %[[C4]], %[[C1]], %[[C1]])
// CHECK-NEXT:    ^{{.*}}(%[[O:.*]]: index, %[[H:.*]]: index):
// CHECK-NEXT:      %[[ACC:.*]] = memref.alloca() : memref<1x4xf32>
// CHECK-NEXT:      %[[ROW:.*]] = memref.alloca() : memref<6xf32>
// CHECK-NEXT:      scf.for %[[Q:.*]] = %[[C0]] to %[[C4]] step %[[C1]] {
// CHECK-NEXT:        memref.store %[[ZERO]], %[[ACC]][%[[C0]], %[[Q]]]
// CHECK-NEXT:      }
// CHECK-NEXT:      %[[ROW0:.*]] = arith.addi %[[H]], %[[CM1]] : index
// CHECK:           %[[LO:.*]] = arith.select %{{.*}}, %[[C0]], %{{.*}} : index
// CHECK:           %[[HI:.*]] = arith.select %{{.*}}, %[[C3]], %{{.*}} : index
// CHECK-NEXT:      scf.for %[[C:.*]] = %[[C0]] to %[[C2]] step %[[C1]] {
// CHECK-NEXT:        scf.for %[[I:.*]] = %[[LO]] to %[[HI]] step %[[C1]] {
// CHECK-NEXT:          %[[IH:.*]] = arith.addi %[[ROW0]], %[[I]] : index
// CHECK-NEXT:          scf.for %[[Q:.*]] = %[[C0]] to %[[C4]] step %[[C1]] {
// CHECK-NEXT:            %[[V:.*]] = memref.load %[[X]][%[[C0]], %[[C]], %[[IH]], %[[Q]]]
// CHECK-NEXT:            %[[P:.*]] = arith.addi %[[Q]], %[[C1]] : index
// CHECK-NEXT:            memref.store %[[V]], %[[ROW]][%[[P]]]
// CHECK-NEXT:          }
// CHECK-NEXT:          %[[W0:.*]] = memref.load %[[W]][%[[O]], %[[C]], %[[I]], %[[C0]]]
// CHECK-NEXT:          %[[W1:.*]] = memref.load %[[W]][%[[O]], %[[C]], %[[I]], %[[C1]]]
// CHECK-NEXT:          %[[W2:.*]] = memref.load %[[W]][%[[O]], %[[C]], %[[I]], %[[C2]]]
// CHECK-NEXT:          scf.for %[[OW:.*]] = %[[C0]] to %[[C1]] step %[[C1]] {
// CHECK-NEXT:            %[[SUM:.*]] = memref.load %[[ACC]][%[[C0]], %[[OW]]]
// CHECK-NOT:             memref.load %[[ROW]][%[[OW]]]
// CHECK-COUNT-2:         arith.mulf
// CHECK-NOT:             arith.mulf
// CHECK:                 memref.store %{{.*}}, %[[ACC]][%[[C0]], %[[OW]]]
// CHECK:               scf.for %[[OW:.*]] = %[[C1]] to %[[C3]] step %[[C1]] {
// CHECK-COUNT-3:         arith.mulf
// CHECK-NOT:             arith.mulf
// CHECK:                 memref.store %{{.*}}, %[[ACC]][%[[C0]], %[[OW]]]
// CHECK:               scf.for %[[OW:.*]] = %[[C3]] to %[[C4]] step %[[C1]] {
// CHECK-COUNT-2:         arith.mulf
// CHECK-NOT:             arith.mulf
// CHECK:                 memref.store %{{.*}}, %[[ACC]][%[[C0]], %[[OW]]]
// CHECK-NOT:           scf.if
// CHECK:           scf.for %[[OW:.*]] = %[[C0]] to %[[C4]] step %[[C1]] {
// CHECK-NEXT:        %[[SUM:.*]] = memref.load %[[ACC]][%[[C0]], %[[OW]]]
// CHECK-NEXT:        %[[BIAS:.*]] = memref.load %[[B]][%[[O]]] : memref<3xf32>
// CHECK-NEXT:        %[[V:.*]] = arith.addf %[[SUM]], %[[BIAS]] : f32
// CHECK-NEXT:        %[[R:.*]] = arith.maximumf %[[V]], %[[ZERO]] : f32
// CHECK-NEXT:        memref.store %[[R]], %[[OUT]][%[[C0]], %[[O]], %[[H]], %[[OW]]]
// CHECK-NOT:     "scf.parallel"
// CHECK:         func.return
func.func @conv_bias_relu(%d: tensor<1x2x4x4xf32>, %w: tensor<3x2x3x3xf32>, %b: tensor<3xf32>) -> tensor<1x3x4x4xf32> {
  %0 = relay.fused(%d, %w, %b) {kernel_name = "fused_nn_conv2d_nn_bias_add_nn_relu", se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">} : (tensor<1x2x4x4xf32>, tensor<3x2x3x3xf32>, tensor<3xf32>) -> tensor<1x3x4x4xf32> {
  ^bb0(%x: tensor<1x2x4x4xf32>, %k: tensor<3x2x3x3xf32>, %c: tensor<3xf32>):
    %1 = relay.nn.conv2d %x, %k {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x2x4x4xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x4x4xf32>
    %2 = relay.nn.bias_add %1, %c : (tensor<1x3x4x4xf32>, tensor<3xf32>) -> tensor<1x3x4x4xf32>
    %3 = relay.nn.relu %2 : tensor<1x3x4x4xf32>
    relay.yield %3 : tensor<1x3x4x4xf32>
  }
  func.return %0 : tensor<1x3x4x4xf32>
}

// -----

// Producers are computed inline: reshape becomes index arithmetic (linearise, then divsi and
// remsi), transpose permutes the index, and no intermediate buffer appears.

// CHECK-LABEL: func.func @fused_reshape_transpose_exp
// CHECK-SAME:    (%[[IN:.*]]: memref<2x6xf32>, %[[OUT:.*]]: memref<4x3xf32>)
// CHECK:         "scf.parallel"
// CHECK-NEXT:    ^{{.*}}(%[[I:.*]]: index, %[[J:.*]]: index):
// CHECK-DAG:       arith.muli
// CHECK-DAG:       arith.addi
// CHECK-DAG:       arith.divsi
// CHECK-DAG:       arith.remsi
// CHECK:           %[[V:.*]] = memref.load %[[IN]]
// CHECK-NEXT:      %[[E:.*]] = math.exp %[[V]] : f32
// CHECK-NEXT:      memref.store %[[E]], %[[OUT]][%[[I]], %[[J]]]
// CHECK-NOT:     memref.alloca
// CHECK:         func.return
func.func @reshape_transpose(%a: tensor<2x6xf32>) -> tensor<4x3xf32> {
  %0 = relay.fused(%a) {kernel_name = "fused_reshape_transpose_exp", se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">} : (tensor<2x6xf32>) -> tensor<4x3xf32> {
  ^bb0(%x: tensor<2x6xf32>):
    %1 = relay.reshape %x : (tensor<2x6xf32>) -> tensor<3x4xf32>
    %2 = relay.transpose %1 : (tensor<3x4xf32>) -> tensor<4x3xf32>
    %3 = relay.exp %2 : tensor<4x3xf32>
    relay.yield %3 : tensor<4x3xf32>
  }
  func.return %0 : tensor<4x3xf32>
}

// -----

// softmax as a group's result (transforms/schedules/softmax_row.py): a work item per row finds
// the max (on cpu with fastmath<nnan>: the C target may reorder it), stores exp(x - max) into
// the output, sums what it stored, then multiplies it by the sum's reciprocal in place.

// CHECK-LABEL: func.func @fused_nn_softmax
// CHECK-SAME:    (%[[IN:.*]]: memref<2x5xf32>, %[[OUT:.*]]: memref<2x5xf32>)
// CHECK-DAG:     %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG:     %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG:     %[[C2:.*]] = arith.constant 2 : index
// CHECK:         "scf.parallel"(%[[C0]], %[[C2]], %[[C1]])
// CHECK-NEXT:    ^{{.*}}(%[[ROW:.*]]: index):
// CHECK:           %[[MAX:.*]] = scf.for {{.*}} -> (f32) {
// CHECK:             arith.maximumf {{.*}} fastmath<nnan>
// CHECK:           scf.for %[[K:.*]] = %[[C0]] to
// CHECK-NEXT:        %[[X:.*]] = memref.load %[[IN]][%[[ROW]], %[[K]]]
// CHECK-NEXT:        %[[D:.*]] = arith.subf %[[X]], %[[MAX]]
// CHECK-NEXT:        %[[E:.*]] = math.exp %[[D]]
// CHECK-NEXT:        memref.store %[[E]], %[[OUT]][%[[ROW]], %[[K]]]
// CHECK:           %[[SUM:.*]] = scf.for %[[J:.*]] = %[[C0]] to {{.*}} -> (f32) {
// CHECK-NEXT:        %[[Y:.*]] = memref.load %[[OUT]][%[[ROW]], %[[J]]]
// CHECK-NEXT:        arith.addf %{{.*}}, %[[Y]]
// CHECK:           %[[SCALE:.*]] = arith.divf %{{.*}}, %[[SUM]] : f32
// CHECK:           scf.for %[[L:.*]] = %[[C0]] to
// CHECK-NEXT:        %[[Z:.*]] = memref.load %[[OUT]][%[[ROW]], %[[L]]]
// CHECK-NEXT:        %[[Q:.*]] = arith.mulf %[[Z]], %[[SCALE]] : f32
// CHECK-NEXT:        memref.store %[[Q]], %[[OUT]][%[[ROW]], %[[L]]]
// CHECK-NOT:       math.exp
// CHECK:           scf.reduce
func.func @softmax(%a: tensor<2x5xf32>) -> tensor<2x5xf32> {
  %0 = relay.fused(%a) {kernel_name = "fused_nn_softmax", se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">} : (tensor<2x5xf32>) -> tensor<2x5xf32> {
  ^bb0(%x: tensor<2x5xf32>):
    %1 = relay.nn.softmax %x : (tensor<2x5xf32>) -> tensor<2x5xf32>
    relay.yield %1 : tensor<2x5xf32>
  }
  func.return %0 : tensor<2x5xf32>
}

// -----

// A cpu row of 40: its max in one loop of fastmath<nnan> maxima from the first element, no
// scratch (the C target prints it under `omp simd reduction(max:...)`).

// CHECK-LABEL: func.func @fused_nn_softmax
// CHECK-SAME:    (%[[IN:.*]]: memref<2x40xf32>, %[[OUT:.*]]: memref<2x40xf32>)
// CHECK-DAG:     %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG:     %[[C40:.*]] = arith.constant 40 : index
// CHECK-NOT:       memref.alloca
// CHECK:           %[[FIRST:.*]] = memref.load %[[IN]][%{{.*}}, %[[C0]]]
// CHECK:           scf.for {{.*}} = %[[C0]] to %[[C40]] {{.*}} iter_args(%[[M:.*]] = %[[FIRST]]) -> (f32)
// CHECK-NEXT:        %[[X:.*]] = memref.load %[[IN]]
// CHECK-NEXT:        arith.maximumf %[[M]], %[[X]] fastmath<nnan>
// CHECK-COUNT-1:   math.exp
// CHECK-NOT:       math.exp
func.func @softmax_lanes(%a: tensor<2x40xf32>) -> tensor<2x40xf32> {
  %0 = relay.fused(%a) {kernel_name = "fused_nn_softmax", se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">} : (tensor<2x40xf32>) -> tensor<2x40xf32> {
  ^bb0(%x: tensor<2x40xf32>):
    %1 = relay.nn.softmax %x : (tensor<2x40xf32>) -> tensor<2x40xf32>
    relay.yield %1 : tensor<2x40xf32>
  }
  func.return %0 : tensor<2x40xf32>
}

// -----

// The same row on opencl: one loop carrying the max (split-reductions puts it in vector
// lanes), which lets a NaN win.

// CHECK-LABEL: func.func @fused_nn_softmax
// CHECK-NOT:     memref.alloca
// CHECK:         %[[MAX:.*]] = scf.for {{.*}} -> (f32) {
// CHECK-NEXT:      memref.load
// CHECK-NEXT:      arith.maximumf {{%[0-9]+}}, {{%[0-9]+}} : f32
func.func @softmax_lanes_opencl(%a: tensor<2x40xf32>) -> tensor<2x40xf32> {
  %0 = relay.fused(%a) {kernel_name = "fused_nn_softmax", se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl -vector-width=16", memory = "global">} : (tensor<2x40xf32>) -> tensor<2x40xf32> {
  ^bb0(%x: tensor<2x40xf32>):
    %1 = relay.nn.softmax %x : (tensor<2x40xf32>) -> tensor<2x40xf32>
    relay.yield %1 : tensor<2x40xf32>
  }
  func.return %0 : tensor<2x40xf32>
}

// -----

// An opencl row of whole vectors (48 = 3 x 16): the four passes on vector<16xf32>, the max
// and the sum folded from their lanes, the sum's reciprocal broadcast.

// CHECK-LABEL: func.func @fused_nn_softmax
// CHECK-SAME:    (%[[IN:.*]]: memref<2x48xf32>, %[[OUT:.*]]: memref<2x48xf32>)
// CHECK:         %[[PEAKS:.*]] = scf.for {{.*}} -> (vector<16xf32>) {
// CHECK:           vector.load %[[IN]]
// CHECK:           arith.maximumf {{.*}} : vector<16xf32>
// CHECK:         vector.reduction <maximumf>, %[[PEAKS]]
// CHECK:         scf.for
// CHECK:           math.exp {{.*}} : vector<16xf32>
// CHECK:           vector.store {{.*}}, %[[OUT]]
// CHECK:         %[[SUMS:.*]] = scf.for {{.*}} -> (vector<16xf32>) {
// CHECK:           vector.load %[[OUT]]
// CHECK:         %[[SUM:.*]] = vector.reduction <add>, %[[SUMS]]
// CHECK:         %[[SCALE:.*]] = arith.divf %{{.*}}, %[[SUM]] : f32
// CHECK:         %[[SCALES:.*]] = vector.broadcast %[[SCALE]]
// CHECK:         scf.for
// CHECK:           arith.mulf {{.*}}, %[[SCALES]] : vector<16xf32>
// CHECK:           vector.store
func.func @softmax_vectors_opencl(%a: tensor<2x48xf32>) -> tensor<2x48xf32> {
  %0 = relay.fused(%a) {kernel_name = "fused_nn_softmax", se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl -vector-width=16", memory = "global">} : (tensor<2x48xf32>) -> tensor<2x48xf32> {
  ^bb0(%x: tensor<2x48xf32>):
    %1 = relay.nn.softmax %x : (tensor<2x48xf32>) -> tensor<2x48xf32>
    relay.yield %1 : tensor<2x48xf32>
  }
  func.return %0 : tensor<2x48xf32>
}

// -----

// A rank-0 result: a parallel loop of extent 1 and a store without indices.

// CHECK-LABEL: func.func @fused_sum
// CHECK-SAME:    (%[[IN:.*]]: memref<3xf32>, %[[OUT:.*]]: memref<f32>)
// CHECK-DAG:     %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG:     %[[C1:.*]] = arith.constant 1 : index
// CHECK:         "scf.parallel"(%[[C0]], %[[C1]], %[[C1]])
// CHECK:           %[[S:.*]] = scf.for
// CHECK:           memref.store %[[S]], %[[OUT]][] : memref<f32>
func.func @sum_all(%a: tensor<3xf32>) -> tensor<f32> {
  %0 = relay.fused(%a) {kernel_name = "fused_sum", se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">} : (tensor<3xf32>) -> tensor<f32> {
  ^bb0(%x: tensor<3xf32>):
    %1 = relay.sum %x : (tensor<3xf32>) -> tensor<f32>
    relay.yield %1 : tensor<f32>
  }
  func.return %0 : tensor<f32>
}

// -----

// Constants and copies stay in @main; each group becomes its own kernel and launch.

// CHECK-LABEL: func.func @two_groups
// CHECK:         %[[K:.*]] = relay.constant
// CHECK:         %[[L0:.*]] = relay.launch @fused_add(%{{.*}}, %[[K]]) {se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">}
// CHECK:         %[[C:.*]] = relay.device_copy %[[L0]]
// CHECK:         %[[L1:.*]] = relay.launch @fused_exp(%[[C]]) {se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">}
// CHECK:         func.return %[[L1]]
// CHECK:       func.func @fused_add(%{{.*}}: memref<4xf32>, %{{.*}}: memref<4xf32>, %{{.*}}: memref<4xf32>)
// CHECK:       func.func @fused_exp(%{{.*}}: memref<4xf32>, %{{.*}}: memref<4xf32>)
// CHECK-SAME:    relay.se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">
func.func @two_groups(%a: tensor<4xf32>) -> tensor<4xf32> {
  %k = relay.constant {value = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>, se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">} : tensor<4xf32>
  %0 = relay.fused(%a, %k) {kernel_name = "fused_add", se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<4xf32>, %y: tensor<4xf32>):
    %1 = relay.add %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    relay.yield %1 : tensor<4xf32>
  }
  %2 = relay.device_copy %0 {src_se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">, dst_se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">} : tensor<4xf32>
  %3 = relay.fused(%2) {kernel_name = "fused_exp", se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">} : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<4xf32>):
    %4 = relay.exp %x : tensor<4xf32>
    relay.yield %4 : tensor<4xf32>
  }
  func.return %3 : tensor<4xf32>
}
