"""The `graph` dialect: whole-tensor deep-learning operators with static shapes.

This is the first IR stage (see docs/architecture.md): the ONNX frontend produces
`graph` ops on builtin `tensor<...>` values inside `func.func @main`, and
`convert-graph-to-te` lowers every op except `graph.constant` to tensor expressions.

Every op class carries `pattern_kind` (TVM's operator pattern) so that fusion can
decide what may be grouped. Static data (strides, pads, ...) lives in properties,
written in the attribute dictionary:

```mlir
%w = graph.constant dense_resource<conv1_w_1a2b3c4d> : tensor<4x3x3x3xf32>
%y = graph.conv2d %x, %w {dilations = array<i64: 1, 1>, groups = 1 : i64,
                          pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>}
     : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
%r = graph.relu %y : tensor<1x4x8x8xf32>
```

Weights are `dense_resource` blobs kept in the builtin dialect's resource store and
printed in the module's `{-# dialect_resources: {builtin: {...}} #-}` section, so the
text form round-trips on its own (`ConstantOp.from_array`, `constants.constant_value`).

Data is float32; a few ops also carry other element types: comparisons produce `i1`
tensors, which `graph.where`, `graph.not`/`and`/`or`/`xor` consume; `graph.gather`
takes integer indices; `graph.cast` converts between element types. Quantized models
compute on 8-bit integers (`i8`, `ui8`): `graph.quantize`, `graph.dequantize` and
`graph.requantize` convert (`quantize`), and conv2d/dense/matmul on integer operands
accumulate in `i32`. Every other op has one element type for its operands and results.

The ops are importable from here; the helpers stay in their modules: result-shape
rules in `shapes`, property declarations and their attributes in `properties`, tensor
types of values in `tensors`, `constant_value` in `constants`, Winograd tiling in
`winograd`. The weight blob store is `xweave.dialects.resources` (the builtin
dialect's, imported without this dialect by whatever parses or prints IR).
"""

from __future__ import annotations

from xdsl.ir import Dialect

from xweave.dialects.graph.base import (  # noqa: F401
    GraphOperation,
    PatternKind,
    pattern_kind_def,
)
from xweave.dialects.graph.constants import ConstantOp  # noqa: F401
from xweave.dialects.graph.data import (  # noqa: F401
    PAD_MODES,
    BroadcastToOp,
    ConcatOp,
    GatherOp,
    LayoutTransformOp,
    PadOp,
    ReshapeOp,
    SliceOp,
    TileOp,
    TransposeOp,
)
from xweave.dialects.graph.elementwise import (  # noqa: F401
    GELU_APPROXIMATIONS,
    AbsOp,
    AddOp,
    AndOp,
    BinaryOperation,
    CastOp,
    CeilOp,
    ClipOp,
    CompareOperation,
    CosOp,
    DivOp,
    EluOp,
    EqualOp,
    ErfOp,
    ExpOp,
    FloorOp,
    GeluOp,
    GreaterEqualOp,
    GreaterOp,
    HardSigmoidOp,
    HardSwishOp,
    LeakyReluOp,
    LessEqualOp,
    LessOp,
    LogOp,
    MaxOp,
    MinOp,
    MulOp,
    NegOp,
    NotOp,
    OrOp,
    PowOp,
    PreluOp,
    ReciprocalOp,
    ReluOp,
    RoundOp,
    SeluOp,
    ShrinkOp,
    SigmoidOp,
    SignOp,
    SinOp,
    SoftplusOp,
    SoftsignOp,
    SqrtOp,
    SubOp,
    TanhOp,
    UnaryOperation,
    WhereOp,
    XorOp,
)
from xweave.dialects.graph.fused import (  # noqa: F401
    FusedOp,
    YieldOp,
)
from xweave.dialects.graph.nn import (  # noqa: F401
    Conv2dNchwcOp,
    Conv2dOp,
    ConvTranspose2dOp,
    DenseOp,
    MatmulOp,
)
from xweave.dialects.graph.normalization import (  # noqa: F401
    REDUCE_KINDS,
    BatchNormOp,
    LayerNormOp,
    LogSoftmaxOp,
    LrnOp,
    ReduceOp,
    SoftmaxOp,
)
from xweave.dialects.graph.quantize import (  # noqa: F401
    DequantizeOp,
    QuantizeOp,
    RequantizeOp,
)
from xweave.dialects.graph.pool import (  # noqa: F401
    AvgPool2dOp,
    GlobalAvgPool2dOp,
    GlobalMaxPool2dOp,
    MaxPool2dOp,
)
from xweave.dialects.graph.winograd import (  # noqa: F401
    WinogradInputTransformOp,
    WinogradMatmulOp,
    WinogradOutputTransformOp,
)

Graph = Dialect(
    "graph",
    [
        ConstantOp,
        Conv2dOp,
        Conv2dNchwcOp,
        LayoutTransformOp,
        DenseOp,
        MatmulOp,
        AddOp,
        SubOp,
        MulOp,
        DivOp,
        MaxOp,
        MinOp,
        PowOp,
        ReluOp,
        SigmoidOp,
        TanhOp,
        ExpOp,
        NegOp,
        SqrtOp,
        AbsOp,
        ClipOp,
        MaxPool2dOp,
        AvgPool2dOp,
        GlobalAvgPool2dOp,
        GlobalMaxPool2dOp,
        ReshapeOp,
        TransposeOp,
        LogOp,
        ErfOp,
        ReciprocalOp,
        SoftplusOp,
        SoftsignOp,
        SignOp,
        FloorOp,
        CeilOp,
        RoundOp,
        SinOp,
        CosOp,
        HardSwishOp,
        LeakyReluOp,
        EluOp,
        SeluOp,
        HardSigmoidOp,
        ShrinkOp,
        GeluOp,
        PreluOp,
        NotOp,
        AndOp,
        OrOp,
        XorOp,
        EqualOp,
        LessOp,
        LessEqualOp,
        GreaterOp,
        GreaterEqualOp,
        WhereOp,
        CastOp,
        SoftmaxOp,
        LogSoftmaxOp,
        ReduceOp,
        BatchNormOp,
        LayerNormOp,
        LrnOp,
        ConvTranspose2dOp,
        ConcatOp,
        SliceOp,
        PadOp,
        TileOp,
        BroadcastToOp,
        GatherOp,
        FusedOp,
        YieldOp,
        WinogradInputTransformOp,
        WinogradMatmulOp,
        WinogradOutputTransformOp,
        QuantizeOp,
        DequantizeOp,
        RequantizeOp,
    ],
    [],
)
