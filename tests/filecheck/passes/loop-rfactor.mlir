// RUN: xweave-opt %s -p 'loop-rfactor{loop="r.k.inner"}' | filecheck %s
// RUN: xweave-opt %s -p 'loop-split{loop="m.k" factor=16},loop-rfactor{loop="m.k.inner"},loop-vectorize{loop="m.k.inner" lanes=16},loop-vectorize{loop="m.k.inner.rf_init" lanes=16},loop-vectorize{loop="m.k.inner.rf" lanes=16}' | filecheck %s --check-prefix=VEC
// RUN: not xweave-opt %s -p 'loop-rfactor{loop="r.i"}' 2>&1 | filecheck %s --check-prefix=TOP
// RUN: not xweave-opt %s -p 'loop-rfactor{loop="e.j"}' 2>&1 | filecheck %s --check-prefix=NOTRED
// RUN: not xweave-opt %s -p 'loop-rfactor{loop="x.nope"}' 2>&1 | filecheck %s --check-prefix=MISSING

// loop-rfactor{loop=L}: the reduction ending in L accumulates one partial result per
// iteration of L (a local buffer), combined into the row's element after L's parent.

func.func @rows(%a: memref<3x32xf32>, %s: memref<3x1xf32>, %m: memref<3x1xf32>, %b: memref<3x21xf32>) attributes {xweave.kernel} {
  loop.for "r.i" %i = 0 to 3 {
    loop.for "r.k.outer" %ko = 0 to 4 {
      loop.for "r.k.inner" %ki = 0 to 8 {
        %v = loop.load %a[%i, %ko * 8 + %ki] : memref<3x32xf32>
        %acc = loop.load %s[%i, 0] : memref<3x1xf32>
        %t = arith.addf %acc, %v : f32
        loop.store %t, %s[%i, 0] : memref<3x1xf32>
      }
    }
  }
  // A row of 21: a max whose last vector is ragged (guarded by the split).
  loop.for "m.i" %i = 0 to 3 {
    loop.for "m.k" %k = 0 to 21 {
      %v = loop.load %b[%i, %k] : memref<3x21xf32>
      %acc = loop.load %m[%i, 0] : memref<3x1xf32>
      %t = arith.maximumf %acc, %v : f32
      loop.store %t, %m[%i, 0] : memref<3x1xf32>
    }
  }
  // Not a reduction: every iteration stores its own element.
  loop.for "e.i" %i = 0 to 3 {
    loop.for "e.j" %j = 0 to 21 {
      %v = loop.load %b[%i, %j] : memref<3x21xf32>
      loop.store %v, %b[%i, %j] : memref<3x21xf32>
    }
  }
  func.return
}

// CHECK-LABEL: func.func @rows
// CHECK:         loop.for "r.i" %i = 0 to 3 {
// CHECK-NEXT:      %s_part = loop.alloc : memref<8xf32, #loop.scope<local>>
// CHECK-NEXT:      loop.for "r.k.inner.rf_init" %{{.*}} = 0 to 8 {
// CHECK-NEXT:        %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:        loop.store %[[Z]], %s_part[%{{.*}}] : memref<8xf32, #loop.scope<local>>
// CHECK-NEXT:      }
// CHECK-NEXT:      loop.for "r.k.outer" %ko = 0 to 4 {
// CHECK-NEXT:        loop.for "r.k.inner" %ki = 0 to 8 {
// CHECK-NEXT:          %v = loop.load %a[%i, %ko * 8 + %ki] : memref<3x32xf32>
// CHECK-NEXT:          %[[P:.*]] = loop.load %s_part[%ki] : memref<8xf32, #loop.scope<local>>
// CHECK-NEXT:          %t = arith.addf %[[P]], %v : f32
// CHECK-NEXT:          loop.store %t, %s_part[%ki] : memref<8xf32, #loop.scope<local>>
// CHECK-NEXT:        }
// CHECK-NEXT:      }
// CHECK-NEXT:      loop.for "r.k.inner.rf" %[[L:.*]] = 0 to 8 {
// CHECK-NEXT:        %[[ACC:.*]] = loop.load %s[%i, 0] : memref<3x1xf32>
// CHECK-NEXT:        %[[Q:.*]] = loop.load %s_part[%[[L]]] : memref<8xf32, #loop.scope<local>>
// CHECK-NEXT:        %[[T:.*]] = arith.addf %[[ACC]], %[[Q]] : f32
// CHECK-NEXT:        loop.store %[[T]], %s[%i, 0] : memref<3x1xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// the other loops are left alone
// CHECK:         loop.for "m.k" %k = 0 to 21 {
// CHECK-NEXT:      %v_1 = loop.load %b[%i_1, %k] : memref<3x21xf32>
// CHECK-NEXT:      %{{.*}} = loop.load %m[%i_1, 0] : memref<3x1xf32>

// With a split and vectors: a register of 16 partial maxima (from -inf), whole vectors
// while the last lane is in the row, lane by lane in the ragged one, one horizontal
// reduction per row.
// VEC-LABEL: loop.for "m.i"
// VEC:         %m_part = loop.alloc : memref<16xf32, #loop.scope<local>>
// VEC-NEXT:    %[[NINF:.*]] = arith.constant 0xff800000 : f32
// VEC-NEXT:    %[[B:.*]] = vector.broadcast %[[NINF]] : f32 to vector<16xf32>
// VEC-NEXT:    loop.store %[[B]], %m_part[0] : memref<16xf32, #loop.scope<local>>, vector<16xf32>
// VEC-NEXT:    loop.for "m.k.outer" %k_outer = 0 to 2 {
// VEC:           %[[LAST:.*]] = arith.cmpi slt
// VEC-NEXT:      scf.if %[[LAST]] {
// VEC-NEXT:        loop.load %b[%i_1, %k_outer * 16] : memref<3x21xf32> -> vector<16xf32>
// VEC-NEXT:        loop.load %m_part[0] : memref<16xf32, #loop.scope<local>> -> vector<16xf32>
// VEC-NEXT:        arith.maximumf {{.*}} : vector<16xf32>
// VEC-NEXT:        loop.store {{.*}}, %m_part[0] : memref<16xf32, #loop.scope<local>>, vector<16xf32>
// VEC-NEXT:      } else {
// VEC-COUNT-16:    scf.if
// VEC-NOT:       vector.reduction
// VEC:         %{{.*}} = loop.load %m[%i_1, 0] : memref<3x1xf32>
// VEC-NEXT:    %[[ALL:.*]] = loop.load %m_part[0] : memref<16xf32, #loop.scope<local>> -> vector<16xf32>
// VEC-NEXT:    vector.reduction <maximumf>, %[[ALL]]
// VEC-NEXT:    loop.store

// TOP: loop-rfactor: cannot rfactor loop 'r.i': it is not directly inside another loop
// NOTRED: loop-rfactor: cannot rfactor loop 'e.j': its body has 0 stores to an address not depending on the reduction loops (expected one reduction)
// MISSING: loop-rfactor: no loop named 'x.nope' in any kernel
