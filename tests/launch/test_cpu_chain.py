"""launch/run_debug_cpu_chain.sh under a real one-node Slurm with the REAL trainer in CPU mode (recipe/nouscoder/cpu):
stage debug_cpu -> its best checkpoint (select_checkpoint, merged) -> stage debug_cpu_extended started from that
model -> the trainer is killed after its first checkpoint -> the same sbatch command resumes it there and finishes.

The node has no GPU for the job (no --gpus-per-node): the wrapper gives Ray 2 logical device slots and 16 logical
CPUs, as on a CPU-only Slurm cluster.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from data_prep.build_deepcoder_mix import main as build_data
from tests.launch.test_slurm_chain import REPO, assert_ray_lifecycle, launch_env

pytestmark = [pytest.mark.integration, pytest.mark.timeout(3600)]
STAGES = ("debug_cpu", "debug_cpu_extended")


def submit(local_slurm, work: Path, env: dict[str, str], data: Path) -> tuple[int, str, str, str]:
    job_id = local_slurm.sbatch(
        "--nodes=1",
        f"--nodelist={local_slurm.node_name}",
        "--time=40",
        f"--output={work}/job-%j.out",
        str(REPO / "launch" / "run_debug_cpu_chain.sh"),
        f"data.train_files={data / 'train.parquet'}",
        f"data.val_files={data / 'test.parquet'}",
        "trainer.total_training_steps=2",
        "trainer.save_freq=1",
        "trainer.test_freq=2",
        "actor_rollout_ref.rollout.engine_kwargs.hf_cpu.known_answers.fraction=1.0",
        env=env,
        cwd=work,
    )
    state, exit_code = local_slurm.wait_job(job_id, timeout_s=2400)
    return job_id, state, exit_code, (work / f"job-{job_id}.out").read_text()


def steps_logged(metrics_file: Path) -> list[int]:
    return [json.loads(line)["step"] for line in metrics_file.read_text().splitlines() if line.strip()]


def test_cpu_chain_selects_extends_and_resumes_a_killed_stage(local_slurm, tmp_path):
    data = tmp_path / "data"
    assert build_data(["--from", "sample", "--out", str(data)]) == 0
    ray_root = local_slurm.root / "ray_cpu"
    ray_root.mkdir()
    env = launch_env(
        local_slurm,
        tmp_path,
        ray_root,
        TRAINER_CMD=f"{sys.executable} {REPO / 'tests' / 'launch' / 'crash_once_trainer.py'}",
        CRASH_ONCE_STAGE=STAGES[1],
        CRASH_ONCE_MARKER=str(tmp_path / "killed_once"),
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
    assert steps_logged(stage1 / "checkpoints" / "metrics.jsonl") == [1, 2]  # real steps of the real trainer
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
    best2 = Path((stage2 / "best_model").read_text().strip())
    assert (best2 / "config.json").is_file()
