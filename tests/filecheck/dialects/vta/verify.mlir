// RUN: xweave-opt %s --split-input-file --verify-diagnostics | filecheck %s

// One invalid op per verifier message of the vta dialect (generic form, so that the
// custom parser cannot reject them first). Field ranges are those of the default
// HardwareConfig: 16-bit sram/size/stride, 32-bit dram, 4-bit pads, 13/14-bit uop range,
// 14-bit loop extents, 11-bit acc/inp and 10-bit wgt indices, signed 16-bit imm.

"vta.load"() <{memory_type = #vta<memory_type out>, sram_base = 0 : i64, dram_base = 0 : i64, y_size = 1 : i64, x_size = 1 : i64, x_stride = 1 : i64, y_pad_0 = 0 : i64, y_pad_1 = 0 : i64, x_pad_0 = 0 : i64, x_pad_1 = 0 : i64}> : () -> ()

// CHECK: cannot load into 'out' (expected uop, wgt, inp or acc)

// -----

"vta.store"() <{memory_type = #vta<memory_type inp>, sram_base = 0 : i64, dram_base = 0 : i64, y_size = 1 : i64, x_size = 1 : i64, x_stride = 1 : i64}> : () -> ()

// CHECK: can only store from 'out', not 'inp'

// -----

"vta.load"() <{memory_type = #vta<memory_type inp>, sram_base = 65536 : i64, dram_base = 0 : i64, y_size = 1 : i64, x_size = 1 : i64, x_stride = 1 : i64, y_pad_0 = 0 : i64, y_pad_1 = 0 : i64, x_pad_0 = 0 : i64, x_pad_1 = 0 : i64}> : () -> ()

// CHECK: sram_base = 65536 does not fit in 16 bits (expected 0 <= sram_base < 65536)

// -----

"vta.load"() <{memory_type = #vta<memory_type inp>, sram_base = 0 : i64, dram_base = 4294967296 : i64, y_size = 1 : i64, x_size = 1 : i64, x_stride = 1 : i64, y_pad_0 = 0 : i64, y_pad_1 = 0 : i64, x_pad_0 = 0 : i64, x_pad_1 = 0 : i64}> : () -> ()

// CHECK: dram_base = 4294967296 does not fit in 32 bits (expected 0 <= dram_base < 4294967296)

// -----

"vta.load"() <{memory_type = #vta<memory_type inp>, sram_base = 0 : i64, dram_base = 0 : i64, y_size = 1 : i64, x_size = 65536 : i64, x_stride = 1 : i64, y_pad_0 = 0 : i64, y_pad_1 = 0 : i64, x_pad_0 = 0 : i64, x_pad_1 = 0 : i64}> : () -> ()

// CHECK: x_size = 65536 does not fit in 16 bits (expected 0 <= x_size < 65536)

// -----

"vta.store"() <{memory_type = #vta<memory_type out>, sram_base = 0 : i64, dram_base = 0 : i64, y_size = 1 : i64, x_size = 1 : i64, x_stride = 65536 : i64}> : () -> ()

// CHECK: x_stride = 65536 does not fit in 16 bits (expected 0 <= x_stride < 65536)

// -----

"vta.load"() <{memory_type = #vta<memory_type inp>, sram_base = 0 : i64, dram_base = 0 : i64, y_size = 1 : i64, x_size = 1 : i64, x_stride = 1 : i64, y_pad_0 = 16 : i64, y_pad_1 = 0 : i64, x_pad_0 = 0 : i64, x_pad_1 = 0 : i64}> : () -> ()

// CHECK: y_pad_0 = 16 does not fit in 4 bits (expected 0 <= y_pad_0 < 16)

// -----

"vta.load"() <{memory_type = #vta<memory_type wgt>, sram_base = 0 : i64, dram_base = 0 : i64, y_size = 1 : i64, x_size = 1 : i64, x_stride = 1 : i64, y_pad_0 = 0 : i64, y_pad_1 = 0 : i64, x_pad_0 = 0 : i64, x_pad_1 = 0 : i64, pop_prev}> : () -> ()

// CHECK: a load of wgt runs in the load module, which has no previous module: pop_prev/push_prev are not allowed

// -----

"vta.load"() <{memory_type = #vta<memory_type inp>, sram_base = 0 : i64, dram_base = 0 : i64, y_size = 1 : i64, x_size = 1 : i64, x_stride = 1 : i64, y_pad_0 = 0 : i64, y_pad_1 = 0 : i64, x_pad_0 = 0 : i64, x_pad_1 = 0 : i64, push_prev}> : () -> ()

// CHECK: a load of inp runs in the load module, which has no previous module: pop_prev/push_prev are not allowed

// -----

"vta.load"() <{memory_type = #vta<memory_type uop>, sram_base = 0 : i64, dram_base = 0 : i64, y_size = 1 : i64, x_size = 4 : i64, x_stride = 4 : i64, y_pad_0 = 0 : i64, y_pad_1 = 0 : i64, x_pad_0 = 1 : i64, x_pad_1 = 0 : i64}> : () -> ()

// CHECK: uop loads take no padding

// -----

"vta.load"() <{memory_type = #vta<memory_type inp>, sram_base = 2000 : i64, dram_base = 0 : i64, y_size = 7 : i64, x_size = 7 : i64, x_stride = 7 : i64, y_pad_0 = 1 : i64, y_pad_1 = 1 : i64, x_pad_0 = 1 : i64, x_pad_1 = 1 : i64}> : () -> ()

// CHECK: inp elements [2000, 2081) exceed the inp scratchpad (depth 2048)

// -----

"vta.store"() <{memory_type = #vta<memory_type out>, sram_base = 2040 : i64, dram_base = 0 : i64, y_size = 1 : i64, x_size = 16 : i64, x_stride = 16 : i64}> : () -> ()

// CHECK: out elements [2040, 2056) exceed the out scratchpad (depth 2048)

// -----

"vta.store"() <{memory_type = #vta<memory_type out>, sram_base = 0 : i64, dram_base = 0 : i64, y_size = 1 : i64, x_size = 1 : i64, x_stride = 1 : i64, push_next}> : () -> ()

// CHECK: the store module has no next module: pop_next/push_next are not allowed

// -----

"vta.gemm"() <{uop_bgn = 4 : i64, uop_end = 4 : i64, iter_out = 1 : i64, iter_in = 1 : i64, dst_factor_out = 0 : i64, dst_factor_in = 0 : i64, src_factor_out = 0 : i64, src_factor_in = 0 : i64, wgt_factor_out = 0 : i64, wgt_factor_in = 0 : i64}> : () -> ()

// CHECK: uop_end (4) must be greater than uop_bgn (4)

// -----

"vta.gemm"() <{uop_bgn = 8192 : i64, uop_end = 8193 : i64, iter_out = 1 : i64, iter_in = 1 : i64, dst_factor_out = 0 : i64, dst_factor_in = 0 : i64, src_factor_out = 0 : i64, src_factor_in = 0 : i64, wgt_factor_out = 0 : i64, wgt_factor_in = 0 : i64}> : () -> ()

// CHECK: uop_bgn = 8192 does not fit in 13 bits (expected 0 <= uop_bgn < 8192)

// -----

"vta.alu"() <{alu_opcode = #vta<alu_opcode add>, uop_bgn = 8000 : i64, uop_end = 8193 : i64, iter_out = 1 : i64, iter_in = 1 : i64, dst_factor_out = 0 : i64, dst_factor_in = 0 : i64, src_factor_out = 0 : i64, src_factor_in = 0 : i64}> : () -> ()

// CHECK: uop_end (8193) exceeds the uop scratchpad depth (8192)

// -----

"vta.gemm"() <{uop_bgn = 0 : i64, uop_end = 1 : i64, iter_out = 16384 : i64, iter_in = 1 : i64, dst_factor_out = 0 : i64, dst_factor_in = 0 : i64, src_factor_out = 0 : i64, src_factor_in = 0 : i64, wgt_factor_out = 0 : i64, wgt_factor_in = 0 : i64}> : () -> ()

// CHECK: iter_out = 16384 does not fit in 14 bits (expected 0 <= iter_out < 16384)

// -----

"vta.gemm"() <{uop_bgn = 0 : i64, uop_end = 1 : i64, iter_out = 1 : i64, iter_in = 1 : i64, dst_factor_out = 2048 : i64, dst_factor_in = 0 : i64, src_factor_out = 0 : i64, src_factor_in = 0 : i64, wgt_factor_out = 0 : i64, wgt_factor_in = 0 : i64}> : () -> ()

// CHECK: dst_factor_out = 2048 does not fit in 11 bits (expected 0 <= dst_factor_out < 2048)

// -----

"vta.gemm"() <{uop_bgn = 0 : i64, uop_end = 1 : i64, iter_out = 1 : i64, iter_in = 1 : i64, dst_factor_out = 0 : i64, dst_factor_in = 0 : i64, src_factor_out = 0 : i64, src_factor_in = 2048 : i64, wgt_factor_out = 0 : i64, wgt_factor_in = 0 : i64}> : () -> ()

// CHECK: src_factor_in = 2048 does not fit in 11 bits (expected 0 <= src_factor_in < 2048)

// -----

"vta.gemm"() <{uop_bgn = 0 : i64, uop_end = 1 : i64, iter_out = 1 : i64, iter_in = 1 : i64, dst_factor_out = 0 : i64, dst_factor_in = 0 : i64, src_factor_out = 0 : i64, src_factor_in = 0 : i64, wgt_factor_out = 1024 : i64, wgt_factor_in = 0 : i64}> : () -> ()

// CHECK: wgt_factor_out = 1024 does not fit in 10 bits (expected 0 <= wgt_factor_out < 1024)

// -----

"vta.alu"() <{alu_opcode = #vta<alu_opcode add>, uop_bgn = 0 : i64, uop_end = 1 : i64, iter_out = 1 : i64, iter_in = 1 : i64, dst_factor_out = 0 : i64, dst_factor_in = 0 : i64, src_factor_out = 0 : i64, src_factor_in = 0 : i64, imm = 32768 : i64}> : () -> ()

// CHECK: imm = 32768 does not fit in 16 signed bits (expected -32768 <= imm <= 32767)

// -----

"vta.alu"() <{alu_opcode = #vta<alu_opcode shr>, uop_bgn = 0 : i64, uop_end = 1 : i64, iter_out = 1 : i64, iter_in = 1 : i64, dst_factor_out = 0 : i64, dst_factor_in = 0 : i64, src_factor_out = 0 : i64, src_factor_in = 0 : i64, imm = 16 : i64}> : () -> ()

// CHECK: imm = 16 does not fit in 5 signed bits (the shift amount of shr) (expected -16 <= imm <= 15)

// -----

"vta.alu"() <{alu_opcode = #vta<alu_opcode mul>, uop_bgn = 0 : i64, uop_end = 1 : i64, iter_out = 1 : i64, iter_in = 1 : i64, dst_factor_out = 0 : i64, dst_factor_in = 0 : i64, src_factor_out = 0 : i64, src_factor_in = 0 : i64, imm = -129 : i64}> : () -> ()

// CHECK: imm = -129 does not fit in 8 signed bits (the factor of mul) (expected -128 <= imm <= 127)

// -----

"vta.finish"() <{pop_next}> : () -> ()

// CHECK: FINISH may not pop dependency tokens (pop_prev/pop_next); pop them on an earlier compute instruction

// -----

"vta.uop"() <{dst = 2048 : i64, src = 0 : i64, wgt = 0 : i64}> : () -> ()

// CHECK: dst = 2048 does not fit in 11 bits (expected 0 <= dst < 2048)

// -----

"vta.uop"() <{dst = 0 : i64, src = 0 : i64, wgt = 1024 : i64}> : () -> ()

// CHECK: wgt = 1024 does not fit in 10 bits (expected 0 <= wgt < 1024)

// -----

"vta.uop_buffer"() ({
  "vta.finish"() : () -> ()
}) : () -> ()

// CHECK: vta.uop_buffer may only hold vta.uop, found vta.finish

// -----

"vta.program"() ({
  "vta.finish"() : () -> ()
  "vta.uop_buffer"() ({
  ^bb0:
  }) : () -> ()
}) : () -> ()

// CHECK: the vta.uop_buffer must be the first op, and there may be only one

// -----

"vta.program"() ({
  "test.op"() : () -> ()
}) : () -> ()

// CHECK: vta.program may only hold a vta.uop_buffer and vta instructions, found test.op

// -----

"vta.program"() ({
  "vta.load"() <{memory_type = #vta<memory_type uop>, sram_base = 0 : i64, dram_base = 0 : i64, y_size = 1 : i64, x_size = 1 : i64, x_stride = 1 : i64, y_pad_0 = 0 : i64, y_pad_1 = 0 : i64, x_pad_0 = 0 : i64, x_pad_1 = 0 : i64}> : () -> ()
}) : () -> ()

// CHECK: a vta.load of uop needs a vta.uop_buffer to load from

// -----

"vta.program"() ({
  "vta.uop_buffer"() ({
    "vta.uop"() <{dst = 0 : i64, src = 0 : i64, wgt = 0 : i64}> : () -> ()
    "vta.uop"() <{dst = 1 : i64, src = 1 : i64, wgt = 0 : i64}> : () -> ()
  }) : () -> ()
  "vta.load"() <{memory_type = #vta<memory_type uop>, sram_base = 0 : i64, dram_base = 1 : i64, y_size = 2 : i64, x_size = 1 : i64, x_stride = 1 : i64, y_pad_0 = 0 : i64, y_pad_1 = 0 : i64, x_pad_0 = 0 : i64, x_pad_1 = 0 : i64}> : () -> ()
}) : () -> ()

// CHECK: a vta.load of uop reads uop addresses up to 3, but the vta.uop_buffer holds 2 micro-ops
