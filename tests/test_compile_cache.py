"""The compile cache (`xweave.cache`): a second build is loaded, not compiled; anything
that changes the result misses; damaged entries are recompiled; off means off.

Every test has a cache directory of its own (tests/conftest.py)."""

import os
import subprocess
import sys
import warnings
import zipfile
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import xweave
from xweave import cache
from xweave.pipeline import CompileOptions
from xweave.runtime.hetero import HeteroModule
from xweave.runtime.module import CompiledModule
from xweave.target import as_target

from helpers import run_cli


def tiny_model(seed: int = 0) -> onnx.ModelProto:
    """y = relu(x @ w + b), 4x8 @ 8x16: compiles in a fraction of a second."""
    rng = np.random.default_rng(seed)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["m"]),
         helper.make_node("Add", ["m", "b"], ["a"]),
         helper.make_node("Relu", ["a"], ["y"])],
        "tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 16])],
        initializer=[numpy_helper.from_array(rng.standard_normal((8, 16)).astype(np.float32), "w"),
                     numpy_helper.from_array(rng.standard_normal(16).astype(np.float32), "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


@pytest.fixture
def model_file(tmp_path) -> Path:
    path = tmp_path / "tiny.onnx"
    onnx.save(tiny_model(), path)
    return path


@pytest.fixture(autouse=True)
def fresh_stats(monkeypatch):
    monkeypatch.setattr(cache, "stats", cache.CacheStats())


def entries() -> list[Path]:
    return [path for path, _ in cache.entries()]


def reference(x: np.ndarray, seed: int = 0) -> np.ndarray:
    init = {t.name: numpy_helper.to_array(t) for t in tiny_model(seed).graph.initializer}
    return np.maximum(x @ init["w"] + init["b"], 0)


X = np.random.default_rng(7).standard_normal((4, 8)).astype(np.float32)


def test_second_build_is_loaded_from_the_cache_and_behaves_as_the_first(model_file, tmp_path):
    first = xweave.build(model_file)
    assert (cache.stats.hits, cache.stats.misses, cache.stats.stores) == (0, 1, 1)
    assert len(entries()) == 1
    second = xweave.build(model_file)
    assert (cache.stats.hits, cache.stats.misses, cache.stats.stores) == (1, 1, 1)
    assert type(second) is type(first) is CompiledModule
    assert second.inputs == first.inputs and second.outputs == first.outputs
    assert second.peak_memory_bytes == first.peak_memory_bytes
    assert second.object_bytes == first.object_bytes
    np.testing.assert_array_equal(second.run(x=X)[0], first.run(x=X)[0])
    np.testing.assert_allclose(second.run(x=X)[0], reference(X), rtol=1e-5, atol=1e-5)
    second.export(tmp_path / "again.xwm")  # a cached module exports like a fresh one
    np.testing.assert_array_equal(xweave.load_module(tmp_path / "again.xwm").run(x=X)[0],
                                  first.run(x=X)[0])


def test_in_memory_models_and_ir_modules_are_cached_too(tmp_path):
    xweave.build(tiny_model())
    xweave.build(tiny_model())
    graph = xweave.load_onnx(tiny_model())
    xweave.build(graph)
    xweave.build(graph.clone())
    assert (cache.stats.hits, cache.stats.misses) == (2, 2)


def test_a_profiling_build_is_cached_with_its_profile(model_file):
    xweave.build(model_file, profile=True)
    module = xweave.build(model_file, profile=True)
    assert cache.stats.hits == 1
    assert module.profile_slots is not None
    assert module.profile(repeat=2, x=X).table()
    assert xweave.build(model_file).profile_slots is None  # another entry: a miss
    assert cache.stats.misses == 2


def test_threads_are_applied_to_a_cached_module(model_file):
    xweave.build(model_file)
    module = xweave.build(model_file, threads=1)
    assert cache.stats.hits == 1 and module._engine._num_threads == 1


def key(model=None, input_shapes=None, **changes) -> str:
    options = CompileOptions(as_target("llvm -mcpu=znver3")).replace(**changes)
    return cache.compile_key(model if model is not None else tiny_model(), input_shapes, options)


def test_every_option_that_changes_the_result_changes_the_key(tmp_path):
    base = key()
    assert key() == base  # deterministic
    changed = [
        key(fuse=False), key(layout=False), key(winograd=False), key(profile=True),
        key(any_target_records=True),
        key(target=as_target("llvm -mcpu=znver4")),
        key(target=as_target("llvm -mcpu=znver3 -mattr=-fma")),
        key(target=as_target("llvm -mcpu=znver4 -mprefer-vector-width=256")),
        key(target=as_target("vta")),
        key(input_shapes={"x": (4, 8)}),
    ]
    assert len({base, *changed}) == len(changed) + 1


def test_the_machine_model_override_changes_the_key(monkeypatch):
    base = key()
    monkeypatch.setenv("XWEAVE_VECTOR_REGISTERS", "32")
    assert key() != base


def test_a_changed_model_misses(tmp_path, model_file):
    assert key(tiny_model(1)) != key(tiny_model(0))
    before = key(model_file)
    onnx.save(tiny_model(1), model_file)
    assert key(model_file) != before
    ir = tmp_path / "m.mlir"
    from xweave.context import print_module
    ir.write_text(print_module(xweave.load_onnx(tiny_model())))
    text_key = key(ir)
    ir.write_text(print_module(xweave.load_onnx(tiny_model(1))))
    assert key(ir) != text_key
    xweave.build(model_file)
    onnx.save(tiny_model(2), model_file)
    module = xweave.build(model_file)
    assert cache.stats.hits == 0 and cache.stats.misses == 2
    np.testing.assert_allclose(module.run(x=X)[0], reference(X, seed=2), rtol=1e-5, atol=1e-5)


def test_external_data_is_part_of_the_model(tmp_path):
    model = tiny_model()
    path = tmp_path / "ext.onnx"
    onnx.save(model, path, save_as_external_data=True, all_tensors_to_one_file=True,
              location="ext.data", size_threshold=0)
    before = key(path)
    data = bytearray((tmp_path / "ext.data").read_bytes())
    data[0] ^= 1
    (tmp_path / "ext.data").write_bytes(bytes(data))
    assert key(path) != before


def test_a_changed_records_file_misses(tmp_path):
    records = tmp_path / "records.jsonl"
    records.write_text('{"a": 1}\n')
    first = key(tuning_records=str(records))
    records.write_text('{"a": 2}\n')
    assert key(tuning_records=str(records)) not in (first, key())


def test_a_changed_version_misses(monkeypatch):
    import llvmlite

    base = key()
    monkeypatch.setattr(xweave, "__version__", "99.0")
    assert key() != base
    monkeypatch.undo()
    cache._library_versions.cache_clear()
    monkeypatch.setattr(llvmlite, "__version__", "0.0.1")
    try:
        assert key() != base
    finally:
        monkeypatch.undo()
        cache._library_versions.cache_clear()
    assert key() == base


def test_accelerator_options_are_keyed_by_content(tmp_path):
    calibration = {"x": np.zeros((2, 4, 8), np.float32)}
    vta = as_target("vta")
    a = key(target=vta, accelerator={"calibration": calibration})
    calibration["x"][0, 0, 0] = 1
    assert key(target=vta, accelerator={"calibration": calibration}) != a
    npz = tmp_path / "calib.npz"
    np.savez(npz, x=np.zeros((2, 4, 8), np.float32))
    b = key(target=vta, accelerator={"calibration": str(npz)})
    np.savez(npz, x=np.ones((2, 4, 8), np.float32))
    assert key(target=vta, accelerator={"calibration": str(npz)}) != b


def test_what_cannot_be_keyed_is_not_cached(model_file):
    with pytest.raises(cache.Uncacheable, match="cannot key a object"):
        key(target=as_target("vta"), accelerator={"config": object()})
    options = CompileOptions(as_target("vta"), accelerator={"config": object()})
    assert cache.key_for(tiny_model(), None, options) is None
    assert cache.key_for(object(), None, CompileOptions(as_target("llvm"))) is None


def test_a_damaged_entry_is_discarded_with_a_warning_and_recompiled(model_file):
    xweave.build(model_file)
    (entry,) = entries()
    data = bytearray(entry.read_bytes())
    with zipfile.ZipFile(entry) as zf:
        info = zf.getinfo("module.o")
    middle = info.header_offset + 30 + len(info.filename) + info.compress_size // 2
    data[middle] ^= 0xFF
    entry.write_bytes(bytes(data))
    with pytest.warns(cache.CacheWarning, match="discarding damaged entry"):
        module = xweave.build(model_file)
    assert (cache.stats.discarded, cache.stats.hits, cache.stats.stores) == (1, 0, 2)
    np.testing.assert_allclose(module.run(x=X)[0], reference(X), rtol=1e-5, atol=1e-5)
    entry.write_bytes(b"not a zip file")  # a truncated or foreign file: the same
    with pytest.warns(cache.CacheWarning):
        xweave.build(model_file)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        xweave.build(model_file)  # rewritten: a clean hit
    assert cache.stats.hits == 1


def test_code_this_cpu_cannot_run_is_not_stored_nor_taken_for_a_damaged_entry(model_file):
    target = "llvm -mcpu=sapphirerapids"  # AVX-512 FP16
    module = xweave.build(model_file, target=target)
    if module.runnable:
        pytest.skip("this CPU runs Sapphire Rapids code")
    assert entries() == []
    # As a host with those features would leave it in a cache shared with this one.
    key = cache.compile_key(model_file, None, CompileOptions(as_target(target)))
    cache.cache_dir().mkdir(parents=True, exist_ok=True)
    module.export(cache.cache_dir() / f"{key}.xwm")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = xweave.build(model_file, target=target)
    assert not again.runnable and len(entries()) == 1
    assert (cache.stats.discarded, cache.stats.hits) == (0, 0)


def test_a_disabled_cache_never_writes(model_file, monkeypatch, tmp_path):
    xweave.build(model_file, cache=False)
    xweave.build(model_file, dump_ir=tmp_path / "dump")
    monkeypatch.setenv("XWEAVE_CACHE", "0")
    xweave.build(model_file)
    xweave.build(model_file)
    assert entries() == []
    assert cache.stats == cache.CacheStats()
    monkeypatch.delenv("XWEAVE_CACHE")
    xweave.build(model_file)
    assert xweave.build(model_file, cache=False) is not None
    assert (cache.stats.hits, cache.stats.stores) == (0, 1)


def test_a_build_that_warned_is_not_cached_and_warns_again(model_file):
    module = xweave.build(tiny_model())

    def compile_with_a_warning():
        warnings.warn("something to know", RuntimeWarning)
        return module

    for _ in range(2):
        with pytest.warns(RuntimeWarning, match="something to know"):
            assert cache.cached_build("0" * 64, compile_with_a_warning) is module
    assert cache.stats.stores == 1  # only the tiny model's own build


def test_the_least_recently_used_entries_are_evicted(monkeypatch):
    xweave.build(tiny_model(0))
    (first,) = entries()
    os.utime(first, (1, 1))  # long unused
    monkeypatch.setenv("XWEAVE_CACHE_SIZE", str(first.stat().st_size + 10))
    xweave.build(tiny_model(1))
    (kept,) = entries()
    assert kept != first
    monkeypatch.setenv("XWEAVE_CACHE_SIZE", "1K")
    assert cache.size_limit() == 1024
    monkeypatch.setenv("XWEAVE_CACHE_SIZE", "lots")
    with pytest.warns(cache.CacheWarning, match="XWEAVE_CACHE_SIZE"):
        assert cache.size_limit() == cache.DEFAULT_SIZE


def test_the_cache_lives_in_the_user_cache_dir_unless_overridden(monkeypatch, tmp_path):
    import platformdirs

    assert cache.cache_dir() == Path(os.environ["XWEAVE_CACHE_DIR"])
    monkeypatch.delenv("XWEAVE_CACHE_DIR")
    assert cache.cache_dir() == Path(platformdirs.user_cache_dir("xweave"))


def test_concurrent_builds_of_one_model_share_one_entry(model_file, tmp_path):
    script = ("import sys, numpy as np, xweave; m = xweave.build(sys.argv[1]); "
              "print(m.run(x=np.ones((4, 8), np.float32))[0].sum())")
    # Different hash seeds: the key must not depend on a process's set ordering.
    procs = [subprocess.Popen([sys.executable, "-c", script, str(model_file)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONHASHSEED": str(seed)})
             for seed in (1, 2)]
    results = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), results
    assert results[0][0] == results[1][0] and not results[0][1] and not results[1][1]
    (entry,) = entries()
    np.testing.assert_allclose(xweave.load_module(entry).run(x=X)[0], reference(X),
                               rtol=1e-5, atol=1e-5)


def test_an_accelerator_build_is_cached_as_a_hetero_module():
    rng = np.random.default_rng(3)
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["c"], ["y"])],
        "m", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 8, 8])],
        initializer=[numpy_helper.from_array(
            (rng.standard_normal((16, 16, 3, 3)) * 0.1).astype(np.float32), "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    calibration = {"x": rng.standard_normal((4, 1, 16, 8, 8)).astype(np.float32)}
    first = xweave.build(model, target="vta", calibration=calibration)
    second = xweave.build(model, target="vta", calibration=calibration)
    assert cache.stats.hits == 1 and type(second) is type(first) is HeteroModule
    x = calibration["x"][0]
    np.testing.assert_array_equal(second.run(x=x)[0], first.run(x=x)[0])


def test_cli_no_cache_info_and_clear(model_file, tmp_path):
    assert run_cli("compile", model_file, "--no-cache", "-o", tmp_path / "a.xwm")[0] == 0
    assert run_cli("run", model_file, "--no-cache")[0] == 0
    assert entries() == []
    assert run_cli("compile", model_file, "-o", tmp_path / "b.xwm")[0] == 0
    assert run_cli("run", model_file)[0] == 0
    assert (cache.stats.hits, cache.stats.stores) == (1, 1)
    code, out, _ = run_cli("cache", "info")
    assert code == 0
    assert f"path: {os.environ['XWEAVE_CACHE_DIR']}" in out and "entries: 1" in out
    assert "size: " in out and "limit: 2.0 GiB" in out
    code, out, _ = run_cli("cache", "clear")
    assert code == 0 and "removed 1 entry" in out
    assert entries() == [] and "entries: 0" in run_cli("cache", "info")[1]
    assert run_cli("cache", "bogus")[0] == 2
