"""One optimisation step per verl_ext loss through verl's real actor (TrainingWorker + FSDP2 engine + ppo_loss)
on CPU with a tiny randomly initialised Qwen2; see verl_actor_step_driver.py for what running it on CPU takes."""

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

DRIVER = Path(__file__).with_name("verl_actor_step_driver.py")


@pytest.fixture(scope="module")
def step_results() -> dict:
    completed = subprocess.run([sys.executable, str(DRIVER)], capture_output=True, text=True, timeout=500, check=False)
    assert completed.returncode == 0, completed.stderr[-4000:]
    return json.loads(completed.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("loss_mode", ["dapo", "gspo_seq", "gspo_plus"])
def test_one_actor_step_makes_positive_advantage_tokens_more_likely(step_results, loss_mode):
    result = step_results[loss_mode]
    metrics = result["metrics"]
    assert all(math.isfinite(value) and value > 0 for value in metrics["grad_norm"])
    assert result["positive_change"] > 0 > result["negative_change"]
    assert sum(metrics["actor/pg_loss"]) == pytest.approx(result["expected_on_policy_loss"], rel=1e-5, abs=1e-6)
    assert metrics["actor/clipfrac_low"] == [0.0] and metrics["actor/clipfrac_high"] == [0.0]
    assert "actor/tis_capped_frac" in metrics
