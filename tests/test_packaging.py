"""The built wheel ships the bundled sample's problem folders as package data, and nothing generated."""

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


SOURCE_PARTS = ("setup.py", "pyproject.toml", "README.md", "verl_ext", "reward_fns", "data_prep", "recipe")
BUILD_LEFTOVERS = shutil.ignore_patterns("__pycache__", ".generated", ".ruff_cache", ".mypy_cache", "*.egg-info")


@pytest.mark.integration
def test_wheel_ships_every_sample_problem_file(tmp_path):
    source = tmp_path / "source"  # setuptools writes build/ into the tree it builds: not into the checkout
    source.mkdir()
    for part in SOURCE_PARTS:
        copy = shutil.copytree if (REPO / part).is_dir() else shutil.copy2
        copy(REPO / part, source / part, **({"ignore": BUILD_LEFTOVERS} if (REPO / part).is_dir() else {}))
    wheels = tmp_path / "wheels"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            str(source),
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(wheels),
        ],
        check=True,
        capture_output=True,
        timeout=600,
    )
    names = set(zipfile.ZipFile(next(wheels.glob("nouscoder_verl-*.whl"))).namelist())
    problems = REPO / "data_prep" / "sample" / "problems"
    expected = {
        path.relative_to(REPO).as_posix()
        for path in problems.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }
    assert len(expected) > 200 and not expected - names, sorted(expected - names)[:10]
    assert "data_prep/sample/bundle.py" in names and "recipe/nouscoder/eval/README.md" in names
    assert not [name for name in names if ".generated" in name or "__pycache__" in name or ".ruff_cache" in name]
