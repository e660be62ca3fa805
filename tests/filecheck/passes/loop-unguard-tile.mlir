// RUN: xweave-opt %s -p 'loop-unguard{loop="t.k"}' | filecheck %s
// RUN: xweave-opt %s -p 'loop-unguard{loop="t.k" kernel="peek"}' | filecheck %s --check-prefix=PEEK

// A 3 x 6 output in register blocks of 2 rows x 4 columns, before its tile loops are
// unrolled or vectorized: the guards of the ragged last row and column tiles test loops
// inside the cache's allocation (%r, %j), each the index of the cache element written,
// and the write-back reads each element under the same conditions (a conjunction).
// The packed operands are padded to whole tiles, so the reduction runs unguarded; the
// row guard inside the column guard goes first, then the column guard.
// @peek reads the cache without the column guard: the guards stay.

func.func @tile(%a: memref<2x4x2xf32>, %b: memref<2x4x4xf32>, %out: memref<3x6xf32>) attributes {xweave.kernel} {
  loop.for "t.j.outer" %jo = 0 to 2 {
    loop.for "t.i.outer" %io = 0 to 2 {
      %t_local = loop.alloc : memref<2x4xf32, #loop.scope<local>>
      loop.for "t.k" %k = 0 to 4 {
        loop.for "t.i.inner" %r = 0 to 2 {
          loop.for "t.j.inner" %j = 0 to 4 {
            %c4 = arith.constant 4 : index
            %j4 = arith.muli %jo, %c4 : index
            %col = arith.addi %j4, %j : index
            %c6 = arith.constant 6 : index
            %incol = arith.cmpi slt, %col, %c6 : index
            scf.if %incol {
              %c2 = arith.constant 2 : index
              %i2 = arith.muli %io, %c2 : index
              %row = arith.addi %i2, %r : index
              %c3 = arith.constant 3 : index
              %inrow = arith.cmpi slt, %row, %c3 : index
              scf.if %inrow {
                %x = loop.load %a[%io, %k, %r] : memref<2x4x2xf32>
                %w = loop.load %b[%jo, %k, %j] : memref<2x4x4xf32>
                %p = arith.mulf %x, %w : f32
                %acc = loop.load %t_local[%r, %j] : memref<2x4xf32, #loop.scope<local>>
                %s = arith.addf %acc, %p : f32
                loop.store %s, %t_local[%r, %j] : memref<2x4xf32, #loop.scope<local>>
              }
            }
          }
        }
      }
      loop.for "t_write.i" %wr = 0 to 2 {
        loop.for "t_write.j" %wj = 0 to 4 {
          %c2 = arith.constant 2 : index
          %i2 = arith.muli %io, %c2 : index
          %row = arith.addi %i2, %wr : index
          %c3 = arith.constant 3 : index
          %inrow = arith.cmpi slt, %row, %c3 : index
          %c4 = arith.constant 4 : index
          %j4 = arith.muli %jo, %c4 : index
          %col = arith.addi %j4, %wj : index
          %c6 = arith.constant 6 : index
          %incol = arith.cmpi slt, %col, %c6 : index
          %both = arith.andi %inrow, %incol : i1
          scf.if %both {
            %v = loop.load %t_local[%wr, %wj] : memref<2x4xf32, #loop.scope<local>>
            loop.store %v, %out[%io * 2 + %wr, %jo * 4 + %wj] : memref<3x6xf32>
          }
        }
      }
    }
  }
  func.return
}

func.func @peek(%a: memref<2x4x2xf32>, %b: memref<2x4x4xf32>, %out: memref<3x6xf32>) attributes {xweave.kernel} {
  loop.for "t.j.outer" %jo = 0 to 2 {
    %t_local = loop.alloc : memref<4xf32, #loop.scope<local>>
    loop.for "t.k" %k = 0 to 4 {
      loop.for "t.j.inner" %j = 0 to 4 {
        %c4 = arith.constant 4 : index
        %j4 = arith.muli %jo, %c4 : index
        %col = arith.addi %j4, %j : index
        %c6 = arith.constant 6 : index
        %incol = arith.cmpi slt, %col, %c6 : index
        scf.if %incol {
          %w = loop.load %b[%jo, %k, %j] : memref<2x4x4xf32>
          %acc = loop.load %t_local[%j] : memref<4xf32, #loop.scope<local>>
          %s = arith.addf %acc, %w : f32
          loop.store %s, %t_local[%j] : memref<4xf32, #loop.scope<local>>
        }
      }
    }
    loop.for "t_write.j" %wj = 0 to 4 {
      %v = loop.load %t_local[%wj] : memref<4xf32, #loop.scope<local>>
      loop.store %v, %out[0, %wj] : memref<3x6xf32>
    }
  }
  func.return
}

// CHECK-LABEL: func.func @tile
// CHECK:         loop.for "t.k" %k = 0 to 4 {
// CHECK-NEXT:      loop.for "t.i.inner" %r = 0 to 2 {
// CHECK-NEXT:        loop.for "t.j.inner" %j = 0 to 4 {
// CHECK-NOT:           scf.if
// CHECK:               %x = loop.load %a[%io, %k, %r] : memref<2x4x2xf32>
// CHECK:               loop.store %s, %t_local[%r, %j] : memref<2x4xf32, #loop.scope<local>>
// CHECK-NEXT:        }
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK:         scf.if %both {
// CHECK-LABEL: func.func @peek

// PEEK-LABEL: func.func @peek
// PEEK:         scf.if %incol {
