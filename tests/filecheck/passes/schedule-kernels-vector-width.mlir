// RUN: env "XWEAVE_TARGET=llvm -mcpu=znver3" xweave-opt %s --split-input-file -p schedule-kernels | filecheck %s --check-prefix=AVX2
// RUN: env "XWEAVE_TARGET=llvm -mcpu=znver4 -mprefer-vector-width=256" xweave-opt %s --split-input-file -p schedule-kernels | filecheck %s --check-prefix=AVX2
// RUN: env "XWEAVE_TARGET=llvm -mcpu=znver4" xweave-opt %s --split-input-file -p schedule-kernels | filecheck %s --check-prefix=AVX512
// RUN: env "XWEAVE_TARGET=llvm -mcpu=skylake-avx512" xweave-opt %s --split-input-file -p schedule-kernels | filecheck %s --check-prefix=AVX512
// RUN: xweave-opt %s --split-input-file -p schedule-kernels | filecheck %s --check-prefix=MODULE

// One kernel, two machine models: schedule-kernels sizes the register block in the
// vectors of the target's width (the module's xweave.target, else XWEAVE_TARGET). A
// 6x32x40 matmul: on AVX2 (and an AVX-512 CPU told to prefer 256-bit vectors) 8-lane
// vectors; on AVX-512, 16-lane vectors with the 40 columns' remainder peeled as one
// 8-lane vector (16 + 16 + 8).

func.func @matmul(%A: memref<6x32xf32>, %B: memref<32x40xf32>, %out: memref<6x40xf32>) attributes {xweave.kernel} {
  loop.for "matmul_init.i" %i = 0 to 6 {
    loop.for "matmul_init.j" %j = 0 to 40 {
      %0 = arith.constant 0.000000e+00 : f32
      loop.store %0, %out[%i, %j] : memref<6x40xf32>
    }
  }
  loop.for "matmul.i" %i_1 = 0 to 6 {
    loop.for "matmul.j" %j_1 = 0 to 40 {
      loop.for "matmul.k" %k = 0 to 32 {
        %1 = loop.load %A[%i_1, %k] : memref<6x32xf32>
        %2 = loop.load %B[%k, %j_1] : memref<32x40xf32>
        %3 = arith.mulf %1, %2 : f32
        %4 = loop.load %out[%i_1, %j_1] : memref<6x40xf32>
        %5 = arith.addf %4, %3 : f32
        loop.store %5, %out[%i_1, %j_1] : memref<6x40xf32>
      }
    }
  }
  func.return
}

// AVX2:       loop.for "matmul.k"
// AVX2:         vector.fma %{{.*}}, %{{.*}}, %{{.*}} : vector<8xf32>
// AVX2-NOT:     vector<16xf32>
// AVX2:       func.return

// AVX512:     loop.for "matmul.k"
// AVX512:       %{{.*}} = loop.load %B[%k, 0] : memref<32x40xf32> -> vector<16xf32>
// AVX512:       vector.fma %{{.*}}, %{{.*}}, %{{.*}} : vector<16xf32>
// AVX512:       %{{.*}} = loop.load %B[%k, 16] : memref<32x40xf32> -> vector<16xf32>
// AVX512:       vector.fma %{{.*}}, %{{.*}}, %{{.*}} : vector<16xf32>
// AVX512:       %{{.*}} = loop.load %B[%k, 32] : memref<32x40xf32> -> vector<8xf32>
// AVX512:       vector.fma %{{.*}}, %{{.*}}, %{{.*}} : vector<8xf32>

// -----

// The target recorded on the module wins over XWEAVE_TARGET (a dump replays the same).
builtin.module attributes {xweave.target = "llvm -mcpu=znver5"} {
  func.func @scale(%x: memref<4x48xf32>, %y: memref<4x48xf32>) attributes {xweave.kernel} {
    loop.for "scale.i" %i = 0 to 4 {
      loop.for "scale.j" %j = 0 to 48 {
        %v = loop.load %x[%i, %j] : memref<4x48xf32>
        %s = arith.mulf %v, %v : f32
        loop.store %s, %y[%i, %j] : memref<4x48xf32>
      }
    }
    func.return
  }
}

// MODULE:      builtin.module attributes {xweave.target = "llvm -mcpu=znver5"}
// MODULE:        loop.for "scale.j.outer" %{{.*}} = 0 to 3 {
// MODULE-NEXT:     loop.load %x[%i, %{{.*}} * 16] : memref<4x48xf32> -> vector<16xf32>
