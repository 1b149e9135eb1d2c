"""The vLLM-on-CPU tier's runs: `python -m recipe.nouscoder.main --config-name debug_cpu cpu_rollout=vllm ...` through
the CLI in a subprocess, as a user runs it (test_vllm_sync.py, test_vllm_separate_async.py), and what is checked after
every invocation: no process of the run is left, and no shared-memory segment the run created stays in /dev/shm
(vLLM's ``psm_*`` message queues, multiprocessing's ``sem.mp-*``; recipe/nouscoder/training/rollout_shutdown.py).

The tier runs on two pytest-xdist workers, a module each (Makefile ``VLLM_CPU_TIER``): the two runs side by side (one
run keeps about 1.5 of the 2 cores busy), the weight-sync test (test_weight_sync.py) after the shorter one.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from tests.recipe.cpu_runs import E2E_MARKER_ENV, processes_marked

RUN_TIMEOUT_S = 1200
EXIT_GRACE_S = 120
"""How long a finished run's Ray processes may take to exit on a loaded machine (checked as soon as none is left)."""
SHARED_MEMORY = Path("/dev/shm")
SEGMENT_PREFIXES = ("psm_", "sem.mp-")
"""multiprocessing.shared_memory's and multiprocessing's semaphores' names: what vLLM's processes create there."""


def shared_memory_segments() -> set[str]:
    return {entry.name for entry in SHARED_MEMORY.iterdir() if entry.name.startswith(SEGMENT_PREFIXES)}


def inodes_in_use() -> set[int]:
    """The inodes of the /dev/shm files that a live process has mapped or open: the segments of whatever runs
    alongside (another suite's spawned processes hold ``sem.mp-*`` semaphores while they live). By inode: glibc maps
    a semaphore under a temporary name, then links it to its own."""
    prefix = f"{SHARED_MEMORY}/"
    used = set()
    for process in Path("/proc").iterdir():
        if not process.name.isdigit():
            continue
        try:
            for line in (process / "maps").read_text().splitlines():
                fields = line.split(maxsplit=5)
                if len(fields) == 6 and fields[5].startswith(prefix):
                    used.add(int(fields[4]))
            for fd in (process / "fd").iterdir():
                if os.readlink(fd).startswith(prefix):
                    used.add(fd.stat().st_ino)
        except OSError:  # gone meanwhile, or not ours to read
            continue
    return used


def leaked_segments(before: set[str]) -> set[str]:
    """Segments created since ``before`` that are still there and that no live process holds: left behind."""
    used = inodes_in_use()
    leaked = set()
    for name in shared_memory_segments() - before:
        try:
            if (SHARED_MEMORY / name).stat().st_ino not in used:
                leaked.add(name)
        except FileNotFoundError:  # unlinked meanwhile
            continue
    return leaked


@dataclass
class Invocations:
    run_dir: Path
    marker: str = field(default_factory=lambda: uuid.uuid4().hex)
    wall_s: list[float] = field(default_factory=list)
    leftover_processes: list[str] = field(default_factory=list)
    leftover_segments: set[str] = field(default_factory=set)
    log: str = ""

    def run(self, data_dir: Path, model_dir: Path, steps: int, *overrides: str) -> None:
        command = [
            sys.executable,
            "-m",
            "recipe.nouscoder.main",
            "--config-name",
            "debug_cpu",
            "cpu_rollout=vllm",
            f"trainer.default_local_dir={self.run_dir}",
            f"data.train_files={data_dir / 'train.parquet'}",
            f"data.val_files={data_dir / 'test.parquet'}",
            f"actor_rollout_ref.model.path={model_dir}",
            f"trainer.total_training_steps={steps}",
            "trainer.save_freq=2",
            "trainer.test_freq=-1",
            *overrides,
        ]
        before = shared_memory_segments()
        start = time.monotonic()
        completed = subprocess.run(
            command,
            cwd=self.run_dir.parent,
            env={**os.environ, E2E_MARKER_ENV: self.marker, "HYDRA_FULL_ERROR": "1"},
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT_S,
            check=False,
        )
        self.wall_s.append(time.monotonic() - start)
        output = completed.stdout + completed.stderr
        self.log += output
        assert completed.returncode == 0, f"run exited {completed.returncode}:\n{output[-6000:]}"
        self.leftover_processes += processes_marked(self.marker, grace_s=EXIT_GRACE_S)
        self.leftover_segments |= leaked_segments(before)


def steps_of(records: list[dict]) -> dict[int, dict]:
    return {record["step"]: record["data"] for record in records}
