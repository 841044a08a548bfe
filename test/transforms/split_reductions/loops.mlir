// RUN: opt-tool %s --split-input-file -p split-reductions | filecheck %s

// A pure reduction loop of an opencl kernel accumulates 16 iterations at a time in the lanes
// of vector<16xf32>s: the body is cloned once per iteration without its combine, the 16
// values are gathered into a vector (a broadcast, then an insert per lane) and combined into
// the accumulator; the lanes then fold with vector.reduction into the initial value, and the
// loop itself runs the iterations left (trips % 16).

// 20 trips (lb 1, step 2): one trip of 16 lanes (a sum's start from -0.0, its identity),
// then the original loop from 33.

// CHECK-LABEL: func.func @sum_with_remainder
// CHECK-SAME:    (%[[IN:.*]]: memref<40xf32>, %{{.*}}: memref<1xf32>)
// CHECK-DAG:     %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG:     %[[C2:.*]] = arith.constant 2 : index
// CHECK-DAG:     %[[C40:.*]] = arith.constant 40 : index
// CHECK-DAG:     %[[INIT:.*]] = arith.constant 5.000000e-01 : f32
// CHECK-DAG:     %[[NEGZERO:.*]] = arith.constant -0.000000e+00 : f32
// CHECK-DAG:     %[[C30:.*]] = arith.constant 30 : index
// CHECK-DAG:     %[[C32:.*]] = arith.constant 32 : index
// CHECK-DAG:     %[[C33:.*]] = arith.constant 33 : index
// CHECK:         %[[START:.*]] = vector.broadcast %[[NEGZERO]] : f32 to vector<16xf32>
// CHECK-NEXT:    %[[LANES:.*]] = scf.for %[[J:.*]] = %[[C1]] to %[[C33]] step %[[C32]] iter_args(%[[ACC:.*]] = %[[START]]) -> (vector<16xf32>) {
// CHECK-NEXT:      %[[X0:.*]] = memref.load %[[IN]][%[[J]]] : memref<40xf32>
// CHECK-NEXT:      %[[J1:.*]] = arith.addi %[[J]], %[[C2]] : index
// CHECK-NEXT:      %[[X1:.*]] = memref.load %[[IN]][%[[J1]]] : memref<40xf32>
// CHECK:           %[[J15:.*]] = arith.addi %[[J]], %[[C30]] : index
// CHECK-NEXT:      %[[X15:.*]] = memref.load %[[IN]][%[[J15]]] : memref<40xf32>
// CHECK-NEXT:      %[[V0:.*]] = vector.broadcast %[[X0]] : f32 to vector<16xf32>
// CHECK-NEXT:      %[[V1:.*]] = vector.insert %[[X1]], %[[V0]] [1] : f32 into vector<16xf32>
// CHECK:           %[[V15:.*]] = vector.insert %[[X15]], %{{.*}} [15] : f32 into vector<16xf32>
// CHECK-NEXT:      %[[NEXT:.*]] = arith.addf %[[ACC]], %[[V15]] : vector<16xf32>
// CHECK-NEXT:      scf.yield %[[NEXT]] : vector<16xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[FOLD:.*]] = vector.reduction <add>, %[[LANES]] fastmath<reassoc> : vector<16xf32> into f32
// CHECK-NEXT:    %[[SUM:.*]] = arith.addf %[[INIT]], %[[FOLD]] : f32
// CHECK-NEXT:    %[[REST:.*]] = scf.for %[[K:.*]] = %[[C33]] to %[[C40]] step %[[C2]] iter_args(%[[A:.*]] = %[[SUM]]) -> (f32) {
// CHECK-NEXT:      %[[X:.*]] = memref.load %[[IN]][%[[K]]] : memref<40xf32>
// CHECK-NEXT:      %[[N:.*]] = arith.addf %[[A]], %[[X]] : f32
// CHECK-NEXT:      scf.yield %[[N]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    memref.store %[[REST]]
func.func @sum_with_remainder(%in0: memref<40xf32>, %out0: memref<1xf32>) attributes {relay.se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl -vector-width=16", memory = "global">} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c40 = arith.constant 40 : index
  %init = arith.constant 0.5 : f32
  "scf.parallel"(%c0, %c1, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%i: index):
    %sum = scf.for %j = %c1 to %c40 step %c2 iter_args(%acc = %init) -> (f32) {
      %x = memref.load %in0[%j] : memref<40xf32>
      %n = arith.addf %acc, %x : f32
      scf.yield %n : f32
    }
    memref.store %sum, %out0[%c0] : memref<1xf32>
    scf.reduce
  }) : (index, index, index) -> ()
  func.return
}

// -----

// 276 trips (at least 256): four vectors taking 64 iterations a trip, then 16 at a time into
// the first, the vectors folded pairwise, then 4 iterations alone.

// CHECK-LABEL: func.func @sum_of_products
// CHECK-DAG:     %[[C16:.*]] = arith.constant 16 : index
// CHECK-DAG:     %[[C64:.*]] = arith.constant 64 : index
// CHECK-DAG:     %[[C256:.*]] = arith.constant 256 : index
// CHECK-DAG:     %[[C272:.*]] = arith.constant 272 : index
// CHECK:         %[[START:.*]] = vector.broadcast
// CHECK-NEXT:    %[[W0:[^ ,]*]], %[[W1:[^ ,]*]], %[[W2:[^ ,]*]], %[[W3:[^ ,]*]] = scf.for %{{.*}} = %{{.*}} to %[[C256]] step %[[C64]]
// CHECK-SAME:      iter_args(%[[A0:[^ ]*]] = %[[START]], %[[A1:[^ ]*]] = %[[START]], %[[A2:[^ ]*]] = %[[START]], %[[A3:[^ ]*]] = %[[START]])
// CHECK:           arith.addf %[[A0]], %{{.*}} : vector<16xf32>
// CHECK:           arith.addf %[[A1]], %{{.*}} : vector<16xf32>
// CHECK:           arith.addf %[[A2]], %{{.*}} : vector<16xf32>
// CHECK:           arith.addf %[[A3]], %{{.*}} : vector<16xf32>
// CHECK-NEXT:      scf.yield
// CHECK:         %[[N:.*]] = scf.for %{{.*}} = %[[C256]] to %[[C272]] step %[[C16]] iter_args(%{{.*}} = %[[W0]]) -> (vector<16xf32>)
// CHECK:         %[[F01:.*]] = arith.addf %[[N]], %[[W1]] : vector<16xf32>
// CHECK-NEXT:    %[[F23:.*]] = arith.addf %[[W2]], %[[W3]] : vector<16xf32>
// CHECK-NEXT:    %[[F:.*]] = arith.addf %[[F01]], %[[F23]] : vector<16xf32>
// CHECK-NEXT:    vector.reduction <add>, %[[F]] fastmath<reassoc>
// CHECK:         scf.for %{{.*}} = %[[C272]] to
func.func @sum_of_products(%in0: memref<276xf32>, %in1: memref<276xf32>, %out0: memref<1xf32>) attributes {relay.se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl -vector-width=16", memory = "global">} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c276 = arith.constant 276 : index
  %zero = arith.constant 0.0 : f32
  "scf.parallel"(%c0, %c1, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%i: index):
    %sum = scf.for %j = %c0 to %c276 step %c1 iter_args(%acc = %zero) -> (f32) {
      %x = memref.load %in0[%j] : memref<276xf32>
      %y = memref.load %in1[%j] : memref<276xf32>
      %p = arith.mulf %x, %y : f32
      %n = arith.addf %acc, %p : f32
      scf.yield %n : f32
    }
    memref.store %sum, %out0[%c0] : memref<1xf32>
    scf.reduce
  }) : (index, index, index) -> ()
  func.return
}

// -----

// A max: the lanes start from the initial value (max may see it twice), the fold keeps the
// order free without `reassoc` (max is associative), and 32 trips leave no remainder loop.

// CHECK-LABEL: func.func @max_without_remainder
// CHECK:         %[[NINF:.*]] = arith.constant 0xff800000 : f32
// CHECK:         %[[START:.*]] = vector.broadcast %[[NINF]] : f32 to vector<16xf32>
// CHECK-NEXT:    %[[LANES:.*]] = scf.for
// CHECK:           arith.maximumf %{{.*}}, %{{.*}} : vector<16xf32>
// CHECK:         %[[FOLD:.*]] = vector.reduction <maximumf>, %[[LANES]] : vector<16xf32> into f32
// CHECK-NEXT:    %[[MAX:.*]] = arith.maximumf %[[NINF]], %[[FOLD]] : f32
// CHECK-NEXT:    memref.store %[[MAX]]
// CHECK-NOT:     scf.for
func.func @max_without_remainder(%in0: memref<32xf32>, %out0: memref<1xf32>) attributes {relay.se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl -vector-width=16", memory = "global">} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %ninf = arith.constant 0xFF800000 : f32
  "scf.parallel"(%c0, %c1, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%i: index):
    %max = scf.for %j = %c0 to %c32 step %c1 iter_args(%m = %ninf) -> (f32) {
      %x = memref.load %in0[%j] : memref<32xf32>
      %n = arith.maximumf %m, %x : f32
      scf.yield %n : f32
    }
    memref.store %max, %out0[%c0] : memref<1xf32>
    scf.reduce
  }) : (index, index, index) -> ()
  func.return
}

// -----

// Two reductions in one loop of 16 (a product and a min, the carried value on either side of
// its combine): one body copy per iteration feeds both vectors.

// CHECK-LABEL: func.func @product_and_min
// CHECK:         %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK:         %[[P0:.*]] = vector.broadcast %[[ONE]] : f32 to vector<16xf32>
// CHECK-NEXT:    %[[M0:.*]] = vector.broadcast %[[INIT:.*]] : f32 to vector<16xf32>
// CHECK-NEXT:    %[[LP:[^ ,]*]], %[[LM:[^ ,]*]] = scf.for %{{.*}} iter_args(%[[P:[^ ]*]] = %[[P0]], %[[M:[^ ]*]] = %[[M0]]) -> (vector<16xf32>, vector<16xf32>)
// CHECK-COUNT-16:  memref.load
// CHECK-NOT:       memref.load
// CHECK:           %[[PN:.*]] = arith.mulf %[[P]], %{{.*}} : vector<16xf32>
// CHECK:           %[[MN:.*]] = arith.minimumf %{{.*}}, %[[M]] : vector<16xf32>
// CHECK-NEXT:      scf.yield %[[PN]], %[[MN]]
// CHECK:         vector.reduction <mul>, %[[LP]] fastmath<reassoc>
// CHECK:         vector.reduction <minimumf>, %[[LM]] :
func.func @product_and_min(%in0: memref<16xf32>, %out0: memref<2xf32>) attributes {relay.se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl -vector-width=16", memory = "global">} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %init = arith.constant 2.0 : f32
  "scf.parallel"(%c0, %c1, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%i: index):
    %p, %m = scf.for %j = %c0 to %c16 step %c1 iter_args(%pa = %init, %ma = %init) -> (f32, f32) {
      %x = memref.load %in0[%j] : memref<16xf32>
      %pn = arith.mulf %pa, %x : f32
      %mn = arith.minimumf %x, %ma : f32
      scf.yield %pn, %mn : f32, f32
    }
    memref.store %p, %out0[%c0] : memref<2xf32>
    memref.store %m, %out0[%c1] : memref<2xf32>
    scf.reduce
  }) : (index, index, index) -> ()
  func.return
}

// -----

// Loops left as they are: 15 trips (too short), a cpu kernel (C reorders them itself, under
// `#pragma omp simd reduction`), a loop that stores, bounds that are not constants.

// CHECK-LABEL: func.func @short_sum
// CHECK-NOT:     vector<
// CHECK:         scf.for {{.*}} -> (f32)
// CHECK-NOT:     vector<
func.func @short_sum(%in0: memref<15xf32>, %out0: memref<1xf32>) attributes {relay.se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl -vector-width=16", memory = "global">} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c15 = arith.constant 15 : index
  %zero = arith.constant 0.0 : f32
  "scf.parallel"(%c0, %c1, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%i: index):
    %sum = scf.for %j = %c0 to %c15 step %c1 iter_args(%acc = %zero) -> (f32) {
      %x = memref.load %in0[%j] : memref<15xf32>
      %n = arith.addf %acc, %x : f32
      scf.yield %n : f32
    }
    memref.store %sum, %out0[%c0] : memref<1xf32>
    scf.reduce
  }) : (index, index, index) -> ()
  func.return
}

// CHECK-LABEL: func.func @cpu_sum
// CHECK-NOT:     vector<
// CHECK:         scf.for {{.*}} -> (f32)
// CHECK-NOT:     vector<
func.func @cpu_sum(%in0: memref<64xf32>, %out0: memref<1xf32>) attributes {relay.se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0.0 : f32
  "scf.parallel"(%c0, %c1, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%i: index):
    %sum = scf.for %j = %c0 to %c64 step %c1 iter_args(%acc = %zero) -> (f32) {
      %x = memref.load %in0[%j] : memref<64xf32>
      %n = arith.addf %acc, %x : f32
      scf.yield %n : f32
    }
    memref.store %sum, %out0[%c0] : memref<1xf32>
    scf.reduce
  }) : (index, index, index) -> ()
  func.return
}

// CHECK-LABEL: func.func @storing_and_dynamic
// CHECK-NOT:     vector<
// CHECK:         scf.for {{.*}} -> (f32)
// CHECK:         scf.for {{.*}} -> (f32)
// CHECK-NOT:     vector<
func.func @storing_and_dynamic(%in0: memref<64xf32>, %out0: memref<64xf32>) attributes {relay.se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl -vector-width=16", memory = "global">} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0.0 : f32
  "scf.parallel"(%c0, %c64, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%i: index):
    %sum = scf.for %j = %c0 to %c64 step %c1 iter_args(%acc = %zero) -> (f32) {
      %x = memref.load %in0[%j] : memref<64xf32>
      %n = arith.addf %acc, %x : f32
      memref.store %n, %out0[%j] : memref<64xf32>
      scf.yield %n : f32
    }
    %rest = scf.for %j = %i to %c64 step %c1 iter_args(%acc = %sum) -> (f32) {
      %x = memref.load %in0[%j] : memref<64xf32>
      %n = arith.addf %acc, %x : f32
      scf.yield %n : f32
    }
    memref.store %rest, %out0[%i] : memref<64xf32>
    scf.reduce
  }) : (index, index, index) -> ()
  func.return
}
