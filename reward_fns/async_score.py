"""verl reward on the Ray grading pool: ``async def compute_score``, graded as soon as each rollout is generated.

Turn it on with one line of the verl config::

    reward.custom_reward_function.path=pkg://reward_fns.async_score

(``reward.custom_reward_function.name`` defaults to ``compute_score``). Why a function and not a reward manager:
verl 0.9.1's default ``naive`` manager (and ``dapo``) already ``await`` a coroutine ``compute_score`` on the
reward-loop worker's event loop (``inspect.iscoroutinefunction``), the agent loop calls the reward loop per sample
the moment the sample is generated (``AgentLoopWorker._compute_score``), and ``get_custom_reward_fn`` loads the
function inside every reward-loop worker without any registration step, so it composes with any manager the run
picks (``dapo``'s overlong penalty included). Nothing runs in verl's thread pool: each call is one Ray await.

Settings come from ``reward.custom_reward_function.reward_kwargs``: ``pool_*`` keys configure the pool
(``reward_fns.ray_pool.config.PoolConfig``, e.g. ``+...reward_kwargs.pool_granularity=per_test``), the other keys
the grader (``reward_fns.types.GraderConfig``, e.g. ``+...reward_kwargs.time_limit_s=10``); both also read
``REWARD_FNS_POOL_*`` / ``REWARD_FNS_*`` environment variables. The returned dict has the keys of
``reward_fns.score.compute_score`` plus ``tests_executed``, ``latency_s``, ``queue_depth``, ``regraded`` and
``worker_restarts``, the inputs of ``reward_fns.ray_pool.grading_step_metrics``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from reward_fns.multi_turn import response_to_grade, turn_penalty
from reward_fns.ray_pool.client import pool_client
from reward_fns.ray_pool.config import pool_config, pool_keys
from reward_fns.score import grader_config, score_dict
from reward_fns.types import Verdict

logger = logging.getLogger(__name__)

VERL_EXTRA_KWARGS = frozenset({"reward_router_address", "reward_model_tokenizer"})
"""Keys verl adds with a reward router; the grader has no use for them."""


async def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: str | dict[str, Any],
    extra_info: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> dict[str, Any]:
    """Grade ``solution_str`` on the pool: +1.0 only if every hidden test passes (NousCoder), else -1.0.

    A multi-turn trajectory's final program is graded instead, with the turn penalty (``reward_fns.multi_turn``).

    Returns the dict of ``reward_fns.score.score_dict`` plus ``tests_executed`` (tests that ran: early exit
    saves the rest), ``latency_s`` (this call, queueing included), ``queue_depth`` (completions waiting for a
    worker when it arrived; -1 if unknown), ``regraded`` (a worker died on it and it was graded again) and
    ``worker_restarts`` (cumulative in the pool; -1 if unknown).
    """
    settings = {key: value for key, value in kwargs.items() if key not in VERL_EXTRA_KWARGS}
    pool = pool_config(settings)
    grader = grader_config({key: value for key, value in settings.items() if key not in pool_keys(settings)})
    response = response_to_grade(solution_str, extra_info)
    outcome, latency_s = await pool_client(pool, grader.isolation).grade(response, ground_truth, grader)
    if outcome.result.verdict is Verdict.INTERNAL_ERROR:
        where = {
            key: (extra_info or {}).get(key) for key in ("problem_id", "index", "split") if key in (extra_info or {})
        }
        logger.error("internal_error (%s): %s", where or "unknown problem", outcome.result.detail)
    scores = score_dict(outcome.result)
    scores["score"] -= turn_penalty(extra_info, outcome.result.accepted)
    return scores | {
        "tests_executed": outcome.tests_executed,
        "latency_s": latency_s,
        "queue_depth": outcome.queue_depth,
        "regraded": outcome.regraded,
        "worker_restarts": outcome.worker_restarts,
    }
