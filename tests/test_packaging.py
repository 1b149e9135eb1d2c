"""The built wheel ships the bundled sample's problem folders as package data, and nothing generated."""

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.integration
def test_wheel_ships_every_sample_problem_file(tmp_path):
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(REPO), "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp_path)],
        check=True, capture_output=True, timeout=600,
    )
    names = set(zipfile.ZipFile(next(tmp_path.glob("nouscoder_verl-*.whl"))).namelist())
    problems = REPO / "data_prep" / "sample" / "problems"
    expected = {
        path.relative_to(REPO).as_posix() for path in problems.rglob("*") if path.is_file() and "__pycache__" not in path.parts
    }
    assert len(expected) > 200 and not expected - names, sorted(expected - names)[:10]
    assert "data_prep/sample/bundle.py" in names and "recipe/nouscoder/eval/README.md" in names
    assert not [name for name in names if ".generated" in name or "__pycache__" in name or ".ruff_cache" in name]
