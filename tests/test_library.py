"""A model as one shared library with a C API (`export_library`, `xweave.h`): the same
results as the in-process module from Python (ctypes) and from C (examples/c/run_model.c),
on x86-64 and, under qemu-user, on aarch64 against onnxruntime; bad input through the
C API (tests/c/bad_input.c) and bad files are error codes and one-line messages."""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import xweave
from xweave.cli import main
from xweave.errors import InputError
from xweave.runtime.library import LibraryModule
from xweave.runtime.toolchain import ToolchainError
from xweave.target import TargetError

from helpers import load_bench

ROOT = Path(__file__).resolve().parents[1]
RUN_MODEL = ROOT / "examples" / "c" / "run_model.c"
BAD_INPUT = ROOT / "tests" / "c" / "bad_input.c"
CC = shutil.which("cc") or shutil.which("gcc")
needs_cc = pytest.mark.skipif(CC is None, reason="no C compiler (cc) on the PATH")


def two_in_two_out() -> onnx.ModelProto:
    """A conv+relu on one input and a Gemm on the other: two inputs, two outputs,
    weights and parallel loops."""
    rng = np.random.default_rng(0)
    init = [numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype(np.float32), "w"),
            numpy_helper.from_array(rng.standard_normal(8).astype(np.float32), "b"),
            numpy_helper.from_array(rng.standard_normal((16, 5)).astype(np.float32), "m"),
            numpy_helper.from_array(rng.standard_normal(5).astype(np.float32), "c")]
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["conv"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["conv"], ["a"]),
             helper.make_node("Gemm", ["y", "m", "c"], ["g"]),
             helper.make_node("Tanh", ["g"], ["t"])]
    graph = helper.make_graph(
        nodes, "two", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16]),
                       helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 16])],
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [1, 8, 16, 16]),
         helper.make_tensor_value_info("t", TensorProto.FLOAT, [4, 5])], init)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def feeds_of(seed: int = 1) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"x": rng.standard_normal((1, 3, 16, 16)).astype(np.float32),
            "y": rng.standard_normal((4, 16)).astype(np.float32)}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The two-input model built in process and exported as a library: (module, path)."""
    module = xweave.build(two_in_two_out())
    path = tmp_path_factory.mktemp("library") / "two.so"
    if CC is not None:
        module.export_library(path)
    return module, path


def compile_c(source: Path, out: Path) -> Path:
    subprocess.run([CC, "-O2", "-Wall", "-Werror", "-I", str(xweave.include_dir()), str(source),
                    "-o", str(out)], check=True, capture_output=True, text=True, timeout=120)
    return out


@pytest.fixture(scope="module")
def run_model(tmp_path_factory):
    if CC is None:
        pytest.skip("no C compiler (cc) on the PATH")
    return compile_c(RUN_MODEL, tmp_path_factory.mktemp("c") / "run_model")


# --- from Python --------------------------------------------------------------------


@needs_cc
def test_the_library_computes_what_the_module_computes(built):
    module, path = built
    library = xweave.load_module(path)
    assert isinstance(library, LibraryModule)
    assert library.inputs == module.inputs and library.outputs == module.outputs
    assert library.target == module.target and library.peak_memory_bytes == module.peak_memory_bytes
    assert library.triple == module.abi["target"]["triple"]
    feeds = feeds_of()
    expected = module.run(**feeds)
    for got, want in zip(library.run(**feeds), expected, strict=True):
        np.testing.assert_array_equal(got, want)
    (tanh,) = library.run(["t"], feeds)  # onnxruntime's form
    np.testing.assert_array_equal(tanh, expected[1])
    with pytest.raises(InputError, match="input 'y': expected shape \\[4, 16\\]"):
        library.run(x=feeds["x"], y=feeds["y"][:2])


@needs_cc
def test_the_library_is_safe_from_many_threads_at_any_thread_count(built):
    module, path = built
    library = xweave.load_module(path, threads=1)
    assert library.num_threads == 1
    library.num_threads = 2
    assert library.num_threads == 2
    inputs = [feeds_of(seed) for seed in range(6)]
    expected = [module.run(**f) for f in inputs]
    wrong: list[int] = []

    def caller(k: int) -> None:
        for i in range(12):
            j = (i + k) % len(inputs)
            if not all(np.array_equal(g, e) for g, e in zip(library.run(**inputs[j]), expected[j])):
                wrong.append(j)

    threads = [threading.Thread(target=caller, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wrong == []
    with pytest.raises(xweave.XweaveError, match="positive integer"):
        library.num_threads = 0


@needs_cc
def test_the_library_needs_no_python_and_exports_one_symbol(built):
    _, path = built
    readelf = shutil.which("readelf")
    if readelf is None:
        pytest.skip("no readelf")
    dynamic = subprocess.run([readelf, "-dW", str(path)], capture_output=True, text=True).stdout
    needed = {line.split("[")[1].split("]")[0] for line in dynamic.splitlines() if "NEEDED" in line}
    assert needed <= {"libc.so.6", "libm.so.6", "libgomp.so.1", "libpthread.so.0"}, needed
    symbols = subprocess.run([readelf, "--dyn-syms", "-W", str(path)], capture_output=True,
                             text=True).stdout
    defined = {line.split()[-1] for line in symbols.splitlines()
               if len(line.split()) >= 8 and line.split()[6] != "UND" and "GLOBAL" in line}
    assert defined == {"xweave_library"}
    notes = subprocess.run([readelf, "-nW", str(path)], capture_output=True, text=True).stdout
    assert "xweave" in notes


# --- from C --------------------------------------------------------------------------


@needs_cc
def test_the_c_example_computes_what_the_module_computes(built, run_model, tmp_path):
    module, path = built
    feeds = feeds_of(2)
    np.save(tmp_path / "x.npy", feeds["x"])
    np.save(tmp_path / "y.npy", feeds["y"])
    proc = subprocess.run([str(run_model), path.name, str(tmp_path / "x.npy"),  # a bare name:
                           str(tmp_path / "y.npy"), "-o", str(tmp_path / "a.npy"),  # ./two.so
                           "--repeat", "3", "--threads", "2"],
                          capture_output=True, text=True, timeout=120, cwd=path.parent)
    assert proc.returncode == 0, proc.stderr
    assert "median" in proc.stdout and "2 threads" in proc.stdout
    np.testing.assert_array_equal(np.load(tmp_path / "a.npy"), module.run(**feeds)[0])
    # inputs in the wrong order: a one-line error naming the file and the shape expected
    proc = subprocess.run([str(run_model), str(path), str(tmp_path / "y.npy"),
                           str(tmp_path / "x.npy"), "-o", str(tmp_path / "b.npy")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and "y.npy: shape differs" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "b.npy").exists()


def _bad_files(good: Path, directory: Path) -> dict[str, Path]:
    """Files `xweave_open` must refuse, by case name (made from the good library)."""
    data = good.read_bytes()
    files: dict[str, bytes] = {
        "not_elf": b"this is not a library\n",
        "empty": b"",
        "truncated_half": data[:len(data) // 2],
        "truncated_end": data[:-100],
        "elf32": data[:4] + b"\x01" + data[5:],
        "wrong_arch": data[:18] + struct.pack("<H", 183) + data[20:],  # aarch64's e_machine
    }
    note = data.index(b"xweave\0\0") + 8  # the note's descriptor: the C API version first
    files["abi_newer_note"] = data[:note] + struct.pack("<I", 2) + data[note + 4:]
    table = data.index(b"xxwl\x01\x00\x00\x00")  # xweave_library: magic, abi_version
    files["abi_newer_table"] = data[:table + 4] + struct.pack("<I", 2) + data[table + 8:]
    paths = {}
    for name, content in files.items():
        paths[name] = directory / f"{name}.so"
        paths[name].write_bytes(content)
    return paths


EXPECTED_STATUS = {
    "not_elf": "NOT_A_MODEL", "empty": "NOT_A_MODEL", "truncated_half": "NOT_A_MODEL",
    "truncated_end": "NOT_A_MODEL", "elf32": "WRONG_TARGET", "wrong_arch": "WRONG_TARGET",
    "abi_newer_note": "ABI_VERSION", "abi_newer_table": "ABI_VERSION", "no_note": "NOT_A_MODEL",
    "open_null_path": "INVALID_ARGUMENT", "open_null_model": "INVALID_ARGUMENT",
    "open_no_error": "IO", "open_missing": "IO", "open_directory": "IO",
    "info_null_model": "INVALID_ARGUMENT", "output_info_null_model": "INVALID_ARGUMENT",
    "run_null_model": "INVALID_ARGUMENT", "threads_null_model": "INVALID_ARGUMENT",
    "target_null_model": "INVALID_ARGUMENT", "open_good": "OK", "info_index": "INVALID_ARGUMENT",
    "info_null": "INVALID_ARGUMENT", "target_null": "INVALID_ARGUMENT",
    "threads_zero": "INVALID_ARGUMENT", "threads_negative": "INVALID_ARGUMENT",
    "run_null_inputs": "INVALID_ARGUMENT", "run_null_outputs": "INVALID_ARGUMENT",
    "run_input_count": "INVALID_ARGUMENT", "run_output_count": "INVALID_ARGUMENT",
    "run_input_size_small": "INVALID_ARGUMENT", "run_input_size_large": "INVALID_ARGUMENT",
    "run_input_dtype": "INVALID_ARGUMENT", "run_input_dtype_unknown": "INVALID_ARGUMENT",
    "run_input_data_null": "INVALID_ARGUMENT", "run_output_size": "INVALID_ARGUMENT",
    "run_output_dtype": "INVALID_ARGUMENT", "run_output_data_null": "INVALID_ARGUMENT",
    "run_output_overlaps_input": "INVALID_ARGUMENT", "run": "OK", "run_no_error": "OK",
}


@needs_cc
def test_bad_input_through_the_c_api_is_an_error_code_never_a_crash(built, tmp_path):
    _, good = built
    program = compile_c(BAD_INPUT, tmp_path / "bad_input")
    cases = _bad_files(good, tmp_path)
    no_note = tmp_path / "no_note.c"
    no_note.write_text("int f(void) { return 1; }\n")
    subprocess.run([CC, "-shared", "-fPIC", str(no_note), "-o", str(tmp_path / "no_note.so")],
                   check=True, capture_output=True)
    cases["no_note"] = tmp_path / "no_note.so"
    proc = subprocess.run([str(program), str(good), *[f"{p}:{n}" for n, p in cases.items()]],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, (proc.returncode, proc.stdout, proc.stderr)
    lines = dict(line.split("\t", 1) for line in proc.stdout.splitlines())
    assert lines.pop("failures") == "0"
    got = {name: rest.split("\t")[0].removeprefix("XWEAVE_").removeprefix("ERROR_")
           for name, rest in lines.items()}
    assert got == EXPECTED_STATUS
    messages = {name: rest.split("\t", 1)[1] for name, rest in lines.items()}
    assert "compiled for x86_64" in messages["wrong_arch"] and "runs on x86_64" in messages["wrong_arch"]
    assert "truncated" in messages["truncated_end"]
    assert "ABI version 2" in messages["abi_newer_note"]
    assert "expected dtype float32, got float64" in messages["run_input_dtype"]
    assert "'x': expected 3072 bytes, got 3068" in messages["run_input_size_small"]
    failed = [n for n, status in EXPECTED_STATUS.items() if status != "OK" and n != "open_no_error"]
    assert all(messages[n] for n in failed), {n: messages[n] for n in failed if not messages[n]}


PY_WORKER = r"""
import json, sys, xweave
from xweave.errors import XweaveError
for path in json.loads(sys.stdin.read()):
    try:
        xweave.load_module(path)
        result = {"loaded": True}
    except XweaveError as e:
        result = {"error": str(e), "kind": type(e).__name__}
    print(json.dumps({"path": path, **result}), flush=True)
"""


@needs_cc
def test_python_refuses_bad_library_files_in_one_line(built, tmp_path):
    _, good = built
    cases = _bad_files(good, tmp_path)
    # (a fresh process: a file that got past the checks could take it down)
    proc = subprocess.run([sys.executable, "-c", PY_WORKER],
                          input=json.dumps([str(p) for p in cases.values()]),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    results = {Path(r["path"]).stem: r for r in map(json.loads, proc.stdout.splitlines())}
    assert set(results) == set(cases)
    for name, result in results.items():
        if name in ("not_elf", "empty"):  # not ELF: read as a module file (zip)
            assert "error" in result, name
            continue
        assert "error" in result and "\n" not in result["error"], (name, result)
        assert result["error"].startswith(str(cases[name])), result
    assert results["wrong_arch"]["kind"] == "TargetError"
    assert "truncated" in results["truncated_end"]["error"]
    assert "ABI version 2" in results["abi_newer_note"]["error"]
    assert results["abi_newer_table"]["kind"] == "ModelError"


# --- the command line and export --------------------------------------------------------


def xweave_cli(capsys, *args) -> tuple[int, str, str]:
    """`xweave ARGS` in this process: (exit code, stdout, stderr)."""
    try:
        main([str(a) for a in args])
        code = 0
    except SystemExit as e:
        code = e.code or 0
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def onnx_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("onnx") / "two.onnx"
    onnx.save(two_in_two_out(), path)
    return path


@needs_cc
def test_compile_to_a_library_on_the_command_line(onnx_path, tmp_path, capsys):
    out = tmp_path / "model.so"
    code, stdout, err = xweave_cli(capsys, "compile", onnx_path, "-o", out)
    assert code == 0 and f"wrote {out}" in stdout, err
    code, stdout, err = xweave_cli(capsys, "run", out, "--fill-mode", "ones")
    assert code == 0 and "output 't': shape [4, 5]" in stdout, err
    code, include, _ = xweave_cli(capsys, "include-dir")
    assert code == 0 and (Path(include.strip()) / "xweave.h").is_file()
    assert xweave_cli(capsys, "--print-include")[1] == include


def test_a_missing_cross_compiler_is_one_line_naming_its_package(onnx_path, tmp_path, capsys,
                                                                 monkeypatch):
    out = tmp_path / "model.so"
    out.write_bytes(b"kept")
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    monkeypatch.delenv("XWEAVE_CC", raising=False)
    code, _, err = xweave_cli(capsys, "compile", onnx_path, "-o", out, "--target",
                              "llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72")
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "no C compiler for aarch64-linux-gnu" in err
    assert "apt-get install gcc-aarch64-linux-gnu" in err
    assert out.read_bytes() == b"kept"
    code, _, err = xweave_cli(capsys, "compile", onnx_path, "--target", "vta", "-o", out)
    assert code == 2 and "cannot be a shared library" in err and out.read_bytes() == b"kept"


def test_a_failed_link_leaves_the_file_as_it_was(built, tmp_path, monkeypatch):
    module, _ = built
    out = tmp_path / "model.so"
    out.write_bytes(b"kept")
    monkeypatch.setenv("XWEAVE_CC", "false")
    with pytest.raises(ToolchainError, match="linking the library with false failed"):
        module.export_library(out)
    assert out.read_bytes() == b"kept" and [p.name for p in tmp_path.iterdir()] == ["model.so"]
    monkeypatch.setenv("XWEAVE_CC", "no-such-compiler-xw")
    with pytest.raises(ToolchainError, match="'no-such-compiler-xw' not found"):
        module.export_library(out)


# --- another architecture --------------------------------------------------------------

cross = load_bench("cross")


def test_code_for_aarch64_is_exported_not_run_here(tmp_path):
    module = xweave.build(two_in_two_out(), target=cross.DEFAULT_TARGET)
    assert not module.runnable and module.target.arch == "aarch64"
    assert module.abi["target"] == {"triple": "aarch64-linux-gnu", "features": ["neon"],
                                    "cpu": cross.DEFAULT_TARGET}
    # the schedules follow the machine model: 4-lane NEON vectors, fused multiply-adds
    assert "<4 x float>" in module.llvm_ir and "<8 x float>" not in module.llvm_ir
    assert "fmla\tv" in module.assembly and ".4s" in module.assembly
    with pytest.raises(TargetError, match="compiled for aarch64 .* this machine is x86_64"):
        module.run(**feeds_of())
    module.export(tmp_path / "m.xwm")
    with pytest.raises(TargetError, match="export it as a shared library"):
        xweave.load_module(tmp_path / "m.xwm")
    from xweave.autotune.tune_model import TuneError, tune_model

    with pytest.raises(TuneError, match="is for aarch64: the local runner measures on this"):
        tune_model(two_in_two_out(), tmp_path / "r.jsonl", target=cross.DEFAULT_TARGET)


def test_aarch64_libraries_under_qemu_match_onnxruntime():
    """bench/cross.py on one small model (the script runs them all): the library and the
    C example, cross-compiled, run under qemu-user."""
    records = cross.check_models(["resnet18"])
    if isinstance(records, str):
        pytest.skip(f"cannot run aarch64 code here: {records}")
    for record in records:
        assert record["ok"], record
        assert record["max_rel_err"] <= cross.TOLERANCE


@needs_cc
def test_the_speed_benchmark_runs_and_the_runtime_is_small():
    """bench/library.py in a smoke mode (one round of two runs of the main job's model):
    the C program computes what module.run does, and the runtime part of a library
    (all but kernels and weights) stays under 100 KB."""
    library_bench = load_bench("library")
    records = library_bench.run(["small_cnn"], [1], rounds=1, repeat=2)
    (record,) = records
    assert record["same_output"] and record["threads"] == 1
    assert 0 < record["runtime_bytes"] <= 100 * 1024, record
    assert record["c_ms"] > 0 and record["python_ms"] > 0 and record["open_first_ms"] > 0


def test_riscv64_with_vectors_under_qemu_matches_onnxruntime(tmp_path):
    """The stretch target: RISC-V with the V extension (128-bit vectors)."""
    target = "llvm -mtriple=riscv64-linux-gnu -mattr=+v"
    emu = cross.emulation(target)
    if isinstance(emu, str):
        pytest.skip(f"cannot run riscv64 code here: {emu}")
    record = cross.check_model("two", two_in_two_out(), target, emu,
                               cross.build_runner(emu, tmp_path), tmp_path)
    assert record["ok"], record
