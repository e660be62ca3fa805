// RUN: xweave-opt %s -p graph-widen-weights --split-input-file | filecheck %s
// RUN: xweave-opt %s -p 'graph-widen-weights{force=true}' --split-input-file | filecheck %s --check-prefix=FORCE

// graph-widen-weights: on Zen 3 (no VNNI) the constant int8 weights of integer layers
// become int16 (vpmaddwd instead of the saturating vpmaddubsw); float layers and
// run-time weights are left alone.

// CHECK-LABEL: func.func @zen3
// CHECK:         %[[W:.*]] = graph.constant dense<{{.*}}1]], {{.*}}-128]]], {{.*}}127]], {{.*}}3]]]]> : tensor<2x2x1x1xi16>
// CHECK:         %{{.*}} = graph.conv2d %x, %[[W]], %b {{.*}} : (tensor<1x2x2x2xui8>, tensor<2x2x1x1xi16>, tensor<2xi32>) -> tensor<1x2x2x2xi32>
// CHECK:         graph.conv2d %f, %fw, %fb {{.*}} : (tensor<1x2x2x2xf32>, tensor<2x2x1x1xf32>, tensor<2xf32>)
// CHECK:         graph.dense %x8, %rt : (tensor<2x4xui8>, tensor<3x4xi8>) -> tensor<2x3xi32>
builtin.module attributes {xweave.target = "llvm -mcpu=znver3"} {
  func.func @zen3(%x: tensor<1x2x2x2xui8>, %f: tensor<1x2x2x2xf32>, %x8: tensor<2x4xui8>, %rt: tensor<3x4xi8>) -> (tensor<1x2x2x2xi32>, tensor<1x2x2x2xf32>, tensor<2x3xi32>) {
    %w = graph.constant dense<[[[[1]], [[-128]]], [[[127]], [[3]]]]> : tensor<2x2x1x1xi8>
    %b = graph.constant dense<[5, -5]> : tensor<2xi32>
    %y = graph.conv2d %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x2x2x2xui8>, tensor<2x2x1x1xi8>, tensor<2xi32>) -> tensor<1x2x2x2xi32>
    %fw = graph.constant dense<1.0> : tensor<2x2x1x1xf32>
    %fb = graph.constant dense<0.0> : tensor<2xf32>
    %g = graph.conv2d %f, %fw, %fb {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x2x2x2xf32>, tensor<2x2x1x1xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
    %d = graph.dense %x8, %rt : (tensor<2x4xui8>, tensor<3x4xi8>) -> tensor<2x3xi32>
    func.return %y, %g, %d : tensor<1x2x2x2xi32>, tensor<1x2x2x2xf32>, tensor<2x3xi32>
  }
}

// -----

// With VNNI (Ice Lake server) nothing changes (vpdpbusd is exact on int8); `force`
// widens anyway.

// CHECK-LABEL: func.func @icelake
// CHECK:         graph.dense %x, %{{.*}} : (tensor<2x4xui8>, tensor<3x4xi8>) -> tensor<2x3xi32>
// FORCE-LABEL: func.func @icelake
// FORCE:         graph.dense %x, %{{.*}} : (tensor<2x4xui8>, tensor<3x4xi16>) -> tensor<2x3xi32>
builtin.module attributes {xweave.target = "llvm -mcpu=icelake-server"} {
  func.func @icelake(%x: tensor<2x4xui8>) -> tensor<2x3xi32> {
    %w = graph.constant dense<7> : tensor<3x4xi8>
    %d = graph.dense %x, %w : (tensor<2x4xui8>, tensor<3x4xi8>) -> tensor<2x3xi32>
    func.return %d : tensor<2x3xi32>
  }
}
