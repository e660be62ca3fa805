// RUN: XWEAVE_ROUNDTRIP
// RUN: XWEAVE_GENERIC_ROUNDTRIP

// loop.prefetch: a cache hint for the line holding one element (read, or `write`).

func.func @prefetch(%a: memref<128x768xf32>, %s: memref<f32>, %i: index) {
  loop.prefetch %a[%i * 4 + 1, 16] : memref<128x768xf32>
  loop.prefetch write %a[%i, 0] : memref<128x768xf32>
  loop.prefetch %s[] : memref<f32>
  func.return
}

// CHECK:      func.func @prefetch(%a: memref<128x768xf32>, %s: memref<f32>, %i: index) {
// CHECK-NEXT:   loop.prefetch %a[%i * 4 + 1, 16] : memref<128x768xf32>
// CHECK-NEXT:   loop.prefetch write %a[%i, 0] : memref<128x768xf32>
// CHECK-NEXT:   loop.prefetch %s[] : memref<f32>
// CHECK-NEXT:   func.return

// CHECK-GENERIC:      "loop.prefetch"(%a, %i) <{map = affine_map<(d0) -> (((d0 * 4) + 1), 16)>}> : (memref<128x768xf32>, index) -> ()
// CHECK-GENERIC-NEXT: "loop.prefetch"(%a, %i) <{map = affine_map<(d0) -> (d0, 0)>, write}> : (memref<128x768xf32>, index) -> ()
