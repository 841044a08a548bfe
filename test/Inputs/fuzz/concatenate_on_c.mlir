// Fixed: C kernels with a branch turn gcc's loop if-conversion off (targets/c.py).
// Found by bench/fuzz.py (seed 11, program 13). Wrong result on C: row 3 (the first row of
// %b) comes out as zeros. The C kernel is right; GCC 12.2 miscompiles it at -O3 with AVX2 or
// AVX-512 (its loop vectorizer's if-conversion; -fno-tree-loop-if-convert or
// -fno-tree-loop-vectorize give the right answer). gcc_concatenate.c is the same loop alone.
// targets: c
// default-device: cpu
func.func @main(%a: tensor<3x2xf32>, %b: tensor<3x2xf32>) -> tensor<6x2xf32> {
  %0 = relay.concatenate %a, %b {axis = 0 : i64} : (tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<6x2xf32>
  func.return %0 : tensor<6x2xf32>
}
