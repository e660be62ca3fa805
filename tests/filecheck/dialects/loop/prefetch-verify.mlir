// RUN: xweave-opt %s --split-input-file --verify-diagnostics | filecheck %s

func.func @f(%a: memref<8x8xf32>, %i: index) {
  "loop.prefetch"(%a, %i) <{map = affine_map<(d0) -> (d0)>}> : (memref<8x8xf32>, index) -> ()
  func.return
}

// CHECK: map (d0) -> (d0) has 1 results, but the memref has rank 2

// -----

func.func @f(%a: memref<8xf32>, %i: index) {
  "loop.prefetch"(%a) <{map = affine_map<(d0) -> (d0)>}> : (memref<8xf32>) -> ()
  func.return
}

// CHECK: expected 1 index operands for map
