"""The real launch script under a real one-node Slurm (conftest.local_slurm), trainer replaced by the CPU stand-in.

Job 1 runs stage dapo_32k to the end, re-scores its two best checkpoints with the validation-only eval_lcb_40k
config and picks the best of those (not the best by in-run score), starts dapo_40k from it and fails there at step
3. Job 2, the same sbatch command, skips dapo_32k, resumes dapo_40k from its step-2 checkpoint in the same wandb
run (as seen by the Ray actor where verl's trainer and wandb run), finishes it and runs the final evaluation
(eval_lcb_80k on every GPU). Ray must be up with every (fake) GPU in both jobs and gone after each.
LAUNCH_TEST_BASH=/path/to/bash runs the jobs under that bash (e.g. a bash 4.4 build, as on RHEL / Rocky 8).
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path

import pytest
from safetensors.torch import load_file

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.integration  # a real Slurm / Ray cluster and the stage chain end to end
STEPS = 6
# The stand-in's validation score peaks at step (STEPS + 1) // 2 = 3 and falls afterwards ...
BEST_STEP = 3
# ... its validation-only score (the re-scoring at 40k) peaks at step 2. The two best by in-run score are steps 3
# and 2 (steps 2 and 4 tie; the earlier wins), so the re-scoring picks step 2.
RESCORE_TOP_K = 2
RESCORED_BEST_STEP = 2
KEEP_LAST = 2
# One node x 2 fake GPUs for the separate-async NousCoder stages: one GPU for each pool.
DAPO_ON_ONE_NODE = (
    "trainer.nnodes=1",
    "trainer.n_gpus_per_node=1",
    "actor_rollout_ref.rollout.nnodes=1",
    "actor_rollout_ref.rollout.n_gpus_per_node=1",
)


NODE_PORTS = (
    "dashboard-agent-listen-port",
    "dashboard-agent-grpc-port",
    "metrics-export-port",
    "runtime-env-agent-port",
)
HEAD_PORTS = ("dashboard-port", "ray-client-server-port")


def port_flags(free_port, names: tuple[str, ...]) -> str:
    """Free ports for Ray's fixed-port services, so the test never collides with another Ray on the host."""
    return " ".join(f"--{name}={free_port()}" for name in names)


def launch_env(local_slurm, work: Path, ray_root: Path, **extra: str) -> dict[str, str]:
    (work / "lcb_test.parquet").touch()
    env = {
        "PATH": local_slurm.path_with_test_bash(f"{Path(sys.executable).parent}:{os.environ['PATH']}"),
        "TRAINER_CMD": f"python {REPO / 'tests' / 'launch' / 'fake_trainer.py'}",
        "OUTPUT_ROOT": str(work / "outputs"),
        "RAY_TMP_ROOT": str(ray_root),
        "RAY_PORT": str(local_slurm.free_port()),
        "RAY_START_ARGS": "--object-store-memory=100000000",
        "RAY_HEAD_START_ARGS": port_flags(local_slurm.free_port, HEAD_PORTS + NODE_PORTS)
        + " --include-dashboard=false",
        # Nodes of the two-node test share this host: the worker's services need ports of their own.
        "RAY_WORKER_START_ARGS": port_flags(local_slurm.free_port, NODE_PORTS),
        "RAY_WAIT_POLL_S": "2",
        "RAY_WAIT_TIMEOUT_S": "240",
        "RAY_STOP_GRACE_S": "20",
        "KEEP_LAST_CHECKPOINTS": str(KEEP_LAST),
        "RESCORE_TOP_K": str(RESCORE_TOP_K),
        "WATCH_POLL_S": "0.5",
        "WANDB_API_KEY": "test-key-not-used",  # turns the wandb logger on; the stand-in never starts wandb
        "PRUNE_EVERY_S": "1",
        "FAKE_TRAINER_STEPS": str(STEPS),
        "FAKE_TRAINER_STEP_SECONDS": "0.2",
        "EVAL_DATA": str(work / "lcb_test.parquet"),
    }
    env.update(extra)
    return env


def trainer_calls(run_subdir: Path) -> list[dict]:
    """The stand-in's records in a trainer.default_local_dir (a stage's checkpoints/, a re-scoring or eval run)."""
    path = run_subdir / "fake_trainer_calls.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.is_file() else []


def job_processes(local_slurm, job_id: int) -> list[int]:
    """Processes of this cluster's job `job_id` (another Slurm on the host numbers its jobs the same way)."""
    return local_slurm.processes_mentioning(f"SLURM_JOB_ID={job_id}\0", str(local_slurm.root))


def sbatch_chain(local_slurm, work: Path, env: dict[str, str], layout: tuple[str, ...] = DAPO_ON_ONE_NODE) -> int:
    """sbatch the DAPO chain at 1 node x 2 fake GPUs, overrides on the command line; returns the job id."""
    return local_slurm.sbatch(
        "--nodes=1",
        f"--nodelist={local_slurm.node_name}",
        f"--gpus-per-node={local_slurm.gpus}",
        "--time=15",
        f"--output={work}/job-%j.out",
        str(REPO / "launch" / "run_dapo_32k_to_40k.sh"),
        *layout,
        env=env,
        cwd=work,
    )


def submit(local_slurm, work: Path, env: dict[str, str]) -> tuple[int, str, str, str]:
    """sbatch_chain and wait; returns (job id, state, exit code, output)."""
    job_id = sbatch_chain(local_slurm, work, env)
    state, exit_code = local_slurm.wait_job(job_id)
    return job_id, state, exit_code, (work / f"job-{job_id}.out").read_text()


def assert_ray_lifecycle(local_slurm, output: str, job_id: int, ray_root: Path) -> None:
    node = local_slurm.node_name
    assert re.search(rf"Ray cluster ready at \S+: 1 node\(s\) \({node}\), 2 GPU\(s\)", output), output
    assert f"node {node}: Ray stopped" in output, output
    assert f"Ray stopped on {node}" in output, output
    assert local_slurm.processes_mentioning(str(ray_root)) == [], "Ray processes left after the job"
    assert job_processes(local_slurm, job_id) == [], f"processes of job {job_id} left after it ended"


def test_chain_resumes_failed_stage_two_and_skips_stage_one(local_slurm, tmp_path):
    ray_root = local_slurm.root / "ray"
    ray_root.mkdir()
    run_dir = tmp_path / "outputs" / "dapo_32k_to_40k"
    stage1, stage2 = run_dir / "dapo_32k", run_dir / "dapo_40k"

    job1, state, exit_code, output = submit(
        local_slurm, tmp_path, launch_env(local_slurm, tmp_path, ray_root, FAKE_TRAINER_FAIL_AT="dapo_40k:3")
    )
    assert (state, exit_code) == ("FAILED", "1:0"), output
    assert_ray_lifecycle(local_slurm, output, job1, ray_root)
    assert "WARNING: offline filter: NONE" in output
    assert f"; bash {local_slurm.test_bash_version()}" in output  # the bash under test ran the job
    # Stage 1 ran from scratch on the cluster, in the Ray actor verl's run_ppo started, with the wandb logger on.
    (call1,) = trainer_calls(stage1 / "checkpoints")
    assert (
        call1["config_name"] == "dapo_32k"
        and call1["resumed_from"] == 0
        and call1["steps"] == list(range(1, STEPS + 1))
    )
    assert call1["ray"]["GPU"] == 2 and call1["ray"]["alive_nodes"] == 1
    assert call1["model"] == "Qwen/Qwen3-14B" and "actor_rollout_ref.model.path" not in call1["overrides"]
    assert call1["logger"] == ["console", "file", "wandb"]
    # Its two best checkpoints by in-run score were merged and re-scored with eval_lcb_40k on every GPU; the
    # re-scoring's best (step 2) starts stage 2, not the in-run best (step 3).
    rescore = stage1 / "rescore"
    rescored = {
        step: trainer_calls(rescore / f"global_step_{step}" / "eval") for step in (BEST_STEP, RESCORED_BEST_STEP)
    }
    for step, (call,) in rescored.items():
        assert call["config_name"] == "eval_lcb_40k" and call["model"] == str(rescore / f"global_step_{step}" / "model")
        assert call["overrides"]["trainer.nnodes"] == "1" and call["overrides"]["trainer.n_gpus_per_node"] == "2"
        assert call["overrides"]["data.val_files"] == str(tmp_path / "lcb_test.parquet")
    assert rescored[RESCORED_BEST_STEP][0]["score"] > rescored[BEST_STEP][0]["score"]
    best1 = Path((stage1 / "best_model").read_text().strip())
    assert best1 == rescore / f"global_step_{RESCORED_BEST_STEP}" / "model"
    # The stand-in fills every weight of step N with N: the merged model is that step's checkpoint.
    assert float(load_file(best1 / "model.safetensors")["model.norm.weight"][0]) == RESCORED_BEST_STEP
    assert not (rescore / f"global_step_{BEST_STEP}" / "model").exists(), "the candidate not picked was kept"
    selection = json.loads((rescore / "selection.json").read_text())
    assert selection["picked"]["step"] == RESCORED_BEST_STEP
    assert f"rescore: global_step_{RESCORED_BEST_STEP}: in-run 0.4500, re-scored 0.6000  <- picked" in output
    # Stage 2 started from that model with the 40k config, then failed at step 3 (step 2 saved).
    (call2,) = trainer_calls(stage2 / "checkpoints")
    assert call2["config_name"] == "dapo_40k" and call2["model"] == str(best1)
    assert call2["outcome"] == "failed at step 3" and call2["steps"] == [1, 2]
    assert call2["overrides"]["trainer.nnodes"] == "1" and call2["overrides"]["actor_rollout_ref.rollout.nnodes"] == "1"
    assert (stage2 / "checkpoints" / "latest_checkpointed_iteration.txt").read_text() == "2"
    assert not (stage2 / "best_model").exists() and not (run_dir / "final_eval").exists()
    assert "stage dapo_40k: trainer failed (exit 1); resubmit the same command" in output
    # The wandb run id reached the process that logs (the Ray actor), not only the launcher's shell.
    wandb_stage2 = (stage2 / "checkpoints" / "wandb_run_id").read_text().strip()
    assert call2["wandb_run_id"] == wandb_stage2 and call2["wandb_resume"] == "allow"
    assert call1["wandb_run_id"] != wandb_stage2

    job2, state, exit_code, output = submit(local_slurm, tmp_path, launch_env(local_slurm, tmp_path, ray_root))
    assert (state, exit_code) == ("COMPLETED", "0:0"), output
    assert_ray_lifecycle(local_slurm, output, job2, ray_root)
    assert f"stage dapo_32k: finished earlier, best model {best1}; skipping" in output
    assert "stage dapo_40k: resuming from global_step_2" in output
    assert len(trainer_calls(stage1 / "checkpoints")) == 1, "stage 1 ran again"
    resumed = trainer_calls(stage2 / "checkpoints")[-1]
    assert resumed["config_name"] == "dapo_40k" and resumed["resumed_from"] == 2
    assert resumed["steps"] == [3, 4, 5, 6] and resumed["outcome"] == "finished"
    assert resumed["wandb_run_id"] == wandb_stage2, "the resubmission started a new wandb run"
    assert resumed["model"] == str(best1)
    best2 = Path((stage2 / "best_model").read_text().strip())
    assert best2 == stage2 / "checkpoints" / "best_hf" / f"global_step_{BEST_STEP}"
    # The final evaluation: eval_lcb_80k with the best 40k model on every GPU of the job, its score in the log.
    (evaluation,) = trainer_calls(run_dir / "final_eval")
    assert evaluation["config_name"] == "eval_lcb_80k" and evaluation["model"] == str(best2)
    assert (
        evaluation["overrides"]["trainer.nnodes"] == "1" and evaluation["overrides"]["trainer.n_gpus_per_node"] == "2"
    )
    assert evaluation["overrides"]["trainer.validation_data_dir"] == str(run_dir / "final_eval" / "generations")
    score = (run_dir / "final_eval" / "score").read_text().strip()
    assert score == f"val-core/livecodebench/acc/mean@1 = {evaluation['score']:.4f}"
    assert f"evaluation finished: {score}" in output and (run_dir / "final_eval" / "DONE").is_file()
    # A third submission finds the run complete and leaves before starting Ray.
    _, state, _, output = submit(local_slurm, tmp_path, launch_env(local_slurm, tmp_path, ray_root))
    assert state == "COMPLETED" and "is complete already: nothing to do" in output and "starting Ray" not in output
    # Retention: the best-scoring checkpoints (the re-scored candidates in stage 1) and the newest KEEP_LAST survive.
    newest = {STEPS - k for k in range(KEEP_LAST)}
    for stage_dir, best in ((stage1, {BEST_STEP, RESCORED_BEST_STEP}), (stage2, {BEST_STEP})):
        steps = {int(p.name.removeprefix("global_step_")) for p in (stage_dir / "checkpoints").glob("global_step_*")}
        assert steps == newest | best, (stage_dir, steps)


def test_a_layout_that_does_not_fit_the_allocation_is_rejected_before_ray_starts(local_slurm, tmp_path):
    ray_root = local_slurm.root / "ray_layout"
    ray_root.mkdir()
    # dapo_32k as configured wants 2 + 4 nodes x 8 GPUs; the job has 1 node x 2 GPUs.
    job_id = sbatch_chain(local_slurm, tmp_path, launch_env(local_slurm, tmp_path, ray_root), layout=())
    state, _ = local_slurm.wait_job(job_id)
    output = (tmp_path / f"job-{job_id}.out").read_text()
    assert state == "FAILED", output
    assert (
        "dapo_32k places trainer.nnodes=2 x trainer.n_gpus_per_node=8 + actor_rollout_ref.rollout.nnodes=4 x "
        "actor_rollout_ref.rollout.n_gpus_per_node=8 = 48 GPUs, but the job has 1 node(s) x 2 GPU(s) = 2." in output
    )
    assert (
        "trainer.nnodes=1 actor_rollout_ref.rollout.nnodes=1 trainer.n_gpus_per_node=1 "
        "actor_rollout_ref.rollout.n_gpus_per_node=1; or submit with sbatch --nodes=6 --gpus-per-node=8" in output
    )
    assert "the configs do not fit this allocation" in output and "starting Ray" not in output


def test_cancelled_job_stops_the_trainer_and_ray(local_slurm, tmp_path):
    ray_root = local_slurm.root / "ray_cancel"
    ray_root.mkdir()
    job_id = sbatch_chain(
        local_slurm, tmp_path, launch_env(local_slurm, tmp_path, ray_root, FAKE_TRAINER_STEP_SECONDS="120")
    )
    output_file = tmp_path / f"job-{job_id}.out"
    deadline = time.monotonic() + 300
    while "fake_trainer: config dapo_32k" not in (output_file.read_text() if output_file.exists() else ""):
        assert time.monotonic() < deadline, "the trainer did not start within 300 s"
        assert local_slurm.job_field(job_id, "JobState") in ("PENDING", "RUNNING"), output_file.read_text()
        time.sleep(1)
    local_slurm.run("scancel", str(job_id))
    state, _ = local_slurm.wait_job(job_id)
    output = output_file.read_text()
    assert state == "CANCELLED", output
    assert "exit status 143" in output, "the EXIT trap did not run on SIGTERM"
    assert local_slurm.processes_mentioning(str(ray_root)) == [], "Ray processes left after scancel"
    assert job_processes(local_slurm, job_id) == [], "trainer or other job processes left after scancel"


def test_two_node_job_joins_both_nodes_and_stops_ray_on_each(local_slurm, tmp_path):
    """Head on the batch host, a worker joining it through srun on the other node; both stopped at the end."""
    ray_root = local_slurm.root / "ray_2n"
    ray_root.mkdir()
    env = launch_env(
        local_slurm,
        tmp_path,
        ray_root,
        SELECT_ARGS="--no-merge",
        RUN_EVAL="0",
        FAKE_TRAINER_STEPS="2",
    )
    job_id, state, exit_code, output = local_slurm.run_job(
        "--nodes=2",
        f"--gpus-per-node={local_slurm.gpus}",
        "--time=15",
        str(REPO / "launch" / "run_microcoder_4k.sh"),
        "data.train_files=data/deepcoder_mix/train.parquet",  # required by microcoder_4k; the layout is derived
        env=env,
        cwd=tmp_path,
    )
    assert (state, exit_code) == ("COMPLETED", "0:0"), output
    head, worker = local_slurm.node_names
    assert f"sandbox isolation complete on every node ({head} {worker})" in output, output
    assert re.search(rf"Ray cluster ready at \S+: 2 node\(s\) \({head} {worker}\), 4 GPU\(s\)", output), output
    (call,) = trainer_calls(tmp_path / "outputs" / "microcoder_4k" / "microcoder_4k" / "checkpoints")
    assert call["ray"]["GPU"] == 4 and call["ray"]["alive_nodes"] == 2
    assert call["overrides"]["trainer.nnodes"] == "2" and call["overrides"]["trainer.n_gpus_per_node"] == "2"
    assert f"node {head}: Ray stopped" in output and f"node {worker}: Ray stopped" in output
    assert f"Ray stopped on {head} {worker}" in output
    assert local_slurm.processes_mentioning(str(ray_root)) == [], "Ray processes left after the job"
    assert job_processes(local_slurm, job_id) == [], f"processes of job {job_id} left after it ended"


def test_a_node_whose_ray_cannot_start_fails_the_job_at_once_naming_it(local_slurm, tmp_path):
    ray_root = local_slurm.root / "ray_bad"
    ray_root.mkdir()
    # A head-only flag on a worker: `ray start` on launchnode2 exits with an error at once.
    env = launch_env(local_slurm, tmp_path, ray_root, RAY_WORKER_START_ARGS="--include-dashboard=false")
    job_id = local_slurm.sbatch(
        "--nodes=2",
        f"--gpus-per-node={local_slurm.gpus}",
        "--time=15",
        f"--output={tmp_path}/job-%j.out",
        str(REPO / "launch" / "run_microcoder_4k.sh"),
        env=env,
        cwd=tmp_path,
    )
    state, _ = local_slurm.wait_job(job_id)
    output = (tmp_path / f"job-{job_id}.out").read_text()
    head, worker = local_slurm.node_names
    assert state == "FAILED", output
    assert f"ERROR: Ray on node {worker} exited while the cluster was starting; see " in output
    assert f"node {head}: Ray stopped" in output and "stage microcoder_4k" not in output
    assert local_slurm.processes_mentioning(str(ray_root)) == [], "Ray processes left after the failed start"


def test_a_node_whose_sandbox_is_incomplete_fails_the_job_before_ray_naming_it(local_slurm, tmp_path):
    """The real probe on both nodes through srun; on the second one, as on a node that forbids namespaces."""
    ray_root = local_slurm.root / "ray_sandbox"
    ray_root.mkdir()
    probe = tmp_path / "probe_like_a_node_without_namespaces.sh"
    probe.write_text(
        "#!/usr/bin/env bash\n"
        f'[[ "$SLURMD_NODENAME" == {local_slurm.node_names[1]} ]] && export NOUSCODER_SANDBOX_DISABLE=namespaces\n'
        "exec python -m reward_fns.sandbox\n"
    )
    env = launch_env(local_slurm, tmp_path, ray_root, SANDBOX_CHECK_CMD=f"bash {probe}")
    job_id = local_slurm.sbatch(
        "--nodes=2",
        f"--gpus-per-node={local_slurm.gpus}",
        "--time=15",
        f"--output={tmp_path}/job-%j.out",
        str(REPO / "launch" / "run_microcoder_4k.sh"),
        env=env,
        cwd=tmp_path,
    )
    state, _ = local_slurm.wait_job(job_id)
    output = (tmp_path / f"job-{job_id}.out").read_text()
    head, worker = local_slurm.node_names
    assert state == "FAILED", output
    assert f"ERROR: sandbox isolation incomplete on node(s) {worker}: " in output, output
    assert f"{worker} (" in output and "[missing] network_namespace" in output, output
    assert f"{head} (" not in output.split("sandbox isolation incomplete", 1)[1], output
    assert "starting Ray" not in output and "stage microcoder_4k" not in output, output
    assert local_slurm.processes_mentioning(str(ray_root)) == [], "Ray processes left"
