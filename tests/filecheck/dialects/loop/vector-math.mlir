// RUN: xweave-opt %s | xweave-opt | filecheck %s

// loop.convert and loop.dot round-trip through their custom syntax.

// CHECK-LABEL: func.func @convert
// CHECK-NEXT:    %{{.*}} = loop.convert extui %b : vector<8xi8> to vector<8xi32>
// CHECK-NEXT:    %{{.*}} = loop.convert sitofp %{{.*}} : vector<8xi32> to vector<8xf32>
// CHECK-NEXT:    %{{.*}} = loop.convert fptoui %{{.*}} : vector<8xf32> to vector<8xi8>
// CHECK-NEXT:    %{{.*}} = loop.convert trunci %{{.*}} : i32 to i16
func.func @convert(%b: vector<8xi8>, %s: i32) -> (vector<8xi8>, i16) {
  %w = loop.convert extui %b : vector<8xi8> to vector<8xi32>
  %f = loop.convert sitofp %w : vector<8xi32> to vector<8xf32>
  %q = loop.convert fptoui %f : vector<8xf32> to vector<8xi8>
  %t = loop.convert trunci %s : i32 to i16
  func.return %q, %t : vector<8xi8>, i16
}

// CHECK-LABEL: func.func @dot
// CHECK-NEXT:    %[[D:.*]] = loop.dot %acc, %a, %b : vector<8xi32>, vector<4xi8>, vector<32xi8>
// CHECK-NEXT:    %[[N:.*]] = loop.dot %[[D]], %a, %b {narrow} : vector<8xi32>, vector<4xi8>, vector<32xi8>
// CHECK-NEXT:    %{{.*}} = loop.dot %[[N]], %h, %w : vector<8xi32>, vector<2xi16>, vector<16xi16>
func.func @dot(%acc: vector<8xi32>, %a: vector<4xi8>, %b: vector<32xi8>, %h: vector<2xi16>,
               %w: vector<16xi16>) -> vector<8xi32> {
  %d = loop.dot %acc, %a, %b : vector<8xi32>, vector<4xi8>, vector<32xi8>
  %n = loop.dot %d, %a, %b {narrow} : vector<8xi32>, vector<4xi8>, vector<32xi8>
  %e = loop.dot %n, %h, %w : vector<8xi32>, vector<2xi16>, vector<16xi16>
  func.return %e : vector<8xi32>
}
