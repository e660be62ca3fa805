// RUN: XWEAVE_ROUNDTRIP
// RUN: XWEAVE_GENERIC_ROUNDTRIP

// graph.fused: block arguments bound to the operands, graph ops inside, graph.yield.

func.func @main(%x: tensor<1x2x4x4xf32>, %b: tensor<2xf32>) -> tensor<1x2x4x4xf32> {
  %w = graph.constant dense<1.0> : tensor<2x2x3x3xf32>
  %y = graph.fused (%a = %x, %ww = %w, %bb = %b) : (tensor<1x2x4x4xf32>, tensor<2x2x3x3xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32> {
    %c = graph.conv2d %a, %ww, %bb {dilations = array<i64: 1, 1>, groups = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x2x4x4xf32>, tensor<2x2x3x3xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
    %r = graph.relu %c : tensor<1x2x4x4xf32>
    graph.yield %r : tensor<1x2x4x4xf32>
  } attributes {note = "kept"}
  func.return %y : tensor<1x2x4x4xf32>
}

// CHECK:      %y = graph.fused (%a = %x, %ww = %w, %bb = %b) : (tensor<1x2x4x4xf32>, tensor<2x2x3x3xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32> {
// CHECK-NEXT:   %c = graph.conv2d %a, %ww, %bb {{.*}} -> tensor<1x2x4x4xf32>
// CHECK-NEXT:   %r = graph.relu %c : tensor<1x2x4x4xf32>
// CHECK-NEXT:   graph.yield %r : tensor<1x2x4x4xf32>
// CHECK-NEXT: } attributes {note = "kept"}
// CHECK-NEXT: func.return %y : tensor<1x2x4x4xf32>

// CHECK-GENERIC:      %y = "graph.fused"(%x, %w, %b) ({
// CHECK-GENERIC-NEXT: ^bb0(%a: tensor<1x2x4x4xf32>, %ww: tensor<2x2x3x3xf32>, %bb: tensor<2xf32>):
// CHECK-GENERIC:        "graph.yield"(%r) : (tensor<1x2x4x4xf32>) -> ()
// CHECK-GENERIC-NEXT: }) {note = "kept"} : (tensor<1x2x4x4xf32>, tensor<2x2x3x3xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>

// -----

// Two results.
func.func @two(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %y:2 = graph.fused (%a = %x) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
    %e = graph.exp %a : tensor<4xf32>
    %n = graph.neg %e : tensor<4xf32>
    graph.yield %e, %n : tensor<4xf32>, tensor<4xf32>
  }
  func.return %y#0, %y#1 : tensor<4xf32>, tensor<4xf32>
}

// CHECK:      %y, %y_1 = graph.fused (%a = %x) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
// CHECK:        graph.yield %e, %n : tensor<4xf32>, tensor<4xf32>
// CHECK-GENERIC: "graph.yield"(%e, %n) : (tensor<4xf32>, tensor<4xf32>) -> ()
