// RUN: not xweave-opt %s -p 'graph-fuse{max-depth=0}' 2>&1 | filecheck %s

// CHECK: graph-fuse: max-depth must be at least 1, got 0

func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %e = graph.exp %x : tensor<4xf32>
  func.return %e : tensor<4xf32>
}
