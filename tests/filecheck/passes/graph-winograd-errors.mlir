// RUN: not xweave-opt %s -p 'graph-winograd{tile=6}' 2>&1 | filecheck %s

// CHECK: graph-winograd: tile must be 1 to 4, got 6
func.func @f(%x: tensor<1x2x5x5xf32>) -> tensor<1x2x5x5xf32> {
  func.return %x : tensor<1x2x5x5xf32>
}
