"""pipeline.py is the single source of the lowering order: the stages of a build, ranges
of them, their pass specs, lowering in parts, and the options that travel to the tuner."""

from pathlib import Path

import numpy as np
import pytest

import xweave
from xweave.autotune.kernel_tasks import extract_tasks, loop_stage, model_kernels
from xweave.context import print_module
from xweave.errors import XweaveError
from xweave.frontend.onnx import load_onnx
from xweave.pipeline import (
    CompileOptions,
    lower,
    pass_spec,
    stage_names,
    stages,
    stages_between,
    stages_until,
)
from xweave.target import as_target

MODEL = Path(__file__).resolve().parents[1] / "examples" / "small_cnn.onnx"


def test_the_stages_of_a_cpu_build():
    assert stage_names() == ["graph", "graph-opt", "layout", "winograd", "fused", "te",
                             "loop", "scheduled", "planned", "llvm"]
    assert stage_names(CompileOptions(fuse=False, layout=False, winograd=False)) == [
        "graph", "graph-opt", "te", "loop", "scheduled", "planned", "llvm"]
    assert [s.name for s in stages_between(CompileOptions(), "loop", "planned")] == [
        "scheduled", "planned"]
    assert [s.name for s in stages_until(CompileOptions(), "te")] == [
        "graph-opt", "layout", "winograd", "fused", "te"]
    assert stages_between(CompileOptions(), "graph", None) == stages(CompileOptions())


def test_stage_ranges_name_what_is_wrong():
    with pytest.raises(XweaveError, match="no stage 'fused' .stop.*graph, graph-opt, te"):
        stages_until(CompileOptions(fuse=False, layout=False, winograd=False), "fused")
    with pytest.raises(XweaveError, match="'te' comes before stage 'loop'"):
        stages_between(CompileOptions(), "loop", "te")


def test_profiling_passes_are_stages_of_a_profiling_build():
    plain, profiled = CompileOptions(), CompileOptions(profile=True)
    assert stage_names(plain) == stage_names(profiled)
    assert pass_spec(stages_between(plain, "te", "loop")) == "convert-te-to-loop"
    assert pass_spec(stages_between(profiled, "te", "loop")) == \
        "convert-te-to-loop,count-kernel-flops"
    assert pass_spec(stages_between(profiled, "scheduled", "planned")).endswith(
        "plan-memory,profile-kernels")
    spec = pass_spec(stages_between(CompileOptions(tuning_records="r.jsonl"), "loop",
                                    "scheduled"))
    assert spec.startswith('schedule-kernels{tuning_records="r.jsonl"')


def test_lowering_in_two_parts_is_lowering_at_once():
    options = CompileOptions(as_target("llvm -mcpu=znver3"))
    whole, parts = load_onnx(MODEL), load_onnx(MODEL)
    lower(whole, options, until="planned")
    seen = []
    lower(parts, options, until="loop", on_stage=lambda name, _: seen.append(name))
    lower(parts, options, start="loop", until="planned",
          on_stage=lambda name, _: seen.append(name))
    assert seen == stage_names(options)[:-1]  # "graph" once, no stage twice
    assert print_module(parts) == print_module(whole)


def test_the_tuner_tunes_the_kernels_the_build_compiles():
    """Options travel: tasks extracted with fuse=False are the unfused build's kernels."""
    fused = {f.sym_name.data for f, _ in model_kernels(loop_stage(MODEL))}
    options = CompileOptions(fuse=False, layout=False)
    unfused = {f.sym_name.data for f, _ in model_kernels(loop_stage(MODEL, options=options))}
    assert any(name.startswith("fused") for name in fused)
    assert not any(name.startswith("fused") for name in unfused)
    tasks = extract_tasks(MODEL, options=options)
    assert tasks and all(t.kernel_name in unfused for t in tasks)
    module = xweave.build(MODEL, fuse=False, layout=False)
    x = np.random.default_rng(0).standard_normal(module.inputs[0].shape).astype(np.float32)
    reference = xweave.build(MODEL).run(**{module.inputs[0].name: x})[0]
    np.testing.assert_allclose(module.run(**{module.inputs[0].name: x})[0], reference,
                               rtol=1e-4, atol=1e-4)
