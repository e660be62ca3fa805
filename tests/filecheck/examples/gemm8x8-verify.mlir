// RUN: env PYTHONPATH=%S/../../../examples xweave-opt --load-plugin gemm8x8 %s --split-input-file --verify-diagnostics | filecheck %s

// One invalid op per verifier message of the gemm8x8 dialect (default config: 8 operand
// tiles, 4 accumulator tiles; DRAM addresses aligned to the tile moved).

gemm8x8.gemm_add acc[0], buf[8], buf[1]

// CHECK: gemm8x8.gemm_add: buf slot 8 out of range [0, 8)

// -----

gemm8x8.fill_zero acc[4]

// CHECK: gemm8x8.fill_zero: acc slot 4 out of range [0, 4)

// -----

gemm8x8.load_tile buf[0], dram[32]

// CHECK: gemm8x8.load_tile: DRAM address 32 must be a non-negative multiple of 64

// -----

gemm8x8.store_tile dram[64], acc[0]

// CHECK: gemm8x8.store_tile: DRAM address 64 must be a non-negative multiple of 256

// -----

gemm8x8.program {
  "test.op"() : () -> ()
}

// CHECK: gemm8x8.program: test.op is not a gemm8x8 instruction
