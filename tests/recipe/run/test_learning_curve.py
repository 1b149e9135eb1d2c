"""A run's learning curve from its logged metrics (recipe/nouscoder/run/learning_curve.py) and its line in run_summary."""

import json

import pytest

from recipe.nouscoder.run.learning_curve import training_pass_rate, validation_curve
from recipe.nouscoder.run.run_summary import main as run_summary_main
from recipe.nouscoder.run.run_summary import summary

VALIDATED = {"val-core/nouscoder-cpu-learn/acc/mean@4": 0.25, "val-aux/nouscoder-cpu-learn/acc/std@4": 0.1}
STEP = {
    "grading/verdict/accepted": 20.0,
    "grading/verdict/wrong_answer": 40.0,
    "grading/verdict/no_code": 4.0,
    "nouscoder/dynamic_sampling/dropped_groups": 3.0,
    "nouscoder/dynamic_sampling/dropped_solve_all": 1.0,
    "actor/grad_norm": 0.3,
}


def test_validation_curve_reads_verls_core_pass_rate_of_validated_steps_only():
    steps = {0: VALIDATED, 1: STEP, 3: {**STEP, "val-core/nouscoder-cpu-learn/acc/mean@4": 0.5}}
    assert validation_curve(steps) == {0: 0.25, 3: 0.5}
    two_sources = {"val-core/a/acc/mean@2": 0.2, "val-core/b/acc/mean@2": 0.6, "val-core/a/reward/mean@2": -0.6}
    assert validation_curve({5: two_sources}) == {5: pytest.approx(0.4)}


def test_training_pass_rate_counts_the_groups_dynamic_sampling_dropped():
    # 64 trained rollouts, 20 passed; 3 dropped groups of 8: one all passed (8), two all failed
    assert training_pass_rate(STEP, group_size=8) == pytest.approx((20 + 8) / (64 + 24))
    assert training_pass_rate(VALIDATED, group_size=8) is None


def test_run_summary_prints_the_held_out_curve_of_a_run_without_checkpoints(tmp_path):
    records = [{"step": 0, "data": VALIDATED}, {"step": 1, "data": STEP}, {"step": 2, "data": {**STEP, **VALIDATED}}]
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(record) + "\n" for record in records))
    text = summary(tmp_path)
    assert "held-out pass rate (verl validation): step 0: 0.25  step 2: 0.25" in text
    assert "checkpoints: none" in text  # trainer.save_freq=-1, as debug_cpu_learn
    assert len([line for line in text.splitlines() if line.startswith(("   1 ", "   2 "))]) == 2


def test_run_summary_of_a_directory_without_metrics_says_so_without_a_traceback(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        run_summary_main([str(tmp_path)])
    assert exit_info.value.code == 2
    assert f"error: metrics file {tmp_path / 'metrics.jsonl'} not found" in capsys.readouterr().err
