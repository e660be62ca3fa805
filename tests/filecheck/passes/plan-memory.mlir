// RUN: xweave-opt %s --split-input-file -p plan-memory | filecheck %s
// RUN: xweave-opt %s --split-input-file -p plan-memory,plan-memory | filecheck %s --check-prefix=TWICE

// A chain: each buffer dies at the call after the one writing it, so two slots of
// 128 bytes serve four buffers; the residual %0 stays alive until the add.

builtin.module {
  func.func @k(%a: memref<4x8xf32>, %b: memref<4x8xf32>) attributes {xweave.kernel} {
    %t = loop.alloc : memref<4x8xf32>
    func.return
  }
  func.func @add(%a: memref<4x8xf32>, %b: memref<4x8xf32>, %c: memref<4x8xf32>) attributes {xweave.kernel} {
    func.return
  }
  func.func @main(%x: memref<4x8xf32>, %out: memref<4x8xf32>) attributes {xweave.input_names = ["x"]} {
    %0 = loop.alloc : memref<4x8xf32>
    func.call @k(%x, %0) : (memref<4x8xf32>, memref<4x8xf32>) -> ()
    %1 = loop.alloc : memref<4x8xf32>
    func.call @k(%0, %1) : (memref<4x8xf32>, memref<4x8xf32>) -> ()
    %2 = loop.alloc {tag = "two"} : memref<4x8xf32>
    func.call @k(%1, %2) : (memref<4x8xf32>, memref<4x8xf32>) -> ()
    %3 = loop.alloc : memref<4x8xf32>
    func.call @k(%2, %3) : (memref<4x8xf32>, memref<4x8xf32>) -> ()
    func.call @add(%3, %0, %out) : (memref<4x8xf32>, memref<4x8xf32>, memref<4x8xf32>) -> ()
    func.return
  }
}

// CHECK:      builtin.module attributes {xweave.peak_memory_bytes = 512 : i64, xweave.unplanned_memory_bytes = 640 : i64} {
// CHECK-NEXT:   "memref.global"() <{sym_name = "xweave_arena", type = memref<512xi8>, initial_value, sym_visibility = "private", alignment = 64 : i64}> : () -> ()
// The kernel's temporary joins the arena, alive at each of @k's four calls: apart from
// every buffer those calls use.
// CHECK-NEXT:   func.func @k(%a: memref<4x8xf32>, %b: memref<4x8xf32>) attributes {xweave.kernel} {
// CHECK-NEXT:     %arena = memref.get_global @xweave_arena : memref<512xi8>
// CHECK-NEXT:     %t = loop.view %arena[0] : memref<512xi8> to memref<4x8xf32>
// CHECK:        func.func @main(%x: memref<4x8xf32>, %out: memref<4x8xf32>) attributes {xweave.input_names = ["x"]} {
// CHECK-NEXT:     %arena = memref.get_global @xweave_arena : memref<512xi8>
// CHECK-NEXT:     %0 = loop.view %arena[128] : memref<512xi8> to memref<4x8xf32>
// CHECK-NEXT:     func.call @k(%x, %0)
// CHECK-NEXT:     %1 = loop.view %arena[256] : memref<512xi8> to memref<4x8xf32>
// CHECK-NEXT:     func.call @k(%0, %1)
// CHECK-NEXT:     %2 = loop.view %arena[384] {tag = "two"} : memref<512xi8> to memref<4x8xf32>
// CHECK-NEXT:     func.call @k(%1, %2)
// CHECK-NEXT:     %3 = loop.view %arena[256] : memref<512xi8> to memref<4x8xf32>
// CHECK-NEXT:     func.call @k(%2, %3)
// CHECK-NEXT:     func.call @add(%3, %0, %out)
// CHECK-NEXT:     func.return

// Planning a planned module changes nothing.
// TWICE:       builtin.module attributes {xweave.peak_memory_bytes = 512 : i64, xweave.unplanned_memory_bytes = 640 : i64} {
// TWICE-COUNT-1: memref.global
// TWICE-NOT:   loop.alloc : memref<4x8xf32>
// TWICE:       %3 = loop.view %arena[256]

// -----

// Greedy by size: the big buffer goes first, at 0; then the 24-byte %s, then the
// 10-byte masks, each at the lowest offset free while it lives (%m2 reuses the slot of
// %s). Sizes round up to 64 bytes, element types may differ, i1 takes a byte.

builtin.module {
  func.func @f(%a: memref<1024xf32>, %b: memref<10xi1>) attributes {xweave.kernel} {
    func.return
  }
  func.func @g(%a: memref<10xi1>, %b: memref<3xi64>) attributes {xweave.kernel} {
    func.return
  }
  func.func @main(%x: memref<1024xf32>, %out: memref<3xi64>) {
    %big = loop.alloc : memref<1024xf32>
    %m = loop.alloc : memref<10xi1>
    func.call @f(%big, %m) : (memref<1024xf32>, memref<10xi1>) -> ()
    %s = loop.alloc : memref<3xi64>
    func.call @g(%m, %s) : (memref<10xi1>, memref<3xi64>) -> ()
    %m2 = loop.alloc : memref<10xi1>
    func.call @f(%big, %m2) : (memref<1024xf32>, memref<10xi1>) -> ()
    func.call @g(%m2, %out) : (memref<10xi1>, memref<3xi64>) -> ()
    func.return
  }
}

// CHECK:      builtin.module attributes {xweave.peak_memory_bytes = 4224 : i64, xweave.unplanned_memory_bytes = 4140 : i64} {
// CHECK:        %big = loop.view %arena[0] : memref<4224xi8> to memref<1024xf32>
// CHECK-NEXT:   %m = loop.view %arena[4160] : memref<4224xi8> to memref<10xi1>
// CHECK:        %s = loop.view %arena[4096] : memref<4224xi8> to memref<3xi64>
// CHECK:        %m2 = loop.view %arena[4096] : memref<4224xi8> to memref<10xi1>

// -----

// Left alone: buffers nested in a loop, local buffers, buffers with a layout. A buffer
// read by a copy nest (a top-level loop) lives until that loop.

builtin.module {
  func.func @k(%a: memref<16xf32>, %b: memref<16xf32>) attributes {xweave.kernel} {
    func.return
  }
  func.func @main(%x: memref<16xf32>, %out: memref<16xf32>) {
    %local = loop.alloc : memref<16xf32, #loop.scope<local>>
    %strided = loop.alloc : memref<16xf32, strided<[1]>>
    %0 = loop.alloc : memref<16xf32>
    func.call @k(%x, %0) : (memref<16xf32>, memref<16xf32>) -> ()
    %1 = loop.alloc : memref<16xf32>
    func.call @k(%0, %1) : (memref<16xf32>, memref<16xf32>) -> ()
    loop.for %i = 0 to 16 {
      %inner = loop.alloc : memref<16xf32>
      %v = loop.load %0[%i] : memref<16xf32>
      loop.store %v, %out[%i] : memref<16xf32>
    }
    func.return
  }
}

// CHECK:      builtin.module attributes {xweave.peak_memory_bytes = 128 : i64, xweave.unplanned_memory_bytes = 128 : i64} {
// CHECK:        %local = loop.alloc : memref<16xf32, #loop.scope<local>>
// CHECK-NEXT:   %strided = loop.alloc : memref<16xf32, strided<[1]>>
// CHECK-NEXT:   %0 = loop.view %arena[0] : memref<128xi8> to memref<16xf32>
// CHECK:        %1 = loop.view %arena[64] : memref<128xi8> to memref<16xf32>
// CHECK:        %inner = loop.alloc : memref<16xf32>

// -----

// A buffer that reaches func.return (here in a function planned by name) keeps its
// alloc; a module without a @main, or whose @main has no buffers, gets no arena.

builtin.module {
  func.func @main(%x: memref<16xf32>) {
    func.return
  }
}

// CHECK:      builtin.module attributes {xweave.peak_memory_bytes = 0 : i64, xweave.unplanned_memory_bytes = 0 : i64} {
// CHECK-NOT:  memref.global
