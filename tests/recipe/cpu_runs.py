"""What the tests of whole CPU runs share: the marker every process of a run inherits, the metrics it logged, and the
processes it left behind (tests/recipe/test_cpu_learning.py, tests/launch/test_cpu_chain.py, tests/vllm_cpu)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import psutil

E2E_MARKER_ENV = "NOUSCODER_E2E_RUN"
"""Set to a fresh value for one test's runs: every descendant process inherits it (Ray, sandboxes)."""
LEFTOVER_GRACE_S = 30


def metrics(path: Path) -> list[dict]:
    """verl FileLogger records (``{"step", "data"}``) of one metrics file."""
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def processes_marked(marker: str, grace_s: float = LEFTOVER_GRACE_S) -> list[str]:
    """Processes whose environment carries ``marker`` in ``E2E_MARKER_ENV``, once none is left or after ``grace_s``."""
    deadline = time.monotonic() + grace_s
    while True:
        found = []
        for process in psutil.process_iter(["pid", "cmdline"]):
            try:
                if process.environ().get(E2E_MARKER_ENV) == marker:
                    found.append(f"{process.pid}: {' '.join(process.info['cmdline'] or [])[:160]}")
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                continue
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(1)
