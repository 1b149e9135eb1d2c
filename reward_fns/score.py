"""verl reward: ``compute_score`` grades one model response against its problem's hidden tests.

Signature and call contract of verl 0.9.1 (``verl/experimental/reward_loop/reward_manager/naive.py``, ``dapo.py``,
``remote.py``): called with keywords ``data_source``, ``solution_str`` (the decoded response), ``ground_truth``
(``reward_model.ground_truth`` of the parquet row), ``extra_info`` (the row's ``extra_info`` plus ``num_turns``
and ``rollout_reward_scores``), the ``reward.custom_reward_function.reward_kwargs`` of the config, and, with a
reward router, ``reward_router_address`` / ``reward_model_tokenizer`` (ignored here). Sync managers call it from a
thread pool, so it is thread-safe. The returned dict's ``score`` is the reward; every key becomes a per-sample
column (``reward_loop.py`` takes the key set of the first sample, so every call returns the same keys) and
validation averages every non-string column (``metric_utils.process_validation_metrics``): ``acc``,
``internal_error`` and ``ground_truth_error`` become rates, ``passed``/``total``/``time_s``/``max_test_time_s`` means; ``verdict`` is a
string, which verl skips in metrics and only dumps with the generations.

Grader settings (``reward_fns.types.GraderConfig`` fields), first match wins:
1. ``reward_kwargs`` of the verl config, e.g. ``+reward.custom_reward_function.reward_kwargs.compare_mode=tolerant``;
2. environment variables ``REWARD_FNS_<FIELD>`` (e.g. ``REWARD_FNS_TIME_LIMIT_S=10``), which also reach Ray workers
   through ``runtime_env.env_vars``;
3. the defaults of ``GraderConfig`` (NousCoder limits).
``pool_*`` keys (settings of the Ray pool path, ``reward_fns.async_score``, in the same ``reward_kwargs``) are ignored.
``extra_info`` names the problem in logs and, for a multi-turn trajectory, carries its record: the final program is
graded instead of the decoded text, with the optional turn penalty (``reward_fns.multi_turn``); ``data_source`` is
not used (every row is graded as code).

``ground_truth`` may be in our layout or in the layout of another code dataset (TACO / verl ``prime_code``,
LiveCodeBench, PrimeIntellect, rLLM DeepCoder; ``reward_fns.layouts``); an unrecognised layout is logged once per
process and every such sample is ``internal_error`` with ``ground_truth_error`` set (step metric
``grading/ground_truth_errors``).
"""

from __future__ import annotations

import functools
import itertools
import logging
import os
import time
from collections.abc import Mapping
from typing import Any

from reward_fns.extract import extract_code
from reward_fns.multi_turn import response_to_grade, turn_penalty
from reward_fns.sandbox import IsolationUnavailableError, grade_program
from reward_fns.settings import settings_from
from reward_fns.types import (
    GRADER_ENV_PREFIX,
    POOL_SETTING_PREFIX,
    GraderConfig,
    GradeResult,
    GroundTruthError,
    Problem,
    Verdict,
)

logger = logging.getLogger(__name__)

_VERL_EXTRA_KWARGS = frozenset({"reward_router_address", "reward_model_tokenizer"})
_PROBLEM_CACHE_SIZE = 8
"""Parsed problems kept per process: the n responses of a prompt arrive together; each entry costs about the size of
its ground truth (tests can total hundreds of MB), so keep it small."""
_internal_errors = itertools.count(1)


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> dict[str, Any]:
    """Grade ``solution_str`` (last fenced python block) on every hidden test; +1.0 only if all pass (NousCoder).

    A multi-turn trajectory's final program is graded instead, and an accepted one loses the turn penalty
    (``reward_fns.multi_turn``).

    Returns:
        ``score`` (+1.0 / -1.0), ``acc`` (bool), ``verdict`` (a ``Verdict`` value), ``passed`` and ``total``
        (tests), ``time_s`` (wall time of grading), ``max_test_time_s`` (slowest test), ``internal_error``
        (bool: the grader or the data failed, not the model), ``ground_truth_error`` (bool: it was the data).
    """
    config = grader_config(
        {
            key: value
            for key, value in kwargs.items()
            if key not in _VERL_EXTRA_KWARGS and not key.startswith(POOL_SETTING_PREFIX)
        }
    )
    try:
        result = grade_response(response_to_grade(solution_str, extra_info), ground_truth, config)
    except IsolationUnavailableError:
        raise  # isolation="strict" on a host without every mechanism: the run must stop, as asked
    except Exception as exc:  # what a sample holds must not fail verl's reward step: counted as this sample's error
        logger.exception("grading a sample failed")
        result = GradeResult(Verdict.INTERNAL_ERROR, detail=f"grader internal error: {exc!r}"[:600])
    if result.verdict is Verdict.INTERNAL_ERROR:
        _log_internal_error(result, extra_info)
    scores = score_dict(result)
    scores["score"] -= turn_penalty(extra_info, result.accepted)
    return scores


def grade_response(response: str, ground_truth: Any, config: GraderConfig) -> GradeResult:
    """Parse the problem, extract the program and run it; a bad ground truth is ``internal_error``.

    A failure of the grader itself is ``internal_error`` too (``grade_program`` logs it and never raises), except
    ``IsolationUnavailableError`` under ``isolation="strict"``, which stops the run as the user asked.
    """
    started = time.perf_counter()
    try:
        problem = parse_problem(ground_truth)
    except GroundTruthError as exc:
        return GradeResult.bad_ground_truth(exc, time.perf_counter() - started)
    code = extract_code(response)
    if code is None:
        elapsed = time.perf_counter() - started
        return GradeResult.no_code(problem, elapsed)
    return grade_program(code, problem, config)


def score_dict(result: GradeResult) -> dict[str, Any]:
    """The reward dict verl receives; the same keys for every verdict."""
    return {
        "score": result.score,
        "acc": result.accepted,
        "verdict": str(result.verdict),
        "passed": result.passed,
        "total": result.total,
        "time_s": result.time_s,
        "max_test_time_s": result.max_test_time_s,
        "internal_error": result.verdict is Verdict.INTERNAL_ERROR,
        "ground_truth_error": result.ground_truth_error,
    }


def parse_problem(ground_truth: Any) -> Problem:
    """``Problem.from_ground_truth``, cached for string ground truths (a group of n responses shares one problem)."""
    if isinstance(ground_truth, str):
        return _parse_problem_text(ground_truth)
    return Problem.from_ground_truth(ground_truth)


@functools.lru_cache(maxsize=_PROBLEM_CACHE_SIZE)
def _parse_problem_text(ground_truth: str) -> Problem:
    return Problem.from_ground_truth(ground_truth)


def grader_config(overrides: Mapping[str, Any] | None = None, environ: Mapping[str, str] | None = None) -> GraderConfig:
    """A ``GraderConfig`` from ``overrides`` (verl ``reward_kwargs``, CLI flags), then ``REWARD_FNS_*`` variables.

    Raises:
        ValueError: an override or variable names no ``GraderConfig`` field, or its value has the wrong type.
    """
    environ = os.environ if environ is None else environ
    return settings_from(GraderConfig, overrides, environ, env_prefix=GRADER_ENV_PREFIX, label="grader")


def _log_internal_error(result: GradeResult, extra_info: Mapping[str, Any] | None) -> None:
    info = extra_info or {}
    where = {key: info[key] for key in ("problem_id", "index", "split", "source") if key in info}
    logger.error("internal_error #%d (%s): %s", next(_internal_errors), where or "unknown problem", result.detail)
