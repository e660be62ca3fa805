// RUN: xweave-opt %s -p convert-te-to-loop | filecheck %s

// te kernels become destination-passing loop kernels; each te.compute fills a buffer
// (a temporary or the output); index arithmetic folds into the access maps. @main is
// bufferized: constants become loop.global, call results are written straight into
// the output buffers, returned inputs/constants are copied. Declarations stay.

func.func @add_relu(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> attributes {xweave.kernel} {
  %s = te.compute (%i, %j) in [2, 3] {
    %0 = te.extract %a[%i, %j] : tensor<2x3xf32>
    %1 = te.extract %b[%j] : tensor<3xf32>
    %2 = arith.addf %0, %1 : f32
    te.yield %2 : f32
  } {name = "add"} : tensor<2x3xf32>
  %r = te.compute (%i, %j) in [2, 3] reduce max (%k) in [4] {
    %c2 = arith.constant 2 : index
    %k2 = arith.floordivsi %k, %c2 : index
    %0 = te.extract %s[%i, %k2] : tensor<2x3xf32>
    te.yield %0 : f32
  } {name = "rmax"} : tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}
func.func @main(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<3xf32>) {
  %w = graph.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %0 = func.call @add_relu(%a, %w) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  func.return %0, %a, %w : tensor<2x3xf32>, tensor<2x3xf32>, tensor<3xf32>
}
func.func private @external(tensor<2xf32>) -> tensor<2xf32>

// CHECK:      func.func @add_relu(%a: memref<2x3xf32>, %b: memref<3xf32>, %out: memref<2x3xf32>) attributes {xweave.kernel} {
// CHECK-NEXT:   %add = loop.alloc : memref<2x3xf32>
// CHECK-NEXT:   loop.for "add.i" %i = 0 to 2 {
// CHECK-NEXT:     loop.for "add.j" %j = 0 to 3 {
// CHECK-NEXT:       %{{.*}} = loop.load %a[%i, %j] : memref<2x3xf32>
// CHECK-NEXT:       %{{.*}} = loop.load %b[%j] : memref<3xf32>
// CHECK-NEXT:       %[[SUM:.*]] = arith.addf
// CHECK-NEXT:       loop.store %[[SUM]], %add[%i, %j] : memref<2x3xf32>
// The reduction: an init nest, then a perfect update nest over spatial and reduce axes.
// CHECK:        loop.for "rmax_init.i" %[[I0:.*]] = 0 to 2 {
// CHECK-NEXT:     loop.for "rmax_init.j" %[[J0:.*]] = 0 to 3 {
// CHECK-NEXT:       %[[INIT:.*]] = arith.constant 0xff800000 : f32
// CHECK-NEXT:       loop.store %[[INIT]], %out[%[[I0]], %[[J0]]] : memref<2x3xf32>
// CHECK:        loop.for "rmax.i" %[[I:.*]] = 0 to 2 {
// CHECK-NEXT:     loop.for "rmax.j" %[[J:.*]] = 0 to 3 {
// CHECK-NEXT:       loop.for "rmax.k" %k = 0 to 4 {
// CHECK-NEXT:         %[[V:.*]] = loop.load %add[%[[I]], %k floordiv 2] : memref<2x3xf32>
// CHECK-NEXT:         %[[ACC:.*]] = loop.load %out[%[[I]], %[[J]]] : memref<2x3xf32>
// CHECK-NEXT:         %[[M:.*]] = arith.maximumf %[[ACC]], %[[V]] : f32
// CHECK-NEXT:         loop.store %[[M]], %out[%[[I]], %[[J]]] : memref<2x3xf32>
// CHECK:        func.return
// CHECK:      loop.global @const : memref<3xf32> = dense<[1.000000e+00, 2.000000e+00, 3.000000e+00]> : tensor<3xf32>
// CHECK-NEXT: func.func @main(%a: memref<2x3xf32>, %b: memref<3xf32>, %out: memref<2x3xf32>, %out_1: memref<2x3xf32>, %out_2: memref<3xf32>) {
// CHECK-NEXT:   %w = loop.get_global @const : memref<3xf32>
// CHECK-NEXT:   func.call @add_relu(%a, %w, %out) : (memref<2x3xf32>, memref<3xf32>, memref<2x3xf32>) -> ()
// CHECK:          loop.store %{{.*}}, %out_1[%{{.*}}, %{{.*}}] : memref<2x3xf32>
// CHECK:        loop.store %{{.*}}, %out_2[%{{.*}}] : memref<3xf32>
// CHECK:        func.return
// CHECK:      func.func private @external(tensor<2xf32>) -> tensor<2xf32>
