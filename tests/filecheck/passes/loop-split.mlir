// RUN: xweave-opt %s -p 'loop-split{loop="s.i" factor=4}' | filecheck %s
// RUN: xweave-opt %s -p 'loop-split{loop="s.j" factor=3}' | filecheck %s --check-prefix=DIV
// RUN: xweave-opt %s -p 'loop-split{loop="s.i" nparts=3 guard=innermost kernel=copy}' | filecheck %s --check-prefix=NPARTS
// RUN: xweave-opt %s -p 'loop-split{loop="t.k" factor=2}' | filecheck %s --check-prefix=STEP

// loop-split{loop=L factor=F}: L (extent N) becomes L.outer (ceil(N/F)) around L.inner (F);
// the old variable is outer * F + inner, folded into the access maps. Since 4 does not
// divide 10, the inner body is guarded by outer * 4 + inner < 10. Split loops are
// serial. Every kernel with a loop of that name is split.

func.func @copy(%a: memref<10x6xf32>, %out: memref<10x6xf32>) attributes {xweave.kernel} {
  loop.for "s.i" %i = 0 to 10 parallel {
    loop.for "s.j" %j = 0 to 6 {
      %v = loop.load %a[%i, %j] : memref<10x6xf32>
      loop.store %v, %out[%i, %j] : memref<10x6xf32>
    }
  }
  func.return
}
func.func @other(%a: memref<12xf32>, %out: memref<10xf32>) attributes {xweave.kernel} {
  loop.for "s.i" %i = 0 to 10 {
    %v = loop.load %a[%i + 2] : memref<12xf32>
    loop.store %v, %out[%i] : memref<10xf32>
  }
  loop.for "t.k" %k = 1 to 10 step 3 {
    %v = loop.load %a[%k] : memref<12xf32>
    loop.store %v, %out[%k] : memref<10xf32>
  }
  func.return
}

// CHECK-LABEL: func.func @copy
// CHECK-NEXT:    loop.for "s.i.outer" %i_outer = 0 to 3 {
// CHECK-NEXT:      loop.for "s.i.inner" %i_inner = 0 to 4 {
// CHECK-NEXT:        %[[F:.*]] = arith.constant 4 : index
// CHECK-NEXT:        %[[M:.*]] = arith.muli %i_outer, %[[F]] : index
// CHECK-NEXT:        %[[I:.*]] = arith.addi %[[M]], %i_inner : index
// CHECK-NEXT:        %[[N:.*]] = arith.constant 10 : index
// CHECK-NEXT:        %[[C:.*]] = arith.cmpi slt, %[[I]], %[[N]] : index
// CHECK-NEXT:        scf.if %[[C]] {
// CHECK-NEXT:          loop.for "s.j" %j = 0 to 6 {
// CHECK-NEXT:            %v = loop.load %a[%i_outer * 4 + %i_inner, %j] : memref<10x6xf32>
// CHECK-NEXT:            loop.store %v, %out[%i_outer * 4 + %i_inner, %j] : memref<10x6xf32>
// CHECK-NEXT:          }
// CHECK-NEXT:        }
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return
// CHECK-LABEL: func.func @other
// CHECK-NEXT:    loop.for "s.i.outer" %i_outer = 0 to 3 {
// CHECK-NEXT:      loop.for "s.i.inner" %i_inner = 0 to 4 {
// CHECK:             scf.if
// CHECK-NEXT:          %v = loop.load %a[%i_outer * 4 + %i_inner + 2] : memref<12xf32>
// CHECK-NEXT:          loop.store %v, %out[%i_outer * 4 + %i_inner] : memref<10xf32>
// Other loops are left alone.
// CHECK:         loop.for "t.k" %k = 1 to 10 step 3 {

// A dividing factor needs no guard; the other loops (and their kind) are untouched.
// DIV-LABEL: func.func @copy
// DIV-NEXT:    loop.for "s.i" %i = 0 to 10 parallel {
// DIV-NEXT:      loop.for "s.j.outer" %j_outer = 0 to 2 {
// DIV-NEXT:        loop.for "s.j.inner" %j_inner = 0 to 3 {
// DIV-NEXT:          %v = loop.load %a[%i, %j_outer * 3 + %j_inner] : memref<10x6xf32>
// DIV-NEXT:          loop.store %v, %out[%i, %j_outer * 3 + %j_inner] : memref<10x6xf32>
// DIV-NEXT:        }
// DIV-NEXT:      }
// DIV-NEXT:    }
// DIV-NOT:   scf.if
// DIV-NOT:   "s.j.outer"

// nparts=3 fixes the outer extent (inner: ceil(10/3) = 4); guard=innermost puts the
// guard around the innermost body of the nest, which stays perfect; kernel=copy leaves
// @other alone.
// NPARTS-LABEL: func.func @copy
// NPARTS-NEXT:    loop.for "s.i.outer" %i_outer = 0 to 3 {
// NPARTS-NEXT:      loop.for "s.i.inner" %i_inner = 0 to 4 {
// NPARTS-NEXT:        loop.for "s.j" %j = 0 to 6 {
// NPARTS-NEXT:          %[[F:.*]] = arith.constant 4 : index
// NPARTS-NEXT:          %[[M:.*]] = arith.muli %i_outer, %[[F]] : index
// NPARTS-NEXT:          %[[I:.*]] = arith.addi %[[M]], %i_inner : index
// NPARTS-NEXT:          %[[N:.*]] = arith.constant 10 : index
// NPARTS-NEXT:          %[[C:.*]] = arith.cmpi slt, %[[I]], %[[N]] : index
// NPARTS-NEXT:          scf.if %[[C]] {
// NPARTS-NEXT:            %v = loop.load %a[%i_outer * 4 + %i_inner, %j] : memref<10x6xf32>
// NPARTS-LABEL: func.func @other
// NPARTS-NEXT:    loop.for "s.i" %i = 0 to 10 {

// A loop with a lower bound and a step is normalized: k = (outer * 2 + inner) * 3 + 1,
// for the 3 values of k (1, 4, 7).
// STEP-LABEL: func.func @other
// STEP:         loop.for "t.k.outer" %k_outer = 0 to 2 {
// STEP-NEXT:      loop.for "t.k.inner" %k_inner = 0 to 2 {
// STEP:             %[[N:.*]] = arith.constant 3 : index
// STEP-NEXT:        %[[C:.*]] = arith.cmpi slt, %{{.*}}, %[[N]] : index
// STEP-NEXT:        scf.if %[[C]] {
// STEP-NEXT:          %v_1 = loop.load %a[%k_outer * 6 + %k_inner * 3 + 1] : memref<12xf32>
// STEP-NEXT:          loop.store %v_1, %out[%k_outer * 6 + %k_inner * 3 + 1] : memref<10xf32>
