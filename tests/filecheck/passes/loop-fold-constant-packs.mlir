// RUN: xweave-opt %s -p 'loop-pack{buffer=1 split_dim=0 factor=2},loop-fold-constant-packs' | filecheck %s
// RUN: xweave-opt %s -p 'loop-pack{buffer=0 split_dim=1 factor=2},loop-fold-constant-packs' | filecheck %s --check-prefix=NOT-CONSTANT
// RUN: xweave-opt %s -p 'loop-pack{buffer=1 split_dim=0 factor=2},loop-compute-at{stage="w_pack" at="dense.i"},loop-fold-constant-packs' | filecheck %s
// RUN: xweave-opt %s -p 'loop-pack{buffer=1 split_dim=1 factor=2},loop-pack{buffer=1 split_dim=0 factor=2},loop-fold-constant-packs' | filecheck %s --check-prefix=CHAIN

// One kernel called with two constant weights: each call site gets its own packed
// global, the kernel takes the packed layout and loses its packing stage; the old
// globals go, also when the packing stage was placed inside a consumer's loop
// (loop-compute-at). Packing %x (an input, not a constant) is left to run time. Of a
// chain of packs (the second `loop-pack` of %w copies what the first packing stage
// reads), the first link folds and the second stays a packing stage on its layout.

builtin.module {
  loop.global @w1 : memref<3x2xf32> = dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32>
  loop.global @w2 : memref<3x2xf32> = dense<[[7.0, 8.0], [9.0, 10.0], [11.0, 12.0]]> : tensor<3x2xf32>
  func.func @main(%x: memref<1x2xf32>, %out: memref<1x3xf32>, %out2: memref<1x3xf32>) {
    %w1 = loop.get_global @w1 : memref<3x2xf32>
    func.call @dense(%x, %w1, %out) : (memref<1x2xf32>, memref<3x2xf32>, memref<1x3xf32>) -> ()
    %w2 = loop.get_global @w2 : memref<3x2xf32>
    func.call @dense(%x, %w2, %out2) : (memref<1x2xf32>, memref<3x2xf32>, memref<1x3xf32>) -> ()
    func.return
  }
  func.func @dense(%x: memref<1x2xf32>, %w: memref<3x2xf32>, %out: memref<1x3xf32>) attributes {xweave.kernel} {
    loop.for "dense.i" %i = 0 to 1 {
      loop.for "dense.j" %j = 0 to 3 {
        loop.for "dense.k" %k = 0 to 2 {
          %a = loop.load %x[%i, %k] : memref<1x2xf32>
          %c = loop.load %w[%j, %k] : memref<3x2xf32>
          %p = arith.mulf %a, %c : f32
          %acc = loop.load %out[%i, %j] : memref<1x3xf32>
          %s = arith.addf %acc, %p : f32
          loop.store %s, %out[%i, %j] : memref<1x3xf32>
        }
      }
    }
    func.return
  }
}

// CHECK:      loop.global @w1_packed_{{[0-9a-f]+}} : memref<2x2x2xf32> = dense<{{\[\[\[}}1.000000e+00, 3.000000e+00], [2.000000e+00, 4.000000e+00]], {{\[\[}}5.000000e+00, 0.000000e+00], [6.000000e+00, 0.000000e+00]]]>
// CHECK-NEXT: loop.global @w2_packed_{{[0-9a-f]+}} : memref<2x2x2xf32>
// CHECK-NOT:  loop.global
// CHECK:      %[[W1:.*]] = loop.get_global @w1_packed_{{[0-9a-f]+}} : memref<2x2x2xf32>
// CHECK-NEXT: func.call @dense(%x, %[[W1]], %out) : (memref<1x2xf32>, memref<2x2x2xf32>, memref<1x3xf32>) -> ()
// CHECK-NEXT: %[[W2:.*]] = loop.get_global @w2_packed_{{[0-9a-f]+}} : memref<2x2x2xf32>
// CHECK-NEXT: func.call @dense(%x, %[[W2]], %out2)
// CHECK:      func.func @dense(%x: memref<1x2xf32>, %w: memref<2x2x2xf32>, %out: memref<1x3xf32>) attributes {xweave.kernel} {
// CHECK-NEXT:   loop.for "dense.i"
// CHECK:          %c = loop.load %w[%j floordiv 2, %k, %j mod 2] : memref<2x2x2xf32>
// CHECK-NOT:  w_pack

// NOT-CONSTANT:      loop.global @w1 : memref<3x2xf32>
// NOT-CONSTANT:      func.func @dense(%x: memref<1x2xf32>, %w: memref<3x2xf32>, %out: memref<1x3xf32>)
// NOT-CONSTANT-NEXT:   %x_packed = loop.alloc {xweave.pack = {{.*}}} : memref<1x1x2xf32>
// NOT-CONSTANT-NEXT:   loop.for "x_pack.i0"

// CHAIN:      loop.global @w1_packed_{{[0-9a-f]+}} : memref<2x2x2xf32>
// CHAIN:      func.func @dense(%x: memref<1x2xf32>, %w: memref<2x2x2xf32>, %out: memref<1x3xf32>)
// CHAIN-NEXT:   %w_packed = loop.alloc {xweave.pack = {argument = 1 : i64, split_dim = array<i64: 1>, {{.*}}} : memref<3x1x2xf32>
// CHAIN-NEXT:   loop.for "w_pack.i0"
// CHAIN:          %{{.*}} = loop.load %w[%i0 floordiv 2, %i1_outer * 2 + %i1_inner, %i0 mod 2] : memref<2x2x2xf32>
// CHAIN:          %c = loop.load %w_packed[%j, 0, %k] : memref<3x1x2xf32>
