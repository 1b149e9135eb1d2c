"""Local mode: the same wrapper without Slurm (NNODES=1) starts Ray on this machine, trains, selects, evaluates, stops Ray."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TINY_MODEL_CONFIG = REPO / "tests" / "launch" / "data" / "tiny_qwen3" / "config.json"  # the preflight's facts
STAND_INS = REPO / "tests" / "launch" / "stand_ins"

pytestmark = pytest.mark.integration  # a real Slurm / Ray cluster and the stage chain end to end


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_microcoder_wrapper_runs_on_one_machine_without_slurm(
    tmp_path, find_processes, test_bash_path, stand_in_hub, sample_data
):
    """The site check runs here too: the driver and GPUs from stand_ins/nvidia-smi (two GPUs, the job uses one), the
    model from the stand-in hub cache; its probes that need a CUDA torch and cupy, and the all-reduce, are skipped."""
    ray_root = Path(tempfile.mkdtemp(prefix="rl", dir="/tmp"))  # short: Ray's socket paths live under it
    ports = " ".join(
        f"--{name}={free_port()}"
        for name in (
            "dashboard-port",
            "ray-client-server-port",
            "dashboard-agent-listen-port",
            "dashboard-agent-grpc-port",
            "metrics-export-port",
            "runtime-env-agent-port",
        )
    )
    env = {key: value for key, value in os.environ.items() if not key.startswith("SLURM")}
    env.update(
        {
            "PATH": test_bash_path(f"{STAND_INS}:{Path(sys.executable).parent}:{os.environ['PATH']}"),
            "NNODES": "1",
            "GPUS_PER_NODE": "1",
            "HF_HOME": str(stand_in_hub),
            "HF_ENDPOINT": f"http://127.0.0.1:{free_port()}",
            "SITE_CHECK_SKIP": "torch_cuda nccl collective",
            "TRAINER_CMD": f"python {REPO / 'tests' / 'launch' / 'fake_trainer.py'}",
            "SELECT_ARGS": "--no-merge",
            "OUTPUT_ROOT": str(tmp_path / "outputs"),
            "RAY_TMP_ROOT": str(ray_root),
            "RAY_PORT": str(free_port()),
            "RAY_START_ARGS": f"{ports} --include-dashboard=false --object-store-memory=100000000",
            "RAY_WAIT_POLL_S": "2",
            "RAY_WAIT_TIMEOUT_S": "240",
            "FAKE_TRAINER_STEPS": "4",
            "EVAL_DATA": str(sample_data / "test.parquet"),
            "WATCH_POLL_S": "0.5",
            "BOM_CHECK": "0",  # microcoder_4k needs vLLM and flash-attn, which this CPU machine lacks
            "MODEL_CONFIG": str(TINY_MODEL_CONFIG),  # a 4B model's memory fits no fake GPU
            # one config's own overrides, and the pace check against the plan's step time (the stand-in's steps
            # take ~0 s of a planned ~80 s: "leave unused"), polled often enough to see the steps as they come
            "STAGE_OVERRIDES_microcoder_4k": "trainer.project_name=per_stage",
            "STALL_POLL_S": "0.2",
            # MicroCoder's diversity-determined temperature before training, the real picker on a stand-in sampler
            "PICK_TEMPERATURE": "1",
            "PICK_TEMPERATURE_CMD": f"python {REPO / 'tests' / 'launch' / 'fake_pick_temperature.py'}",
        }
    )
    launcher = subprocess.Popen(
        [
            os.environ.get("LAUNCH_TEST_BASH", "bash"),
            str(REPO / "launch" / "run_microcoder_4k.sh"),
            f"data.train_files={sample_data / 'train.parquet'}",
            f"data.val_files={sample_data / 'test.parquet'}",
        ],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        output, _ = launcher.communicate(timeout=400)
    except subprocess.TimeoutExpired:
        launcher.terminate()  # SIGTERM: the launcher's trap stops the trainer and Ray
        output, _ = launcher.communicate(timeout=120)
    finally:
        leftovers = find_processes(str(ray_root))
        shutil.rmtree(ray_root, ignore_errors=True)
    assert launcher.returncode == 0, output
    host = socket.gethostname().split(".")[0]
    assert re.search(rf"Ray cluster ready at \S+: 1 node\(s\) \({host}\), 1 GPU\(s\)", output), output
    run_dir = tmp_path / "outputs" / "microcoder_4k"
    (call,) = [
        json.loads(line) for line in (run_dir / "microcoder_4k" / "checkpoints" / "fake_trainer_calls.jsonl").open()
    ]
    assert call["config_name"] == "microcoder_4k" and call["ray"]["GPU"] == 1 and call["steps"] == [1, 2, 3, 4]
    assert call["overrides"]["trainer.nnodes"] == "1" and call["overrides"]["trainer.n_gpus_per_node"] == "1"
    assert call["overrides"]["trainer.project_name"] == "per_stage"  # STAGE_OVERRIDES_microcoder_4k, after the common
    picked = json.loads((run_dir / "pick_temperature" / "report.json").read_text())
    assert picked["recommended_temperature"] == 1.4 and picked["threshold"] == 0.75
    assert call["overrides"]["actor_rollout_ref.rollout.temperature"] == "1.4"  # the config's 1.2 replaced
    assert re.search(
        r"WARNING: step time: steps 1-3 of \S+/microcoder_4k/checkpoints/metrics.jsonl took a median 0 s", output
    )
    # Scores of 4 steps peak at step (4 + 1) // 2 = 2; with --no-merge the selection names the actor shards.
    best = run_dir / "microcoder_4k" / "checkpoints" / "global_step_2" / "actor"
    assert (run_dir / "microcoder_4k" / "best_model").read_text().strip() == str(best)
    (evaluation,) = [json.loads(line) for line in (run_dir / "final_eval" / "fake_trainer_calls.jsonl").open()]
    assert evaluation["config_name"] == "eval_microcoder_8k" and evaluation["model"] == str(best)
    assert "trainer.project_name" not in evaluation["overrides"]  # the stage's own overrides stay its own
    assert "actor_rollout_ref.rollout.temperature" not in evaluation["overrides"]  # training stages only
    assert evaluation["ray"]["GPU"] == 1 and (run_dir / "final_eval" / "DONE").is_file()
    # the pass@k report of verl's dump (the stand-in's 4 responses per problem, MicroCoder's n), as on one node
    report = json.loads((run_dir / "final_eval" / "report" / "results.json").read_text())
    assert report["settings"]["benchmark"] == "lcb_v6" and report["summary"]["samples_per_problem"]["min"] == 4
    assert f"Ray stopped on {host}" in output
    assert leftovers == [], "Ray processes left after the local run"


def test_a_too_small_output_root_fails_before_ray_starts_naming_both_numbers_and_the_knobs(tmp_path, test_bash_path):
    """The disk preflight (launch/disk_plan.py): the DAPO chain's retention with CHECKPOINT_GB=1000 (a checkpoint of
    1 TB) needs far more than any test machine's free space. Runs without Slurm or Ray: ~15 s (config composition)."""
    (tmp_path / "lcb.parquet").touch()
    env = {key: value for key, value in os.environ.items() if not key.startswith("SLURM")}
    env.update(
        {
            "PATH": test_bash_path(f"{Path(sys.executable).parent}:{os.environ['PATH']}"),
            "NNODES": "1",
            "GPUS_PER_NODE": "2",
            "OUTPUT_ROOT": str(tmp_path / "outputs"),
            "EVAL_DATA": str(tmp_path / "lcb.parquet"),
            "OFFLINE_FILTER": "none",
            "CHECKPOINT_GB": "1000",
            "MODEL_CONFIG": str(TINY_MODEL_CONFIG),
        }
    )
    one_node = [
        "trainer.nnodes=1",
        "trainer.n_gpus_per_node=1",
        "actor_rollout_ref.rollout.nnodes=1",
        "actor_rollout_ref.rollout.n_gpus_per_node=1",
        "actor_rollout_ref.actor.ulysses_sequence_parallel_size=1",
        "actor_rollout_ref.actor.ppo_max_token_len_per_gpu=40960",
        "actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu=40960",
        "actor_rollout_ref.rollout.tensor_model_parallel_size=1",
    ]
    script = str(REPO / "launch" / "run_dapo_32k_to_40k.sh")
    result = subprocess.run(
        [os.environ.get("LAUNCH_TEST_BASH", "bash"), script, *one_node],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    # A checkpoint of 12 B per parameter = 1,000 GB: P = 83.3e9 parameters, model shards 4 P = 333 GB, a merged
    # bf16 model 2 P = 167 GB. Stage 1 leaves its selected checkpoint, the model shards of the 4 others it kept
    # (2 newest + 3 best - 1) and the merged pick: 1,000 + 1,333 + 167 = 2,500 GB; stage 2 then holds 2 newest +
    # 1 best + 1 being written (4,000 GB) and, while selecting, its merged best (167 GB): 6,667 GB at the peak.
    message = re.search(
        r"ERROR: disk: this run needs ~([\d,]+) GB in OUTPUT_ROOT=(\S+) at its peak \(selecting dapo_40k's model; .*"
        r"but that filesystem has ([\d,]+) GB free \(\+0 GB the run holds already\)\. Set OUTPUT_ROOT to a filesystem "
        r"shared by all nodes with room .*or lower KEEP_LAST_CHECKPOINTS / RESCORE_TOP_K",
        output,
    )
    assert message, output
    assert int(message.group(1).replace(",", "")) == 6_667 and message.group(2) == str(tmp_path / "outputs")
    free_gb = shutil.disk_usage(tmp_path).free / 1e9
    assert abs(int(message.group(3).replace(",", "")) - free_gb) < 5
    assert "starting Ray" not in output and "the preflight failed" in output
