"""examples/gemm8x8: a second accelerator defined only through the designer API
(`xweave.accel.api`) runs a dense layer end to end, bit for bit as numpy."""

import re
import sys
from pathlib import Path

import numpy as np
import pytest

from xweave.accel.api import AcceleratorError, get_accelerator, list_accelerators
from xweave.dialects import loop
from xweave.passes.tensorize import TensorizeError, TensorizePass

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
sys.path.insert(0, str(EXAMPLES))

import gemm8x8  # noqa: E402  (registers the accelerator)
from gemm8x8 import isa  # noqa: E402
from gemm8x8.dense import build_dense_kernel, compile_dense, dense, tensorize  # noqa: E402
from gemm8x8.simulator import Gemm8x8SimulatorError, run_program  # noqa: E402


def test_defined_only_through_the_public_api():
    assert "gemm8x8" in list_accelerators()
    acc = get_accelerator("gemm8x8")
    assert acc is gemm8x8.GEMM8X8 and acc.dialect is isa.Gemm8x8
    assert sorted(acc.intrinsics) == [f"gemm8x8.{n}" for n in (
        "fill_zero", "gemm_add", "load_acc", "load_tile", "store_tile")]
    assert acc.intrinsic("gemm_add").accumulate and not acc.intrinsic("fill_zero").accumulate
    # No VTA internals, no private xweave names: only the designer API and public IR.
    for path in (EXAMPLES / "gemm8x8").glob("*.py"):
        text = path.read_text()
        assert "accel.vta" not in text, path
        assert not re.search(r"from xweave[\w.]* import [^\n]*\b_\w", text), path


@pytest.mark.parametrize("m, k, n, bias", [
    (1, 32, 10, True),    # one row, N not a multiple of 8
    (5, 20, 13, False),   # every dim padded; fill_zero instead of a bias tile
    (16, 48, 24, True),   # several tiles in every dim
])
def test_dense_is_bit_exact(m, k, n, bias):
    rng = np.random.default_rng(m * 100 + k)
    x = rng.integers(-128, 128, (m, k), dtype=np.int8)
    w = rng.integers(-128, 128, (n, k), dtype=np.int8)
    x[0, 0] = w[0, 0] = -128  # the extremes
    b = rng.integers(-50000, 50000, n, dtype=np.int32) if bias else None
    y, report = dense(x, w, b)
    expected = x.astype(np.int32) @ w.astype(np.int32).T + (b if bias else 0)
    assert y.dtype == np.int32 and y.shape == (m, n)
    np.testing.assert_array_equal(y, expected)
    tiles = (-(-m // 8), -(-n // 8), 2 * -(-k // 16))
    assert report.gemm_count == tiles[0] * tiles[1] * tiles[2]
    assert report.instruction_counts.get("gemm8x8.fill_zero", 0) == (0 if bias else tiles[0] * tiles[1])
    assert 0 < report.compute_utilization <= 1
    assert report.total_cycles < sum(report.busy_cycles.values())  # DMA overlaps the core


def test_tensorize_leaves_only_intrinsic_calls():
    module = tensorize(build_dense_kernel(2, 1, 4, has_bias=True))
    calls = [op.callee_name for op in module.walk() if isinstance(op, loop.IntrinsicOp)]
    assert sorted(set(calls)) == ["gemm8x8.gemm_add", "gemm8x8.load_acc", "gemm8x8.load_tile",
                                  "gemm8x8.store_tile"]
    assert not any(isinstance(op, loop.LoadOp | loop.StoreOp) for op in module.walk())
    program = compile_dense(2, 1, 4, True).program
    ops = [op.name for op in program.body.block.ops]
    assert ops.count("gemm8x8.gemm_add") == 2 * 1 * 4 and ops.count("gemm8x8.store_tile") == 2


def test_tensorize_checks_the_declaration():
    """A nest that does not compute the intrinsic is refused, naming the loop."""
    module = build_dense_kernel(1, 1, 2, has_bias=False)
    with pytest.raises(TensorizeError, match=r"gemm8x8.load_acc at loop 'ldx.i': 'dst' is int32"):
        TensorizePass(intrinsic="gemm8x8.load_acc", loop="ldx.i").apply(None, module)
    # An int32 copy, but to DRAM: the accumulator load must write the accumulator.
    with pytest.raises(TensorizeError, match="'dst' must be in scope gemm8x8.acc, but its buffer "
                       "is in global"):
        TensorizePass(intrinsic="gemm8x8.load_acc", loop="st.i").apply(None, module)


def test_lowering_and_simulator_report_bad_programs():
    acc = get_accelerator("gemm8x8")
    module = build_dense_kernel(1, 1, 2, has_bias=False)
    (kernel,) = module.ops
    with pytest.raises(AcceleratorError, match="gemm8x8 lowering: unexpected op arith.constant"):
        acc.lower(kernel, acc)  # not tensorized
    program = isa.ProgramOp([isa.LoadTileOp(0, 64)])
    with pytest.raises(Gemm8x8SimulatorError, match=r"instruction 0 \(gemm8x8.load_tile\): DRAM "
                       r"bytes \[64, 128\) outside the 64-byte image"):
        run_program(program, np.zeros(64, np.uint8))
    with pytest.raises(ValueError, match="expected int8"):
        dense(np.zeros((2, 3), np.float32), np.zeros((2, 3), np.int8))


# --------------------------------------------------------------------------------------
# Whole models: the gemm8x8 target (examples/gemm8x8/model.py), no edit outside its folder
# --------------------------------------------------------------------------------------


def mlp_model(seed=0):
    """conv (CPU) -> relu -> global pool -> flatten -> dense -> relu -> dense: the two
    dense layers on the unit, the conv and everything between on the CPU."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    shapes = {"w1": (12, 4, 3, 3), "b1": (12,), "fc1": (24, 12), "fc1b": (24,),
              "fc2": (10, 24), "fc2b": (10,)}
    inits = [numpy_helper.from_array(
        (rng.standard_normal(s) * (0.1 if len(s) == 1 else np.sqrt(2 / np.prod(s[1:]))))
        .astype(np.float32), name) for name, s in shapes.items()]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("GlobalAveragePool", ["r1"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"], axis=1),
        helper.make_node("Gemm", ["f", "fc1", "fc1b"], ["h"], transB=1),
        helper.make_node("Relu", ["h"], ["hr"]),
        helper.make_node("Gemm", ["hr", "fc2", "fc2b"], ["y"], transB=1),
    ]
    graph = helper.make_graph(
        nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4, 6, 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 10])], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def mlp_samples(n, seed):
    return np.random.default_rng(seed).standard_normal((n, 2, 4, 6, 6)).astype(np.float32)


@pytest.fixture(scope="module")
def mlp_build():
    import xweave

    return xweave.build(mlp_model(), target="gemm8x8", calibration={"x": mlp_samples(8, 1)})


def test_a_whole_model_runs_with_its_dense_layers_on_the_unit(mlp_build, tmp_path):
    import onnxruntime as ort

    from xweave.runtime.hetero import AcceleratorStep, CpuStep, HeteroModule

    module = mlp_build
    assert isinstance(module, HeteroModule) and module.accelerator == "gemm8x8"
    kinds = ["cpu" if isinstance(s, CpuStep) else "gemm8x8" for s in module.steps]
    assert kinds == ["cpu", "gemm8x8", "gemm8x8", "cpu"]  # dense -> relu -> dense on the unit
    layers = [s.layer for s in module.steps if isinstance(s, AcceleratorStep)]
    assert [type(layer).__name__ for layer in layers] == ["Gemm8x8DenseLayer"] * 2
    assert layers[0].layer.relu and not layers[1].layer.relu  # the relu fused into the first

    session = ort.InferenceSession(mlp_model().SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    for x in mlp_samples(4, seed=7):  # held out from calibration
        (y,) = module.run(x=x)
        (expected,) = session.run(None, {"x": x})
        assert y.shape == (2, 10) and y.dtype == np.float32
        # int8 with power-of-two scales: within a few percent of the float model
        assert np.abs(y - expected).max() < 0.1 * np.abs(expected).max() + 0.05
    reports = module.layer_reports
    assert [r.name for r in reports] == [layer.name for layer in layers]
    assert all(r.report.total_cycles > 0 and r.report.gemm_count > 0 for r in reports)
    assert "total" in module.profile()


def test_offloaded_dense_layers_are_bit_exact_and_export(mlp_build, tmp_path):
    import xweave
    from xweave.runtime.hetero import AcceleratorStep

    module = mlp_build
    x = mlp_samples(1, seed=3)[0]
    _, tensors = module.run_traced({"x": x})
    steps = [s for s in module.steps if isinstance(s, AcceleratorStep)]
    for step in steps:
        xq, yq = tensors[step.input], tensors[step.output]
        assert xq.dtype == yq.dtype == np.int8
        np.testing.assert_array_equal(yq, step.layer.reference(xq))
    assert np.any(tensors[steps[0].output] > 0)

    path = tmp_path / "mlp.xwm"
    module.export(path)
    loaded = xweave.load_module(path)  # the layers come back through the registered loader
    np.testing.assert_array_equal(loaded.run(x=x)[0], module.run(x=x)[0])


def test_the_gemm8x8_target_refuses_what_it_does_not_take():
    import xweave
    from xweave.errors import XweaveError

    with pytest.raises(XweaveError, match="takes no option.*virtual_threads"):
        xweave.build(mlp_model(), target="gemm8x8", calibration={"x": mlp_samples(2, 0)},
                     virtual_threads=2)
    with pytest.raises(XweaveError, match="needs calibration inputs"):
        xweave.build(mlp_model(), target="gemm8x8")
