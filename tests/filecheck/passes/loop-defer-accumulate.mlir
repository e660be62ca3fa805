// RUN: xweave-opt %s -p 'loop-defer-accumulate{stage=dense}' | filecheck %s
// RUN: xweave-opt %s -p 'loop-defer-accumulate{stage=sum kernel="rowsum"}' | filecheck %s --check-prefix=RAGGED
// RUN: xweave-opt %s -p 'loop-defer-accumulate{stage=vec}' | filecheck %s --check-prefix=VECTOR
// RUN: xweave-opt %s -p 'loop-defer-accumulate{stage=mx}' --verify-diagnostics | filecheck %s --check-prefix=NOT-SUM
// RUN: xweave-opt %s -p 'loop-defer-accumulate{stage=peek}' --verify-diagnostics | filecheck %s --check-prefix=PEEK
// RUN: xweave-opt %s -p 'loop-defer-accumulate{stage=matmul}' --verify-diagnostics | filecheck %s --check-prefix=NO-CACHE

// What loop-cache-write{accumulate=true} makes of a K-blocked 4x8 matmul (2 x 4 tiles),
// of a row sum over 5 rows in guarded tiles of 2, and of a vectorized 1 x 8 tile
// updated by vector.fma; a max reduction and a tile whose buffer is read while it is
// cached, which must stay as they are.

func.func @dense(%x: memref<4x6xf32>, %w: memref<8x6xf32>, %out: memref<4x8xf32>) attributes {xweave.kernel} {
  loop.for "dense.k.outer" %ko = 0 to 2 {
    loop.for "dense.i.outer" %io = 0 to 2 {
      loop.for "dense.j.outer" %jo = 0 to 2 {
        %dense_local = loop.alloc : memref<2x4xf32, #loop.scope<local>>
        loop.for "dense_read.i" %i = 0 to 2 {
          loop.for "dense_read.j" %j = 0 to 4 {
            %0 = loop.load %out[%io * 2 + %i, %jo * 4 + %j] : memref<4x8xf32>
            loop.store %0, %dense_local[%i, %j] : memref<2x4xf32, #loop.scope<local>>
          }
        }
        loop.for "dense.k.inner" %ki = 0 to 3 {
          loop.for "dense.i.inner" %ii = 0 to 2 {
            loop.for "dense.j.inner" %ji = 0 to 4 {
              %a = loop.load %x[%io * 2 + %ii, %ko * 3 + %ki] : memref<4x6xf32>
              %c = loop.load %w[%jo * 4 + %ji, %ko * 3 + %ki] : memref<8x6xf32>
              %p = arith.mulf %a, %c : f32
              %acc = loop.load %dense_local[%ii, %ji] : memref<2x4xf32, #loop.scope<local>>
              %s = arith.addf %acc, %p : f32
              loop.store %s, %dense_local[%ii, %ji] : memref<2x4xf32, #loop.scope<local>>
            }
          }
        }
        loop.for "dense_write.i" %i_1 = 0 to 2 {
          loop.for "dense_write.j" %j_1 = 0 to 4 {
            %1 = loop.load %dense_local[%i_1, %j_1] : memref<2x4xf32, #loop.scope<local>>
            loop.store %1, %out[%io * 2 + %i_1, %jo * 4 + %j_1] : memref<4x8xf32>
          }
        }
      }
    }
  }
  func.return
}

func.func @rowsum(%x: memref<5x4xf32>, %out: memref<5xf32>) attributes {xweave.kernel} {
  loop.for "sum.r" %r = 0 to 4 {
    loop.for "sum.i.outer" %o = 0 to 3 {
      %sum_local = loop.alloc : memref<2xf32, #loop.scope<local>>
      loop.for "sum_read.i" %i = 0 to 2 {
        %c2 = arith.constant 2 : index
        %c5 = arith.constant 5 : index
        %t = arith.muli %o, %c2 : index
        %idx = arith.addi %t, %i : index
        %ok = arith.cmpi slt, %idx, %c5 : index
        scf.if %ok {
          %0 = loop.load %out[%o * 2 + %i] : memref<5xf32>
          loop.store %0, %sum_local[%i] : memref<2xf32, #loop.scope<local>>
        }
      }
      loop.for "sum.i.inner" %ii = 0 to 2 {
        %c2 = arith.constant 2 : index
        %c5 = arith.constant 5 : index
        %t = arith.muli %o, %c2 : index
        %idx = arith.addi %t, %ii : index
        %ok = arith.cmpi slt, %idx, %c5 : index
        scf.if %ok {
          %acc = loop.load %sum_local[%ii] : memref<2xf32, #loop.scope<local>>
          %v = loop.load %x[%o * 2 + %ii, %r] : memref<5x4xf32>
          %s = arith.addf %v, %acc : f32
          loop.store %s, %sum_local[%ii] : memref<2xf32, #loop.scope<local>>
        }
      }
      loop.for "sum_write.i" %i_1 = 0 to 2 {
        %c2 = arith.constant 2 : index
        %c5 = arith.constant 5 : index
        %t = arith.muli %o, %c2 : index
        %idx = arith.addi %t, %i_1 : index
        %ok = arith.cmpi slt, %idx, %c5 : index
        scf.if %ok {
          %1 = loop.load %sum_local[%i_1] : memref<2xf32, #loop.scope<local>>
          loop.store %1, %out[%o * 2 + %i_1] : memref<5xf32>
        }
      }
    }
  }
  func.return
}

func.func @vec(%x: memref<2x4xf32>, %w: memref<4x8xf32>, %out: memref<2x8xf32>) attributes {xweave.kernel} {
  loop.for "vec.k.outer" %ko = 0 to 2 {
    loop.for "vec.i" %i = 0 to 2 {
      %vec_local = loop.alloc : memref<8xf32, #loop.scope<local>>
      loop.for "vec_read.j.outer" %j = 0 to 2 {
        %0 = loop.load %out[%i, %j * 4] : memref<2x8xf32> -> vector<4xf32>
        loop.store %0, %vec_local[%j * 4] : memref<8xf32, #loop.scope<local>>, vector<4xf32>
      }
      loop.for "vec.k.inner" %ki = 0 to 2 {
        %a = loop.load %x[%i, %ko * 2 + %ki] : memref<2x4xf32>
        %b = vector.broadcast %a : f32 to vector<4xf32>
        %c = loop.load %w[%ko * 2 + %ki, 0] : memref<4x8xf32> -> vector<4xf32>
        %acc = loop.load %vec_local[0] : memref<8xf32, #loop.scope<local>> -> vector<4xf32>
        %f = vector.fma %b, %c, %acc : vector<4xf32>
        loop.store %f, %vec_local[0] : memref<8xf32, #loop.scope<local>>, vector<4xf32>
        %c_1 = loop.load %w[%ko * 2 + %ki, 4] : memref<4x8xf32> -> vector<4xf32>
        %acc_1 = loop.load %vec_local[4] : memref<8xf32, #loop.scope<local>> -> vector<4xf32>
        %f_1 = vector.fma %b, %c_1, %acc_1 : vector<4xf32>
        loop.store %f_1, %vec_local[4] : memref<8xf32, #loop.scope<local>>, vector<4xf32>
      }
      loop.for "vec_write.j.outer" %j_1 = 0 to 2 {
        %1 = loop.load %vec_local[%j_1 * 4] : memref<8xf32, #loop.scope<local>> -> vector<4xf32>
        loop.store %1, %out[%i, %j_1 * 4] : memref<2x8xf32>, vector<4xf32>
      }
    }
  }
  func.return
}

func.func @max(%x: memref<4x2xf32>, %out: memref<4xf32>) attributes {xweave.kernel} {
  loop.for "mx.r" %r = 0 to 2 {
    loop.for "mx.i.outer" %o = 0 to 2 {
      %mx_local = loop.alloc : memref<2xf32, #loop.scope<local>>
      loop.for "mx_read.i" %i = 0 to 2 {
        %0 = loop.load %out[%o * 2 + %i] : memref<4xf32>
        loop.store %0, %mx_local[%i] : memref<2xf32, #loop.scope<local>>
      }
      loop.for "mx.i.inner" %ii = 0 to 2 {
        %acc = loop.load %mx_local[%ii] : memref<2xf32, #loop.scope<local>>
        %v = loop.load %x[%o * 2 + %ii, %r] : memref<4x2xf32>
        %m = arith.maximumf %acc, %v : f32
        loop.store %m, %mx_local[%ii] : memref<2xf32, #loop.scope<local>>
      }
      loop.for "mx_write.i" %i_1 = 0 to 2 {
        %1 = loop.load %mx_local[%i_1] : memref<2xf32, #loop.scope<local>>
        loop.store %1, %out[%o * 2 + %i_1] : memref<4xf32>
      }
    }
  }
  func.return
}

func.func @peek(%x: memref<4x2xf32>, %out: memref<4xf32>, %seen: memref<4xf32>) attributes {xweave.kernel} {
  loop.for "peek.r" %r = 0 to 2 {
    loop.for "peek.i.outer" %o = 0 to 2 {
      %peek_local = loop.alloc : memref<2xf32, #loop.scope<local>>
      loop.for "peek_read.i" %i = 0 to 2 {
        %0 = loop.load %out[%o * 2 + %i] : memref<4xf32>
        loop.store %0, %peek_local[%i] : memref<2xf32, #loop.scope<local>>
      }
      loop.for "peek.i.inner" %ii = 0 to 2 {
        %acc = loop.load %peek_local[%ii] : memref<2xf32, #loop.scope<local>>
        %v = loop.load %x[%o * 2 + %ii, %r] : memref<4x2xf32>
        %s = arith.addf %acc, %v : f32
        loop.store %s, %peek_local[%ii] : memref<2xf32, #loop.scope<local>>
        %old = loop.load %out[%o * 2 + %ii] : memref<4xf32>
        loop.store %old, %seen[%o * 2 + %ii] : memref<4xf32>
      }
      loop.for "peek_write.i" %i_1 = 0 to 2 {
        %1 = loop.load %peek_local[%i_1] : memref<2xf32, #loop.scope<local>>
        loop.store %1, %out[%o * 2 + %i_1] : memref<4xf32>
      }
    }
  }
  func.return
}

// The copy-in stores zeros, the updates are untouched, the write-back adds the
// buffer's element to the cached partial sum.
// CHECK-LABEL: func.func @dense(
// CHECK:         %dense_local = loop.alloc : memref<2x4xf32, #loop.scope<local>>
// CHECK-NEXT:    loop.for "dense_read.i" %i = 0 to 2 {
// CHECK-NEXT:      loop.for "dense_read.j" %j = 0 to 4 {
// CHECK-NEXT:        %0 = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:        loop.store %0, %dense_local[%i, %j] : memref<2x4xf32, #loop.scope<local>>
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    loop.for "dense.k.inner" %ki = 0 to 3 {
// CHECK:             %acc = loop.load %dense_local[%ii, %ji] : memref<2x4xf32, #loop.scope<local>>
// CHECK-NEXT:        %s = arith.addf %acc, %p : f32
// CHECK-NEXT:        loop.store %s, %dense_local[%ii, %ji] : memref<2x4xf32, #loop.scope<local>>
// CHECK:         loop.for "dense_write.i" %i_1 = 0 to 2 {
// CHECK-NEXT:      loop.for "dense_write.j" %j_1 = 0 to 4 {
// CHECK-NEXT:        %1 = loop.load %dense_local[%i_1, %j_1] : memref<2x4xf32, #loop.scope<local>>
// CHECK-NEXT:        %2 = loop.load %out[%io * 2 + %i_1, %jo * 4 + %j_1] : memref<4x8xf32>
// CHECK-NEXT:        %3 = arith.addf %2, %1 : f32
// CHECK-NEXT:        loop.store %3, %out[%io * 2 + %i_1, %jo * 4 + %j_1] : memref<4x8xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// Other stages are left alone.
// CHECK-LABEL: func.func @rowsum(
// CHECK:           %0 = loop.load %out[%o * 2 + %i] : memref<5xf32>
// CHECK-LABEL: func.func @vec(
// CHECK:         %0 = loop.load %out[%i, %j * 4] : memref<2x8xf32> -> vector<4xf32>

// The guards of the copies stay: the buffer is read under the write-back's guard.
// RAGGED-LABEL: func.func @rowsum(
// RAGGED:         loop.for "sum_read.i" %i = 0 to 2 {
// RAGGED:           scf.if %ok {
// RAGGED-NEXT:        %0 = arith.constant 0.000000e+00 : f32
// RAGGED-NEXT:        loop.store %0, %sum_local[%i] : memref<2xf32, #loop.scope<local>>
// RAGGED:         loop.for "sum_write.i" %i_1 = 0 to 2 {
// RAGGED:           scf.if %ok_2 {
// RAGGED-NEXT:        %1 = loop.load %sum_local[%i_1] : memref<2xf32, #loop.scope<local>>
// RAGGED-NEXT:        %2 = loop.load %out[%o * 2 + %i_1] : memref<5xf32>
// RAGGED-NEXT:        %3 = arith.addf %2, %1 : f32
// RAGGED-NEXT:        loop.store %3, %out[%o * 2 + %i_1] : memref<5xf32>

// Vector copies: a zero vector, and vector adds at the write-back.
// VECTOR-LABEL: func.func @vec(
// VECTOR:         loop.for "vec_read.j.outer" %j = 0 to 2 {
// VECTOR-NEXT:      %0 = arith.constant 0.000000e+00 : f32
// VECTOR-NEXT:      %1 = vector.broadcast %0 : f32 to vector<4xf32>
// VECTOR-NEXT:      loop.store %1, %vec_local[%j * 4] : memref<8xf32, #loop.scope<local>>, vector<4xf32>
// VECTOR:         loop.for "vec_write.j.outer" %j_1 = 0 to 2 {
// VECTOR-NEXT:      %2 = loop.load %vec_local[%j_1 * 4] : memref<8xf32, #loop.scope<local>> -> vector<4xf32>
// VECTOR-NEXT:      %3 = loop.load %out[%i, %j_1 * 4] : memref<2x8xf32> -> vector<4xf32>
// VECTOR-NEXT:      %4 = arith.addf %3, %2 : vector<4xf32>
// VECTOR-NEXT:      loop.store %4, %out[%i, %j_1 * 4] : memref<2x8xf32>, vector<4xf32>

// NOT-SUM: defer-accumulate of 'mx' at 'mx_read.i': a store into the cache is not an update cache[c] = cache[c] + v
// PEEK: defer-accumulate of 'peek' at 'peek_read.i': the buffer is accessed between the copy-in and the write-back
// NO-CACHE: defer-accumulate: no copy-in nest 'matmul_read.*' (is 'matmul' cached with loop-cache-write{accumulate=true}?)
