// RUN: xweave-opt %s -p 'loop-reorder{order="mm.k","mm.i"}' | filecheck %s
// RUN: xweave-opt %s -p 'loop-reorder{order="mm.j","mm.k","mm.i" kernel=matmul}' | filecheck %s --check-prefix=ALL
// RUN: xweave-opt %s -p 'loop-reorder{order="mm.k,mm.j"}' | filecheck %s --check-prefix=LIST

// loop-reorder{order=...}: the named loops take the positions the named loops had, in
// the given order; unnamed loops in between (mm.j in the first run) keep theirs. Loops
// keep their bounds, kind and name. A reduction's update nest is reorderable: the
// accumulator is read and written at one index (out[i, j]).

func.func @matmul(%a: memref<4x3xf32>, %b: memref<3x5xf32>, %out: memref<4x5xf32>) attributes {xweave.kernel} {
  loop.for "mm.i" %i = 0 to 4 parallel {
    loop.for "mm.j" %j = 0 to 5 {
      loop.for "mm.k" %k = 0 to 3 {
        %x = loop.load %a[%i, %k] : memref<4x3xf32>
        %y = loop.load %b[%k, %j] : memref<3x5xf32>
        %p = arith.mulf %x, %y : f32
        %acc = loop.load %out[%i, %j] : memref<4x5xf32>
        %s = arith.addf %acc, %p : f32
        loop.store %s, %out[%i, %j] : memref<4x5xf32>
      }
    }
  }
  func.return
}
func.func @other(%a: memref<4x5xf32>, %out: memref<4x5xf32>) attributes {xweave.kernel} {
  loop.for "g.i" %i = 0 to 4 {
    loop.for "g.j" %j = 0 to 5 {
      %v = loop.load %a[%i, %j] : memref<4x5xf32>
      loop.store %v, %out[%i, %j] : memref<4x5xf32>
    }
  }
  func.return
}

// CHECK-LABEL: func.func @matmul
// CHECK-NEXT:    loop.for "mm.k" %k = 0 to 3 {
// CHECK-NEXT:      loop.for "mm.j" %j = 0 to 5 {
// CHECK-NEXT:        loop.for "mm.i" %i = 0 to 4 parallel {
// CHECK-NEXT:          %x = loop.load %a[%i, %k] : memref<4x3xf32>
// CHECK-NEXT:          %y = loop.load %b[%k, %j] : memref<3x5xf32>
// CHECK-NEXT:          %p = arith.mulf %x, %y : f32
// CHECK-NEXT:          %acc = loop.load %out[%i, %j] : memref<4x5xf32>
// CHECK-NEXT:          %s = arith.addf %acc, %p : f32
// CHECK-NEXT:          loop.store %s, %out[%i, %j] : memref<4x5xf32>
// CHECK-NEXT:        }
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return
// CHECK-LABEL: func.func @other
// CHECK-NEXT:    loop.for "g.i" %i = 0 to 4 {
// CHECK-NEXT:      loop.for "g.j" %j = 0 to 5 {

// ALL-LABEL: func.func @matmul
// ALL-NEXT:    loop.for "mm.j" %j = 0 to 5 {
// ALL-NEXT:      loop.for "mm.k" %k = 0 to 3 {
// ALL-NEXT:        loop.for "mm.i" %i = 0 to 4 parallel {
// ALL-NEXT:          %x = loop.load %a[%i, %k] : memref<4x3xf32>

// One comma-separated string works too.
// LIST-LABEL: func.func @matmul
// LIST-NEXT:    loop.for "mm.i" %i = 0 to 4 parallel {
// LIST-NEXT:      loop.for "mm.k" %k = 0 to 3 {
// LIST-NEXT:        loop.for "mm.j" %j = 0 to 5 {
