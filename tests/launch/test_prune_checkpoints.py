"""launch/prune_checkpoints.py on verl checkpoint directories written by the test (layout of select_checkpoint)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PRUNE = REPO / "launch" / "prune_checkpoints.py"
KEY = "val-core/livecodebench/acc/mean@8"


def make_run(directory: Path, scores: dict[int, float], latest: int, extra_steps: tuple[int, ...] = ()) -> Path:
    """global_step_N/actor/fsdp_config.json for each scored step and extra step, the tracker, metrics.jsonl."""
    directory.mkdir(parents=True)
    for step in sorted(set(scores) | set(extra_steps)):
        actor = directory / f"global_step_{step}" / "actor"
        actor.mkdir(parents=True)
        (actor / "fsdp_config.json").write_text(json.dumps({"FSDP_version": 1, "world_size": 1}))
    (directory / "latest_checkpointed_iteration.txt").write_text(str(latest))
    lines = [json.dumps({"step": step, "data": {KEY: score, "actor/pg_loss": 0.1}}) for step, score in scores.items()]
    (directory / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    return directory


def prune(directory: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(PRUNE), str(directory), *args], capture_output=True, text=True)


def remaining(directory: Path) -> list[int]:
    return sorted(int(path.name.removeprefix("global_step_")) for path in directory.glob("global_step_*"))


def test_keeps_the_best_the_newest_and_a_save_in_progress(tmp_path):
    # Steps 10..60 scored; step 70 exists but the tracker says 60: its save has not finished.
    scores = {10: 0.31, 20: 0.42, 30: 0.47, 40: 0.45, 50: 0.40, 60: 0.39}
    run = make_run(tmp_path / "ck", scores, latest=60, extra_steps=(70,))
    result = prune(run, "--keep-last", "2")
    assert result.returncode == 0, result.stderr
    assert remaining(run) == [30, 50, 60, 70]
    assert "keeping best global_step_30" in result.stdout and "deleted [10, 20, 40]" in result.stdout


def test_ties_keep_the_earlier_step_like_the_selection(tmp_path):
    run = make_run(tmp_path / "ck", {1: 0.2, 2: 0.5, 3: 0.5, 4: 0.1, 5: 0.1}, latest=5)
    assert prune(run, "--keep-last", "1").returncode == 0
    assert remaining(run) == [2, 5]


def test_dry_run_deletes_nothing(tmp_path):
    run = make_run(tmp_path / "ck", {1: 0.2, 2: 0.5, 3: 0.1, 4: 0.1}, latest=4)
    result = prune(run, "--keep-last", "1", "--dry-run")
    assert "would delete [1, 3]" in result.stdout
    assert remaining(run) == [1, 2, 3, 4]


def test_without_scores_nothing_is_deleted(tmp_path):
    run = make_run(tmp_path / "ck", {}, latest=3, extra_steps=(1, 2, 3))
    (run / "metrics.jsonl").unlink()
    result = prune(run, "--keep-last", "1")
    assert result.returncode == 0 and "deleting nothing" in result.stdout
    assert remaining(run) == [1, 2, 3]


def test_keep_last_zero_is_refused(tmp_path):
    run = make_run(tmp_path / "ck", {1: 0.2, 2: 0.5}, latest=2)
    result = prune(run, "--keep-last", "0")
    assert result.returncode == 2 and "keep at least 1" in result.stderr
    assert remaining(run) == [1, 2]


def test_keep_best_keeps_the_top_k_for_a_later_rescoring(tmp_path):
    # Ranked 30 (0.47), 40 (0.45), 20 (0.42), 50 (0.40), ...: --keep-best 3 keeps 30, 40, 20 besides the newest.
    scores = {10: 0.31, 20: 0.42, 30: 0.47, 40: 0.45, 50: 0.40, 60: 0.39, 70: 0.30}
    run = make_run(tmp_path / "ck", scores, latest=70)
    result = prune(run, "--keep-last", "1", "--keep-best", "3")
    assert result.returncode == 0, result.stderr
    assert remaining(run) == [20, 30, 40, 70]
    assert "keeping best global_step_30 (0.4700), global_step_40 (0.4500), global_step_20 (0.4200)" in result.stdout


def test_after_the_selection_only_the_selected_checkpoint_keeps_its_optimizer_shards(tmp_path):
    run = make_run(tmp_path / "ck", {10: 0.3, 20: 0.5, 30: 0.4}, latest=30)
    for step in (10, 20, 30):
        for rank in (0, 1):  # verl's FSDP checkpoint manager: one file of each kind per rank
            for kind in ("model", "optim", "extra_state"):
                (run / f"global_step_{step}" / "actor" / f"{kind}_world_size_2_rank_{rank}.pt").write_bytes(b"x" * 1000)
    result = prune(run, "--drop-optimizers-except", "20")
    assert result.returncode == 0, result.stderr
    assert (
        "model selected from global_step_20; deleted the 4 optimizer shard(s) of the other checkpoints" in result.stdout
    )
    for step in (10, 20, 30):
        files = sorted(path.name for path in (run / f"global_step_{step}" / "actor").glob("*_world_size_*"))
        kinds = {name.split("_world_size")[0] for name in files}
        assert kinds == ({"model", "optim", "extra_state"} if step == 20 else {"model", "extra_state"}), step
    assert remaining(run) == [10, 20, 30]  # checkpoints stay: their model shards can still be merged
