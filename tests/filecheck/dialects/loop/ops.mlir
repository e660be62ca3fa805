// RUN: XWEAVE_ROUNDTRIP
// RUN: XWEAVE_GENERIC_ROUNDTRIP

func.func @kinds(%A: memref<64x16xf32>) {
  loop.for %i = 0 to 64 {
  }
  loop.for %i = 0 to 64 step 4 parallel {
  }
  loop.for %i = 8 to 16 serial {
  }
  loop.for %i = 0 to 16 step 8 vectorized {
  }
  loop.for %i = 0 to 4 unrolled {
  }
  loop.for %i = 0 to 2 vthread {
  } {tag = "outer"}
  func.return
}

// CHECK:      func.func @kinds(%A: memref<64x16xf32>) {
// CHECK-NEXT:   loop.for %i = 0 to 64 {
// CHECK-NEXT:   }
// CHECK-NEXT:   loop.for %i_1 = 0 to 64 step 4 parallel {
// CHECK-NEXT:   }
// CHECK-NEXT:   loop.for %i_2 = 8 to 16 {
// CHECK-NEXT:   }
// CHECK-NEXT:   loop.for %i_3 = 0 to 16 step 8 vectorized {
// CHECK-NEXT:   }
// CHECK-NEXT:   loop.for %i_4 = 0 to 4 unrolled {
// CHECK-NEXT:   }
// CHECK-NEXT:   loop.for %i_5 = 0 to 2 vthread {
// CHECK-NEXT:   } {tag = "outer"}
// CHECK-NEXT:   func.return
// CHECK-NEXT: }

// CHECK-GENERIC:      "loop.for"() <{lb = 0 : i64, ub = 64 : i64, step = 1 : i64, kind = #loop.kind<serial>}> ({
// CHECK-GENERIC-NEXT: ^bb0(%i: index):
// CHECK-GENERIC-NEXT:   "loop.yield"() : () -> ()
// CHECK-GENERIC-NEXT: }) : () -> ()
// CHECK-GENERIC:      "loop.for"() <{lb = 0 : i64, ub = 64 : i64, step = 4 : i64, kind = #loop.kind<parallel>}>
// CHECK-GENERIC:      "loop.for"() <{lb = 8 : i64, ub = 16 : i64, step = 1 : i64, kind = #loop.kind<serial>}>
// CHECK-GENERIC:      "loop.for"() <{lb = 0 : i64, ub = 16 : i64, step = 8 : i64, kind = #loop.kind<vectorized>}>
// CHECK-GENERIC:      "loop.for"() <{lb = 0 : i64, ub = 4 : i64, step = 1 : i64, kind = #loop.kind<unrolled>}>
// CHECK-GENERIC:      "loop.for"() <{lb = 0 : i64, ub = 2 : i64, step = 1 : i64, kind = #loop.kind<vthread>}> ({
// CHECK-GENERIC:      }) {tag = "outer"} : () -> ()

// -----

func.func @buffers() {
  %g = loop.alloc : memref<4x4xf32>
  %e = loop.alloc : memref<8xf32, #loop.scope<global>>
  %l = loop.alloc : memref<6x16xf32, #loop.scope<local>>
  %v = loop.alloc align 64 : memref<1x16x16xi8, #loop.scope<vta.inp>>
  %s = loop.alloc {name = "acc"} : memref<f32, #loop.scope<local>>
  func.return
}

// CHECK:      %g = loop.alloc : memref<4x4xf32>
// CHECK-NEXT: %e = loop.alloc : memref<8xf32, #loop.scope<global>>
// CHECK-NEXT: %l = loop.alloc : memref<6x16xf32, #loop.scope<local>>
// CHECK-NEXT: %v = loop.alloc align 64 : memref<1x16x16xi8, #loop.scope<vta.inp>>
// CHECK-NEXT: %s = loop.alloc {name = "acc"} : memref<f32, #loop.scope<local>>

// CHECK-GENERIC:      %g = "loop.alloc"() : () -> memref<4x4xf32>
// CHECK-GENERIC-NEXT: %e = "loop.alloc"() : () -> memref<8xf32, #loop.scope<global>>
// CHECK-GENERIC-NEXT: %l = "loop.alloc"() : () -> memref<6x16xf32, #loop.scope<local>>
// CHECK-GENERIC-NEXT: %v = "loop.alloc"() <{alignment = 64 : i64}> : () -> memref<1x16x16xi8, #loop.scope<vta.inp>>
// CHECK-GENERIC-NEXT: %s = "loop.alloc"() {name = "acc"} : () -> memref<f32, #loop.scope<local>>

// -----

func.func @accesses(%A: memref<10x16xf32>, %B: memref<4x16xf32, #loop.scope<local>>, %S: memref<f32>) {
  loop.for %i = 0 to 4 {
    loop.for %k = 0 to 3 {
      loop.for %j = 0 to 16 step 8 vectorized {
        %a = loop.load %A[%i * 2 + %k, %j] : memref<10x16xf32>
        %b = loop.load %A[%i + 1, %j floordiv 4 + %j mod 4] : memref<10x16xf32>
        %c = loop.load %A[9 - %i, 15 - %k * 2] : memref<10x16xf32>
        %d = loop.load %A[%i + %i, 0] : memref<10x16xf32>
        %s = loop.load %S[] : memref<f32>
        loop.store %a, %B[%i, %j] : memref<4x16xf32, #loop.scope<local>>
        loop.store %s, %S[] {nontemporal} : memref<f32>
        %v = loop.load %A[%i * 2 + %k, %j] : memref<10x16xf32> -> vector<8xf32>
        loop.store %v, %B[%i, %j] : memref<4x16xf32, #loop.scope<local>>, vector<8xf32>
      }
    }
  }
  func.return
}

// CHECK:      func.func @accesses(%A: memref<10x16xf32>, %B: memref<4x16xf32, #loop.scope<local>>, %S: memref<f32>) {
// CHECK-NEXT:   loop.for %i = 0 to 4 {
// CHECK-NEXT:     loop.for %k = 0 to 3 {
// CHECK-NEXT:       loop.for %j = 0 to 16 step 8 vectorized {
// CHECK-NEXT:         %a = loop.load %A[%i * 2 + %k, %j] : memref<10x16xf32>
// CHECK-NEXT:         %b = loop.load %A[%i + 1, %j floordiv 4 + %j mod 4] : memref<10x16xf32>
// CHECK-NEXT:         %c = loop.load %A[9 - %i, 15 - %k * 2] : memref<10x16xf32>
// CHECK-NEXT:         %d = loop.load %A[%i + %i, 0] : memref<10x16xf32>
// CHECK-NEXT:         %s = loop.load %S[] : memref<f32>
// CHECK-NEXT:         loop.store %a, %B[%i, %j] : memref<4x16xf32, #loop.scope<local>>
// CHECK-NEXT:         loop.store %s, %S[] {nontemporal} : memref<f32>
// CHECK-NEXT:         %v = loop.load %A[%i * 2 + %k, %j] : memref<10x16xf32> -> vector<8xf32>
// CHECK-NEXT:         loop.store %v, %B[%i, %j] : memref<4x16xf32, #loop.scope<local>>, vector<8xf32>
// CHECK-NEXT:       }
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT:   func.return
// CHECK-NEXT: }

// CHECK-GENERIC:      %a = "loop.load"(%A, %i, %k, %j) <{map = affine_map<(d0, d1, d2) -> (((d0 * 2) + d1), d2)>}> : (memref<10x16xf32>, index, index, index) -> f32
// CHECK-GENERIC-NEXT: %b = "loop.load"(%A, %i, %j) <{map = affine_map<(d0, d1) -> ((d0 + 1), ((d1 floordiv 4) + (d1 mod 4)))>}> : (memref<10x16xf32>, index, index) -> f32
// CHECK-GENERIC-NEXT: %c = "loop.load"(%A, %i, %k) <{map = affine_map<(d0, d1) -> (((d0 * -1) + 9), ((d1 * -2) + 15))>}> : (memref<10x16xf32>, index, index) -> f32
// CHECK-GENERIC-NEXT: %d = "loop.load"(%A, %i) <{map = affine_map<(d0) -> ((d0 + d0), 0)>}> : (memref<10x16xf32>, index) -> f32
// CHECK-GENERIC-NEXT: %s = "loop.load"(%S) <{map = affine_map<() -> ()>}> : (memref<f32>) -> f32
// CHECK-GENERIC-NEXT: "loop.store"(%a, %B, %i, %j) <{map = affine_map<(d0, d1) -> (d0, d1)>}> : (f32, memref<4x16xf32, #loop.scope<local>>, index, index) -> ()
// CHECK-GENERIC-NEXT: "loop.store"(%s, %S) <{map = affine_map<() -> ()>}> {nontemporal} : (f32, memref<f32>) -> ()
// CHECK-GENERIC-NEXT: %v = "loop.load"(%A, %i, %k, %j) <{map = affine_map<(d0, d1, d2) -> (((d0 * 2) + d1), d2)>}> : (memref<10x16xf32>, index, index, index) -> vector<8xf32>
// CHECK-GENERIC-NEXT: "loop.store"(%v, %B, %i, %j) <{map = affine_map<(d0, d1) -> (d0, d1)>}> : (vector<8xf32>, memref<4x16xf32, #loop.scope<local>>, index, index) -> ()
// CHECK-GENERIC-NEXT: "loop.yield"() : () -> ()

// -----

// Maps written in generic form may use symbols and unused dimensions.
%A = "test.op"() : () -> memref<8x8xf32>
%i, %j = "test.op"() : () -> (index, index)
%x = "loop.load"(%A, %i, %j) <{map = affine_map<(d0)[s0] -> (d0 + s0 * 2, 3)>}> : (memref<8x8xf32>, index, index) -> f32
%y = "loop.load"(%A, %i, %j) <{map = affine_map<(d0, d1) -> (d1, d1 - 1)>}> : (memref<8x8xf32>, index, index) -> f32

// CHECK:      %x = loop.load %A[%i + %j * 2, 3] : memref<8x8xf32>
// CHECK-NEXT: %y = loop.load %A[%j, %j - 1] : memref<8x8xf32>

// CHECK-GENERIC: %x = "loop.load"(%A, %i, %j) <{map = affine_map<(d0)[s0] -> ((d0 + (s0 * 2)), 3)>}>
// CHECK-GENERIC: %y = "loop.load"(%A, %i, %j) <{map = affine_map<(d0, d1) -> (d1, (d1 + -1))>}>

// -----

loop.global @w : memref<2x2xf32> = dense_resource<loop_ops_w> : tensor<2x2xf32>
loop.global @b : memref<2xi8> = dense<[1, -2]> : tensor<2xi8>
func.func @globals() {
  %w = loop.get_global @w : memref<2x2xf32>
  %b = loop.get_global @b : memref<2xi8>
  func.return
}

{-#
  dialect_resources: {
    builtin: {
      loop_ops_w: "0x040000000000803F000000400000404000008040"
    }
  }
#-}

// CHECK:      loop.global @w : memref<2x2xf32> = dense_resource<loop_ops_w> : tensor<2x2xf32>
// CHECK-NEXT: loop.global @b : memref<2xi8> = dense<[1, -2]> : tensor<2xi8>
// CHECK:        %w = loop.get_global @w : memref<2x2xf32>
// CHECK-NEXT:   %b = loop.get_global @b : memref<2xi8>
// CHECK:      loop_ops_w: "0x040000000000803F000000400000404000008040"

// CHECK-GENERIC:      "loop.global"() <{sym_name = "w", type = memref<2x2xf32>, initial_value = dense_resource<loop_ops_w> : tensor<2x2xf32>}> : () -> ()
// CHECK-GENERIC-NEXT: "loop.global"() <{sym_name = "b", type = memref<2xi8>, initial_value = dense<[1, -2]> : tensor<2xi8>}> : () -> ()
// CHECK-GENERIC:      %w = "loop.get_global"() <{name = @w}> : () -> memref<2x2xf32>
// CHECK-GENERIC-NEXT: %b = "loop.get_global"() <{name = @b}> : () -> memref<2xi8>

// -----

// Named loops: the handle schedules address a loop by.
func.func @named(%A: memref<8xf32>) {
  loop.for "stage.i" %i = 0 to 8 step 2 parallel {
    %v = loop.load %A[%i] : memref<8xf32>
    loop.store %v, %A[%i] : memref<8xf32>
  }
  func.return
}

// CHECK-LABEL: func.func @named
// CHECK:         loop.for "stage.i" %{{.*}} = 0 to 8 step 2 parallel {
// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "named"
// CHECK-GENERIC:         "loop.for"() <{lb = 0 : i64, ub = 8 : i64, step = 2 : i64, kind = #loop.kind<parallel>, name = "stage.i"}>
