// RUN: xweave-opt %s -p 'loop-compute-at{stage=dense at="relu.j.outer" scope=local}' | filecheck %s --check-prefix=LOCAL
// RUN: xweave-opt %s -p 'loop-compute-at{stage=dense at="relu.i.outer"}' | filecheck %s --check-prefix=KEEP
// RUN: xweave-opt %s -p 'loop-compute-at{stage=pad at="conv.y.outer" scope=local}' | filecheck %s --check-prefix=HALO
// RUN: xweave-opt %s -p 'loop-compute-at{stage=sq at="use.i.outer" scope=local kernel=ragged}' | filecheck %s --check-prefix=RAGGED
// RUN: xweave-opt %s -p 'loop-compute-at{stage=dense at="relu.nope"}' --verify-diagnostics | filecheck %s --check-prefix=NO-LOOP
// RUN: xweave-opt %s -p 'loop-compute-at{stage=relu at="relu.j.outer"}' --verify-diagnostics | filecheck %s --check-prefix=OWN-LOOP
// RUN: xweave-opt %s -p 'loop-compute-at{stage=relu at="dense.k"}' --verify-diagnostics | filecheck %s --check-prefix=BEFORE
// RUN: xweave-opt %s -p 'loop-compute-at{stage=dense at="relu.i.inner" kernel=conv1d}' --verify-diagnostics | filecheck %s --check-prefix=NO-STAGE
// RUN: xweave-opt %s -p 'loop-compute-at{stage=a at="b.i"}' --verify-diagnostics | filecheck %s --check-prefix=OUTPUT
// RUN: xweave-opt %s -p 'loop-compute-at{stage=dense at="relu.j.outer" scope=local order=1,0}' | filecheck %s --check-prefix=ORDER
// RUN: xweave-opt %s -p 'loop-compute-at{stage=dense at="relu.j.outer" order=1,0}' --verify-diagnostics | filecheck %s --check-prefix=ORDER-KEEP

// A dense (reduction) stage read by relu, whose loops are tiled 2 x 4 (bias already
// inlined); a 1-D convolution whose padding stage is read through a halo of 2 by the
// tiled conv; an injective stage read by a consumer tiled by 2 over 5 elements (guard).

func.func @dense_relu(%x: memref<4x3xf32>, %w: memref<8x3xf32>, %b: memref<8xf32>, %out: memref<4x8xf32>) attributes {xweave.kernel} {
  %dense = loop.alloc : memref<4x8xf32>
  loop.for "dense_init.i" %i = 0 to 4 {
    loop.for "dense_init.j" %j = 0 to 8 {
      %zero = arith.constant 0.000000e+00 : f32
      loop.store %zero, %dense[%i, %j] : memref<4x8xf32>
    }
  }
  loop.for "dense.i" %i = 0 to 4 {
    loop.for "dense.j" %j = 0 to 8 {
      loop.for "dense.k" %k = 0 to 3 {
        %a = loop.load %x[%i, %k] : memref<4x3xf32>
        %c = loop.load %w[%j, %k] : memref<8x3xf32>
        %p = arith.mulf %a, %c : f32
        %acc = loop.load %dense[%i, %j] : memref<4x8xf32>
        %s = arith.addf %acc, %p : f32
        loop.store %s, %dense[%i, %j] : memref<4x8xf32>
      }
    }
  }
  loop.for "relu.i.outer" %io = 0 to 2 {
    loop.for "relu.j.outer" %jo = 0 to 2 {
      loop.for "relu.i.inner" %ii = 0 to 2 {
        loop.for "relu.j.inner" %ji = 0 to 4 {
          %zero = arith.constant 0.000000e+00 : f32
          %v = loop.load %dense[%io * 2 + %ii, %jo * 4 + %ji] : memref<4x8xf32>
          %bj = loop.load %b[%jo * 4 + %ji] : memref<8xf32>
          %s = arith.addf %v, %bj : f32
          %r = arith.maximumf %s, %zero : f32
          loop.store %r, %out[%io * 2 + %ii, %jo * 4 + %ji] : memref<4x8xf32>
        }
      }
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
  loop.for "conv.y.outer" %yo = 0 to 3 {
    loop.for "conv.y.inner" %yi = 0 to 2 {
      loop.for "conv.r" %r = 0 to 3 {
        %a = loop.load %pad[%yo * 2 + %yi + %r] : memref<8xf32>
        %c = loop.load %w[%r] : memref<3xf32>
        %p = arith.mulf %a, %c : f32
        %acc = loop.load %out[%yo * 2 + %yi] : memref<6xf32>
        %s = arith.addf %acc, %p : f32
        loop.store %s, %out[%yo * 2 + %yi] : memref<6xf32>
      }
    }
  }
  func.return
}

func.func @ragged(%x: memref<5xf32>, %out: memref<5xf32>) attributes {xweave.kernel} {
  %sq = loop.alloc : memref<5xf32>
  loop.for "sq.i" %i = 0 to 5 {
    %a = loop.load %x[%i] : memref<5xf32>
    %s = arith.mulf %a, %a : f32
    loop.store %s, %sq[%i] : memref<5xf32>
  }
  loop.for "use.i.outer" %o = 0 to 3 {
    loop.for "use.i.inner" %ii = 0 to 2 {
      %c2 = arith.constant 2 : index
      %c5 = arith.constant 5 : index
      %t = arith.muli %o, %c2 : index
      %idx = arith.addi %t, %ii : index
      %ok = arith.cmpi slt, %idx, %c5 : index
      scf.if %ok {
        %v = loop.load %sq[%o * 2 + %ii] : memref<5xf32>
        %y = arith.negf %v : f32
        loop.store %y, %out[%o * 2 + %ii] : memref<5xf32>
      }
    }
  }
  func.return
}

func.func @two_outputs(%x: memref<4xf32>, %y: memref<4xf32>, %z: memref<4xf32>) attributes {xweave.kernel} {
  loop.for "a.i" %i = 0 to 4 {
    %v = loop.load %x[%i] : memref<4xf32>
    loop.store %v, %y[%i] : memref<4xf32>
  }
  loop.for "b.i" %i = 0 to 4 {
    %v = loop.load %y[%i] : memref<4xf32>
    loop.store %v, %z[%i] : memref<4xf32>
  }
  func.return
}

// Each iteration of relu.j.outer computes the 2 x 4 tile of dense it reads, into a
// local accumulator; dense's loops keep their names and run over the tile.

// LOCAL-LABEL: func.func @dense_relu(
// LOCAL-NEXT:    loop.for "relu.i.outer" %io = 0 to 2 {
// LOCAL-NEXT:      loop.for "relu.j.outer" %jo = 0 to 2 {
// LOCAL-NEXT:        %dense = loop.alloc : memref<2x4xf32, #loop.scope<local>>
// LOCAL-NEXT:        loop.for "dense_init.i" %i = 0 to 2 {
// LOCAL-NEXT:          loop.for "dense_init.j" %j = 0 to 4 {
// LOCAL-NEXT:            %zero = arith.constant 0.000000e+00 : f32
// LOCAL-NEXT:            loop.store %zero, %dense[%i, %j] : memref<2x4xf32, #loop.scope<local>>
// LOCAL:             loop.for "dense.i" %i_1 = 0 to 2 {
// LOCAL-NEXT:          loop.for "dense.j" %j_1 = 0 to 4 {
// LOCAL-NEXT:            loop.for "dense.k" %k = 0 to 3 {
// LOCAL-NEXT:              %a = loop.load %x[%io * 2 + %i_1, %k] : memref<4x3xf32>
// LOCAL-NEXT:              %c = loop.load %w[%jo * 4 + %j_1, %k] : memref<8x3xf32>
// LOCAL-NEXT:              %p = arith.mulf %a, %c : f32
// LOCAL-NEXT:              %acc = loop.load %dense[%i_1, %j_1] : memref<2x4xf32, #loop.scope<local>>
// LOCAL-NEXT:              %s = arith.addf %acc, %p : f32
// LOCAL-NEXT:              loop.store %s, %dense[%i_1, %j_1] : memref<2x4xf32, #loop.scope<local>>
// LOCAL:             loop.for "relu.i.inner" %ii = 0 to 2 {
// LOCAL-NEXT:          loop.for "relu.j.inner" %ji = 0 to 4 {
// LOCAL-NEXT:            %zero_1 = arith.constant 0.000000e+00 : f32
// LOCAL-NEXT:            %v = loop.load %dense[%ii, %ji] : memref<2x4xf32, #loop.scope<local>>
// LOCAL-NEXT:            %bj = loop.load %b[%jo * 4 + %ji] : memref<8xf32>
// LOCAL:                 loop.store %r, %out[%io * 2 + %ii, %jo * 4 + %ji] : memref<4x8xf32>
// Other kernels are left alone.
// LOCAL-LABEL: func.func @conv1d(
// LOCAL-NEXT:    %pad = loop.alloc : memref<8xf32>
// LOCAL-NEXT:    loop.for "pad.i" %i = 0 to 8 {

// scope=keep: the buffer stays whole and global; each row tile of relu computes its
// two rows of dense (all columns: relu.j.outer is inside the attach point).

// KEEP-LABEL: func.func @dense_relu(
// KEEP-NEXT:    %dense = loop.alloc : memref<4x8xf32>
// KEEP-NEXT:    loop.for "relu.i.outer" %io = 0 to 2 {
// KEEP-NEXT:      loop.for "dense_init.i" %i = 0 to 2 {
// KEEP-NEXT:        loop.for "dense_init.j" %j = 0 to 8 {
// KEEP-NEXT:          %zero = arith.constant 0.000000e+00 : f32
// KEEP-NEXT:          loop.store %zero, %dense[%io * 2 + %i, %j] : memref<4x8xf32>
// KEEP:           loop.for "dense.i" %i_1 = 0 to 2 {
// KEEP-NEXT:        loop.for "dense.j" %j_1 = 0 to 8 {
// KEEP-NEXT:          loop.for "dense.k" %k = 0 to 3 {
// KEEP-NEXT:            %a = loop.load %x[%io * 2 + %i_1, %k] : memref<4x3xf32>
// KEEP-NEXT:            %c = loop.load %w[%j_1, %k] : memref<8x3xf32>
// KEEP:                 loop.store %s, %dense[%io * 2 + %i_1, %j_1] : memref<4x8xf32>
// KEEP:           loop.for "relu.j.outer" %jo = 0 to 2 {
// KEEP-NEXT:        loop.for "relu.i.inner" %ii = 0 to 2 {
// KEEP-NEXT:          loop.for "relu.j.inner" %ji = 0 to 4 {
// KEEP-NEXT:            %zero_1 = arith.constant 0.000000e+00 : f32
// KEEP-NEXT:            %v = loop.load %dense[%io * 2 + %ii, %jo * 4 + %ji] : memref<4x8xf32>

// The conv tile of 2 outputs reads 4 padded inputs (a halo of 2): the padding stage
// computes those 4 per tile, its condition on the re-based index.

// HALO-LABEL: func.func @conv1d(
// HALO-NEXT:    loop.for "conv_init.y" %y = 0 to 6 {
// HALO:         loop.for "conv.y.outer" %yo = 0 to 3 {
// HALO-NEXT:      %pad = loop.alloc : memref<4xf32, #loop.scope<local>>
// HALO-NEXT:      loop.for "pad.i" %i = 0 to 4 {
// HALO-NEXT:        %0 = arith.constant 2 : index
// HALO-NEXT:        %1 = arith.muli %yo, %0 : index
// HALO-NEXT:        %i_1 = arith.addi %1, %i : index
// HALO:             %lo = arith.cmpi sge, %i_1, %c1 : index
// HALO-NEXT:        %hi = arith.cmpi slt, %i_1, %c7 : index
// HALO:             %a = loop.load %x[%yo * 2 + %i - 1] : memref<6xf32>
// HALO:             loop.store %v, %pad[%i] : memref<4xf32, #loop.scope<local>>
// HALO:           loop.for "conv.y.inner" %yi = 0 to 2 {
// HALO-NEXT:        loop.for "conv.r" %r = 0 to 3 {
// HALO-NEXT:          %a_1 = loop.load %pad[%yi + %r] : memref<4xf32, #loop.scope<local>>

// 5 elements in tiles of 2: the last tile sticks out, so the stage is guarded (it reads
// %x); its local buffer needs no guard.

// RAGGED-LABEL: func.func @ragged(
// RAGGED-NEXT:    loop.for "use.i.outer" %o = 0 to 3 {
// RAGGED-NEXT:      %sq = loop.alloc : memref<2xf32, #loop.scope<local>>
// RAGGED-NEXT:      loop.for "sq.i" %i = 0 to 2 {
// RAGGED-NEXT:        %0 = arith.constant 2 : index
// RAGGED-NEXT:        %1 = arith.muli %o, %0 : index
// RAGGED-NEXT:        %2 = arith.addi %1, %i : index
// RAGGED-NEXT:        %3 = arith.constant 5 : index
// RAGGED-NEXT:        %4 = arith.cmpi slt, %2, %3 : index
// RAGGED-NEXT:        scf.if %4 {
// RAGGED-NEXT:          %a = loop.load %x[%o * 2 + %i] : memref<5xf32>
// RAGGED-NEXT:          %s = arith.mulf %a, %a : f32
// RAGGED-NEXT:          loop.store %s, %sq[%i] : memref<2xf32, #loop.scope<local>>
// RAGGED:           loop.for "use.i.inner" %ii = 0 to 2 {
// RAGGED:               %v = loop.load %sq[%ii] : memref<2xf32, #loop.scope<local>>

// NO-LOOP: no loop named 'relu.nope' in kernel 'dense_relu'; expected exactly one
// OWN-LOOP: compute-at of 'relu' at 'relu.j.outer': 'relu.j.outer' is a loop of the stage itself
// BEFORE: compute-at of 'relu' at 'dense.k': 'dense.k' must come after the stage's nests
// NO-STAGE: no stage 'dense' (no loop named 'dense.*') in kernel 'conv1d'
// OUTPUT: compute-at of 'a' at 'b.i': the stage writes a kernel argument, which must be filled whole; use loop-cache-write

// order=1,0 with a local scope: the shrunk buffer is transposed for every access.
// ORDER-LABEL: func.func @dense_relu(
// ORDER:         %dense = loop.alloc : memref<4x2xf32, #loop.scope<local>>
// ORDER:         loop.store %zero, %dense[%j, %i] : memref<4x2xf32, #loop.scope<local>>
// ORDER:         %acc = loop.load %dense[%j_1, %i_1] : memref<4x2xf32, #loop.scope<local>>
// ORDER:         loop.store %s, %dense[%j_1, %i_1] : memref<4x2xf32, #loop.scope<local>>
// ORDER:         %v = loop.load %dense[%ji, %ii] : memref<4x2xf32, #loop.scope<local>>

// ORDER-KEEP: order needs a scope (the buffer is kept)
