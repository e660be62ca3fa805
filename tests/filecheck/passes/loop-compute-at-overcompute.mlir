// RUN: xweave-opt %s -p 'loop-compute-at{stage=conv at="relu.y.outer" scope=local overcompute=true kernel=padded}' | filecheck %s
// RUN: xweave-opt %s -p 'loop-compute-at{stage=conv at="relu.y.outer" scope=local kernel=padded}' | filecheck %s --check-prefix=GUARDED
// RUN: xweave-opt %s -p 'loop-compute-at{stage=conv at="relu.y.outer" scope=local overcompute=true kernel=argument}' --verify-diagnostics | filecheck %s --check-prefix=ARGUMENT
// RUN: xweave-opt %s -p 'loop-compute-at{stage=conv at="relu.y.outer" scope=local overcompute=true kernel=unguarded}' --verify-diagnostics | filecheck %s --check-prefix=UNSAFE
// RUN: xweave-opt %s -p 'loop-compute-at{stage=conv at="relu.y.outer" overcompute=true kernel=padded}' --verify-diagnostics | filecheck %s --check-prefix=KEEP

// A 1-D conv (3 taps, padding 1) of 5 elements with a relu epilogue tiled by 2: the
// last tile (y = 4, 5) is ragged. With overcompute, the conv computes both of its
// elements unguarded, reading up to %pad[7], so %pad grows from 7 to 8 elements and
// its stage computes element 7 (a zero: its read of %x is guarded by `i < 6`).
// @argument reads %x itself past its end; @unguarded's %pad stage would read %x[7].

func.func @padded(%x: memref<5xf32>, %w: memref<3xf32>, %out: memref<5xf32>) attributes {xweave.kernel} {
  %pad = loop.alloc : memref<7xf32>
  loop.for "pad.i" %i = 0 to 7 {
    %c1 = arith.constant 1 : index
    %c6 = arith.constant 6 : index
    %zero = arith.constant 0.000000e+00 : f32
    %lo = arith.cmpi sge, %i, %c1 : index
    %hi = arith.cmpi slt, %i, %c6 : index
    %in = arith.andi %lo, %hi : i1
    %v = scf.if %in -> (f32) {
      %a = loop.load %x[%i - 1] : memref<5xf32>
      scf.yield %a : f32
    } else {
      scf.yield %zero : f32
    }
    loop.store %v, %pad[%i] : memref<7xf32>
  }
  %conv = loop.alloc : memref<5xf32>
  loop.for "conv_init.y" %y = 0 to 5 {
    %zero = arith.constant 0.000000e+00 : f32
    loop.store %zero, %conv[%y] : memref<5xf32>
  }
  loop.for "conv.y" %y = 0 to 5 {
    loop.for "conv.r" %r = 0 to 3 {
      %a = loop.load %pad[%y + %r] : memref<7xf32>
      %c = loop.load %w[%r] : memref<3xf32>
      %p = arith.mulf %a, %c : f32
      %acc = loop.load %conv[%y] : memref<5xf32>
      %s = arith.addf %acc, %p : f32
      loop.store %s, %conv[%y] : memref<5xf32>
    }
  }
  loop.for "relu.y.outer" %yo = 0 to 3 {
    loop.for "relu.y.inner" %yi = 0 to 2 {
      %c2 = arith.constant 2 : index
      %c5 = arith.constant 5 : index
      %m = arith.muli %yo, %c2 : index
      %e = arith.addi %m, %yi : index
      %ok = arith.cmpi slt, %e, %c5 : index
      scf.if %ok {
        %zero = arith.constant 0.000000e+00 : f32
        %v = loop.load %conv[%yo * 2 + %yi] : memref<5xf32>
        %r = arith.maximumf %v, %zero : f32
        loop.store %r, %out[%yo * 2 + %yi] : memref<5xf32>
      }
    }
  }
  func.return
}

func.func @argument(%x: memref<7xf32>, %w: memref<3xf32>, %out: memref<5xf32>) attributes {xweave.kernel} {
  %conv = loop.alloc : memref<5xf32>
  loop.for "conv_init.y" %y = 0 to 5 {
    %zero = arith.constant 0.000000e+00 : f32
    loop.store %zero, %conv[%y] : memref<5xf32>
  }
  loop.for "conv.y" %y = 0 to 5 {
    loop.for "conv.r" %r = 0 to 3 {
      %a = loop.load %x[%y + %r] : memref<7xf32>
      %c = loop.load %w[%r] : memref<3xf32>
      %p = arith.mulf %a, %c : f32
      %acc = loop.load %conv[%y] : memref<5xf32>
      %s = arith.addf %acc, %p : f32
      loop.store %s, %conv[%y] : memref<5xf32>
    }
  }
  loop.for "relu.y.outer" %yo = 0 to 3 {
    loop.for "relu.y.inner" %yi = 0 to 2 {
      %c2 = arith.constant 2 : index
      %c5 = arith.constant 5 : index
      %m = arith.muli %yo, %c2 : index
      %e = arith.addi %m, %yi : index
      %ok = arith.cmpi slt, %e, %c5 : index
      scf.if %ok {
        %zero = arith.constant 0.000000e+00 : f32
        %v = loop.load %conv[%yo * 2 + %yi] : memref<5xf32>
        %r = arith.maximumf %v, %zero : f32
        loop.store %r, %out[%yo * 2 + %yi] : memref<5xf32>
      }
    }
  }
  func.return
}

func.func @unguarded(%x: memref<7xf32>, %w: memref<3xf32>, %out: memref<5xf32>) attributes {xweave.kernel} {
  %pad = loop.alloc : memref<7xf32>
  loop.for "pad.i" %i = 0 to 7 {
    %a = loop.load %x[%i] : memref<7xf32>
    loop.store %a, %pad[%i] : memref<7xf32>
  }
  %conv = loop.alloc : memref<5xf32>
  loop.for "conv_init.y" %y = 0 to 5 {
    %zero = arith.constant 0.000000e+00 : f32
    loop.store %zero, %conv[%y] : memref<5xf32>
  }
  loop.for "conv.y" %y = 0 to 5 {
    loop.for "conv.r" %r = 0 to 3 {
      %a = loop.load %pad[%y + %r] : memref<7xf32>
      %c = loop.load %w[%r] : memref<3xf32>
      %p = arith.mulf %a, %c : f32
      %acc = loop.load %conv[%y] : memref<5xf32>
      %s = arith.addf %acc, %p : f32
      loop.store %s, %conv[%y] : memref<5xf32>
    }
  }
  loop.for "relu.y.outer" %yo = 0 to 3 {
    loop.for "relu.y.inner" %yi = 0 to 2 {
      %c2 = arith.constant 2 : index
      %c5 = arith.constant 5 : index
      %m = arith.muli %yo, %c2 : index
      %e = arith.addi %m, %yi : index
      %ok = arith.cmpi slt, %e, %c5 : index
      scf.if %ok {
        %zero = arith.constant 0.000000e+00 : f32
        %v = loop.load %conv[%yo * 2 + %yi] : memref<5xf32>
        %r = arith.maximumf %v, %zero : f32
        loop.store %r, %out[%yo * 2 + %yi] : memref<5xf32>
      }
    }
  }
  func.return
}

// CHECK-LABEL: func.func @padded(
// CHECK-NEXT:    %pad = loop.alloc : memref<8xf32>
// CHECK-NEXT:    loop.for "pad.i" %i = 0 to 8 {
// CHECK:           %hi = arith.cmpi slt, %i, %c6 : index
// CHECK:           %v = scf.if %in -> (f32) {
// CHECK-NEXT:        %a = loop.load %x[%i - 1] : memref<5xf32>
// CHECK:         loop.for "relu.y.outer" %yo = 0 to 3 {
// CHECK-NEXT:      %conv = loop.alloc : memref<2xf32, #loop.scope<local>>
// CHECK-NEXT:      loop.for "conv_init.y" %y = 0 to 2 {
// CHECK:           loop.for "conv.y" %y_1 = 0 to 2 {
// CHECK-NEXT:        loop.for "conv.r" %r = 0 to 3 {
// CHECK-NEXT:          %a_1 = loop.load %pad[%yo * 2 + %y_1 + %r] : memref<8xf32>
// CHECK:               loop.store %s, %conv[%y_1] : memref<2xf32, #loop.scope<local>>
// CHECK-NEXT:        }
// CHECK-NEXT:      }
// CHECK-NEXT:      loop.for "relu.y.inner" %yi = 0 to 2 {
// CHECK:             scf.if %ok {
// CHECK-NEXT:          %zero_2 = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:          %v_1 = loop.load %conv[%yi] : memref<2xf32, #loop.scope<local>>

// Without overcompute, the conv nest is guarded and %pad keeps its size.
// GUARDED-LABEL: func.func @padded(
// GUARDED-NEXT:    %pad = loop.alloc : memref<7xf32>
// GUARDED:         loop.for "conv.y" %y_1 = 0 to 2 {
// GUARDED:           scf.if
// GUARDED:             loop.for "conv.r" %r = 0 to 3 {
// GUARDED-NEXT:          %a_1 = loop.load %pad[%yo * 2 + %y_1 + %r] : memref<7xf32>

// ARGUMENT: compute-at of 'conv' at 'relu.y.outer': reads past the end of kernel argument %x [7] (need [8]); pack or pad it first
// UNSAFE: compute-at of 'conv' at 'relu.y.outer': cannot grow %pad to [8]: stage 'pad' would read past the end of %x
// KEEP: compute-at of 'conv' at 'relu.y.outer': overcompute needs a scope (the buffer is kept)
