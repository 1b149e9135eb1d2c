"""Settings of the Ray grading pool: how many sandbox workers, where, how work is split, deadlines and retries.

Each field can be set, first match wins, by the verl config's
``reward.custom_reward_function.reward_kwargs.pool_<field>`` (e.g. ``+...reward_kwargs.pool_granularity=per_test``),
by the environment variable ``REWARD_FNS_POOL_<FIELD>`` (reaches Ray workers through ``runtime_env.env_vars``),
or by the default below. Granularities follow the NousCoder blog ("RL Environment", three parallel levels).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from reward_fns.settings import settings_from
from reward_fns.types import POOL_SETTING_PREFIX

Granularity = Literal["per_rollout", "per_problem", "per_test"]
Placement = Literal["all_nodes", "cpu_only_nodes"]

KWARG_PREFIX = POOL_SETTING_PREFIX
ENV_PREFIX = "REWARD_FNS_POOL_"


@dataclass(frozen=True, slots=True)
class PoolConfig:
    """The grading pool. Defaults: one sandbox worker per CPU Ray sees, minus ``reserved_cpus_per_node``."""

    granularity: Granularity = "per_rollout"
    """``per_rollout``: all tests of one completion in one worker, stop at the first failure (default);
    ``per_problem``: the G rollouts of a group graded together in one worker (the problem's tests parsed once);
    ``per_test``: a completion's tests split in chunks over workers, most expensive first, the rest dropped at the
    first failure."""
    workers: int = 0
    """Total sandbox workers; 0 = sized from the CPUs of the chosen nodes (see the two fields below)."""
    reserved_cpus_per_node: int = 0
    """CPUs per node left to the trainer, vLLM and Ray itself when ``workers`` is 0."""
    placement: Placement = "all_nodes"
    """``all_nodes``: every alive node with CPUs; ``cpu_only_nodes``: nodes without GPUs (if the allocation has any)."""
    worker_num_cpus: float = 1.0
    """Ray ``num_cpus`` each sandbox worker holds."""
    max_worker_restarts: int = 3
    """Restarts Ray may make of each sandbox worker (OOM kill, node loss); past it the worker is retired."""
    group_size: int = 0
    """per_problem: flush a problem's group when this many rollouts arrived (set it to ``rollout.n``); 0 = only the
    window below flushes."""
    group_window_s: float = 2.0
    """per_problem: longest a rollout waits for the rest of its group before its partial group is graded."""
    tests_per_chunk: int = 8
    """per_test: tests in one chunk sent to a worker (smaller: more parallel, more round trips)."""
    attempt_slack_s: float = 60.0
    """A worker call may run this long past the completion's ``total_time_budget_s`` before the worker is killed and
    the completion re-graded elsewhere."""
    call_deadline_s: float = 1800.0
    """Hard deadline of one ``compute_score`` call, queueing included; past it the verdict is ``internal_error``."""
    worker_cache_mb: int = 1024
    """Parsed problems (tests) kept per worker, by content hash, bounded by the ground-truth text size."""
    client_cache_problems: int = 256
    """Ground truths each reward-loop process keeps in the Ray object store (one ``ray.put`` per problem)."""
    name: str = "nouscoder_grading_pool"
    """Name of the dispatcher actor shared by all reward-loop workers of the job (the first creator sizes it)."""


def pool_config(kwargs: Mapping[str, Any] | None = None, environ: Mapping[str, str] | None = None) -> PoolConfig:
    """A ``PoolConfig`` from ``pool_*`` keys of ``kwargs`` (others ignored), then ``REWARD_FNS_POOL_*`` variables.

    Raises:
        ValueError: a ``pool_*`` key names no field, or a value has the wrong type or is not an allowed choice.
    """
    environ = os.environ if environ is None else environ
    given = {key: value for key, value in (kwargs or {}).items() if key in pool_keys(kwargs or {})}
    return settings_from(PoolConfig, given, environ, env_prefix=ENV_PREFIX, key_prefix=KWARG_PREFIX, label="pool")


def pool_keys(kwargs: Mapping[str, Any]) -> set[str]:
    """The keys of ``kwargs`` that belong to the pool (the rest are grader settings)."""
    return {key for key in kwargs if key.startswith(KWARG_PREFIX)}
