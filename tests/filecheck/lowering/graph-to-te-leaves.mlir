// RUN: xweave-opt %s -p convert-graph-to-te | filecheck %s

// A module without graph ops is left as it is: an existing kernel, scalar code.

func.func @k(%a: tensor<4xf32>) -> tensor<4xf32> attributes {xweave.kernel} {
  func.return %a : tensor<4xf32>
}
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = func.call @k(%a) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// CHECK:      func.func @k(%a: tensor<4xf32>) -> tensor<4xf32> attributes {xweave.kernel} {
// CHECK-NEXT:   func.return %a : tensor<4xf32>
// CHECK-NEXT: }
// CHECK-NEXT: func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT:   %0 = func.call @k(%a) : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:   func.return %0 : tensor<4xf32>
// CHECK-NEXT: }
