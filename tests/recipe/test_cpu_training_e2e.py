"""The recipe's RL loop end to end on CPU, through the real CLI: `python -m recipe.nouscoder.main --config-name
debug_cpu cpu_layout=separate_async`, the layout of the NousCoder experiments.

The run goes twice in a subprocess, as a user would: 2 training steps with a checkpoint at step 2, then the same
command with `trainer.total_training_steps=3`, which must resume at step 3 with the online-filter state of step 2.
The first prints verl's whole console, the second the progress console (`nouscoder.console=progress`).
Every step is verl's V1 loop: hf_cpu rollout (a standalone server, sampling while the trainer trains) ->
synchronous reward (`reward_fns.verl_reward` in verl's reward-loop workers) -> advantage estimator of verl_ext
(microcoder_grpo with a repetition window: the response-token path of the trainer wrapper) -> policy loss of
verl_ext (gspo_plus) with TIS -> FSDP2 update over gloo -> weight sync over `cpu_gloo` -> metrics and checkpoint.
Half of the responses are written by the model, half are known answers.

The synchronous trainer (`nouscoder_sync`, with the Ray grading pool, validation and `select_checkpoint`) runs in
tests/launch/test_cpu_chain.py, through the Slurm stage chain: one set of CPU runs covers both (each invocation
costs about a minute of start-up on 2 cores).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest

from recipe.nouscoder.online_filter import STATE_FILE_NAME

# The CLI runs twice (Ray, ~15 Python processes): minutes on a busy 2-core machine.
pytestmark = [pytest.mark.integration, pytest.mark.timeout(2400)]

REPO = Path(__file__).resolve().parents[2]
KNOWN_ANSWERS = "nouscoder.cpu.known_answers.fraction"
OVERRIDES = [
    "cpu_layout=separate_async",
    "objective=gspo_plus",
    f"{KNOWN_ANSWERS}=0.5",
    "trainer.test_freq=-1",
    "algorithm.adv_estimator=microcoder_grpo",
    "+algorithm.microcoder_grpo.max_response_length=${data.max_response_length}",
    "+algorithm.microcoder_grpo.repetition_window=16",
    "+algorithm.microcoder_grpo.mask_probability=0.3",
    "reward.custom_reward_function.path=pkg://reward_fns.verl_reward",  # the synchronous grader
]
RUN_TIMEOUT_S = 900
LEFTOVER_GRACE_S = 30
E2E_MARKER_ENV = "NOUSCODER_E2E_RUN"
"""Set to a fresh value for one test's runs: every descendant process inherits it (Ray, sandboxes)."""


@dataclass
class CPURun:
    run_dir: Path
    first: list[dict]
    """metrics.jsonl records of the first invocation (steps 1-2; moved to metrics.1.jsonl by the second)."""
    resumed: list[dict]
    """records of the second invocation (step 3)."""
    log: str
    resumed_console: str
    """what the second invocation printed (nouscoder.console=progress)."""
    leftover: list[str]
    wall_s: list[float]


def metrics(path: Path) -> list[dict]:
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


def invoke(
    run_dir: Path, data_dir: Path, model_dir: Path, steps: int, marker: str, console: str = "full"
) -> tuple[str, float]:
    command = [
        sys.executable,
        "-m",
        "recipe.nouscoder.main",
        "--config-name",
        "debug_cpu",
        f"trainer.default_local_dir={run_dir}",
        f"data.train_files={data_dir / 'train.parquet'}",
        f"data.val_files={data_dir / 'test.parquet'}",
        f"actor_rollout_ref.model.path={model_dir}",
        f"trainer.total_training_steps={steps}",
        "trainer.save_freq=2",
        f"nouscoder.console={console}",
        *OVERRIDES,
    ]
    start = time.monotonic()
    completed = subprocess.run(
        command,
        cwd=run_dir.parent,
        env={**os.environ, E2E_MARKER_ENV: marker, "HYDRA_FULL_ERROR": "1"},
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )
    output = completed.stdout + completed.stderr
    assert completed.returncode == 0, f"run exited {completed.returncode}:\n{output[-6000:]}"
    return output, time.monotonic() - start


@pytest.fixture(scope="module")
def cpu_run(sample_data_dir, tiny_model_dir, tmp_path_factory) -> CPURun:
    run_dir = tmp_path_factory.mktemp("cpu_separate_async") / "run"
    marker = uuid.uuid4().hex
    first_log, first_s = invoke(run_dir, sample_data_dir, tiny_model_dir, steps=2, marker=marker)
    second_log, second_s = invoke(run_dir, sample_data_dir, tiny_model_dir, steps=3, marker=marker, console="progress")
    return CPURun(
        run_dir,
        metrics(run_dir / "metrics.1.jsonl"),
        metrics(run_dir / "metrics.jsonl"),
        first_log + second_log,
        second_log,
        processes_marked(marker),
        [first_s, second_s],
    )


def test_rewards_are_mixed_and_every_step_updates_the_policy(cpu_run):
    steps = [record["data"] for record in cpu_run.first + cpu_run.resumed]
    assert [record["step"] for record in cpu_run.first + cpu_run.resumed] == [1, 2, 3]
    assert any(step["grading/verdict/accepted"] > 0 for step in steps)
    assert any(step["critic/score/min"] < 0 < step["critic/score/max"] for step in steps)
    assert all(step["actor/grad_norm"] > 0 for step in steps)
    assert all(step["grading/internal_errors"] == 0 for step in steps)
    assert all(step["nouscoder/known_answers/active"] == 1.0 for step in steps)  # the option says it is on
    # PipelineRL: a batch may come from older weights (sequence-level TIS corrects for it, capped)
    assert all(0 < step["rollout_corr/rollout_is_mean"] <= 2.0 for step in steps)
    assert any(step["training/off_policy/trajectory_staleness/max"] > 0 for step in steps)


def test_the_recipes_parts_ran(cpu_run):
    steps = {record["step"]: record["data"] for record in cpu_run.first + cpu_run.resumed}
    assert (steps[1]["nouscoder/temperature"], steps[3]["nouscoder/temperature"]) == (1.0, 1.1)  # staged
    assert not any("grading/latency_s/p50" in step for step in steps.values())  # a metric of the pool only
    assert all("nouscoder/dynamic_sampling/dropped_groups" in step for step in steps.values())
    assert all("length_bias/masked_advantage_fraction" in step for step in steps.values())
    assert all(step["cpu_gloo/weight_sync_mib"] > 0 for step in steps.values())
    assert "microcoder" in cpu_run.log and "gspo_plus" in cpu_run.log


def test_a_second_invocation_resumes_with_the_online_filter_state(cpu_run):
    checkpoint = cpu_run.run_dir / "global_step_2"
    assert (checkpoint / "actor").is_dir()
    assert [record["step"] for record in cpu_run.resumed] == [3]
    saved = json.loads((checkpoint / STATE_FILE_NAME).read_text())["solved_in_epoch"]
    assert cpu_run.resumed[0]["data"]["nouscoder/online_filter/removed_problems"] >= len(saved)
    assert (cpu_run.run_dir / "global_step_3" / STATE_FILE_NAME).is_file()


def test_the_progress_console_shows_a_line_per_step_and_keeps_the_rest_in_a_log(cpu_run):
    console = cpu_run.resumed_console
    (log,) = (cpu_run.run_dir / "logs").glob("main_*.log")
    assert "workers ready after" in console and "step 3/3 | reward " in console and f"full console: {log}" in console
    assert len(console.splitlines()) < 20, console  # verl's console printed ~1,100 lines for this run
    assert "Started a local Ray instance" in log.read_text()  # Ray's and verl's output went to the log


def test_no_ray_or_sandbox_process_outlives_the_run(cpu_run):
    assert cpu_run.leftover == []


def test_plot_metrics_draws_the_run(cpu_run, tmp_path):
    subprocess.run(
        [
            sys.executable,
            "-m",
            "recipe.nouscoder.plot_metrics",
            "--log",
            str(cpu_run.run_dir / "metrics.1.jsonl"),
            "--out-dir",
            str(tmp_path),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    pictures = list(tmp_path.glob("*.png"))
    assert pictures and all(picture.stat().st_size > 0 for picture in pictures)
