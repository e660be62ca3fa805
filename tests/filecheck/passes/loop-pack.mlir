// RUN: xweave-opt %s -p 'loop-pack{buffer=1 split_dim=0 factor=4 kernel=dense}' | filecheck %s
// RUN: xweave-opt %s -p 'loop-pack{buffer="data" split_dim=1 factor=4}' | filecheck %s --check-prefix=NCHWC
// RUN: xweave-opt %s -p 'loop-pack{buffer="w" split_dim=1,0 factor=3,4 kernel=dense}' | filecheck %s --check-prefix=TWO
// RUN: xweave-opt %s -p 'loop-pack{buffer=2 split_dim=0 factor=4 kernel=dense}' --verify-diagnostics | filecheck %s --check-prefix=WRITTEN
// RUN: xweave-opt %s -p 'loop-pack{buffer="x" split_dim=0 factor=2 kernel=vector}' --verify-diagnostics | filecheck %s --check-prefix=VECTOR
// RUN: xweave-opt %s -p 'loop-pack{buffer="nope" split_dim=0 factor=4}' --verify-diagnostics | filecheck %s --check-prefix=NO-ARG
// RUN: xweave-opt %s -p 'loop-pack{buffer="w" split_dim=1 factor=4 kernel=scale}' --verify-diagnostics | filecheck %s --check-prefix=NO-DIM
// RUN: xweave-opt %s -p 'loop-pack{buffer="x" split_dim=1 factor=2 order=1,0,2 kernel=dense}' | filecheck %s --check-prefix=ORDER
// RUN: xweave-opt %s -p 'loop-pack{buffer="data" split_dim=1 factor=4 parallel=true}' | filecheck %s --check-prefix=PARALLEL

func.func @dense(%x: memref<2x3xf32>, %w: memref<8x3xf32>, %out: memref<2x8xf32>) attributes {xweave.kernel} {
  loop.for "dense.i" %i = 0 to 2 {
    loop.for "dense.j.outer" %jo = 0 to 2 {
      loop.for "dense.k" %k = 0 to 3 {
        loop.for "dense.j.inner" %ji = 0 to 4 {
          %a = loop.load %x[%i, %k] : memref<2x3xf32>
          %c = loop.load %w[%jo * 4 + %ji, %k] : memref<8x3xf32>
          %p = arith.mulf %a, %c : f32
          %acc = loop.load %out[%i, %jo * 4 + %ji] : memref<2x8xf32>
          %s = arith.addf %acc, %p : f32
          loop.store %s, %out[%i, %jo * 4 + %ji] : memref<2x8xf32>
        }
      }
    }
  }
  func.return
}

func.func @scale(%data: memref<1x6x2x2xf32>, %w: memref<6xf32>, %out: memref<1x6x2x2xf32>) attributes {xweave.kernel} {
  loop.for "scale.c" %c = 0 to 6 {
    loop.for "scale.y" %y = 0 to 2 {
      loop.for "scale.x" %x = 0 to 2 {
        %a = loop.load %data[0, %c, %y, %x] : memref<1x6x2x2xf32>
        %b = loop.load %w[%c] : memref<6xf32>
        %p = arith.mulf %a, %b : f32
        loop.store %p, %out[0, %c, %y, %x] : memref<1x6x2x2xf32>
      }
    }
  }
  func.return
}

func.func @vector(%x: memref<8xf32>, %out: memref<8xf32>) attributes {xweave.kernel} {
  loop.for "v.i" %i = 0 to 2 {
    %v = loop.load %x[%i * 4] : memref<8xf32> -> vector<4xf32>
    loop.store %v, %out[%i * 4] : memref<8xf32>, vector<4xf32>
  }
  func.return
}

// Dense weights [8][3] -> 4-wide panels [2][3][4], packed at the kernel start; the
// tiled loop reads panel j.outer, lane j.inner. Other kernels keep their %w.

// CHECK-LABEL: func.func @dense(
// CHECK-NEXT:    %w_packed = loop.alloc {xweave.pack = {argument = 1 : i64, split_dim = array<i64: 0>, factor = array<i64: 4>, order = array<i64: 0, 1, 2>}} : memref<2x3x4xf32>
// CHECK-NEXT:    loop.for "w_pack.i0.outer" %i0_outer = 0 to 2 {
// CHECK-NEXT:      loop.for "w_pack.i1" %i1 = 0 to 3 {
// CHECK-NEXT:        loop.for "w_pack.i0.inner" %i0_inner = 0 to 4 {
// CHECK-NEXT:          %0 = loop.load %w[%i0_outer * 4 + %i0_inner, %i1] : memref<8x3xf32>
// CHECK-NEXT:          loop.store %0, %w_packed[%i0_outer, %i1, %i0_inner] : memref<2x3x4xf32>
// CHECK-NEXT:        }
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    loop.for "dense.i" %i = 0 to 2 {
// CHECK:               %a = loop.load %x[%i, %k] : memref<2x3xf32>
// CHECK-NEXT:          %c = loop.load %w_packed[%jo, %k, %ji] : memref<2x3x4xf32>
// CHECK-LABEL: func.func @scale(
// CHECK-NOT:     loop.alloc
// CHECK:           %b = loop.load %w[%c] : memref<6xf32>

// NCHW -> NCHW[4]c over 6 channels: 2 channel blocks, the padding lanes are zeros.

// NCHWC-LABEL: func.func @scale(
// NCHWC-NEXT:    %data_packed = loop.alloc {{.*}}: memref<1x2x2x2x4xf32>
// NCHWC-NEXT:    loop.for "data_pack.i0" %i0 = 0 to 1 {
// NCHWC-NEXT:      loop.for "data_pack.i1.outer" %i1_outer = 0 to 2 {
// NCHWC-NEXT:        loop.for "data_pack.i2" %i2 = 0 to 2 {
// NCHWC-NEXT:          loop.for "data_pack.i3" %i3 = 0 to 2 {
// NCHWC-NEXT:            loop.for "data_pack.i1.inner" %i1_inner = 0 to 4 {
// NCHWC-NEXT:              %0 = arith.constant 4 : index
// NCHWC-NEXT:              %1 = arith.muli %i1_outer, %0 : index
// NCHWC-NEXT:              %2 = arith.addi %1, %i1_inner : index
// NCHWC-NEXT:              %3 = arith.constant 6 : index
// NCHWC-NEXT:              %4 = arith.cmpi slt, %2, %3 : index
// NCHWC-NEXT:              %5 = scf.if %4 -> (f32) {
// NCHWC-NEXT:                %6 = loop.load %data[%i0, %i1_outer * 4 + %i1_inner, %i2, %i3] : memref<1x6x2x2xf32>
// NCHWC-NEXT:                scf.yield %6 : f32
// NCHWC-NEXT:              } else {
// NCHWC-NEXT:                %7 = arith.constant 0.000000e+00 : f32
// NCHWC-NEXT:                scf.yield %7 : f32
// NCHWC-NEXT:              }
// NCHWC-NEXT:              loop.store %5, %data_packed[%i0, %i1_outer, %i2, %i3, %i1_inner] : memref<1x2x2x2x4xf32>
// NCHWC:         loop.for "scale.c" %c = 0 to 6 {
// NCHWC:               %a = loop.load %data_packed[0, %c floordiv 4, %y, %x, %c mod 4] : memref<1x2x2x2x4xf32>

// parallel=true: the first packing loop of more than one iteration runs in parallel
// (not the batch loop of extent 1); the kernel's own loops are left alone.

// PARALLEL-LABEL: func.func @scale(
// PARALLEL:        loop.for "data_pack.i0" %i0 = 0 to 1 {
// PARALLEL-NEXT:     loop.for "data_pack.i1.outer" %i1_outer = 0 to 2 parallel {
// PARALLEL-NEXT:       loop.for "data_pack.i2" %i2 = 0 to 2 {
// PARALLEL-NOT:    parallel
// PARALLEL:        func.return

// Two splits: inner dimensions are appended in the order given.

// TWO-LABEL: func.func @dense(
// TWO-NEXT:    %w_packed = loop.alloc {{.*}}: memref<2x1x3x4xf32>
// TWO-NEXT:    loop.for "w_pack.i0.outer" %i0_outer = 0 to 2 {
// TWO-NEXT:      loop.for "w_pack.i1.outer" %i1_outer = 0 to 1 {
// TWO-NEXT:        loop.for "w_pack.i1.inner" %i1_inner = 0 to 3 {
// TWO-NEXT:          loop.for "w_pack.i0.inner" %i0_inner = 0 to 4 {
// TWO-NEXT:            %0 = loop.load %w[%i0_outer * 4 + %i0_inner, %i1_outer * 3 + %i1_inner] : memref<8x3xf32>
// TWO-NEXT:            loop.store %0, %w_packed[%i0_outer, %i1_outer, %i1_inner, %i0_inner] : memref<2x1x3x4xf32>
// TWO:                 %c = loop.load %w_packed[%jo, 0, %k, %ji] : memref<2x1x3x4xf32>

// WRITTEN: loop-pack of argument 2 of 'dense': the argument is used by loop.store (only read-only buffers can be packed)
// VECTOR: loop-pack of argument 'x' of 'vector': the argument is read with vector loads; pack before vectorizing
// NO-ARG: loop-pack: no argument 'nope' in any kernel
// NO-DIM: loop-pack of argument 'w' of 'scale': no dimension 1 in memref<6xf32>

// order=1,0,2: x [2][3] split along k by 2 -> [2][k/2][2], then the k panels first:
// [k/2][2][2]; the packing loops run in the packed order, the zero padding stays.
// ORDER-LABEL: func.func @dense(
// ORDER-NEXT:    %x_packed = loop.alloc {xweave.pack = {argument = 0 : i64, split_dim = array<i64: 1>, factor = array<i64: 2>, order = array<i64: 1, 0, 2>}} : memref<2x2x2xf32>
// ORDER-NEXT:    loop.for "x_pack.i1.outer" %i1_outer = 0 to 2 {
// ORDER-NEXT:      loop.for "x_pack.i0" %i0 = 0 to 2 {
// ORDER-NEXT:        loop.for "x_pack.i1.inner" %i1_inner = 0 to 2 {
// ORDER:               loop.load %x[%i0, %i1_outer * 2 + %i1_inner] : memref<2x3xf32>
// ORDER:             loop.store %{{.*}}, %x_packed[%i1_outer, %i0, %i1_inner] : memref<2x2x2xf32>
// ORDER:         %a = loop.load %x_packed[%k floordiv 2, %i, %k mod 2] : memref<2x2x2xf32>
