"""launch/rehearsal.py report on run directories written here: the verdict finds a repeated step and a resume that
skipped one, and the per-step figures come from verl's metric names. The real rehearsal: tests/launch/test_rehearsal.py."""

from __future__ import annotations

import json

import pytest
import rehearsal


def run_dir(tmp_path, killed: list[int], resumed: list[int]):
    """A stage's metrics as a killed run and its resume leave them (metrics.1.jsonl, then metrics.jsonl)."""
    ckpt = tmp_path / "stage" / "checkpoints"
    ckpt.mkdir(parents=True)
    (ckpt / "global_step_1").mkdir()
    data = {
        "timing_s/step": 10.0,
        "timing_s/gen": 4.0,
        "timing_s/old_log_prob": 1.5,
        "timing_s/ref": 0.5,
        "timing_s/update_actor": 3.0,
        "timing_s/update_weights": 0.5,
        "grading/latency_s/max": 2.0,
        "perf/total_num_tokens": 3000.0,
        "prompt_length/mean": 100.0,
        "response_length/mean": 200.0,
        "nouscoder/memory/trainer_peak_gb": 61.5,
        "val-core/livecodebench/acc/mean@8": 0.5,
    }
    for name, steps in (("metrics.1.jsonl", killed), ("metrics.jsonl", resumed)):
        (ckpt / name).write_text("".join(json.dumps({"step": step, "data": data}) + "\n" for step in steps))
    return tmp_path


def args(tmp_path, rollout_gpus: int = 8):
    """The report's arguments for `run_dir`'s stage, composed as dapo_32k (its shape)."""
    (tmp_path / "dapo_32k").symlink_to(tmp_path / "stage")
    return rehearsal.argparse.Namespace(
        run_dir=tmp_path, stage="dapo_32k", model="m", nodes=2, gpus_per_node=8, trainer_gpus=8,
        rollout_gpus=rollout_gpus, killed=True, overrides=[],
    )  # fmt: skip


def test_a_resume_from_the_last_step_passes_the_kill_check_and_the_figures_follow_verls_metrics(tmp_path):
    report = rehearsal.report(args(run_dir(tmp_path, [1, 2, 3], [4, 5])))
    assert report["checks"]["the kill inside step 4 and the resume from global_step_3"]
    assert report["checks"]["0 step(s) repeated"]
    row = report["steps"][0]
    assert {key: row[key] for key in ("step_s", "generation_s", "weight_sync_s", "log_prob_s", "update_s")} == {
        "step_s": 10.0, "generation_s": 4.0, "weight_sync_s": 0.5, "log_prob_s": 2.0, "update_s": 3.0,
    }  # fmt: skip
    assert (row["grading_wait_s"], row["sequences"], row["mean_response_tokens"]) == (2.0, 10, 200.0)
    assert row["tokens_per_s_per_rollout_gpu"] == pytest.approx(10 * 200 / 10 / 8, abs=0.1)
    assert row["peak_memory_gb"] == {"trainer": 61.5} and report["peak_memory_gb"] == {"trainer": 61.5}
    assert report["shape"]["group_size"] == 8 and report["allocation"]["gpu"] == "none (CPU mode)"
    # no merged model or evaluation in this directory: the verdict says so
    assert report["verdict"] == ("rehearsal FAILED: not done: the merge to a Hugging Face model; the evaluation")


@pytest.mark.parametrize(("killed", "resumed", "check"), [
    ([1, 2, 3], [3, 4, 5], "1 step(s) repeated"),
    ([1, 2, 3], [5], "the kill inside step 4 and the resume from global_step_3"),
])  # fmt: skip
def test_a_repeated_or_skipped_step_fails_the_verdict(tmp_path, killed, resumed, check):
    report = rehearsal.report(args(run_dir(tmp_path, killed, resumed)))
    assert report["checks"][check] is False and check in report["verdict"]
