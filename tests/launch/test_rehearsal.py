"""launch/rehearse.sh as CI runs it: the launch tests' two-node Slurm, the CPU layout (REHEARSAL_LAYOUT=cpu) and the
REAL trainer (recipe/nouscoder/cpu): one sbatch of the script a user runs before booking 48 GPUs.

The stage rehearsal_cpu is the separate-async trainer with its trainer rank on one node and its standalone hf_cpu
rollout on the other (weights over cpu_gloo between the nodes, the Ray grading pool, known answers for half of the
responses so that rewards are mixed); before Ray, the real node checks run on both nodes (bill of materials, sandbox,
site check with its gloo all-reduce across them). The trainer is killed inside the step after REHEARSAL_KILL_AFTER
(launch/kill_once.py); the script starts the chain again in the same job, which resumes from the last checkpoint with
the online filter's state (every group counts as solved here, so that state is not empty); the
best checkpoint is merged (select_checkpoint) and evaluated with eval_debug_cpu (validation only, both nodes, the
pass@k report of verl's dump; the YaRN settings of eval_lcb_80k are the GPU layout's); launch/rehearsal.py writes the
report. Checked: each of those, the report's figures (time split,
tokens/s, peak memory of both roles, weight-sync bytes), trained weights in the merged model, and no process left.
This is also the CI's Slurm run of the real trainer (it replaced the two-stage CPU chain of the sync trainer, whose
parts run in tests/recipe/test_cpu_learning.py and tests/vllm_cpu).
"""

from __future__ import annotations

import json
import re
import sys
import time
import uuid
from pathlib import Path

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from tests.launch.test_slurm_chain import REPO, launch_env
from tests.recipe.cpu_runs import E2E_MARKER_ENV, metrics, processes_marked

pytestmark = [pytest.mark.integration, pytest.mark.long(3), pytest.mark.timeout(3600)]
STAGE = "rehearsal_cpu"
STEPS, KILL_AFTER = 4, 2
EVERY_GROUP_SOLVED = -10
"""The online filter's pass threshold for this run: every score is above it, so every group counts as solved and the
filter's state is not empty when the trainer is killed (the resume must restore it)."""
REMOVED, NEWLY_REMOVED = "nouscoder/online_filter/removed_problems", "nouscoder/online_filter/newly_removed"


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


def test_the_rehearsal_runs_the_jobs_path_on_two_nodes_kills_resumes_merges_evaluates_and_reports(
    local_slurm, tmp_path, sample_data, stand_in_hub
):
    ray_root = local_slurm.root / "ray_rehearsal"
    ray_root.mkdir()
    env = launch_env(
        local_slurm,
        tmp_path,
        ray_root,
        stand_in_hub,
        sample_data,
        TRAINER_CMD=f"{sys.executable} -m recipe.nouscoder.main",
        REHEARSAL_LAYOUT="cpu",
        REHEARSAL_DATA=str(sample_data),
        REHEARSAL_TRAIN_PROBLEMS="28",
        REHEARSAL_TEST_PROBLEMS="8",
        REHEARSAL_STEPS=str(STEPS),
        REHEARSAL_KILL_AFTER=str(KILL_AFTER),
        REHEARSAL_KILL_DELAY_S="1",
        RUN_NAME="rehearsal",
        BOM_CHECK="1",  # the CPU mode's bill of materials is complete on this machine
        **{E2E_MARKER_ENV: (marker := uuid.uuid4().hex)},  # every process of the job inherits it
    )
    for variable in ("SITE_CHECK_SKIP", "FAKE_TRAINER_STEPS", "FAKE_TRAINER_STEP_SECONDS", "WANDB_API_KEY"):
        env.pop(variable)  # every site probe of the CPU mode runs; no wandb
    started = time.monotonic()
    job, state, exit_code, output = local_slurm.run_job(
        "--nodes=2",
        "--gpus-per-node=0",  # the CPU layout: logical device slots, no GPU from Slurm
        "--time=45",
        str(REPO / "launch" / "rehearse.sh"),
        "nouscoder.cpu.known_answers.fraction=0.5",
        f"nouscoder.online_filter.pass_threshold={EVERY_GROUP_SOLVED}",
        env=env,
        cwd=tmp_path,
        timeout_s=2700,
    )
    wall = time.monotonic() - started
    assert (state, exit_code) == ("COMPLETED", "0:0"), output
    head, worker = local_slurm.node_names
    run_dir = tmp_path / "outputs" / "rehearsal"
    # Before Ray, on both nodes: the node checks, then the all-reduce across them (gloo, the CPU mode's collective).
    assert f"node checks passed on every node ({head} {worker}): sandbox bom site" in output, output
    allreduce = re.search(
        r"site check: all-reduce of 8 MiB over 2 ranks \(2 node\(s\) x 1\) with torch.distributed \(gloo\): "
        r"[\d.]+ ms, bus bandwidth ([\d.]+) GB/s",
        output,
    )
    assert allreduce and float(allreduce.group(1)) > 0, output
    assert output.count("Ray cluster ready at ") == 2 and re.search(r"2 node\(s\) \(\S+ \S+\), 2 GPU\(s\)", output)
    # The kill inside step KILL_AFTER + 1, the chain again in the same job, the resume from the last checkpoint.
    assert (run_dir / "killed_once").is_file(), output
    assert f"stage {STAGE}: trainer failed (exit 137)" in output
    assert f"stage {STAGE}: resuming from global_step_{KILL_AFTER}" in output
    ckpt = run_dir / STAGE / "checkpoints"
    killed, resumed = (ckpt / "metrics.1.jsonl"), (ckpt / "metrics.jsonl")
    assert [record["step"] for record in metrics(killed)] == list(range(1, KILL_AFTER + 1))
    assert [record["step"] for record in metrics(resumed)] == list(range(KILL_AFTER + 1, STEPS + 1))
    steps = [record["data"] for record in metrics(killed) + metrics(resumed)]
    # the online filter's state came back with the checkpoint: the resumed count goes on from the killed run's
    saved, first_resumed = steps[KILL_AFTER - 1][REMOVED], steps[KILL_AFTER]
    assert saved > 0 and first_resumed[REMOVED] == saved + first_resumed[NEWLY_REMOVED], (saved, first_resumed)
    assert any(step["grading/verdict/accepted"] > 0 for step in steps)  # known answers: mixed rewards, graded for real
    assert all(step["actor/grad_norm"] > 0 and step["grading/internal_errors"] == 0 for step in steps)
    assert all("timing_s/update_weights" in step for step in steps)  # the cpu_gloo weight sync, every step
    # The merge and the evaluation of the merged model (the CPU chain's evaluation config, eval_debug_cpu).
    best = Path((run_dir / STAGE / "best_model").read_text().strip())
    assert best.parent.name == "best_hf" and (best / "config.json").is_file()
    assert_holds_trained_weights_and_generates(best, ckpt / "tiny_qwen2")
    assert f"evaluation final_eval of {best} with eval_debug_cpu on all 2 node(s)" in output
    assert (run_dir / "final_eval" / "score").read_text().startswith("val-core/")
    assert (run_dir / "final_eval" / "report" / "results.json").is_file()  # the pass@k report of verl's dump
    # The report: every check passed, and the figures of each step.
    print(f"\nREHEARSAL (CPU layout, 2 Slurm nodes): {wall:.0f} s wall\n{output[output.index('rehearsal of ') :]}")
    report = json.loads((run_dir / "rehearsal_report.json").read_text())
    assert report["verdict"].startswith("rehearsal passed:"), report["verdict"]
    assert report["checks"][f"the kill inside step {KILL_AFTER + 1} and the resume from global_step_{KILL_AFTER}"]
    assert report["steps_per_run"] == [list(range(1, KILL_AFTER + 1)), list(range(KILL_AFTER + 1, STEPS + 1))]
    assert [row["step"] for row in report["steps"]] == list(range(1, STEPS + 1))
    for row in report["steps"]:
        assert row["step_s"] > 0 and row["generation_s"] is not None and row["update_s"] > 0 and row["log_prob_s"] > 0
        assert row["weight_sync_s"] > 0 and row["grading_wait_s"] > 0 and row["tokens_per_s_per_rollout_gpu"] > 0
        assert row["sequences"] > 0 and row["mean_prompt_tokens"] > 0
        assert row["peak_memory_gb"]["trainer"] > 0.1 and row["peak_memory_gb"]["rollout"] > 0.1  # resident, on CPU
    assert report["format"] == "nouscoder-rehearsal-report/1" and report["model"]["config"]["model_type"] == "qwen2"
    # the GPUs the site check found: the exclusive job holds its nodes' (stand-in) GPUs, which the CPU layout leaves idle
    assert report["allocation"] == {
        "nodes": 2, "gpus_per_node": 1, "gpu": "NVIDIA H100 80GB HBM3", "gpu_memory_gb": round(81559 * 2**20 / 1e9, 1),
        "trainer_gpus": 1, "rollout_gpus": 1, "rollout_tensor_parallel": 1,
    }  # fmt: skip
    assert report["shape"]["group_size"] == 4 and report["weight_sync"]["bytes"] > 0
    assert report["verdict"] in output and "step | step s | gen s" in output
    assert processes_marked(marker) == []
    assert local_slurm.processes_mentioning(str(ray_root)) == [], "Ray processes left after the job"
