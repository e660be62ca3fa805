// RUN: env PYTHONPATH=%S/../../../examples xweave-opt --load-plugin gemm8x8 %s | filecheck %s
// RUN: env PYTHONPATH=%S/../../../examples xweave-opt --load-plugin gemm8x8 %s --print-op-generic | env PYTHONPATH=%S/../../../examples xweave-opt --load-plugin gemm8x8 | filecheck %s

// The ISA of examples/gemm8x8 (a second accelerator added through the designer API)
// prints, parses and round-trips through the generic form.

gemm8x8.program {
  gemm8x8.load_acc acc[0], dram[512]
  gemm8x8.fill_zero acc[1]
  gemm8x8.load_tile buf[0], dram[0]
  gemm8x8.load_tile buf[7], dram[64]
  gemm8x8.gemm_add acc[0], buf[0], buf[7]
  gemm8x8.store_tile dram[768], acc[0]
} {kernel = "dense"}

// CHECK:      gemm8x8.program {
// CHECK-NEXT:   gemm8x8.load_acc acc[0], dram[512]
// CHECK-NEXT:   gemm8x8.fill_zero acc[1]
// CHECK-NEXT:   gemm8x8.load_tile buf[0], dram[0]
// CHECK-NEXT:   gemm8x8.load_tile buf[7], dram[64]
// CHECK-NEXT:   gemm8x8.gemm_add acc[0], buf[0], buf[7]
// CHECK-NEXT:   gemm8x8.store_tile dram[768], acc[0]
// CHECK-NEXT: } {kernel = "dense"}
