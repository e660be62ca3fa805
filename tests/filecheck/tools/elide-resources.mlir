// RUN: xweave-opt %s --elide-resources-larger-than 16 | filecheck %s
// RUN: xweave-opt %s --elide-resources-larger-than 16 | xweave-opt | filecheck %s
// RUN: xweave-opt %s | filecheck %s --check-prefix=KEEP
// RUN: xweave-opt %s --elide-resources-larger-than 16 | not xweave-opt -p graph-fold-constants 2>&1 | filecheck %s --check-prefix=NEEDED

// Blobs of more than 16 bytes are printed as "__elided__" (as MLIR's
// --mlir-elide-resource-strings-if-larger): the IR still parses and prints the same
// (second RUN line), but a pass that needs the values (folding the add of two
// constants) fails in one line naming the blob and how to keep it. By default every
// blob is printed.

builtin.module {
  func.func @main() -> tensor<8xf32> {
    %a = graph.constant dense_resource<big> : tensor<8xf32>
    %b = graph.constant dense_resource<small> : tensor<4xf32>
    %c = graph.constant dense_resource<big> : tensor<8xf32>
    %s = graph.add %a, %c : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
    func.return %s : tensor<8xf32>
  }
}

{-#
  dialect_resources: {
    builtin: {
      big: "0x040000000000803F0000004000004040000080400000A0400000C0400000E04000000041",
      small: "0x040000000000803F000000400000404000008040"
    }
  }
#-}

// CHECK:      graph.constant dense_resource<big> : tensor<8xf32>
// CHECK:      dialect_resources
// CHECK:      big: "__elided__"
// CHECK-SAME: small: "0x040000000000803F000000400000404000008040"

// KEEP:       big: "0x040000000000803F0000004000004040000080400000A0400000C0400000E04000000041"
// KEEP-SAME:  small: "0x040000000000803F000000400000404000008040"

// NEEDED: error: dense_resource<big>: its data was elided when this IR was written {{.*}} --elide-resources-larger-than 0 to keep the weights
