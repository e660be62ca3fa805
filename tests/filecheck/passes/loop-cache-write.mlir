// RUN: xweave-opt %s -p 'loop-cache-write{stage=dense at="dense.j.outer"}' | filecheck %s
// RUN: xweave-opt %s -p 'loop-cache-write{stage=sum at="sum.i.outer"}' | filecheck %s --check-prefix=RAGGED
// RUN: xweave-opt %s -p 'loop-cache-write{stage=dense at="dense.k"}' --verify-diagnostics | filecheck %s --check-prefix=REDUCE-LOOP
// RUN: xweave-opt %s -p 'loop-cache-write{stage=sum at="sum_init.i"}' --verify-diagnostics | filecheck %s --check-prefix=NOT-UPDATE
// RUN: xweave-opt %s -p 'loop-cache-write{stage=dense at="dense.j.outer" scope="no scope"}' --verify-diagnostics | filecheck %s --check-prefix=SCOPE
// RUN: xweave-opt %s -p 'loop-cache-write{stage=dense at="dense.j.outer" order=1,0}' | filecheck %s --check-prefix=ORDER
// RUN: xweave-opt %s -p 'loop-cache-write{stage=dense at="dense.j.outer" order=1,1}' --verify-diagnostics | filecheck %s --check-prefix=BAD-ORDER

// A matmul writing the kernel output, tiled 2 x 4 with the reduction outside the
// tile; a row sum over 5 rows in tiles of 2 (guarded).

func.func @dense(%x: memref<4x3xf32>, %w: memref<8x3xf32>, %out: memref<4x8xf32>) attributes {xweave.kernel} {
  loop.for "dense_init.i" %i = 0 to 4 {
    loop.for "dense_init.j" %j = 0 to 8 {
      %zero = arith.constant 0.000000e+00 : f32
      loop.store %zero, %out[%i, %j] : memref<4x8xf32>
    }
  }
  loop.for "dense.i.outer" %io = 0 to 2 {
    loop.for "dense.j.outer" %jo = 0 to 2 {
      loop.for "dense.k" %k = 0 to 3 {
        loop.for "dense.i.inner" %ii = 0 to 2 {
          loop.for "dense.j.inner" %ji = 0 to 4 {
            %a = loop.load %x[%io * 2 + %ii, %k] : memref<4x3xf32>
            %c = loop.load %w[%jo * 4 + %ji, %k] : memref<8x3xf32>
            %p = arith.mulf %a, %c : f32
            %acc = loop.load %out[%io * 2 + %ii, %jo * 4 + %ji] : memref<4x8xf32>
            %s = arith.addf %acc, %p : f32
            loop.store %s, %out[%io * 2 + %ii, %jo * 4 + %ji] : memref<4x8xf32>
          }
        }
      }
    }
  }
  func.return
}

func.func @rowsum(%x: memref<5x4xf32>, %out: memref<5xf32>) attributes {xweave.kernel} {
  loop.for "sum_init.i" %i = 0 to 5 {
    %zero = arith.constant 0.000000e+00 : f32
    loop.store %zero, %out[%i] : memref<5xf32>
  }
  loop.for "sum.i.outer" %o = 0 to 3 {
    loop.for "sum.i.inner" %ii = 0 to 2 {
      loop.for "sum.r" %r = 0 to 4 {
        %c2 = arith.constant 2 : index
        %c5 = arith.constant 5 : index
        %t = arith.muli %o, %c2 : index
        %idx = arith.addi %t, %ii : index
        %ok = arith.cmpi slt, %idx, %c5 : index
        scf.if %ok {
          %acc = loop.load %out[%o * 2 + %ii] : memref<5xf32>
          %v = loop.load %x[%o * 2 + %ii, %r] : memref<5x4xf32>
          %s = arith.addf %acc, %v : f32
          loop.store %s, %out[%o * 2 + %ii] : memref<5xf32>
        }
      }
    }
  }
  func.return
}

// Per (i.outer, j.outer): a 2 x 4 local accumulator, initialized by the moved init
// nest, updated by the k loop, copied out by the dense_write nest. @rowsum is left alone.

// CHECK-LABEL: func.func @dense(
// CHECK-NEXT:    loop.for "dense.i.outer" %io = 0 to 2 {
// CHECK-NEXT:      loop.for "dense.j.outer" %jo = 0 to 2 {
// CHECK-NEXT:        %dense_local = loop.alloc : memref<2x4xf32, #loop.scope<local>>
// CHECK-NEXT:        loop.for "dense_init.i" %i = 0 to 2 {
// CHECK-NEXT:          loop.for "dense_init.j" %j = 0 to 4 {
// CHECK-NEXT:            %zero = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:            loop.store %zero, %dense_local[%i, %j] : memref<2x4xf32, #loop.scope<local>>
// CHECK-NEXT:          }
// CHECK-NEXT:        }
// CHECK-NEXT:        loop.for "dense.k" %k = 0 to 3 {
// CHECK-NEXT:          loop.for "dense.i.inner" %ii = 0 to 2 {
// CHECK-NEXT:            loop.for "dense.j.inner" %ji = 0 to 4 {
// CHECK-NEXT:              %a = loop.load %x[%io * 2 + %ii, %k] : memref<4x3xf32>
// CHECK-NEXT:              %c = loop.load %w[%jo * 4 + %ji, %k] : memref<8x3xf32>
// CHECK-NEXT:              %p = arith.mulf %a, %c : f32
// CHECK-NEXT:              %acc = loop.load %dense_local[%ii, %ji] : memref<2x4xf32, #loop.scope<local>>
// CHECK-NEXT:              %s = arith.addf %acc, %p : f32
// CHECK-NEXT:              loop.store %s, %dense_local[%ii, %ji] : memref<2x4xf32, #loop.scope<local>>
// CHECK-NEXT:            }
// CHECK-NEXT:          }
// CHECK-NEXT:        }
// CHECK-NEXT:        loop.for "dense_write.i" %i_1 = 0 to 2 {
// CHECK-NEXT:          loop.for "dense_write.j" %j_1 = 0 to 4 {
// CHECK-NEXT:            %0 = loop.load %dense_local[%i_1, %j_1] : memref<2x4xf32, #loop.scope<local>>
// CHECK-NEXT:            loop.store %0, %out[%io * 2 + %i_1, %jo * 4 + %j_1] : memref<4x8xf32>
// CHECK-NEXT:          }
// CHECK-NEXT:        }
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return
// CHECK-LABEL: func.func @rowsum(
// CHECK-NEXT:    loop.for "sum_init.i" %i = 0 to 5 {

// The last tile sticks out of %out: the write-back is guarded (the update already was).

// RAGGED-LABEL: func.func @dense(
// RAGGED-NEXT:    loop.for "dense_init.i" %i = 0 to 4 {
// RAGGED-LABEL: func.func @rowsum(
// RAGGED-NEXT:    loop.for "sum.i.outer" %o = 0 to 3 {
// RAGGED-NEXT:      %sum_local = loop.alloc : memref<2xf32, #loop.scope<local>>
// RAGGED-NEXT:      loop.for "sum_init.i" %i = 0 to 2 {
// RAGGED-NEXT:        %zero = arith.constant 0.000000e+00 : f32
// RAGGED-NEXT:        loop.store %zero, %sum_local[%i] : memref<2xf32, #loop.scope<local>>
// RAGGED-NEXT:      }
// RAGGED-NEXT:      loop.for "sum.i.inner" %ii = 0 to 2 {
// RAGGED:               %acc = loop.load %sum_local[%ii] : memref<2xf32, #loop.scope<local>>
// RAGGED-NEXT:          %v = loop.load %x[%o * 2 + %ii, %r] : memref<5x4xf32>
// RAGGED-NEXT:          %s = arith.addf %acc, %v : f32
// RAGGED-NEXT:          loop.store %s, %sum_local[%ii] : memref<2xf32, #loop.scope<local>>
// RAGGED:           loop.for "sum_write.i" %i_1 = 0 to 2 {
// RAGGED-NEXT:        %0 = arith.constant 2 : index
// RAGGED-NEXT:        %1 = arith.muli %o, %0 : index
// RAGGED-NEXT:        %2 = arith.addi %1, %i_1 : index
// RAGGED-NEXT:        %3 = arith.constant 5 : index
// RAGGED-NEXT:        %4 = arith.cmpi slt, %2, %3 : index
// RAGGED-NEXT:        scf.if %4 {
// RAGGED-NEXT:          %5 = loop.load %sum_local[%i_1] : memref<2xf32, #loop.scope<local>>
// RAGGED-NEXT:          loop.store %5, %out[%o * 2 + %i_1] : memref<5xf32>

// REDUCE-LOOP: cache-write of 'dense' at 'dense.k': 'dense.k' encloses the attach point but does not move the written region (is it a reduction loop?)
// NOT-UPDATE: cache-write of 'sum' at 'sum_init.i': 'sum_init.i' must be a loop of the stage's (single) update nest
// SCOPE: invalid memory scope 'no scope'

// order=1,0: the tile is stored column-major (the j lanes contiguous); the init, the
// update and the write-back all index the transposed local buffer.
// ORDER-LABEL: func.func @dense(
// ORDER:         %dense_local = loop.alloc : memref<4x2xf32, #loop.scope<local>>
// ORDER:         loop.store %zero, %dense_local[%j, %i] : memref<4x2xf32, #loop.scope<local>>
// ORDER:         %acc = loop.load %dense_local[%ji, %ii] : memref<4x2xf32, #loop.scope<local>>
// ORDER:         loop.store %s, %dense_local[%ji, %ii] : memref<4x2xf32, #loop.scope<local>>
// ORDER:         %{{.*}} = loop.load %dense_local[%j_1, %i_1] : memref<4x2xf32, #loop.scope<local>>
// ORDER-NEXT:    loop.store %{{.*}}, %out[%io * 2 + %i_1, %jo * 4 + %j_1] : memref<4x8xf32>

// BAD-ORDER: order (1, 1) is not a permutation of the 2 dimensions of the buffer
