"""Runs the lit + filecheck suite under tests/filecheck as part of pytest."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

FILECHECK_DIR = Path(__file__).parent / "filecheck"


@pytest.mark.early  # minutes long (lit runs the files on every core): not last
def test_lit_suite():
    bindir = os.path.dirname(sys.executable)
    lit = shutil.which("lit", path=bindir) or shutil.which("lit")
    assert lit, "lit is not installed (pip install -e .[test])"
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""))
    proc = subprocess.run(
        [lit, "-v", "--order=smart", str(FILECHECK_DIR)],
        capture_output=True, text=True, env=env,
    )
    assert proc.returncode == 0, proc.stdout[-20000:] + proc.stderr[-5000:]
    assert "Passed" in proc.stdout
