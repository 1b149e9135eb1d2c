"""A run's learning curve from its logged metrics: held-out and training pass rates by step.

Read by ``run_summary`` (``make demo``), ``benchmarks/learning_curve.py`` and the CPU learning test, from the
``{step: {metric: value}}`` records of ``metrics.jsonl`` (``select_checkpoint.read_step_metrics``):

- held-out pass rate: verl's validation score ``val-core/<data_source>/acc/mean@<n>`` (the mean over the validation
  problems of the fraction of their n samples that passed; ``acc`` is the grader's 1/0), logged at step 0 with
  ``trainer.val_before_train`` and every ``trainer.test_freq`` steps; with several data sources, their mean;
- training pass rate: over every rollout a step generated, i.e. the trained batch (``grading/verdict/*`` count its
  rollouts, ``accepted`` the passing ones) plus the groups dynamic sampling dropped, which all passed
  (``dropped_solve_all``) or all failed, ``group_size`` rollouts each. ``nouscoder/pass_rate`` alone is the trained
  batch's, which dynamic sampling keeps near the middle (it drops the groups that all pass).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

VALIDATION_PASS_RATE = re.compile(r"^val-core/(?P<source>.+)/acc/mean@(?P<n>\d+)$")
VERDICT_PREFIX = "grading/verdict/"
DROPPED_GROUPS = "nouscoder/dynamic_sampling/dropped_groups"
DROPPED_SOLVE_ALL = "nouscoder/dynamic_sampling/dropped_solve_all"


def validation_pass_rate(metrics: Mapping[str, float]) -> float | None:
    """The held-out pass rate of one step's metrics, or None when the step was not validated."""
    rates = [value for key, value in metrics.items() if VALIDATION_PASS_RATE.match(key)]
    return sum(rates) / len(rates) if rates else None


def validation_curve(step_metrics: Mapping[int, Mapping[str, float]]) -> dict[int, float]:
    """``{step: held-out pass rate}`` for every validated step."""
    curve = {step: validation_pass_rate(metrics) for step, metrics in step_metrics.items()}
    return {step: rate for step, rate in sorted(curve.items()) if rate is not None}


def training_pass_rate(metrics: Mapping[str, float], group_size: int) -> float | None:
    """Pass rate over every rollout the step generated (module docstring), or None for a validation-only record."""
    trained = sum(value for key, value in metrics.items() if key.startswith(VERDICT_PREFIX))
    if not trained:
        return None
    passed = metrics.get(f"{VERDICT_PREFIX}accepted", 0.0) + metrics.get(DROPPED_SOLVE_ALL, 0.0) * group_size
    return passed / (trained + metrics.get(DROPPED_GROUPS, 0.0) * group_size)


def training_curve(step_metrics: Mapping[int, Mapping[str, float]], group_size: int) -> dict[int, float]:
    """``{step: training pass rate}`` for every training step."""
    curve = {step: training_pass_rate(metrics, group_size) for step, metrics in step_metrics.items()}
    return {step: rate for step, rate in sorted(curve.items()) if rate is not None}
