// RUN: XWEAVE_ROUNDTRIP
// RUN: XWEAVE_GENERIC_ROUNDTRIP

// Every vta op, every memory type, ALU opcode and dependency flag, in custom syntax;
// the first RUN line prints generic and re-parses, the second checks the generic form.
vta.program @all_ops {
  vta.uop_buffer {
    vta.uop 0, 0, 0
    vta.uop 1, 2, 3
    vta.uop 2047, 2047, 1023
  }
  vta.load uop sram 0 dram 0 y 1 x 3 stride 3
  vta.load wgt sram 0 dram 64 y 1 x 9 stride 9 deps(pop_next)
  vta.load inp sram 16 dram 128 y 14 x 14 stride 56 pad(1, 2, 3, 4) deps(push_next)
  vta.load acc sram 0 dram 4294967295 y 1 x 16 stride 16
  vta.load inp sram 0 dram 0 y 0 x 0 stride 0 deps(pop_next, push_next)
  vta.gemm reset uop[0:1] iter(16, 16) dst(16, 1) src(0, 0) wgt(0, 0)
  vta.gemm uop[0:3] iter(16383, 1) dst(2047, 2047) src(2047, 2047) wgt(1023, 1023) deps(pop_prev, pop_next, push_prev, push_next)
  vta.alu min uop[0:1] iter(1, 1) dst(0, 0) src(0, 0) imm -32768
  vta.alu max uop[0:1] iter(1, 1) dst(0, 0) src(0, 0) imm 0
  vta.alu add uop[0:1] iter(2, 3) dst(3, 1) src(3, 1) deps(pop_prev)
  vta.alu shr uop[0:1] iter(1, 1) dst(0, 0) src(0, 0) imm 8
  vta.alu mul uop[0:1] iter(1, 1) dst(0, 0) src(0, 0) imm -3
  vta.alu reset max uop[8191:8192] iter(1, 1) dst(0, 0) src(0, 0) deps(push_next)
  vta.store out sram 0 dram 256 y 16 x 16 stride 32 deps(pop_prev, push_prev)
  vta.finish deps(push_prev, push_next)
}

// CHECK: builtin.module {
// CHECK-NEXT: vta.program @all_ops {
// CHECK-NEXT: vta.uop_buffer {
// CHECK-NEXT: vta.uop 0, 0, 0
// CHECK-NEXT: vta.uop 1, 2, 3
// CHECK-NEXT: vta.uop 2047, 2047, 1023
// CHECK-NEXT: }
// CHECK-NEXT: vta.load uop sram 0 dram 0 y 1 x 3 stride 3
// CHECK-NEXT: vta.load wgt sram 0 dram 64 y 1 x 9 stride 9 deps(pop_next)
// CHECK-NEXT: vta.load inp sram 16 dram 128 y 14 x 14 stride 56 pad(1, 2, 3, 4) deps(push_next)
// CHECK-NEXT: vta.load acc sram 0 dram 4294967295 y 1 x 16 stride 16
// CHECK-NEXT: vta.load inp sram 0 dram 0 y 0 x 0 stride 0 deps(pop_next, push_next)
// CHECK-NEXT: vta.gemm reset uop[0:1] iter(16, 16) dst(16, 1) src(0, 0) wgt(0, 0)
// CHECK-NEXT: vta.gemm uop[0:3] iter(16383, 1) dst(2047, 2047) src(2047, 2047) wgt(1023, 1023) deps(pop_prev, pop_next, push_prev, push_next)
// CHECK-NEXT: vta.alu min uop[0:1] iter(1, 1) dst(0, 0) src(0, 0) imm -32768
// CHECK-NEXT: vta.alu max uop[0:1] iter(1, 1) dst(0, 0) src(0, 0) imm 0
// CHECK-NEXT: vta.alu add uop[0:1] iter(2, 3) dst(3, 1) src(3, 1) deps(pop_prev)
// CHECK-NEXT: vta.alu shr uop[0:1] iter(1, 1) dst(0, 0) src(0, 0) imm 8
// CHECK-NEXT: vta.alu mul uop[0:1] iter(1, 1) dst(0, 0) src(0, 0) imm -3
// CHECK-NEXT: vta.alu reset max uop[8191:8192] iter(1, 1) dst(0, 0) src(0, 0) deps(push_next)
// CHECK-NEXT: vta.store out sram 0 dram 256 y 16 x 16 stride 32 deps(pop_prev, push_prev)
// CHECK-NEXT: vta.finish deps(push_prev, push_next)
// CHECK-NEXT: }
// CHECK-NEXT: }

// CHECK-GENERIC: "builtin.module"() ({
// CHECK-GENERIC-NEXT: "vta.program"() <{sym_name = "all_ops"}> ({
// CHECK-GENERIC-NEXT: "vta.uop_buffer"() ({
// CHECK-GENERIC-NEXT: "vta.uop"() <{dst = 0 : i64, src = 0 : i64, wgt = 0 : i64}> : () -> ()
// CHECK-GENERIC-NEXT: "vta.uop"() <{dst = 1 : i64, src = 2 : i64, wgt = 3 : i64}> : () -> ()
// CHECK-GENERIC-NEXT: "vta.uop"() <{dst = 2047 : i64, src = 2047 : i64, wgt = 1023 : i64}> : () -> ()
// CHECK-GENERIC-NEXT: }) : () -> ()
// CHECK-GENERIC-NEXT: "vta.load"() <{memory_type = #vta<memory_type uop>, sram_base = 0 : i64, dram_base = 0 : i64, y_size = 1 : i64, x_size = 3 : i64, x_stride = 3 : i64, y_pad_0 = 0 : i64, y_pad_1 = 0 : i64, x_pad_0 = 0 : i64, x_pad_1 = 0 : i64}> : () -> ()
// CHECK-GENERIC-NEXT: "vta.load"() <{memory_type = #vta<memory_type wgt>, sram_base = 0 : i64, dram_base = 64 : i64, y_size = 1 : i64, x_size = 9 : i64, x_stride = 9 : i64, y_pad_0 = 0 : i64, y_pad_1 = 0 : i64, x_pad_0 = 0 : i64, x_pad_1 = 0 : i64, pop_next}> : () -> ()
// CHECK-GENERIC-NEXT: "vta.load"() <{memory_type = #vta<memory_type inp>, sram_base = 16 : i64, dram_base = 128 : i64, y_size = 14 : i64, x_size = 14 : i64, x_stride = 56 : i64, y_pad_0 = 1 : i64, y_pad_1 = 2 : i64, x_pad_0 = 3 : i64, x_pad_1 = 4 : i64, push_next}> : () -> ()
// CHECK-GENERIC-NEXT: "vta.load"() <{memory_type = #vta<memory_type acc>, sram_base = 0 : i64, dram_base = 4294967295 : i64, y_size = 1 : i64, x_size = 16 : i64, x_stride = 16 : i64, y_pad_0 = 0 : i64, y_pad_1 = 0 : i64, x_pad_0 = 0 : i64, x_pad_1 = 0 : i64}> : () -> ()
// CHECK-GENERIC-NEXT: "vta.load"() <{memory_type = #vta<memory_type inp>, sram_base = 0 : i64, dram_base = 0 : i64, y_size = 0 : i64, x_size = 0 : i64, x_stride = 0 : i64, y_pad_0 = 0 : i64, y_pad_1 = 0 : i64, x_pad_0 = 0 : i64, x_pad_1 = 0 : i64, pop_next, push_next}> : () -> ()
// CHECK-GENERIC-NEXT: "vta.gemm"() <{reset, uop_bgn = 0 : i64, uop_end = 1 : i64, iter_out = 16 : i64, iter_in = 16 : i64, dst_factor_out = 16 : i64, dst_factor_in = 1 : i64, src_factor_out = 0 : i64, src_factor_in = 0 : i64, wgt_factor_out = 0 : i64, wgt_factor_in = 0 : i64}> : () -> ()
// CHECK-GENERIC-NEXT: "vta.gemm"() <{uop_bgn = 0 : i64, uop_end = 3 : i64, iter_out = 16383 : i64, iter_in = 1 : i64, dst_factor_out = 2047 : i64, dst_factor_in = 2047 : i64, src_factor_out = 2047 : i64, src_factor_in = 2047 : i64, wgt_factor_out = 1023 : i64, wgt_factor_in = 1023 : i64, pop_prev, pop_next, push_prev, push_next}> : () -> ()
// CHECK-GENERIC-NEXT: "vta.alu"() <{alu_opcode = #vta<alu_opcode min>, uop_bgn = 0 : i64, uop_end = 1 : i64, iter_out = 1 : i64, iter_in = 1 : i64, dst_factor_out = 0 : i64, dst_factor_in = 0 : i64, src_factor_out = 0 : i64, src_factor_in = 0 : i64, imm = -32768 : i64}> : () -> ()
// CHECK-GENERIC-NEXT: "vta.alu"() <{alu_opcode = #vta<alu_opcode max>, uop_bgn = 0 : i64, uop_end = 1 : i64, iter_out = 1 : i64, iter_in = 1 : i64, dst_factor_out = 0 : i64, dst_factor_in = 0 : i64, src_factor_out = 0 : i64, src_factor_in = 0 : i64, imm = 0 : i64}> : () -> ()
// CHECK-GENERIC-NEXT: "vta.alu"() <{alu_opcode = #vta<alu_opcode add>, uop_bgn = 0 : i64, uop_end = 1 : i64, iter_out = 2 : i64, iter_in = 3 : i64, dst_factor_out = 3 : i64, dst_factor_in = 1 : i64, src_factor_out = 3 : i64, src_factor_in = 1 : i64, pop_prev}> : () -> ()
// CHECK-GENERIC-NEXT: "vta.alu"() <{alu_opcode = #vta<alu_opcode shr>, uop_bgn = 0 : i64, uop_end = 1 : i64, iter_out = 1 : i64, iter_in = 1 : i64, dst_factor_out = 0 : i64, dst_factor_in = 0 : i64, src_factor_out = 0 : i64, src_factor_in = 0 : i64, imm = 8 : i64}> : () -> ()
// CHECK-GENERIC-NEXT: "vta.alu"() <{alu_opcode = #vta<alu_opcode mul>, uop_bgn = 0 : i64, uop_end = 1 : i64, iter_out = 1 : i64, iter_in = 1 : i64, dst_factor_out = 0 : i64, dst_factor_in = 0 : i64, src_factor_out = 0 : i64, src_factor_in = 0 : i64, imm = -3 : i64}> : () -> ()
// CHECK-GENERIC-NEXT: "vta.alu"() <{alu_opcode = #vta<alu_opcode max>, reset, uop_bgn = 8191 : i64, uop_end = 8192 : i64, iter_out = 1 : i64, iter_in = 1 : i64, dst_factor_out = 0 : i64, dst_factor_in = 0 : i64, src_factor_out = 0 : i64, src_factor_in = 0 : i64, push_next}> : () -> ()
// CHECK-GENERIC-NEXT: "vta.store"() <{memory_type = #vta<memory_type out>, sram_base = 0 : i64, dram_base = 256 : i64, y_size = 16 : i64, x_size = 16 : i64, x_stride = 32 : i64, pop_prev, push_prev}> : () -> ()
// CHECK-GENERIC-NEXT: "vta.finish"() <{push_prev, push_next}> : () -> ()
// CHECK-GENERIC-NEXT: }) : () -> ()
// CHECK-GENERIC-NEXT: }) : () -> ()

// -----

vta.program {
  vta.load inp sram 0 dram 0 y 1 x 1 stride 1 attributes {note = "extra attributes survive"}
  vta.finish
}

// CHECK: builtin.module {
// CHECK-NEXT: vta.program {
// CHECK-NEXT: vta.load inp sram 0 dram 0 y 1 x 1 stride 1 attributes {note = "extra attributes survive"}
// CHECK-NEXT: vta.finish
// CHECK-NEXT: }
// CHECK-NEXT: }

// CHECK-GENERIC: "builtin.module"() ({
// CHECK-GENERIC-NEXT: "vta.program"() ({
// CHECK-GENERIC-NEXT: "vta.load"() <{memory_type = #vta<memory_type inp>, sram_base = 0 : i64, dram_base = 0 : i64, y_size = 1 : i64, x_size = 1 : i64, x_stride = 1 : i64, y_pad_0 = 0 : i64, y_pad_1 = 0 : i64, x_pad_0 = 0 : i64, x_pad_1 = 0 : i64}> {note = "extra attributes survive"} : () -> ()
// CHECK-GENERIC-NEXT: "vta.finish"() : () -> ()
// CHECK-GENERIC-NEXT: }) : () -> ()
// CHECK-GENERIC-NEXT: }) : () -> ()

// -----

vta.program @empty {
}

// CHECK: builtin.module {
// CHECK-NEXT: vta.program @empty {
// CHECK-NEXT: }
// CHECK-NEXT: }

// CHECK-GENERIC: "builtin.module"() ({
// CHECK-GENERIC-NEXT: "vta.program"() <{sym_name = "empty"}> ({
// CHECK-GENERIC-NEXT: ^bb0:
// CHECK-GENERIC-NEXT: }) : () -> ()
// CHECK-GENERIC-NEXT: }) : () -> ()
