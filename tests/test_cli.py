"""The `xweave` and `xweave-opt` command lines: the happy path and every kind of bad input."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from xweave.pipeline import CompileOptions, cpu_stages, pass_spec

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def run(tool, *args, cwd=None):
    return subprocess.run([str(BIN / tool), *map(str, args)], capture_output=True, text=True,
                          cwd=cwd)


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    rng = np.random.default_rng(0)
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["y"], name="relu"),
    ]
    graph = helper.make_graph(
        nodes, "m", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 6, 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 6, 6])],
        initializer=[numpy_helper.from_array(rng.standard_normal((4, 2, 3, 3)).astype(np.float32), "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    path = tmp_path_factory.mktemp("m") / "m.onnx"
    onnx.save(model, path)
    return path


def dump_names() -> list[str]:
    """The files `--dump-ir` writes, without .mlir: the input, then every stage."""
    return [f"{i:02d}-{name}" for i, name in enumerate(["graph", *(s.name for s in cpu_stages(CompileOptions()))])]


def test_compile_run_roundtrip_with_dump_ir(model_path, tmp_path):
    out = tmp_path / "m.xwm"
    dump = tmp_path / "ir"
    r = run("xweave", "compile", model_path, "--target", "llvm", "-o", out, "--dump-ir", dump)
    assert r.returncode == 0, r.stderr
    stages = sorted(p.name for p in dump.iterdir())
    assert [s for s in stages if s.endswith(".mlir")] == [f"{n}.mlir" for n in dump_names()]
    assert dump_names()[:2] == ["00-graph", "01-graph-opt"] and dump_names()[-1].endswith("-llvm")
    assert any(s.endswith(".ll") for s in stages) and any(s.endswith(".s") for s in stages)

    x = np.random.default_rng(1).standard_normal((1, 2, 6, 6)).astype(np.float32)
    np.savez(tmp_path / "in.npz", x=x)
    r = run("xweave", "run", out, "--inputs", tmp_path / "in.npz", "-o", tmp_path / "out.npz",
            "--print-time", "--repeat", "3")
    assert r.returncode == 0, r.stderr
    assert "time (ms)" in r.stdout and "median" in r.stdout
    import onnxruntime as ort

    (expected,) = ort.InferenceSession(str(model_path)).run(None, {"x": x})
    with np.load(tmp_path / "out.npz") as got:
        np.testing.assert_allclose(got["y"], expected, rtol=1e-4, atol=1e-5)


def test_no_winograd_leaves_the_stage_out(model_path, tmp_path):
    dump = tmp_path / "ir"
    r = run("xweave", "compile", model_path, "-o", tmp_path / "m.xwm", "--no-winograd",
            "--dump-ir", dump)
    assert r.returncode == 0, r.stderr
    names = sorted(p.name for p in dump.glob("*.mlir"))
    assert "03-winograd.mlir" in [f"{n}.mlir" for n in dump_names()]
    assert not any("winograd" in n for n in names) and len(names) == len(dump_names()) - 1
    r = run("xweave", "run", model_path, "--winograd", "--repeat", "1")
    assert r.returncode == 0, r.stderr


def test_dumped_stages_replay_with_xweave_opt(model_path, tmp_path):
    """xweave-opt reproduces each stage from the one before, as `xweave compile` does."""
    dump = tmp_path / "ir"
    assert run("xweave", "compile", model_path, "-o", tmp_path / "m.xwm", "--dump-ir", dump,
               "--elide-resources-larger-than", "0").returncode == 0
    stages = cpu_stages(CompileOptions())
    passes = [pass_spec([stage]) for stage in stages]
    names = dump_names()

    def body(name: str) -> str:  # the dump without its header comment
        lines = (dump / f"{name}.mlir").read_text().splitlines(keepends=True)
        return "".join(line for line in lines if not line.startswith("// ")).strip()

    for p, before, after in zip(passes, names, names[1:]):
        r = run("xweave-opt", dump / f"{before}.mlir", "-p", p)
        assert r.returncode == 0, r.stderr
        assert r.stdout.strip() == body(after), p
    r = run("xweave-opt", dump / "00-graph.mlir", "-p", pass_spec(stages))
    assert r.returncode == 0 and r.stdout.strip() == body(names[-1])


def test_unsupported_ops_listed_without_traceback(tmp_path):
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="ok"),
             helper.make_node("NonZero", ["a"], ["b"], name="nz1"),
             helper.make_node("TopK", ["x", "k"], ["c", "d"], name="topk", axis=-1)]
    graph = helper.make_graph(nodes, "m", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                              [helper.make_tensor_value_info("b", TensorProto.INT64, None)],
                              initializer=[numpy_helper.from_array(np.array([2], np.int64), "k")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    path = tmp_path / "bad.onnx"
    onnx.save(model, path)
    r = run("xweave", "compile", path, "-o", tmp_path / "bad.xwm")
    assert r.returncode != 0
    assert "Traceback" not in r.stderr
    assert "NonZero" in r.stderr and "nz1" in r.stderr and "TopK" in r.stderr and "topk" in r.stderr
    assert not (tmp_path / "bad.xwm").exists()


def test_malformed_onnx_file(tmp_path):
    path = tmp_path / "junk.onnx"
    path.write_bytes(b"\x08\x07 this is not a protobuf \xff\xff\xff")
    r = run("xweave", "compile", path, "-o", tmp_path / "out.xwm")
    assert r.returncode == 2 and "Traceback" not in r.stderr and "junk.onnx" in r.stderr


def test_run_with_wrong_inputs(model_path, tmp_path):
    out = tmp_path / "m.xwm"
    assert run("xweave", "compile", model_path, "-o", out).returncode == 0
    np.savez(tmp_path / "bad.npz", x=np.zeros((1, 2, 5, 6), np.float32))
    r = run("xweave", "run", out, "--inputs", tmp_path / "bad.npz")
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert "input 'x'" in r.stderr and "[1, 2, 6, 6]" in r.stderr
    np.savez(tmp_path / "missing.npz", other=np.zeros((1,), np.float32))
    r = run("xweave", "run", out, "--inputs", tmp_path / "missing.npz")
    assert r.returncode != 0 and "missing input" in r.stderr and "'x'" in r.stderr


def test_failed_compile_keeps_existing_module(model_path, tmp_path):
    out = tmp_path / "m.xwm"
    assert run("xweave", "compile", model_path, "-o", out).returncode == 0
    before = out.read_bytes()
    bad = tmp_path / "junk.onnx"
    bad.write_bytes(b"junk")
    assert run("xweave", "compile", bad, "-o", out).returncode != 0
    assert out.read_bytes() == before


@pytest.mark.parametrize("text, named", [
    pytest.param("func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {\n"
                 "  %y = graph.relu %x : tensor<3xf32>\n"
                 "  func.return %y : tensor<2xf32>\n}\n", "", id="parse-error"),
    pytest.param('func.func @f(%x: tensor<2xf32>) -> tensor<3xf32> {\n'
                 '  %y = "graph.relu"(%x) : (tensor<2xf32>) -> tensor<3xf32>\n'
                 '  func.return %y : tensor<3xf32>\n}\n', "graph.relu", id="verify-error"),
])
def test_xweave_opt_error_names_file_line_col(tmp_path, text, named):
    """A parse error names file:line:col; a verify error also the op."""
    path = tmp_path / "bad.mlir"
    path.write_text(text)
    r = run("xweave-opt", path)
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert f"{path}:2:" in r.stderr and named in r.stderr


def test_xweave_opt_unknown_pass(tmp_path):
    path = tmp_path / "ok.mlir"
    path.write_text("func.func @f() {\n  func.return\n}\n")
    r = run("xweave-opt", path, "-p", "no-such-pass")
    assert r.returncode != 0 and "Traceback" not in r.stderr and "no-such-pass" in r.stderr


def test_xweave_opt_load_plugin_registers_an_accelerator(tmp_path):
    """A plugin module that registers an accelerator brings its dialect and passes."""
    (tmp_path / "mini_plugin.py").write_text(
        "import sys; sys.path.insert(0, %r)\n"
        "import gemm8x8  # registers the unit\n" % str(ROOT / "examples"))
    path = tmp_path / "ok.mlir"
    path.write_text("func.func @f() {\n  func.return\n}\n")
    r = run("xweave-opt", "--load-plugin", "mini_plugin", path, "-p", "convert-loop-to-gemm8x8",
            cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "func.func @f" in r.stdout
    r = run("xweave-opt", "--load-plugin", tmp_path / "mini_plugin.py", path, "-p",
            "convert-loop-to-gemm8x8")
    assert r.returncode == 0, r.stderr
    r = run("xweave-opt", path, "-p", "convert-loop-to-gemm8x8", cwd=tmp_path)
    assert r.returncode != 0 and "convert-loop-to-gemm8x8" in r.stderr


def test_xweave_opt_missing_plugin(tmp_path):
    path = tmp_path / "ok.mlir"
    path.write_text("func.func @f() {\n  func.return\n}\n")
    r = run("xweave-opt", "--load-plugin=no_such_plugin_module", path)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "no_such_plugin_module" in r.stderr


def test_main_job_from_readme():
    r = run("xweave", "run", ROOT / "examples" / "small_cnn.onnx", "--print-time", "--repeat", "2")
    assert r.returncode == 0, r.stderr
    assert "output 'logits': shape [1, 10]" in r.stdout and "time (ms)" in r.stdout
