// RUN: xweave-opt %s --split-input-file -p count-kernel-flops,profile-kernels | filecheck %s
// RUN: xweave-opt %s --split-input-file -p count-kernel-flops | filecheck %s --check-prefix=FLOPS

// Each kernel call of @main is wrapped in two clock reads whose difference is added to
// the call's slot; the call of a function that is not a kernel (@helper) is not timed,
// and the kernels themselves are left unchanged.

builtin.module {
  func.func @matmul(%a: memref<4x3xf32>, %b: memref<3x5xf32>, %c: memref<4x5xf32>) attributes {xweave.kernel} {
    loop.for "matmul.i" %i = 0 to 4 {
      loop.for "matmul.j" %j = 0 to 5 {
        loop.for "matmul.k" %k = 0 to 3 {
          %x = loop.load %a[%i, %k] : memref<4x3xf32>
          %y = loop.load %b[%k, %j] : memref<3x5xf32>
          %acc = loop.load %c[%i, %j] : memref<4x5xf32>
          %m = arith.mulf %x, %y : f32
          %s = arith.addf %acc, %m : f32
          loop.store %s, %c[%i, %j] : memref<4x5xf32>
        }
      }
    }
    func.return
  }
  func.func @copy(%a: memref<4x5xf32>, %b: memref<4x5xf32>) attributes {xweave.kernel} {
    loop.for "copy.i" %i = 0 to 4 {
      loop.for "copy.j" %j = 0 to 5 {
        %x = loop.load %a[%i, %j] : memref<4x5xf32>
        loop.store %x, %b[%i, %j] : memref<4x5xf32>
      }
    }
    func.return
  }
  func.func @helper(%a: memref<4x5xf32>) {
    func.return
  }
  func.func @main(%a: memref<4x3xf32>, %b: memref<3x5xf32>, %c: memref<4x5xf32>, %out: memref<4x5xf32>) {
    func.call @matmul(%a, %b, %c) : (memref<4x3xf32>, memref<3x5xf32>, memref<4x5xf32>) -> ()
    func.call @helper(%c) : (memref<4x5xf32>) -> ()
    func.call @copy(%c, %out) : (memref<4x5xf32>, memref<4x5xf32>) -> ()
    func.return
  }
}

// FLOPS: builtin.module attributes {xweave.kernel_flops = {matmul = 120 : i64}} {

// CHECK:      builtin.module attributes {xweave.kernel_flops = {matmul = 120 : i64}} {
// CHECK-NEXT:   "memref.global"() <{sym_name = "xweave_profile", type = memref<2xi64>, initial_value, sym_visibility = "private", alignment = 64 : i64}> : () -> ()
// CHECK-NEXT:   func.func private @clock_gettime(i32, memref<2xi64, #loop.scope<local>>) -> i32
// CHECK-NEXT:   func.func @xweave_profile_clock() -> i64 {
// CHECK-NEXT:     %ts = loop.alloc : memref<2xi64, #loop.scope<local>>
// CHECK-NEXT:     %{{.*}} = arith.constant 1 : i32
// CHECK-NEXT:     %{{.*}} = func.call @clock_gettime(%{{.*}}, %ts) : (i32, memref<2xi64, #loop.scope<local>>) -> i32
// CHECK-NEXT:     %{{.*}} = loop.load %ts[0] : memref<2xi64, #loop.scope<local>>
// CHECK-NEXT:     %{{.*}} = loop.load %ts[1] : memref<2xi64, #loop.scope<local>>
// CHECK:          func.return %{{.*}} : i64
// CHECK-NEXT:   }
// CHECK-NEXT:   func.func @matmul(
// CHECK-NEXT:     loop.for "matmul.i"
// CHECK-NOT:    xweave_profile
// CHECK:        func.func @copy(
// CHECK-NOT:    xweave_profile
// CHECK:        func.func @helper(
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT:   func.func @main(%a: memref<4x3xf32>, %b: memref<3x5xf32>, %c: memref<4x5xf32>, %out: memref<4x5xf32>) attributes {xweave.profile_kernels = ["matmul", "copy"], xweave.profile_flops = [120 : i64, 0 : i64]} {
// CHECK-NEXT:     %t0 = func.call @xweave_profile_clock() : () -> i64
// CHECK-NEXT:     func.call @matmul(%a, %b, %c) : (memref<4x3xf32>, memref<3x5xf32>, memref<4x5xf32>) -> ()
// CHECK-NEXT:     %t1 = func.call @xweave_profile_clock() : () -> i64
// CHECK-NEXT:     %dt = arith.subi %t1, %t0 : i64
// CHECK-NEXT:     %slots = memref.get_global @xweave_profile : memref<2xi64>
// CHECK-NEXT:     %[[OLD:.*]] = loop.load %slots[0] : memref<2xi64>
// CHECK-NEXT:     %[[NEW:.*]] = arith.addi %[[OLD]], %dt : i64
// CHECK-NEXT:     loop.store %[[NEW]], %slots[0] : memref<2xi64>
// CHECK-NEXT:     func.call @helper(%c) : (memref<4x5xf32>) -> ()
// CHECK-NEXT:     %t0_1 = func.call @xweave_profile_clock() : () -> i64
// CHECK-NEXT:     func.call @copy(%c, %out) : (memref<4x5xf32>, memref<4x5xf32>) -> ()
// CHECK-NEXT:     %t1_1 = func.call @xweave_profile_clock() : () -> i64
// CHECK-NEXT:     %dt_1 = arith.subi %t1_1, %t0_1 : i64
// CHECK-NEXT:     %slots_1 = memref.get_global @xweave_profile : memref<2xi64>
// CHECK-NEXT:     %{{.*}} = loop.load %slots_1[1] : memref<2xi64>
// CHECK:          loop.store %{{.*}}, %slots_1[1] : memref<2xi64>
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }

// -----

// Vector ops count their lanes, an fma twice; the loops multiply.

builtin.module {
  func.func @axpy(%a: memref<16xf32>, %out: memref<16xf32>) attributes {xweave.kernel} {
    loop.for "axpy.i" %i = 0 to 2 {
      %x = vector.load %a[%i] : memref<16xf32>, vector<8xf32>
      %y = vector.fma %x, %x, %x : vector<8xf32>
      vector.store %y, %out[%i] : memref<16xf32>, vector<8xf32>
    }
    func.return
  }
  func.func @main(%a: memref<16xf32>, %out: memref<16xf32>) {
    func.call @axpy(%a, %out) : (memref<16xf32>, memref<16xf32>) -> ()
    func.return
  }
}

// FLOPS: builtin.module attributes {xweave.kernel_flops = {axpy = 32 : i64}} {
// CHECK: xweave.profile_kernels = ["axpy"], xweave.profile_flops = [32 : i64]
