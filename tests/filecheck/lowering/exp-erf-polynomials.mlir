// RUN: xweave-opt %s -p convert-loop-to-llvm | filecheck %s

// float32 exp and erf become inline polynomials that stay in vector registers (LLVM
// would expand a vector llvm.exp into one libm call per lane); float64 keeps libm.

builtin.module {
  func.func @kernel(%A: memref<16xf32>, %D: memref<2xf64>) attributes {xweave.kernel} {
    %v = loop.load %A[0] : memref<16xf32> -> vector<8xf32>
    %e = math.exp %v : vector<8xf32>
    loop.store %e, %A[0] : memref<16xf32>, vector<8xf32>
    %w = loop.load %A[8] : memref<16xf32> -> vector<8xf32>
    %f = math.erf %w : vector<8xf32>
    loop.store %f, %A[8] : memref<16xf32>, vector<8xf32>
    %d = loop.load %D[0] : memref<2xf64>
    %g = math.erf %d : f64
    loop.store %g, %D[1] : memref<2xf64>
    func.return
  }
}

// CHECK:       llvm.func @kernel
// exp: clamp (NaN-propagating), n = roundeven(x log2 e), r = x - n ln2 (two FMAs)
// CHECK:         llvm.call_intrinsic "llvm.minimum.v8f32"
// CHECK-NEXT:    llvm.call_intrinsic "llvm.maximum.v8f32"
// CHECK-NEXT:    llvm.fmul
// CHECK-NEXT:    %[[N:[0-9]+]] = llvm.call_intrinsic "llvm.roundeven.v8f32"
// CHECK-NEXT:    llvm.intr.fma(%[[N]]
// CHECK-NEXT:    llvm.intr.fma(%[[N]]
// n as an integer without llvm.fptosi.sat (no x86 vector form): n + 1.5 * 2^23, its bits
// minus those of 1.5 * 2^23
// CHECK-NEXT:    llvm.fadd %[[N]], %{{.*}} : vector<8xf32>
// CHECK-NEXT:    llvm.bitcast {{.*}} : vector<8xf32> to vector<8xi32>
// CHECK-NEXT:    llvm.sub
// CHECK-NEXT:    llvm.ashr
// CHECK-NOT:     fptosi
// the Taylor polynomial, then 2^n in two factors built in the exponent bits
// CHECK-COUNT-7: llvm.intr.fma
// CHECK-NEXT:    llvm.sub
// CHECK-NEXT:    llvm.add
// CHECK-NEXT:    llvm.shl
// CHECK-NEXT:    llvm.bitcast {{.*}} : vector<8xi32> to vector<8xf32>
// CHECK-NEXT:    llvm.fmul
// CHECK-NEXT:    llvm.add
// CHECK-NEXT:    llvm.shl
// CHECK-NEXT:    llvm.bitcast {{.*}} : vector<8xi32> to vector<8xf32>
// CHECK-NEXT:    llvm.fmul
// CHECK-NEXT:    llvm.store
// erf: clamp to [-4, 4], x P(x^2) / Q(x^2)
// CHECK:         llvm.call_intrinsic "llvm.minimum.v8f32"
// CHECK-NEXT:    llvm.call_intrinsic "llvm.maximum.v8f32"
// CHECK-NEXT:    llvm.fmul
// CHECK-COUNT-5: llvm.intr.fma
// CHECK-NEXT:    llvm.fmul
// CHECK-COUNT-5: llvm.intr.fma
// CHECK-NEXT:    llvm.fdiv {{.*}} : vector<8xf32>
// CHECK-NEXT:    llvm.store
// float64 erf is libm's; no f32 libm call is left
// CHECK-NOT:     llvm.call @erff
// CHECK:         llvm.call @erf({{.*}}) : (f64) -> f64
// CHECK:       llvm.func @erf(f64) -> f64
