"""The built wheel ships the bundled sample's problem folders as package data, and nothing generated; the
reward-only distribution is this repository's reward_fns (its clean-venv install: `make reward-only-check`)."""

import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement

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


REWARD_ONLY = REPO / "packages" / "nouscoder-reward"


def test_the_reward_only_distribution_ships_this_reward_fns_at_this_version():
    """packages/nouscoder-reward builds the repository's own reward_fns (a link), versioned as setup.py's package."""
    link = REWARD_ONLY / "reward_fns"
    assert link.is_symlink() and link.resolve() == (REPO / "reward_fns").resolve()
    project = tomllib.loads((REWARD_ONLY / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    setup_version = re.search(r'version="([^"]+)"', (REPO / "setup.py").read_text(encoding="utf-8"))
    assert setup_version and project["version"] == setup_version.group(1), "bump both versions together"
    assert not any(Requirement(text).name in ("verl", "torch") for text in project["dependencies"])
