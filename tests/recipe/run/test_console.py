"""The progress console: a short line per step from verl's metrics file, the rest of the output in a log file, and
errors visible (recipe/nouscoder/run/console.py, progress.py). The real CPU run with it: test_cpu_learning.py."""

from __future__ import annotations

import io
import json
import os
import re
from pathlib import Path

import pytest

from recipe.nouscoder.run.console import console_mode, progress_console, run_step
from recipe.nouscoder.run.progress import MetricsFollower, step_line

STEP = {
    "critic/score/mean": -0.125,
    "grading/verdict/accepted": 7.0,
    "grading/verdict/no_code": 9.0,
    "grading/verdict/wrong_answer": 0.0,
    "nouscoder/pass_rate": 0.4375,
    "response_length/mean": 183.4,
    "actor/grad_norm": 0.6731,
    "timing_s/step": 66.04,
    "actor/pg_loss": -0.07,
}


def test_a_step_is_one_short_line_with_the_numbers_that_matter() -> None:
    assert step_line(1, STEP, 2) == (
        "step 1/2 | reward -0.12 | accepted 7/16 | pass rate 0.44 | response 183 tokens | grad norm 0.673 | 66.0 s"
    )
    validated = STEP | {"val-core/nous_sample/acc/mean@1": 0.25, "val-aux/nous_sample/score/mean@1": -0.5}
    assert step_line(2, validated).endswith("| 66.0 s | validation nous_sample acc/mean@1 0.250")
    assert step_line(0, {"val-core/lcb/acc/mean@8": 0.6}) == "validation at step 0: lcb acc/mean@8 0.600"
    assert step_line(3, {"actor/grad_norm": 1.0}) == "step 3 | grad norm 1"  # what was not logged is left out


def test_the_follower_skips_an_earlier_runs_file_and_reads_whole_lines(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    path.write_text(json.dumps({"step": 9, "data": {"actor/grad_norm": 1.0}}) + "\n")  # the previous run's file
    seen, opened = [], []
    follower = MetricsFollower(path, lambda step, data: seen.append((step, data)), lambda: opened.append(1))
    follower.read_new_lines()
    assert seen == [] and opened == []
    path.rename(tmp_path / "metrics.1.jsonl")  # what main does before verl's logger creates a new file
    with open(path, "w") as handle:
        handle.write(json.dumps({"step": 1, "data": {"a": 1.0}}) + "\n" + '{"step": 2, "da')
        handle.flush()
        follower.read_new_lines()
        assert seen == [(1, {"a": 1.0})] and opened == [1]
        handle.write('ta": {"a": 2.0}}\nnot json\n')
    follower.read_new_lines()
    assert seen == [(1, {"a": 1.0}), (2, {"a": 2.0})]


@pytest.mark.parametrize(
    ("setting", "cpu", "tty", "mode"),
    [
        ("auto", True, True, "progress"),
        ("auto", True, False, "full"),
        ("auto", False, True, "full"),
        ("progress", False, False, "progress"),
        ("full", True, True, "full"),
    ],
)
def test_auto_is_progress_for_a_cpu_run_at_a_terminal(setting: str, cpu: bool, tty: bool, mode: str) -> None:
    class Stream(io.StringIO):
        def isatty(self) -> bool:
            return tty

    assert console_mode(setting, cpu, Stream()) == mode


def test_an_unknown_console_setting_names_the_choices() -> None:
    with pytest.raises(ValueError, match="nouscoder.console='quiet' must be one of auto, progress, full"):
        console_mode("quiet", True)


def test_the_console_goes_to_the_log_and_steps_to_the_terminal(tmp_path: Path, capfd) -> None:
    run_dir = tmp_path / "run"
    with progress_console(run_dir, 2, "main") as log:
        os.write(1, b"verl's console line\n")  # pytest swaps sys.stdout itself: write to the descriptor, as Ray does
        os.system("echo a child process line")  # noqa: S605 - Ray's processes write to the same descriptors
        (run_dir / "metrics.jsonl").write_text(json.dumps({"step": 1, "data": STEP}) + "\n")
    shown = capfd.readouterr().out
    assert "verl's console line" in log.read_text() and "a child process line" in log.read_text()
    assert "verl's console line" not in shown and "child process" not in shown
    lines = shown.splitlines()
    assert lines[0].startswith(f"main: starting Ray and verl's workers; their console goes to {log}")
    assert "  workers ready after" in lines[1] and "training 2 steps" in lines[1]
    assert lines[2].startswith("  step 1/2 | reward -0.12 | accepted 7/16")
    assert lines[3].startswith("main: finished in ") and lines[3].endswith(f"full console: {log}")
    print("after the run")  # the descriptors are back
    assert capfd.readouterr().out == "after the run\n"


def test_a_failed_run_shows_the_logs_last_lines_then_the_error(tmp_path: Path, capfd) -> None:
    with pytest.raises(RuntimeError, match="worker died"):
        with progress_console(tmp_path / "run", None, "main"):
            os.write(1, "".join(f"line {n}\n" for n in range(100)).encode())
            os.write(2, b"the reason it failed\n")
            raise RuntimeError("worker died")
    error = capfd.readouterr().err
    assert "main: the run failed; the last lines of" in error
    assert "  | the reason it failed" in error and "  | line 99" in error and "line 50" not in error


@pytest.mark.integration  # runs small shell commands
def test_a_step_keeps_its_output_in_the_log_and_shows_what_matters(tmp_path: Path, capsys) -> None:
    log = tmp_path / "logs" / "step.log"
    command = ["sh", "-c", "echo noise; echo 'data: 28 problems'; printf 'bar 50%%\\rbar 100%%\\n'"]
    assert run_step(command, log, show=re.compile("^data:|^bar"), label="demo 1/2: data") == 0
    assert capsys.readouterr().out == "demo 1/2: data\n  data: 28 problems\n  bar 100%\n"
    assert "noise" in log.read_text()
    failing = ["sh", "-c", "echo step one; echo 'Traceback: it broke' >&2; exit 3"]
    assert run_step(failing, log, show=None, label=None) == 3
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "FAILED (exit 3)" in captured.err and "  | Traceback: it broke" in captured.err and str(log) in captured.err
