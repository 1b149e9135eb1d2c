"""The Ray sandbox worker: one actor process owning one warm fork server (``reward_fns.sandbox``) and a problem cache.

A worker grades one request at a time (a sync actor), so its fork server is never shared; a slow or hostile
program costs only this worker. If the actor process dies (OOM kill, ``kill -9``, node lost), Ray restarts it
(``PoolConfig.max_worker_restarts``) with a fresh fork server, and the dispatcher re-grades what it was doing.
"""

from __future__ import annotations

import dataclasses
import os
import time

import ray

from reward_fns.ray_pool.cache import ProblemCache
from reward_fns.sandbox.pool import ServerSet, grade_with
from reward_fns.types import GraderConfig, GradeResult, GroundTruthError, Problem


class SandboxWorker:
    """Grades programs on its own fork server; problems arrive as (content key, [ObjectRef of the ground truth])."""

    def __init__(self, isolation: str, cache_mb: int) -> None:
        self._servers = ServerSet(max_idle=1)
        self._cache = ProblemCache(cache_mb << 20)
        with self._servers.lease(isolation):
            pass  # start the fork server now, so the first completion finds it warm

    def pid(self) -> int:
        """Process id of this actor (the tests and operators kill it by pid to check fault handling)."""
        return os.getpid()

    def cache_stats(self) -> dict[str, int]:
        """Problem-cache hits and misses (a miss fetches the ground truth from the object store)."""
        return {"hits": self._cache.hits, "misses": self._cache.misses, "problems": len(self._cache)}

    def test_count(self, key: str, ground_truth_ref: list[ray.ObjectRef]) -> int:
        """Number of tests of the problem; 0 when its ground truth is malformed (graded as ``internal_error``)."""
        problem = self._problem(key, ground_truth_ref)
        return 0 if isinstance(problem, GradeResult) else len(problem.tests)

    def grade(
        self, code: str | None, key: str, ground_truth_ref: list[ray.ObjectRef], config: GraderConfig
    ) -> GradeResult:
        """Grade one program on all tests, most expensive first, stopping at the first failure (per rollout)."""
        problem = self._problem(key, ground_truth_ref)
        if isinstance(problem, GradeResult):
            return problem
        return self._grade_problem(code, problem, config)

    def grade_group(
        self, codes: list[str | None], key: str, ground_truth_ref: list[ray.ObjectRef], config: GraderConfig
    ) -> list[GradeResult]:
        """Grade the rollouts of one group one after another on this worker (per problem: tests parsed once)."""
        problem = self._problem(key, ground_truth_ref)
        if isinstance(problem, GradeResult):
            return [problem for _ in codes]
        return [self._grade_problem(code, problem, config) for code in codes]

    def grade_tests(
        self,
        code: str | None,
        key: str,
        ground_truth_ref: list[ray.ObjectRef],
        start: int,
        stop: int,
        config: GraderConfig,
    ) -> GradeResult:
        """Grade one program on tests ``[start, stop)`` of the problem's order (per test: one chunk)."""
        problem = self._problem(key, ground_truth_ref)
        if isinstance(problem, GradeResult):
            return problem
        return self._grade_problem(code, dataclasses.replace(problem, tests=problem.tests[start:stop]), config)

    def _grade_problem(self, code: str | None, problem: Problem, config: GraderConfig) -> GradeResult:
        if code is None:
            return GradeResult.no_code(problem)
        return grade_with(self._servers, code, problem, config)

    def _problem(self, key: str, ground_truth_ref: list[ray.ObjectRef]) -> Problem | GradeResult:
        started = time.monotonic()
        try:
            return self._cache.get(key, lambda: ray.get(ground_truth_ref[0]))
        except GroundTruthError as exc:
            return GradeResult.bad_ground_truth(exc, time.monotonic() - started)
