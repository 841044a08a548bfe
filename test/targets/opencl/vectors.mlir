// RUN: opt-tool %s --split-input-file -t opencl | filecheck %s

// Vector values (split-reductions makes them) are OpenCL vectors. A chain of vector.insert
// that nothing else reads is one constructor, starting from its broadcast's scalar or from
// the lanes (.s0 ... .sf) of the vector it starts from; a vector.reduction folds by halves
// where the order is free (reassoc, max, min), and lane after lane where it is not.

// CHECK-LABEL: __kernel void lanes(
// CHECK:         float [[A:a_[0-9]+]] = in0[0];
// CHECK-NEXT:    float [[B:b_[0-9]+]] = in0[1];
// CHECK-NEXT:    float4 [[FULL:full_[0-9]+]] = (float4)([[A]], [[B]], [[A]], [[B]]);
// CHECK-NEXT:    float4 [[ONE:one_[0-9]+]] = (float4)([[FULL]].s0, [[FULL]].s1, [[B]], [[FULL]].s3);
// CHECK-NEXT:    float4 [[SUM:sum_[0-9]+]] = [[FULL]] + [[ONE]];
// CHECK-NEXT:    float2 [[R:r_[0-9]+]]_h2 = [[SUM]].lo + [[SUM]].hi;
// CHECK-NEXT:    float [[R]] = [[R]]_h2.lo + [[R]]_h2.hi;
// CHECK-NEXT:    float [[S:s_[0-9]+]] = (([[SUM]].s0 + [[SUM]].s1) + [[SUM]].s2) + [[SUM]].s3;
// CHECK-NEXT:    float2 [[M:m_[0-9]+]]_h2 = (([[SUM]].lo < [[SUM]].hi) | ([[SUM]].lo != [[SUM]].lo)) ? [[SUM]].lo : [[SUM]].hi;
// CHECK-NEXT:    float [[M]]_h1 = (([[M]]_h2.lo < [[M]]_h2.hi) | ([[M]]_h2.lo != [[M]]_h2.lo)) ? [[M]]_h2.lo : [[M]]_h2.hi;
// CHECK-NEXT:    float [[M]] = (([[A]] < [[M]]_h1) | ([[A]] != [[A]])) ? [[A]] : [[M]]_h1;

func.func @lanes(%in0: memref<2xf32>, %out0: memref<3xf32>) attributes {relay.se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %a = memref.load %in0[%c0] : memref<2xf32>
  %b = memref.load %in0[%c1] : memref<2xf32>
  %v0 = vector.broadcast %a : f32 to vector<4xf32>
  %v1 = vector.insert %b, %v0 [1] : f32 into vector<4xf32>
  %v2 = vector.insert %a, %v1 [2] : f32 into vector<4xf32>
  %full = vector.insert %b, %v2 [3] : f32 into vector<4xf32>
  %one = vector.insert %b, %full [2] : f32 into vector<4xf32>
  %sum = arith.addf %full, %one : vector<4xf32>
  %r = vector.reduction <add>, %sum fastmath<reassoc> : vector<4xf32> into f32
  %s = vector.reduction <add>, %sum : vector<4xf32> into f32
  %m = vector.reduction <minimumf>, %sum, %a : vector<4xf32> into f32
  memref.store %r, %out0[%c0] : memref<3xf32>
  memref.store %s, %out0[%c1] : memref<3xf32>
  memref.store %m, %out0[%c2] : memref<3xf32>
  func.return
}

// -----

// A broadcast that is not the start of a chain is a constructor of its own.

// CHECK-LABEL: __kernel void splat(
// CHECK:         float [[A:a_[0-9]+]] = in0[0];
// CHECK-NEXT:    float8 [[V:v_[0-9]+]] = (float8)([[A]]);
// CHECK-NEXT:    float8 [[W:w_[0-9]+]] = [[V]] * [[V]];
func.func @splat(%in0: memref<1xf32>, %out0: memref<1xf32>) attributes {relay.se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">} {
  %c0 = arith.constant 0 : index
  %a = memref.load %in0[%c0] : memref<1xf32>
  %v = vector.broadcast %a : f32 to vector<8xf32>
  %w = arith.mulf %v, %v : vector<8xf32>
  %r = vector.reduction <mul>, %w fastmath<reassoc> : vector<8xf32> into f32
  memref.store %r, %out0[%c0] : memref<1xf32>
  func.return
}

// -----

// A vector.shuffle whose lanes all come from one vector is one swizzle (hex lane digits);
// lanes from both vectors make a constructor of the picked lanes. Vectors are loaded and
// stored through vector types aligned as a float, typedef'd before the kernels once each.

// CHECK:       typedef float4 xr_float4u __attribute__((aligned(4), may_alias));
// CHECK:       typedef float16 xr_float16u __attribute__((aligned(4), may_alias));
// CHECK-LABEL: __kernel void shuffles(
// CHECK:         float16 [[V:v_[0-9]+]] = *(const __global xr_float16u *)(&in0[0]);
// CHECK-NEXT:    float8 [[EVEN:even_[0-9]+]] = ([[V]]).s02468ace;
// CHECK-NEXT:    float8 [[ODD:odd_[0-9]+]] = ([[V]]).s13579bdf;
// CHECK-NEXT:    float4 [[MIX:mix_[0-9]+]] = (float4)(([[EVEN]]).s7, ([[ODD]]).s0, ([[EVEN]]).s0, ([[ODD]]).s7);
// CHECK-NEXT:    *(__global xr_float4u *)(&out0[0]) = [[MIX]];
func.func @shuffles(%in0: memref<16xf32>, %out0: memref<4xf32>) attributes {relay.se_scope = #relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">} {
  %c0 = arith.constant 0 : index
  %v = vector.load %in0[%c0] : memref<16xf32>, vector<16xf32>
  %even = vector.shuffle %v, %v [0, 2, 4, 6, 8, 10, 12, 14] : vector<16xf32>, vector<16xf32>
  %odd = vector.shuffle %v, %v [1, 3, 5, 7, 9, 11, 13, 15] : vector<16xf32>, vector<16xf32>
  %mix = vector.shuffle %even, %odd [7, 8, 0, 15] : vector<8xf32>, vector<8xf32>
  vector.store %mix, %out0[%c0] : memref<4xf32>, vector<4xf32>
  func.return
}
