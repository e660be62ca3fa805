// RUN: xweave-opt %s -p 'tensorize{intrinsic="vta.gemm" loop="gemm.b"}' | filecheck %s
// RUN: not xweave-opt %s -p 'tensorize{intrinsic="vta.gemm" loop="nope"}' 2>&1 | filecheck %s --check-prefix=NONE

// tensorize{intrinsic=vta.gemm loop=L}: the b/o/k nest computes acc[b, o] += inp[b, k] *
// wgt[o, k] in the declared scopes, so it becomes one call whose operands start where
// the nest's first iteration reads them. The loop %t around it (a different name) stays.

func.func @gemm(%acc: memref<64x1x16xi32, #loop.scope<vta.acc>>, %inp: memref<64x1x16xi8, #loop.scope<vta.inp>>, %wgt: memref<8x16x16xi8, #loop.scope<vta.wgt>>) {
  loop.for "tile" %t = 0 to 4 {
    loop.for "gemm.b" %b = 0 to 1 {
      loop.for "gemm.o" %o = 0 to 16 {
        loop.for "gemm.k" %k = 0 to 16 {
          %x = loop.load %acc[%t * 2 + 1, %b, %o] : memref<64x1x16xi32, #loop.scope<vta.acc>>
          %a = loop.load %inp[%t, %b, %k] : memref<64x1x16xi8, #loop.scope<vta.inp>>
          %w = loop.load %wgt[%t + 3, %o, %k] : memref<8x16x16xi8, #loop.scope<vta.wgt>>
          %ae = arith.extsi %a : i8 to i32
          %we = arith.extsi %w : i8 to i32
          %p = arith.muli %we, %ae : i32
          %s = arith.addi %x, %p : i32
          loop.store %s, %acc[%t * 2 + 1, %b, %o] : memref<64x1x16xi32, #loop.scope<vta.acc>>
        }
      }
    }
  }
  func.return
}

// CHECK-LABEL: func.func @gemm
// CHECK:         loop.for "tile" %{{.*}} = 0 to 4 {
// CHECK-NEXT:      loop.intrinsic "vta.gemm"(%acc[%{{.*}} * 2 + 1, 0, 0], %inp[%{{.*}}, 0, 0], %wgt[%{{.*}} + 3, 0, 0]) : memref<64x1x16xi32, #loop.scope<vta.acc>>, memref<64x1x16xi8, #loop.scope<vta.inp>>, memref<8x16x16xi8, #loop.scope<vta.wgt>>
// CHECK-NEXT:    }
// CHECK-NOT:     gemm.o

// The loop "copy.i" of @other has another name: it is left alone.

func.func @other(%a: memref<4xi32>) {
  loop.for "copy.i" %i = 0 to 4 {
    %v = loop.load %a[%i] : memref<4xi32>
    loop.store %v, %a[%i] : memref<4xi32>
  }
  func.return
}

// CHECK-LABEL: func.func @other
// CHECK-NEXT:    loop.for "copy.i"
// CHECK-NEXT:      loop.load
// CHECK-NEXT:      loop.store

// NONE: tensorize vta.gemm: no loop named 'nope'
