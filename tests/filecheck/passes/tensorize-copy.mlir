// RUN: xweave-opt %s -p 'tensorize{intrinsic="vta.load_inp" loop="ld.r"},tensorize{intrinsic="vta.load_wgt" loop="lw.r"},tensorize{intrinsic="vta.store" loop="st.r"}' | filecheck %s

// Copy (DMA) intrinsics: tensorize matches a rows x columns window of element tiles.
// The padded read `in-bounds ? data[...] : 0` becomes a LOAD with `pad`; the window
// gives rows/cols, the global dim the rows step along gives row_dim. The loops around
// the window (%t) stay and index the call.

func.func @load_inp(%data: memref<1x1x4x4x1x16xi8>) {
  %inp = loop.alloc : memref<2048x1x16xi8, #loop.scope<vta.inp>>
  loop.for "tile" %t = 0 to 2 {
    loop.for "ld.r" %r = 0 to 4 {
      loop.for "ld.c" %c = 0 to 6 {
        loop.for "ld.b" %b = 0 to 1 {
          loop.for "ld.e" %e = 0 to 16 {
            %h = affine.apply affine_map<(d0, d1) -> (d0 * 2 - 1 + d1)> (%t, %r)
            %w = affine.apply affine_map<(d0) -> (d0 - 1)> (%c)
            %c0 = arith.constant 0 : index
            %c4 = arith.constant 4 : index
            %h0 = arith.cmpi sge, %h, %c0 : index
            %h1 = arith.cmpi slt, %h, %c4 : index
            %w0 = arith.cmpi sge, %w, %c0 : index
            %w1x = arith.cmpi slt, %w, %c4 : index
            %a = arith.andi %h0, %h1 : i1
            %b2 = arith.andi %a, %w0 : i1
            %in = arith.andi %b2, %w1x : i1
            %v = scf.if %in -> (i8) {
              %x = loop.load %data[0, 0, %t * 2 - 1 + %r, %c - 1, %b, %e] : memref<1x1x4x4x1x16xi8>
              scf.yield %x : i8
            } else {
              %z = arith.constant 0 : i8
              scf.yield %z : i8
            }
            loop.store %v, %inp[%t * 24 + %r * 6 + %c, %b, %e] : memref<2048x1x16xi8, #loop.scope<vta.inp>>
          }
        }
      }
    }
  }
  func.return
}

// CHECK-LABEL: func.func @load_inp
// CHECK:         loop.for "tile" %[[T:.*]] = 0 to 2 {
// CHECK-NEXT:      loop.intrinsic "vta.load_inp"(%inp[%[[T]] * 24, 0, 0], %data[0, 0, %[[T]] * 2 - 1, -1, 0, 0]) params {rows = 4 : i64, cols = 6 : i64, row_dim = 2 : i64, pad} : memref<2048x1x16xi8, #loop.scope<vta.inp>>, memref<1x1x4x4x1x16xi8>
// CHECK-NEXT:    }

// Weights: the window columns run over (channel block, ky, kx), which are contiguous.

func.func @load_wgt(%weight: memref<2x2x3x3x16x16xi8>) {
  %wb = loop.alloc : memref<1024x16x16xi8, #loop.scope<vta.wgt>>
  loop.for "lw.r" %r = 0 to 2 {
    loop.for "lw.c" %c = 0 to 18 {
      loop.for "lw.b" %b = 0 to 16 {
        loop.for "lw.e" %e = 0 to 16 {
          %x = loop.load %weight[%r, %c floordiv 9, %c floordiv 3 mod 3, %c mod 3, %b, %e] : memref<2x2x3x3x16x16xi8>
          loop.store %x, %wb[%r * 18 + %c, %b, %e] : memref<1024x16x16xi8, #loop.scope<vta.wgt>>
        }
      }
    }
  }
  func.return
}

// CHECK-LABEL: func.func @load_wgt
// CHECK-NEXT:    %wb = loop.alloc
// CHECK-NEXT:    loop.intrinsic "vta.load_wgt"(%wb[0, 0, 0], %weight[0, 0, 0, 0, 0, 0]) params {rows = 2 : i64, cols = 18 : i64, row_dim = 0 : i64} : memref<1024x16x16xi8, #loop.scope<vta.wgt>>, memref<2x2x3x3x16x16xi8>
// CHECK-NEXT:    func.return

// Store: accumulators narrowed to int8, rows = output channel blocks.

func.func @store(%out: memref<1x2x4x4x1x16xi8>) {
  %acc = loop.alloc : memref<2048x1x16xi32, #loop.scope<vta.acc>>
  loop.for "st.r" %r = 0 to 2 {
    loop.for "st.c" %c = 0 to 8 {
      loop.for "st.b" %b = 0 to 1 {
        loop.for "st.e" %e = 0 to 16 {
          %x = loop.load %acc[%r * 8 + %c, %b, %e] : memref<2048x1x16xi32, #loop.scope<vta.acc>>
          %y = arith.trunci %x : i32 to i8
          loop.store %y, %out[0, %r, 2 + %c floordiv 4, %c mod 4, %b, %e] : memref<1x2x4x4x1x16xi8>
        }
      }
    }
  }
  func.return
}

// CHECK-LABEL: func.func @store
// CHECK:         loop.intrinsic "vta.store"(%out[0, 0, 2, 0, 0, 0], %acc[0, 0, 0]) params {rows = 2 : i64, cols = 8 : i64, row_dim = 1 : i64} : memref<1x2x4x4x1x16xi8>, memref<2048x1x16xi32, #loop.scope<vta.acc>>
// CHECK-NOT:     loop.load
