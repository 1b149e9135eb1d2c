"""Step metrics of grading, computed from the per-sample reward dicts (verl's ``reward_extra_info`` columns).

verl 0.9.1 puts every key of the dict ``compute_score`` returns into the batch as a per-sample column
(``reward_extra_info``): the legacy trainer's ``reward_extra_infos_dict`` / ``batch.non_tensor_batch``, the V1
trainer's ``extra_fields["reward_extra_info"]`` in TransferQueue. Validation turns every numeric column into
``val-aux/<data_source>/<key>/mean@N`` (``process_validation_metrics``), but a training step logs none of them,
so the trainer calls ``grading_step_metrics`` on the step's columns and adds the result to its metrics dict.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from reward_fns.types import Verdict

PREFIX = "grading/"


def nearest_rank(values: Sequence[float], quantile: float) -> float:
    """Nearest-rank percentile: the ``ceil(quantile * n)``-th smallest value (NaN for no values)."""
    if not values:
        return math.nan
    ordered = sorted(values)
    return float(ordered[max(0, math.ceil(quantile * len(ordered)) - 1)])


def columns_from_samples(samples: Iterable[Mapping[str, Any]]) -> dict[str, list[Any]]:
    """Per-sample reward dicts (e.g. V1 ``extra_fields[i]["reward_extra_info"]``) -> one list per key."""
    columns: dict[str, list[Any]] = {}
    for sample in samples:
        for key, value in sample.items():
            columns.setdefault(key, []).append(value)
    return columns


def grading_step_metrics(columns: Mapping[str, Sequence[Any]]) -> dict[str, float]:
    """Metrics of one step from the reward columns of ``reward_fns.async_score.compute_score``.

    Keys: ``grading/verdict/<verdict>`` (count of each ``Verdict``), ``grading/tests_executed/mean``,
    ``grading/tests_total/mean``, ``grading/tests_saved_frac`` (1 - executed / total tests: what early exit saved),
    ``grading/latency_s/{p50,p95,max}`` (call to reward, queueing included), ``grading/queue_depth/{mean,max}``,
    ``grading/worker_restarts`` (cumulative since the pool started), ``grading/internal_errors``,
    ``grading/ground_truth_errors`` (internal errors whose ground truth could not be read, e.g. a layout no dataset
    uses) and ``grading/regraded`` (counts in this step).
    """
    verdicts = [str(verdict) for verdict in columns.get("verdict", [])]
    metrics = {f"{PREFIX}verdict/{verdict.value}": float(verdicts.count(verdict.value)) for verdict in Verdict}
    executed = [float(value) for value in columns.get("tests_executed", [])]
    totals = [float(value) for value in columns.get("total", [])]
    latency = [float(value) for value in columns.get("latency_s", []) if value >= 0]
    depth = [float(value) for value in columns.get("queue_depth", []) if value >= 0]
    restarts = [float(value) for value in columns.get("worker_restarts", []) if value >= 0]
    metrics |= {
        f"{PREFIX}tests_executed/mean": _mean(executed),
        f"{PREFIX}tests_total/mean": _mean(totals),
        f"{PREFIX}tests_saved_frac": 1.0 - sum(executed) / sum(totals) if sum(totals) else 0.0,
        f"{PREFIX}latency_s/p50": nearest_rank(latency, 0.50),
        f"{PREFIX}latency_s/p95": nearest_rank(latency, 0.95),
        f"{PREFIX}latency_s/max": max(latency, default=math.nan),
        f"{PREFIX}queue_depth/mean": _mean(depth),
        f"{PREFIX}queue_depth/max": max(depth, default=math.nan),
        f"{PREFIX}worker_restarts": max(restarts, default=0.0),
        f"{PREFIX}internal_errors": float(sum(bool(value) for value in columns.get("internal_error", []))),
        f"{PREFIX}ground_truth_errors": float(sum(bool(value) for value in columns.get("ground_truth_error", []))),
        f"{PREFIX}regraded": float(sum(bool(value) for value in columns.get("regraded", []))),
    }
    return metrics


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else math.nan
