"""What a person sees of a run: a short line per step, with every other line of output kept in a log file.

Two uses of one idea (the full output goes to a file named on screen; errors stay visible):

- ``progress_console``: ``recipe.nouscoder.main`` with ``nouscoder.console=progress`` (the default of a CPU-mode
  run started from a terminal, ``console_mode``). The process's stdout and stderr, which Ray's log forwarding and
  verl's console logger write to, are redirected into ``RUN_DIR/logs/main_<time>.log``; the terminal shows one line
  per training step (``recipe.nouscoder.run.progress``), and on failure the log's last lines before the traceback.
- ``python -m recipe.nouscoder.run.console step --log FILE --show REGEX -- COMMAND ...``: runs a command with all its
  output in FILE and shows only the lines matching REGEX (``make demo`` runs each of its steps so); on failure it
  shows the last lines of FILE and exits with the command's status.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO

from recipe.nouscoder.run.progress import MetricsFollower, step_line
from recipe.nouscoder.run.run_dir import METRICS_FILE_NAME

CONSOLE_MODES = ("auto", "progress", "full")
TAIL_LINES = 25
"""Lines of the log shown when a step or a run fails."""


def console_mode(setting: str, cpu_mode: bool, stream: IO[str] = sys.stdout) -> str:
    """``progress`` or ``full`` for the ``nouscoder.console`` setting: ``auto`` is ``progress`` for a CPU-mode run
    printing to a terminal (a person at the keyboard), else ``full`` (Slurm logs, tests and pipes keep everything).

    Raises:
        ValueError: a setting other than ``auto``, ``progress`` or ``full``.
    """
    if setting not in CONSOLE_MODES:
        raise ValueError(f"nouscoder.console={setting!r} must be one of {', '.join(CONSOLE_MODES)}")
    if setting != "auto":
        return setting
    return "progress" if cpu_mode and stream.isatty() else "full"


def terminal_writer(fd: int) -> Callable[[str], None]:
    """Write whole lines to a file descriptor (the terminal, saved before stdout was redirected)."""

    def write(text: str) -> None:
        os.write(fd, (text + "\n").encode("utf-8", "replace"))

    return write


def tail(path: Path, lines: int = TAIL_LINES) -> list[str]:
    """The last ``lines`` lines of a file (read from its end; carriage-return progress bars cut to their last state)."""
    with open(path, "rb") as handle:
        handle.seek(0, os.SEEK_END)
        handle.seek(max(0, handle.tell() - (256 << 10)))
        text = handle.read().decode("utf-8", "replace")
    return [line.rsplit("\r", 1)[-1] for line in text.splitlines()[-lines:]]


@contextlib.contextmanager
def progress_console(run_dir: Path, total_steps: int | None, name: str) -> Iterator[Path]:
    """Redirect this process's stdout and stderr (file descriptors 1 and 2, so child processes and Ray's forwarded
    worker output follow) into ``RUN_DIR/logs/main_<time>.log`` and print a line per step of ``RUN_DIR/metrics.jsonl``
    on the terminal instead; yields the log's path."""
    log = run_dir / "logs" / f"main_{time.strftime('%Y-%m-%d_%H-%M-%S')}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    saved_out, saved_err = os.dup(1), os.dup(2)
    with open(log, "ab") as sink:
        os.dup2(sink.fileno(), 1)
        os.dup2(sink.fileno(), 2)
    write = terminal_writer(saved_out)
    write(f"{name}: starting Ray and verl's workers; their console goes to {log} (nouscoder.console=full prints it)")
    started = time.monotonic()
    steps = f"{total_steps} steps" if total_steps else "until the last epoch"
    follower = MetricsFollower(
        run_dir / METRICS_FILE_NAME,
        on_step=lambda step, metrics: write("  " + step_line(step, metrics, total_steps)),
        on_open=lambda: write(f"  workers ready after {time.monotonic() - started:.0f} s; training {steps}"),
    ).start()

    def restore() -> None:
        follower.stop()
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved_out, 1)
        os.dup2(saved_err, 2)
        os.close(saved_out)
        os.close(saved_err)

    try:
        yield log
    except BaseException:
        restore()
        print(f"{name}: the run failed; the last lines of {log}:", file=sys.stderr)
        print("\n".join("  | " + line for line in tail(log)), file=sys.stderr, flush=True)
        raise
    restore()
    print(f"{name}: finished in {time.monotonic() - started:.0f} s; full console: {log}", flush=True)


def run_step(command: Sequence[str], log: Path, show: re.Pattern[str] | None, label: str | None) -> int:
    """Run ``command`` with its output appended to ``log``; print ``label``, then each output line ``show`` matches;
    on failure the log's last lines. Returns the command's exit status."""
    log.parent.mkdir(parents=True, exist_ok=True)
    if label:
        print(label, flush=True)
    with open(log, "ab") as sink:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        assert process.stdout is not None
        for raw in process.stdout:
            sink.write(raw)
            sink.flush()
            line = raw.decode("utf-8", "replace").rstrip("\n").rsplit("\r", 1)[-1]
            if show is not None and show.search(line):
                print("  " + line, flush=True)
        status = process.wait()
    if status:
        print(f"  FAILED (exit {status}): {' '.join(command)}", file=sys.stderr)
        print(f"  the last lines of {log}:", file=sys.stderr)
        print("\n".join("  | " + line for line in tail(log)), file=sys.stderr, flush=True)
    return status


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m recipe.nouscoder.run.console",
        description="Run a command with all its output in a log file, showing only the lines that matter.",
    )
    commands = parser.add_subparsers(dest="action", required=True)
    step = commands.add_parser(
        "step",
        help="run COMMAND (after --) with its output in --log; show a label, the lines matching --show, and on "
        "failure the log's last lines (the exit status is COMMAND's)",
    )
    step.add_argument("--log", type=Path, required=True, help="file the command's stdout and stderr are appended to")
    step.add_argument("--show", default=None, help="regular expression: output lines to show (default: none)")
    step.add_argument("--label", default=None, help="line printed before the command runs")
    step.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND [ARGUMENTS ...]")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("step needs a command after --")
    return run_step(command, args.log, re.compile(args.show) if args.show else None, args.label)


if __name__ == "__main__":
    sys.exit(main())
