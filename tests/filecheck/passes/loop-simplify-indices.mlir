// RUN: xweave-opt %s -p 'loop-simplify-indices{loop="s.c"}' | filecheck %s
// RUN: not xweave-opt %s -p 'loop-simplify-indices{loop="s.nope"}' 2>&1 | filecheck %s --check-prefix=MISSING

// A channel shuffle as inlining leaves it: the flattened offset of a reshape, divided
// and taken modulo the inner extents. Over the loop ranges (c < 8, y < 4, x < 4) the
// channel is `c floordiv 2 + c mod 2 * 4` and the column `x`: a contiguous row copy.
// The loop `t.c` is not named, so it is left alone.

func.func @shuffle(%a: memref<8x4x4xf32>, %out: memref<8x4x4xf32>) attributes {xweave.kernel} {
  loop.for "s.c" %c = 0 to 8 {
    loop.for "s.y" %y = 0 to 4 {
      loop.for "s.x" %x = 0 to 4 {
        %c16 = arith.constant 16 : index
        %c4 = arith.constant 4 : index
        %c2 = arith.constant 2 : index
        %f0 = arith.muli %c, %c16 : index
        %f1 = arith.muli %y, %c4 : index
        %f2 = arith.addi %f0, %f1 : index
        %flat = arith.addi %f2, %x : index
        %row = arith.floordivsi %flat, %c4 : index
        %ch = arith.floordivsi %row, %c4 : index
        %lo = arith.cmpi slt, %ch, %c4 : index
        scf.if %lo {
          %v = loop.load %a[(%c floordiv 2 + %c mod 2 * 4), (%y * 4 + %x) floordiv 4, (%c * 16 + %y * 4 + %x) mod 4] : memref<8x4x4xf32>
          loop.store %v, %out[%c, %y, %x] : memref<8x4x4xf32>
        }
      }
    }
  }
  loop.for "t.c" %c = 0 to 8 {
    %c4 = arith.constant 4 : index
    %m = arith.remsi %c, %c4 : index
    %v = loop.load %a[%c, 0, (%c * 4) mod 4] : memref<8x4x4xf32>
    loop.store %v, %out[%m, 0, 0] : memref<8x4x4xf32>
  }
  func.return
}

// CHECK:         loop.for "s.x" %x = 0 to 4 {
// CHECK-NEXT:      %[[C:.*]] = arith.constant 4 : index
// CHECK-NEXT:      %[[LO:.*]] = arith.cmpi slt, %c, %[[C]] : index
// CHECK-NEXT:      scf.if %[[LO]] {
// CHECK-NEXT:        %v = loop.load %a[%c floordiv 2 + %c mod 2 * 4, %y, %x] : memref<8x4x4xf32>
// CHECK-NEXT:        loop.store %v, %out[%c, %y, %x] : memref<8x4x4xf32>
// CHECK:         loop.for "t.c" %c_1 = 0 to 8 {
// CHECK-NEXT:      %c4_1 = arith.constant 4 : index
// CHECK-NEXT:      %m = arith.remsi %c_1, %c4_1 : index
// CHECK-NEXT:      %v_1 = loop.load %a[%c_1, 0, %c_1 * 4 mod 4] : memref<8x4x4xf32>

// MISSING: loop-simplify-indices: no loop named 's.nope' in any kernel
