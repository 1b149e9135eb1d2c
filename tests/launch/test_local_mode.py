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

pytestmark = pytest.mark.integration  # a real Slurm / Ray cluster and the stage chain end to end


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_microcoder_wrapper_runs_on_one_machine_without_slurm(tmp_path, find_processes, test_bash_path):
    ray_root = Path(tempfile.mkdtemp(prefix="rl", dir="/tmp"))  # short: Ray's socket paths live under it
    (tmp_path / "lcb.parquet").touch()
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
            "PATH": test_bash_path(f"{Path(sys.executable).parent}:{os.environ['PATH']}"),
            "NNODES": "1",
            "GPUS_PER_NODE": "1",
            "TRAINER_CMD": f"python {REPO / 'tests' / 'launch' / 'fake_trainer.py'}",
            "SELECT_ARGS": "--no-merge",
            "OUTPUT_ROOT": str(tmp_path / "outputs"),
            "RAY_TMP_ROOT": str(ray_root),
            "RAY_PORT": str(free_port()),
            "RAY_START_ARGS": f"{ports} --include-dashboard=false --object-store-memory=100000000",
            "RAY_WAIT_POLL_S": "2",
            "RAY_WAIT_TIMEOUT_S": "240",
            "FAKE_TRAINER_STEPS": "4",
            "EVAL_DATA": str(tmp_path / "lcb.parquet"),
            "WATCH_POLL_S": "0.5",
        }
    )
    launcher = subprocess.Popen(
        [
            os.environ.get("LAUNCH_TEST_BASH", "bash"),
            str(REPO / "launch" / "run_microcoder_4k.sh"),
            "data.train_files=data/deepcoder_mix/train.parquet",
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
    # Scores of 4 steps peak at step (4 + 1) // 2 = 2; with --no-merge the selection names the actor shards.
    best = run_dir / "microcoder_4k" / "checkpoints" / "global_step_2" / "actor"
    assert (run_dir / "microcoder_4k" / "best_model").read_text().strip() == str(best)
    (evaluation,) = [json.loads(line) for line in (run_dir / "final_eval" / "fake_trainer_calls.jsonl").open()]
    assert evaluation["config_name"] == "eval_microcoder_8k" and evaluation["model"] == str(best)
    assert evaluation["ray"]["GPU"] == 1 and (run_dir / "final_eval" / "DONE").is_file()
    assert f"Ray stopped on {host}" in output
    assert leftovers == [], "Ray processes left after the local run"
