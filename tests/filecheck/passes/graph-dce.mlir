// RUN: xweave-opt %s -p dce | filecheck %s

// Dead-code elimination of graph ops is xDSL's own `dce`: graph ops are Pure, so an
// op whose results are unused is erased, transitively; ops feeding a result stay.

// CHECK-LABEL: func.func @main
// CHECK-NEXT:    %w = graph.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
// CHECK-NEXT:    %y = graph.mul %x, %w
// CHECK-NEXT:    func.return %y
func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  %w = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %unused = graph.constant dense<[3.0, 4.0]> : tensor<2xf32>
  %d0 = graph.add %x, %unused : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %d1 = graph.relu %d0 : tensor<2xf32>
  %y = graph.mul %x, %w : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return %y : tensor<2xf32>
}

// Nothing dead: nothing changes.
// CHECK-LABEL: func.func @all_live
// CHECK-NEXT:    %r = graph.relu %x
// CHECK-NEXT:    %s = graph.sigmoid %r
// CHECK-NEXT:    func.return %r, %s
func.func @all_live(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
  %r = graph.relu %x : tensor<2xf32>
  %s = graph.sigmoid %r : tensor<2xf32>
  func.return %r, %s : tensor<2xf32>, tensor<2xf32>
}
