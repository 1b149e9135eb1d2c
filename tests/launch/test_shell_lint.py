"""CI lint of every shell script in the repository: `bash -n` (syntax) and `shellcheck` (clean, no warnings)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def shell_scripts() -> list[Path]:
    """Tracked and new (not ignored) files named *.sh or starting with a bash/sh shebang."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    scripts = []
    for name in listed:
        path = REPO / name
        if not path.is_file():
            continue
        if path.suffix == ".sh":
            scripts.append(path)
        elif path.suffix == "":
            with path.open("rb") as handle:
                first_line = handle.readline(100)
            if first_line.startswith(b"#!") and first_line.rstrip().endswith((b"bash", b"/sh")):
                scripts.append(path)
    return sorted(scripts)


def test_the_launch_scripts_are_found():
    found = {path.relative_to(REPO).as_posix() for path in shell_scripts()}
    expected = {
        "launch/stage_chain.sh",
        "launch/lib/ray_slurm.sh",
        "launch/lib/ray_node.sh",
        "launch/run_dapo_32k_to_40k.sh",
        "launch/run_gspo_32k_to_40k.sh",
        "launch/run_gspo_plus_32k_to_40k.sh",
        "launch/run_microcoder_4k.sh",
        "launch/run_debug_cpu_chain.sh",
    }
    assert expected <= found, expected - found


@pytest.mark.parametrize("script", shell_scripts(), ids=lambda path: path.relative_to(REPO).as_posix())
def test_bash_syntax(script: Path):
    result = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("script", shell_scripts(), ids=lambda path: path.relative_to(REPO).as_posix())
def test_shellcheck_clean(script: Path):
    if shutil.which("shellcheck") is None:
        pytest.fail("shellcheck not found: install the Debian package shellcheck (make system-deps does it as root).")
    result = subprocess.run(
        ["shellcheck", "--external-sources", "--severity=style", str(script.relative_to(REPO))],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_gpu_smoke_script_says_what_is_missing_on_a_machine_without_gpus(tmp_path):
    """No `nvidia-smi: command not found` crash: its own message and the CPU-mode alternative, before any work."""
    completed = subprocess.run(
        ["bash", str(REPO / "tests" / "gpu" / "smoke_debug_64.sh")],
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "OUT": str(tmp_path / "out")},  # no nvidia-smi on this PATH
        capture_output=True,
        text=True,
        check=False,
    )
    assert completed.returncode == 1
    assert "no GPU here (nvidia-smi is not installed)" in completed.stderr
    assert "--config-name debug_cpu" in completed.stderr
    assert "command not found" not in completed.stderr and not (tmp_path / "out").exists()
