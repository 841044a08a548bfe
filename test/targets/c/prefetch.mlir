// RUN: opt-tool %s -t c | filecheck %s --check-prefix=C
// RUN: opt-tool %s -t opencl | filecheck %s --check-prefix=CL
// RUN: opt-tool %s | filecheck %s --check-prefix=IR
// RUN: opt-tool %s -p dce,licm,cse | filecheck %s --check-prefix=IR

// cpu.prefetch (packed_matmul's prefetch of a pre-packed panel, a fixed distance ahead): C
// prints gcc's __builtin_prefetch of the element's address, OpenCL drops the hint. It has
// no result but is neither dead nor loop-invariant code to the cleanup passes. Its row, the
// loop's plus a constant, is printed as the loop's row and a constant offset (i * 8 + 14).

func.func @k_prefetch(%in0: memref<4x8xf32>, %out0: memref<4xf32>) attributes {relay.se_scope = #relay.se_scope<device = cpu, id = 0, target = "c", memory = "global">} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c6 = arith.constant 6 : index
  "scf.parallel"(%c0, %c4, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%i: index):
    %j = arith.addi %i, %c1 : index
    cpu.prefetch %in0[%j, %c6] : memref<4x8xf32>
    %x = memref.load %in0[%i, %c0] : memref<4x8xf32>
    memref.store %x, %out0[%i] : memref<4xf32>
    scf.reduce
  }) : (index, index, index) -> ()
  func.return
}
func.func @k_prefetch_cl(%in0: memref<4x8xf32>, %out0: memref<4xf32>) attributes {relay.se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  "scf.parallel"(%c0, %c4, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%i: index):
    cpu.prefetch %in0[%i, %c1] : memref<4x8xf32>
    %x = memref.load %in0[%i, %c0] : memref<4x8xf32>
    memref.store %x, %out0[%i] : memref<4xf32>
    scf.reduce
  }) : (index, index, index) -> ()
  func.return
}

// C-LABEL: void k_prefetch(
// C: for (long [[I:i_[0-9]+]] = 0; [[I]] < 4; [[I]]++) {
// C-NEXT: __builtin_prefetch((const void *)((__UINTPTR_TYPE__)in0 + sizeof *in0 * ([[I]] * 8 + 14)));
// C-NEXT: float [[X:x_[0-9]+]] = in0[[[I]] * 8];
// C-NEXT: out0[[[I]]] = [[X]];
// C-NOT: k_prefetch_cl

// CL-LABEL: __kernel void k_prefetch_cl(
// CL-NOT: prefetch
// CL: out0[
// CL-NOT: prefetch

// IR-LABEL: func.func @k_prefetch(
// IR: %[[J:.*]] = arith.addi
// IR-NEXT: cpu.prefetch %{{.*}}[%[[J]], %{{.*}}] : memref<4x8xf32>
// IR-LABEL: func.func @k_prefetch_cl(
// IR: cpu.prefetch %{{.*}}[%{{.*}}, %{{.*}}] : memref<4x8xf32>
