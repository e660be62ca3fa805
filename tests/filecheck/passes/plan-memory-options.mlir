// RUN: xweave-opt %s -p 'plan-memory{function=entry alignment=16}' | filecheck %s
// RUN: not xweave-opt %s -p 'plan-memory{alignment=48}' 2>&1 | filecheck %s --check-prefix=ALIGN

// `function` picks the function to plan, `alignment` the granularity of offsets (an
// alloc's own larger alignment is kept); a buffer returned by the function keeps its
// own alloc.

builtin.module {
  func.func @k(%a: memref<3xf32>) attributes {xweave.kernel} {
    func.return
  }
  func.func @entry() -> memref<3xf32> {
    %0 = loop.alloc : memref<3xf32>
    func.call @k(%0) : (memref<3xf32>) -> ()
    %1 = loop.alloc : memref<3xf32>
    func.call @k(%1) : (memref<3xf32>) -> ()
    %2 = loop.alloc align 32 : memref<3xf32>
    func.call @k(%2) : (memref<3xf32>) -> ()
    func.call @k(%1) : (memref<3xf32>) -> ()
    func.return %0 : memref<3xf32>
  }
}

// CHECK:      builtin.module attributes {xweave.peak_memory_bytes = 48 : i64, xweave.unplanned_memory_bytes = 24 : i64} {
// CHECK:        %0 = loop.alloc : memref<3xf32>
// CHECK:        %1 = loop.view %arena[0] : memref<48xi8> to memref<3xf32>
// CHECK:        %2 = loop.view %arena[32] : memref<48xi8> to memref<3xf32>

// ALIGN: plan-memory: alignment must be a positive power of two, got 48
