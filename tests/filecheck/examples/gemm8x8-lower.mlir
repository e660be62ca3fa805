// RUN: env PYTHONPATH=%S/../../../examples xweave-opt --load-plugin gemm8x8 %s -p 'tensorize{intrinsic="gemm8x8.fill_zero" loop="init.i"},tensorize{intrinsic="gemm8x8.load_tile" loop="ldx.i"},tensorize{intrinsic="gemm8x8.load_tile" loop="ldw.i"},tensorize{intrinsic="gemm8x8.gemm_add" loop="mm.i"},tensorize{intrinsic="gemm8x8.store_tile" loop="st.i"}' | filecheck %s --check-prefix=TENSORIZED
// RUN: env PYTHONPATH=%S/../../../examples xweave-opt --load-plugin gemm8x8 %s -p 'tensorize{intrinsic="gemm8x8.fill_zero" loop="init.i"},tensorize{intrinsic="gemm8x8.load_tile" loop="ldx.i"},tensorize{intrinsic="gemm8x8.load_tile" loop="ldw.i"},tensorize{intrinsic="gemm8x8.gemm_add" loop="mm.i"},tensorize{intrinsic="gemm8x8.store_tile" loop="st.i"},convert-loop-to-gemm8x8' | filecheck %s
// RUN: not env PYTHONPATH=%S/../../../examples xweave-opt --load-plugin gemm8x8 %s -p 'tensorize{intrinsic="gemm8x8.gemm_add" loop="ldx.i"}' 2>&1 | filecheck %s --check-prefix=MISMATCH

// A 8x16 . (8x16)^T dense kernel over 8x8 tiles (as examples/gemm8x8/dense.py schedules
// it): the generic tensorize pass turns each scalar nest into a call of the unit's
// intrinsic, found through the accelerator registry; the unit's lowering rule turns the
// calls into its ISA, loops unrolled, with DRAM addresses and scratchpad slots.

func.func @dense(%x: memref<1x2x8x8xi8>, %w: memref<1x2x8x8xi8>, %y: memref<1x1x8x8xi32>) {
  %buf = loop.alloc : memref<4x8x8xi8, #loop.scope<gemm8x8.buf>>
  %acc = loop.alloc : memref<1x8x8xi32, #loop.scope<gemm8x8.acc>>
  loop.for "init.i" %i = 0 to 8 {
    loop.for "init.j" %j = 0 to 8 {
      %z = arith.constant 0 : i32
      loop.store %z, %acc[0, %i, %j] : memref<1x8x8xi32, #loop.scope<gemm8x8.acc>>
    }
  }
  loop.for "dense.k" %kt = 0 to 2 {
    loop.for "ldx.i" %i = 0 to 8 {
      loop.for "ldx.k" %k = 0 to 8 {
        %v = loop.load %x[0, %kt, %i, %k] : memref<1x2x8x8xi8>
        loop.store %v, %buf[%kt, %i, %k] : memref<4x8x8xi8, #loop.scope<gemm8x8.buf>>
      }
    }
    loop.for "ldw.i" %j = 0 to 8 {
      loop.for "ldw.k" %k = 0 to 8 {
        %v = loop.load %w[0, %kt, %j, %k] : memref<1x2x8x8xi8>
        loop.store %v, %buf[%kt + 2, %j, %k] : memref<4x8x8xi8, #loop.scope<gemm8x8.buf>>
      }
    }
    loop.for "mm.i" %i = 0 to 8 {
      loop.for "mm.j" %j = 0 to 8 {
        loop.for "mm.k" %k = 0 to 8 {
          %old = loop.load %acc[0, %i, %j] : memref<1x8x8xi32, #loop.scope<gemm8x8.acc>>
          %a = loop.load %buf[%kt, %i, %k] : memref<4x8x8xi8, #loop.scope<gemm8x8.buf>>
          %ae = arith.extsi %a : i8 to i32
          %b = loop.load %buf[%kt + 2, %j, %k] : memref<4x8x8xi8, #loop.scope<gemm8x8.buf>>
          %be = arith.extsi %b : i8 to i32
          %p = arith.muli %ae, %be : i32
          %s = arith.addi %old, %p : i32
          loop.store %s, %acc[0, %i, %j] : memref<1x8x8xi32, #loop.scope<gemm8x8.acc>>
        }
      }
    }
  }
  loop.for "st.i" %i = 0 to 8 {
    loop.for "st.j" %j = 0 to 8 {
      %v = loop.load %acc[0, %i, %j] : memref<1x8x8xi32, #loop.scope<gemm8x8.acc>>
      loop.store %v, %y[0, 0, %i, %j] : memref<1x1x8x8xi32>
    }
  }
  func.return
}

// TENSORIZED:      loop.intrinsic "gemm8x8.fill_zero"(%acc[0, 0, 0])
// TENSORIZED:      loop.for "dense.k" %kt = 0 to 2 {
// TENSORIZED-NEXT:   loop.intrinsic "gemm8x8.load_tile"(%buf[%kt, 0, 0], %x[0, %kt, 0, 0])
// TENSORIZED-NEXT:   loop.intrinsic "gemm8x8.load_tile"(%buf[%kt + 2, 0, 0], %w[0, %kt, 0, 0])
// TENSORIZED-NEXT:   loop.intrinsic "gemm8x8.gemm_add"(%acc[0, 0, 0], %buf[%kt, 0, 0], %buf[%kt + 2, 0, 0])
// TENSORIZED-NEXT: }
// TENSORIZED-NEXT: loop.intrinsic "gemm8x8.store_tile"(%y[0, 0, 0, 0], %acc[0, 0, 0])
// TENSORIZED-NOT:  loop.load

// x at DRAM 0 (2 tiles of 64 B), w at 256, y at 512.
// CHECK:      gemm8x8.program {
// CHECK-NEXT:   gemm8x8.fill_zero acc[0]
// CHECK-NEXT:   gemm8x8.load_tile buf[0], dram[0]
// CHECK-NEXT:   gemm8x8.load_tile buf[2], dram[256]
// CHECK-NEXT:   gemm8x8.gemm_add acc[0], buf[0], buf[2]
// CHECK-NEXT:   gemm8x8.load_tile buf[1], dram[64]
// CHECK-NEXT:   gemm8x8.load_tile buf[3], dram[320]
// CHECK-NEXT:   gemm8x8.gemm_add acc[0], buf[1], buf[3]
// CHECK-NEXT:   gemm8x8.store_tile dram[512], acc[0]
// CHECK-NEXT: } {kernel = "dense"}
// CHECK-NOT:  func.func

// MISMATCH: tensorize gemm8x8.gemm_add at loop 'ldx.i': a perfect nest of 3 loops is needed, found 2
