"""launch/run_debug_cpu_chain.sh under a real one-node Slurm with the REAL trainer in CPU mode (recipe/nouscoder/cpu):
stage debug_cpu -> its best checkpoint (select_checkpoint, merged) -> stage debug_cpu_extended started from that
model -> the trainer is killed after its first checkpoint -> the same sbatch command resumes it there and finishes.

The node has no GPU for the job (no --gpus-per-node): the wrapper gives Ray 2 logical device slots and 16 logical
CPUs, as on a CPU-only Slurm cluster. This is also the CI run of the synchronous trainer (`nouscoder_sync`, 2 FSDP
ranks, grpo_plus + dapo with TIS, the Ray grading pool as reward, known answers for every response, so that some
problem's whole group passes and leaves training through the online filter); the separate-async trainer runs in
tests/recipe/test_cpu_learning.py. Checked: mixed rewards, gradients, on-policy TIS weights, the recipe's
metrics, the merged model holds trained weights and generates, the online-filter state restored on resume,
plot_metrics, and no process of either job left.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from data_prep.build_deepcoder_mix import main as build_data
from recipe.nouscoder.training.online_filter import STATE_FILE_NAME
from tests.launch.test_slurm_chain import REPO, assert_ray_lifecycle, launch_env
from tests.recipe.cpu_runs import E2E_MARKER_ENV, metrics, processes_marked

pytestmark = [pytest.mark.integration, pytest.mark.timeout(3600)]
STAGES = ("debug_cpu", "debug_cpu_extended")


def submit(local_slurm, work: Path, env: dict[str, str], data: Path) -> tuple[int, str, str, str]:
    return local_slurm.run_job(
        "--nodes=1",
        f"--nodelist={local_slurm.node_name}",
        "--time=40",
        str(REPO / "launch" / "run_debug_cpu_chain.sh"),
        f"data.train_files={data / 'train.parquet'}",
        f"data.val_files={data / 'test.parquet'}",
        "trainer.total_training_steps=2",
        "trainer.save_freq=1",
        "trainer.test_freq=2",
        "nouscoder.cpu.known_answers.fraction=1.0",
        env=env,
        cwd=work,
        timeout_s=2400,
    )


def steps_logged(metrics_file: Path) -> list[int]:
    return [record["step"] for record in metrics(metrics_file)]


def assert_trained_on_policy_with_the_recipes_parts(steps: list[dict]) -> None:
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


def assert_holds_trained_weights_and_generates(model_dir: Path, initial_dir: Path) -> None:
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    prompt = tokenizer("### Question:\nAdd two numbers.", return_tensors="pt")
    generated = model.generate(**prompt, max_new_tokens=5, do_sample=False, pad_token_id=tokenizer.pad_token_id)
    assert generated.shape[1] > prompt["input_ids"].shape[1]
    initial = AutoModelForCausalLM.from_pretrained(initial_dir, dtype=torch.float32).state_dict()
    merged = model.state_dict()
    assert merged.keys() == initial.keys()
    assert any(not torch.equal(merged[name], initial[name]) for name in initial)


def assert_plots_drawn(metrics_file: Path, out_dir: Path) -> None:
    command = [sys.executable, "-m", "recipe.nouscoder.run.plot_metrics", "--log", str(metrics_file), "--out-dir"]
    subprocess.run([*command, str(out_dir)], check=True, capture_output=True, timeout=120)
    pictures = list(out_dir.glob("*.png"))
    assert pictures and all(picture.stat().st_size > 0 for picture in pictures)


def test_cpu_chain_selects_extends_and_resumes_a_killed_stage(local_slurm, tmp_path, stand_in_hub):
    data = tmp_path / "data"
    assert build_data(["--from", "sample", "--out", str(data)]) == 0
    ray_root = local_slurm.root / "ray_cpu"
    ray_root.mkdir()
    env = launch_env(
        local_slurm,
        tmp_path,
        ray_root,
        stand_in_hub,
        data,
        TRAINER_CMD=f"{sys.executable} {REPO / 'tests' / 'launch' / 'crash_once_trainer.py'}",
        CRASH_ONCE_STAGE=STAGES[1],
        CRASH_ONCE_MARKER=str(tmp_path / "killed_once"),
        **{E2E_MARKER_ENV: (marker := uuid.uuid4().hex)},  # every process of the jobs inherits it
    )
    for variable in (
        "FAKE_TRAINER_STEPS",
        "FAKE_TRAINER_STEP_SECONDS",
        "EVAL_DATA",
        "WANDB_API_KEY",
    ):  # no wandb offline
        env.pop(variable, None)
    run_dir = tmp_path / "outputs" / "debug_cpu_chain"
    stage1, stage2 = (run_dir / stage for stage in STAGES)

    job1, state, exit_code, output = submit(local_slurm, tmp_path, env, data)
    assert (state, exit_code) == ("FAILED", "1:0"), output
    assert_ray_lifecycle(local_slurm, output, job1, ray_root)
    assert (tmp_path / "killed_once").is_file(), output
    best1 = Path((stage1 / "best_model").read_text().strip())
    assert best1.parent.name == "best_hf" and (best1 / "config.json").is_file()
    # verl's real FSDP checkpoints: once the model is chosen, only the selected step keeps its optimizer shards
    selected = int(best1.name.removeprefix("global_step_"))
    for step in (1, 2):
        shards = list((stage1 / "checkpoints" / f"global_step_{step}" / "actor").glob("optim_world_size_2_rank_*.pt"))
        assert len(shards) == (2 if step == selected else 0), (step, selected, shards)  # 2 FSDP ranks
    stage1_records = metrics(stage1 / "checkpoints" / "metrics.jsonl")
    assert [record["step"] for record in stage1_records] == [1, 2]  # real steps of the real trainer
    assert_trained_on_policy_with_the_recipes_parts([record["data"] for record in stage1_records])
    assert_holds_trained_weights_and_generates(best1, stage1 / "checkpoints" / "tiny_qwen2")
    assert_plots_drawn(stage1 / "checkpoints" / "metrics.jsonl", tmp_path / "plots")
    assert processes_marked(marker) == []
    assert f"actor_rollout_ref.model.path={best1}" in output  # stage 2 started from stage 1's selection
    assert (stage2 / "checkpoints" / "latest_checkpointed_iteration.txt").read_text().strip() == "1"
    assert f"stage {STAGES[1]}: trainer failed (exit 137)" in output

    job2, state, exit_code, output = submit(local_slurm, tmp_path, env, data)
    assert (state, exit_code) == ("COMPLETED", "0:0"), output
    assert_ray_lifecycle(local_slurm, output, job2, ray_root)
    assert f"stage {STAGES[0]}: finished earlier, best model {best1}; skipping" in output
    assert f"stage {STAGES[1]}: resuming from global_step_1" in output
    assert steps_logged(stage2 / "checkpoints" / "metrics.jsonl") == [2]  # resumed at the next step
    assert steps_logged(stage2 / "checkpoints" / "metrics.1.jsonl") == [1]
    saved = json.loads((stage2 / "checkpoints" / "global_step_1" / STATE_FILE_NAME).read_text())["solved_in_epoch"]
    assert saved, "with known answers for every response, some problem's whole group passes in step 1"
    [resumed] = metrics(stage2 / "checkpoints" / "metrics.jsonl")
    assert resumed["data"]["nouscoder/online_filter/removed_problems"] >= len(saved)  # the state came back
    best2 = Path((stage2 / "best_model").read_text().strip())
    assert (best2 / "config.json").is_file()
    assert processes_marked(marker) == []
