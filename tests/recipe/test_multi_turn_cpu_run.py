"""Two real training steps of the multi-turn loop in CPU mode (verl's trainer, Ray, the hf_cpu rollout, the grader).

``python -m recipe.nouscoder.main --config-name debug_cpu +multi_turn=debug_cpu``: half of the first answers are
scripted (known answers, ``by_turn: [failing, passing]``: a failing bundled program, public-test feedback, a passing
revision), the others are the random model's. Dynamic sampling is off so that each step trains exactly one batch.
The tiny model is the one of the single-turn e2e test (``conftest.tiny_model_dir``); the data is the sample built
with ``--public-tests 1``, as the overlay builds it. What the step metrics must show: two turns used, feedback given
and masked out of the trained batch, revisions passing the public and the hidden tests, no grader fault; and
validation ran through the same loop.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from data_prep.build_deepcoder_mix import main as build_data

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
STEPS = 2


def test_two_cpu_steps_with_public_test_feedback(tmp_path: Path, tiny_model_dir: Path) -> None:
    run_dir, data_dir = tmp_path / "run", tmp_path / "sample_data_public1"
    assert build_data(["--from", "sample", "--out", str(data_dir), "--public-tests", "1"]) == 0
    command = [
        sys.executable,
        "-m",
        "recipe.nouscoder.main",
        "--config-name",
        "debug_cpu",
        "+multi_turn=debug_cpu",
        f"trainer.default_local_dir={run_dir}",
        f"data.train_files={data_dir / 'train.parquet'}",
        f"data.val_files={data_dir / 'test.parquet'}",
        f"actor_rollout_ref.model.path={tiny_model_dir}",
        f"trainer.total_training_steps={STEPS}",
        "trainer.save_freq=-1",
        f"trainer.test_freq={STEPS}",
        "trainer.logger=[console,file]",
        "algorithm.filter_groups.enable=false",
    ]
    environment = {key: value for key, value in os.environ.items() if not key.startswith("RAY_")}
    result = subprocess.run(command, cwd=REPO, env=environment, capture_output=True, text=True, timeout=1500)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-6000:]

    lines = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines() if line.strip()]
    train = [line["data"] for line in lines if "multi_turn/turns/mean" in line["data"]]
    assert len(train) == STEPS
    for metrics in train:
        assert metrics["nouscoder/known_answers/active"] == 1.0
        assert metrics["multi_turn/turns/max"] == 2 and metrics["multi_turn/feedback/given"] > 0
        assert metrics["multi_turn/feedback_tokens/mean"] > 0
        assert metrics["multi_turn/mask_mismatch"] == 0  # on the trained batch: feedback masked, model tokens kept
        assert metrics["multi_turn/public_pass_rate/turn_2"] > 0 and metrics["multi_turn/stop_reason/public_passed"] > 0
        assert metrics["multi_turn/hidden_pass_rate/last_turn"] > metrics["multi_turn/hidden_pass_rate/first_turn"]
        assert metrics["grading/internal_errors"] == 0 and metrics["multi_turn/public_tests_errors"] == 0
    assert any(key.startswith("val-core/") for line in lines for key in line["data"])
