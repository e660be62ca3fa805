// RUN: xweave-opt %s --split-input-file --verify-diagnostics | filecheck %s

func.func @unqualified(%a: memref<4xi8>) {
  "loop.intrinsic"(%a) <{callee = "gemm", maps = [affine_map<() -> (0)>], operandSegmentSizes = array<i32: 1, 0>}> : (memref<4xi8>) -> ()
  func.return
}
// CHECK: intrinsic name 'gemm' must be qualified: '<accelerator>.<name>'

// -----

func.func @rank(%a: memref<4x4xi8>) {
  "loop.intrinsic"(%a) <{callee = "vta.x", maps = [affine_map<() -> (0)>], operandSegmentSizes = array<i32: 1, 0>}> : (memref<4x4xi8>) -> ()
  func.return
}
// CHECK: access map 0 has 1 results, but buffer 0 has rank 2

// -----

func.func @maps(%a: memref<4xi8>) {
  "loop.intrinsic"(%a) <{callee = "vta.x", maps = [], operandSegmentSizes = array<i32: 1, 0>}> : (memref<4xi8>) -> ()
  func.return
}
// CHECK: 1 buffers but 0 access maps

// -----

func.func @same_stage() {
  "loop.dep_push"() <{src = "load", dst = "load"}> : () -> ()
  func.return
}
// CHECK: a dependency token goes between two different stages, got 'load' twice
