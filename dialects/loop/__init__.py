"""
The `loop` dialect: explicit loop nests over buffers, where schedules happen.

Loops have constant bounds and a kind (how the loop is executed), buffers are builtin
`memref`s whose memory space is a `#loop.scope<...>`, and every buffer access is an
affine map of `index` values, so tiling, reordering, vectorizing, unrolling,
parallelizing, packing and compute-at are rewrites of bounds and affine maps:

```mlir
%acc = loop.alloc : memref<4x16xf32, #loop.scope<local>>
loop.for %i = 0 to 64 step 4 parallel {
  loop.for %k = 0 to 3 {
    %a = loop.load %A[%i * 2 + %k, %j] : memref<136x16xf32>
    %v = loop.load %B[%k, %j] : memref<3x64xf32> -> vector<8xf32>
    loop.store %v, %C[%i, %j] : memref<64x64xf32>, vector<8xf32>
  }
}
```

Loops carry no values: accumulation goes through memory (LLVM promotes small local
buffers to registers). Scalar math is `arith`/`math`, conditionals `scf.if`, and vectors `vector`.

The ops and attributes are importable from here; each concept has its module:
`attributes` (loop kinds, memory scopes), `loops`, `buffers` (allocation, globals,
views, buffer sizes), `access` (loads, stores, prefetches), `affine_syntax`,
`accelerator` (intrinsic calls, dependency tokens), `vector_math` (conversions of
vectors, integer dot products) and `kernels`.
"""

from __future__ import annotations

from xdsl.ir import Dialect

from xweave.dialects.loop.access import LoadOp, MemoryAccess, PrefetchOp, StoreOp
from xweave.dialects.loop.accelerator import DepPopOp, DepPushOp, IntrinsicOp
from xweave.dialects.loop.attributes import (
    GLOBAL_SCOPE,
    INT64_MAX,
    INT64_MIN,
    LOCAL_SCOPE,
    ForKind,
    ForKindAttr,
    ScopeAttr,
    i64_attr,
    parse_i64,
    scope_of,
)
from xweave.dialects.loop.buffers import (
    AllocOp,
    GetGlobalOp,
    GlobalOp,
    ViewOp,
    buffer_bytes,
    element_bytes,
)
from xweave.dialects.loop.kernels import KERNEL_ATTR, is_kernel, mark_kernel
from xweave.dialects.loop.loops import ForOp, YieldOp
from xweave.dialects.loop.vector_math import CONVERSIONS, ConvertOp, DotOp

__all__ = [
    "CONVERSIONS", "GLOBAL_SCOPE", "INT64_MAX", "INT64_MIN", "KERNEL_ATTR", "LOCAL_SCOPE",
    "AllocOp", "ConvertOp", "DepPopOp", "DepPushOp", "DotOp", "ForKind", "ForKindAttr", "ForOp", "GetGlobalOp", "GlobalOp",
    "IntrinsicOp", "LoadOp", "Loop", "MemoryAccess", "PrefetchOp", "ScopeAttr", "StoreOp",
    "ViewOp", "YieldOp", "buffer_bytes", "element_bytes", "i64_attr", "is_kernel",
    "mark_kernel", "parse_i64", "scope_of",
]

Loop = Dialect(
    "loop",
    [ForOp, YieldOp, AllocOp, GlobalOp, GetGlobalOp, LoadOp, StoreOp, PrefetchOp, ViewOp,
     IntrinsicOp, DepPushOp, DepPopOp, ConvertOp, DotOp],
    [ForKindAttr, ScopeAttr],
)
