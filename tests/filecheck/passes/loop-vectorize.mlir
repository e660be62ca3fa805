// RUN: xweave-opt %s -p 'loop-vectorize{loop="mm.ji"},loop-vectorize{loop="br.j"},loop-vectorize{loop="n.j" fma=false},loop-vectorize{loop="rs.j"},loop-vectorize{loop="cp.j" kernel=copy2}' | filecheck %s

// loop-vectorize turns the named loop into explicit vector ops; the loop disappears and
// its variable becomes the first lane's index inside vector accesses.

// The j loop of a matmul, split by 8 by hand: the inner loop becomes vector<8xf32>.
func.func @matmul(%A: memref<16x8xf32>, %B: memref<8x32xf32>, %C: memref<16x32xf32>) attributes {xweave.kernel} {
  loop.for "mm.i" %i = 0 to 16 {
    loop.for "mm.jo" %jo = 0 to 4 {
      loop.for "mm.k" %k = 0 to 8 {
        loop.for "mm.ji" %ji = 0 to 8 {
          %a = loop.load %A[%i, %k] : memref<16x8xf32>
          %b = loop.load %B[%k, %jo * 8 + %ji] : memref<8x32xf32>
          %c = loop.load %C[%i, %jo * 8 + %ji] : memref<16x32xf32>
          %p = arith.mulf %a, %b : f32
          %s = arith.addf %c, %p : f32
          loop.store %s, %C[%i, %jo * 8 + %ji] : memref<16x32xf32>
        }
      }
    }
  }
  func.return
}

// Elementwise, extent 32: four groups of 8 lanes; values from outside the loop are
// broadcast once, before them; a lane-independent load is broadcast where it is used.
func.func @bias_relu(%x: memref<4x32xf32>, %b: memref<4xf32>, %y: memref<4x32xf32>) attributes {xweave.kernel} {
  %zero = arith.constant 0.0 : f32
  loop.for "br.i" %i = 0 to 4 {
    loop.for "br.j" %j = 0 to 32 {
      %v = loop.load %x[%i, %j] : memref<4x32xf32>
      %bias = loop.load %b[%i] : memref<4xf32>
      %s = arith.addf %v, %bias : f32
      %e = math.exp %s : f32
      %r = arith.maximumf %e, %zero : f32
      loop.store %r, %y[%i, %j] : memref<4x32xf32>
    }
  }
  func.return
}

// Extent 4, a lower bound, fma=false: vector<4xf32> at %x[%i, 2], mulf and addf kept apart;
// a loop nested in the vectorized one stays; a lane-independent store stays scalar.
func.func @nested(%x: memref<3x6xf32>, %w: memref<5xf32>, %y: memref<3x6xf32>, %n: memref<1xf32>) attributes {xweave.kernel} {
  %zero = arith.constant 0.0 : f32
  loop.for "n.i" %i = 0 to 3 {
    loop.for "n.j" %j = 2 to 6 {
      loop.store %zero, %y[%i, %j] : memref<3x6xf32>
      loop.store %zero, %n[0] : memref<1xf32>
      loop.for "n.k" %k = 0 to 5 {
        %v = loop.load %x[%i, %j] : memref<3x6xf32>
        %c = loop.load %w[%k] : memref<5xf32>
        %acc = loop.load %y[%i, %j] : memref<3x6xf32>
        %p = arith.mulf %v, %c : f32
        %s = arith.addf %acc, %p : f32
        loop.store %s, %y[%i, %j] : memref<3x6xf32>
      }
    }
  }
  func.return
}

// A reduction over the lanes, in its one supported form: vector.reduction, in order.
// An scf.if with a lane-independent condition keeps its structure, with vector results.
func.func @rowsum(%x: memref<4x16xf32>, %s: memref<4xf32>, %flag: memref<4xi1>) attributes {xweave.kernel} {
  %zero = arith.constant 0.0 : f32
  loop.for "rs.i" %i = 0 to 4 {
    loop.store %zero, %s[%i] : memref<4xf32>
    loop.for "rs.j" %j = 0 to 16 {
      %f = loop.load %flag[%i] : memref<4xi1>
      %v = loop.load %x[%i, %j] : memref<4x16xf32>
      %a = scf.if %f -> (f32) {
        %sq = arith.mulf %v, %v : f32
        scf.yield %sq : f32
      } else {
        scf.yield %zero : f32
      }
      %acc = loop.load %s[%i] : memref<4xf32>
      %t = arith.addf %acc, %a : f32
      loop.store %t, %s[%i] : memref<4xf32>
    }
  }
  func.return
}

// Only the named loop (in the named kernel) changes.
func.func @copy(%x: memref<8xf32>, %y: memref<8xf32>) attributes {xweave.kernel} {
  loop.for "cp.j" %j = 0 to 8 {
    %v = loop.load %x[%j] : memref<8xf32>
    loop.store %v, %y[%j] : memref<8xf32>
  }
  func.return
}
func.func @copy2(%x: memref<8xf32>, %y: memref<8xf32>) attributes {xweave.kernel} {
  loop.for "cp.j" %j = 0 to 8 {
    %v = loop.load %x[%j] : memref<8xf32>
    loop.store %v, %y[%j] : memref<8xf32>
  }
  func.return
}

// The j loop of a matmul split by 8: vector loads of B and C, A broadcast, mulf + addf
// fused into vector.fma, a vector store.
// CHECK-LABEL: func.func @matmul(
// CHECK:         loop.for "mm.k" %k = 0 to 8 {
// CHECK-NEXT:      %a = loop.load %A[%i, %k] : memref<16x8xf32>
// CHECK-NEXT:      %b = loop.load %B[%k, %jo * 8] : memref<8x32xf32> -> vector<8xf32>
// CHECK-NEXT:      %c = loop.load %C[%i, %jo * 8] : memref<16x32xf32> -> vector<8xf32>
// CHECK-NEXT:      %[[A8:.*]] = vector.broadcast %a : f32 to vector<8xf32>
// CHECK-NEXT:      %s = vector.fma %[[A8]], %b, %c : vector<8xf32>
// CHECK-NEXT:      loop.store %s, %C[%i, %jo * 8] : memref<16x32xf32>, vector<8xf32>
// CHECK-NEXT:    }

// CHECK-NOT:     mm.ji

// Extent 32: four groups of 8 lanes (j = 0, 8, 16, 24). %zero, defined outside the loop,
// is broadcast once before them; the bias (not depending on j) is a scalar load, broadcast.
// CHECK-LABEL: func.func @bias_relu(
// CHECK:         loop.for "br.i" %i = 0 to 4 {
// CHECK-NEXT:      %[[Z:.*]] = vector.broadcast %zero : f32 to vector<8xf32>
// CHECK-NEXT:      %v = loop.load %x[%i, 0] : memref<4x32xf32> -> vector<8xf32>
// CHECK-NEXT:      %bias = loop.load %b[%i] : memref<4xf32>
// CHECK-NEXT:      %[[B:.*]] = vector.broadcast %bias : f32 to vector<8xf32>
// CHECK-NEXT:      %s = arith.addf %v, %[[B]] : vector<8xf32>
// CHECK-NEXT:      %e = math.exp %s : vector<8xf32>
// CHECK-NEXT:      %r = arith.maximumf %e, %[[Z]] : vector<8xf32>
// CHECK-NEXT:      loop.store %r, %y[%i, 0] : memref<4x32xf32>, vector<8xf32>
// CHECK:           loop.store %{{.*}}, %y[%i, 8] : memref<4x32xf32>, vector<8xf32>
// CHECK:           loop.store %{{.*}}, %y[%i, 16] : memref<4x32xf32>, vector<8xf32>
// CHECK:           %[[V3:.*]] = loop.load %x[%i, 24] : memref<4x32xf32> -> vector<8xf32>
// CHECK:           %{{.*}} = arith.maximumf %{{.*}}, %[[Z]] : vector<8xf32>
// CHECK-NEXT:      loop.store %{{.*}}, %y[%i, 24] : memref<4x32xf32>, vector<8xf32>
// CHECK-NEXT:    }

// Extent 4 from 2: vector<4xf32> at column 2; fma=false keeps mulf and addf; the nested
// k loop stays; the store not depending on j stays scalar.
// CHECK-LABEL: func.func @nested(
// CHECK:         loop.for "n.i" %i = 0 to 3 {
// CHECK-NEXT:      %[[Z4:.*]] = vector.broadcast %zero : f32 to vector<4xf32>
// CHECK-NEXT:      loop.store %[[Z4]], %y[%i, 2] : memref<3x6xf32>, vector<4xf32>
// CHECK-NEXT:      loop.store %zero, %n[0] : memref<1xf32>
// CHECK-NEXT:      loop.for "n.k" %k = 0 to 5 {
// CHECK-NEXT:        %v = loop.load %x[%i, 2] : memref<3x6xf32> -> vector<4xf32>
// CHECK-NEXT:        %c = loop.load %w[%k] : memref<5xf32>
// CHECK-NEXT:        %acc = loop.load %y[%i, 2] : memref<3x6xf32> -> vector<4xf32>
// CHECK-NEXT:        %[[C4:.*]] = vector.broadcast %c : f32 to vector<4xf32>
// CHECK-NEXT:        %p = arith.mulf %v, %[[C4]] : vector<4xf32>
// CHECK-NEXT:        %s = arith.addf %acc, %p : vector<4xf32>
// CHECK-NEXT:        loop.store %s, %y[%i, 2] : memref<3x6xf32>, vector<4xf32>
// CHECK-NEXT:      }

// CHECK-NEXT:    }

// The reduction form: the scalar accumulator load, vector.reduction <add> (in order), a
// scalar store; the scf.if (condition independent of j) yields vectors.
// CHECK-LABEL: func.func @rowsum(
// CHECK:           %f = loop.load %flag[%i] : memref<4xi1>
// CHECK-NEXT:      %v = loop.load %x[%i, 0] : memref<4x16xf32> -> vector<16xf32>
// CHECK-NEXT:      %a = scf.if %f -> (vector<16xf32>) {
// CHECK-NEXT:        %sq = arith.mulf %v, %v : vector<16xf32>
// CHECK-NEXT:        scf.yield %sq : vector<16xf32>
// CHECK-NEXT:      } else {
// CHECK-NEXT:        scf.yield %{{.*}} : vector<16xf32>
// CHECK-NEXT:      }

// CHECK-NEXT:      %acc = loop.load %s[%i] : memref<4xf32>
// CHECK-NEXT:      %t = vector.reduction <add>, %a, %acc : vector<16xf32> into f32
// CHECK-NEXT:      loop.store %t, %s[%i] : memref<4xf32>
// CHECK-NEXT:    }

// kernel=copy2: the loop of the same name in @copy is left alone.
// CHECK-LABEL: func.func @copy(
// CHECK-NEXT:    loop.for "cp.j" %j = 0 to 8 {
// CHECK-LABEL: func.func @copy2(
// CHECK-NEXT:    %v = loop.load %x[0] : memref<8xf32> -> vector<8xf32>
// CHECK-NEXT:    loop.store %v, %y[0] : memref<8xf32>, vector<8xf32>
// CHECK-NEXT:    func.return
