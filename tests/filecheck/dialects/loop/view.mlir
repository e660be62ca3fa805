// RUN: XWEAVE_ROUNDTRIP
// RUN: XWEAVE_GENERIC_ROUNDTRIP

func.func @views(%arena: memref<8192xi8>, %local: memref<64xi8, #loop.scope<local>>) {
  %a = loop.view %arena[4096] : memref<8192xi8> to memref<4x8xf32>
  %b = loop.view %arena[0] {tag} : memref<8192xi8> to memref<i1>
  %c = loop.view %arena[8184] : memref<8192xi8> to memref<1xi64>
  %d = loop.view %local[32] : memref<64xi8, #loop.scope<local>> to memref<8xf32, #loop.scope<local>>
  func.return
}

// CHECK:      func.func @views(%arena: memref<8192xi8>, %local: memref<64xi8, #loop.scope<local>>) {
// CHECK-NEXT:   %a = loop.view %arena[4096] : memref<8192xi8> to memref<4x8xf32>
// CHECK-NEXT:   %b = loop.view %arena[0] {tag} : memref<8192xi8> to memref<i1>
// CHECK-NEXT:   %c = loop.view %arena[8184] : memref<8192xi8> to memref<1xi64>
// CHECK-NEXT:   %d = loop.view %local[32] : memref<64xi8, #loop.scope<local>> to memref<8xf32, #loop.scope<local>>
// CHECK-NEXT:   func.return
// CHECK-NEXT: }

// CHECK-GENERIC:      %a = "loop.view"(%arena) <{offset = 4096 : i64}> : (memref<8192xi8>) -> memref<4x8xf32>
// CHECK-GENERIC-NEXT: %b = "loop.view"(%arena) <{offset = 0 : i64}> {tag} : (memref<8192xi8>) -> memref<i1>
// CHECK-GENERIC-NEXT: %c = "loop.view"(%arena) <{offset = 8184 : i64}> : (memref<8192xi8>) -> memref<1xi64>
// CHECK-GENERIC-NEXT: %d = "loop.view"(%local) <{offset = 32 : i64}> : (memref<64xi8, #loop.scope<local>>) -> memref<8xf32, #loop.scope<local>>
