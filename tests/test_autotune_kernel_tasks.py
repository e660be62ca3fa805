"""Template-driven tuning tasks: extraction from a model, workload keys, building and
checking a point, and applying the best records when compiling."""

import itertools
import json
import logging
import pickle
import random
import warnings

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import xweave
from xweave.autotune import InlineRunner, LocalBuilder, load_records, tune
from xweave.schedules.tuned import TunedSchedules, TuningRecordsError
from xweave.autotune.kernel_tasks import extract_tasks, loop_stage, model_kernels
from xweave.records import RecordWarning
from xweave.autotune.task import WrongAnswerError
from xweave.compiling import load_model
from xweave.dialects.interpreters.graph import conv2d as conv2d_reference
from xweave.layout import transform_array
from xweave.schedules import apply_steps
from xweave.schedules.workload import kernel_key, retarget, split_pipeline

CONV = "conv2d_nchwc"
"""The model's convs feed each other, so they run on channel-blocked data."""


def conv_model(path, channels=8, size=8, convs=2, dense=False):
    """`convs` equal 3x3 convolutions in a chain (different weights), then optionally
    a dense layer on the flattened result."""
    rng = np.random.default_rng(0)
    nodes, inits, x = [], [], "x"
    for i in range(convs):
        w = f"w{i}"
        inits.append(numpy_helper.from_array(
            rng.standard_normal((channels, channels, 3, 3)).astype(np.float32), w))
        nodes.append(helper.make_node("Conv", [x, w], [f"c{i}"], name=f"conv{i}",
                                      kernel_shape=[3, 3], pads=[1, 1, 1, 1]))
        x = f"c{i}"
    out_shape = [1, channels, size, size]
    if dense:
        nodes.append(helper.make_node("Flatten", [x], ["f"], name="flatten"))
        inits.append(numpy_helper.from_array(
            rng.standard_normal((channels * size * size, 16)).astype(np.float32), "wd"))
        nodes.append(helper.make_node("MatMul", ["f", "wd"], ["d"], name="dense"))
        x, out_shape = "d", [1, 16]
    graph = helper.make_graph(
        nodes, "m", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, channels, size, size])],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, out_shape)], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return conv_model(tmp_path_factory.mktemp("m") / "convs.onnx", dense=True)


def test_extract_tasks_dedupes_equal_kernels_and_orders_by_cost(model):
    tasks = extract_tasks(model)
    assert len(tasks) >= 2
    conv = next(t for t in tasks if t.workload_key.startswith(CONV + "("))
    # Two equal convolutions are one kernel, called twice: one task of weight 2.
    assert conv.weight == 2
    # (The layout stage runs them on NCHW8c data, weights OIHW8i8o.)
    assert conv.workload_key.startswith(f"{CONV}(1x1x8x8x8xf32, 1x1x3x3x8x8xf32 -> 1x1x8x8x8xf32)#")
    assert len({t.workload_key for t in tasks}) == len(tasks)
    reductions = [t.is_reduction for t in tasks]
    assert reductions == sorted(reductions, reverse=True)  # reductions first
    costs = [t.weight * t.flops for t in tasks if t.is_reduction]
    assert costs == sorted(costs, reverse=True)
    # flops: 2 per multiply-add of the reduction.
    assert conv.flops == 2.0 * 8 * 8 * 8 * 8 * 3 * 3
    # The space is the template's knobs, generically.
    assert conv.space.names == list(conv.knobs)
    assert conv.space.size == np.prod([len(v) for v in conv.knobs.values()])
    assert conv.default_point() is not None
    assert conv.config(conv.default_point()) == conv.schedule_template.default_config(conv.info)


def test_tasks_of_a_module_take_its_kernels_without_reparsing_them(model, monkeypatch):
    """A model's tasks (for measure mode and the tuner) hold copies of its kernels: the
    kernel text kept for pickling is not parsed back (the parsing took 3/4 of finding
    ResNet-18's tasks); a pickled task parses it, to the same schedules."""
    import xweave.context

    module = loop_stage(model)
    expected = {t.workload_key: t.schedule(t.default_point()) for t in extract_tasks(model)}

    def refuse(*args, **kwargs):
        raise AssertionError("parsed a kernel's text")

    monkeypatch.setattr(xweave.context, "parse_module", refuse)
    tasks = extract_tasks(None, module=module)
    assert {t.workload_key: t.schedule(t.default_point()) for t in tasks} == expected
    monkeypatch.undo()
    clone = pickle.loads(pickle.dumps(tasks[0]))
    assert clone.schedule(clone.default_point()) == expected[clone.workload_key]


def test_the_space_excludes_register_blocks_that_cannot_fit_the_registers(tmp_path):
    from xweave.schedules.templates import lanes_of, vectors_in
    from xweave.target import machine_model

    path = conv_model(tmp_path / "wide.onnx", channels=16, size=14, convs=1)
    conv = next(t for t in extract_tasks(path) if t.is_reduction)
    space = conv.space
    assert space.constraints and space.is_valid(conv.default_point())
    valid = invalid = 0
    for point in itertools.islice(itertools.product(*(range(d) for d in space.dims)), 0, None, 7):
        c = conv.config(point)
        vectors = vectors_in(c["tile_cols"], lanes_of(conv.info, c))
        block = c["tile_rows_outer"] * c["tile_rows"] * vectors
        fits = block + vectors + 1 <= machine_model().vector_registers
        if not fits:
            assert not space.is_valid(point)
            invalid += 1
        elif not c["unroll_reduce"] and (14 % c["tile_rows"] == 0 or c["tile_rows_outer"] == 1):
            # (no epilogue: a ragged row tile is fine unless inside a block of outer rows)
            assert space.is_valid(point)
            valid += 1
    assert valid and invalid
    # Samplers only hand out valid points.
    assert all(space.is_valid(p) for p in space.sample(50, random.Random(0)))


def test_workload_key_ignores_the_kernel_name_but_not_the_computation(model, tmp_path):
    module = loop_stage(model)
    (kernel, calls), *_ = [(k, c) for k, c in model_kernels(module)
                           if k.sym_name.data.startswith("conv2d")]
    assert calls == 2
    renamed = kernel.clone()
    renamed.sym_name = type(renamed.sym_name)(f"{CONV}_7")
    assert kernel_key(renamed) == kernel_key(kernel)
    other = conv_model(tmp_path / "wide.onnx", channels=16, convs=1)
    keys = {kernel_key(k) for k, _ in model_kernels(loop_stage(other))}
    assert kernel_key(kernel) not in keys


def test_task_pickles_builds_checks_and_records_the_applied_schedule(model, tmp_path):
    task = next(t for t in extract_tasks(model) if t.workload_key.startswith(CONV + "("))
    clone = pickle.loads(pickle.dumps(task))
    assert clone.workload_key == task.workload_key and clone.space.dims == task.space.dims
    point = task.default_point()
    steps = task.schedule(point).split("},")
    assert len(steps) >= 2 and f'kernel="{CONV}_0"' in steps[0]
    # The reference (the unscheduled kernel, compiled as is) is a true convolution.
    x, w = task.make_inputs(0)
    (ref,) = task.reference([x, w])
    expected = conv2d_reference(transform_array(x, "NCHW8c", "NCHW"),
                                transform_array(w, "OIHW8i8o", "OIHW"),
                                None, (1, 1), (1, 1, 1, 1), (1, 1), 1)
    np.testing.assert_allclose(transform_array(ref, "NCHW8c", "NCHW"), expected, rtol=1e-4, atol=1e-4)
    # Points build and compute the reference (checked on the first run).
    trials = min(task.space.size, 4)
    result = tune(task, tuner="grid", trials=trials, records_path=tmp_path / "r.jsonl",
                  builder=LocalBuilder(n_parallel=0), runner=InlineRunner(min_repeat_ms=1,
                                                                         repeat=1),
                  progress=False, initial_points=[point])
    assert result.trials == trials
    assert not any(k for k in result.errors if k), result.results
    records = load_records(tmp_path / "r.jsonl")
    assert tuple(records[0]["point"]) == point  # the default schedule is measured first
    assert records[0]["schedule"] == task.schedule(point)
    assert records[0]["task"]["template"] == "schedule"


def test_candidates_keep_their_temporaries_in_an_arena_as_built_models_do(model):
    from xweave.runtime.jit import _undefined_symbols

    task = next(t for t in extract_tasks(model) if t.workload_key.startswith(CONV + "("))
    candidate = task.build(task.default_point())
    # the padded input and packed operands: planned, bound at setup, never malloc'd
    assert candidate.arena_bytes > 0 and "xweave_arena" not in candidate.params
    assert "malloc" not in _undefined_symbols(candidate.object_bytes)
    candidate.setup()
    candidate.run()
    candidate.check()


def test_candidates_take_constant_weights_packed_as_the_model_does(model):
    from xweave.passes.loop_pack import pack_array

    task = next(t for t in extract_tasks(model) if t.workload_key.startswith(CONV + "("))
    assert task.args["constants"] == [1]  # the weights; x varies
    candidate = pickle.loads(pickle.dumps(task.build(task.default_point())))
    # The model packs the weights at compile time: the candidate gets them packed.
    ((index, splits, order),) = candidate.prepacked
    x, w = task.make_inputs(candidate.seed)
    assert index == 1 and candidate.arg_specs[1][0] == pack_array(w, splits, order).shape
    assert candidate.arg_specs[0][0] == x.shape
    assert '"arg1_pack.' not in str(task.loop_ir(task.default_point()))  # no packing stage
    candidate.setup()
    candidate.run()
    candidate.check()  # against the reference on the unpacked inputs
    # A wrong packing would be caught.
    candidate._arrays[1][...] = pack_array(w[..., ::-1].copy(), splits, order)
    candidate.run()
    with pytest.raises(WrongAnswerError):
        candidate.check()


def test_tiny_kernels_are_checked_with_the_loop_interpreter(tmp_path):
    path = conv_model(tmp_path / "tiny.onnx", channels=2, size=4, convs=1)
    (task,) = extract_tasks(path)
    assert sum(s.work for s in task.info.stages) <= 2048  # the interpreter path
    x, w = task.make_inputs(1)
    (ref,) = task.reference([x, w])
    np.testing.assert_allclose(ref, conv2d_reference(x, w, None, (1, 1), (1, 1, 1, 1), (1, 1), 1),
                               rtol=1e-5, atol=1e-5)


def _record(task, point, gflops, error_no=0):
    from xweave.records import target_info

    return {"workload": task.workload_key, "task": task.spec(), "target": target_info(),
            "schedule": task.schedule(point), "point": list(point), "config": {},
            "result": {"costs": [1e-3], "gflops": gflops, "error_no": error_no,
                       "error_msg": "", "build_s": 0.1, "run_s": 0.1, "number": 1},
            "tuner": "test", "trial": 1, "timestamp": 0.0, "version": "test"}


def _other_point(task):
    default = task.default_point()
    return next(p for p in task.space if p != default
                and task.schedule(p) != task.schedule(default))


def test_build_with_records_applies_the_best_schedule_and_computes_the_same(model, tmp_path):
    task = next(t for t in extract_tasks(model) if t.workload_key.startswith(CONV + "("))
    fast = _other_point(task)
    path = tmp_path / "records.jsonl"
    lines = [json.dumps(_record(task, task.default_point(), 5.0)),
             json.dumps(_record(task, fast, 9.0)),
             json.dumps(_record(task, task.default_point(), 50.0, error_no=5)),  # failed
             '{"workload": "conv2d(...)#trunc']  # a line cut short: skipped with a warning
    path.write_text("\n".join(lines) + "\n")
    with pytest.warns(RecordWarning, match=r"records.jsonl:4"):
        tuned = xweave.build(model, tuning_records=path, dump_ir=tmp_path / "tuned",
                             elide_resources_larger_than=0)
    untuned = xweave.build(model, dump_ir=tmp_path / "untuned")
    x = np.random.default_rng(3).standard_normal((1, 8, 8, 8)).astype(np.float32)
    np.testing.assert_allclose(tuned.run(x=x)[0], untuned.run(x=x)[0], rtol=1e-4, atol=1e-3)

    # The scheduled stage is the loop stage with the best record's pipeline applied.
    (loop_file,) = (tmp_path / "tuned").glob("*-loop.mlir")
    (scheduled_file,) = (tmp_path / "tuned").glob("*-scheduled.mlir")
    (default_file,) = (tmp_path / "untuned").glob("*-scheduled.mlir")
    assert scheduled_file.read_text() != default_file.read_text()
    module = load_model(loop_file)
    apply_steps(module, split_pipeline(task.schedule(fast)), skip_illegal=False)
    for other in [k for k, _ in model_kernels(module) if not k.sym_name.data.startswith("conv2d_")]:
        from xweave.schedules import default_schedule

        apply_steps(module, default_schedule(other), skip_illegal=True)
    from xweave.context import make_context
    from xweave.passes.loop_fold_packs import LoopFoldConstantPacksPass

    LoopFoldConstantPacksPass().apply(make_context(), module)  # the stage's last pass
    lines = scheduled_file.read_text().splitlines(keepends=True)
    body = "".join(line for line in lines if not line.startswith("// "))  # no header comment
    assert xweave.context.print_module(module) == body


def test_recorded_schedules_are_retargeted_to_the_kernel_name(model, tmp_path):
    task = next(t for t in extract_tasks(model) if t.workload_key.startswith(CONV + "("))
    point = _other_point(task)
    path = tmp_path / "records.jsonl"
    path.write_text(json.dumps(_record(task, point, 3.0)) + "\n")
    tuned = TunedSchedules.load(path)
    module = loop_stage(model)
    kernel = next(k for k, _ in model_kernels(module) if k.sym_name.data == f"{CONV}_0")
    kernel.sym_name = type(kernel.sym_name)(f"{CONV}_9")
    steps = tuned.steps_for(kernel)
    assert steps and all(f'kernel="{CONV}_9"' in s for s in steps)
    assert steps == retarget(split_pipeline(task.schedule(point)), f"{CONV}_9")
    assert tuned.steps_for(next(k for k, _ in model_kernels(module)
                                if not k.sym_name.data.startswith("conv2d"))) is None


@pytest.mark.parametrize("tuned_gflops, applied", [(10.1, False), (10.5, True)])
def test_a_tuned_schedule_must_beat_the_measured_default_by_min_gain(model, tmp_path,
                                                                     tuned_gflops, applied):
    from xweave.schedules.tuned import MIN_GAIN

    task = next(t for t in extract_tasks(model) if t.workload_key.startswith(CONV + "("))
    default = {**_record(task, task.default_point(), 10.0), "baseline": True}
    tuned = _record(task, _other_point(task), tuned_gflops)
    path = tmp_path / "records.jsonl"
    path.write_text(json.dumps(default) + "\n" + json.dumps(tuned) + "\n")
    schedules = TunedSchedules.load(path)
    assert (task.workload_key in schedules.best) == applied
    assert (tuned_gflops >= 10.0 * (1 + MIN_GAIN)) == applied
    if not applied:
        assert schedules.kept_default[task.workload_key] == (tuned_gflops, 10.0)
    kernel = next(k for k, _ in model_kernels(loop_stage(model))
                  if k.sym_name.data == f"{CONV}_0")
    assert (schedules.steps_for(kernel) is not None) == applied


@pytest.mark.parametrize("tuned_ms, applied", [(0.99, False), (0.95, True)])
def test_the_model_check_has_the_last_word(model, tmp_path, tuned_ms, applied):
    from xweave.records import MODEL_CHECK, load_model_checks

    task = next(t for t in extract_tasks(model) if t.workload_key.startswith(CONV + "("))
    default = {**_record(task, task.default_point(), 10.0), "baseline": True}
    tuned = _record(task, _other_point(task), 20.0)  # twice as fast alone
    check = {"kind": MODEL_CHECK, "workload": task.workload_key, "schedule": tuned["schedule"],
             "tuned_ms": tuned_ms, "default_ms": 1.0}
    path = tmp_path / "records.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in (default, tuned, check)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a check line is not a corrupt record
        assert len(load_records(path)) == 2
    assert load_model_checks(path)[task.workload_key]["tuned_ms"] == tuned_ms
    schedules = TunedSchedules.load(path)
    assert (task.workload_key in schedules.best) == applied
    assert (task.workload_key in schedules.slower_in_model) != applied
    # A check of another schedule (the tuner found a better one since) does not count.
    path.write_text(path.read_text() + json.dumps(_record(task, task.default_point(), 30.0)) + "\n")
    assert task.workload_key in TunedSchedules.load(path).best


def test_check_in_model_times_the_tuned_kernels_inside_the_model(model, tmp_path, caplog):
    from xweave.records import load_model_checks
    from xweave.autotune.tune_model import check_in_model

    task = next(t for t in extract_tasks(model) if t.workload_key.startswith(CONV + "("))
    default = {**_record(task, task.default_point(), 10.0), "baseline": True}
    tuned = _record(task, _other_point(task), 20.0)
    path = tmp_path / "records.jsonl"
    path.write_text(json.dumps(default) + "\n" + json.dumps(tuned) + "\n")
    caplog.set_level(logging.INFO, logger="xweave")
    times = check_in_model(model, path, threads=1, rounds=2, repeat=3)
    tuned_ms, default_ms = times[task.workload_key]
    assert tuned_ms > 0 and default_ms > 0
    check = load_model_checks(path)[task.workload_key]
    assert (check["tuned_ms"], check["default_ms"]) == (round(tuned_ms, 6), round(default_ms, 6))
    assert check["schedule"] == tuned["schedule"]
    faster = tuned_ms * 1.03 <= default_ms
    assert (task.workload_key in TunedSchedules.load(path).best) == faster
    assert "inside the model" in caplog.messages[-1]
    # Its build with the temporary records file reports nothing about that file.
    assert not any("kernels tuned" in m for m in caplog.messages)
    # The measurements are untouched. Checking again with nothing new appends nothing
    # (a resumed run); with another thread count the same candidates are timed again.
    assert len(load_records(path)) == 2
    before = path.read_text()
    assert check_in_model(model, path, threads=1, rounds=1, repeat=1) == {}
    assert path.read_text() == before and "already timed inside the model" in caplog.messages[-1]
    assert task.workload_key in check_in_model(model, path, threads=2, rounds=1, repeat=1)


def test_unusable_records_files_are_clear_errors(model, tmp_path):
    with pytest.raises(TuningRecordsError, match="no such file"):
        xweave.build(model, tuning_records=tmp_path / "missing.jsonl")
    with pytest.raises(TuningRecordsError, match="not a file"):
        xweave.build(model, tuning_records=tmp_path)
    (tmp_path / "empty.jsonl").write_text("")
    with pytest.raises(TuningRecordsError, match="empty"):
        xweave.build(model, tuning_records=tmp_path / "empty.jsonl")
    (tmp_path / "junk.jsonl").write_text("hello\n[1, 2]\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(TuningRecordsError, match=r"2 line\(s\) skipped"):
            xweave.build(model, tuning_records=tmp_path / "junk.jsonl")



def test_records_of_a_changed_space_are_not_resumed(tmp_path):
    from xweave.autotune import make_task

    task = make_task("synthetic_smooth", seed=2)
    path = tmp_path / "r.jsonl"
    tune(task, tuner="random", trials=4, seed=0, records_path=path, progress=False)
    records = load_records(path)
    # The template's candidates changed under the same indices: the record's config
    # no longer matches its point.
    stale = dict(records[0])
    stale["config"] = {k: "old" for k in stale["config"]}
    path.write_text("\n".join(json.dumps({k: v for k, v in r.items() if k != "_line"})
                              for r in [stale, *records[1:]]) + "\n")
    with pytest.warns(RuntimeWarning, match="1 record"):
        result = tune(task, tuner="random", trials=4, seed=0, records_path=path,
                      progress=False)
    assert result.resumed == 3 and result.trials == 1
