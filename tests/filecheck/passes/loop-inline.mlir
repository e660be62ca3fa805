// RUN: xweave-opt %s -p 'loop-inline{stage=bias_add}' | filecheck %s
// RUN: xweave-opt %s -p 'loop-inline{stage=pad kernel=conv1d}' | filecheck %s --check-prefix=PAD
// RUN: xweave-opt %s -p 'loop-inline{stage=t}' | filecheck %s --check-prefix=PERM
// RUN: xweave-opt %s -p 'loop-inline{stage=dense}' --verify-diagnostics | filecheck %s --check-prefix=REDUCTION
// RUN: xweave-opt %s -p 'loop-inline{stage=relu}' --verify-diagnostics | filecheck %s --check-prefix=OUTPUT
// RUN: xweave-opt %s -p 'loop-inline{stage=e}' --verify-diagnostics | filecheck %s --check-prefix=VECTOR
// RUN: xweave-opt %s -p 'loop-inline{stage=nope}' --verify-diagnostics | filecheck %s --check-prefix=NO-STAGE

func.func @dense_relu(%x: memref<2x3xf32>, %w: memref<4x3xf32>, %b: memref<4xf32>, %out: memref<2x4xf32>) attributes {xweave.kernel} {
  %dense = loop.alloc : memref<2x4xf32>
  loop.for "dense_init.i" %i = 0 to 2 {
    loop.for "dense_init.j" %j = 0 to 4 {
      %zero = arith.constant 0.000000e+00 : f32
      loop.store %zero, %dense[%i, %j] : memref<2x4xf32>
    }
  }
  loop.for "dense.i" %i = 0 to 2 {
    loop.for "dense.j" %j = 0 to 4 {
      loop.for "dense.k" %k = 0 to 3 {
        %a = loop.load %x[%i, %k] : memref<2x3xf32>
        %c = loop.load %w[%j, %k] : memref<4x3xf32>
        %p = arith.mulf %a, %c : f32
        %acc = loop.load %dense[%i, %j] : memref<2x4xf32>
        %s = arith.addf %acc, %p : f32
        loop.store %s, %dense[%i, %j] : memref<2x4xf32>
      }
    }
  }
  %bias_add = loop.alloc : memref<2x4xf32>
  loop.for "bias_add.i" %i = 0 to 2 {
    loop.for "bias_add.j" %j = 0 to 4 {
      %v = loop.load %dense[%i, %j] : memref<2x4xf32>
      %bj = loop.load %b[%j] : memref<4xf32>
      %s = arith.addf %v, %bj : f32
      loop.store %s, %bias_add[%i, %j] : memref<2x4xf32>
    }
  }
  loop.for "relu.i" %i = 0 to 2 {
    loop.for "relu.j" %j = 0 to 4 {
      %zero = arith.constant 0.000000e+00 : f32
      %v = loop.load %bias_add[%i, %j] : memref<2x4xf32>
      %r = arith.maximumf %v, %zero : f32
      loop.store %r, %out[%i, %j] : memref<2x4xf32>
    }
  }
  func.return
}

func.func @conv1d(%x: memref<6xf32>, %w: memref<3xf32>, %out: memref<6xf32>) attributes {xweave.kernel} {
  %pad = loop.alloc : memref<8xf32>
  loop.for "pad.i" %i = 0 to 8 {
    %c1 = arith.constant 1 : index
    %c7 = arith.constant 7 : index
    %zero = arith.constant 0.000000e+00 : f32
    %lo = arith.cmpi sge, %i, %c1 : index
    %hi = arith.cmpi slt, %i, %c7 : index
    %in = arith.andi %lo, %hi : i1
    %v = scf.if %in -> (f32) {
      %a = loop.load %x[%i - 1] : memref<6xf32>
      scf.yield %a : f32
    } else {
      scf.yield %zero : f32
    }
    loop.store %v, %pad[%i] : memref<8xf32>
  }
  loop.for "conv_init.y" %y = 0 to 6 {
    %zero = arith.constant 0.000000e+00 : f32
    loop.store %zero, %out[%y] : memref<6xf32>
  }
  loop.for "conv.y" %y = 0 to 6 {
    loop.for "conv.r" %r = 0 to 3 {
      %a = loop.load %pad[%y + %r] : memref<8xf32>
      %c = loop.load %w[%r] : memref<3xf32>
      %p = arith.mulf %a, %c : f32
      %acc = loop.load %out[%y] : memref<6xf32>
      %s = arith.addf %acc, %p : f32
      loop.store %s, %out[%y] : memref<6xf32>
    }
  }
  func.return
}

func.func @transpose(%x: memref<3x2xf32>, %out: memref<2x3xf32>) attributes {xweave.kernel} {
  %t = loop.alloc : memref<2x3xf32>
  loop.for "t.j" %j = 0 to 3 {
    loop.for "t.i" %i = 0 to 2 {
      %a = loop.load %x[%j, %i] : memref<3x2xf32>
      loop.store %a, %t[%i, %j] : memref<2x3xf32>
    }
  }
  loop.for "use.i" %i = 0 to 2 {
    loop.for "use.j" %j = 0 to 3 {
      %v = loop.load %t[%i, 2 - %j] : memref<2x3xf32>
      %n = arith.negf %v : f32
      loop.store %n, %out[%i, %j] : memref<2x3xf32>
    }
  }
  func.return
}

func.func @vector(%x: memref<8xf32>, %out: memref<8xf32>) attributes {xweave.kernel} {
  %e = loop.alloc : memref<8xf32>
  loop.for "e.i" %i = 0 to 8 {
    %a = loop.load %x[%i] : memref<8xf32>
    %s = arith.addf %a, %a : f32
    loop.store %s, %e[%i] : memref<8xf32>
  }
  loop.for "v.i" %i = 0 to 2 {
    %v = loop.load %e[%i * 4] : memref<8xf32> -> vector<4xf32>
    loop.store %v, %out[%i * 4] : memref<8xf32>, vector<4xf32>
  }
  func.return
}

// bias_add's body replaces relu's load of %bias_add; its nest and buffer are gone.
// dense is left alone.

// CHECK-LABEL: func.func @dense_relu(
// CHECK-NEXT:    %dense = loop.alloc : memref<2x4xf32>
// CHECK-NEXT:    loop.for "dense_init.i" %i = 0 to 2 {
// CHECK:         loop.for "dense.i" %i_1 = 0 to 2 {
// CHECK:               loop.store %s, %dense[%i_1, %j_1] : memref<2x4xf32>
// CHECK-NEXT:        }
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    loop.for "relu.i" %i_2 = 0 to 2 {
// CHECK-NEXT:      loop.for "relu.j" %j_2 = 0 to 4 {
// CHECK-NEXT:        %zero_1 = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:        %v = loop.load %dense[%i_2, %j_2] : memref<2x4xf32>
// CHECK-NEXT:        %bj = loop.load %b[%j_2] : memref<4xf32>
// CHECK-NEXT:        %s_1 = arith.addf %v, %bj : f32
// CHECK-NEXT:        %r = arith.maximumf %s_1, %zero_1 : f32
// CHECK-NEXT:        loop.store %r, %out[%i_2, %j_2] : memref<2x4xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return
// CHECK-LABEL: func.func @conv1d(
// CHECK-NEXT:    %pad = loop.alloc : memref<8xf32>

// The padding condition moves into the convolution, on the consumer's index y + r.

// PAD-LABEL: func.func @dense_relu(
// PAD:           %bias_add = loop.alloc : memref<2x4xf32>
// PAD-LABEL: func.func @conv1d(
// PAD-NEXT:      loop.for "conv_init.y" %y = 0 to 6 {
// PAD:           loop.for "conv.y" %y_1 = 0 to 6 {
// PAD-NEXT:        loop.for "conv.r" %r = 0 to 3 {
// PAD-NEXT:          %0 = arith.addi %y_1, %r : index
// PAD-NEXT:          %c1 = arith.constant 1 : index
// PAD-NEXT:          %c7 = arith.constant 7 : index
// PAD-NEXT:          %zero_1 = arith.constant 0.000000e+00 : f32
// PAD-NEXT:          %lo = arith.cmpi sge, %0, %c1 : index
// PAD-NEXT:          %hi = arith.cmpi slt, %0, %c7 : index
// PAD-NEXT:          %in = arith.andi %lo, %hi : i1
// PAD-NEXT:          %v = scf.if %in -> (f32) {
// PAD-NEXT:            %a = loop.load %x[%y_1 + %r - 1] : memref<6xf32>
// PAD-NEXT:            scf.yield %a : f32
// PAD-NEXT:          } else {
// PAD-NEXT:            scf.yield %zero_1 : f32
// PAD-NEXT:          }
// PAD-NEXT:          %c = loop.load %w[%r] : memref<3xf32>
// PAD-NEXT:          %p = arith.mulf %v, %c : f32

// A stage storing at permuted loops (t[i, j] inside j, i) is inverted through its
// store map: t[i, 2 - j] reads x[2 - j, i].

// PERM-LABEL: func.func @transpose(
// PERM-NEXT:    loop.for "use.i" %i = 0 to 2 {
// PERM-NEXT:      loop.for "use.j" %j = 0 to 3 {
// PERM-NEXT:        %a = loop.load %x[2 - %j, %i] : memref<3x2xf32>
// PERM-NEXT:        %n = arith.negf %a : f32

// REDUCTION: inline of 'dense': the stage is a reduction (it has an init nest) or has several nests; only injective stages can be inlined
// OUTPUT: inline of 'relu': the stage writes a kernel argument, which must stay materialized
// VECTOR: inline of 'e': a consumer reads the buffer with a vector load; inline before vectorizing
// NO-STAGE: no stage 'nope' (no loop named 'nope.*') in any kernel
