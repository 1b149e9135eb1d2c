"""The loop learns: reinforcement learning alone raises the held-out pass rate of a CPU run, its negative control does
not (the short version of benchmarks/learning_curve.py, issue 23).

The task family and the warm-started model are built once (``recipe.nouscoder.cpu.build_missing_learning_inputs``,
the configs' own settings); then the real CLI runs ``--config-name debug_cpu_learn_async`` twice, as a user would:
NousCoder's separate-async trainer, microcoder_grpo + GSPO+ with sequence-level TIS, dynamic sampling and the online
filter on, the Ray grading pool grading every response the model wrote (no known answers). The second run is the
control, ``nouscoder.negative_control.mode=shuffle_rewards`` (each group's rewards permuted among its responses: the
same group statistics, no information), validated after its last step only: it starts from the same model, so the
real run's step-0 validation is its start too.

Margins (seeded inputs; the order in which requests batch still varies run to run): in STEPS steps the real run gains
+0.3-0.4 of held-out pass rate and the shuffled control loses up to 0.1 (4 samples on each of 64 held-out problems:
one estimate varies by about 0.03). Required: a gain of at least MIN_GAIN, a control at most MAX_CONTROL_GAIN above
the start, and the real run at least MIN_SEPARATION above the control. Cost: 290 s on 2 cores (load 2-8): the warm
start 55 s, each run about 2 minutes.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from recipe.nouscoder.cpu import build_missing_learning_inputs
from recipe.nouscoder.learning_curve import validation_curve
from recipe.nouscoder.main import config_dir
from recipe.nouscoder.select_checkpoint import METRICS_FILE_NAME, read_step_metrics
from tests.recipe.test_cpu_training_e2e import E2E_MARKER_ENV, processes_marked

pytestmark = [pytest.mark.integration, pytest.mark.timeout(2400)]

CONFIG = "debug_cpu_learn_async"
STEPS = 6
MIN_GAIN = 0.15
MAX_CONTROL_GAIN = 0.12
MIN_SEPARATION = 0.20
RUN_TIMEOUT_S = 1200


def learning_runs(inputs: Path, out: Path, marker: str) -> dict[str, dict[int, dict[str, float]]]:
    overrides = [
        f"nouscoder.cpu.learning.data_dir={inputs / 'learn_data'}",
        f"nouscoder.cpu.learning.model_dir={inputs / 'learn_model'}",
    ]
    with initialize_config_dir(config_dir=str(config_dir()), version_base=None):
        config = compose(CONFIG, overrides=[f"trainer.default_local_dir={inputs}", *overrides])
    build_missing_learning_inputs(config.nouscoder.cpu.learning)
    metrics = {}
    control_overrides = ["nouscoder.negative_control.mode=shuffle_rewards", "trainer.val_before_train=false"]
    for name, control in (("real", []), ("control", control_overrides)):
        run_dir = out / name
        command = [
            sys.executable,
            "-m",
            "recipe.nouscoder.main",
            "--config-name",
            CONFIG,
            f"trainer.default_local_dir={run_dir}",
            f"trainer.total_training_steps={STEPS}",
            f"trainer.test_freq={STEPS}",
            *overrides,
            *control,
        ]
        completed = subprocess.run(
            command,
            cwd=out,
            env={**os.environ, E2E_MARKER_ENV: marker, "HYDRA_FULL_ERROR": "1"},
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT_S,
            check=False,
        )
        output = completed.stdout + completed.stderr
        assert completed.returncode == 0, f"{name} run exited {completed.returncode}:\n{output[-6000:]}"
        metrics[name] = read_step_metrics(run_dir / METRICS_FILE_NAME)
    return metrics


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    marker = uuid.uuid4().hex
    out = tmp_path_factory.mktemp("cpu_learning")
    metrics = learning_runs(out / "inputs", out, marker)
    return metrics, processes_marked(marker)


def test_reinforcement_learning_raises_the_held_out_pass_rate_and_the_control_does_not(runs):
    metrics, _ = runs
    real, control = validation_curve(metrics["real"]), validation_curve(metrics["control"])
    assert sorted(real) == [0, STEPS] and sorted(control) == [STEPS], (real, control)
    start, real_end, control_end = real[0], real[STEPS], control[STEPS]
    figures = f"held-out pass rate: start {start:.3f}, after {STEPS} steps {real_end:.3f}, control {control_end:.3f}"
    assert 0.05 <= start <= 0.4, f"the warm start is off its design: {figures}"
    assert real_end - start >= MIN_GAIN, figures
    assert control_end - start <= MAX_CONTROL_GAIN, figures
    assert real_end - control_end >= MIN_SEPARATION, figures


def test_the_runs_were_the_recipes_loop_on_the_models_own_responses(runs):
    metrics, _ = runs
    for name, step_metrics in metrics.items():
        steps = [step_metrics[step] for step in range(1, STEPS + 1)]
        assert all(step["grading/internal_errors"] == 0 for step in steps)
        # no spliced answers: the hf_cpu server logs nouscoder/known_answers/* exactly while that option is on
        assert not any(key.startswith("nouscoder/known_answers/") for step in steps for key in step)
        assert all("nouscoder/dynamic_sampling/dropped_groups" in step for step in steps)
        assert all("nouscoder/online_filter/removed_problems" in step for step in steps)
        assert all(step["actor/grad_norm"] > 0 for step in steps)
        # decoupled PPO: the later mini-batch of a step sees a pi_old older than pi_theta (snapshots.py)
        assert any(step["actor/seq_ratio_max"] > step["actor/seq_ratio_min"] for step in steps)
        control = [step.get("nouscoder/negative_control/active", 0.0) for step in steps]
        assert control == ([1.0] * STEPS if name == "control" else [0.0] * STEPS)


def test_no_ray_or_sandbox_process_outlives_the_runs(runs):
    _, leftover = runs
    assert leftover == []
