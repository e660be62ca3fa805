// RUN: not xweave-opt %s -p 'tensorize{intrinsic="vta.load_inp" loop="nc.r"}' 2>&1 | filecheck %s --check-prefix=NC
// RUN: not xweave-opt %s -p 'tensorize{intrinsic="vta.load_inp" loop="sc.r"}' 2>&1 | filecheck %s --check-prefix=SC
// RUN: not xweave-opt %s -p 'tensorize{intrinsic="vta.load_inp" loop="na.r"}' 2>&1 | filecheck %s --check-prefix=NA
// RUN: not xweave-opt %s -p 'tensorize{intrinsic="vta.load_inp" loop="sw.r"}' 2>&1 | filecheck %s --check-prefix=SW
// RUN: not xweave-opt %s -p 'tensorize{intrinsic="vta.load_inp" loop="gs.r"}' 2>&1 | filecheck %s --check-prefix=GS
// RUN: not xweave-opt %s -p 'tensorize{intrinsic="vta.load_inp" loop="pb.r"}' 2>&1 | filecheck %s --check-prefix=PB
// RUN: not xweave-opt %s -p 'tensorize{intrinsic="vta.load_inp" loop="pv.r"}' 2>&1 | filecheck %s --check-prefix=PV
// RUN: not xweave-opt %s -p 'tensorize{intrinsic="vta.store" loop="nc.r"}' 2>&1 | filecheck %s --check-prefix=ST

// Copy nests tensorize refuses (each RUN line targets one nest): the body is not a
// copy, a buffer is in the wrong scope, an index is not affine, the window is not
// dense in the scratchpad or not a strided 2-D window in DRAM, or a guard zeroes more
// (or something else) than the DMA's padding would.


func.func @not_a_copy(%data: memref<1x1x4x4x1x16xi8>) {
  %inp = loop.alloc : memref<2048x1x16xi8, #loop.scope<vta.inp>>
  loop.for "nc.r" %r = 0 to 4 {
    loop.for "nc.c" %c = 0 to 4 {
      loop.for "nc.b" %b = 0 to 1 {
        loop.for "nc.e" %e = 0 to 16 {
          %x = loop.load %data[0, 0, %r, %c, %b, %e] : memref<1x1x4x4x1x16xi8>
          %one = arith.constant 1 : i8
          %y = arith.addi %x, %one : i8
          loop.store %y, %inp[%r * 4 + %c, %b, %e] : memref<2048x1x16xi8, #loop.scope<vta.inp>>
        }
      }
    }
  }
  func.return
}
// NC: tensorize vta.load_inp at loop 'nc.r': expected a read of 'src', found arith.addi

func.func @wrong_scope(%data: memref<1x1x4x4x1x16xi8>) {
  %inp = loop.alloc : memref<2048x1x16xi8, #loop.scope<vta.acc>>
  loop.for "sc.r" %r = 0 to 4 {
    loop.for "sc.c" %c = 0 to 4 {
      loop.for "sc.b" %b = 0 to 1 {
        loop.for "sc.e" %e = 0 to 16 {
          %x = loop.load %data[0, 0, %r, %c, %b, %e] : memref<1x1x4x4x1x16xi8>
          loop.store %x, %inp[%r * 4 + %c, %b, %e] : memref<2048x1x16xi8, #loop.scope<vta.acc>>
        }
      }
    }
  }
  func.return
}
// SC: tensorize vta.load_inp at loop 'sc.r': {{.*}}'dst' must be in scope vta.inp, but its buffer is in vta.acc

func.func @non_affine(%data: memref<1x1x8x4x1x16xi8>) {
  %inp = loop.alloc : memref<2048x1x16xi8, #loop.scope<vta.inp>>
  loop.for "na.r" %r = 0 to 4 {
    loop.for "na.c" %c = 0 to 4 {
      loop.for "na.b" %b = 0 to 1 {
        loop.for "na.e" %e = 0 to 16 {
          %two = arith.constant 2 : index
          %h = arith.muli %r, %two : index
          %x = loop.load %data[0, 0, %h, %c, %b, %e] : memref<1x1x8x4x1x16xi8>
          loop.store %x, %inp[%r * 4 + %c, %b, %e] : memref<2048x1x16xi8, #loop.scope<vta.inp>>
        }
      }
    }
  }
  func.return
}
// NA: tensorize vta.load_inp at loop 'na.r': {{.*}}is not affine in the loop variables

func.func @not_dense(%data: memref<1x1x4x4x1x16xi8>) {
  %inp = loop.alloc : memref<2048x1x16xi8, #loop.scope<vta.inp>>
  loop.for "sw.r" %r = 0 to 4 {
    loop.for "sw.c" %c = 0 to 4 {
      loop.for "sw.b" %b = 0 to 1 {
        loop.for "sw.e" %e = 0 to 16 {
          %x = loop.load %data[0, 0, %r, %c, %b, %e] : memref<1x1x4x4x1x16xi8>
          loop.store %x, %inp[%r * 5 + %c, %b, %e] : memref<2048x1x16xi8, #loop.scope<vta.inp>>
        }
      }
    }
  }
  func.return
}
// SW: tensorize vta.load_inp at loop 'sw.r': {{.*}}window element (1, 0) is not at scratchpad offset 4

func.func @transposed_window(%data: memref<1x1x4x4x1x16xi8>) {
  %inp = loop.alloc : memref<2048x1x16xi8, #loop.scope<vta.inp>>
  loop.for "gs.r" %r = 0 to 4 {
    loop.for "gs.c" %c = 0 to 4 {
      loop.for "gs.b" %b = 0 to 1 {
        loop.for "gs.e" %e = 0 to 16 {
          %x = loop.load %data[0, 0, %c, %r, %b, %e] : memref<1x1x4x4x1x16xi8>
          loop.store %x, %inp[%r * 4 + %c, %b, %e] : memref<2048x1x16xi8, #loop.scope<vta.inp>>
        }
      }
    }
  }
  func.return
}
// GS: tensorize vta.load_inp at loop 'gs.r': {{.*}}window element (0, 1) of the global buffer is not on a strided 2-D window

func.func @pad_too_tight(%data: memref<1x1x4x4x1x16xi8>) {
  %inp = loop.alloc : memref<2048x1x16xi8, #loop.scope<vta.inp>>
  loop.for "pb.r" %r = 0 to 4 {
    loop.for "pb.c" %c = 0 to 4 {
      loop.for "pb.b" %b = 0 to 1 {
        loop.for "pb.e" %e = 0 to 16 {
          %w = affine.apply affine_map<(d0) -> (d0 - 1)> (%c)
          %c0 = arith.constant 0 : index
          %c3 = arith.constant 3 : index
          %lo = arith.cmpi sge, %w, %c0 : index
          %hi = arith.cmpi slt, %w, %c3 : index
          %in = arith.andi %lo, %hi : i1
          %v = scf.if %in -> (i8) {
            %x = loop.load %data[0, 0, %r, %c - 1, %b, %e] : memref<1x1x4x4x1x16xi8>
            scf.yield %x : i8
          } else {
            %z = arith.constant 0 : i8
            scf.yield %z : i8
          }
          loop.store %v, %inp[%r * 4 + %c, %b, %e] : memref<2048x1x16xi8, #loop.scope<vta.inp>>
        }
      }
    }
  }
  func.return
}
// PB: tensorize vta.load_inp at loop 'pb.r': {{.*}}the pad condition is not a bound of the source buffer

func.func @pad_not_zero(%data: memref<1x1x4x4x1x16xi8>) {
  %inp = loop.alloc : memref<2048x1x16xi8, #loop.scope<vta.inp>>
  loop.for "pv.r" %r = 0 to 4 {
    loop.for "pv.c" %c = 0 to 4 {
      loop.for "pv.b" %b = 0 to 1 {
        loop.for "pv.e" %e = 0 to 16 {
          %w = affine.apply affine_map<(d0) -> (d0 - 1)> (%c)
          %c0 = arith.constant 0 : index
          %in = arith.cmpi sge, %w, %c0 : index
          %v = scf.if %in -> (i8) {
            %x = loop.load %data[0, 0, %r, %c - 1, %b, %e] : memref<1x1x4x4x1x16xi8>
            scf.yield %x : i8
          } else {
            %z = arith.constant 7 : i8
            scf.yield %z : i8
          }
          loop.store %v, %inp[%r * 4 + %c, %b, %e] : memref<2048x1x16xi8, #loop.scope<vta.inp>>
        }
      }
    }
  }
  func.return
}
// PV: tensorize vta.load_inp at loop 'pv.r': {{.*}}a padded read must yield 0 outside the source
// Wrong direction: a store copies from the accumulator scratchpad to DRAM.
// ST: tensorize vta.store at loop 'nc.r': 'dst' must be in scope global, but its buffer is in vta.inp
