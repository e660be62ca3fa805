// RUN: not xweave-opt %s -p 'loop-dot{loop="signed.j"}' 2>&1 | filecheck %s --check-prefix=SIGNED
// RUN: not xweave-opt %s -p 'loop-dot{loop="gather.j"}' 2>&1 | filecheck %s --check-prefix=GATHER
// RUN: not xweave-opt %s -p 'loop-dot{loop="float.j"}' 2>&1 | filecheck %s --check-prefix=FLOAT
// RUN: not xweave-opt %s -p 'loop-dot{loop="odd.j"}' 2>&1 | filecheck %s --check-prefix=ODD
// RUN: not xweave-opt %s -p 'loop-dot{loop="signed.j" lanes=6}' 2>&1 | filecheck %s --check-prefix=LANES

// SIGNED: loop-dot: cannot rewrite loop 'signed.j': the data must be ui8 (zero-extended), or i16 with i16 weights, not i8
// GATHER: loop-dot: cannot rewrite loop 'gather.j': the weight load must read the lanes' groups consecutively ([..][lanes][4], or [..][lanes * 4])
// FLOAT: loop-dot: cannot rewrite loop 'float.j': the stored value must be an i32 addi
// ODD: loop-dot: cannot rewrite loop 'odd.j': the group loop must run 2 or 4 steps from 0
// LANES: loop-dot: lanes=6 (expected 4, 8 or 16)

func.func @errors(%s8: memref<8xi8>, %u8: memref<8xui8>, %w: memref<2x8x4xi8>, %wt: memref<2x4x8xi8>,
                  %acc: memref<8xi32>, %f: memref<8xf32>, %ff: memref<8xf32>) attributes {xweave.kernel} {
  // Signed 8-bit data: vpdpbusd and vpmaddubsw take unsigned bytes.
  loop.for "signed.j" %j = 0 to 8 {
    loop.for "signed.g" %g = 0 to 4 {
      %a = loop.load %s8[%g] : memref<8xi8>
      %b = loop.load %w[0, %j, %g] : memref<2x8x4xi8>
      %c = loop.load %acc[%j] : memref<8xi32>
      %ae = arith.extsi %a : i8 to i32
      %be = arith.extsi %b : i8 to i32
      %p = arith.muli %ae, %be : i32
      %s = arith.addi %c, %p : i32
      loop.store %s, %acc[%j] : memref<8xi32>
    }
  }
  // Weights not packed in groups: the lanes' G values lie 8 apart.
  loop.for "gather.j" %j = 0 to 8 {
    loop.for "gather.g" %g = 0 to 4 {
      %a = loop.load %u8[%g] : memref<8xui8>
      %b = loop.load %wt[0, %g, %j] : memref<2x4x8xi8>
      %c = loop.load %acc[%j] : memref<8xi32>
      %ae = arith.extui %a : i8 to i32
      %be = arith.extsi %b : i8 to i32
      %p = arith.muli %ae, %be : i32
      %s = arith.addi %c, %p : i32
      loop.store %s, %acc[%j] : memref<8xi32>
    }
  }
  // A float multiply-add.
  loop.for "float.j" %j = 0 to 8 {
    loop.for "float.g" %g = 0 to 4 {
      %a = loop.load %f[%g] : memref<8xf32>
      %b = loop.load %ff[%j] : memref<8xf32>
      %c = loop.load %f[%j] : memref<8xf32>
      %ae = arith.negf %a : f32
      %be = arith.negf %b : f32
      %p = arith.mulf %ae, %be : f32
      %s = arith.addf %c, %p : f32
      loop.store %s, %f[%j] : memref<8xf32>
    }
  }
  // Groups of 3.
  loop.for "odd.j" %j = 0 to 8 {
    loop.for "odd.g" %g = 0 to 3 {
      %a = loop.load %u8[%g] : memref<8xui8>
      %b = loop.load %w[0, %j, %g] : memref<2x8x4xi8>
      %c = loop.load %acc[%j] : memref<8xi32>
      %ae = arith.extui %a : i8 to i32
      %be = arith.extsi %b : i8 to i32
      %p = arith.muli %ae, %be : i32
      %s = arith.addi %c, %p : i32
      loop.store %s, %acc[%j] : memref<8xi32>
    }
  }
  func.return
}
