// RUN: xweave-opt %s -p 'loop-dot{loop="d.j" lanes=8}' --split-input-file | filecheck %s

// loop-dot: the lanes x group nest of an integer register block becomes one loop.dot
// per 8 lanes: the accumulators and the 4 data bytes loaded as vectors, the weights as
// whole rows of their packed [8][4] panel (32 bytes).

// CHECK-LABEL: func.func @dense
// CHECK:         loop.for "d.k" %k = 0 to 2 {
// CHECK-NEXT:      %[[A:.*]] = loop.load %x[%i, %k * 4] : memref<2x8xui8> -> vector<4xi8>
// CHECK-NEXT:      %[[C:.*]] = loop.load %acc[%i, 0] : memref<2x8xi32, #loop.scope<local>> -> vector<8xi32>
// CHECK-NEXT:      %[[W:.*]] = loop.load %w[0, %k, 0, 0] : memref<1x2x8x4xi8> -> vector<32xi8>
// CHECK-NEXT:      %[[D:.*]] = loop.dot %[[C]], %[[A]], %[[W]] : vector<8xi32>, vector<4xi8>, vector<32xi8>
// CHECK-NEXT:      loop.store %[[D]], %acc[%i, 0] : memref<2x8xi32, #loop.scope<local>>, vector<8xi32>
// CHECK-NEXT:    }
builtin.module {
  func.func @dense(%x: memref<2x8xui8>, %w: memref<1x2x8x4xi8>, %out: memref<2x8xi32>) attributes {xweave.kernel} {
    %acc = loop.alloc : memref<2x8xi32, #loop.scope<local>>
    loop.for "d.i" %i = 0 to 2 {
      loop.for "d.k" %k = 0 to 2 {
        loop.for "d.j" %j = 0 to 8 {
          loop.for "d.g" %g = 0 to 4 {
            %a = loop.load %x[%i, %k * 4 + %g] : memref<2x8xui8>
            %b = loop.load %w[0, %k, %j, %g] : memref<1x2x8x4xi8>
            %c = loop.load %acc[%i, %j] : memref<2x8xi32, #loop.scope<local>>
            %ae = arith.extui %a : i8 to i32
            %be = arith.extsi %b : i8 to i32
            %p = arith.muli %ae, %be : i32
            %s = arith.addi %c, %p : i32
            loop.store %s, %acc[%i, %j] : memref<2x8xi32, #loop.scope<local>>
          }
        }
      }
    }
    func.return
  }
}

// -----

// 16 lanes of int16 weights in pairs (a merged [16 * 2] panel): two dots of 8 lanes.

// CHECK-LABEL: func.func @pairs
// CHECK:         %[[A:.*]] = loop.load %x[%k * 2] : memref<8xui8> -> vector<2xi8>
// CHECK-NEXT:    %[[C0:.*]] = loop.load %acc[0] : memref<16xi32> -> vector<8xi32>
// CHECK-NEXT:    %[[W0:.*]] = loop.load %w[%k, 0] : memref<4x32xi16> -> vector<16xi16>
// CHECK-NEXT:    %[[D0:.*]] = loop.dot %[[C0]], %[[A]], %[[W0]] : vector<8xi32>, vector<2xi8>, vector<16xi16>
// CHECK-NEXT:    loop.store %[[D0]], %acc[0]
// CHECK-NEXT:    %[[C1:.*]] = loop.load %acc[8] : memref<16xi32> -> vector<8xi32>
// CHECK-NEXT:    %[[W1:.*]] = loop.load %w[%k, 16] : memref<4x32xi16> -> vector<16xi16>
// CHECK-NEXT:    %[[D1:.*]] = loop.dot %[[C1]], %[[A]], %[[W1]] : vector<8xi32>, vector<2xi8>, vector<16xi16>
// CHECK-NEXT:    loop.store %[[D1]], %acc[8]
builtin.module {
  func.func @pairs(%x: memref<8xui8>, %w: memref<4x32xi16>, %acc: memref<16xi32>) attributes {xweave.kernel} {
    loop.for "d.k" %k = 0 to 4 {
      loop.for "d.j" %j = 0 to 16 {
        loop.for "d.g" %g = 0 to 2 {
          %a = loop.load %x[%k * 2 + %g] : memref<8xui8>
          %b = loop.load %w[%k, %j * 2 + %g] : memref<4x32xi16>
          %c = loop.load %acc[%j] : memref<16xi32>
          %ae = arith.extui %a : i8 to i32
          %be = arith.extsi %b : i16 to i32
          %p = arith.muli %be, %ae : i32
          %s = arith.addi %p, %c : i32
          loop.store %s, %acc[%j] : memref<16xi32>
        }
      }
    }
    func.return
  }
}

// -----

// int16 data (widened once) against int16 weights, in a panel packed before its loops
// were split (the group index still `(k * 2 + g) floordiv 2`, read over its range).

// CHECK-LABEL: func.func @words
// CHECK:         %[[A:.*]] = loop.load %x[%k * 2] : memref<8xi16> -> vector<2xi16>
// CHECK-NEXT:    %[[C:.*]] = loop.load %acc[0] : memref<8xi32> -> vector<8xi32>
// CHECK-NEXT:    %[[W:.*]] = loop.load %w[%k, 0, 0] : memref<4x8x2xi16> -> vector<16xi16>
// CHECK-NEXT:    %[[D:.*]] = loop.dot %[[C]], %[[A]], %[[W]] : vector<8xi32>, vector<2xi16>, vector<16xi16>
// CHECK-NEXT:    loop.store %[[D]], %acc[0] : memref<8xi32>, vector<8xi32>
builtin.module {
  func.func @words(%x: memref<8xi16>, %w: memref<4x8x2xi16>, %acc: memref<8xi32>) attributes {xweave.kernel} {
    loop.for "d.k" %k = 0 to 4 {
      loop.for "d.j" %j = 0 to 8 {
        loop.for "d.g" %g = 0 to 2 {
          %a = loop.load %x[%k * 2 + %g] : memref<8xi16>
          %b = loop.load %w[(%k * 2 + %g) floordiv 2, %j, (%k * 2 + %g) mod 2] : memref<4x8x2xi16>
          %c = loop.load %acc[%j] : memref<8xi32>
          %ae = arith.extsi %a : i16 to i32
          %be = arith.extsi %b : i16 to i32
          %p = arith.muli %ae, %be : i32
          %s = arith.addi %c, %p : i32
          loop.store %s, %acc[%j] : memref<8xi32>
        }
      }
    }
    func.return
  }
}
