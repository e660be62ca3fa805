// RUN: not xweave-opt %s -p plan-memory 2>&1 | filecheck %s

// A planned module (it has the arena) with a new buffer: refused, not planned twice.

builtin.module {
  "memref.global"() <{sym_name = "xweave_arena", type = memref<64xi8>, initial_value, sym_visibility = "private"}> : () -> ()
  func.func @main(%out: memref<4xf32>) {
    %0 = loop.alloc : memref<4xf32>
    func.return
  }
}

// CHECK: plan-memory: the module already has a symbol @xweave_arena; it was planned before, and new buffers cannot be added to its arena
