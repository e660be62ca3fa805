// RUN: xweave-opt %s --split-input-file -p virtual-threads,convert-loop-to-vta | filecheck %s

// convert-loop-to-vta (after virtual-threads): loops are unrolled into the instruction
// stream; each intrinsic call becomes one instruction whose micro-op kernel is loaded
// once into the uop scratchpad; dependency pushes become push flags on the last
// instruction of the producing stage (or token-only no-ops, x 0), pops become pop flags
// on the next instruction of the consuming stage. DRAM addresses follow the layout of
// the kernel arguments; the program ends by waiting for load and store, then FINISH.

func.func @two_threads(%data: memref<8x1x16xi8>, %w: memref<2x1x16x16xi8>, %out: memref<4x1x16xi8>) {
  %inp = loop.alloc : memref<2048x1x16xi8, #loop.scope<vta.inp>>
  %wb = loop.alloc : memref<1024x16x16xi8, #loop.scope<vta.wgt>>
  %acc = loop.alloc : memref<2048x1x16xi32, #loop.scope<vta.acc>>
  loop.for "tile" %t = 0 to 2 {
    loop.for "vt" %v = 0 to 2 vthread {
      loop.intrinsic "vta.fill_zero"(%acc[%v, 0, 0]) : memref<2048x1x16xi32, #loop.scope<vta.acc>>
      loop.for "rc" %c = 0 to 2 {
        loop.intrinsic "vta.load_inp"(%inp[%v, 0, 0], %data[%t * 4 + %v * 2 + %c, 0, 0]) params {cols = 1 : i64} : memref<2048x1x16xi8, #loop.scope<vta.inp>>, memref<8x1x16xi8>
        loop.intrinsic "vta.load_wgt"(%wb[%v, 0, 0], %w[%c, 0, 0, 0]) params {cols = 1 : i64} : memref<1024x16x16xi8, #loop.scope<vta.wgt>>, memref<2x1x16x16xi8>
        loop.intrinsic "vta.gemm"(%acc[%v, 0, 0], %inp[%v, 0, 0], %wb[%v, 0, 0]) : memref<2048x1x16xi32, #loop.scope<vta.acc>>, memref<2048x1x16xi8, #loop.scope<vta.inp>>, memref<1024x16x16xi8, #loop.scope<vta.wgt>>
      }
      loop.intrinsic "vta.alu_imm"(%acc[%v, 0, 0]) params {op = "max", imm = 0 : i64} : memref<2048x1x16xi32, #loop.scope<vta.acc>>
      loop.intrinsic "vta.store"(%out[%t * 2 + %v, 0, 0], %acc[%v, 0, 0]) params {cols = 1 : i64} : memref<4x1x16xi8>, memref<2048x1x16xi32, #loop.scope<vta.acc>>
    }
  }
  func.return
}


// CHECK:      vta.program @two_threads attributes {xweave.dram_layout = ["inp@0:8x1x16", "wgt@1:2x1x16x16", "out@48:4x1x16"]} {
// CHECK-NEXT:   vta.uop_buffer {
// CHECK-NEXT:     vta.uop 0, 0, 0
// CHECK-NEXT:     vta.uop 1, 0, 0
// CHECK-NEXT:     vta.uop 1, 1, 1
// CHECK-NEXT:   }
// Primed tokens: compute->load and store->compute, one per thread.
// CHECK-NEXT:   vta.load uop sram 0 dram 0 y 0 x 0 stride 0 deps(push_prev)
// CHECK-NEXT:   vta.load uop sram 0 dram 0 y 0 x 0 stride 0 deps(push_prev)
// CHECK-NEXT:   vta.store out sram 0 dram 0 y 0 x 0 stride 0 deps(push_prev)
// CHECK-NEXT:   vta.store out sram 0 dram 0 y 0 x 0 stride 0 deps(push_prev)
// CHECK-NEXT:   vta.load uop sram 0 dram 0 y 1 x 1 stride 1 deps(pop_next)
// CHECK-NEXT:   vta.gemm reset uop[0:1] iter(1, 1) dst(0, 0) src(0, 0) wgt(0, 0)
// CHECK-NEXT:   vta.load uop sram 1 dram 1 y 1 x 1 stride 1 deps(pop_next)
// CHECK-NEXT:   vta.gemm reset uop[1:2] iter(1, 1) dst(0, 0) src(0, 0) wgt(0, 0)
// Thread 0 and thread 1 load into their own halves; each load group signals compute.
// CHECK-NEXT:   vta.load inp sram 0 dram 0 y 1 x 1 stride 1 deps(pop_next)
// CHECK-NEXT:   vta.load wgt sram 0 dram 1 y 1 x 1 stride 1 deps(push_next)
// CHECK-NEXT:   vta.load inp sram 1 dram 2 y 1 x 1 stride 1 deps(pop_next)
// CHECK-NEXT:   vta.load wgt sram 1 dram 1 y 1 x 1 stride 1 deps(push_next)
// CHECK-NEXT:   vta.gemm uop[0:1] iter(1, 1) dst(0, 0) src(0, 0) wgt(0, 0) deps(pop_prev, push_prev)
// CHECK:        vta.alu max uop[0:1] iter(1, 1) dst(0, 0) src(0, 0) imm 0 deps(push_next)
// CHECK-NEXT:   vta.alu max uop[1:2] iter(1, 1) dst(0, 0) src(0, 0) imm 0 deps(push_next)
// CHECK-NEXT:   vta.store out sram 0 dram 48 y 1 x 1 stride 1 deps(pop_prev, push_prev)
// CHECK-NEXT:   vta.store out sram 1 dram 49 y 1 x 1 stride 1 deps(pop_prev, push_prev)
// CHECK:        vta.store out sram 1 dram 51 y 1 x 1 stride 1 deps(pop_prev, push_prev)
// CHECK:        vta.finish
// CHECK-NEXT: }

// -----

// A micro-kernel loop nest folds into ONE instruction: the outer two loops become the
// hardware loop (iter_out x iter_in, with index factors measured from the calls), the
// rest becomes micro-ops.

func.func @fold(%out: memref<2x1x16xi8>) {
  %inp = loop.alloc : memref<2048x1x16xi8, #loop.scope<vta.inp>>
  %wb = loop.alloc : memref<1024x16x16xi8, #loop.scope<vta.wgt>>
  %acc = loop.alloc : memref<2048x1x16xi32, #loop.scope<vta.acc>>
  loop.for "r" %r = 0 to 4 {
    loop.for "c" %c = 0 to 8 {
      loop.for "k" %k = 0 to 3 {
        loop.intrinsic "vta.gemm"(%acc[%r * 8 + %c, 0, 0], %inp[%r * 10 + %c * 2 + %k, 0, 0], %wb[%k, 0, 0]) : memref<2048x1x16xi32, #loop.scope<vta.acc>>, memref<2048x1x16xi8, #loop.scope<vta.inp>>, memref<1024x16x16xi8, #loop.scope<vta.wgt>>
      }
    }
  }
  loop.intrinsic "vta.store"(%out[0, 0, 0], %acc[0, 0, 0]) params {cols = 2 : i64} : memref<2x1x16xi8>, memref<2048x1x16xi32, #loop.scope<vta.acc>>
  func.return
}

// CHECK-LABEL: vta.program @fold
// CHECK:         vta.uop 0, 0, 0
// CHECK-NEXT:    vta.uop 0, 1, 1
// CHECK-NEXT:    vta.uop 0, 2, 2
// CHECK:         vta.gemm uop[0:3] iter(4, 8) dst(8, 1) src(10, 2) wgt(0, 0) deps(push_next)
// CHECK-NEXT:    vta.store out sram 0 dram 0 y 1 x 2 stride 2 deps(pop_prev, push_prev)
