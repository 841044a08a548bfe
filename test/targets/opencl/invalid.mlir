// RUN: opt-tool %s --split-input-file --verify-diagnostics -t opencl | filecheck %s

// A top-level scf.parallel with a reduction has no NDRange form.

func.func @k_sum(%in0: memref<4xf32>, %out0: memref<1xf32>) attributes {relay.se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  // CHECK: the opencl target cannot map a top-level scf.parallel with reductions onto the NDRange
  %s = "scf.parallel"(%c0, %c4, %c1, %zero) <{operandSegmentSizes = array<i32: 1, 1, 1, 1>}> ({
  ^bb0(%i: index):
    %x = memref.load %in0[%i] : memref<4xf32>
    scf.reduce(%x : f32) {
    ^bb1(%l: f32, %r: f32):
      %a = arith.addf %l, %r : f32
      scf.reduce.return %a : f32
    }
  }) : (index, index, index, f32) -> f32
  memref.store %s, %out0[%c0] : memref<1xf32>
  func.return
}

// -----

// A kernel is one NDRange: two top-level nests are rejected.

func.func @k_two(%in0: memref<4xf32>, %out0: memref<4xf32>) attributes {relay.se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  "scf.parallel"(%c0, %c4, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%i: index):
    %x = memref.load %in0[%i] : memref<4xf32>
    memref.store %x, %out0[%i] : memref<4xf32>
    scf.reduce
  }) : (index, index, index) -> ()
  // CHECK: the opencl target expects one top-level scf.parallel in kernel @k_two, but found 2
  "scf.parallel"(%c0, %c4, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%i: index):
    %x = memref.load %in0[%i] : memref<4xf32>
    memref.store %x, %out0[%i] : memref<4xf32>
    scf.reduce
  }) : (index, index, index) -> ()
  func.return
}

// -----

// The NDRange needs constant bounds.

func.func @k_bounds(%in0: memref<4xf32>, %out0: memref<4xf32>) attributes {relay.se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // CHECK: the opencl target expects constant bounds on the top-level scf.parallel, but found one computed by 'arith.addi' at {{.*}}invalid.mlir:{{[0-9]+}}:3
  %n = arith.addi %c1, %c1 : index
  "scf.parallel"(%c0, %n, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%i: index):
    %x = memref.load %in0[%i] : memref<4xf32>
    memref.store %x, %out0[%i] : memref<4xf32>
    scf.reduce
  }) : (index, index, index) -> ()
  func.return
}

// -----

// A vector the language cannot spell, or a lane fold it has no combine for, is an error
// naming the op.

func.func @five_lanes(%in0: memref<1xf32>, %out0: memref<1xf32>) attributes {relay.se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">} {
  %c0 = arith.constant 0 : index
  %a = memref.load %in0[%c0] : memref<1xf32>
  // CHECK: the opencl target cannot represent type vector<5xf32> (in 'vector.broadcast' at {{.*}}invalid.mlir:{{[0-9]+}}:3); its vectors are of f32 with 2, 4, 8, 16 lanes
  %v = vector.broadcast %a : f32 to vector<5xf32>
  func.return
}

// -----

func.func @maxnumf_lanes(%in0: memref<1xf32>, %out0: memref<1xf32>) attributes {relay.se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">} {
  %c0 = arith.constant 0 : index
  %a = memref.load %in0[%c0] : memref<1xf32>
  %v = vector.broadcast %a : f32 to vector<4xf32>
  // CHECK: the opencl target cannot emit 'vector.reduction' <maxnumf> of 4 lanes at {{.*}}invalid.mlir:{{[0-9]+}}:3
  %r = vector.reduction <maxnumf>, %v : vector<4xf32> into f32
  func.return
}
