"""The wheel is what users install: it holds every package the README uses (the
examples and the gemm8x8 accelerator included), its license and metadata, and the
README's examples run from it, away from the source tree."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The wheel built from this tree (offline, no build isolation), unpacked into a
    folder of its own: (wheel, site folder)."""
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps",
                    "--no-build-isolation", "-q", "-w", str(out)], check=True,
                   capture_output=True, timeout=300)
    (wheel,) = out.glob("xweave-*.whl")
    site = out / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target",
                    str(site), str(wheel)], check=True, capture_output=True, timeout=300)
    return wheel, site


def run_installed(site: Path, cwd: Path, code: str) -> subprocess.CompletedProcess:
    """`code` run by this interpreter with the unpacked wheel first on the path, from
    a folder outside the source tree."""
    env = {**os.environ, "PYTHONPATH": str(site)}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


def test_the_wheel_names_its_license_and_holds_the_examples(installed):
    wheel, _ = installed
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        metadata = zf.read(next(n for n in names if n.endswith("dist-info/METADATA"))).decode()
    assert any(n.endswith("dist-info/licenses/LICENSE") for n in names)
    assert {"xweave/examples/small_cnn.onnx", "xweave/examples/gemm8x8/dense.py",
            "xweave/examples/gemm8x8/README.md", "xweave/runtime/native/xweave.h",
            "xweave/runtime/native/xweave_runtime.c"} <= names
    assert not any(n.startswith(("xweave/tests/", "xweave/bench/")) for n in names)
    assert "License: Apache-2.0" in metadata
    assert "Classifier: Topic :: Software Development :: Compilers" in metadata
    assert "Requires-Dist: cffi" not in metadata


def test_the_readme_examples_run_from_the_wheel(installed, tmp_path):
    _, site = installed
    result = run_installed(site, tmp_path, f"""
        import numpy as np, xweave
        from importlib.resources import files
        assert xweave.__file__.startswith({str(site)!r}), xweave.__file__
        assert xweave.__version__ == "0.1.0"
        model = str(files("xweave.examples") / "small_cnn.onnx")
        graph = xweave.load_onnx(model)
        module = xweave.build(graph, target="llvm")
        (logits,) = module.run(data=np.random.rand(1, 3, 32, 32).astype(np.float32))
        module.export("small_cnn.xwm")
        same = xweave.load_module("small_cnn.xwm")
        x = np.random.rand(1, 3, 32, 32).astype(np.float32)
        np.testing.assert_array_equal(same.run(data=x)[0], module.run(data=x)[0])
        module.export_library("small_cnn.so")  # the C runtime and header ship in the wheel
        assert str(xweave.include_dir()).startswith({str(site)!r})
        library = xweave.load_module("small_cnn.so")
        np.testing.assert_array_equal(library.run(data=x)[0], module.run(data=x)[0])

        from xweave.examples.gemm8x8 import dense
        x = np.random.randint(-128, 128, (4, 40), dtype=np.int8)
        w = np.random.randint(-128, 128, (10, 40), dtype=np.int8)
        y, report = dense(x, w, bias=np.arange(10, dtype=np.int32))
        assert (y == x.astype(np.int32) @ w.astype(np.int32).T + np.arange(10)).all()
        assert report.total_cycles > 0
        print("ok")
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith("ok")
    assert (tmp_path / "small_cnn.xwm").stat().st_mode & 0o777 == 0o666 & ~_umask()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
