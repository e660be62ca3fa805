// RUN: xweave-opt %s -p 'loop-parallel{loop="mm.i"},loop-parallel{loop="mm.jo"},loop-parallel{loop="fused.ij"},loop-parallel{loop="tr.j"},loop-parallel{loop="priv.i"},loop-parallel{loop="cp.i" kernel=copy2}' | filecheck %s

// loop-parallel only sets the kind of the named loop to parallel, after checking that
// its iterations touch disjoint parts of every buffer the loop writes.

func.func @matmul(%A: memref<16x8xf32>, %B: memref<8x32xf32>, %C: memref<16x32xf32>) attributes {xweave.kernel} {
  %zero = arith.constant 0.0 : f32
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

// Rows and columns of C are independent; so are the 8-wide column blocks (jo * 8 + ji
// with 0 <= ji < 8 never reaches the next block). The reduction axis k stays serial.
// CHECK-LABEL: func.func @matmul(
// CHECK:         loop.for "mm.i" %i = 0 to 16 parallel {
// CHECK-NEXT:      loop.for "mm.jo" %jo = 0 to 4 parallel {
// CHECK-NEXT:        loop.for "mm.k" %k = 0 to 8 {
// CHECK-NEXT:          loop.for "mm.ji" %ji = 0 to 8 {

func.func @layouts(%B: memref<8x8xf32>, %T: memref<8x8xf32>, %U: memref<8x8xf32>) attributes {xweave.kernel} {
  // A fused loop: (ij floordiv 8, ij mod 8) differs for every ij.
  loop.for "fused.ij" %ij = 0 to 64 {
    %b = loop.load %B[%ij floordiv 8, %ij mod 8] : memref<8x8xf32>
    loop.store %b, %T[%ij mod 8, %ij floordiv 8] : memref<8x8xf32>
  }
  // Column-wise writes: iteration j owns column j.
  loop.for "tr.j" %j = 0 to 8 {
    loop.for "tr.i" %i = 0 to 8 {
      %b = loop.load %B[%i, %j] : memref<8x8xf32>
      loop.store %b, %U[%i, %j] : memref<8x8xf32>
    }
  }
  func.return
}

// CHECK-LABEL: func.func @layouts(
// CHECK:         loop.for "fused.ij" %ij = 0 to 64 parallel {
// CHECK:         loop.for "tr.j" %j = 0 to 8 parallel {
// CHECK-NEXT:      loop.for "tr.i" %i = 0 to 8 {

func.func @private_buffer(%x: memref<4x8xf32>, %y: memref<4xf32>) attributes {xweave.kernel} {
  %zero = arith.constant 0.0 : f32
  // A local buffer allocated inside the loop is private to each iteration.
  loop.for "priv.i" %i = 0 to 4 {
    %acc = loop.alloc : memref<1xf32, #loop.scope<local>>
    loop.store %zero, %acc[0] : memref<1xf32, #loop.scope<local>>
    loop.for "priv.k" %k = 0 to 8 {
      %v = loop.load %x[%i, %k] : memref<4x8xf32>
      %a = loop.load %acc[0] : memref<1xf32, #loop.scope<local>>
      %s = arith.addf %a, %v : f32
      loop.store %s, %acc[0] : memref<1xf32, #loop.scope<local>>
    }
    %r = loop.load %acc[0] : memref<1xf32, #loop.scope<local>>
    loop.store %r, %y[%i] : memref<4xf32>
  }
  func.return
}

// CHECK-LABEL: func.func @private_buffer(
// CHECK:         loop.for "priv.i" %i = 0 to 4 parallel {
// CHECK-NEXT:      %acc = loop.alloc : memref<1xf32, #loop.scope<local>>
// CHECK:           loop.for "priv.k" %k = 0 to 8 {

// kernel=copy2: the loop of the same name in @copy is left alone.
func.func @copy(%x: memref<8xf32>, %y: memref<8xf32>) attributes {xweave.kernel} {
  loop.for "cp.i" %i = 0 to 8 {
    %v = loop.load %x[%i] : memref<8xf32>
    loop.store %v, %y[%i] : memref<8xf32>
  }
  func.return
}
func.func @copy2(%x: memref<8xf32>, %y: memref<8xf32>) attributes {xweave.kernel} {
  loop.for "cp.i" %i = 0 to 8 {
    %v = loop.load %x[%i] : memref<8xf32>
    loop.store %v, %y[%i] : memref<8xf32>
  }
  func.return
}

// CHECK-LABEL: func.func @copy(
// CHECK-NEXT:    loop.for "cp.i" %i = 0 to 8 {
// CHECK-LABEL: func.func @copy2(
// CHECK-NEXT:    loop.for "cp.i" %i = 0 to 8 parallel {
