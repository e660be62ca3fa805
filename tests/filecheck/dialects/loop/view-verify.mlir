// RUN: xweave-opt %s --split-input-file --verify-diagnostics | filecheck %s

func.func @f(%a: memref<64xf32>) {
  %v = loop.view %a[0] : memref<64xf32> to memref<4xf32>
  func.return
}

// CHECK: source must be a static 1-D buffer of i8 (memref<Nxi8>), got memref<64xf32>

// -----

func.func @f(%a: memref<8x8xi8>) {
  %v = loop.view %a[0] : memref<8x8xi8> to memref<4xf32>
  func.return
}

// CHECK: source must be a static 1-D buffer of i8 (memref<Nxi8>), got memref<8x8xi8>

// -----

func.func @f(%a: memref<64xi8>) {
  %v = loop.view %a[0] : memref<64xi8> to memref<?xf32>
  func.return
}

// CHECK: result memref<?xf32> must have a static shape and no layout

// -----

func.func @f(%a: memref<64xi8>) {
  %v = loop.view %a[0] : memref<64xi8> to memref<4xf32, #loop.scope<local>>
  func.return
}

// CHECK: result scope local differs from the source scope global

// -----

func.func @f(%a: memref<64xi8>) {
  %v = loop.view %a[6] : memref<64xi8> to memref<4xf32>
  func.return
}

// CHECK: offset 6 must be a non-negative multiple of the element size 4

// -----

func.func @f(%a: memref<64xi8>) {
  %v = loop.view %a[-4] : memref<64xi8> to memref<4xf32>
  func.return
}

// CHECK: offset -4 must be a non-negative multiple of the element size 4

// -----

func.func @f(%a: memref<64xi8>) {
  %v = loop.view %a[48] : memref<64xi8> to memref<2x4xf32>
  func.return
}

// CHECK: the view [48, 80) does not fit in the 64 bytes of the source
