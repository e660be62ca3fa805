"""Profiling builds: every kernel call of @main timed, `module.profile`, `xweave run --profile`."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import xweave
from xweave.errors import XweaveError
from xweave.runtime.profile import ProfileError

BIN = Path(sys.executable).parent


def _conv_model() -> onnx.ModelProto:
    """conv(3->16)+relu, conv(16->16), global average pool: kernels of ~ms, and two
    calls of one kernel (the two 16->16 convs share theirs)."""
    rng = np.random.default_rng(0)
    w1 = numpy_helper.from_array(rng.standard_normal((16, 3, 3, 3)).astype(np.float32), "w1")
    w2 = numpy_helper.from_array(rng.standard_normal((16, 16, 3, 3)).astype(np.float32) * .1, "w2")
    w3 = numpy_helper.from_array(rng.standard_normal((16, 16, 3, 3)).astype(np.float32) * .1, "w3")
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "w2"], ["c2"], pads=[1, 1, 1, 1], name="conv2"),
        helper.make_node("Conv", ["c2", "w3"], ["c3"], pads=[1, 1, 1, 1], name="conv3"),
        helper.make_node("GlobalAveragePool", ["c3"], ["y"], name="gap"),
    ]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 64, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 1, 1])], [w1, w2, w3])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


@pytest.fixture(scope="module")
def model_path(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("profile") / "convs.onnx"
    onnx.save(_conv_model(), path)
    return path


# winograd=False: the flop counts below are the direct convolutions'
@pytest.fixture(scope="module")
def profiled(model_path):
    return xweave.build(model_path, profile=True, threads=1, winograd=False)


@pytest.fixture(scope="module")
def plain(model_path):
    return xweave.build(model_path, threads=1, winograd=False)


def _input():
    return {"x": np.random.default_rng(1).standard_normal((1, 3, 64, 64)).astype(np.float32)}


def _main_kernel_calls(model_path) -> list[str]:
    """The kernels @main calls, in order, in a normal build's planned stage."""
    from xdsl.dialects import func

    from xweave.frontend.onnx import load_onnx
    from xweave.pipeline import CompileOptions, lower

    calls: list[str] = []

    def on_stage(name, module):
        if name != "planned":
            return
        kernels = {f.sym_name.data for f in module.ops
                   if isinstance(f, func.FuncOp) and "xweave.kernel" in f.attributes}
        main = next(f for f in module.ops if isinstance(f, func.FuncOp) and f.sym_name.data == "main")
        calls.extend(c.callee.root_reference.data for c in main.walk()
                     if isinstance(c, func.CallOp) and c.callee.root_reference.data in kernels)

    lower(load_onnx(model_path), CompileOptions(winograd=False), on_stage=on_stage)
    return calls


def test_profiling_build_computes_the_same(profiled, plain):
    inputs = _input()
    expected = plain.run(**inputs)[0]
    np.testing.assert_array_equal(profiled.run(**inputs)[0], expected)
    # and both are right: numpy reference of conv-relu-conv-conv-gap
    import onnx.reference

    (reference,) = onnx.reference.ReferenceEvaluator(_conv_model()).run(None, inputs)
    np.testing.assert_allclose(expected, reference, rtol=1e-3, atol=1e-3)


def test_profile_names_every_kernel_call_in_order(profiled, model_path):
    profile = profiled.profile(repeat=3, **_input())
    expected = _main_kernel_calls(model_path)
    assert [r.kernel for r in profile.calls] == expected
    assert len(expected) >= 4
    # calls of one kernel are summed in the sorted table
    by_kernel = {r.kernel: r for r in profile.by_kernel}
    assert sorted(by_kernel) == sorted(set(expected))
    assert sum(r.calls for r in by_kernel.values()) == len(expected)
    assert [r.median_ms for r in profile.by_kernel] == sorted(
        (r.median_ms for r in profile.by_kernel), reverse=True)
    assert all(r.median_ms > 0 for r in profile.calls if "conv" in r.kernel)


def test_profile_sums_to_the_whole_call(profiled):
    profile = profiled.profile(repeat=5, **_input())
    per_run = profile.samples_ns.sum(axis=1) * 1e-9
    # the kernels run inside the call: never more than the call (1 µs of clock slack)
    assert np.all(per_run <= profile.total_s + 1e-6)
    # and they are nearly all of it (what is left: the call from Python, the clock reads)
    assert profile.kernels_ms > 0.7 * profile.total_ms
    assert sum(r.percent for r in profile.calls) == pytest.approx(
        100 * profile.kernels_ms / profile.total_ms, rel=0.2)


def test_flops_of_conv_kernels(profiled):
    slots = {s.kernel: s.flops for s in profiled.profile_slots}
    conv1 = next(k for k in slots if "relu" in k)
    # 2 flops per multiply-add, plus the fused relu (one max per output)
    assert slots[conv1] == 2 * 16 * 3 * 9 * 64 * 64 + 16 * 64 * 64
    assert any(v == 2 * 16 * 16 * 9 * 64 * 64 for v in slots.values())
    assert not any(slots[k] for k in slots if k.startswith("layout_transform"))
    profile = profiled.profile(repeat=2, **_input())
    row = next(r for r in profile.calls if r.kernel == conv1)
    assert row.gflops == pytest.approx(slots[conv1] / (row.median_ms * 1e-3) / 1e9)
    table = profile.table()
    assert conv1 in table and "GFLOP/s" in table and "whole call" in table


def test_export_keeps_profiling(profiled, tmp_path):
    path = tmp_path / "m.xw"
    profiled.export(path)
    loaded = xweave.load_module(path)
    assert loaded.profile_slots == profiled.profile_slots
    profile = loaded.profile(repeat=2, **_input())
    assert profile.samples_ns.shape == (2, len(profiled.profile_slots))
    assert (profile.samples_ns > 0).any()


def test_concurrent_calls_count_in_their_own_counters(profiled, plain):
    """The counters are call state: each call (`run` or one run of `profile`) has its
    own, so concurrent profiles see only their own kernels. Counters shared between
    the calls would add both calls' kernel times: more than one call's wall time."""
    from concurrent.futures import ThreadPoolExecutor

    x = _input()
    expected = plain.run(**x)[0]
    with ThreadPoolExecutor(4) as pool:
        profiles = [pool.submit(profiled.profile, repeat=8, **x) for _ in range(4)]
        runs = [pool.submit(profiled.run, **x) for _ in range(16)]
        profiles = [f.result() for f in profiles]
        outputs = [f.result()[0] for f in runs]
    for profile in profiles:
        assert (profile.samples_ns > 0).all()
        assert (profile.samples_ns.sum(axis=1) <= profile.total_s * 1e9).all()
    for y in outputs:
        np.testing.assert_array_equal(y, expected)


def test_normal_build_pays_nothing(plain):
    assert plain.profile_slots is None
    assert "clock_gettime" not in plain.llvm_ir
    with pytest.raises(ProfileError, match="built without profiling"):
        plain.profile(**_input())


def test_profile_checks_its_arguments(profiled):
    with pytest.raises(ProfileError, match="repeat"):
        profiled.profile(repeat=0, **_input())
    with pytest.raises(XweaveError, match="missing input"):
        profiled.profile(repeat=1)
    with pytest.raises(XweaveError, match="target 'llvm' only"):
        xweave.build(_conv_model(), target="vta", profile=True)


def _xweave(*args):
    return subprocess.run([str(BIN / "xweave"), *map(str, args)], capture_output=True,
                          text=True, timeout=600)


def test_cli_run_profile(model_path, tmp_path):
    result = _xweave("run", model_path, "--profile", "--repeat", "3", "--no-winograd")
    assert result.returncode == 0, result.stderr
    for kernel in set(_main_kernel_calls(model_path)):
        assert kernel in result.stdout
    assert "whole call" in result.stdout and "GFLOP/s" in result.stdout

    module = tmp_path / "p.xw"
    assert _xweave("compile", model_path, "--profile", "-o", module).returncode == 0
    result = _xweave("run", module, "--profile", "--repeat", "2")
    assert result.returncode == 0, result.stderr
    assert "whole call" in result.stdout


def test_cli_profile_bad_use(plain, tmp_path):
    module = tmp_path / "plain.xw"
    plain.export(module)  # (the module fixture: compiling it again with the CLI adds nothing)
    result = _xweave("run", module, "--profile")
    assert result.returncode != 0
    assert "compiled without profiling" in result.stderr
    assert "xweave compile --profile" in result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""  # refused before running anything

    result = _xweave("run", module, "--profile", "--repeat", "0")
    assert result.returncode != 0 and "--repeat must be at least 1" in result.stderr
    assert "Traceback" not in result.stderr
