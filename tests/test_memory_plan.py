"""plan-memory: @main's buffers share one arena, and results do not change."""

import itertools

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerAttr, MemRefType, f32
from xdsl.passes import PassPipeline
from xdsl.utils.exceptions import PassFailedException

import xweave
from xweave.context import make_context, parse_module
from xweave.dialects import loop
from xweave.dialects.interpreters import interpret
from xweave.lowering.loop_to_llvm import extract_params
from xweave.passes.memory_plan import (
    ARENA,
    PEAK_ATTR,
    UNPLANNED_ATTR,
    Buffer,
    PlanMemoryPass,
    live_peak,
    plan_offsets,
)
from xweave.pipeline import CompileOptions, cpu_stages
from xweave.pipeline import compile_lowered, signature_of

from helpers import load_bench

RNG = np.random.default_rng(0)


# --------------------------------------------------------------------------------------
# The placement itself
# --------------------------------------------------------------------------------------


def check_placement(buffers, arena, alignment):
    for b in buffers:
        assert b.offset % max(alignment, b.alignment) == 0
        assert b.offset + b.size <= arena
    for a, b in itertools.combinations(buffers, 2):
        if a.overlaps(b):
            assert a.offset + a.size <= b.offset or b.offset + b.size <= a.offset, (a, b)
    assert arena % alignment == 0
    assert arena >= live_peak(buffers)


@pytest.mark.parametrize("seed", range(40))
def test_random_lifetimes_never_share_live_memory(seed):
    rng = np.random.default_rng(seed)
    buffers = []
    for _ in range(int(rng.integers(1, 30))):
        first = int(rng.integers(0, 40))
        buffers.append(Buffer(int(rng.integers(1, 5000)), first, first + int(rng.integers(0, 8)),
                              alignment=int(rng.choice([1, 64, 128]))))
    arena = plan_offsets(buffers, alignment=64)
    check_placement(buffers, arena, 64)
    # Packing is worth it: never more than every buffer on its own (rounded up).
    assert arena <= sum(-(-b.size // 128) * 128 for b in buffers)


def test_chain_needs_two_slots():
    # buffer i is written by op i and read by op i + 1
    buffers = [Buffer(1000, i, i + 1) for i in range(10)]
    assert plan_offsets(buffers) == 2 * 1024
    assert {b.offset for b in buffers} == {0, 1024}
    assert live_peak(buffers) == 2000


def test_disjoint_lifetimes_share_one_offset():
    buffers = [Buffer(300, 0, 1), Buffer(200, 2, 3), Buffer(100, 4, 4)]
    assert plan_offsets(buffers) == 320
    assert [b.offset for b in buffers] == [0, 0, 0]


# --------------------------------------------------------------------------------------
# Whole models: planned vs unplanned vs onnxruntime
# --------------------------------------------------------------------------------------


def branchy_model(channels=4, size=8, layers=4):
    """conv-relu chain with a residual add and a concat of two branches (as in ResNet
    and SqueezeNet), so buffers have long and short lifetimes."""
    nodes, inits = [], []

    def conv(x, cout, cin, name):
        w = (RNG.standard_normal((cout, cin, 3, 3)) * 0.3).astype(np.float32)
        inits.append(numpy_helper.from_array(w, f"{name}_w"))
        nodes.append(helper.make_node("Conv", [x, f"{name}_w"], [name], pads=[1, 1, 1, 1]))
        nodes.append(helper.make_node("Relu", [name], [f"{name}_r"]))
        return f"{name}_r"

    x = conv("x", channels, channels, "stem")
    skip = x
    for i in range(layers):
        x = conv(x, channels, channels, f"c{i}")
    nodes.append(helper.make_node("Add", [x, skip], ["res"]))
    a = conv("res", channels, channels, "left")
    b = conv("res", channels, channels, "right")
    nodes.append(helper.make_node("Concat", [a, b], ["cat"], axis=1))
    nodes.append(helper.make_node("GlobalAveragePool", ["cat"], ["y"]))
    graph = helper.make_graph(
        nodes, "branchy",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, channels, size, size])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("res", TensorProto.FLOAT, None)],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def compile_model(model, plan: bool):
    """Lower and compile `model` with or without the plan-memory stage."""
    module = xweave.load_onnx(model)
    signature = signature_of(module)
    ctx = make_context()
    params = {}
    planned_ir = None
    for stage in cpu_stages(CompileOptions()):
        if stage.name == "planned" and not plan:
            continue
        PassPipeline(stage.passes).apply(ctx, module)
        if stage.name in ("loop", "scheduled"):  # schedules may add (packed) weights
            params = extract_params(module)
        if stage.name == "planned":
            planned_ir = module.clone()
    return compile_lowered(module, params, signature), planned_ir


@pytest.fixture(scope="module")
def branchy(tmp_path_factory):
    """The model, an input, onnxruntime's outputs, `xweave.build`'s module (planned),
    its planned stage and llvm stage (text), and a module compiled without planning."""
    model = branchy_model()
    x = RNG.standard_normal((1, 4, 8, 8)).astype(np.float32)
    expected = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})
    dump = tmp_path_factory.mktemp("ir")
    planned = xweave.build(model, dump_ir=dump)
    planned_ir = parse_module(next(dump.glob("*-planned.mlir")).read_text())
    llvm_text = next(dump.glob("*-llvm.mlir")).read_text()
    unplanned, _ = compile_model(model, plan=False)
    return model, x, expected, planned, planned_ir, llvm_text, unplanned


def test_planned_model_gives_identical_outputs(branchy):
    model, x, expected, planned, _, _, unplanned = branchy
    got = planned.run(x=x)
    reference = unplanned.run(x=x)
    for g, r, e in zip(got, reference, expected, strict=True):
        np.testing.assert_array_equal(g, r)
        np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-5)
    # Again: the arena is reused from call to call, stale contents do not leak.
    for g, r in zip(planned.run(x=2 * x), unplanned.run(x=2 * x), strict=True):
        np.testing.assert_array_equal(g, r)


def test_peak_is_below_the_sum_of_buffers(branchy):
    *_, planned, planned_ir, llvm_module, unplanned = branchy
    peak = planned_ir.attributes[PEAK_ATTR]
    unplanned_bytes = planned_ir.attributes[UNPLANNED_ATTR]
    assert isinstance(peak, IntegerAttr) and isinstance(unplanned_bytes, IntegerAttr)
    assert planned.peak_memory_bytes == peak.value.data
    assert 0 < planned.peak_memory_bytes < unplanned_bytes.value.data
    assert unplanned.peak_memory_bytes is None
    # Nothing of @main is heap-allocated per call any more.
    main = llvm_module[llvm_module.index("llvm.func @main("):]
    main = main[:main.index("\n  }\n")]
    assert "llvm.call @" in main and "aligned_alloc" not in main


def test_no_call_gets_overlapping_buffers(branchy):
    *_, planned_ir, _, _ = branchy
    main = next(f for f in planned_ir.ops if isinstance(f, func.FuncOp) and f.sym_name.data == "main")
    views = {op.result: op for op in main.walk() if isinstance(op, loop.ViewOp)}
    assert views
    assert not any(isinstance(op, loop.AllocOp) for op in main.walk())
    calls = [op for op in main.walk() if isinstance(op, func.CallOp)]
    for call in calls:
        ranges = []
        for arg in set(call.arguments):
            if arg in views:
                start = views[arg].offset
                ranges.append((start, start + loop.buffer_bytes(arg.type)))
        for (a0, a1), (b0, b1) in itertools.combinations(ranges, 2):
            assert a1 <= b0 or b1 <= a0, call
    # ...and some memory is actually shared between calls.
    offsets = [(v.offset, v.result.type) for v in views.values()]
    assert len({o for o, _ in offsets}) < len(offsets)


def test_kernel_temporaries_join_the_arena(branchy):
    """A kernel's padded input lives in the arena, apart from everything its calls use."""
    *_, planned_ir, llvm_text, _ = branchy
    functions = {f.sym_name.data: f for f in planned_ir.ops if isinstance(f, func.FuncOp)}
    main = functions["main"]
    views = {op.result: op for op in main.walk() if isinstance(op, loop.ViewOp)}
    temporaries = 0
    for call in [op for op in main.walk() if isinstance(op, func.CallOp)]:
        kernel = functions[call.callee.root_reference.data]
        own = [op for op in kernel.body.block.ops if isinstance(op, loop.ViewOp)]
        assert not any(isinstance(op, loop.AllocOp) and loop.scope_of(op.memref.type) == loop.GLOBAL_SCOPE
                       for op in kernel.body.block.ops)
        temporaries += len(own)
        ranges = [(v.offset, v.offset + loop.buffer_bytes(v.result.type)) for v in own]
        ranges += [(views[a].offset, views[a].offset + loop.buffer_bytes(a.type))
                   for a in set(call.arguments) if a in views]
        for (a0, a1), (b0, b1) in itertools.combinations(ranges, 2):
            assert a1 <= b0 or b1 <= a0, call
    assert temporaries > 0
    assert "aligned_alloc" not in llvm_text  # nothing is heap-allocated per call


def test_planned_stage_interprets_like_onnxruntime(branchy):
    _, x, expected, _, planned_ir, _, _ = branchy
    got = [np.zeros_like(e) for e in expected]
    interpret(planned_ir, [x, *got])
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-5)


def test_export_load_keeps_the_plan(branchy, tmp_path):
    _, x, expected, planned, *_ = branchy
    assert ARENA not in planned.params  # workspace, not a weight: never exported
    planned.export(tmp_path / "m.xwm")
    first = xweave.load_module(tmp_path / "m.xwm")
    second = xweave.load_module(tmp_path / "m.xwm")
    assert first.peak_memory_bytes == second.peak_memory_bytes == planned.peak_memory_bytes
    # each instance has its own arena: interleaved runs on different inputs stay right
    a = first.run(x=x)
    b = second.run(x=-x)
    np.testing.assert_array_equal(first.run(x=x)[0], a[0])
    np.testing.assert_array_equal(second.run(x=-x)[0], b[0])
    np.testing.assert_allclose(a[0], expected[0], rtol=1e-4, atol=1e-5)


def test_transformer_encoder_identical_with_and_without_planning():
    """Attention: reshapes, transposes, batched matmuls, softmax, layer norms."""
    models = load_bench("models")
    model = models.build("bert_encoder", layers=1, seq=8, hidden=32, heads=4, ffn=64)
    feeds = models.random_inputs(model)
    planned, planned_ir = compile_model(model, plan=True)
    unplanned, _ = compile_model(model, plan=False)
    # Kernel temporaries in the arena instead of malloc'ed change what LLVM knows about
    # them, and so may change how it vectorizes a reduction: equal up to rounding.
    for g, r in zip(planned.run(**feeds), unplanned.run(**feeds), strict=True):
        np.testing.assert_allclose(g, r, rtol=1e-5, atol=1e-6)
    assert planned.peak_memory_bytes < planned_ir.attributes[UNPLANNED_ATTR].value.data


def test_pass_refuses_bad_alignment_and_replanning():
    module = parse_module("""
    builtin.module {
      func.func @main(%out: memref<4xf32>) {
        %0 = loop.alloc : memref<4xf32>
        func.return
      }
    }""")
    with pytest.raises(PassFailedException, match="power of two"):
        PlanMemoryPass(alignment=3).apply(make_context(), module)
    PlanMemoryPass().apply(make_context(), module)
    main = next(f for f in module.ops if isinstance(f, func.FuncOp))
    main.body.block.insert_op_before(loop.AllocOp(MemRefType(f32, [4])), main.body.block.last_op)
    with pytest.raises(PassFailedException, match="already has a symbol @xweave_arena"):
        PlanMemoryPass().apply(make_context(), module)
