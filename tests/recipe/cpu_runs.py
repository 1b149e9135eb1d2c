"""What the tests of whole CPU runs share: the marker every process of a run inherits, the metrics it logged, and the
processes it left behind, and what a synchronous run must show (tests/recipe/test_cpu_learning.py,
tests/launch/test_rehearsal.py, tests/vllm_cpu)."""

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


def assert_trained_on_policy_with_the_recipes_parts(steps: list[dict]) -> None:
    """A synchronous (on-policy) run's steps, with known answers: mixed rewards graded by the Ray pool, gradients, TIS
    weights near 1, and the recipe's metrics."""
    assert any(step["grading/verdict/accepted"] > 0 for step in steps)
    assert any(step["critic/score/min"] < 0 < step["critic/score/max"] for step in steps)
    assert all(step["actor/grad_norm"] > 0 for step in steps)
    assert all(step["grading/internal_errors"] == 0 for step in steps)
    assert all(step["nouscoder/known_answers/active"] == 1.0 for step in steps)  # the option says it is on
    # on policy, the sampler's log-probs are the learner's: TIS weights pi_old / pi_rollout stay near 1
    assert all(abs(step["rollout_corr/rollout_is_mean"] - 1) < 0.1 for step in steps)
    assert all("grading/latency_s/p50" in step for step in steps)  # a metric of the Ray grading pool only
    assert all("nouscoder/dynamic_sampling/dropped_groups" in step for step in steps)
    assert all("length_bias/masked_advantage_fraction" in step for step in steps)
