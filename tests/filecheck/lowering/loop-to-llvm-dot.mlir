// RUN: xweave-opt %s --split-input-file -p convert-loop-to-llvm -t asm | filecheck %s

// loop.dot on each x86 path, compiled to assembly for a pinned machine model (the
// module's xweave.target), whatever the host.

// With VNNI (Ice Lake server: AVX512-VNNI, 8 lanes through AVX512VL): one vpdpbusd per
// 8 lanes of u8 x s8 groups of 4, exact; int16 pairs are vpmaddwd.
// CHECK-LABEL: dot:
// CHECK:         vpdpbusd
// CHECK:         vpmaddwd
// CHECK-NOT:     vpmaddubsw
// CHECK:         .Lfunc_end
builtin.module attributes {xweave.target = "llvm -mcpu=icelake-server"} {
  func.func @dot(%acc: memref<8xi32>, %a: memref<4xui8>, %b: memref<32xi8>, %w: memref<16xi16>) attributes {xweave.kernel} {
    %v = loop.load %acc[0] : memref<8xi32> -> vector<8xi32>
    %x = loop.load %a[0] : memref<4xui8> -> vector<4xi8>
    %y = loop.load %b[0] : memref<32xi8> -> vector<32xi8>
    %r = loop.dot %v, %x, %y : vector<8xi32>, vector<4xi8>, vector<32xi8>
    %x2 = loop.load %a[0] : memref<4xui8> -> vector<2xi8>
    %z = loop.load %w[0] : memref<16xi16> -> vector<16xi16>
    %s = loop.dot %r, %x2, %z : vector<8xi32>, vector<2xi8>, vector<16xi16>
    loop.store %s, %acc[0] : memref<8xi32>, vector<8xi32>
    func.return
  }
}

// -----

// Without VNNI (Zen 3: AVX2): int8 weights known within +-64 (`narrow`) are vpmaddubsw
// (16-bit pair sums that cannot saturate) then vpmaddwd by ones; int16 pairs vpmaddwd.
// CHECK-LABEL: narrow:
// CHECK-NOT:     vpdpbusd
// CHECK:         vpmaddubsw
// CHECK:         vpmaddwd
// CHECK:         .Lfunc_end
builtin.module attributes {xweave.target = "llvm -mcpu=znver3"} {
  func.func @narrow(%acc: memref<8xi32>, %a: memref<4xui8>, %b: memref<32xi8>) attributes {xweave.kernel} {
    %v = loop.load %acc[0] : memref<8xi32> -> vector<8xi32>
    %x = loop.load %a[0] : memref<4xui8> -> vector<4xi8>
    %y = loop.load %b[0] : memref<32xi8> -> vector<32xi8>
    %r = loop.dot %v, %x, %y {narrow} : vector<8xi32>, vector<4xi8>, vector<32xi8>
    loop.store %r, %acc[0] : memref<8xi32>, vector<8xi32>
    func.return
  }
}

// -----

// Zen 3, int8 weights of any value: no saturating vpmaddubsw (exact 16-bit products);
// int16 data and weights (what graph-widen-weights gives such a target): vpmaddwd.
// CHECK-LABEL: exact:
// CHECK-NOT:     vpmaddubsw
// CHECK-NOT:     vpdpbusd
// CHECK:         .Lfunc_end
// CHECK-LABEL: words:
// CHECK-NEXT:    vpbroadcastd (%rsi)
// CHECK-NEXT:    vpmaddwd (%rdx)
// CHECK:         .Lfunc_end
builtin.module attributes {xweave.target = "llvm -mcpu=znver3"} {
  func.func @exact(%acc: memref<8xi32>, %a: memref<4xui8>, %b: memref<32xi8>) attributes {xweave.kernel} {
    %v = loop.load %acc[0] : memref<8xi32> -> vector<8xi32>
    %x = loop.load %a[0] : memref<4xui8> -> vector<4xi8>
    %y = loop.load %b[0] : memref<32xi8> -> vector<32xi8>
    %r = loop.dot %v, %x, %y : vector<8xi32>, vector<4xi8>, vector<32xi8>
    loop.store %r, %acc[0] : memref<8xi32>, vector<8xi32>
    func.return
  }
  func.func @words(%acc: memref<8xi32>, %a: memref<2xi16>, %w: memref<16xi16>) attributes {xweave.kernel} {
    %v = loop.load %acc[0] : memref<8xi32> -> vector<8xi32>
    %x = loop.load %a[0] : memref<2xi16> -> vector<2xi16>
    %z = loop.load %w[0] : memref<16xi16> -> vector<16xi16>
    %s = loop.dot %v, %x, %z : vector<8xi32>, vector<2xi16>, vector<16xi16>
    loop.store %s, %acc[0] : memref<8xi32>, vector<8xi32>
    func.return
  }
}

// -----

// A vector float -> 8-bit conversion (a requantize epilogue's last step) stays in
// vector registers: no lane-by-lane scalar conversions.
// CHECK-LABEL: narrow_convert:
// CHECK-NOT:     cvttss2si
// CHECK:         vroundps
// CHECK-NOT:     cvttss2si
// CHECK:         .Lfunc_end
builtin.module attributes {xweave.target = "llvm -mcpu=znver3"} {
  func.func @narrow_convert(%x: memref<8xf32>, %y: memref<8xui8>, %z: memref<8xi8>) attributes {xweave.kernel} {
    %v = loop.load %x[0] : memref<8xf32> -> vector<8xf32>
    %u = loop.convert fptoui %v : vector<8xf32> to vector<8xi8>
    loop.store %u, %y[0] : memref<8xui8>, vector<8xi8>
    %s = loop.convert fptosi %v : vector<8xf32> to vector<8xi8>
    loop.store %s, %z[0] : memref<8xi8>, vector<8xi8>
    func.return
  }
}
