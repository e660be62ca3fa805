"""xweave.target: target descriptions, their resolution, the machine model, and the
target a module carries from the driver to the code generator and into exported files.
Every expectation names its CPU; the host only matters where a test says so."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import xweave
from xweave import target as tgt
from xweave.target import (
    MachineModel,
    Target,
    TargetError,
    machine_model,
    set_target,
    target_of,
)

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "small_cnn.onnx"


# --- reading and writing targets -----------------------------------------------------


@pytest.mark.parametrize("text", [
    "llvm", "llvm -mcpu=znver3", "llvm -mcpu=znver4 -mattr=-avx512f",
    "llvm -mcpu=x86-64-v3 -mattr=+avx512f,+avx512vl", "llvm -mcpu=znver4 -mprefer-vector-width=256",
    "llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72", "llvm -mtriple=riscv64-linux-gnu -mattr=+v",
    "vta",
])
def test_targets_print_as_they_were_written(text):
    assert str(Target.parse(text)) == text
    assert Target.parse(str(Target.parse(text))) == Target.parse(text)


@pytest.mark.parametrize("text, message", [
    ("", "empty target"),
    ("llvm -mcpu=pentium9", "unknown CPU 'pentium9'"),
    ("llvm -mattr=avx2", "must be \\+FEATURE or -FEATURE"),
    ("llvm -mcpu", "cannot read option '-mcpu'"),
    ("llvm -O3=1", "unknown option '-O3'"),
    ("vta -mcpu=znver4", "options are for CPU targets"),
    ("llvm -mprefer-vector-width=1024", "must be 128, 256 or 512"),
    ("llvm -mcpu='znver4", "No closing quotation"),
    ("llvm -mtriple=mips-linux-gnu", "unsupported architecture 'mips'"),
    ("llvm -mtriple=aarch64-linux-gnu -mcpu=znver3", "'znver3' is an x86_64 CPU, not one for aarch64"),
    ("llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-z9", "unknown CPU 'cortex-z9' \\(known: cortex-a53"),
])
def test_bad_targets_are_one_clear_error(text, message):
    with pytest.raises(TargetError, match=message):
        Target.parse(text)


def test_a_named_cpu_has_its_table_features():
    assert Target.parse("llvm -mcpu=znver3").features == {"sse4.2", "avx", "avx2", "fma", "f16c"}
    znver4 = Target.parse("llvm -mcpu=znver4").features
    assert {"avx512f", "avx512vl", "avx512bw", "avx512vnni", "avx512bf16"} <= znver4
    assert "avx512fp16" not in znver4


def test_removing_a_feature_removes_what_needs_it_and_adding_adds_what_it_needs():
    no512 = Target.parse("llvm -mcpu=znver4 -mattr=-avx512f")
    assert not any(f.startswith("avx512") for f in no512.features)
    assert "avx2" in no512.features
    grown = Target.parse("llvm -mcpu=x86-64 -mattr=+avx512vl")
    assert {"avx512vl", "avx512f", "avx2", "fma", "avx", "sse4.2"} <= grown.features


def test_resolving_writes_only_the_differences_from_the_named_cpu():
    assert str(Target.parse("llvm -mcpu=znver4").resolve()) == "llvm -mcpu=znver4"
    resolved = Target.parse("llvm -mcpu=znver4 -mattr=-avx512bw").resolve()
    assert resolved.mattr == ("-avx512bw",)
    assert resolved.features == Target.parse("llvm -mcpu=znver4 -mattr=-avx512bw").features


@pytest.fixture
def fake_host(monkeypatch):
    """Pretend this process runs on another CPU (name, vector features)."""
    def use(name: str, features):
        monkeypatch.setattr(tgt, "_host_cpu",
                            lambda: (name, frozenset(features), ",".join(f"+{f}" for f in features)))
        tgt._machine_model.cache_clear()
    yield use
    tgt._machine_model.cache_clear()


def test_the_host_resolves_to_its_name_and_features(fake_host):
    fake_host("znver4", tgt.CPUS["znver4"].features)
    assert str(Target().resolve()) == "llvm -mcpu=znver4"
    # a VM that hides AVX-512 from a Zen 4: the difference is written out
    fake_host("znver4", tgt.CPUS["znver3"].features)
    resolved = Target().resolve()
    assert "-avx512f" in resolved.mattr and "avx512f" not in resolved.features


def test_an_unknown_host_is_described_by_every_feature(fake_host):
    fake_host("znver9", tgt.CPUS["znver5"].features)
    resolved = Target().resolve()
    assert len(resolved.mattr) == len(tgt.VECTOR_FEATURES)
    # the description stands on its own on any other machine
    fake_host("znver3", tgt.CPUS["znver3"].features)
    assert Target.parse(str(resolved)).features == set(tgt.CPUS["znver5"].features)


def test_missing_features_are_those_the_host_lacks(fake_host):
    fake_host("znver3", tgt.CPUS["znver3"].features)
    missing = Target.parse("llvm -mcpu=znver4").missing_on_host()
    assert "avx512f" in missing and "avx2" not in missing
    assert Target.parse("llvm -mcpu=haswell").missing_on_host() == []


# --- the machine model ---------------------------------------------------------------


@pytest.mark.parametrize("text, lanes, registers, fma_per_cycle", [
    ("llvm -mcpu=x86-64", 4, 16, 1),
    ("llvm -mcpu=haswell", 8, 16, 2),
    ("llvm -mcpu=znver3", 8, 16, 2),
    ("llvm -mcpu=znver4", 16, 32, 1),      # 512-bit FMAs in two halves
    ("llvm -mcpu=znver5", 16, 32, 2),      # full-width FMA units
    ("llvm -mcpu=skylake-avx512", 16, 32, 2),
    ("llvm -mcpu=znver4 -mprefer-vector-width=256", 8, 32, 2),
    ("llvm -mcpu=znver4 -mattr=-avx512f", 8, 16, 2),
    ("llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72", 4, 32, 2),  # NEON
    ("llvm -mcpu=cortex-a53", 4, 32, 1),
    ("llvm -mtriple=aarch64-linux-gnu", 4, 32, 2),
    ("llvm -mtriple=riscv64-linux-gnu -mattr=+v", 4, 32, 1),  # V at its 128-bit minimum
])
def test_machine_models_of_named_cpus(text, lanes, registers, fma_per_cycle, monkeypatch):
    monkeypatch.delenv(tgt.REGISTERS_ENV, raising=False)
    model = machine_model(text)
    assert (model.lanes, model.vector_registers, model.fma_per_cycle) == (lanes, registers, fma_per_cycle)
    assert model.l1_bytes >= 32 * 1024 and model.l2_bytes > model.l1_bytes


def test_a_named_cpu_takes_its_caches_from_the_table(monkeypatch):
    model = machine_model("llvm -mcpu=znver3")
    assert (model.l1_bytes, model.l2_bytes, model.l3_bytes) == (32 << 10, 512 << 10, 32 << 20)
    assert machine_model("llvm -mcpu=sapphirerapids").l2_bytes == 2 << 20


def test_another_architecture_is_named_by_its_triple_or_its_cpu():
    a72 = Target.parse("llvm -mcpu=cortex-a72")
    assert (a72.arch, a72.llvm_triple, a72.features) == ("aarch64", "aarch64-unknown-linux-gnu",
                                                          {"neon"})
    assert not a72.on_host_arch or tgt.host_arch() == "aarch64"
    generic = Target.parse("llvm -mtriple=aarch64-linux-gnu").resolve()
    assert str(generic) == "llvm -mtriple=aarch64-linux-gnu -mcpu=generic"
    assert Target.parse("llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-n1 -mattr=-dotprod"
                        ).resolve().mattr == ("-dotprod",)
    assert machine_model("llvm -mcpu=cortex-a72").legal_lanes == (4,)
    rv = Target.parse("llvm -mtriple=riscv64-linux-gnu -mattr=+v")
    assert rv.llvm_cpu_and_features() == ("generic-rv64", "+m,+a,+f,+d,+c,+v")
    assert rv.llvm_abi == "lp64d"


def test_the_register_override_is_one_override_of_the_model(monkeypatch):
    monkeypatch.setenv(tgt.REGISTERS_ENV, "32")
    model = machine_model("llvm -mcpu=znver3")
    assert model.vector_registers == 32 and model.lanes == 8
    monkeypatch.setenv(tgt.REGISTERS_ENV, "24")
    with pytest.raises(TargetError, match="XWEAVE_VECTOR_REGISTERS='24'"):
        machine_model("llvm -mcpu=znver3")


def test_legal_widths_and_narrowing():
    znver4 = machine_model("llvm -mcpu=znver4")
    assert znver4.legal_lanes == (4, 8, 16)
    narrow = znver4.with_lanes(8)
    assert isinstance(narrow, MachineModel) and narrow.lanes == 8 and narrow.fma_per_cycle == 2
    assert znver4.accumulators_to_hide_latency == 4 and narrow.accumulators_to_hide_latency == 8
    with pytest.raises(TargetError, match="16-lane vectors are not legal on znver3"):
        machine_model("llvm -mcpu=znver3").with_lanes(16)


def test_host_caches_come_from_the_os(fake_host):
    caches = tgt._host_caches()
    if caches is None:
        pytest.skip("no cache sizes in sysfs on this machine")
    fake_host(tgt.host_cpu_name(), tgt.CPUS.get(tgt.host_cpu_name(), tgt._UNKNOWN_CPU).features)
    model = machine_model(Target())
    assert (model.l1_bytes, model.l2_bytes, model.l3_bytes) == caches


# --- the target a module carries -----------------------------------------------------


def test_the_default_target_is_pinned_by_the_environment():
    assert str(tgt.default_target()) == "llvm -mcpu=znver3"  # tests/conftest.py


def test_a_module_records_its_resolved_target_and_kernels_read_it():
    from xweave.context import parse_module
    from xweave.schedules import analyse

    module = parse_module("""
    func.func @k(%a: memref<64xf32>, %b: memref<64xf32>) attributes {xweave.kernel} {
      loop.for "copy.i" %i = 0 to 64 {
        %v = loop.load %a[%i] : memref<64xf32>
        loop.store %v, %b[%i] : memref<64xf32>
      }
      func.return
    }""")
    kernel = next(iter(module.ops))
    assert target_of(kernel) == tgt.default_target()
    set_target(module, Target.parse("llvm -mcpu=znver5"))
    assert module.attributes["xweave.target"].data == "llvm -mcpu=znver5"
    assert target_of(kernel) == Target.parse("llvm -mcpu=znver5")
    assert analyse(kernel).machine == machine_model("llvm -mcpu=znver5")


def test_the_compiled_code_is_for_the_target(tmp_path):
    module = xweave.build(EXAMPLE, target="llvm -mcpu=x86-64")  # SSE2 only
    assert "ymm" not in module.assembly and "zmm" not in module.assembly
    assert str(module.target) == "llvm -mcpu=x86-64"
    reference = xweave.build(EXAMPLE)
    x = np.random.default_rng(0).standard_normal((1, 3, 32, 32)).astype(np.float32)
    np.testing.assert_allclose(module.run(data=x)[0], reference.run(data=x)[0], rtol=1e-5, atol=1e-5)
    module.export(tmp_path / "m.xwm")
    loaded = xweave.load_module(tmp_path / "m.xwm")
    assert loaded.target == module.target
    np.testing.assert_allclose(loaded.run(data=x)[0], reference.run(data=x)[0], rtol=1e-5, atol=1e-5)


def test_code_for_a_cpu_with_more_features_exports_but_is_refused_here(tmp_path, fake_host):
    fake_host("znver3", tgt.CPUS["znver3"].features)
    module = xweave.build(EXAMPLE, target="llvm -mcpu=znver4")
    assert not module.runnable
    with pytest.raises(TargetError, match="lacks avx512f"):
        module.run(data=np.zeros((1, 3, 32, 32), np.float32))
    module.export(tmp_path / "m.xwm")
    with pytest.raises(TargetError, match=r"compiled for 'llvm -mcpu=znver4', and this CPU \('znver3'\) lacks avx512f"):
        xweave.load_module(tmp_path / "m.xwm")


def test_the_cli_takes_a_target_and_rejects_a_bad_one(tmp_path):
    xwm = tmp_path / "m.xwm"
    ok = subprocess.run([sys.executable, "-m", "xweave.cli", "compile", str(EXAMPLE), "-o", str(xwm),
                         "--target", "llvm -mcpu=haswell"], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    bad = subprocess.run([sys.executable, "-m", "xweave.cli", "compile", str(EXAMPLE), "-o",
                          str(tmp_path / "n.xwm"), "--target", "llvm -mcpu=pentium9"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert bad.stderr.count("\n") == 1 and "unknown CPU 'pentium9'" in bad.stderr
    assert not (tmp_path / "n.xwm").exists()
