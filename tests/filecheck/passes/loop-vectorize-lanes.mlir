// RUN: xweave-opt %s -p 'loop-vectorize{loop="e.j" lanes=16}' | filecheck %s --check-prefix=L16
// RUN: xweave-opt %s -p 'loop-vectorize{loop="e.j" lanes=8}' | filecheck %s --check-prefix=L8
// RUN: env "XWEAVE_TARGET=llvm -mcpu=znver4" xweave-opt %s -p 'loop-vectorize{loop="e.j"}' | filecheck %s --check-prefix=L16
// RUN: xweave-opt %s -p 'loop-vectorize{loop="e.j"}' | filecheck %s --check-prefix=L8
// RUN: not xweave-opt %s -p 'loop-vectorize{loop="e.j" lanes=3}' 2>&1 | filecheck %s --check-prefix=BAD

// An extent that the vector width does not divide (40 lanes at 16): groups of `lanes`
// and the remainder peeled as a narrower vector (16, 16, 8), not three groups of 8.
// Without `lanes`, the width of the module's target (XWEAVE_TARGET here: znver4, 16
// lanes; the tests' default znver3, 8).
func.func @relu40(%x: memref<3x40xf32>, %y: memref<3x40xf32>) attributes {xweave.kernel} {
  %zero = arith.constant 0.0 : f32
  loop.for "e.i" %i = 0 to 3 {
    loop.for "e.j" %j = 0 to 40 {
      %v = loop.load %x[%i, %j] : memref<3x40xf32>
      %r = arith.maximumf %v, %zero : f32
      loop.store %r, %y[%i, %j] : memref<3x40xf32>
    }
  }
  func.return
}

// L16:      loop.for "e.i" %i = 0 to 3 {
// L16-NEXT:   %[[Z16:.*]] = vector.broadcast %zero : f32 to vector<16xf32>
// L16-NEXT:   %[[Z8:.*]] = vector.broadcast %zero : f32 to vector<8xf32>
// L16-NEXT:   %{{.*}} = loop.load %x[%i, 0] : memref<3x40xf32> -> vector<16xf32>
// L16-NEXT:   %{{.*}} = arith.maximumf %{{.*}}, %{{.*}} : vector<16xf32>
// L16-NEXT:   loop.store %{{.*}}, %y[%i, 0] : memref<3x40xf32>, vector<16xf32>
// L16-NEXT:   %{{.*}} = loop.load %x[%i, 16] : memref<3x40xf32> -> vector<16xf32>
// L16-NEXT:   %{{.*}} = arith.maximumf %{{.*}}, %{{.*}} : vector<16xf32>
// L16-NEXT:   loop.store %{{.*}}, %y[%i, 16] : memref<3x40xf32>, vector<16xf32>
// L16-NEXT:   %{{.*}} = loop.load %x[%i, 32] : memref<3x40xf32> -> vector<8xf32>
// L16-NEXT:   %{{.*}} = arith.maximumf %{{.*}}, %{{.*}} : vector<8xf32>
// L16-NEXT:   loop.store %{{.*}}, %y[%i, 32] : memref<3x40xf32>, vector<8xf32>
// L16-NEXT: }

// L8:       loop.for "e.i" %i = 0 to 3 {
// L8-NEXT:    vector.broadcast %zero : f32 to vector<8xf32>
// L8-NEXT:    %{{.*}} = loop.load %x[%i, 0] : memref<3x40xf32> -> vector<8xf32>
// L8:         %{{.*}} = loop.load %x[%i, 32] : memref<3x40xf32> -> vector<8xf32>
// L8-NOT:     vector<16xf32>
// L8:         func.return

// BAD: loop-vectorize: lanes=3 (expected 4, 8 or 16)
