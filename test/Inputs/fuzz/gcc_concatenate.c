/* GCC 12.2 (Debian 12.2.0-14) at -O3 -mavx2 prints 1 2 3 4 5 6 0 0 -3 -4 -5 -6; at -O2, or with
   -fno-tree-loop-if-convert, 1 2 3 4 5 6 -1 -2 -3 -4 -5 -6. The kernel xrelay emits for
   concatenate_on_c.mlir, reduced (found by bench/fuzz.py). */
#include <stdio.h>
__attribute__((noinline)) void concat(const float *restrict a, const float *restrict b, float *restrict out) {
  for (long i = 0; i < 6; i++)
    for (long j = 0; j < 2; j++)
      out[i * 2 + j] = i < 3 ? a[i * 2 + j] : b[(i - 3) * 2 + j];
}
int main(void) {
  float a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {-1, -2, -3, -4, -5, -6}, out[12];
  concat(a, b, out);
  for (int i = 0; i < 12; i++) printf("%g ", out[i]);
  printf("\n");
}
