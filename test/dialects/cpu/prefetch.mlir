// RUN: opt-tool %s --split-input-file --verify-diagnostics | filecheck %s

// cpu.prefetch prints as it parses; it takes one index per axis of its memref.

func.func @prefetch(%a: memref<4x8xf32>, %i: index) {
  cpu.prefetch %a[%i, %i] : memref<4x8xf32>
  func.return
}
// CHECK: cpu.prefetch %a[%i, %i] : memref<4x8xf32>

// -----

func.func @one_index_short(%a: memref<4x8xf32>, %i: index) {
  cpu.prefetch %a[%i] : memref<4x8xf32>
  func.return
}
// CHECK: expected 2 indices for 'cpu.prefetch' of a memref<4x8xf32>, but found 1
