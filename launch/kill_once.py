"""A trainer command that is killed once in the middle of a step, as a node failure or the time limit would stop it:
the rehearsal's kill (launch/rehearse.sh) and the CPU chain test's.

    python launch/kill_once.py --stage dapo_32k --after-step 3 --delay-s 30 --marker RUN_DIR/killed_once -- \\
        python -m recipe.nouscoder.main --config-name dapo_32k trainer.default_local_dir=... [overrides...]

The stage chain runs it as TRAINER_CMD (TRAINER_CMD="python launch/kill_once.py ... --"), appending `--config-name
CONFIG` and the overrides. For `--stage` while `--marker` does not exist: once step N is checkpointed
(`latest_checkpointed_iteration.txt` = N) and logged (its line in `metrics.jsonl`; verl saves before it logs),
`--delay-s` later, inside step N + 1, the trainer's whole process group gets SIGKILL; the marker is written and the exit
status is 137, so the chain fails as after a crash and the next run must resume from global_step_N. Any other config, or
once the marker exists, runs the command untouched (exec).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from recipe.nouscoder.run.run_dir import METRICS_FILE_NAME, TRACKER_FILE_NAME


def step_done(run_dir: Path, step: int) -> bool:
    """Step `step` checkpointed and its metrics line complete."""
    tracker, metrics = run_dir / TRACKER_FILE_NAME, run_dir / METRICS_FILE_NAME
    if not (tracker.is_file() and tracker.read_text().strip() == str(step) and metrics.is_file()):
        return False
    return any(line.endswith("\n") and json.loads(line)["step"] == step for line in metrics.open())


def option(command: list[str], name: str) -> str | None:
    """The value of `--name VALUE` or of the hydra override `name=VALUE` in the trainer's command."""
    for index, item in enumerate(command):
        if item == name and index + 1 < len(command):
            return command[index + 1]
        if item.startswith(f"{name}="):
            return item.split("=", 1)[1]
    return None


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python launch/kill_once.py", description=__doc__.splitlines()[0])
    parser.add_argument("--stage", required=True, help="the config whose run is killed")
    parser.add_argument("--after-step", type=int, required=True, help="kill inside the step after this one")
    parser.add_argument("--delay-s", type=float, default=5.0, help="seconds after step N is logged")
    parser.add_argument("--marker", type=Path, required=True, help="written at the kill; its presence: no kill")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- the trainer command")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the trainer command after --")
    if option(command, "--config-name") != args.stage or args.marker.exists():
        os.execvp(command[0], command)
    run_dir = Path(option(command, "trainer.default_local_dir") or ".")
    trainer = subprocess.Popen(command, start_new_session=True)
    while trainer.poll() is None:
        if step_done(run_dir, args.after_step):
            time.sleep(args.delay_s)
            if trainer.poll() is not None:
                break
            args.marker.write_text(f"{args.stage}: killed {args.delay_s:.0f}s after global_step_{args.after_step}\n")
            print(
                f"kill_once: SIGKILL to the trainer of {args.stage}, {args.delay_s:.0f}s into step {args.after_step + 1}",
                flush=True,
            )
            os.killpg(trainer.pid, signal.SIGKILL)
            trainer.wait()
            sys.exit(137)
        time.sleep(0.5)
    sys.exit(trainer.returncode)


if __name__ == "__main__":
    main()
