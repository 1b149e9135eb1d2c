"""The real launch script under a real one-node Slurm (conftest.local_slurm), trainer replaced by the CPU stand-in.

Submitted with two queued retries (launch/submit_with_retries.sh). Job 1 builds the offline filter (stage 0: the
validation-only offline_filter config's graded generations of the bundled sample's training problems, then
launch/offline_filter.py and data_prep.filter_by_pass_rate), runs stage dapo_32k on the filtered data to the end,
re-scores its two best checkpoints with the validation-only eval_lcb_40k config and picks the best of those (not the
best by in-run score), drops the optimizer shards of the other checkpoints, starts dapo_40k from it and hangs there
at step 3: the progress watchdog stops it within its bound, after dumping the hung processes' stacks. Job 2, the
first retry, starts because job 1 failed: it reuses the filter, skips dapo_32k, resumes dapo_40k from its step-2
checkpoint in the same wandb run (as seen by the Ray actor where verl's trainer and wandb run) without a validation
before training, finishes it and runs the final evaluation (eval_lcb_80k on every GPU); Slurm then cancels the
second retry. Ray must be up with every (fake) GPU in both jobs and gone after each.
LAUNCH_TEST_BASH=/path/to/bash runs the jobs under that bash (e.g. a bash 4.4 build, as on RHEL / Rocky 8).
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from safetensors.torch import load_file

from data_prep.build_benchmarks import main as build_benchmarks
from recipe.nouscoder.training.online_filter import STATE_FILE_NAME, load_solved_problems

REPO = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.integration, pytest.mark.long(2)]  # a real Slurm / Ray cluster and the stage chain end to end
STEPS = 6
# The stand-in's validation score peaks at step (STEPS + 1) // 2 = 3 and falls afterwards ...
BEST_STEP = 3
# ... its validation-only score (the re-scoring at 40k) peaks at step 2. The two best by in-run score are steps 3
# and 2 (steps 2 and 4 tie; the earlier wins), so the re-scoring picks step 2.
RESCORE_TOP_K = 2
RESCORED_BEST_STEP = 2
KEEP_LAST = 2
# One node x 2 fake GPUs for the separate-async NousCoder stages: one GPU for each pool, in a shape verl accepts there
# (the preflight checks it: one GPU holds no Ulysses group of 4 nor a 2-GPU vLLM replica, so one micro-batch holds
# the longest sequence).
ONE_GPU_SHAPE = (
    "actor_rollout_ref.actor.ulysses_sequence_parallel_size=1",
    "actor_rollout_ref.actor.ppo_max_token_len_per_gpu=40960",
    "actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu=40960",
    "actor_rollout_ref.rollout.tensor_model_parallel_size=1",
)
DAPO_ON_ONE_NODE = (
    "trainer.nnodes=1",
    "trainer.n_gpus_per_node=1",
    "actor_rollout_ref.rollout.nnodes=1",
    "actor_rollout_ref.rollout.n_gpus_per_node=1",
    *ONE_GPU_SHAPE,
)
# The jobs' fake GPUs hold the planner's facts of a tiny model, not Qwen3-14B's (whose memory no fake GPU fits).
TINY_MODEL_CONFIG = REPO / "tests" / "launch" / "data" / "tiny_qwen3" / "config.json"


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


def data_overrides(data: Path) -> tuple[str, str]:
    """Every stage's data: the bundled sample's training problems and its LiveCodeBench test split."""
    return f"data.train_files={data / 'train.parquet'}", f"data.val_files={data / 'test.parquet'}"


def launch_env(local_slurm, work: Path, ray_root: Path, hub: Path, data: Path, **extra: str) -> dict[str, str]:
    """The launcher's environment for the tests. The node check of the bill of materials is off: the dapo and
    microcoder configs need vLLM, cupy and flash-attn, which this CPU machine lacks (the check runs in
    test_a_node_without_what_the_configs_import_fails_the_job_before_ray_naming_it); so are the site check's probes
    that need a CUDA torch and cupy, and its NCCL all-reduce (SITE_CHECK_SKIP; the CPU mode's jobs all-reduce over gloo);
    so is stage 0 (OFFLINE_FILTER=none), which the chain test turns on. The nodes' driver and GPUs are
    stand_ins/nvidia-smi's, the model is in the stand-in hub cache (HF_HOME), and neither the hub nor wandb answers (a
    closed local port): an offline cluster. The preflight plans for a tiny model (MODEL_CONFIG) on the fake GPUs."""
    env = {
        "PATH": local_slurm.path_with_test_bash(
            f"{local_slurm.stand_ins}:{Path(sys.executable).parent}:{os.environ['PATH']}"
        ),
        "TRAINER_CMD": f"python {REPO / 'tests' / 'launch' / 'fake_trainer.py'}",
        "OUTPUT_ROOT": str(work / "outputs"),
        "RAY_TMP_ROOT": str(ray_root),
        "RAY_PORT": str(local_slurm.free_port()),
        "RAY_START_ARGS": "--object-store-memory=100000000",
        # no idle workers prestarted for each driver (recipe/nouscoder/cpu: size_local_ray_cluster says why)
        "RAY_prestart_worker_first_driver": "0",
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
        "EVAL_DATA": str(data / "test.parquet"),
        "OFFLINE_FILTER": "none",
        "BOM_CHECK": "0",
        "MODEL_CONFIG": str(TINY_MODEL_CONFIG),
        "SITE_CHECK_SKIP": "torch_cuda nccl collective",
        "SAVE_BEFORE_LIMIT_S": "60",  # the stand-in's steps take a fraction of a second, the plan's 14B steps minutes
        "HF_HOME": str(hub),
        "HF_ENDPOINT": f"http://127.0.0.1:{local_slurm.free_port()}",
        "WANDB_BASE_URL": f"http://127.0.0.1:{local_slurm.free_port()}",
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


def sbatch_chain(
    local_slurm, work: Path, env: dict[str, str], data: Path, layout: tuple[str, ...] = DAPO_ON_ONE_NODE
) -> int:
    """sbatch the DAPO chain at 1 node x 2 fake GPUs on `data`, overrides on the command line; returns the job id."""
    return local_slurm.sbatch(
        "--nodes=1",
        f"--nodelist={local_slurm.node_name}",
        f"--gpus-per-node={local_slurm.gpus}",
        "--time=15",
        f"--output={work}/job-%j.out",
        str(REPO / "launch" / "run_dapo_32k_to_40k.sh"),
        *layout,
        *data_overrides(data),
        env=env,
        cwd=work,
    )


def submit(local_slurm, work: Path, env: dict[str, str], data: Path) -> tuple[int, str, str, str]:
    """sbatch_chain and wait; returns (job id, state, exit code, output)."""
    job_id = sbatch_chain(local_slurm, work, env, data)
    state, exit_code = local_slurm.wait_job(job_id)
    return job_id, state, exit_code, (work / f"job-{job_id}.out").read_text()


def assert_ray_lifecycle(local_slurm, output: str, job_id: int, ray_root: Path | None) -> None:
    """Ray up with every GPU, then stopped; no process of the job left (nor under `ray_root`, unless None: a queued
    retry may be using it already)."""
    node = local_slurm.node_name
    assert re.search(rf"Ray cluster ready at \S+: 1 node\(s\) \({node}\), 2 GPU\(s\)", output), output
    assert f"node {node}: Ray stopped" in output, output
    assert f"Ray stopped on {node}" in output, output
    if ray_root is not None:
        assert local_slurm.processes_mentioning(str(ray_root)) == [], "Ray processes left after the job"
    assert job_processes(local_slurm, job_id) == [], f"processes of job {job_id} left after it ended"


def submit_with_retries(local_slurm, work: Path, env: dict[str, str], retries: int, *overrides: str) -> list[int]:
    """launch/submit_with_retries.sh RETRIES with the DAPO chain at 1 node x 2 fake GPUs; returns the job ids."""
    output = local_slurm.run(
        "bash",
        str(REPO / "launch" / "submit_with_retries.sh"),
        str(retries),
        "--nodes=1",
        f"--nodelist={local_slurm.node_name}",
        f"--gpus-per-node={local_slurm.gpus}",
        "--time=15",
        f"--output={work}/job-%j.out",
        str(REPO / "launch" / "run_dapo_32k_to_40k.sh"),
        *DAPO_ON_ONE_NODE,
        *overrides,
        env={**local_slurm.env, **env},
        cwd=work,
    ).stdout
    return [int(line) for line in output.split()]


def optimizer_shards(checkpoint_dir: Path) -> dict[int, bool]:
    """{step: whether global_step_N still holds its optimizer shards} of a stage's checkpoint directory."""
    return {
        int(path.name.removeprefix("global_step_")): any((path / "actor").glob("optim_world_size_*_rank_*.pt"))
        for path in checkpoint_dir.glob("global_step_*")
    }


def test_chain_filters_stalls_in_stage_two_and_its_retry_resumes(local_slurm, tmp_path, sample_data, stand_in_hub):
    ray_root = local_slurm.root / "ray"
    ray_root.mkdir()
    run_dir = tmp_path / "outputs" / "dapo_32k_to_40k"
    stage1, stage2 = run_dir / "dapo_32k", run_dir / "dapo_40k"
    train = sample_data / "train.parquet"
    env = launch_env(
        local_slurm,
        tmp_path,
        ray_root,
        stand_in_hub,
        sample_data,
        FAKE_TRAINER_STALL_AT="dapo_40k:3",
        FAKE_TRAINER_STALL_MARKER=str(tmp_path / "stalled_once"),
        STALL_FIRST_STEP_S="300",
        STALL_MIN_S="10",
        STALL_VALIDATION_S="0",  # every step validates (test_freq 1), in no time
        STALL_POLL_S="1",
        DIAGNOSTICS_TIMEOUT_S="20",
    )
    del env["OFFLINE_FILTER"]  # the wrapper's default for the 32k stage: stage 0 builds the filter
    # The final evaluation on two benchmarks: the sample's LiveCodeBench split and its HumanEval+ rows.
    assert (
        build_benchmarks(["--from", "sample", "--benchmarks", "humanevalplus", "--out", str(tmp_path / "bench")]) == 0
    )
    eval_data = {"lcb_v6": sample_data / "test.parquet", "humanevalplus": tmp_path / "bench" / "humanevalplus.parquet"}
    env["EVAL_BENCHMARKS"] = " ".join(f"{name}={path}" for name, path in eval_data.items())
    # The stages' length and cadence as the stand-in runs them (it saves and validates every step): the watchdog
    # leaves a run once its last step is logged; the preflight wants RESCORE_TOP_K validated checkpoints.
    overrides = (
        *data_overrides(sample_data),
        f"trainer.total_training_steps={STEPS}",
        "trainer.save_freq=1",
        "trainer.test_freq=1",
    )
    job1, job2, job3 = submit_with_retries(local_slurm, tmp_path, env, 2, *overrides)

    state, exit_code = local_slurm.wait_job(job1, timeout_s=1200)
    output = (tmp_path / f"job-{job1}.out").read_text()
    assert (state, exit_code) == ("FAILED", "1:0"), output
    assert_ray_lifecycle(local_slurm, output, job1, None)  # its retry may have started Ray under ray_root already
    assert f"; bash {local_slurm.test_bash_version()}" in output  # the bash under test ran the job
    # Stage 0: 8 graded generations of the first stage's model per training problem, on every GPU; problems
    # 0, 3, 6, ... (10 of 28) always pass (the stand-in's verdicts) and leave the training data.
    (filter_run,) = trainer_calls(run_dir / "offline_filter" / "run")
    assert filter_run["config_name"] == "offline_filter" and filter_run["model"] == "Qwen/Qwen3-14B"
    # it generates for the training problems with their tests in extra_info (offline_filter.py prepare)
    problems = run_dir / "offline_filter" / "problems.parquet"
    assert filter_run["overrides"]["data.val_files"] == str(problems) and filter_run["generations"] == 28 * 8
    assert filter_run["ray"]["GPU"] == 2 and filter_run["overrides"]["trainer.n_gpus_per_node"] == "2"
    filtered = run_dir / "offline_filter" / "train_filtered.parquet"
    all_ids = [row["problem_id"] for row in pq.read_table(train).column("extra_info").to_pylist()]
    kept = [row["problem_id"] for row in pq.read_table(filtered).column("extra_info").to_pylist()]
    assert kept == [problem for index, problem in enumerate(all_ids) if index % 3], "always-solved problems stayed"
    assert "filter_by_pass_rate: kept 18 of 28 problems" in output
    # Stage 1 ran from scratch on the filtered data, in the Ray actor verl's run_ppo started, with the wandb logger.
    (call1,) = trainer_calls(stage1 / "checkpoints")
    assert (
        call1["config_name"] == "dapo_32k"
        and call1["resumed_from"] == 0
        and call1["steps"] == list(range(1, STEPS + 1))
    )
    assert call1["overrides"]["data.train_files"] == str(filtered)
    assert call1["ray"]["GPU"] == 2 and call1["ray"]["alive_nodes"] == 1
    assert call1["model"] == "Qwen/Qwen3-14B" and "actor_rollout_ref.model.path" not in call1["overrides"]
    assert call1["logger"] == ["console", "file", "wandb"]
    assert "trainer.val_before_train" not in call1["overrides"]  # the first stage scores its base model
    # Its two best checkpoints by in-run score were merged and re-scored with eval_lcb_40k on every GPU; the
    # re-scoring's best (step 2) starts stage 2, not the in-run best (step 3).
    rescore = stage1 / "rescore"
    rescored = {
        step: trainer_calls(rescore / f"global_step_{step}" / "eval") for step in (BEST_STEP, RESCORED_BEST_STEP)
    }
    for step, (call,) in rescored.items():
        assert call["config_name"] == "eval_lcb_40k" and call["model"] == str(rescore / f"global_step_{step}" / "model")
        assert call["overrides"]["trainer.nnodes"] == "1" and call["overrides"]["trainer.n_gpus_per_node"] == "2"
        assert call["overrides"]["data.val_files"] == str(sample_data / "test.parquet")
    assert rescored[RESCORED_BEST_STEP][0]["score"] > rescored[BEST_STEP][0]["score"]
    best1 = Path((stage1 / "best_model").read_text().strip())
    assert best1 == rescore / f"global_step_{RESCORED_BEST_STEP}" / "model"
    # The stand-in fills every weight of step N with N: the merged model is that step's checkpoint.
    assert float(load_file(best1 / "model.safetensors")["model.norm.weight"][0]) == RESCORED_BEST_STEP
    assert not (rescore / f"global_step_{BEST_STEP}" / "model").exists(), "the candidate not picked was kept"
    selection = json.loads((rescore / "selection.json").read_text())
    assert selection["picked"]["step"] == RESCORED_BEST_STEP
    assert f"rescore: global_step_{RESCORED_BEST_STEP}: in-run 0.4500, re-scored 0.6000  <- picked" in output
    # Once the model is chosen, only the selected checkpoint keeps its optimizer shards.
    assert optimizer_shards(stage1 / "checkpoints") == {step: step == RESCORED_BEST_STEP for step in (2, 3, 5, 6)}
    # Stage 2 started from that model with the 40k config, without validating it again, then hung at step 3 (a
    # killed stand-in leaves no record: its command line is in the job's output).
    command2 = next(line for line in output.splitlines() if "--config-name dapo_40k " in line)
    assert f"actor_rollout_ref.model.path={best1}" in command2 and "trainer.val_before_train=false" in command2
    # It left out what the 32k stage had solved up to the selected checkpoint (the stand-in solves one problem a
    # step); its own checkpoints hand both sets on, across the retry's resume (checked below, at its last step).
    handed = stage1 / "solved_problems.json"
    assert f"nouscoder.online_filter.earlier_stage_solved={handed}" in command2
    solved_32k = {f"dapo_32k-step{step}" for step in range(1, RESCORED_BEST_STEP + 1)}
    assert load_solved_problems(handed) == solved_32k
    assert trainer_calls(stage2 / "checkpoints") == []
    assert (stage2 / "checkpoints" / "latest_checkpointed_iteration.txt").read_text() == "2"
    assert not (stage2 / "best_model").exists() and not (run_dir / "final_eval").exists()
    # The watchdog stopped it: no step 3 within max(STALL_MIN_S, 3 x the longest step) = 10 s, detected within
    # its 1 s poll and run_watched's 0.5 s one.
    stall = re.search(
        r"ERROR: progress watchdog: no new step in (\S+) for (\d+)s \(last step 2\); the bound was (\d+)s = "
        r"max\(STALL_MIN_S=10s, 3 x the longest of the last \d step\(s\), \d+s\)",
        output,
    )
    assert stall, output
    assert stall.group(1) == str(stage2 / "checkpoints" / "metrics.jsonl")
    waited, bound = int(stall.group(2)), int(stall.group(3))
    assert bound == 10 and bound <= waited <= bound + 3  # (whole seconds: 10.4 s waited prints as 10)
    assert "stage dapo_40k: stopped by the progress watchdog" in output
    diagnostics = run_dir / "logs" / str(job1) / "stall_dapo_40k"
    # py-spy's stack of the hung actor names where it hangs; the log tails hold the stage's log
    assert "stall_once" in (diagnostics / f"node_{local_slurm.node_name}.txt").read_text()
    assert "fake_trainer: stalling at step 3" in (diagnostics / "log_tails.txt").read_text()
    assert (diagnostics / "ray_status.txt").is_file()
    wandb_stage2 = (stage2 / "checkpoints" / "wandb_run_id").read_text().strip()
    assert f"(wandb run {wandb_stage2})" in command2 and call1["wandb_run_id"] != wandb_stage2

    # The first retry started because job 1 failed, and resumed the run.
    state, exit_code = local_slurm.wait_job(job2, timeout_s=1200)
    output = (tmp_path / f"job-{job2}.out").read_text()
    assert (state, exit_code) == ("COMPLETED", "0:0"), output
    assert_ray_lifecycle(local_slurm, output, job2, ray_root)
    assert "offline filter: built earlier" in output and len(trainer_calls(run_dir / "offline_filter" / "run")) == 1
    assert f"stage dapo_32k: finished earlier, best model {best1}; skipping" in output
    assert "stage dapo_40k: resuming from global_step_2 (no validation before training)" in output
    assert len(trainer_calls(stage1 / "checkpoints")) == 1, "stage 1 ran again"
    resumed = trainer_calls(stage2 / "checkpoints")[-1]
    assert resumed["config_name"] == "dapo_40k" and resumed["resumed_from"] == 2
    assert resumed["steps"] == [3, 4, 5, 6] and resumed["outcome"] == "finished"
    assert resumed["overrides"]["trainer.val_before_train"] == "false"
    assert resumed["overrides"]["nouscoder.online_filter.earlier_stage_solved"] == str(handed)
    last_state = stage2 / "checkpoints" / f"global_step_{STEPS}" / STATE_FILE_NAME
    assert load_solved_problems(last_state) == solved_32k | {f"dapo_40k-step{step}" for step in range(1, STEPS + 1)}
    assert (
        resumed["overrides"]["trainer.nnodes"] == "1"
        and resumed["overrides"]["actor_rollout_ref.rollout.nnodes"] == "1"
    )
    # The wandb run id reached the process that logs (the Ray actor), not only the launcher's shell, and the retry
    # continues the stalled job's run.
    assert resumed["wandb_run_id"] == wandb_stage2, "the resubmission started a new wandb run"
    assert resumed["wandb_resume"] == "allow"
    assert resumed["model"] == str(best1) and resumed["overrides"]["data.train_files"] == str(filtered)
    best2 = Path((stage2 / "best_model").read_text().strip())
    assert best2 == stage2 / "checkpoints" / "best_hf" / f"global_step_{BEST_STEP}"
    # The final evaluation: eval_lcb_80k with the best 40k model on every GPU of the job, one validation run per
    # benchmark of EVAL_BENCHMARKS (their scores in the log), then the pass@k report of their generation dumps.
    for name, parquet in eval_data.items():
        (evaluation,) = trainer_calls(run_dir / "final_eval" / name)
        assert evaluation["config_name"] == "eval_lcb_80k" and evaluation["model"] == str(best2)
        assert (
            evaluation["overrides"]["trainer.nnodes"] == "1"
            and evaluation["overrides"]["trainer.n_gpus_per_node"] == "2"
        )
        assert evaluation["overrides"]["data.val_files"] == str(parquet)
        assert evaluation["overrides"]["trainer.validation_data_dir"] == str(
            run_dir / "final_eval" / name / "generations"
        )
        score = (run_dir / "final_eval" / name / "score").read_text().strip()
        assert score == f"val-core/livecodebench/acc/mean@1 = {evaluation['score']:.4f}"
        assert f"evaluation final_eval_{name} finished: {score}" in output
    assert "evaluation finished: " in output and (run_dir / "final_eval" / "DONE").is_file()
    report = run_dir / "final_eval" / "report"
    results = json.loads((report / "results.json").read_text())["benchmarks"]
    # the stand-in dumps val_kwargs.n = 8 responses per problem; they hold no program: all no_code
    assert {name: (entry["problems"], entry["samples_per_problem"]["min"]) for name, entry in results.items()} == {
        "lcb_v6": (16, 8),
        "humanevalplus": (3, 8),
    }
    assert results["lcb_v6"]["context"] == "81920 (YaRN x2.5)" and results["lcb_v6"]["sampling"].startswith(
        "T 0.6, top-p 0.95"
    )
    assert "| lcb_v6 | 16 | 8 | 81920 (YaRN x2.5) |" in (report / "report.md").read_text()
    assert (report / "humanevalplus" / "pass_at_k.png").is_file()
    # The second retry can no longer start (job 2 succeeded): Slurm cancelled it without running it.
    state, _ = local_slurm.wait_job(job3)
    assert (state, local_slurm.job_field(job3, "Reason")) == ("CANCELLED", "DependencyNeverSatisfied")
    assert not (tmp_path / f"job-{job3}.out").exists()
    # A third submission finds the run complete and leaves before starting Ray.
    env = launch_env(local_slurm, tmp_path, ray_root, stand_in_hub, sample_data)
    _, state, _, output = submit(local_slurm, tmp_path, env, sample_data)
    assert state == "COMPLETED" and "is complete already: nothing to do" in output and "starting Ray" not in output
    # Retention: the best-scoring checkpoints (the re-scored candidates in stage 1) and the newest KEEP_LAST survive;
    # of stage 2's, only the selected one keeps its optimizer shards.
    newest = {STEPS - k for k in range(KEEP_LAST)}
    for stage_dir, best in ((stage1, {BEST_STEP, RESCORED_BEST_STEP}), (stage2, {BEST_STEP})):
        steps = {int(p.name.removeprefix("global_step_")) for p in (stage_dir / "checkpoints").glob("global_step_*")}
        assert steps == newest | best, (stage_dir, steps)
    assert optimizer_shards(stage2 / "checkpoints") == {step: step == BEST_STEP for step in newest | {BEST_STEP}}


def test_a_layout_that_does_not_fit_the_allocation_is_rejected_before_ray_starts(
    local_slurm, tmp_path, sample_data, stand_in_hub
):
    ray_root = local_slurm.root / "ray_layout"
    ray_root.mkdir()
    # dapo_32k as configured wants 2 + 4 nodes x 8 GPUs; the job has 1 node x 2 GPUs.
    env = launch_env(local_slurm, tmp_path, ray_root, stand_in_hub, sample_data)
    job_id = sbatch_chain(local_slurm, tmp_path, env, sample_data, layout=())
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
    assert "the preflight failed" in output and "starting Ray" not in output


def test_cancelled_job_stops_the_trainer_and_ray(local_slurm, tmp_path, sample_data, stand_in_hub):
    ray_root = local_slurm.root / "ray_cancel"
    ray_root.mkdir()
    env = launch_env(local_slurm, tmp_path, ray_root, stand_in_hub, sample_data, FAKE_TRAINER_STEP_SECONDS="120")
    job_id = sbatch_chain(local_slurm, tmp_path, env, sample_data)
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


RECORDER = """#!/usr/bin/env bash
# A stand-in site command prefix (CMD_PREFIX): records where it ran and what, then runs it.
printf '%s|%s|%s\n' "${SLURMD_NODENAME:-?}" "${SITE_STEP_MARK:-host}" "$*" >> RECORD
exec "$@"
"""


def recorded_calls(record: Path) -> list[tuple[str, str, str]]:
    return [tuple(line.split("|", 2)) for line in record.read_text().splitlines()]


def test_two_node_job_under_site_conventions_joins_both_nodes_and_stops_ray_on_each(
    local_slurm, tmp_path, sample_data, stand_in_hub
):
    """Head on the batch host, a worker joining it through srun on the other node; both stopped at the end. The job
    asks for its GPUs with --gres (over the wrapper's #SBATCH --gpus-per-node=8), runs every command under a stand-in
    CMD_PREFIX that records each call, and every node step with SRUN_ARGS; the site check passes on both nodes, finds
    neither the hub nor wandb reachable, and its decisions (HF_HUB_OFFLINE, WANDB_MODE=offline) and the model's cache
    (HF_HOME) reach the process where verl's trainer runs, as does the wandb project from WANDB_PROJECT."""
    ray_root = local_slurm.root / "ray_2n"
    ray_root.mkdir()
    record = tmp_path / "prefix_calls.txt"
    prefix = tmp_path / "record_prefix.sh"
    prefix.write_text(RECORDER.replace("RECORD", str(record)))
    env = launch_env(
        local_slurm,
        tmp_path,
        ray_root,
        stand_in_hub,
        sample_data,
        SELECT_ARGS="--no-merge",
        RUN_EVAL="0",
        FAKE_TRAINER_STEPS="2",
        CMD_PREFIX=f"bash {prefix}",
        SRUN_ARGS="--export=ALL,SITE_STEP_MARK=srun-args",
        WANDB_PROJECT="site-test-project",
    )
    job_id, state, exit_code, output = local_slurm.run_job(
        "--nodes=2",
        f"--gres=gpu:{local_slurm.gpus}",
        "--time=15",
        str(REPO / "launch" / "run_microcoder_4k.sh"),
        *data_overrides(sample_data),  # microcoder_4k requires data.train_files; the layout is derived
        env=env,
        cwd=tmp_path,
    )
    assert (state, exit_code) == ("COMPLETED", "0:0"), output
    head, worker = local_slurm.node_names
    assert f"node checks passed on every node ({head} {worker}): sandbox site" in output, output
    assert re.search(rf"Ray cluster ready at \S+: 2 node\(s\) \({head} {worker}\), 4 GPU\(s\)", output), output
    run_dir = tmp_path / "outputs" / "microcoder_4k"
    (call,) = trainer_calls(run_dir / "microcoder_4k" / "checkpoints")
    assert call["ray"]["GPU"] == 4 and call["ray"]["alive_nodes"] == 2
    assert call["overrides"]["trainer.nnodes"] == "2" and call["overrides"]["trainer.n_gpus_per_node"] == "2"
    # Offline nodes: the model from the shared cache without a request per file; wandb offline, with its sync command.
    assert call["env"]["HF_HOME"] == str(stand_in_hub) and call["env"]["HF_HUB_OFFLINE"] == "1"
    assert call["env"]["WANDB_MODE"] == "offline" and call["env"]["WANDB_DIR"] == str(run_dir / "wandb")
    assert call["project_name"] == "site-test-project"
    assert (
        f"wandb ran offline: after the job, from a machine with access: wandb sync {run_dir}/wandb/wandb/offline-run-*"
        in output
    )
    # Every node step under SRUN_ARGS and CMD_PREFIX, on its node; the batch script's own commands under CMD_PREFIX.
    calls = recorded_calls(record)
    steps = {(node, command.rsplit(" ", 1)[-1]) for node, mark, command in calls if mark == "srun-args"}
    for node in (head, worker):
        assert {(node, "sandbox-check"), (node, "site-check"), (node, "stop")} <= steps, calls
    assert {(head, "network"), (head, "start-head"), (worker, "start-worker")} <= steps, calls
    host = [command for node, mark, command in calls if mark == "host"]
    for tool in (
        "preflight.py",
        "site_check.py verdict",
        "fake_trainer.py --config-name microcoder_4k",
        "select_checkpoint",
    ):
        assert any(tool in command for command in host), (tool, host)
    assert f"node {head}: Ray stopped" in output and f"node {worker}: Ray stopped" in output
    assert f"Ray stopped on {head} {worker}" in output
    assert local_slurm.processes_mentioning(str(ray_root)) == [], "Ray processes left after the job"
    assert job_processes(local_slurm, job_id) == [], f"processes of job {job_id} left after it ended"


def test_a_node_whose_ray_cannot_start_fails_the_job_at_once_naming_it(
    local_slurm, tmp_path, sample_data, stand_in_hub
):
    ray_root = local_slurm.root / "ray_bad"
    ray_root.mkdir()
    # A head-only flag on a worker: `ray start` on launchnode2 exits with an error at once.
    env = launch_env(
        local_slurm, tmp_path, ray_root, stand_in_hub, sample_data, RAY_WORKER_START_ARGS="--include-dashboard=false"
    )
    job_id = local_slurm.sbatch(
        "--nodes=2",
        f"--gpus-per-node={local_slurm.gpus}",
        "--time=15",
        f"--output={tmp_path}/job-%j.out",
        str(REPO / "launch" / "run_microcoder_4k.sh"),
        *data_overrides(sample_data),  # microcoder_4k requires data.train_files (the preflight checks it)
        env=env,
        cwd=tmp_path,
    )
    state, _ = local_slurm.wait_job(job_id)
    output = (tmp_path / f"job-{job_id}.out").read_text()
    head, worker = local_slurm.node_names
    assert state == "FAILED", output
    assert f"ERROR: Ray on node {worker} exited while the cluster was starting; see " in output, output
    assert f"node {head}: Ray stopped" in output and "stage microcoder_4k" not in output
    assert local_slurm.processes_mentioning(str(ray_root)) == [], "Ray processes left after the failed start"


def seconds_to_failure(output: str) -> int:
    """From the job's first launcher line to its ERROR line (the launcher's timestamps, whole seconds)."""
    stamps = re.findall(r"^\[launch (\d\d\d\d-\d\d-\d\d \d\d:\d\d:\d\d)\]( ERROR)?", output, flags=re.MULTILINE)
    first = time.mktime(time.strptime(stamps[0][0], "%Y-%m-%d %H:%M:%S"))
    failed = next(stamp for stamp, error in stamps if error)
    return int(time.mktime(time.strptime(failed, "%Y-%m-%d %H:%M:%S")) - first)


def report_fault(name: str, command: str, output: str, *naming: str) -> None:
    """The figures a fault injection gives: the command, the first line of the message (and the lines naming each of
    several faults of one job), the time to failure."""
    first = next(line for line in output.splitlines() if " ERROR: " in line).split(" ERROR: ", 1)[1]
    lines = "".join(f"\n  names: {next(line for line in output.splitlines() if part in line)}" for part in naming)
    print(
        f"\nFAULT {name}\n  command: {command}\n  message: {first}{lines}\n  failed after {seconds_to_failure(output)} s"
    )


def test_a_node_without_what_the_job_needs_fails_it_before_ray_naming_the_node(
    local_slurm, tmp_path, nvidia_smi_fault, stand_in_hub, sample_data
):
    """The real node checks on both nodes through srun, the CPU mode's job (its bill of materials, the grader's
    isolation probe, the site check of an allocation with 2 GPUs per node). Node 1's driver is too old for torch's
    CUDA, node 2 lists one GPU of its two (stand_ins/nvidia-smi), node 2 hides TransferQueue, which verl's V1 trainer
    imports (a PYTHONPATH shim), and node 2's sandbox probe runs as on a node that forbids namespaces. The job fails
    before Ray starts, naming each node with what it lacks there, and no node with what it has."""
    ray_root = local_slurm.root / "ray_node_checks"
    ray_root.mkdir()
    head, worker = local_slurm.node_names
    worker_only = f'[[ "$SLURMD_NODENAME" == {worker} ]]'
    shim = tmp_path / "shim" / "transfer_queue"
    shim.mkdir(parents=True)
    (shim / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'transfer_queue'\")\n")
    bom = tmp_path / "bom_like_a_node_without_transfer_queue.sh"
    bom.write_text(
        f"#!/usr/bin/env bash\n{worker_only} && export PYTHONPATH={shim.parent}\n"
        f'exec python {REPO / "launch" / "bill_of_materials.py"} check "$@"\n'
    )
    probe = tmp_path / "probe_like_a_node_without_namespaces.sh"
    probe.write_text(
        f"#!/usr/bin/env bash\n{worker_only} && export NOUSCODER_SANDBOX_DISABLE=namespaces\n"
        "exec python -m reward_fns.sandbox\n"
    )
    uuid = "GPU-00000000-0000-0000-0000-0000000000{}"
    nvidia_smi_fault(head, *(f"{i}, {uuid.format(i)}, NVIDIA H100 80GB HBM3, 535.104.05, 81559" for i in range(2)))
    stand_in = nvidia_smi_fault(worker, f"1, {uuid.format(11)}, NVIDIA H100 80GB HBM3, 580.65.06, 81559")
    env = launch_env(
        local_slurm,
        tmp_path,
        ray_root,
        stand_in_hub,
        sample_data,
        BOM_CHECK="1",
        BOM_CHECK_CMD=f"bash {bom}",
        SANDBOX_CHECK_CMD=f"bash {probe}",
        NVIDIA_SMI_STAND_IN_DIR=stand_in,
    )
    command = (
        "--nodes=2",
        f"--gpus-per-node={local_slurm.gpus}",
        "--time=15",
        str(REPO / "launch" / "run_debug_cpu_chain.sh"),
    )
    job_id, state, _, output = local_slurm.run_job(*command, env=env, cwd=tmp_path)
    assert state == "FAILED", output
    assert f"ERROR: sandbox isolation incomplete on node(s) {worker}: " in output, output
    assert f"{worker} (" in output and "[missing] network_namespace" in output, output
    assert f"bill of materials incomplete on node(s) {worker}: " in output, output
    assert (
        f"node {worker}: TransferQueue (transferqueue), needed by verl's V1 trainer (every config) in debug_cpu, debug_cpu_extended: "
        "ModuleNotFoundError: No module named 'transfer_queue'" in output
    ), output
    assert f"site check failed on node(s) {head} {worker}" in output, output
    driver = (
        f"node {head}: driver: NVIDIA driver 535.104.05 is older than 580, the oldest that runs CUDA 13.0 (torch's build; "
        f'NVIDIA "CUDA Compatibility"); fix: update the driver on {head} to >= 580, or exclude the node '
        f"(sbatch --exclude={head})"
    )
    assert driver in output, output
    gpus = (
        f"node {worker}: gpus: 1 GPU(s) visible to the job (1: NVIDIA H100 80GB HBM3 81559 MiB; nvidia-smi lists 1, "
        f"CUDA_VISIBLE_DEVICES=0,1), but the allocation has 2 per node; fix: a GPU of {worker} is missing or failed"
    )
    assert gpus in output, output
    failure = output.split("sandbox isolation incomplete", 1)[1]
    assert (
        f"{head} (" not in failure and f"node {head}: gpus" not in failure and f"node {worker}: driver" not in failure
    )
    logs = tmp_path / "outputs" / "debug_cpu_chain" / "logs" / str(job_id)
    assert f"bill_of_materials: node {head} has all" in (logs / f"bom_{head}.log").read_text()
    assert "starting Ray" not in output and "stage debug_cpu" not in output, output
    assert local_slurm.processes_mentioning(str(ray_root)) == [], "Ray processes left"
    sbatch = f"NVIDIA_SMI_STAND_IN_DIR=... sbatch {' '.join(command)}"
    report_fault(
        f"old driver on {head}, one GPU missing on {worker} (and node 2's sandbox and TransferQueue)",
        sbatch,
        output,
        f"node {head}: driver:",
        f"node {worker}: gpus:",
        f"node {worker}: TransferQueue",
    )


def test_an_offline_hub_id_and_an_over_budget_prompt_stop_the_job_before_ray(
    local_slurm, tmp_path, stand_in_hub, sample_data
):
    """A hub id that is not in the nodes' cache, on nodes that cannot reach the hub: the site check fails on every node
    with the download command. Then a LiveCodeBench prompt over data.max_prompt_length: the preflight fails naming the
    problems, before stage 0 and before Ray."""
    ray_root = local_slurm.root / "ray_offline"
    ray_root.mkdir()
    env = launch_env(
        local_slurm, tmp_path, ray_root, stand_in_hub, sample_data, INIT_MODEL="Qwen/Qwen3-8B", CHECKPOINT_GB="0.01"
    )
    command = (
        "--nodes=2",
        f"--gpus-per-node={local_slurm.gpus}",
        "--time=15",
        str(REPO / "launch" / "run_microcoder_4k.sh"),
    )
    _, state, _, output = local_slurm.run_job(*command, *data_overrides(sample_data), env=env, cwd=tmp_path)
    assert state == "FAILED", output
    for node in local_slurm.node_names:
        assert (
            f"node {node}: model: Qwen/Qwen3-8B is not complete in this node's Hugging Face cache (HF_HOME={stand_in_hub}; "
            "missing the whole snapshot), and this node cannot reach the hub; fix: on a machine with hub access run "
            "`HF_HOME=/path/on/shared/storage hf download Qwen/Qwen3-8B`, then `export HF_HOME=/path/on/shared/storage` "
            'before sbatch (launch/README.md "Offline nodes")' in output
        ), output
    assert "starting Ray" not in output, output
    report_fault(
        "offline hub id",
        f"INIT_MODEL=Qwen/Qwen3-8B sbatch {' '.join(command)} data.train_files=...",
        output,
        *(f"node {node}: model:" for node in local_slurm.node_names),
    )

    tmp = tmp_path / "budget"
    tmp.mkdir()
    env = launch_env(local_slurm, tmp, ray_root, stand_in_hub, sample_data)
    job_id, state, _, output = local_slurm.run_job(
        *command, *data_overrides(sample_data), "data.max_prompt_length=64", env=env, cwd=tmp
    )
    assert state == "FAILED", output
    budget = re.search(
        rf"ERROR: prompt budget: microcoder_4k: data.val_files=\['{sample_data / 'test.parquet'}'\]: (\d+) of 16 problems "
        r"have a prompt longer than data.max_prompt_length=64 tokens of \S+'s tokenizer",
        output,
    )
    assert budget and int(budget.group(1)) > 0, output
    assert "the preflight failed" in output and "node checks" not in output and "starting Ray" not in output, output
    report_fault(
        "over-budget prompt", f"sbatch {' '.join(command)} data.train_files=... data.max_prompt_length=64", output
    )


def test_a_chain_longer_than_its_time_limit_finishes_across_requeued_jobs_losing_no_step(
    local_slurm, tmp_path, sample_data, stand_in_hub
):
    """One training stage of 24 stand-in steps of 3 s (a save every 5) under --time=2: each job asks the
    trainer to save and stop SAVE_BEFORE_LIMIT_S before its limit, requeues itself (same job id, its output appended)
    and the next run resumes from that save; the chain completes with no step trained twice. (The first job reaches
    its first step ~20 s after it starts: 75 s before the stop request leave it about 18 steps.)"""
    ray_root = local_slurm.root / "ray_time"
    ray_root.mkdir()
    steps = 24
    env = launch_env(
        local_slurm,
        tmp_path,
        ray_root,
        stand_in_hub,
        sample_data,
        STAGES="dapo_40k",
        INIT_MODEL="Qwen/Qwen3-14B",  # a second-stage config as the first stage: its model is required
        RESCORE="",
        RUN_EVAL="0",
        SELECT_ARGS="--no-merge",
        FAKE_TRAINER_STEPS=str(steps),
        FAKE_TRAINER_STEP_SECONDS="3",
        FAKE_TRAINER_SAVE_EVERY="5",
        SAVE_BEFORE_LIMIT_S="45",
    )
    command = ("--nodes=1", f"--nodelist={local_slurm.node_name}", f"--gpus-per-node={local_slurm.gpus}", "--time=2")
    job, state, exit_code, output = local_slurm.run_job(
        *command,
        str(REPO / "launch" / "run_dapo_32k_to_40k.sh"),
        *DAPO_ON_ONE_NODE,
        *data_overrides(sample_data),
        f"trainer.total_training_steps={steps}",
        env=env,
        cwd=tmp_path,
        timeout_s=1500,
    )
    assert (state, exit_code) == ("COMPLETED", "0:0"), output
    calls = trainer_calls(tmp_path / "outputs" / "dapo_32k_to_40k" / "dapo_40k" / "checkpoints")
    runs = [call["steps"] for call in calls]
    assert len(runs) >= 2 and [step for run in runs for step in run] == list(range(1, steps + 1)), runs  # none twice
    for earlier, later in zip(calls, calls[1:], strict=False):
        assert earlier["outcome"] == f"stopped at step {earlier['steps'][-1]} by stop_request_dapo_40k"
        assert later["resumed_from"] == earlier["steps"][-1]  # the save the stop made, not the last multiple of 5
    assert calls[-1]["outcome"] == "finished"
    assert int(local_slurm.job_field(job, "Restarts")) == len(runs) - 1
    requeues = re.findall(r"stage dapo_40k stopped for the time limit: requeueing job (\d+)", output)
    assert requeues == [str(job)] * (len(runs) - 1), output
    # every requeued run was asked; the last may be asked too when its last step ends at its own stop time
    assert output.count("asking '") >= len(runs) - 1 and "save at the end of its step and stop" in output
    print(
        f"\nTIME LIMIT: --time=2 for {steps} steps of 3 s: {len(runs)} jobs, steps per job {[len(run) for run in runs]}, 0 repeated"
    )
    assert local_slurm.processes_mentioning(str(ray_root)) == [], "Ray processes left"
