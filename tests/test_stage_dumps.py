"""`--dump-ir` files a compiler engineer can use: each names the `xweave-opt` command that
produced it (and replays byte for byte), weights are elided unless asked for (and what
needs them says so), VTA layers get their ISA listing, and any stage compiles on."""

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import xweave
from xweave.accel.vta.offload import VtaLayer
from xweave.pipeline import CompileOptions, pass_spec, stage_names, stages
from xweave.runtime.hetero import AcceleratorStep, HeteroModule
from xweave.target import as_target

ROOT = Path(__file__).resolve().parents[1]
MODEL = ROOT / "examples" / "small_cnn.onnx"
BIN = Path(sys.executable).parent
TARGET = "llvm -mcpu=znver3"  # tests/conftest.py pins the same machine


def run(tool, *args, cwd=None):
    return subprocess.run([str(BIN / tool), *map(str, args)], capture_output=True, text=True,
                          timeout=600, cwd=cwd)


def body(path: Path) -> str:
    """A dump without its header comment."""
    return "".join(line for line in path.read_text().splitlines(keepends=True)
                   if not line.startswith("// "))


def files(dump: Path) -> list[Path]:
    return sorted(dump.glob("[0-9][0-9]-*.mlir"))


@pytest.fixture(scope="module")
def kept(tmp_path_factory) -> Path:
    """small_cnn's stage dumps with every weight kept."""
    dump = tmp_path_factory.mktemp("kept")
    r = run("xweave", "compile", MODEL, "--target", TARGET, "-o", dump / "m.xwm",
            "--dump-ir", dump / "ir", "--elide-resources-larger-than", 0)
    assert r.returncode == 0, r.stderr
    return dump / "ir"


@pytest.fixture(scope="module")
def elided(tmp_path_factory) -> Path:
    """small_cnn's stage dumps as `--dump-ir` writes them by default."""
    dump = tmp_path_factory.mktemp("elided")
    r = run("xweave", "compile", MODEL, "--target", TARGET, "-o", dump / "m.xwm",
            "--dump-ir", dump / "ir")
    assert r.returncode == 0, r.stderr
    return dump / "ir"


@pytest.fixture(scope="module")
def reference() -> tuple[np.ndarray, np.ndarray]:
    """An input of small_cnn and onnxruntime's output for it."""
    x = np.random.default_rng(7).standard_normal((1, 3, 32, 32)).astype(np.float32)
    (y,) = ort.InferenceSession(str(MODEL)).run(None, {"data": x})
    return x, y


# --------------------------------------------------------------------------------------
# The pipeline, printed; headers that replay
# --------------------------------------------------------------------------------------


def test_print_pipeline_is_the_pipeline_compile_runs(tmp_path):
    r = run("xweave", "compile", MODEL, "--target", TARGET, "--print-pipeline")
    assert r.returncode == 0, r.stderr
    (line,) = r.stdout.splitlines()
    assert line == pass_spec(stages(CompileOptions(as_target(TARGET))), explicit=True)
    assert "graph-fuse{max_depth=256}" in line and line.endswith("convert-loop-to-llvm")
    assert not list(tmp_path.iterdir())  # printed only: nothing compiled
    r = run("xweave", "compile", MODEL, "--target", TARGET, "--print-pipeline", "--no-fuse",
            "--no-winograd", "--tuning-records", tmp_path / "r.jsonl")
    assert r.returncode == 0, r.stderr
    assert "graph-fuse" not in r.stdout and "graph-winograd" not in r.stdout
    assert f'schedule-kernels{{tuning_records="{tmp_path / "r.jsonl"}"' in r.stdout
    # with -o, it prints and compiles
    r = run("xweave", "compile", MODEL, "--target", TARGET, "--print-pipeline", "-o",
            tmp_path / "m.xwm")
    assert r.returncode == 0 and line in r.stdout and (tmp_path / "m.xwm").exists()


def test_the_printed_pipeline_replays_the_whole_build(kept):
    line = run("xweave", "compile", MODEL, "--target", TARGET, "--print-pipeline").stdout.strip()
    r = run("xweave-opt", kept / "00-graph.mlir", "-p", line)
    assert r.returncode == 0, r.stderr
    assert r.stdout == body(kept / "09-llvm.mlir")
    # given IR of a stage, the pipeline printed is the rest of the build
    rest = run("xweave", "compile", kept / "06-loop.mlir", "--target", TARGET,
               "--print-pipeline").stdout.strip()
    assert rest.startswith("schedule-kernels{") and line.endswith("," + rest)
    r = run("xweave-opt", kept / "06-loop.mlir", "-p", rest)
    assert r.returncode == 0 and r.stdout == body(kept / "09-llvm.mlir"), r.stderr
    part = run("xweave", "compile", kept / "06-loop.mlir", "--target", TARGET, "--compile-to",
               "scheduled", "--print-pipeline").stdout.strip()
    assert part == "schedule-kernels{tuning_records any_target=false},loop-fold-constant-packs"


def test_each_dump_replays_from_its_header(kept):
    dumps = files(kept)
    assert [p.name.split("-", 1)[1][:-5] for p in dumps] == stage_names(
        CompileOptions(as_target(TARGET)))
    assert dumps[0].read_text().startswith("// xweave ") and \
        "stage 'graph' (the pipeline's input)" in dumps[0].read_text().splitlines()[0]
    for before, after in zip(dumps, dumps[1:]):
        first, command = after.read_text().splitlines()[:2]
        stage = after.name.split("-", 1)[1][:-5]
        assert re.fullmatch(rf"// xweave \S+: stage '{stage}', produced from {before.name} by:",
                            first), first
        argv = shlex.split(command.removeprefix("// "))
        assert argv[:2] == ["xweave-opt", before.name] and argv[2] == "-p"
        r = run(*argv, cwd=kept)
        assert r.returncode == 0, r.stderr
        assert r.stdout == body(after), f"{after.name} does not replay: {command}"


def test_a_dump_with_its_header_parses_back(kept):
    r = run("xweave-opt", kept / "07-scheduled.mlir")
    assert r.returncode == 0, r.stderr
    assert r.stdout == body(kept / "07-scheduled.mlir")


# --------------------------------------------------------------------------------------
# Elided weights
# --------------------------------------------------------------------------------------


def test_dumps_elide_large_weights_by_default(kept, elided):
    for full, small in zip(files(kept), files(elided), strict=True):
        assert full.name == small.name
        if "dense_resource<" in small.read_text():
            assert '"__elided__"' in small.read_text() and '"__elided__"' not in full.read_text()
            assert small.stat().st_size < full.stat().st_size
    # the weight section of the scheduled stage is gone: at most 1024 bytes a blob
    blobs = re.findall(r'"0x([0-9A-F]+)"', (elided / "07-scheduled.mlir").read_text())
    assert all(len(b) // 2 - 4 <= 1024 for b in blobs)
    # ... and it still parses and prints the same
    r = run("xweave-opt", elided / "07-scheduled.mlir")
    assert r.returncode == 0 and r.stdout == body(elided / "07-scheduled.mlir"), r.stderr


@pytest.mark.parametrize("command", ["compile", "run"])
def test_what_needs_elided_weights_fails_in_one_line(elided, tmp_path, command):
    out = tmp_path / "m.xwm"
    out.write_bytes(b"kept")
    args = ("-o", out) if command == "compile" else ()
    r = run("xweave", command, elided / "07-scheduled.mlir", *args)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    (line,) = r.stderr.splitlines()
    assert re.search(r"dense_resource<\w+>: its data was elided when this IR was written", line)
    assert "--elide-resources-larger-than 0" in line
    assert out.read_bytes() == b"kept"


def test_xweave_opt_fails_on_elided_weights_a_pass_needs(elided):
    r = run("xweave-opt", elided / "05-te.mlir", "-p",
            "convert-te-to-loop,schedule-kernels,loop-fold-constant-packs")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.startswith("error: dense_resource<") and "elided" in r.stderr


# --------------------------------------------------------------------------------------
# Any stage compiles on
# --------------------------------------------------------------------------------------


def test_every_stage_dump_compiles_to_the_same_model(kept, reference, tmp_path):
    x, expected = reference
    direct = xweave.build(MODEL, TARGET).run(data=x)[0]
    np.testing.assert_allclose(direct, expected, rtol=1e-4, atol=1e-5)
    for dump in files(kept):
        got = xweave.build(dump, TARGET).run(data=x)[0]
        np.testing.assert_array_equal(got, direct, err_msg=dump.name)


@pytest.mark.parametrize("stage", ["04-fused", "07-scheduled", "09-llvm"])
def test_the_cli_continues_from_a_stage(kept, reference, tmp_path, stage):
    x, expected = reference
    np.savez(tmp_path / "in.npz", data=x)
    r = run("xweave", "compile", kept / f"{stage}.mlir", "--target", TARGET, "-o",
            tmp_path / "m.xwm", "--dump-ir", tmp_path / "ir")
    assert r.returncode == 0, r.stderr
    r = run("xweave", "run", tmp_path / "m.xwm", "-i", tmp_path / "in.npz", "-o",
            tmp_path / "out.npz")
    assert r.returncode == 0, r.stderr
    np.testing.assert_allclose(np.load(tmp_path / "out.npz")["logits"], expected,
                               rtol=1e-4, atol=1e-5)
    # the dumps start at the stage given, named as in the full build
    names = [p.name for p in files(tmp_path / "ir")]
    assert names[0] == f"{stage}.mlir" and names[-1] == "09-llvm.mlir"
    r = run("xweave", "run", kept / f"{stage}.mlir", "-i", tmp_path / "in.npz", "-o",
            tmp_path / "direct.npz")
    assert r.returncode == 0, r.stderr
    np.testing.assert_allclose(np.load(tmp_path / "direct.npz")["logits"], expected,
                               rtol=1e-4, atol=1e-5)


def test_compile_to_writes_a_stage_that_compiles_on(reference, tmp_path):
    x, expected = reference
    r = run("xweave", "compile", MODEL, "--target", TARGET, "--compile-to", "scheduled",
            "-o", tmp_path / "s.mlir")
    assert r.returncode == 0, r.stderr
    text = (tmp_path / "s.mlir").read_text()
    assert text.startswith("// xweave ") and "stage 'scheduled'" in text.splitlines()[0]
    assert "xweave.scheduled" in text and "__elided__" not in text
    # --no-cache (how a build is stored, not what it lowers) is accepted at any stage.
    r = run("xweave", "compile", tmp_path / "s.mlir", "--target", TARGET, "--compile-to",
            "llvm", "--no-cache", "--print-pipeline", "-o", tmp_path / "l.mlir")
    assert r.returncode == 0, r.stderr
    got = xweave.build(tmp_path / "l.mlir", TARGET).run(data=x)[0]
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
    r = run("xweave", "compile", tmp_path / "s.mlir", "--compile-to", "te", "-o", tmp_path / "t.mlir")
    assert r.returncode == 2 and r.stderr.strip() == \
        "xweave compile: error: the IR is at stage 'scheduled', past stage 'te'"
    r = run("xweave", "compile", MODEL, "--compile-to", "nowhere", "-o", tmp_path / "t.mlir")
    assert r.returncode == 2 and "no stage 'nowhere'" in r.stderr and "scheduled" in r.stderr


@pytest.mark.parametrize("text, why", [
    ("func.func @f() {\n  func.return\n}\n", "it has no @main function"),
    ("func.func @main(%a: i32) -> i32 {\n  %b = arith.addi %a, %a : i32\n"
     "  func.return %b : i32\n}\n", "it has no graph, te, loop or llvm ops"),
])
def test_ir_at_no_stage_is_refused_in_one_line(tmp_path, text, why):
    path = tmp_path / "x.mlir"
    path.write_text("// xweave 0.1.0: stage 'scheduled'\n" + text)
    for command in (("compile", path, "-o", tmp_path / "x.xwm"), ("run", path)):
        r = run("xweave", *command)
        assert r.returncode == 2 and "Traceback" not in r.stderr
        (line,) = r.stderr.splitlines()
        assert f"{path}: the IR is at no stage of the pipeline: {why}" in line
        assert "accepted: graph, graph-opt, layout, winograd, fused, te, loop, scheduled, " \
            "planned, llvm" in line


def test_stage_ir_for_an_accelerator_is_refused(kept, tmp_path):
    np.savez(tmp_path / "c.npz", data=np.zeros((1, 3, 32, 32), np.float32))
    r = run("xweave", "compile", kept / "07-scheduled.mlir", "--target", "vta",
            "--calibration", tmp_path / "c.npz", "-o", tmp_path / "m.xwm")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "the IR is at stage 'scheduled', but target 'vta' compiles from the graph stage only" \
        in r.stderr


# --------------------------------------------------------------------------------------
# VTA microcode
# --------------------------------------------------------------------------------------


def small_int8_cnn() -> onnx.ModelProto:
    """conv 3x3 -> relu -> conv 1x1 -> relu -> global pool -> dense: convs for VTA."""
    rng = np.random.default_rng(0)
    weights = {"w1": (32, 16, 3, 3), "b1": (32,), "w2": (32, 32, 1, 1), "b2": (32,),
               "fc": (10, 32), "fcb": (10,)}
    nodes = [
        helper.make_node("Conv", ["data", "w1", "b1"], ["c1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], kernel_shape=[1, 1]),
        helper.make_node("Relu", ["c2"], ["r2"]),
        helper.make_node("GlobalAveragePool", ["r2"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"], axis=1),
        helper.make_node("Gemm", ["f", "fc", "fcb"], ["logits"], transB=1),
    ]
    graph = helper.make_graph(
        nodes, "m", [helper.make_tensor_value_info("data", TensorProto.FLOAT, [1, 16, 8, 8])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 10])],
        initializer=[numpy_helper.from_array((rng.standard_normal(s) * 0.2).astype(np.float32), n)
                     for n, s in weights.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def test_vta_dumps_an_isa_listing_per_offloaded_layer(tmp_path):
    onnx.save(small_int8_cnn(), tmp_path / "cnn.onnx")
    np.savez(tmp_path / "calib.npz",
             data=np.random.default_rng(5).standard_normal((8, 1, 16, 8, 8)).astype(np.float32))
    r = run("xweave", "compile", tmp_path / "cnn.onnx", "--target", "vta", "--calibration",
            tmp_path / "calib.npz", "-o", tmp_path / "m.xwm", "--dump-ir", tmp_path / "ir")
    assert r.returncode == 0, r.stderr
    module = xweave.load_module(tmp_path / "m.xwm")
    assert isinstance(module, HeteroModule)
    offloaded = [(i, s) for i, s in enumerate(module.steps) if isinstance(s, AcceleratorStep)]
    listings = sorted((tmp_path / "ir" / "vta").glob("layer*.isa.txt"))
    assert [p.name for p in listings] == [f"layer{i:02d}.isa.txt" for i, _ in offloaded]
    assert len(listings) >= 2
    rng = np.random.default_rng(0)
    plan = (tmp_path / "ir" / "01-offload-plan.txt").read_text()
    for path, (_, step) in zip(listings, offloaded):
        layer = step.layer
        assert isinstance(layer, VtaLayer)
        text = path.read_text()
        first, second = text.splitlines()[:2]
        assert first.startswith(f"; {layer.name}: {layer.describe()}, input ")
        assert layer.name in plan
        shape = tuple(int(d) for d in first.rsplit(" ", 1)[1].split("x"))
        # the listing is the program the layer runs: as many instructions as it executes
        count = int(re.fullmatch(r"; instructions \((\d+)\)", second).group(1))
        _, report = layer.run(rng.integers(-8, 8, shape, dtype=np.int8))
        assert count == sum(report.instruction_counts.values()) > 0
        assert "gemm" in text and "; compute" in text and "finish" in text.lower()


def test_the_readme_replay_commands_work_as_written(tmp_path):
    """The README's dump-and-replay block, run as written (in a copy of examples/)."""
    readme = (ROOT / "README.md").read_text()
    block = readme.split("keeps the weights the passes fold):\n\n```sh\n", 1)[1].split("```", 1)[0]
    commands = block.strip().splitlines()
    assert [c.split()[:2] for c in commands] == [["xweave", "compile"], ["xweave-opt", "ir/00-graph.mlir"],
                                                  ["xweave", "run"]]
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "small_cnn.onnx").write_bytes(MODEL.read_bytes())
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    for command in commands:
        r = subprocess.run(["bash", "-c", command], cwd=tmp_path, capture_output=True,
                           text=True, timeout=600, env=env)
        assert r.returncode == 0, (command, r.stderr)
    assert (tmp_path / "llvm.mlir").read_text() == body(tmp_path / "ir" / "09-llvm.mlir")
    assert "output 'logits': shape [1, 10]" in r.stdout
