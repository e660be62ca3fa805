"""The timing report (`--timing`, `xweave.build(..., timing=True)`) and `--verify-each`."""

import re
from pathlib import Path

import numpy as np
from helpers import onnx_model, run_cli, small_conv_model
from onnx import helper

import xweave
from xweave import timing
from xweave.cli import opt_main
from xweave.pipeline import CompileOptions, stages
from xweave.target import as_target

SMALL_CNN = Path(__file__).parent.parent / "examples" / "small_cnn.onnx"
TARGET = "llvm -mcpu=znver3"


def _names(report: str) -> list[str]:
    """The step names of a report, in order (indentation dropped)."""
    rows = re.findall(r"^\s+\d+\.\d+ \(\s*[\d.]+%\)\s+(?:\d+\s+)?(.+)$", report, re.M)
    return [r.strip() for r in rows]


def test_compile_timing_lists_every_stage_and_pass(tmp_path):
    code, out, err = run_cli("compile", SMALL_CNN, "--target", TARGET, "--no-cache",
                             "--timing", "-o", tmp_path / "m.xwm")
    assert code == 0, err
    names = _names(err)
    options = CompileOptions(target=as_target(TARGET))
    for stage in stages(options):
        assert stage.name in names, (stage.name, err)
        for pass_ in stage.passes:
            assert pass_.name in names, (pass_.name, err)
    for step in ("import", "codegen", "LLVM O3", "LLVM code generation", "export", "total"):
        assert step in names, (step, err)
    # the stages in pipeline order
    order = [names.index(s.name) for s in stages(options)]
    assert order == sorted(order)
    assert "wrote" in out


def test_build_returns_the_report_and_verify_each_verifies_after_every_pass():
    module = xweave.build(small_conv_model(), target=TARGET, cache=False, timing=True,
                          verify_each=False)
    per_stage = module.compile_timing.root
    verified = sum(c.children["verify"].count for c in per_stage.children.values()
                   if "verify" in c.children)
    # Once per stage by default, except the llvm stage (LLVM verifies what it reads).
    assert verified == len(stages(CompileOptions(target=as_target(TARGET)))) - 1

    with timing.collect() as timer:
        xweave.build(small_conv_model(), target=TARGET, cache=False, verify_each=True)
    passes = sum(len(s.passes) for s in stages(CompileOptions(target=as_target(TARGET))))
    verified = sum(c.children["verify"].count for c in timer.root.children.values()
                   if "verify" in c.children)
    # (convert-loop-to-llvm lowers each unit where it is compiled: each is verified)
    units = timer.root.children["llvm"].children["convert-loop-to-llvm"].count
    assert timer.root.children["llvm"].children["verify"].count == units
    assert verified == passes - 1 + units


def test_opt_timing_and_verify_each(tmp_path):
    source = tmp_path / "in.mlir"
    code, _, err = run_cli("compile", SMALL_CNN, "--target", TARGET, "--compile-to", "fused",
                           "-o", source)
    assert code == 0, err
    code, _, err = run_cli(source, "-p", "convert-graph-to-te,convert-te-to-loop", "--timing",
                           "-o", tmp_path / "out.mlir", entry=opt_main)
    assert code == 0, err
    names = _names(err)
    assert names[:1] == ["parse"] and "print" in names
    assert names.count("verify") == 1 and "convert-te-to-loop" in names
    assert re.search(r"^\s+\d+\.\d+ \(\s*[\d.]+%\)\s+2\s+verify$", err, re.M), err

    code, _, err = run_cli(source, "-p", "convert-graph-to-te,convert-te-to-loop", "--timing",
                           "--verify-each=false", "-o", tmp_path / "out.mlir", entry=opt_main)
    assert code == 0, err
    assert not re.search(r"\s+2\s+verify$", err, re.M)
    code, _, err = run_cli(source, "--verify-each=maybe", entry=opt_main)
    assert code != 0 and "expected true or false" in err


def test_repeated_blocks_compile_each_distinct_kernel_once():
    """Three equal conv+relu blocks (different weights) and a different last conv: two
    conv kernels are scheduled and code-generated, once each (the timing report counts
    the code generations: one unit per kernel, one for @main)."""
    rng = np.random.default_rng(0)
    nodes, inits, x = [], {}, "x"
    for i in range(3):
        inits[f"w{i}"] = rng.standard_normal((16, 16, 3, 3)).astype(np.float32)
        nodes += [helper.make_node("Conv", [x, f"w{i}"], [f"c{i}"], pads=[1, 1, 1, 1]),
                  helper.make_node("Relu", [f"c{i}"], [f"r{i}"])]
        x = f"r{i}"
    inits["wl"] = rng.standard_normal((8, 16, 1, 1)).astype(np.float32)
    nodes.append(helper.make_node("Conv", [x, "wl"], ["y"]))
    model = onnx_model(nodes, [("x", [1, 16, 8, 8])], ["y"], inits)
    with timing.collect() as timer:
        module = xweave.build(model, target=TARGET, cache=False, layout=False, winograd=False)
    kernels = timer.root.children["scheduled"].children["schedule-kernels"].children["kernels"]
    units = timer.root.children["codegen"].children["translate to LLVM IR"]
    assert kernels.count == 2 and units.count == kernels.count + 1
    assert sum(line.startswith("define void @fused_conv2d_relu") for line in
               module.llvm_ir.splitlines()) == 1
