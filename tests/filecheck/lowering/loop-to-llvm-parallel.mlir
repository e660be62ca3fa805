// RUN: xweave-opt %s -p convert-loop-to-llvm | filecheck %s

// A parallel loop: its body is outlined into an internal function taking the captured
// values as arguments (pointers keep noalias/dereferenceable) and the iteration range
// [begin, end); a worker unpacks the captured values from a stack block and runs its
// thread's contiguous chunk; the kernel calls GOMP_parallel(worker, block, nthreads, 0),
// or the body directly when one thread is asked for. Nested parallel loops are serial.

builtin.module {
  func.func @scale(%x: memref<4x8xf32>, %y: memref<4x8xf32>, %s: memref<1xf32>) attributes {xweave.kernel} {
    %two = arith.constant 2.0 : f32
    %f = loop.load %s[0] : memref<1xf32>
    loop.for "sc.i" %i = 0 to 4 parallel {
      loop.for "sc.j" %j = 0 to 8 parallel {
        %v = loop.load %x[%i, %j] : memref<4x8xf32>
        %p = arith.mulf %v, %f : f32
        %q = arith.addf %p, %two : f32
        loop.store %q, %y[%i, %j] : memref<4x8xf32>
      }
    }
    func.return
  }
  func.func @rows(%x: memref<4x16xf32>, %y: memref<4xf32>) attributes {xweave.kernel} {
    %zero = arith.constant 0.0 : f32
    loop.for "r.o" %o = 0 to 2 {
      loop.for "r.i" %i = 0 to 2 parallel {
        %acc = loop.alloc : memref<1xf32, #loop.scope<local>>
        %big = loop.alloc : memref<16xf32>
        loop.store %zero, %acc[0] : memref<1xf32, #loop.scope<local>>
        loop.for "r.k" %k = 0 to 16 {
          %v = loop.load %x[%o * 2 + %i, %k] : memref<4x16xf32>
          %a = loop.load %acc[0] : memref<1xf32, #loop.scope<local>>
          %s = arith.addf %a, %v : f32
          loop.store %s, %acc[0] : memref<1xf32, #loop.scope<local>>
          loop.store %s, %big[%k] : memref<16xf32>
        }
        %r = loop.load %acc[0] : memref<1xf32, #loop.scope<local>>
        loop.store %r, %y[%o * 2 + %i] : memref<4xf32>
      }
    }
    func.return
  }
}

// CHECK-LABEL: llvm.func @scale(
// CHECK-SAME:    %[[X:[0-9]+]]: !llvm.ptr {llvm.noalias, llvm.dereferenceable = 128 : i64}, %[[Y:[0-9]+]]: !llvm.ptr {llvm.noalias, llvm.dereferenceable = 128 : i64}, %[[S:[0-9]+]]: !llvm.ptr
// CHECK-DAG:     %[[N:[0-9]+]] = llvm.mlir.constant(4 : i32) : i32
// CHECK-DAG:     %[[ONE:[0-9]+]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-DAG:     %[[C0:[0-9]+]] = llvm.mlir.constant(0) : i64
// CHECK-DAG:     %[[C4:[0-9]+]] = llvm.mlir.constant(4) : i64
// CHECK-DAG:     %[[FLAGS:[0-9]+]] = llvm.mlir.constant(0 : i32) : i32
// The block of captured values: 3 x 8 bytes on the stack.
// CHECK:         %[[DATA:[0-9]+]] = llvm.alloca %{{[0-9]+}} x i64 {alignment = 32 : i64} : (i64) -> !llvm.ptr
// CHECK-NEXT:    %[[F:[0-9]+]] = llvm.load %[[S]] {alignment = 4 : i64} : !llvm.ptr -> f32
// The thread count: the object's global, at most the trip count.
// CHECK-NEXT:    %[[G:[0-9]+]] = llvm.mlir.addressof @xweave_num_threads : !llvm.ptr
// CHECK-NEXT:    %[[REQ:[0-9]+]] = llvm.load %[[G]] {alignment = 4 : i64} : !llvm.ptr -> i32
// CHECK-NEXT:    %[[LT:[0-9]+]] = llvm.icmp "ult" %[[REQ]], %[[N]] : i32
// CHECK-NEXT:    %[[NT:[0-9]+]] = llvm.select %[[LT]], %[[REQ]], %[[N]] : i1, i32
// CHECK-NEXT:    %[[SINGLE:[0-9]+]] = llvm.icmp "eq" %[[NT]], %[[ONE]] : i32
// CHECK-NEXT:    llvm.cond_br %[[SINGLE]], ^[[SERIAL:bb[0-9]+]], ^[[THREADED:bb[0-9]+]]
// CHECK-NEXT:  ^[[SERIAL]]:
// CHECK-NEXT:    llvm.call @scale_parallel0_body(%[[X]], %[[F]], %[[Y]], %[[C0]], %[[C4]]) : (!llvm.ptr, f32, !llvm.ptr, i64, i64) -> ()
// CHECK-NEXT:    llvm.br ^[[JOIN:bb[0-9]+]]
// CHECK-NEXT:  ^[[THREADED]]:
// CHECK-NEXT:    llvm.store %[[X]], %[[DATA]] {alignment = 8 : i64} : !llvm.ptr, !llvm.ptr
// CHECK-NEXT:    %[[P1:[0-9]+]] = llvm.getelementptr inbounds %[[DATA]][8] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK-NEXT:    llvm.store %[[F]], %[[P1]] {alignment = 4 : i64} : f32, !llvm.ptr
// CHECK-NEXT:    %[[P2:[0-9]+]] = llvm.getelementptr inbounds %[[DATA]][16] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK-NEXT:    llvm.store %[[Y]], %[[P2]] {alignment = 8 : i64} : !llvm.ptr, !llvm.ptr
// CHECK-NEXT:    %[[W:[0-9]+]] = llvm.mlir.addressof @scale_parallel0 : !llvm.ptr
// CHECK-NEXT:    llvm.call @GOMP_parallel(%[[W]], %[[DATA]], %[[NT]], %[[FLAGS]]) : (!llvm.ptr, !llvm.ptr, i32, i32) -> ()
// CHECK-NEXT:    llvm.br ^[[JOIN]]
// CHECK-NEXT:  ^[[JOIN]]:
// CHECK-NEXT:    llvm.return

// A parallel loop inside a serial one: the outer variable is captured (i64); buffers
// allocated in the body are per thread: an alloca, a heap buffer freed at the end.
// CHECK-LABEL: llvm.func @rows(
// CHECK:         ^[[OUTER:bb[0-9]+]](%[[O:[0-9]+]]: i64):
// CHECK:         llvm.call @rows_parallel0_body(%{{[0-9]+}}, %[[O]], %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}) : (!llvm.ptr, i64, !llvm.ptr, i64, i64) -> ()
// CHECK:         llvm.store %[[O]], %{{[0-9]+}} {alignment = 8 : i64} : i64, !llvm.ptr
// CHECK:         llvm.call @GOMP_parallel(
// The body: iterations [begin, end) of the outer loop; the constant 2.0 is rebuilt; the
// inner parallel loop is an ordinary serial loop.
// CHECK-LABEL: llvm.func internal @scale_parallel0_body(
// CHECK-SAME:    %[[BX:[0-9]+]]: !llvm.ptr {llvm.dereferenceable = 128 : i64, llvm.noalias}, %[[BF:[0-9]+]]: f32, %[[BY:[0-9]+]]: !llvm.ptr {llvm.dereferenceable = 128 : i64, llvm.noalias}, %[[BEGIN:[0-9]+]]: i64, %[[END:[0-9]+]]: i64) attributes {xweave.outlined} {
// CHECK:         %[[TWO:[0-9]+]] = llvm.mlir.constant(2.000000e+00 : f32) : f32
// CHECK:         llvm.br ^[[CHECK:bb[0-9]+]](%[[BEGIN]] : i64)
// CHECK-NEXT:  ^[[CHECK]](%[[T:[0-9]+]]: i64):
// CHECK-NEXT:    %[[MORE:[0-9]+]] = llvm.icmp "slt" %[[T]], %[[END]] : i64
// CHECK-NEXT:    llvm.cond_br %[[MORE]], ^[[BODY:bb[0-9]+]](%[[T]] : i64), ^[[EXIT:bb[0-9]+]]
// CHECK-NEXT:  ^[[BODY]](%[[I:[0-9]+]]: i64):
// CHECK-NEXT:    llvm.br ^[[INNER:bb[0-9]+]](%{{[0-9]+}} : i64)
// CHECK-NEXT:  ^[[INNER]](%[[J:[0-9]+]]: i64):
// CHECK:         %[[V:[0-9]+]] = llvm.load %{{[0-9]+}} {alignment = 4 : i64} : !llvm.ptr -> f32
// CHECK-NEXT:    %[[P:[0-9]+]] = llvm.fmul %[[V]], %[[BF]] {fastmathFlags = #llvm.fastmath<contract>} : f32
// CHECK-NEXT:    %{{[0-9]+}} = llvm.fadd %[[P]], %[[TWO]] {fastmathFlags = #llvm.fastmath<contract>} : f32
// CHECK:         llvm.cond_br %{{[0-9]+}}, ^[[INNER]](%{{[0-9]+}} : i64), ^[[LATCH:bb[0-9]+]]
// CHECK-NEXT:  ^[[LATCH]]:
// CHECK-NEXT:    %[[NEXT:[0-9]+]] = llvm.add %[[I]], %{{[0-9]+}} overflow<nsw,nuw> : i64
// CHECK-NEXT:    llvm.br ^[[CHECK]](%[[NEXT]] : i64)
// CHECK-NEXT:  ^[[EXIT]]:
// CHECK-NEXT:    llvm.return

// The worker: its chunk [tid * 4 / nth, (tid + 1) * 4 / nth).
// CHECK-LABEL: llvm.func internal @scale_parallel0(
// CHECK-SAME:    %[[D:[0-9]+]]: !llvm.ptr) attributes {xweave.outlined} {
// CHECK:         %[[WX:[0-9]+]] = llvm.load %[[D]] {alignment = 8 : i64} : !llvm.ptr -> !llvm.ptr
// CHECK:         %[[WF:[0-9]+]] = llvm.load %{{[0-9]+}} {alignment = 4 : i64} : !llvm.ptr -> f32
// CHECK:         %[[WY:[0-9]+]] = llvm.load %{{[0-9]+}} {alignment = 8 : i64} : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT:    %[[TID:[0-9]+]] = llvm.call @omp_get_thread_num() : () -> i32
// CHECK-NEXT:    %[[NTH:[0-9]+]] = llvm.call @omp_get_num_threads() : () -> i32
// CHECK:         %[[B:[0-9]+]] = llvm.sdiv
// CHECK:         %[[E:[0-9]+]] = llvm.sdiv
// CHECK-NEXT:    llvm.call @scale_parallel0_body(%[[WX]], %[[WF]], %[[WY]], %[[B]], %[[E]]) : (!llvm.ptr, f32, !llvm.ptr, i64, i64) -> ()
// CHECK-NEXT:    llvm.return

// @rows's body: its buffers are allocated per thread, the heap one freed at the end.
// CHECK-LABEL: llvm.func internal @rows_parallel0_body(
// CHECK:         %{{[0-9]+}} = llvm.alloca %{{[0-9]+}} x f32 {alignment = 32 : i64} : (i64) -> !llvm.ptr
// CHECK-NEXT:    %[[HEAP:[0-9]+]] = llvm.call @aligned_alloc(
// CHECK:         llvm.call @free(%[[HEAP]]) : (!llvm.ptr) -> ()
// CHECK-NEXT:    llvm.return
// CHECK-LABEL: llvm.func internal @rows_parallel0(

// The thread count global (0 until the runtime sets it) and libgomp's entry points.
// CHECK:       llvm.mlir.global external @xweave_num_threads(0 : i32) {addr_space = 0 : i32, alignment = 4 : i64} : i32
// CHECK-DAG:   llvm.func @omp_get_thread_num() -> i32
// CHECK-DAG:   llvm.func @omp_get_num_threads() -> i32
// CHECK-DAG:   llvm.func @GOMP_parallel(!llvm.ptr, !llvm.ptr, i32, i32)
