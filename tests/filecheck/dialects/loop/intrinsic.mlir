// RUN: XWEAVE_ROUNDTRIP
// RUN: XWEAVE_GENERIC_ROUNDTRIP

// loop.intrinsic calls a declared tensor intrinsic: one affine access per buffer
// (shared index operands), optional static params. loop.dep_push/pop move dependency
// tokens between accelerator stages.

func.func @calls(%a: memref<4x2x1x16xi8>) {
  %inp = loop.alloc : memref<2048x1x16xi8, #loop.scope<vta.inp>>
  loop.for "t" %i = 0 to 4 {
    loop.for %j = 0 to 2 vthread {
      loop.dep_pop "compute" -> "load"
      loop.intrinsic "vta.load_inp"(%inp[%j * 8 + %i, 0, 0], %a[%i, %j, 0, 0]) params {rows = 1 : i64, cols = 2 : i64, pad} : memref<2048x1x16xi8, #loop.scope<vta.inp>>, memref<4x2x1x16xi8>
      loop.dep_push "load" -> "compute"
    }
  }
  func.return
}

// CHECK:      loop.dep_pop "compute" -> "load"
// CHECK-NEXT: loop.intrinsic "vta.load_inp"(%inp[%{{.*}} * 8 + %{{.*}}, 0, 0], %a[%{{.*}}, %{{.*}}, 0, 0]) params {rows = 1 : i64, cols = 2 : i64, pad} : memref<2048x1x16xi8, #loop.scope<vta.inp>>, memref<4x2x1x16xi8>
// CHECK-NEXT: loop.dep_push "load" -> "compute"

// CHECK-GENERIC: "loop.dep_pop"() <{src = "compute", dst = "load"}> : () -> ()
// CHECK-GENERIC: "loop.intrinsic"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) <{callee = "vta.load_inp", maps = [affine_map<(d0, d1) -> (((d0 * 8) + d1), 0, 0)>, affine_map<(d0, d1) -> (d1, d0, 0, 0)>], params = {rows = 1 : i64, cols = 2 : i64, pad}, operandSegmentSizes = array<i32: 2, 2>}>
