// RUN: not xweave-opt %s -p 'tensorize{intrinsic="vta.gemm" loop="k8.b"}' 2>&1 | filecheck %s --check-prefix=K8
// RUN: not xweave-opt %s -p 'tensorize{intrinsic="vta.gemm" loop="tr.b"}' 2>&1 | filecheck %s --check-prefix=TR
// RUN: not xweave-opt %s -p 'tensorize{intrinsic="vta.gemm" loop="sc.b"}' 2>&1 | filecheck %s --check-prefix=SC
// RUN: not xweave-opt %s -p 'tensorize{intrinsic="vta.gemm" loop="ow.b"}' 2>&1 | filecheck %s --check-prefix=OW
// RUN: not xweave-opt %s -p 'tensorize{intrinsic="vta.nope" loop="ow.b"}' 2>&1 | filecheck %s --check-prefix=NOINTR

// tensorize verifies that the nest really computes the declaration; each RUN line
// targets one of the nests below.

// Wrong reduction extent: k runs to 8, the GEMM core reduces over 16.
func.func @short_k(%acc: memref<4x1x16xi32, #loop.scope<vta.acc>>, %inp: memref<4x1x16xi8, #loop.scope<vta.inp>>, %wgt: memref<4x16x16xi8, #loop.scope<vta.wgt>>) {
  loop.for "k8.b" %b = 0 to 1 {
    loop.for "gemm.o" %o = 0 to 16 {
      loop.for "gemm.k" %k = 0 to 8 {
        %x = loop.load %acc[0, %b, %o] : memref<4x1x16xi32, #loop.scope<vta.acc>>
        %a = loop.load %inp[0, %b, %k] : memref<4x1x16xi8, #loop.scope<vta.inp>>
        %w = loop.load %wgt[0, %o, %k] : memref<4x16x16xi8, #loop.scope<vta.wgt>>
        %ae = arith.extsi %a : i8 to i32
        %we = arith.extsi %w : i8 to i32
        %p = arith.muli %ae, %we : i32
        %s = arith.addi %x, %p : i32
        loop.store %s, %acc[0, %b, %o] : memref<4x1x16xi32, #loop.scope<vta.acc>>
      }
    }
  }
  func.return
}
// K8: tensorize vta.gemm at loop 'k8.b': loop 'gemm.k' runs 0 to 8 step 1, axis 'k' needs 0 to 16

// Transposed weight access: wgt[k, o] instead of wgt[o, k].
func.func @transposed(%acc: memref<4x1x16xi32, #loop.scope<vta.acc>>, %inp: memref<4x1x16xi8, #loop.scope<vta.inp>>, %wgt: memref<4x16x16xi8, #loop.scope<vta.wgt>>) {
  loop.for "tr.b" %b = 0 to 1 {
    loop.for "gemm.o" %o = 0 to 16 {
      loop.for "gemm.k" %k = 0 to 16 {
        %x = loop.load %acc[0, %b, %o] : memref<4x1x16xi32, #loop.scope<vta.acc>>
        %a = loop.load %inp[0, %b, %k] : memref<4x1x16xi8, #loop.scope<vta.inp>>
        %w = loop.load %wgt[0, %k, %o] : memref<4x16x16xi8, #loop.scope<vta.wgt>>
        %ae = arith.extsi %a : i8 to i32
        %we = arith.extsi %w : i8 to i32
        %p = arith.muli %ae, %we : i32
        %s = arith.addi %x, %p : i32
        loop.store %s, %acc[0, %b, %o] : memref<4x1x16xi32, #loop.scope<vta.acc>>
      }
    }
  }
  func.return
}
// TR: tensorize vta.gemm at loop 'tr.b': {{.*}}indexes both

// Wrong scope: the input lives in global memory, not the input scratchpad.
func.func @scope(%acc: memref<4x1x16xi32, #loop.scope<vta.acc>>, %inp: memref<4x1x16xi8>, %wgt: memref<4x16x16xi8, #loop.scope<vta.wgt>>) {
  loop.for "sc.b" %b = 0 to 1 {
    loop.for "gemm.o" %o = 0 to 16 {
      loop.for "gemm.k" %k = 0 to 16 {
        %x = loop.load %acc[0, %b, %o] : memref<4x1x16xi32, #loop.scope<vta.acc>>
        %a = loop.load %inp[0, %b, %k] : memref<4x1x16xi8>
        %w = loop.load %wgt[0, %o, %k] : memref<4x16x16xi8, #loop.scope<vta.wgt>>
        %ae = arith.extsi %a : i8 to i32
        %we = arith.extsi %w : i8 to i32
        %p = arith.muli %ae, %we : i32
        %s = arith.addi %x, %p : i32
        loop.store %s, %acc[0, %b, %o] : memref<4x1x16xi32, #loop.scope<vta.acc>>
      }
    }
  }
  func.return
}
// SC: 'inp' must be in scope vta.inp, but its buffer is in global

// Not a reduction: the product overwrites the accumulator.
func.func @overwrite(%acc: memref<4x1x16xi32, #loop.scope<vta.acc>>, %inp: memref<4x1x16xi8, #loop.scope<vta.inp>>, %wgt: memref<4x16x16xi8, #loop.scope<vta.wgt>>) {
  loop.for "ow.b" %b = 0 to 1 {
    loop.for "gemm.o" %o = 0 to 16 {
      loop.for "gemm.k" %k = 0 to 16 {
        %a = loop.load %inp[0, %b, %k] : memref<4x1x16xi8, #loop.scope<vta.inp>>
        %w = loop.load %wgt[0, %o, %k] : memref<4x16x16xi8, #loop.scope<vta.wgt>>
        %ae = arith.extsi %a : i8 to i32
        %we = arith.extsi %w : i8 to i32
        %p = arith.muli %ae, %we : i32
        loop.store %p, %acc[0, %b, %o] : memref<4x1x16xi32, #loop.scope<vta.acc>>
      }
    }
  }
  func.return
}
// OW: expected an accumulation `out = out + ...`

// NOINTR: accelerator 'vta' has no intrinsic 'vta.nope'
