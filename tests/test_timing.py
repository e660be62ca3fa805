"""The timing report (`--timing`, `xweave.build(..., timing=True)`) and `--verify-each`."""

import re
from pathlib import Path

from helpers import run_cli, small_conv_model

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
    assert verified == passes


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
