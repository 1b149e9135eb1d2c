"""The loop learns: reinforcement learning alone raises the held-out pass rate of a CPU run, its negative control does
not (the short version of benchmarks/learning_curve.py). These runs are also the CI run of the
separate-async trainer off Slurm (``nouscoder_separate_async``; on Slurm across two nodes in
tests/launch/test_rehearsal.py; the synchronous one runs in tests/vllm_cpu and as the rehearsal's evaluation).

The task family and the warm-started model are built once (``recipe.nouscoder.cpu.learning_inputs``,
the configs' own settings); then the real CLI runs ``--config-name debug_cpu_learn_async`` as a user would:
NousCoder's separate-async trainer (a standalone hf_cpu server sampling while the trainer trains, weights over
``cpu_gloo``), microcoder_grpo with a repetition window + GSPO+ with sequence-level TIS, dynamic sampling and the
online filter on, every response the model's own (no known answers).

- The real run: 6 steps, validated before the first and every 3, printing the progress console
  (``nouscoder.console=progress``). Rewards from the Ray grading pool (``reward_fns.async_score``). (Resuming this
  trainer with its online-filter state is the rehearsal's: tests/launch/test_rehearsal.py kills it inside a step.)
- The control, ``nouscoder.negative_control.mode=shuffle_rewards`` (each group's rewards permuted among its
  responses: the same group statistics, no information), 6 steps validated after the last one only (it starts from
  the same model, so the real run's step-0 validation is its start too), with verl's whole console. Rewards from the
  synchronous grader in verl's reward-loop workers (``reward_fns.verl_reward``), so both reward paths run in a real
  trainer.

Margins (seeded inputs; the order in which requests batch still varies run to run): in STEPS steps the real run gains
+0.3-0.4 of held-out pass rate and the shuffled control loses up to 0.1 (4 samples on each of 64 held-out problems:
one estimate varies by about 0.03). Required: a gain of at least MIN_GAIN, a control at most MAX_CONTROL_GAIN above
the start, and the real run at least MIN_SEPARATION above the control. Cost: about 4-5 minutes on 2 cores: the warm
start 55 s, two invocations of 1-2 minutes.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from recipe.nouscoder.cpu import learning_inputs
from recipe.nouscoder.run.learning_curve import validation_curve
from recipe.nouscoder.run.run_dir import METRICS_FILE_NAME, read_step_metrics
from tests.recipe.cpu_runs import E2E_MARKER_ENV, processes_marked

pytestmark = [pytest.mark.integration, pytest.mark.long(1), pytest.mark.timeout(2400)]

CONFIG = "debug_cpu_learn_async"
STEPS = 6
VALIDATE_EVERY = 3
MIN_GAIN = 0.15
MAX_CONTROL_GAIN = 0.12
MIN_SEPARATION = 0.20
RUN_TIMEOUT_S = 1200
CONTROL = ["nouscoder.negative_control.mode=shuffle_rewards", "trainer.val_before_train=false"]
SYNC_GRADER = "reward.custom_reward_function.path=pkg://reward_fns.verl_reward"


@dataclass
class LearningRuns:
    out: Path
    marker: str = field(default_factory=lambda: uuid.uuid4().hex)
    logs: dict[str, str] = field(default_factory=dict)
    wall_s: dict[str, float] = field(default_factory=dict)
    leftover: list[str] = field(default_factory=list)

    def invoke(self, name: str, run: str, steps: int, *overrides: str) -> None:
        command = [
            sys.executable,
            "-m",
            "recipe.nouscoder.main",
            "--config-name",
            CONFIG,
            f"trainer.default_local_dir={self.out / run}",
            f"trainer.total_training_steps={steps}",
            *overrides,
        ]
        start = time.monotonic()
        completed = subprocess.run(
            command,
            cwd=self.out,
            env={**os.environ, E2E_MARKER_ENV: self.marker, "HYDRA_FULL_ERROR": "1"},
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT_S,
            check=False,
        )
        self.wall_s[name] = round(time.monotonic() - start, 1)
        self.logs[name] = completed.stdout + completed.stderr
        assert completed.returncode == 0, f"{name} exited {completed.returncode}:\n{self.logs[name][-6000:]}"

    def step_metrics(self, run: str) -> dict[int, dict[str, float]]:
        return read_step_metrics(self.out / run / METRICS_FILE_NAME)


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> LearningRuns:
    runs = LearningRuns(tmp_path_factory.mktemp("cpu_learning"))
    inputs = learning_inputs(CONFIG, runs.out / "inputs")
    runs.invoke("real", "real", STEPS, *inputs, f"trainer.test_freq={VALIDATE_EVERY}", "nouscoder.console=progress")
    full_console = "nouscoder.console=full"
    runs.invoke("control", "control", STEPS, *inputs, f"trainer.test_freq={STEPS}", *CONTROL, SYNC_GRADER, full_console)
    runs.leftover = processes_marked(runs.marker)
    print(f"learning runs: wall {runs.wall_s} s")
    return runs


def test_reinforcement_learning_raises_the_held_out_pass_rate_and_the_control_does_not(runs):
    real, control = validation_curve(runs.step_metrics("real")), validation_curve(runs.step_metrics("control"))
    assert sorted(real) == [0, VALIDATE_EVERY, STEPS] and sorted(control) == [STEPS], (real, control)
    start, real_end, control_end = real[0], real[STEPS], control[STEPS]
    figures = f"held-out pass rate: start {start:.3f}, after {STEPS} steps {real_end:.3f}, control {control_end:.3f}"
    assert 0.05 <= start <= 0.4, f"the warm start is off its design: {figures}"
    assert real_end - start >= MIN_GAIN, figures
    assert control_end - start <= MAX_CONTROL_GAIN, figures
    assert real_end - control_end >= MIN_SEPARATION, figures


def test_the_runs_were_the_recipes_loop_on_the_models_own_responses(runs):
    for name in ("real", "control"):
        step_metrics = runs.step_metrics(name)
        steps = [step_metrics[step] for step in range(1, STEPS + 1)]
        assert any(step["grading/verdict/accepted"] > 0 for step in steps)
        assert any(step["critic/score/min"] < 0 < step["critic/score/max"] for step in steps)
        assert all(step["grading/internal_errors"] == 0 for step in steps)
        # no spliced answers: the hf_cpu server logs nouscoder/known_answers/* exactly while that option is on
        assert not any(key.startswith("nouscoder/known_answers/") for step in steps for key in step)
        assert all("nouscoder/dynamic_sampling/dropped_groups" in step for step in steps)
        assert all("nouscoder/online_filter/removed_problems" in step for step in steps)
        assert all("length_bias/masked_advantage_fraction" in step for step in steps)  # microcoder_grpo's path
        assert all(step["actor/grad_norm"] > 0 for step in steps)
        # decoupled PPO: the later mini-batch of a step sees a pi_old older than pi_theta (snapshots.py)
        assert any(step["actor/seq_ratio_max"] > step["actor/seq_ratio_min"] for step in steps)
        # PipelineRL: a batch may come from older weights (sequence-level TIS corrects for it, capped)
        assert all(0 < step["rollout_corr/rollout_is_mean"] <= 2.0 for step in steps)
        assert any(step["training/off_policy/trajectory_staleness/max"] > 0 for step in steps)
        assert all(step["cpu_gloo/weight_sync_mib"] > 0 for step in steps)
        # the pool logs its latency; verl's reward-loop workers do not
        assert all(("grading/latency_s/p50" in step) == (name == "real") for step in steps)
        control = [step.get("nouscoder/negative_control/active", 0.0) for step in steps]
        assert control == ([1.0] * STEPS if name == "control" else [0.0] * STEPS)
    full_console = "".join(log.read_text() for log in (runs.out / "real" / "logs").glob("main_*.log"))
    assert "microcoder_grpo" in full_console and "gspo_plus" in full_console


def test_the_progress_console_shows_a_line_per_step_and_keeps_the_rest_in_a_log(runs):
    console = runs.logs["real"]
    logs = sorted((runs.out / "real" / "logs").glob("main_*.log"))
    assert "workers ready after" in console and f"step {STEPS}/{STEPS} | reward " in console, console
    assert any(f"full console: {log}" in console for log in logs), console
    assert len(console.splitlines()) < 25, console  # verl's console printed ~1,100 lines for 3 steps
    assert any("Started a local Ray instance" in log.read_text() for log in logs)  # Ray's and verl's output


def test_plot_metrics_draws_the_run(runs, tmp_path):
    subprocess.run(
        [
            sys.executable,
            "-m",
            "recipe.nouscoder.run.plot_metrics",
            "--log",
            str(runs.out / "real" / METRICS_FILE_NAME),
            "--out-dir",
            str(tmp_path),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    pictures = list(tmp_path.glob("*.png"))
    assert pictures and all(picture.stat().st_size > 0 for picture in pictures)


def test_no_ray_or_sandbox_process_outlives_the_runs(runs):
    assert runs.leftover == []
