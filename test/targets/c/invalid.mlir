// RUN: opt-tool %s --split-input-file --verify-diagnostics -t c | filecheck %s

// An op the emitter does not know is an error naming the op, its location and the target.

func.func @k_sin(%in0: memref<4xf32>, %out0: memref<4xf32>) attributes {relay.se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  "scf.parallel"(%c0, %c4, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%i: index):
    %x = memref.load %in0[%i] : memref<4xf32>
    // CHECK: the c target cannot emit 'math.sin' at {{.*}}invalid.mlir:{{[0-9]+}}:5
    %s = math.sin %x : f32
    memref.store %s, %out0[%i] : memref<4xf32>
    scf.reduce
  }) : (index, index, index) -> ()
  func.return
}

// -----

// A module that still has relay.fused groups must be lowered first.

func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK: the c target expects a lowered module, but found 'relay.fused' at {{.*}}invalid.mlir:{{[0-9]+}}:3; run convert-relay-to-loops first (e.g. -p 'plan-devices,fuse-ops,convert-relay-to-loops')
  %0 = relay.fused(%x) {kernel_name = "fused_exp", se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">} : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %e = relay.exp %a : tensor<4xf32>
    relay.yield %e : tensor<4xf32>
  }
  func.return %0 : tensor<4xf32>
}

// -----

// Kernel arguments are memrefs of static shape.

// CHECK: the c target expects kernel arguments of static memref type, but @k_dynamic has memref<?xf32>
func.func @k_dynamic(%in0: memref<?xf32>, %out0: memref<4xf32>) attributes {relay.se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">} {
  func.return
}

// -----

// Inputs are read-only (`const`): a kernel that stores into one is rejected.

func.func @k_store_input(%in0: memref<4xf32>, %out0: memref<4xf32>) attributes {relay.se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  "scf.parallel"(%c0, %c4, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%i: index):
    // CHECK: the c target expects stores only into the output or scratch buffers, but 'memref.store' at {{.*}}invalid.mlir:{{[0-9]+}}:5 writes input in0
    memref.store %zero, %in0[%i] : memref<4xf32>
    scf.reduce
  }) : (index, index, index) -> ()
  func.return
}

// -----

// Buffers are row-major without a layout.

// CHECK: the c target expects row-major memrefs without a layout, but found memref<4xf32, strided<[2]>>
func.func @k_strided_layout(%in0: memref<4xf32, strided<[2]>>, %out0: memref<4xf32>) attributes {relay.se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">} {
  func.return
}

// -----

// C's vectors (16 lanes, the cpu micro-kernels') are used whole: no lane is read alone, so
// split-reductions' lane reductions stay OpenCL's.

func.func @k_vector(%in0: memref<4xf32>, %out0: memref<1xf32>) attributes {relay.se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">} {
  %c0 = arith.constant 0 : index
  %x = memref.load %in0[%c0] : memref<4xf32>
  %v = vector.broadcast %x : f32 to vector<16xf32>
  // CHECK: the c target cannot emit 'vector.reduction' at {{.*}}invalid.mlir:{{[0-9]+}}:3: c vectors have no lane access
  %r = vector.reduction <add>, %v fastmath<reassoc> : vector<16xf32> into f32
  memref.store %r, %out0[%c0] : memref<1xf32>
  func.return
}

// -----

// C's vectors have 4, 8 or 16 lanes (one xmm, ymm or zmm register).

func.func @k_vector_width(%in0: memref<8xf32>, %out0: memref<8xf32>) attributes {relay.se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">} {
  %c0 = arith.constant 0 : index
  // CHECK: the c target cannot represent type vector<2xf32> (in 'vector.load' at {{.*}}invalid.mlir:{{[0-9]+}}:3); its vectors are of f32 with 4, 8, 16 lanes
  %v = vector.load %in0[%c0] : memref<8xf32>, vector<2xf32>
  vector.store %v, %out0[%c0] : memref<8xf32>, vector<2xf32>
  func.return
}

// -----

// Nor are lanes shuffled (pool_windows' shuffles are OpenCL's).

func.func @k_shuffle(%in0: memref<16xf32>, %out0: memref<16xf32>) attributes {relay.se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">} {
  %c0 = arith.constant 0 : index
  %v = vector.load %in0[%c0] : memref<16xf32>, vector<16xf32>
  // CHECK: the c target cannot emit 'vector.shuffle' at {{.*}}invalid.mlir:{{[0-9]+}}:3: c vectors have no lane access
  %s = vector.shuffle %v, %v [15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0] : vector<16xf32>, vector<16xf32>
  vector.store %s, %out0[%c0] : memref<16xf32>, vector<16xf32>
  func.return
}
