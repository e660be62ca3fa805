// RUN: xweave-opt %s --split-input-file --verify-diagnostics | filecheck %s

// A program is verified against the hardware config it records (`config`: the fields
// that differ from the default HardwareConfig), else against the default: 1,500 input
// rows fit the default 32 KiB input scratchpad (depth 2048), not a 16 KiB one (1024).

vta.program @default {
  vta.load inp sram 1500 dram 0 y 1 x 16 stride 16
  vta.finish
}

// CHECK:      vta.program @default {
// CHECK-NEXT:   vta.load inp sram 1500 dram 0 y 1 x 16 stride 16
// CHECK-NEXT:   vta.finish
// CHECK-NEXT: }

// -----

vta.program @small attributes {config = {inp_buffer_bytes = 16384 : i64}} {
  vta.load inp sram 1500 dram 0 y 1 x 16 stride 16
  vta.finish
}

// CHECK: inp elements [1500, 1516) exceed the inp scratchpad (depth 1024)

// -----

vta.program @small attributes {config = {inp_buffer_bytes = 16384 : i64}} {
  vta.load inp sram 1000 dram 0 y 1 x 16 stride 16
  vta.finish
}

// CHECK:      vta.program @small attributes {config = {inp_buffer_bytes = 16384 : i64}} {
// CHECK-NEXT:   vta.load inp sram 1000 dram 0 y 1 x 16 stride 16

// -----

vta.program @bad attributes {config = {inp_buffer_bytes = 1000 : i64}} {
  vta.finish
}

// CHECK: bad config {inp_buffer_bytes = 1000 : i64}
