// RUN: xweave-opt %s -p virtual-threads | filecheck %s

// virtual-threads: the vthread loop (2 threads) becomes interleaved copies of each
// scope, each with its own tokens: compute->load (the buffers a load overwrites were
// read by the previous GEMM: loop-carried, so primed before "tile" and drained after
// it), load->compute (data ready), compute->store and store->compute (the accumulators
// are free again, cyclic across tiles).

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

// CHECK-LABEL: func.func @two_threads
// CHECK:         loop.dep_push "compute" -> "load"
// CHECK-NEXT:    loop.dep_push "compute" -> "load"
// CHECK-NEXT:    loop.dep_push "store" -> "compute"
// CHECK-NEXT:    loop.dep_push "store" -> "compute"
// CHECK-NEXT:    loop.for "tile" %[[T:.*]] = 0 to 2 {
// CHECK-NEXT:      loop.dep_pop "store" -> "compute"
// CHECK-NEXT:      loop.intrinsic "vta.fill_zero"(%acc[0, 0, 0])
// CHECK-NEXT:      loop.dep_pop "store" -> "compute"
// CHECK-NEXT:      loop.intrinsic "vta.fill_zero"(%acc[1, 0, 0])
// CHECK-NEXT:      loop.for "rc" %[[C:.*]] = 0 to 2 {
// CHECK-NEXT:        loop.dep_pop "compute" -> "load"
// CHECK-NEXT:        loop.intrinsic "vta.load_inp"(%inp[0, 0, 0], %data[%[[T]] * 4 + %[[C]], 0, 0])
// CHECK-NEXT:        loop.intrinsic "vta.load_wgt"(%wb[0, 0, 0], %w[%[[C]], 0, 0, 0])
// CHECK-NEXT:        loop.dep_push "load" -> "compute"
// CHECK-NEXT:        loop.dep_pop "compute" -> "load"
// CHECK-NEXT:        loop.intrinsic "vta.load_inp"(%inp[1, 0, 0], %data[%[[T]] * 4 + 2 + %[[C]], 0, 0])
// CHECK-NEXT:        loop.intrinsic "vta.load_wgt"(%wb[1, 0, 0], %w[%[[C]], 0, 0, 0])
// CHECK-NEXT:        loop.dep_push "load" -> "compute"
// CHECK-NEXT:        loop.dep_pop "load" -> "compute"
// CHECK-NEXT:        loop.intrinsic "vta.gemm"(%acc[0, 0, 0], %inp[0, 0, 0], %wb[0, 0, 0])
// CHECK-NEXT:        loop.dep_push "compute" -> "load"
// CHECK-NEXT:        loop.dep_pop "load" -> "compute"
// CHECK-NEXT:        loop.intrinsic "vta.gemm"(%acc[1, 0, 0], %inp[1, 0, 0], %wb[1, 0, 0])
// CHECK-NEXT:        loop.dep_push "compute" -> "load"
// CHECK-NEXT:      }
// CHECK-NEXT:      loop.intrinsic "vta.alu_imm"(%acc[0, 0, 0])
// CHECK-NEXT:      loop.dep_push "compute" -> "store"
// CHECK-NEXT:      loop.intrinsic "vta.alu_imm"(%acc[1, 0, 0])
// CHECK-NEXT:      loop.dep_push "compute" -> "store"
// CHECK-NEXT:      loop.dep_pop "compute" -> "store"
// CHECK-NEXT:      loop.intrinsic "vta.store"(%out[%[[T]] * 2, 0, 0], %acc[0, 0, 0])
// CHECK-NEXT:      loop.dep_push "store" -> "compute"
// CHECK-NEXT:      loop.dep_pop "compute" -> "store"
// CHECK-NEXT:      loop.intrinsic "vta.store"(%out[%[[T]] * 2 + 1, 0, 0], %acc[1, 0, 0])
// CHECK-NEXT:      loop.dep_push "store" -> "compute"
// CHECK-NEXT:    }
// CHECK-NEXT:    loop.dep_pop "compute" -> "load"
// CHECK-NEXT:    loop.dep_pop "compute" -> "load"
// CHECK-NEXT:    loop.dep_pop "store" -> "compute"
// CHECK-NEXT:    loop.dep_pop "store" -> "compute"
// CHECK-NOT:     vthread

// Without a vthread loop the same kernel is synchronized as one thread (serialized):
// one token per link, nothing replicated.

func.func @serial(%data: memref<8x1x16xi8>, %w: memref<2x1x16x16xi8>, %out: memref<4x1x16xi8>) {
  %inp = loop.alloc : memref<2048x1x16xi8, #loop.scope<vta.inp>>
  %wb = loop.alloc : memref<1024x16x16xi8, #loop.scope<vta.wgt>>
  %acc = loop.alloc : memref<2048x1x16xi32, #loop.scope<vta.acc>>
  loop.for "tile" %t = 0 to 4 {
    loop.intrinsic "vta.fill_zero"(%acc[0, 0, 0]) : memref<2048x1x16xi32, #loop.scope<vta.acc>>
    loop.for "rc" %c = 0 to 2 {
      loop.intrinsic "vta.load_inp"(%inp[0, 0, 0], %data[%t * 2 + %c, 0, 0]) params {cols = 1 : i64} : memref<2048x1x16xi8, #loop.scope<vta.inp>>, memref<8x1x16xi8>
      loop.intrinsic "vta.load_wgt"(%wb[0, 0, 0], %w[%c, 0, 0, 0]) params {cols = 1 : i64} : memref<1024x16x16xi8, #loop.scope<vta.wgt>>, memref<2x1x16x16xi8>
      loop.intrinsic "vta.gemm"(%acc[0, 0, 0], %inp[0, 0, 0], %wb[0, 0, 0]) : memref<2048x1x16xi32, #loop.scope<vta.acc>>, memref<2048x1x16xi8, #loop.scope<vta.inp>>, memref<1024x16x16xi8, #loop.scope<vta.wgt>>
    }
    loop.intrinsic "vta.store"(%out[%t, 0, 0], %acc[0, 0, 0]) params {cols = 1 : i64} : memref<4x1x16xi8>, memref<2048x1x16xi32, #loop.scope<vta.acc>>
  }
  func.return
}

// CHECK-LABEL: func.func @serial
// CHECK:         loop.dep_push "compute" -> "load"
// CHECK-NEXT:    loop.dep_push "store" -> "compute"
// CHECK-NEXT:    loop.for "tile"
// CHECK-NEXT:      loop.dep_pop "store" -> "compute"
// CHECK-NEXT:      loop.intrinsic "vta.fill_zero"
// CHECK-NEXT:      loop.for "rc"
// CHECK-NEXT:        loop.dep_pop "compute" -> "load"
// CHECK-NEXT:        loop.intrinsic "vta.load_inp"
// CHECK-NEXT:        loop.intrinsic "vta.load_wgt"
// CHECK-NEXT:        loop.dep_push "load" -> "compute"
// CHECK-NEXT:        loop.dep_pop "load" -> "compute"
// CHECK-NEXT:        loop.intrinsic "vta.gemm"
// CHECK-NEXT:        loop.dep_push "compute" -> "load"
// CHECK-NEXT:      }
// CHECK-NEXT:      loop.dep_push "compute" -> "store"
// CHECK-NEXT:      loop.dep_pop "compute" -> "store"
// CHECK-NEXT:      loop.intrinsic "vta.store"
// CHECK-NEXT:      loop.dep_push "store" -> "compute"
// CHECK-NEXT:    }
// CHECK-NEXT:    loop.dep_pop "compute" -> "load"
// CHECK-NEXT:    loop.dep_pop "store" -> "compute"
// CHECK-NEXT:    func.return

// A kernel without accelerator intrinsics is left alone.
func.func @plain(%a: memref<4xi32>) {
  loop.for "p.i" %i = 0 to 4 vthread {
    %v = loop.load %a[%i] : memref<4xi32>
    loop.store %v, %a[%i] : memref<4xi32>
  }
  func.return
}
// CHECK-LABEL: func.func @plain
// CHECK-NEXT:    loop.for "p.i" %{{.*}} = 0 to 4 vthread {
