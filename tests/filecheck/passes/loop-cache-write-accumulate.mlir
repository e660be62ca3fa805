// RUN: xweave-opt %s -p 'loop-cache-write{stage=dense at="dense.j.outer" accumulate=true}' | filecheck %s
// RUN: xweave-opt %s -p 'loop-cache-write{stage=dense at="dense.j.outer" accumulate=true order=1,0}' | filecheck %s --check-prefix=ORDER
// RUN: xweave-opt %s -p 'loop-cache-write{stage=sum at="sum.i.outer" accumulate=true}' | filecheck %s --check-prefix=RAGGED
// RUN: xweave-opt %s -p 'loop-cache-write{stage=dense at="dense.j.outer"}' --verify-diagnostics | filecheck %s --check-prefix=NO-ACCUMULATE
// RUN: xweave-opt %s -p 'loop-cache-write{stage=over at="over.j.outer" accumulate=true}' --verify-diagnostics | filecheck %s --check-prefix=OVERLAP
// RUN: xweave-opt %s -p 'loop-cache-write{stage=dense at="dense_init.i" accumulate=true}' --verify-diagnostics | filecheck %s --check-prefix=NOT-UPDATE

// A 4x8 matmul with its reduction split (K blocking): k.outer encloses the 2 x 4 tile
// loops, k.inner runs inside the tile. A row sum over 5 rows in tiles of 2 (guarded)
// with its reduction loop outermost. A matmul whose column tiles overlap (step 2,
// width 4).

func.func @dense(%x: memref<4x6xf32>, %w: memref<8x6xf32>, %out: memref<4x8xf32>) attributes {xweave.kernel} {
  loop.for "dense_init.i" %i = 0 to 4 {
    loop.for "dense_init.j" %j = 0 to 8 {
      %zero = arith.constant 0.000000e+00 : f32
      loop.store %zero, %out[%i, %j] : memref<4x8xf32>
    }
  }
  loop.for "dense.k.outer" %ko = 0 to 2 {
    loop.for "dense.i.outer" %io = 0 to 2 {
      loop.for "dense.j.outer" %jo = 0 to 2 {
        loop.for "dense.k.inner" %ki = 0 to 3 {
          loop.for "dense.i.inner" %ii = 0 to 2 {
            loop.for "dense.j.inner" %ji = 0 to 4 {
              %a = loop.load %x[%io * 2 + %ii, %ko * 3 + %ki] : memref<4x6xf32>
              %c = loop.load %w[%jo * 4 + %ji, %ko * 3 + %ki] : memref<8x6xf32>
              %p = arith.mulf %a, %c : f32
              %acc = loop.load %out[%io * 2 + %ii, %jo * 4 + %ji] : memref<4x8xf32>
              %s = arith.addf %acc, %p : f32
              loop.store %s, %out[%io * 2 + %ii, %jo * 4 + %ji] : memref<4x8xf32>
            }
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
  loop.for "sum.r" %r = 0 to 4 {
    loop.for "sum.i.outer" %o = 0 to 3 {
      loop.for "sum.i.inner" %ii = 0 to 2 {
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

func.func @overlap(%x: memref<2x3xf32>, %out: memref<2x6xf32>) attributes {xweave.kernel} {
  loop.for "over_init.i" %i = 0 to 2 {
    loop.for "over_init.j" %j = 0 to 6 {
      %zero = arith.constant 0.000000e+00 : f32
      loop.store %zero, %out[%i, %j] : memref<2x6xf32>
    }
  }
  loop.for "over.k" %k = 0 to 3 {
    loop.for "over.j.outer" %jo = 0 to 2 {
      loop.for "over.i" %ii = 0 to 2 {
        loop.for "over.j.inner" %ji = 0 to 4 {
          %v = loop.load %x[%ii, %k] : memref<2x3xf32>
          %acc = loop.load %out[%ii, %jo * 2 + %ji] : memref<2x6xf32>
          %s = arith.addf %acc, %v : f32
          loop.store %s, %out[%ii, %jo * 2 + %ji] : memref<2x6xf32>
        }
      }
    }
  }
  func.return
}

// Per (k.outer, i.outer, j.outer): the init nest stays put and zeroes the whole
// output once; the tile is loaded into a 2 x 4 local buffer by dense_read, updated by
// k.inner and copied back by dense_write.

// CHECK-LABEL: func.func @dense(
// CHECK-NEXT:    loop.for "dense_init.i" %i = 0 to 4 {
// CHECK-NEXT:      loop.for "dense_init.j" %j = 0 to 8 {
// CHECK-NEXT:        %zero = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:        loop.store %zero, %out[%i, %j] : memref<4x8xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    loop.for "dense.k.outer" %ko = 0 to 2 {
// CHECK-NEXT:      loop.for "dense.i.outer" %io = 0 to 2 {
// CHECK-NEXT:        loop.for "dense.j.outer" %jo = 0 to 2 {
// CHECK-NEXT:          %dense_local = loop.alloc : memref<2x4xf32, #loop.scope<local>>
// CHECK-NEXT:          loop.for "dense_read.i" %i_1 = 0 to 2 {
// CHECK-NEXT:            loop.for "dense_read.j" %j_1 = 0 to 4 {
// CHECK-NEXT:              %0 = loop.load %out[%io * 2 + %i_1, %jo * 4 + %j_1] : memref<4x8xf32>
// CHECK-NEXT:              loop.store %0, %dense_local[%i_1, %j_1] : memref<2x4xf32, #loop.scope<local>>
// CHECK-NEXT:            }
// CHECK-NEXT:          }
// CHECK-NEXT:          loop.for "dense.k.inner" %ki = 0 to 3 {
// CHECK-NEXT:            loop.for "dense.i.inner" %ii = 0 to 2 {
// CHECK-NEXT:              loop.for "dense.j.inner" %ji = 0 to 4 {
// CHECK-NEXT:                %a = loop.load %x[%io * 2 + %ii, %ko * 3 + %ki] : memref<4x6xf32>
// CHECK-NEXT:                %c = loop.load %w[%jo * 4 + %ji, %ko * 3 + %ki] : memref<8x6xf32>
// CHECK-NEXT:                %p = arith.mulf %a, %c : f32
// CHECK-NEXT:                %acc = loop.load %dense_local[%ii, %ji] : memref<2x4xf32, #loop.scope<local>>
// CHECK-NEXT:                %s = arith.addf %acc, %p : f32
// CHECK-NEXT:                loop.store %s, %dense_local[%ii, %ji] : memref<2x4xf32, #loop.scope<local>>
// CHECK-NEXT:              }
// CHECK-NEXT:            }
// CHECK-NEXT:          }
// CHECK-NEXT:          loop.for "dense_write.i" %i_2 = 0 to 2 {
// CHECK-NEXT:            loop.for "dense_write.j" %j_2 = 0 to 4 {
// CHECK-NEXT:              %1 = loop.load %dense_local[%i_2, %j_2] : memref<2x4xf32, #loop.scope<local>>
// CHECK-NEXT:              loop.store %1, %out[%io * 2 + %i_2, %jo * 4 + %j_2] : memref<4x8xf32>
// CHECK-NEXT:            }
// CHECK-NEXT:          }
// CHECK-NEXT:        }
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return
// CHECK-LABEL: func.func @rowsum(
// CHECK-NEXT:    loop.for "sum_init.i" %i = 0 to 5 {
// CHECK-LABEL: func.func @overlap(
// CHECK-NEXT:    loop.for "over_init.i" %i = 0 to 2 {

// order=1,0: the copy-in writes the transposed local buffer too.
// ORDER-LABEL: func.func @dense(
// ORDER:         %dense_local = loop.alloc : memref<4x2xf32, #loop.scope<local>>
// ORDER:         %0 = loop.load %out[%io * 2 + %i_1, %jo * 4 + %j_1] : memref<4x8xf32>
// ORDER-NEXT:    loop.store %0, %dense_local[%j_1, %i_1] : memref<4x2xf32, #loop.scope<local>>
// ORDER:         %acc = loop.load %dense_local[%ji, %ii] : memref<4x2xf32, #loop.scope<local>>
// ORDER:         %1 = loop.load %dense_local[%j_2, %i_2] : memref<4x2xf32, #loop.scope<local>>

// The last tile sticks out of %out: the copy-in is guarded like the write-back.
// RAGGED-LABEL: func.func @rowsum(
// RAGGED-NEXT:    loop.for "sum_init.i" %i = 0 to 5 {
// RAGGED:         loop.for "sum.r" %r = 0 to 4 {
// RAGGED-NEXT:      loop.for "sum.i.outer" %o = 0 to 3 {
// RAGGED-NEXT:        %sum_local = loop.alloc : memref<2xf32, #loop.scope<local>>
// RAGGED-NEXT:        loop.for "sum_read.i" %i_1 = 0 to 2 {
// RAGGED-NEXT:          %0 = arith.constant 2 : index
// RAGGED-NEXT:          %1 = arith.muli %o, %0 : index
// RAGGED-NEXT:          %2 = arith.addi %1, %i_1 : index
// RAGGED-NEXT:          %3 = arith.constant 5 : index
// RAGGED-NEXT:          %4 = arith.cmpi slt, %2, %3 : index
// RAGGED-NEXT:          scf.if %4 {
// RAGGED-NEXT:            %5 = loop.load %out[%o * 2 + %i_1] : memref<5xf32>
// RAGGED-NEXT:            loop.store %5, %sum_local[%i_1] : memref<2xf32, #loop.scope<local>>
// RAGGED:             %acc = loop.load %sum_local[%ii] : memref<2xf32, #loop.scope<local>>
// RAGGED:           loop.for "sum_write.i" %i_2 = 0 to 2 {
// RAGGED:               scf.if %{{.*}} {
// RAGGED-NEXT:            %{{.*}} = loop.load %sum_local[%i_2] : memref<2xf32, #loop.scope<local>>
// RAGGED-NEXT:            loop.store %{{.*}}, %out[%o * 2 + %i_2] : memref<5xf32>

// Without accumulate, k.outer around the tile is refused as before; overlapping tiles
// and an attach loop outside the update nest are refused with it.
// NO-ACCUMULATE: cache-write of 'dense' at 'dense.j.outer': 'dense.k.outer' encloses the attach point but does not move the written region (is it a reduction loop?)
// OVERLAP: cache-write of 'over' at 'over.j.outer': consecutive iterations of the loops around the attach point write overlapping regions along dimension 1
// NOT-UPDATE: cache-write of 'dense' at 'dense_init.i': 'dense_init.i' must be a loop of the stage's (single) update nest
