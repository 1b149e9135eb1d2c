"""Per-step training metrics of the NousCoder recipe, computed from the step's rollout batch.

Length by correctness, truncation rate and masked-advantage fraction come from
``verl_ext.metrics.compute_length_bias_metrics`` (keys ``length_bias/*``, NousCoder figure 5); this module
adds pass rate, solve-all / solve-none / mixed group counts and within-group diversity (keys ``nouscoder/*``),
and the grading metrics of the step's reward dicts (keys ``grading/*``, ``grading_metrics``).
"""

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
from verl import DataProto

from recipe.nouscoder.extra_fields import KNOWN_ANSWER_FIELD, extra_field_values
from recipe.nouscoder.training.diversity import batch_group_diversity
from reward_fns.ray_pool.metrics import PREFIX, columns_from_samples, grading_step_metrics
from reward_fns.types import GradeResult, Verdict
from verl_ext.metrics import compute_length_bias_metrics

VERDICTS = frozenset(verdict.value for verdict in Verdict)
POOL_ONLY_METRICS = {
    "latency_s": ("latency_s/p50", "latency_s/p95", "latency_s/max"),
    "queue_depth": ("queue_depth/mean", "queue_depth/max"),
    "worker_restarts": ("worker_restarts",),
    "regraded": ("regraded",),
}
"""Reward-dict key of the Ray grading pool -> the ``grading/*`` metrics made from it (absent with the sync grader)."""


def sequence_scores(batch: DataProto) -> torch.Tensor:
    """(bs,) sequence reward: row sum of ``token_level_scores`` (the reward before any KL penalty)."""
    return batch.batch["token_level_scores"].sum(dim=-1).float()


def group_outcome_counts(uids: np.ndarray, passed: np.ndarray) -> dict[str, int]:
    """Groups (rows sharing a uid) in which every rollout passed, none passed, or some passed."""
    passed_by_uid: dict[str, list[bool]] = {}
    for uid, row_passed in zip(uids, passed, strict=True):
        passed_by_uid.setdefault(uid, []).append(bool(row_passed))
    solve_all = sum(all(values) for values in passed_by_uid.values())
    solve_none = sum(not any(values) for values in passed_by_uid.values())
    return {
        "groups": len(passed_by_uid),
        "solve_all": solve_all,
        "solve_none": solve_none,
        "mixed": len(passed_by_uid) - solve_all - solve_none,
    }


def compute_step_metrics(
    batch: DataProto,
    max_response_length: int,
    pass_threshold: float = 0.0,
    diversity_ngram: int = 4,
    diversity_max_groups: int | None = None,
) -> dict[str, float]:
    """Metrics of one training batch.

    Needs ``token_level_scores``, ``responses``, ``response_mask``, ``attention_mask`` and (for the masked
    fraction) ``advantages`` in ``batch.batch``; ``uid`` in ``batch.non_tensor_batch``. A rollout passed when
    its sequence reward is above ``pass_threshold``.

    Returns ``length_bias/*`` (see verl_ext.metrics) and ``nouscoder/pass_rate``, ``nouscoder/groups/{total,
    solve_all,solve_none,mixed}``, ``nouscoder/diversity/within_group``.
    """
    passed = (sequence_scores(batch) > pass_threshold).numpy()
    counts = group_outcome_counts(batch.non_tensor_batch["uid"], passed)
    metrics = dict(compute_length_bias_metrics(batch, max_response_length))
    metrics.update(
        {
            "nouscoder/pass_rate": float(passed.mean()) if len(passed) else float("nan"),
            "nouscoder/groups/total": float(counts["groups"]),
            "nouscoder/groups/solve_all": float(counts["solve_all"]),
            "nouscoder/groups/solve_none": float(counts["solve_none"]),
            "nouscoder/groups/mixed": float(counts["mixed"]),
            "nouscoder/diversity/within_group": batch_group_diversity(
                batch, n=diversity_ngram, max_groups=diversity_max_groups
            ),
        }
    )
    return metrics


def known_answer_metrics(extra_fields: Sequence[Any]) -> dict[str, float]:
    """``nouscoder/known_answers/*`` of a step whose rollouts were generated with the CPU mode's known answers on.

    The known-answers rollout client (recipe/nouscoder/cpu/known_answer_client.py) marks every response with
    ``extra_fields["known_answer"]`` (the bundled program's kind, or "" for the model's own text) only while that
    test/demo option is on, so these keys appear exactly when it is: ``active`` (1.0), ``replaced`` (count) and
    ``replaced_fraction`` of the step's rollouts.
    """
    marks = [mark for mark in extra_field_values(extra_fields, KNOWN_ANSWER_FIELD) if mark is not None]
    if not marks:
        return {}
    replaced = sum(1 for mark in marks if mark)
    return {
        "nouscoder/known_answers/active": 1.0,
        "nouscoder/known_answers/replaced": float(replaced),
        "nouscoder/known_answers/replaced_fraction": replaced / len(extra_fields),
    }


def executed_tests(info: Mapping[str, Any]) -> int:
    """Tests that ran for one reward dict: the pool's ``tests_executed``, else derived from verdict / passed / total.

    The sync grader (``reward_fns.score.compute_score``) stops at the first failing test like the pool does, so
    the pool's own rule (``GradeResult.tests_executed``) gives the same count from its fields.
    """
    if info.get("tests_executed") is not None:
        return int(info["tests_executed"])
    result = GradeResult(
        Verdict(info["verdict"]), passed=int(info.get("passed") or 0), total=int(info.get("total") or 0)
    )
    return result.tests_executed


def grading_metrics(reward_infos: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """``grading/*`` metrics of one step's reward dicts, for both reward paths of ``reward_fns``.

    Only dicts with a known ``verdict`` count (rows graded by another reward function, or with no reward info, are
    left out; none at all gives ``{}``). Always: ``grading/verdict/<verdict>`` counts, ``grading/tests_executed/mean``,
    ``grading/tests_total/mean``, ``grading/tests_saved_frac``, ``grading/internal_errors``,
    ``grading/ground_truth_errors`` (``reward_fns.ray_pool.
    grading_step_metrics``). Pool-only (``reward_fns.async_score``): ``grading/latency_s/{p50,p95,max}``,
    ``grading/queue_depth/{mean,max}``, ``grading/worker_restarts``, ``grading/regraded``, each only when some
    dict of the step carries a known (non-negative) value of its key. A metric with no data (NaN, e.g. no ``total``
    in any dict) is left out rather than logged.
    """
    graded = [
        {key: value for key, value in info.items() if value is not None}
        for info in reward_infos
        if str(info.get("verdict")) in VERDICTS
    ]
    if not graded:
        return {}
    columns = columns_from_samples(info | {"tests_executed": executed_tests(info)} for info in graded)
    metrics = grading_step_metrics(columns)
    for key, names in POOL_ONLY_METRICS.items():
        if not any(float(value) >= 0 for value in columns.get(key, [])):
            for name in names:
                metrics.pop(PREFIX + name)
    return {name: value for name, value in metrics.items() if not math.isnan(value)}
