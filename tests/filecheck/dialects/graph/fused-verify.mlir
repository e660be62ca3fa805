// RUN: xweave-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics 2>&1 | filecheck %s

// graph.fused and graph.yield: what the verifier and the parser reject.

%x = "test.op"() : () -> tensor<4xf32>
%y = graph.fused (%a = %x) : (tensor<4xf32>) -> tensor<4xi32> {
  %e = graph.exp %a : tensor<4xf32>
  graph.yield %e : tensor<4xf32>
}
// CHECK: graph.fused: yielded types (tensor<4xf32>) must equal the result types (tensor<4xi32>)

// -----

%x = "test.op"() : () -> tensor<4xf32>
%y = "graph.fused"(%x) ({
^bb0(%a: tensor<8xf32>):
  %e = graph.exp %a : tensor<8xf32>
  graph.yield %e : tensor<8xf32>
}) : (tensor<4xf32>) -> tensor<8xf32>
// CHECK: graph.fused: block argument types (tensor<8xf32>) must equal the operand types (tensor<4xf32>)

// -----

%x = "test.op"() : () -> tensor<4xf32>
%y = graph.fused (%a = %x) : (tensor<4xf32>) -> tensor<4xf32> {
  %c = graph.constant dense<1.0> : tensor<4xf32>
  %e = graph.add %a, %c : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  graph.yield %e : tensor<4xf32>
}
// CHECK: graph.fused: graph.constant must stay outside the group (pass it as an operand)

// -----

%x = "test.op"() : () -> tensor<4xf32>
%y = graph.fused (%a = %x) : (tensor<4xf32>) -> tensor<4xf32> {
  %i = graph.fused (%b = %a) : (tensor<4xf32>) -> tensor<4xf32> {
    %e = graph.exp %b : tensor<4xf32>
    graph.yield %e : tensor<4xf32>
  }
  graph.yield %i : tensor<4xf32>
}
// CHECK: graph.fused: groups cannot be nested

// -----

%x = "test.op"() : () -> tensor<4xf32>
%y = graph.fused (%a = %x) : (tensor<4xf32>) -> tensor<4xf32> {
  %t = "test.op"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  graph.yield %t : tensor<4xf32>
}
// CHECK: graph.fused: only graph ops may be fused, found test.op

// -----

%x = "test.op"() : () -> tensor<4xf32>
%y = graph.fused (%a = %x) : (tensor<4xf32>) -> tensor<4xf32> {
  graph.yield %a : tensor<4xf32>
}
// CHECK: graph.fused: a yielded value must be computed inside the group, not be one of its arguments

// -----

%x = "test.op"() : () -> tensor<4xf32>
%y = graph.fused (%a = %x) : (tensor<4xf32>) -> tensor<4xf32> {
  %e = graph.exp %x : tensor<4xf32>
  graph.yield %e : tensor<4xf32>
}
// CHECK: Operation using value defined out of its IsolatedFromAbove parent

// -----

%x = "test.op"() : () -> tensor<4xf32>
%y = "graph.fused"(%x) ({
^bb0(%a: tensor<4xf32>):
  %e = graph.exp %a : tensor<4xf32>
}) : (tensor<4xf32>) -> tensor<4xf32>
// CHECK: graph.fused: the body must end in graph.yield

// -----

%x = "test.op"() : () -> tensor<4xf32>
%y = graph.fused (%a = %x, %b = %x) : (tensor<4xf32>) -> tensor<4xf32> {
  graph.yield %a : tensor<4xf32>
}
// CHECK: graph.fused binds 2 arguments but its type lists 1 operands

// -----

%x = "test.op"() : () -> tensor<4xf32>
"graph.yield"(%x) : (tensor<4xf32>) -> ()
// CHECK: 'graph.yield' expects parent op 'graph.fused'
