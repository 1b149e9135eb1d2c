"""The reward-loop side of the pool: find (or create) the named dispatcher, ship each problem once, grade a response.

One ``PoolClient`` per process and pool config (``pool_client``). The client extracts the program (the model text
never leaves this process), hashes the ground truth, ``ray.put``s it the first time it sees that hash, and awaits
the dispatcher under the hard ``call_deadline_s``: whatever happens, ``grade`` returns a verdict.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import time
from typing import Any

import ray
from ray.actor import ActorHandle
from ray.exceptions import RayActorError

from reward_fns.extract import extract_code
from reward_fns.ray_pool.cache import content_key, ground_truth_text
from reward_fns.ray_pool.config import PoolConfig
from reward_fns.ray_pool.dispatcher import GradingDispatcher, Outcome, internal_error
from reward_fns.types import GraderConfig, GradeResult, GroundTruthError

logger = logging.getLogger(__name__)

DISPATCHER_MAX_CONCURRENCY = 100_000
"""Concurrent calls the async dispatcher accepts (every rollout of a step may be waiting on it)."""


def dispatcher_handle(config: PoolConfig, isolation: str) -> ActorHandle:
    """The job's dispatcher actor named ``config.name``; the first caller creates it (and sizes the pool)."""
    return (
        ray.remote(GradingDispatcher)
        .options(
            name=config.name,
            get_if_exists=True,
            num_cpus=0,
            max_concurrency=DISPATCHER_MAX_CONCURRENCY,
        )
        .remote(config, isolation)
    )


class PoolClient:
    """Grades responses through the shared dispatcher; problems kept in the object store by content hash."""

    def __init__(self, config: PoolConfig, isolation: str) -> None:
        self.config = config
        self.isolation = isolation
        self.dispatcher = dispatcher_handle(config, isolation)
        self._refs: collections.OrderedDict[str, ray.ObjectRef] = collections.OrderedDict()

    def problem_ref(self, ground_truth: str | dict[str, Any]) -> tuple[str, list[ray.ObjectRef]]:
        """(content key, [ObjectRef]) of a ground truth; ``ray.put`` only the first time this process sees it.

        The ref travels inside a list so that Ray does not resolve it on the way: only a worker whose cache
        misses fetches the text.
        """
        text = ground_truth_text(ground_truth)
        key = content_key(text)
        ref = self._refs.get(key)
        if ref is None:
            ref = self._refs[key] = ray.put(text)
            while len(self._refs) > self.config.client_cache_problems:
                self._refs.popitem(last=False)
        self._refs.move_to_end(key)
        return key, [ref]

    async def grade(
        self, response: str, ground_truth: str | dict[str, Any], config: GraderConfig
    ) -> tuple[Outcome, float]:
        """The dispatcher's ``Outcome`` for ``response`` and the latency of the call (queueing included)."""
        started = time.monotonic()
        try:
            key, ref = self.problem_ref(ground_truth)
        except GroundTruthError as exc:  # nothing to ship: decided here, never an exception into verl
            return Outcome(GradeResult.bad_ground_truth(exc), 0, -1, False, -1), time.monotonic() - started
        call = self.dispatcher.grade.remote(extract_code(response), key, ref, config)
        try:
            outcome = await asyncio.wait_for(_awaited(call), self.config.call_deadline_s)
        except TimeoutError:
            ray.cancel(call)
            detail = f"grading call exceeded its hard deadline of {self.config.call_deadline_s} s"
            logger.error("%s (problem %s)", detail, key[:12])
            outcome = Outcome(internal_error(detail), 0, -1, False, -1)
        except RayActorError as exc:  # the dispatcher itself is gone: this completion is lost, the next call rebuilds
            logger.error("grading dispatcher %r died: %r; it is recreated on the next call", self.config.name, exc)
            self.dispatcher = dispatcher_handle(self.config, self.isolation)
            outcome = Outcome(internal_error(f"grading dispatcher died: {type(exc).__name__}"), 0, -1, False, -1)
        return outcome, time.monotonic() - started


def shutdown_pools() -> None:
    """Stop the pools this process created or used: their workers, then the dispatchers (tests, benchmarks)."""
    for client in _clients.values():
        ray.get(client.dispatcher.shutdown.remote())
        ray.kill(client.dispatcher)
    _clients.clear()


async def _awaited(ref: ray.ObjectRef) -> Any:
    return await ref


_clients: dict[tuple[PoolConfig, str], PoolClient] = {}


def pool_client(config: PoolConfig, isolation: str) -> PoolClient:
    """The process-wide client for ``config`` (created on first use)."""
    client = _clients.get((config, isolation))
    if client is None:
        client = _clients[(config, isolation)] = PoolClient(config, isolation)
    return client
