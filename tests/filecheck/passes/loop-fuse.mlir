// RUN: xweave-opt %s -p 'loop-fuse{outer="s.i" inner="s.j"}' | filecheck %s
// RUN: xweave-opt %s -p 'loop-fuse{outer="s.j" inner="s.k" fused-name="s.jk" kernel=copy}' | filecheck %s --check-prefix=NAMED
// RUN: xweave-opt %s -p 'loop-fuse{outer="t.i" inner="t.j"}' | filecheck %s --check-prefix=STEP
// RUN: xweave-opt %s -p 'loop-fuse{outer="t.i" inner="t.j"},loop-simplify' | filecheck %s --check-prefix=SIMPLE

// loop-fuse{outer=A inner=B}: B, the only op of A's body, and A become one loop
// `A.<axis of B>.fused` of extent ext(A) * ext(B), with A = f floordiv ext(B) and
// B = f mod ext(B). Two parallel loops give a parallel loop.

func.func @copy(%a: memref<2x3x4xf32>, %out: memref<2x3x4xf32>) attributes {xweave.kernel} {
  loop.for "s.i" %i = 0 to 2 parallel {
    loop.for "s.j" %j = 0 to 3 parallel {
      loop.for "s.k" %k = 0 to 4 {
        %v = loop.load %a[%i, %j, %k] : memref<2x3x4xf32>
        loop.store %v, %out[%i, %j, %k] : memref<2x3x4xf32>
      }
    }
  }
  func.return
}
func.func @strided(%a: memref<12xf32>, %out: memref<12xf32>) attributes {xweave.kernel} {
  loop.for "t.i" %i = 1 to 7 step 2 {
    loop.for "t.j" %j = 0 to 2 {
      %v = loop.load %a[%i + %j] : memref<12xf32>
      loop.store %v, %out[%i * 2 + %j] : memref<12xf32>
    }
  }
  func.return
}

// CHECK-LABEL: func.func @copy
// CHECK-NEXT:    loop.for "s.i.j.fused" %i_j_fused = 0 to 6 parallel {
// CHECK-NEXT:      loop.for "s.k" %k = 0 to 4 {
// CHECK-NEXT:        %v = loop.load %a[%i_j_fused floordiv 3, %i_j_fused mod 3, %k] : memref<2x3x4xf32>
// CHECK-NEXT:        loop.store %v, %out[%i_j_fused floordiv 3, %i_j_fused mod 3, %k] : memref<2x3x4xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return
// CHECK-LABEL: func.func @strided
// CHECK-NEXT:    loop.for "t.i" %i = 1 to 7 step 2 {

// fused-name= names the loop; a serial and a parallel loop fuse into a serial one.
// NAMED-LABEL: func.func @copy
// NAMED-NEXT:    loop.for "s.i" %i = 0 to 2 parallel {
// NAMED-NEXT:      loop.for "s.jk" %j_k_fused = 0 to 12 {
// NAMED-NEXT:        %v = loop.load %a[%i, %j_k_fused floordiv 4, %j_k_fused mod 4] : memref<2x3x4xf32>

// Lower bounds and steps are normalized: i = (f floordiv 2) * 2 + 1.
// STEP-LABEL: func.func @strided
// STEP-NEXT:    loop.for "t.i.j.fused" %i_j_fused = 0 to 6 {
// STEP-NEXT:      %v = loop.load %a[%i_j_fused floordiv 2 * 2 + 1 + %i_j_fused mod 2] : memref<12xf32>
// STEP-NEXT:      loop.store %v, %out[%i_j_fused floordiv 2 * 4 + 2 + %i_j_fused mod 2] : memref<12xf32>

// loop-simplify recombines 2 * (f floordiv 2) + f mod 2 into f.
// SIMPLE-LABEL: func.func @strided
// SIMPLE-NEXT:    loop.for "t.i.j.fused" %i_j_fused = 0 to 6 {
// SIMPLE-NEXT:      %v = loop.load %a[%i_j_fused + 1] : memref<12xf32>
// SIMPLE-NEXT:      loop.store %v, %out[%i_j_fused floordiv 2 * 4 + %i_j_fused mod 2 + 2] : memref<12xf32>
