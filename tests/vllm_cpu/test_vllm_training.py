"""Both trainers of the recipe on verl's real vLLM rollout, on CPU: `python -m recipe.nouscoder.main --config-name
debug_cpu cpu_rollout=vllm [cpu_layout=separate_async]`, through the CLI in a subprocess, as a user runs it.

- ``nouscoder_sync`` with the multi-turn loop (``+multi_turn=debug_cpu``): 2 FSDP ranks, each hosting a vLLM replica
  (colocated, verl's ``naive`` weight sync into vLLM through the project's reload extension), the Ray grading pool;
  half of the first answers scripted (``by_turn: [failing, passing]``: a failing bundled program, public-test
  feedback, a passing revision), the others the random model's. 2 steps, validation and a checkpoint at step 2. The
  checks of a synchronous run (tests/recipe/cpu_runs.py: mixed rewards, gradients, on-policy TIS weights near 1, as
  vLLM's fp32 log-probs are the learner's, the recipe's metrics) and of the multi-turn loop: two turns
  used, feedback given and masked out of the trained batch, revisions passing the public and the hidden tests.
- ``nouscoder_separate_async``: 1 trainer rank, 1 standalone vLLM replica (verl's vLLM server with abort/resume and
  the partial-rollout client), weights over ``cpu_gloo`` into vLLM; half known answers; 3 steps, the staged
  temperature changing at step 3. Resuming from a checkpoint is the rehearsal's (tests/launch/test_rehearsal.py):
  nothing of it depends on the rollout engine.

After every invocation: no process of the run is left, and no shared-memory segment the run created stays in
/dev/shm (vLLM's ``psm_*`` message queues, multiprocessing's ``sem.mp-*``; recipe/nouscoder/training/rollout_shutdown.py).
Cost: two CLI invocations, each with vLLM start-up (about 4-5 minutes together on an idle 2-core machine).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from data_prep.build_deepcoder_mix import main as build_data
from tests.recipe.cpu_runs import (
    E2E_MARKER_ENV,
    assert_trained_on_policy_with_the_recipes_parts,
    metrics,
    processes_marked,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(3600)]

RUN_TIMEOUT_S = 1200
EXIT_GRACE_S = 120
"""How long a finished run's Ray processes may take to exit on a loaded machine (checked as soon as none is left)."""
SHARED_MEMORY = Path("/dev/shm")
SEGMENT_PREFIXES = ("psm_", "sem.mp-")
"""multiprocessing.shared_memory's and multiprocessing's semaphores' names: what vLLM's processes create there."""


def shared_memory_segments() -> set[str]:
    return {entry.name for entry in SHARED_MEMORY.iterdir() if entry.name.startswith(SEGMENT_PREFIXES)}


def inodes_in_use() -> set[int]:
    """The inodes of the /dev/shm files that a live process has mapped or open: the segments of whatever runs
    alongside (another suite's spawned processes hold ``sem.mp-*`` semaphores while they live). By inode: glibc maps
    a semaphore under a temporary name, then links it to its own."""
    prefix = f"{SHARED_MEMORY}/"
    used = set()
    for process in Path("/proc").iterdir():
        if not process.name.isdigit():
            continue
        try:
            for line in (process / "maps").read_text().splitlines():
                fields = line.split(maxsplit=5)
                if len(fields) == 6 and fields[5].startswith(prefix):
                    used.add(int(fields[4]))
            for fd in (process / "fd").iterdir():
                if os.readlink(fd).startswith(prefix):
                    used.add(fd.stat().st_ino)
        except OSError:  # gone meanwhile, or not ours to read
            continue
    return used


def leaked_segments(before: set[str]) -> set[str]:
    """Segments created since ``before`` that are still there and that no live process holds: left behind."""
    used = inodes_in_use()
    leaked = set()
    for name in shared_memory_segments() - before:
        try:
            if (SHARED_MEMORY / name).stat().st_ino not in used:
                leaked.add(name)
        except FileNotFoundError:  # unlinked meanwhile
            continue
    return leaked


@dataclass
class Invocations:
    run_dir: Path
    marker: str = field(default_factory=lambda: uuid.uuid4().hex)
    wall_s: list[float] = field(default_factory=list)
    leftover_processes: list[str] = field(default_factory=list)
    leftover_segments: set[str] = field(default_factory=set)
    log: str = ""

    def run(self, data_dir: Path, model_dir: Path, steps: int, *overrides: str) -> None:
        command = [
            sys.executable,
            "-m",
            "recipe.nouscoder.main",
            "--config-name",
            "debug_cpu",
            "cpu_rollout=vllm",
            f"trainer.default_local_dir={self.run_dir}",
            f"data.train_files={data_dir / 'train.parquet'}",
            f"data.val_files={data_dir / 'test.parquet'}",
            f"actor_rollout_ref.model.path={model_dir}",
            f"trainer.total_training_steps={steps}",
            "trainer.save_freq=2",
            "trainer.test_freq=-1",
            *overrides,
        ]
        before = shared_memory_segments()
        start = time.monotonic()
        completed = subprocess.run(
            command,
            cwd=self.run_dir.parent,
            env={**os.environ, E2E_MARKER_ENV: self.marker, "HYDRA_FULL_ERROR": "1"},
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT_S,
            check=False,
        )
        self.wall_s.append(time.monotonic() - start)
        output = completed.stdout + completed.stderr
        self.log += output
        assert completed.returncode == 0, f"run exited {completed.returncode}:\n{output[-6000:]}"
        self.leftover_processes += processes_marked(self.marker, grace_s=EXIT_GRACE_S)
        self.leftover_segments |= leaked_segments(before)


def steps_of(records: list[dict]) -> dict[int, dict]:
    return {record["step"]: record["data"] for record in records}


@pytest.fixture(scope="module")
def sync_run(tiny_model_dir, tmp_path_factory) -> Invocations:
    runs = Invocations(tmp_path_factory.mktemp("vllm_sync") / "run")
    data_dir = runs.run_dir.parent / "sample_data_public1"  # the multi-turn overlay's data: one public test each
    assert build_data(["--from", "sample", "--out", str(data_dir), "--public-tests", "1"]) == 0
    runs.run(data_dir, tiny_model_dir, 2, "+multi_turn=debug_cpu", "trainer.test_freq=2")
    return runs


@pytest.fixture(scope="module")
def async_run(sample_data_dir, tiny_model_dir, tmp_path_factory) -> Invocations:
    runs = Invocations(tmp_path_factory.mktemp("vllm_separate_async") / "run")
    runs.run(
        sample_data_dir, tiny_model_dir, 3, "cpu_layout=separate_async", "nouscoder.cpu.known_answers.fraction=0.5"
    )
    return runs


def test_sync_trainer_trains_on_policy_on_vllm(sync_run):
    records = metrics(sync_run.run_dir / "metrics.jsonl")
    train = [record["data"] for record in records if "actor/grad_norm" in record["data"]]
    assert len(train) == 2
    assert_trained_on_policy_with_the_recipes_parts(train)
    assert (sync_run.run_dir / "global_step_2" / "actor").is_dir()
    assert "vLLM on CPU: reloaded" in sync_run.log  # the weight sync went through the project's extension
    print(f"sync on vLLM: wall {sync_run.wall_s} s, steps {[step['timing_s/step'] for step in train]} s")


def test_multi_turn_feedback_on_vllm(sync_run):
    records = [record["data"] for record in metrics(sync_run.run_dir / "metrics.jsonl")]
    train = [step for step in records if "multi_turn/turns/mean" in step]
    assert len(train) == 2
    for step in train:
        assert step["multi_turn/turns/max"] == 2 and step["multi_turn/feedback/given"] > 0
        assert step["multi_turn/feedback_tokens/mean"] > 0
        assert step["multi_turn/mask_mismatch"] == 0  # on the trained batch: feedback masked, model tokens kept
        assert step["multi_turn/public_pass_rate/turn_2"] > 0 and step["multi_turn/stop_reason/public_passed"] > 0
        assert step["multi_turn/hidden_pass_rate/last_turn"] > step["multi_turn/hidden_pass_rate/first_turn"]
        assert step["multi_turn/public_tests_errors"] == 0
    assert any(key.startswith("val-core/") for step in records for key in step)  # validation ran the same loop


def test_separate_async_trainer_trains_on_vllm(async_run):
    steps = steps_of(metrics(async_run.run_dir / "metrics.jsonl"))
    assert sorted(steps) == [1, 2, 3]
    assert any(step["grading/verdict/accepted"] > 0 for step in steps.values())
    assert any(step["critic/score/min"] < 0 < step["critic/score/max"] for step in steps.values())
    assert all(step["actor/grad_norm"] > 0 for step in steps.values())
    assert all(step["grading/internal_errors"] == 0 for step in steps.values())
    assert all(step["nouscoder/known_answers/active"] == 1.0 for step in steps.values())
    assert all(0 < step["rollout_corr/rollout_is_mean"] <= 2.0 for step in steps.values())  # off-policy, capped
    assert all(step["cpu_gloo/weight_sync_mib"] > 0 for step in steps.values())
    assert (steps[1]["nouscoder/temperature"], steps[3]["nouscoder/temperature"]) == (1.0, 1.1)
    assert (async_run.run_dir / "global_step_2" / "actor").is_dir()
    print(f"separate_async on vLLM: wall {async_run.wall_s} s, steps {[s['timing_s/step'] for s in steps.values()]} s")


@pytest.mark.parametrize("runs", ["sync_run", "async_run"])
def test_nothing_of_a_vllm_run_is_left_behind(runs, request):
    invocations: Invocations = request.getfixturevalue(runs)
    assert invocations.leftover_processes == []
    assert invocations.leftover_segments == set()
