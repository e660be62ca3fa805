// RUN: xweave-opt %s --split-input-file --verify-diagnostics | filecheck %s

%x = "test.op"() : () -> vector<8xi32>
%y = loop.convert extui %x : vector<8xi32> to vector<8xi16>
// CHECK: loop.convert: extui cannot convert vector<8xi32> to vector<8xi16>

// -----

%x = "test.op"() : () -> vector<8xi32>
%y = loop.convert sitofp %x : vector<8xi32> to vector<4xf32>
// CHECK: loop.convert: vector<8xi32> and vector<4xf32> differ in shape

// -----

%x = "test.op"() : () -> vector<8xi32>
%y = loop.convert roundf %x : vector<8xi32> to vector<8xf32>
// CHECK: loop.convert: unknown kind 'roundf'

// -----

%acc, %a, %b = "test.op"() : () -> (vector<8xi32>, vector<4xi8>, vector<16xi8>)
%d = loop.dot %acc, %a, %b : vector<8xi32>, vector<4xi8>, vector<16xi8>
// CHECK: loop.dot: b vector<16xi8> must hold 4 values per lane of vector<8xi32> (32)

// -----

%acc, %a, %b = "test.op"() : () -> (vector<8xi16>, vector<4xi8>, vector<32xi8>)
%d = loop.dot %acc, %a, %b : vector<8xi16>, vector<4xi8>, vector<32xi8>
// CHECK: loop.dot: expected i32 lanes in acc and result, got vector<8xi16> and vector<8xi16>

// -----

%acc, %a, %b = "test.op"() : () -> (vector<8xi32>, vector<2xi16>, vector<16xi8>)
%d = loop.dot %acc, %a, %b : vector<8xi32>, vector<2xi16>, vector<16xi8>
// CHECK: loop.dot: a must hold 8-bit values (or 16-bit ones, with 16-bit b), got vector<2xi16>

// -----

%acc, %a, %b = "test.op"() : () -> (vector<8xi32>, vector<2xi8>, vector<16xi16>)
%d = loop.dot %acc, %a, %b {narrow} : vector<8xi32>, vector<2xi8>, vector<16xi16>
// CHECK: loop.dot: narrow applies to 8-bit b only

// -----

%acc, %a, %b = "test.op"() : () -> (vector<8xi32>, vector<4xi8>, vector<32xi32>)
%d = loop.dot %acc, %a, %b : vector<8xi32>, vector<4xi8>, vector<32xi32>
// CHECK: loop.dot: b must hold 8- or 16-bit values, got vector<32xi32>
