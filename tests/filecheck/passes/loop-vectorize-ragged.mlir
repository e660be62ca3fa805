// RUN: xweave-opt %s -p 'loop-split{loop="s.i" factor=8},loop-vectorize{loop="s.i.inner" lanes=8}' | filecheck %s
// RUN: xweave-opt %s -p 'loop-vectorize{loop="t.i" lanes=8}' | filecheck %s --check-prefix=ODD
// RUN: not xweave-opt %s -p 'loop-vectorize{loop="g.i" lanes=8}' 2>&1 | filecheck %s --check-prefix=GE
// RUN: xweave-opt %s -p 'loop-vectorize{loop="s.i" lanes=8 split=8}' | filecheck %s --check-prefix=SPLIT
// RUN: not xweave-opt %s -p 'loop-vectorize{loop="g.i" lanes=8 split=4}' 2>&1 | filecheck %s --check-prefix=GE
// RUN: xweave-opt %s -p 'loop-vectorize{loop="w.j" lanes=8}' | filecheck %s --check-prefix=AND

// A bounds guard of a non-dividing split (`outer * 8 + inner < 21`): the group runs as
// one vector when its last lane passes the guard, else lane by lane (the ragged tile).
// An extent that is not a multiple of 4 ends in a scalar lane (7 = 4 + 2 + 1).

func.func @ragged(%a: memref<21xf32>, %out: memref<21xf32>, %b: memref<7xf32>, %c: memref<7xf32>) attributes {xweave.kernel} {
  loop.for "s.i" %i = 0 to 21 {
    %v = loop.load %a[%i] : memref<21xf32>
    %w = math.exp %v : f32
    loop.store %w, %out[%i] : memref<21xf32>
  }
  loop.for "t.i" %i = 0 to 7 {
    %v = loop.load %b[%i] : memref<7xf32>
    %w = arith.mulf %v, %v : f32
    loop.store %w, %c[%i] : memref<7xf32>
  }
  // `>=` is not a bounds guard: its last lane passing says nothing of the others.
  loop.for "g.i" %i = 0 to 8 {
    %c3 = arith.constant 3 : index
    %p = arith.cmpi sge, %i, %c3 : index
    scf.if %p {
      %v = loop.load %b[%i] : memref<7xf32>
      loop.store %v, %c[%i] : memref<7xf32>
    }
  }
  // A write-back of a ragged row and column: (row < 3) && (column(lane) < 21).
  loop.for "w.o" %o = 0 to 3 {
    loop.for "w.j" %j = 0 to 8 {
      %c3 = arith.constant 3 : index
      %row = arith.cmpi slt, %o, %c3 : index
      %c8 = arith.constant 8 : index
      %base = arith.muli %o, %c8 : index
      %col = arith.addi %base, %j : index
      %c21 = arith.constant 21 : index
      %incol = arith.cmpi slt, %col, %c21 : index
      %both = arith.andi %row, %incol : i1
      scf.if %both {
        %v = loop.load %a[%o * 8 + %j] : memref<21xf32>
        loop.store %v, %out[%o * 8 + %j] : memref<21xf32>
      }
    }
  }
  func.return
}

// CHECK:       loop.for "s.i.outer" %i_outer = 0 to 3 {
// CHECK:         %[[BASE:.*]] = arith.muli %i_outer, %{{.*}} : index
// CHECK:         %[[N:.*]] = arith.constant 21 : index
// CHECK-NEXT:    %[[SEVEN:.*]] = arith.constant 7 : index
// CHECK-NEXT:    %[[LASTI:.*]] = arith.addi %[[BASE]], %[[SEVEN]] : index
// CHECK-NEXT:    %[[LAST:.*]] = arith.cmpi slt, %[[LASTI]], %[[N]] : index
// CHECK-NEXT:    scf.if %[[LAST]] {
// CHECK-NEXT:      %v = loop.load %a[%i_outer * 8] : memref<21xf32> -> vector<8xf32>
// CHECK-NEXT:      %w = math.exp %v : vector<8xf32>
// CHECK-NEXT:      loop.store %w, %out[%i_outer * 8] : memref<21xf32>, vector<8xf32>
// CHECK-NEXT:    } else {
// CHECK-NEXT:      %[[L0:.*]] = arith.constant 0 : index
// CHECK-NEXT:      %[[I0:.*]] = arith.addi %[[BASE]], %[[L0]] : index
// CHECK-NEXT:      %[[C0:.*]] = arith.cmpi slt, %[[I0]], %[[N]] : index
// CHECK-NEXT:      scf.if %[[C0]] {
// CHECK-NEXT:        %{{.*}} = loop.load %a[%i_outer * 8 + %[[L0]]] : memref<21xf32>
// CHECK-NEXT:        %{{.*}} = math.exp %{{.*}} : f32
// CHECK-NEXT:        loop.store %{{.*}}, %out[%i_outer * 8 + %[[L0]]] : memref<21xf32>
// CHECK-NEXT:      }
// CHECK-COUNT-7: scf.if
// CHECK-NOT:     vector

// ODD:         %[[V:.*]] = loop.load %b[0] : memref<7xf32> -> vector<4xf32>
// ODD-NEXT:    %[[W:.*]] = arith.mulf %[[V]], %[[V]] : vector<4xf32>
// ODD-NEXT:    loop.store %[[W]], %c[0] : memref<7xf32>, vector<4xf32>
// ODD-NEXT:    %[[V2:.*]] = loop.load %b[4] : memref<7xf32> -> vector<2xf32>
// ODD-NEXT:    %[[W2:.*]] = arith.mulf %[[V2]], %[[V2]] : vector<2xf32>
// ODD-NEXT:    loop.store %[[W2]], %c[4] : memref<7xf32>, vector<2xf32>
// ODD-NEXT:    %[[SIX:.*]] = arith.constant 6 : index
// ODD-NEXT:    %[[V3:.*]] = loop.load %b[%[[SIX]]] : memref<7xf32>
// ODD-NEXT:    %[[W3:.*]] = arith.mulf %[[V3]], %[[V3]] : f32
// ODD-NEXT:    loop.store %[[W3]], %c[%[[SIX]]] : memref<7xf32>

// GE: loop-vectorize: cannot vectorize loop 'g.i': 'scf.if' has a condition that depends on the loop variable

// With split=8, loop-vectorize splits the loop itself (after checking that its body
// vectorizes): the same code as loop-split then loop-vectorize.
// SPLIT:       loop.for "s.i.outer" %i_outer = 0 to 3 {
// SPLIT:         scf.if %{{.*}} {
// SPLIT-NEXT:      %v = loop.load %a[%i_outer * 8] : memref<21xf32> -> vector<8xf32>
// SPLIT:         } else {

// AND:         %[[ROW:.*]] = arith.cmpi slt, %o, %{{.*}} : index
// AND:         %[[LASTCOL:.*]] = arith.cmpi slt
// AND-NEXT:    %[[ALL:.*]] = arith.andi %[[ROW]], %[[LASTCOL]] : i1
// AND-NEXT:    scf.if %[[ALL]] {
// AND-NEXT:      %{{.*}} = loop.load %a[%o * 8] : memref<21xf32> -> vector<8xf32>
// AND-NEXT:      loop.store %{{.*}}, %out[%o * 8] : memref<21xf32>, vector<8xf32>
// AND-NEXT:    } else {
// AND-COUNT-8:   arith.andi
