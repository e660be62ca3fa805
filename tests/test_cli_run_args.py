"""`xweave run` argument mistakes: one line naming the argument, a non-zero exit, no
traceback, and nothing written."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper

import xweave

BIN = Path(sys.executable).parent


def run(*args, cwd=None):
    return subprocess.run([str(BIN / "xweave"), "run", *map(str, args)], capture_output=True,
                          text=True, cwd=cwd, timeout=120)


@pytest.fixture(scope="module")
def module_path(tmp_path_factory):
    graph = helper.make_graph(
        [helper.make_node("Relu", ["data"], ["y"], name="relu")], "m",
        [helper.make_tensor_value_info("data", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    path = tmp_path_factory.mktemp("m") / "m.xwm"
    xweave.build(model).export(path)
    return path


def one_line_error(r, *needles):
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("xweave run: error: "), r.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


def test_empty_npz(module_path, tmp_path):
    (tmp_path / "in.npz").write_bytes(b"")
    one_line_error(run(module_path, "--inputs", tmp_path / "in.npz"),
                   "--inputs", "in.npz", "cannot read inputs as .npz")


def test_truncated_npz(module_path, tmp_path):
    full = tmp_path / "full.npz"
    np.savez(full, data=np.ones((2, 3), np.float32))
    cut = tmp_path / "cut.npz"
    cut.write_bytes(full.read_bytes()[:150])
    one_line_error(run(module_path, "--inputs", cut), "cut.npz", "cannot read inputs as .npz")


def test_npy_instead_of_npz(module_path, tmp_path):
    np.save(tmp_path / "x.npy", np.ones((2, 3), np.float32))
    one_line_error(run(module_path, "--inputs", tmp_path / "x.npy"),
                   "x.npy", "one unnamed array (.npy)", "numpy.savez(FILE, data=...)")


def test_directory_as_inputs(module_path, tmp_path):
    one_line_error(run(module_path, "--inputs", tmp_path), "is a directory")


@pytest.mark.parametrize("option, value, low", [
    ("--repeat", 0, 1), ("--repeat", -5, 1), ("--number", 0, 1), ("--print-top", -1, 0)])
def test_counts_below_their_minimum(module_path, option, value, low):
    one_line_error(run(module_path, "--print-time", option, value),
                   f"{option} must be at least {low}, got {value}")


def test_output_name_gets_npz_and_says_so(module_path, tmp_path):
    r = run(module_path, "-o", tmp_path / "result")
    assert r.returncode == 0, r.stderr
    assert f"wrote {tmp_path / 'result.npz'}" in r.stdout
    with np.load(tmp_path / "result.npz") as out:
        assert out["y"].shape == (2, 3)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["result.npz"]


def test_output_directory_is_refused_before_running(module_path, tmp_path):
    one_line_error(run(module_path, "-o", tmp_path), "-o", "is a directory")
    one_line_error(run(module_path, "-o", tmp_path / "missing" / "out.npz"), "no such directory")
    assert list(tmp_path.iterdir()) == []
