"""A clean stop before the job's time limit, asked for by the launcher (launch/README.md "A chain longer than the
time limit").

The launcher passes a file path in ``NOUSCODER_STOP_REQUEST`` (through the Ray job's runtime_env, which reaches verl's
TaskRunner, where the trainer runs) and writes that file SAVE_BEFORE_LIMIT_S before the job's time limit. At the end of
the step running then, the trainer saves a checkpoint unless verl saved this step already, writes ``<file>.saved``
holding the step, and ends its loop after logging the step; the launcher sees ``.saved``, requeues the job, and the next
run resumes from that checkpoint: no step is lost beyond the one running when the limit came, which is repeated only if
the save did not finish.
"""

from __future__ import annotations

import os
from pathlib import Path

STOP_REQUEST_ENV = "NOUSCODER_STOP_REQUEST"
SAVED_SUFFIX = ".saved"


def stop_requested() -> Path | None:
    """The request file, when the launcher has written it."""
    path = os.environ.get(STOP_REQUEST_ENV)
    return Path(path) if path and Path(path).exists() else None


def verl_saves_step(step: int, total_steps: int, save_freq: int) -> bool:
    """Whether verl's loop saves `step` itself (verl/trainer/ppo/v1/trainer_base.py ``fit``: save_freq > 0 and the
    last step or a multiple of save_freq)."""
    return save_freq > 0 and (step >= total_steps or step % save_freq == 0)


def acknowledge(request: Path, step: int) -> None:
    """``<request>.saved`` holding `step`, written whole (the launcher reads it once the trainer has exited)."""
    saved = request.with_name(request.name + SAVED_SUFFIX)
    partial = saved.with_name(saved.name + ".tmp")
    partial.write_text(f"{step}\n")
    os.replace(partial, saved)
