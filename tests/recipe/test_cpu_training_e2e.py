"""The recipe's RL loop end to end on CPU, through the real CLI: `python -m recipe.nouscoder.main --config-name
debug_cpu`, for both trainers.

Each layout runs twice in a subprocess, as a user would: 2 training steps with a checkpoint at step 2, then the same
command with `trainer.total_training_steps=3`, which must resume at step 3 with the online-filter state of step 2.
Every step is verl's V1 loop: hf_cpu rollout -> Ray grading pool (sandboxed programs) -> advantage estimator of
verl_ext -> policy loss of verl_ext with TIS -> FSDP2 update over gloo -> weight sync -> metrics and checkpoint.

- sync (`nouscoder_sync`, 2 FSDP ranks): grpo_plus + dapo, known answers for every response (fraction 1.0), so
  problems whose bundled programs all pass get solved by their whole group and leave training (online filter);
  validation at the last step feeds `select_checkpoint`, whose merged model must load and generate;
- separate_async (`nouscoder_separate_async`, 1 trainer rank + 1 standalone rollout, weights over `cpu_gloo`):
  microcoder_grpo with a repetition window (the response-token path of the trainer wrapper) + gspo_plus, half of
  the responses written by the model (sampled through the hf_cpu server), graded by the synchronous reward
  (`reward_fns.verl_reward` in verl's reward-loop workers) instead of the default Ray grading pool.
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
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from recipe.nouscoder.online_filter import STATE_FILE_NAME

# Each layout runs the CLI twice (Ray, ~15 Python processes): minutes on a busy 2-core machine.
pytestmark = [pytest.mark.integration, pytest.mark.timeout(2400)]

REPO = Path(__file__).resolve().parents[2]
KNOWN_ANSWERS = "actor_rollout_ref.rollout.engine_kwargs.hf_cpu.known_answers.fraction"
LAYOUTS = {
    "sync": [f"{KNOWN_ANSWERS}=1.0", "trainer.test_freq=3"],  # validates the last step only
    "separate_async": [
        "cpu_layout=separate_async",
        "objective=gspo_plus",
        f"{KNOWN_ANSWERS}=0.5",
        "trainer.test_freq=-1",
        "algorithm.adv_estimator=microcoder_grpo",
        "+algorithm.microcoder_grpo.max_response_length=${data.max_response_length}",
        "+algorithm.microcoder_grpo.repetition_window=16",
        "+algorithm.microcoder_grpo.mask_probability=0.3",
        "reward.custom_reward_function.path=pkg://reward_fns.verl_reward",  # the synchronous grader
    ],
}
RUN_TIMEOUT_S = 900
LEFTOVER_GRACE_S = 30


@dataclass
class CPURun:
    layout: str
    run_dir: Path
    first: list[dict]
    """metrics.jsonl records of the first invocation (steps 1-2; moved to metrics.1.jsonl by the second)."""
    resumed: list[dict]
    """records of the second invocation (step 3)."""
    log: str
    leftover: list[str]
    wall_s: list[float]


def metrics(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def processes_marked(marker: str) -> list[str]:
    """Processes whose environment carries the run's marker (every descendant inherits it: Ray, sandboxes)."""
    found = []
    for process in psutil.process_iter(["pid", "cmdline"]):
        try:
            if process.environ().get("NOUSCODER_E2E_RUN") == marker:
                found.append(f"{process.pid}: {' '.join(process.info['cmdline'] or [])[:160]}")
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


def invoke(run_dir: Path, data_dir: Path, model_dir: Path, layout: str, steps: int, marker: str) -> tuple[str, float]:
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
        *LAYOUTS[layout],
    ]
    start = time.monotonic()
    completed = subprocess.run(
        command,
        cwd=run_dir.parent,
        env={**os.environ, "NOUSCODER_E2E_RUN": marker, "HYDRA_FULL_ERROR": "1"},
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )
    output = completed.stdout + completed.stderr
    assert completed.returncode == 0, f"{layout} run exited {completed.returncode}:\n{output[-6000:]}"
    return output, time.monotonic() - start


@pytest.fixture(scope="module", params=sorted(LAYOUTS))
def cpu_run(request, sample_data_dir, tiny_model_dir, tmp_path_factory) -> CPURun:
    layout = request.param
    run_dir = tmp_path_factory.mktemp(f"cpu_{layout}") / "run"
    marker = uuid.uuid4().hex
    first_log, first_s = invoke(run_dir, sample_data_dir, tiny_model_dir, layout, steps=2, marker=marker)
    second_log, second_s = invoke(run_dir, sample_data_dir, tiny_model_dir, layout, steps=3, marker=marker)
    deadline = time.monotonic() + LEFTOVER_GRACE_S
    while (leftover := processes_marked(marker)) and time.monotonic() < deadline:
        time.sleep(1)
    return CPURun(
        layout,
        run_dir,
        metrics(run_dir / "metrics.1.jsonl"),
        metrics(run_dir / "metrics.jsonl"),
        first_log + second_log,
        leftover,
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
    if cpu_run.layout == "sync":
        # on policy, the sampler's log-probs are the learner's: TIS weights pi_old / pi_rollout stay near 1
        assert all(abs(step["rollout_corr/rollout_is_mean"] - 1) < 0.1 for step in steps)
    else:
        # PipelineRL: a batch may come from older weights (sequence-level TIS corrects for it, capped)
        assert all(0 < step["rollout_corr/rollout_is_mean"] <= 2.0 for step in steps)
        assert any(step["training/off_policy/trajectory_staleness/max"] > 0 for step in steps)


def test_the_recipes_parts_ran(cpu_run):
    steps = {record["step"]: record["data"] for record in cpu_run.first + cpu_run.resumed}
    assert (steps[1]["nouscoder/temperature"], steps[3]["nouscoder/temperature"]) == (1.0, 1.1)  # staged
    pool_graded = all("grading/latency_s/p50" in step for step in steps.values())  # a metric of the pool only
    assert pool_graded == (cpu_run.layout == "sync")
    assert all("nouscoder/dynamic_sampling/dropped_groups" in step for step in steps.values())
    assert all("length_bias/masked_advantage_fraction" in step for step in steps.values())
    if cpu_run.layout == "separate_async":
        assert all(step["cpu_gloo/weight_sync_mib"] > 0 for step in steps.values())
        assert "microcoder" in cpu_run.log and "gspo_plus" in cpu_run.log


def test_a_second_invocation_resumes_with_the_online_filter_state(cpu_run):
    checkpoint = cpu_run.run_dir / "global_step_2"
    assert (checkpoint / "actor").is_dir()
    assert [record["step"] for record in cpu_run.resumed] == [3]
    saved = json.loads((checkpoint / STATE_FILE_NAME).read_text())["solved_in_epoch"]
    if cpu_run.layout == "sync":
        assert saved, "with known answers for every response, some problem's whole group passes by step 2"
    assert cpu_run.resumed[0]["data"]["nouscoder/online_filter/removed_problems"] >= len(saved)
    assert (cpu_run.run_dir / "global_step_3" / STATE_FILE_NAME).is_file()


def test_no_ray_or_sandbox_process_outlives_the_run(cpu_run):
    assert cpu_run.leftover == []


@pytest.mark.parametrize("cpu_run", ["sync"], indirect=True)  # the run that validates (scores to select by)
def test_select_checkpoint_merges_a_trained_model_that_loads_and_generates(cpu_run, tiny_model_dir):
    selected = subprocess.run(
        [
            sys.executable,
            "-m",
            "recipe.nouscoder.select_checkpoint",
            str(cpu_run.run_dir),
            "--metric",
            "val-core/nous_sample/acc/mean@1",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    model_dir = Path(selected.stdout.strip().splitlines()[-1])
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    prompt = tokenizer("### Question:\nAdd two numbers.", return_tensors="pt")
    generated = model.generate(**prompt, max_new_tokens=5, do_sample=False, pad_token_id=tokenizer.pad_token_id)
    assert generated.shape[1] > prompt["input_ids"].shape[1]
    initial = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32).state_dict()
    merged = model.state_dict()
    assert merged.keys() == initial.keys()
    assert any(not torch.equal(merged[name], initial[name]) for name in initial)  # it holds the trained weights


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
