"""Code at the machine model's vector width: 16-lane (zmm) code on AVX-512 targets, 8-lane
on AVX2, narrower peeled tails where the width does not divide an axis, the tuner's
width knob, and records of one target kept from another.

Every expectation names its target. Tests that compile for an AVX-512 CPU run the code
only where this host has AVX-512 (`run_or_skip`); the compilation and the generated
code are checked on any host."""

from __future__ import annotations

import json
import warnings

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import xweave
from xweave.autotune.kernel_tasks import extract_tasks
from xweave.records import make_record, record_target, target_info
from xweave.passes.graph_alter_layout import tail_blocks
from xweave.pipeline import CompileOptions
from xweave.passes.loop_vectorize import vector_groups
from xweave.schedules.templates import vector_chunk
from xweave.target import Target, as_target, machine_model

AVX512 = "llvm -mcpu=znver4"
AVX512_FULL = "llvm -mcpu=znver5"
AVX2 = "llvm -mcpu=znver3"
HOST_AVX512 = "avx512f" in Target().features


def run_or_skip(module, **inputs):
    """The outputs of `module`, or a skip when this host cannot run its code."""
    if not module.runnable:
        assert not HOST_AVX512
        pytest.skip("the code needs AVX-512, which this host lacks (it compiled)")
    return module.run(**inputs)


# --- widths, chunks and tails ----------------------------------------------------------


@pytest.mark.parametrize("extent, lanes, groups", [
    (16, 16, [(0, 16)]),
    (8, 16, [(0, 8)]),
    (24, 16, [(0, 16), (16, 8)]),
    (40, 16, [(0, 16), (16, 16), (32, 8)]),
    (44, 16, [(0, 16), (16, 16), (32, 8), (40, 4)]),
    (24, 8, [(0, 8), (8, 8), (16, 8)]),
    (16, 8, [(0, 16)]),  # one vector<16xf32>, split by LLVM into two ymm on AVX2
    (12, 8, [(0, 8), (8, 4)]),
    (6, 16, [(0, 4), (4, 2)]),
    (58, 16, [(0, 16), (16, 16), (32, 16), (48, 8), (56, 2)]),
    (197, 16, [*((g, 16) for g in range(0, 192, 16)), (192, 4), (196, 1)]),  # a scalar lane
    (7, 8, [(0, 4), (4, 2), (6, 1)]),
    (1, 16, None),
])
def test_vector_groups_peel_the_remainder_as_narrower_vectors(extent, lanes, groups):
    assert vector_groups(0, extent, lanes) == groups


def test_vector_groups_of_1000_classes():
    groups = vector_groups(0, 1000, 16)
    assert groups[:2] == [(0, 16), (16, 16)] and groups[-1] == (992, 8)
    assert sum(n for _, n in groups) == 1000 and len(groups) == 63


@pytest.mark.parametrize("extent, lanes, chunk", [
    (64, 16, 16), (24, 16, 24), (40, 16, 40), (8, 16, 8), (1000, 16, 40), (72, 16, 24),
    (24, 8, 8), (1000, 8, 8), (58, 16, None), (4, 8, None),
])
def test_vector_chunks(extent, lanes, chunk):
    assert vector_chunk(extent, lanes) == chunk


def test_channel_blocks_with_tails_only_at_16_lanes():
    assert tail_blocks(16) == (24, 40, 56)
    assert tail_blocks(8) == () and tail_blocks(4) == ()


@pytest.mark.parametrize("text, lanes, chains", [
    (AVX2, 8, 8), (AVX512, 16, 4), (AVX512_FULL, 16, 8), ("llvm -mcpu=skylake-avx512", 16, 8),
    (AVX512 + " -mprefer-vector-width=256", 8, 8), (AVX512 + " -mattr=-avx512f", 8, 8),
])
def test_lanes_and_chains_of_each_model(text, lanes, chains):
    model = machine_model(text)
    assert model.lanes == lanes and model.accumulators_to_hide_latency == chains


# --- schedules at each width -----------------------------------------------------------


def _matmul_info(target, m=64, k=256, n=512):
    from xdsl.dialects import func

    from xweave import te
    from xweave.kernel import lower_kernel_to_loop
    from xweave.schedules import analyse, template_for
    from xweave.target import set_target

    A = te.placeholder((m, k), "float32", name="A")
    B = te.placeholder((k, n), "float32", name="B")
    r = te.reduce_axis(k, name="k")
    C = te.compute((m, n), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="matmul")
    module = lower_kernel_to_loop("matmul", [A, B], [C])
    set_target(module, Target.parse(target))
    kernel = next(f for f in module.ops if isinstance(f, func.FuncOp))
    info = analyse(kernel)
    return info, template_for(info)


def test_default_register_blocks_are_sized_in_the_targets_vectors():
    info, template = _matmul_info(AVX2)
    config = template.default_config(info)
    assert "lanes" not in template.knobs(info) and "lanes" not in config
    assert config["tile_cols"] == 16  # two ymm vectors
    assert "lanes=8" in " ".join(template.pipeline(info, config))

    info, template = _matmul_info(AVX512_FULL)
    config = template.default_config(info)
    assert template.knobs(info)["lanes"] == [8, 16] and config["lanes"] == 16
    assert config["tile_cols"] == 32  # two zmm vectors
    assert config["tile_rows"] * 2 + 2 + 1 <= 15
    steps = " ".join(template.pipeline(info, config))
    assert "lanes=16" in steps and "lanes=8" not in steps


def test_an_8_lane_target_keeps_llvm_to_ymm_registers():
    from xweave import te

    A = te.placeholder((4, 64), "float32", name="A")
    B = te.compute((4, 64), lambda i, j: A[i, j] * A[i, j], name="square")
    for target in (AVX2, AVX512 + " -mprefer-vector-width=256"):
        kernel = xweave.build_kernel("square", [A], [B], target=target)
        assert '"prefer-vector-width"="256"' in kernel.llvm_ir
        assert "ymm" in kernel.assembly and "zmm" not in kernel.assembly
    kernel = xweave.build_kernel("square", [A], [B], target=AVX512)
    assert "zmm" in kernel.assembly


def test_llvm_adds_no_gathers_or_zmm_code_of_its_own():
    """A transpose the schedules leave scalar (a strided read): LLVM vectorizes it,
    but with neither gathers/scatters (slow on Zen 4) nor 512-bit vectors."""
    from xweave import te

    A = te.placeholder((12, 128, 64), "float32", name="A")
    B = te.compute((128, 768), lambda i, j: A[j // 64, i, j % 64], name="heads")
    kernel = xweave.build_kernel("heads", [A], [B], target=AVX512)
    assert '"min-legal-vector-width"="256"' in kernel.llvm_ir
    assert "gather" not in kernel.assembly and "scatter" not in kernel.assembly
    assert "zmm" not in kernel.assembly
    if HOST_AVX512:
        a = np.random.default_rng(0).standard_normal((12, 128, 64)).astype(np.float32)
        np.testing.assert_array_equal(kernel(a), a.transpose(1, 0, 2).reshape(128, 768))


def test_the_width_knob_gives_8_lane_code_on_an_avx512_target():
    info, template = _matmul_info(AVX512)
    config = {**template.default_config(info), "lanes": 8}
    assert template.valid(info, config)
    steps = " ".join(template.pipeline(info, config))
    assert "lanes=8" in steps and "lanes=16" not in steps
    # A block valid at 16 lanes may need twice the registers at 8.
    wide = {**config, "tile_cols": 64, "tile_rows": 6}  # 6 x 4 zmm, or 6 x 8 ymm (> 32)
    assert template.valid(info, {**wide, "lanes": 16}) and not template.valid(info, wide)


# --- numerical checks of 16-lane code ----------------------------------------------------


def _conv_chain(channels, out_channels, size=10, pool=None):
    """Two 3x3 convs (so the layout stage blocks them), a ReLU, optionally a pool."""
    rng = np.random.default_rng(channels)
    w0 = (rng.standard_normal((channels, channels, 3, 3)) * 0.2).astype(np.float32)
    w1 = (rng.standard_normal((out_channels, channels, 3, 3)) * 0.2).astype(np.float32)
    b1 = rng.standard_normal(out_channels).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w0"], ["c0"], kernel_shape=[3, 3], pads=[1] * 4),
             helper.make_node("Relu", ["c0"], ["r0"]),
             helper.make_node("Conv", ["r0", "w1", "b1"], ["c1"], kernel_shape=[3, 3], pads=[1] * 4),
             helper.make_node("Relu", ["c1"], ["y" if pool is None else "r1"])]
    if pool == "max":
        nodes.append(helper.make_node("MaxPool", ["r1"], ["y"], kernel_shape=[3, 3], strides=[2, 2]))
    elif pool == "avg":
        nodes.append(helper.make_node("GlobalAveragePool", ["r1"], ["y"]))
    graph = helper.make_graph(
        nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, channels, size, size])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializer=[numpy_helper.from_array(w0, "w0"), numpy_helper.from_array(w1, "w1"),
                     numpy_helper.from_array(b1, "b1")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def _reference(model, **inputs):
    import onnxruntime as ort

    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, inputs)


@pytest.mark.parametrize("channels, out_channels, pool, zmm", [
    (16, 16, None, True), (24, 24, None, True), (40, 40, "max", True), (16, 24, "avg", True),
    (58, 58, None, False),  # not a multiple of 8: the convs stay NCHW
])
def test_convs_at_16_lanes_compute_what_onnxruntime_does(channels, out_channels, pool, zmm):
    model = _conv_chain(channels, out_channels, pool=pool)
    module = xweave.build(model, target=AVX512)
    assert str(module.target) == AVX512
    if zmm:
        assert "zmm" in module.assembly
    x = np.random.default_rng(1).standard_normal((1, channels, 10, 10)).astype(np.float32)
    (expected,) = _reference(model, x=x)
    (got,) = run_or_skip(module, x=x)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("m, k, n, tail", [
    (32, 64, 1000, False),  # whole 16-lane vectors, the last column tile ragged
    (7, 33, 40, True),      # 2 vectors and an 8-lane tail divide 40
    (1, 512, 24, True),
])
def test_matmuls_with_ragged_columns_at_16_lanes(m, k, n, tail):
    from xweave import te

    A = te.placeholder((m, k), "float32", name="A")
    B = te.placeholder((k, n), "float32", name="B")
    r = te.reduce_axis(k, name="k")
    C = te.compute((m, n), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="matmul")
    kernel = xweave.build_kernel("matmul", [A, B], [C], target=AVX512)
    assert "vector<16xf32>" in kernel.loop_ir and "zmm" in kernel.assembly
    # 512-bit vectors stay legal; LLVM's own vectorizers stay at 256 bits.
    assert '"min-legal-vector-width"="512" ' in kernel.llvm_ir and '"prefer-vector-width"="256"' in kernel.llvm_ir
    assert ("vector<8xf32>" in kernel.loop_ir) == tail  # the peeled tail
    if not HOST_AVX512:
        pytest.skip("the code needs AVX-512, which this host lacks (it compiled)")
    rng = np.random.default_rng(n)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    np.testing.assert_allclose(kernel(a, b), a @ b, rtol=1e-4, atol=1e-4 * np.sqrt(k))


def test_softmax_over_1000_classes_at_16_lanes():
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((64, 1000)) * 0.1).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["logits"]),
             helper.make_node("Softmax", ["logits"], ["y"], axis=-1)]
    graph = helper.make_graph(
        nodes, "cls", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializer=[numpy_helper.from_array(w, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    module = xweave.build(model, target=AVX512)
    assert "zmm" in module.assembly
    x = rng.standard_normal((1, 64)).astype(np.float32)
    (expected,) = _reference(model, x=x)
    (got,) = run_or_skip(module, x=x)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-6)


# --- the tuner: the width knob, the target of tasks and records ----------------------------


@pytest.fixture(scope="module")
def chain_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("w") / "chain.onnx"
    onnx.save(_conv_chain(16, 16), path)
    return path


def _conv_task(path, target=None):
    return next(t for t in extract_tasks(path, options=CompileOptions(as_target(target)))
                if t.workload_key.startswith("fused_conv2d_nchwc_relu("))


def test_tasks_carry_their_target_and_the_width_knob(chain_path):
    task = _conv_task(chain_path, AVX512)
    assert task.target == AVX512
    assert "xweave.target" in task.base_module().attributes
    assert task.knobs["lanes"] == [8, 16]
    assert task.config(task.default_point())["lanes"] == 16
    # The pinned AVX2 target: no width to choose.
    assert "lanes" not in _conv_task(chain_path).knobs
    # The workload key leaves the target out: records of two targets stay comparable.
    assert task.workload_key == _conv_task(chain_path, AVX2).workload_key


def test_both_widths_of_a_task_compute_the_conv(chain_path):
    task = _conv_task(chain_path, AVX512)
    default = task.default_point()
    narrow = task.space.point_of({**task.config(default), "lanes": 8})
    assert task.config(narrow)["lanes"] == 8
    assert "vector<16xf32>" in str(task.loop_ir(default))
    assert "vector<16xf32>" not in str(task.loop_ir(narrow))
    if not HOST_AVX512:
        pytest.skip("the code needs AVX-512, which this host lacks (it compiled)")
    from xweave.autotune import InlineRunner, LocalBuilder, tune

    # Each point's first run is checked against the unscheduled kernel (error 5 if not).
    result = tune(task, tuner="grid", trials=2, builder=LocalBuilder(n_parallel=0),
                  runner=InlineRunner(min_repeat_ms=1, repeat=1), progress=False,
                  initial_points=[default, narrow])
    assert result.trials == 2 and not any(k for k in result.errors if k), result.results


def test_records_name_the_target_they_were_compiled_for(chain_path):
    from xweave.autotune.measure import MeasureResult

    task = _conv_task(chain_path, AVX512)
    point = task.default_point()
    record = make_record(task, point, MeasureResult(point, [1e-3], 1.0, 0, "", 0.1, 0.1))
    assert record["target"]["target"] == AVX512 and record_target(record) == AVX512
    assert record["target"]["cpu"] == target_info()["cpu"]
    # Records written before targets were recorded: compiled for the CPU they ran on.
    assert record_target({"target": {"cpu": "znver3", "features_hash": "x"}}) == AVX2


def _records_file(path, task, point, target):
    from xweave.autotune.measure import MeasureResult

    record = make_record(task, point, MeasureResult(point, [1e-3], 1.0, 0, "", 0.1, 0.1))
    record["target"]["target"] = target
    path.write_text(json.dumps(record) + "\n")
    return path


def test_records_of_another_target_are_not_applied_unless_asked(chain_path, tmp_path):
    task = _conv_task(chain_path)  # the pinned AVX2 target
    default = task.default_point()
    other = next(p for p in task.space if task.schedule(p) != task.schedule(default))
    records = _records_file(tmp_path / "r.jsonl", task, other, AVX512_FULL)

    def scheduled(**options):
        out = tmp_path / str(len(list(tmp_path.iterdir())))
        module = xweave.build(chain_path, dump_ir=out, **options)
        (text,) = [f.read_text() for f in out.glob("*-scheduled.mlir")]
        # the IR, without the header naming the passes (and records file) that made it
        return module, "".join(line for line in text.splitlines(keepends=True)
                               if not line.startswith("// "))

    _, untuned = scheduled()
    with pytest.warns(RuntimeWarning, match=r"1 kernel\(s\) keep their default schedule: "
                      r"their records are for 'llvm -mcpu=znver5'.*fused_conv2d_nchwc_relu_"):
        _, skipped = scheduled(tuning_records=records)
    assert skipped == untuned
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        _, applied = scheduled(tuning_records=records, any_target_records=True)
    assert applied != untuned
    # Records of the build's own target apply without asking.
    _records_file(records, task, other, AVX2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        _, own = scheduled(tuning_records=records)
    assert own == applied


def test_compile_says_which_kernels_kept_their_schedule(chain_path, tmp_path):
    import subprocess
    import sys

    task = _conv_task(chain_path)
    other = next(p for p in task.space if task.schedule(p) != task.schedule(task.default_point()))
    records = _records_file(tmp_path / "r.jsonl", task, other, AVX512_FULL)
    from pathlib import Path

    xweave_cli = Path(sys.executable).parent / "xweave"
    run = subprocess.run([str(xweave_cli), "compile", str(chain_path),
                          "--tuning-records", str(records), "-o", str(tmp_path / "m.so")],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "warning: " in run.stderr and "fused_conv2d_nchwc_relu_" in run.stderr
    assert "--any-target-records" in run.stderr and "Traceback" not in run.stderr


def test_xweave_tune_target_compiles_and_records_for_that_target(chain_path, tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    from xweave.autotune import load_records

    records = tmp_path / "tuned.jsonl"
    run = subprocess.run([str(Path(sys.executable).parent / "xweave"), "tune", str(chain_path),
                          "--target", AVX512, "--trials", "2", "--max-tasks", "1",
                          "--builders", "0", "--threads", "1", "-o", str(records)],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    assert f"for '{AVX512}'" in run.stderr
    lines = load_records(records)
    assert len(lines) == 2
    for record in lines:
        assert record_target(record) == AVX512
        assert record["config"]["lanes"] in (8, 16)
        # Measured where the host runs AVX-512; elsewhere a load error, still recorded.
        assert (record["result"]["error_no"] == 0) == HOST_AVX512
