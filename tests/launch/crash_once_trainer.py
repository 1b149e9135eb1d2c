"""TRAINER_CMD of the CPU chain test: the real trainer (`python -m recipe.nouscoder.main`), SIGKILLed once right after
its first step of the stage CRASH_ONCE_STAGE is checkpointed and logged, as a node failure or Slurm's time limit would
stop it (verl saves the checkpoint before it logs the step's metrics: killing at the checkpoint alone would race the
metrics line).

The kill happens only while CRASH_ONCE_MARKER does not exist (the file is written at the kill), so the next
submission of the same command runs the trainer untouched and must resume from that checkpoint.
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from recipe.nouscoder.run.run_dir import METRICS_FILE_NAME

args = sys.argv[1:]
command = [sys.executable, "-m", "recipe.nouscoder.main", *args]
stage, marker = os.environ["CRASH_ONCE_STAGE"], Path(os.environ["CRASH_ONCE_MARKER"])
if args[args.index("--config-name") + 1] != stage or marker.exists():
    os.execv(sys.executable, command)
run_dir = Path(next(arg.split("=", 1)[1] for arg in args if arg.startswith("trainer.default_local_dir=")))
tracker, metrics = run_dir / "latest_checkpointed_iteration.txt", run_dir / METRICS_FILE_NAME


def first_step_done() -> bool:
    checkpointed = tracker.is_file() and tracker.read_text().strip() == "1"
    return (
        checkpointed
        and metrics.is_file()
        and any(line.endswith("\n") and json.loads(line)["step"] == 1 for line in metrics.open())
    )


trainer = subprocess.Popen(command, start_new_session=True)
while trainer.poll() is None:
    if first_step_done():
        marker.write_text(f"{stage}: killed after global_step_1\n")
        os.killpg(trainer.pid, signal.SIGKILL)
        trainer.wait()
        sys.exit(137)
    time.sleep(0.5)
sys.exit(trainer.returncode)
