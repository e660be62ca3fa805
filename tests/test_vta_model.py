"""Whole models on target vta: int8 quantization, offload to the simulated accelerator,
CPU segments through LLVM; checked against onnxruntime (float) and bit for bit against
the numpy int8 emulation of the same quantized graph."""

import json
import zipfile

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import xweave
from xweave.accel.offload import AcceleratorStep, CpuSegment
from xweave.accel.vta.offload import compile_for_vta
from xweave.dialects.interpreters import interpret, make_interpreter
from xweave.errors import XweaveError
from xweave.runtime.hetero import AcceleratorStep as RunAcceleratorStep
from xweave.runtime.hetero import HeteroModule

from helpers import run_cli


def make_model(nodes, inputs, output, initializers, rng):
    """An ONNX model; `initializers` maps names to shapes (He-initialized weights, or
    small biases for 1-d shapes)."""
    inits = []
    for name, shape in initializers.items():
        if len(shape) == 1:
            value = rng.standard_normal(shape) * 0.1
        else:
            value = rng.standard_normal(shape) * np.sqrt(2 / np.prod(shape[1:]))
        inits.append(numpy_helper.from_array(value.astype(np.float32), name))
    graph = helper.make_graph(
        nodes, "m", [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
        [helper.make_tensor_value_info(output[0], TensorProto.FLOAT, output[1])],
        initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def cnn(seed=0):
    """RGB conv (stays on the CPU) -> pool -> conv -> conv 1x1 -> global pool -> dense."""
    conv = lambda x, w, b, y, k, **kw: helper.make_node(
        "Conv", [x, w, b], [y], kernel_shape=[k, k], **kw)
    nodes = [
        conv("data", "w1", "b1", "c1", 3, pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
        conv("p1", "w2", "b2", "c2", 3, pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c2"], ["r2"]),
        conv("r2", "w3", "b3", "c3", 1),
        helper.make_node("Relu", ["c3"], ["r3"]),
        helper.make_node("GlobalAveragePool", ["r3"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"], axis=1),
        helper.make_node("Gemm", ["f", "fc", "fcb"], ["logits"], transB=1),
    ]
    shapes = {"w1": (16, 3, 3, 3), "b1": (16,), "w2": (32, 16, 3, 3), "b2": (32,),
              "w3": (32, 32, 1, 1), "b3": (32,), "fc": (10, 32), "fcb": (10,)}
    return make_model(nodes, [("data", [1, 3, 16, 16])], ("logits", [1, 10]), shapes,
                      np.random.default_rng(seed))


def exact_model(seed=1):
    """Only int8 layers and exact float ops (scaling by powers of two, max pool, reshape)
    between them: the whole model must equal the emulation bit for bit."""
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], kernel_shape=[3, 3], pads=[1, 0, 1, 0],
                         strides=[2, 2]),
        helper.make_node("MaxPool", ["c2"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["p"], ["f"], axis=1),
        helper.make_node("Gemm", ["f", "fc", "fcb"], ["y"], transB=1),
    ]
    shapes = {"w1": (16, 16, 3, 3), "b1": (16,), "w2": (24, 16, 3, 3), "b2": (24,),
              "fc": (7, 24 * 2 * 1), "fcb": (7,)}
    return make_model(nodes, [("x", [1, 16, 8, 6])], ("y", [1, 7]), shapes,
                      np.random.default_rng(seed))


def samples(shape, n, seed):
    return np.random.default_rng(seed).standard_normal((n, *shape)).astype(np.float32)


@pytest.fixture(scope="module")
def cnn_files(tmp_path_factory):
    """The CNN compiled for vta by the CLI: (model path, module path, compile stdout)."""
    tmp = tmp_path_factory.mktemp("vta")
    model_path, module_path, calib = tmp / "cnn.onnx", tmp / "cnn.xwm", tmp / "calib.npz"
    onnx.save(cnn(), model_path)
    np.savez(calib, data=samples((1, 3, 16, 16), 16, seed=5))
    code, out, err = run_cli("compile", model_path, "--target", "vta", "--calibration", calib,
                                "-o", module_path)
    assert code == 0, err
    return model_path, module_path, out


@pytest.fixture(scope="module")
def cnn_module(cnn_files) -> HeteroModule:
    module = xweave.load_module(cnn_files[1])
    assert isinstance(module, HeteroModule)
    return module


def test_partition_keeps_the_rgb_conv_on_the_cpu():
    plan = compile_for_vta(xweave.load_onnx(cnn()), {"data": samples((1, 3, 16, 16), 4, 0)})
    kinds = ["cpu" if isinstance(s, CpuSegment) else s.layer.layer.kind for s in plan.steps]
    # conv1 (3 channels) + relu + pool + quantize | conv2 | conv3 (reads conv2's int8
    # output directly) | dequantize + global pool + quantize | dense | dequantize
    assert kinds == ["cpu", "conv2d", "conv2d", "cpu", "dense", "cpu"]
    first = [op.name for op in plan.steps[0].module.ops.first.body.block.ops]
    assert "graph.conv2d" in first and first[-2] == "graph.cast"
    conv2, conv3 = plan.steps[1], plan.steps[2]
    assert isinstance(conv2, AcceleratorStep) and isinstance(conv3, AcceleratorStep)
    assert conv3.input == conv2.output
    assert conv2.layer.layer.relu and conv2.layer.layer.pads == (1, 1, 1, 1)
    assert conv2.layer.weight.dtype == np.int8 and conv2.layer.bias.dtype == np.int32


def test_cli_compile_then_run_prints_simulated_time(cnn_files, tmp_path):
    _, module_path, stdout = cnn_files
    assert f"wrote {module_path}" in stdout
    with zipfile.ZipFile(module_path) as zf:
        manifest = json.loads(zf.read("manifest.json"))
    assert manifest["target"] == "vta"
    assert [s["kind"] for s in manifest["steps"]] == [
        "cpu", "accelerator", "accelerator", "cpu", "accelerator", "cpu"]
    np.savez(tmp_path / "in.npz", data=samples((1, 3, 16, 16), 1, 9)[0])
    code, out, err = run_cli("run", module_path, "-i", tmp_path / "in.npz",
                                "-o", tmp_path / "out.npz", "--print-time", "--repeat", "1")
    assert code == 0, err
    lines = out.splitlines()
    layers = [line for line in lines if "cycles" in line and "compute util." in line]
    assert [line.split()[0] for line in layers] == [
        "int8_conv2d_0", "int8_conv2d_1", "int8_dense_0", "total"]
    cycles = [int(line.split()[1]) for line in layers]
    assert all(c > 0 for c in cycles) and cycles[-1] == sum(cycles[:-1])
    # The host's wall time of the simulation, told apart from the simulated time.
    assert any(line.startswith("host wall time (ms) of the CPU segments and the simulation")
               for line in lines)
    assert any(line.startswith("simulated vta cycles") for line in lines)
    with np.load(tmp_path / "out.npz") as out:
        assert out["logits"].shape == (1, 10)


def test_cli_run_draws_the_accelerator_timeline(cnn_files, tmp_path):
    model_path, module_path, _ = cnn_files
    png = tmp_path / "timeline.png"
    code, out, err = run_cli("run", module_path, "--timeline", png)
    assert code == 0, err
    assert f"wrote {png}" in out and png.stat().st_size > 5000
    # A CPU-only module, or a file name that is no image: one line, nothing written.
    cpu = tmp_path / "cpu.so"
    assert run_cli("compile", model_path, "-o", cpu)[0] == 0
    for args, match in (((cpu, "--timeline", tmp_path / "t.png"), "runs on the CPU only"),
                        ((module_path, "--timeline", tmp_path / "t.npz"),
                         "expected an image file")):
        code, out, err = run_cli("run", *args)
        assert code != 0 and match in err and len(err.splitlines()) == 1, err
        assert not (tmp_path / "t.png").exists() and not (tmp_path / "t.npz").exists()


def test_cnn_agrees_with_onnxruntime(cnn_files, cnn_module):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    session = ort.InferenceSession(str(cnn_files[0]), options,
                                   providers=["CPUExecutionProvider"])
    agree, errors = 0, []
    for x in samples((1, 3, 16, 16), 12, seed=11):  # held out from calibration
        (y,) = cnn_module.run(data=x)
        (ref,) = session.run(None, {"data": x})
        agree += int(y.argmax() == ref.argmax())
        errors.append(np.abs(y - ref).max() / np.abs(ref).max())
    assert agree >= 11, f"top-1 agreement {agree}/12"
    assert max(errors) < 0.12, errors  # int8 with power-of-two scales: a few percent


def test_every_offloaded_layer_is_bit_exact(cnn_module):
    """Each accelerator layer's int8 output equals the numpy reference and the graph
    interpreter's run of the int8 layer function, on the input it actually got."""
    plan = compile_for_vta(xweave.load_onnx(cnn()), {"data": samples((1, 3, 16, 16), 16, 5)})
    interpreter = make_interpreter(plan.quantized)
    x = samples((1, 3, 16, 16), 1, seed=3)[0]
    _, tensors = cnn_module.run_traced({"data": x})
    steps = [s for s in cnn_module.steps if isinstance(s, RunAcceleratorStep)]
    assert len(steps) == 3 and len(cnn_module.layer_reports) == 3
    for step, planned in zip(steps, plan.layers):
        assert step.layer.name == planned.name
        np.testing.assert_array_equal(step.layer.weight, planned.weight)  # export round trip
        xq, yq = tensors[step.input], tensors[step.output]
        assert xq.dtype == yq.dtype == np.int8
        np.testing.assert_array_equal(yq, step.layer.reference(xq))
        w, b = step.layer.weight, step.layer.bias
        (emulated,) = interpreter.call_op(step.layer.name, (xq, w, b))
        np.testing.assert_array_equal(yq, emulated)
    assert np.any(tensors[steps[0].output] > 0)  # not trivially all zeros


@pytest.fixture(scope="module")
def exact_build():
    calibration = {"x": samples((1, 16, 8, 6), 8, seed=2)}
    module = xweave.build(exact_model(), target="vta", calibration=calibration)
    plan = compile_for_vta(xweave.load_onnx(exact_model()), calibration)
    return module, plan


def test_exact_model_is_bit_exact_end_to_end(exact_build):
    module, plan = exact_build
    assert [type(s).__name__ for s in plan.steps] == [
        "CpuSegment", "AcceleratorStep", "AcceleratorStep", "CpuSegment", "AcceleratorStep",
        "CpuSegment"]
    for x in samples((1, 16, 8, 6), 3, seed=4):
        (y,) = module.run(x=x)
        (emulated,) = interpret(plan.quantized, [x])
        np.testing.assert_array_equal(y, emulated)
        assert np.unique(y).size > 2


def test_export_and_load_round_trip(exact_build, tmp_path):
    module, _ = exact_build
    x = samples((1, 16, 8, 6), 1, seed=6)[0]
    (y,) = module.run(x=x)
    cycles = [r.report.total_cycles for r in module.layer_reports]
    module.export(tmp_path / "m.xwm")
    loaded = xweave.load_module(tmp_path / "m.xwm")
    (y2,) = loaded.run(x=x)
    np.testing.assert_array_equal(y, y2)
    assert [r.report.total_cycles for r in loaded.layer_reports] == cycles
    assert "int8_conv2d_0" in loaded.profile()
    with pytest.raises(xweave.InputError, match="expected shape"):
        loaded.run(x=x[:, :4])


def test_bad_calibration_is_a_clear_error(tmp_path):
    model = exact_model()
    with pytest.raises(XweaveError, match="needs calibration inputs"):
        xweave.build(model, target="vta")
    with pytest.raises(XweaveError, match=r"calibration input 'x': expected shape \[1, 16, 8, 6\]"):
        xweave.build(model, target="vta", calibration={"x": np.zeros((2, 3), np.float32)})
    with pytest.raises(XweaveError, match="missing input"):
        xweave.build(model, target="vta", calibration={"y": np.zeros((1, 16, 8, 6), np.float32)})
    with pytest.raises(XweaveError, match="target 'llvm' takes no option"):
        xweave.build(model, target="llvm", calibration={"x": np.zeros((1, 16, 8, 6))})

    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    code, _, err = run_cli("compile", path, "--target", "vta", "-o", tmp_path / "m.xwm")
    assert code == 2 and "Traceback" not in err
    assert "needs calibration inputs (--calibration FILE.npz)" in err
    (tmp_path / "bad.npz").write_text("not a zip")
    code, _, err = run_cli("compile", path, "--target", "vta", "--calibration",
                              tmp_path / "bad.npz", "-o", tmp_path / "m.xwm")
    assert code == 2 and "Traceback" not in err
    assert "bad.npz: cannot read calibration inputs" in err
    code, _, err = run_cli("compile", path, "--target", "vta", "--calibration",
                              tmp_path / "missing.npz", "-o", tmp_path / "m.xwm")
    assert code == 2 and "missing.npz: no such file" in err
    assert not (tmp_path / "m.xwm").exists()
