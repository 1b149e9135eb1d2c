"""The grading dispatcher: one async Ray actor per job that owns the sandbox workers and hands them work.

Every reward-loop process sends each rollout here as soon as it is generated (``PoolClient``). The dispatcher keeps
a FIFO of idle workers, so a completion waits only for a free worker, never behind a busy one; the number of
completions waiting is the queue depth. Faults (reward_fns/RAY_POOL.md):

* a worker call that raises a Ray error (actor died: OOM kill, ``kill -9``, node lost) or overruns the
  completion's budget + ``attempt_slack_s`` (the worker is killed) is re-graded once on the next free worker;
  a second failure gives ``internal_error``, counted;
* a dead worker is restarted by Ray (``max_worker_restarts``, each logged) and rejoins the idle FIFO when it
  answers again; past the bound it is retired; with no worker left every completion is ``internal_error``.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import itertools
import logging
import math
import time
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import ray
from ray.actor import ActorHandle
from ray.exceptions import ActorUnavailableError, NodeDiedError, RayActorError, RayError, WorkerCrashedError
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from reward_fns.ray_pool.config import PoolConfig
from reward_fns.ray_pool.worker import SandboxWorker
from reward_fns.types import GraderConfig, GradeResult, Verdict

logger = logging.getLogger(__name__)

WORKER_START_TIMEOUT_S = 300.0
"""How long a (re)started worker may take to answer before it is retired."""
RESTART_POLL_S = 0.5
"""How often a worker Ray is still restarting is asked again for its pid."""
_TEST_COUNT_CACHE = 4096


@dataclass(slots=True)
class Outcome:
    """What the dispatcher returns for one completion."""

    result: GradeResult
    tests_executed: int
    queue_depth: int
    """Completions waiting for a free worker when this one arrived."""
    regraded: bool
    """A worker failed on this completion and it was graded again."""
    worker_restarts: int
    """Worker restarts since the pool started (cumulative)."""


@dataclass(slots=True)
class _Slot:
    index: int
    handle: ActorHandle
    pid: int | None = None
    deaths: int = 0


@dataclass(slots=True)
class _Group:
    key: str
    ground_truth_ref: list[ray.ObjectRef]
    config: GraderConfig
    codes: list[str | None] = field(default_factory=list)
    waiters: list[asyncio.Future] = field(default_factory=list)
    timer: asyncio.TimerHandle | None = None


@dataclass(slots=True)
class _Busy:
    """A worker call in flight: which worker, since when, what it does and on which problem."""

    slot: _Slot
    since: float
    method: str
    key: str


class _WorkerFailed(Exception):
    """A worker died, raised a Ray error or overran its deadline during one call."""


class PoolExhaustedError(RuntimeError):
    """Every sandbox worker was retired after too many restarts."""


def plan_workers(config: PoolConfig, nodes: Sequence[Mapping[str, Any]]) -> list[str]:
    """Node id of each sandbox worker: CPUs of each chosen node minus the reserve, or ``workers`` round-robin.

    ``nodes`` is ``ray.nodes()``. Raises ValueError when no CPU is left for grading.
    """
    candidates = [node for node in nodes if node["Alive"] and node["Resources"].get("CPU", 0) > 0]
    if config.placement == "cpu_only_nodes":
        cpu_only = [node for node in candidates if not node["Resources"].get("GPU")]
        if not cpu_only:
            logger.warning("pool_placement=cpu_only_nodes but every node has GPUs; using all nodes")
        candidates = cpu_only or candidates
    if config.workers > 0:
        return [candidates[index % len(candidates)]["NodeID"] for index in range(config.workers)]
    plan = []
    for node in candidates:
        free = node["Resources"]["CPU"] - config.reserved_cpus_per_node
        plan += [node["NodeID"]] * max(0, math.floor(free / config.worker_num_cpus))
    if not plan:
        raise ValueError(
            f"no CPU left for grading on {len(candidates)} node(s) after reserving "
            f"{config.reserved_cpus_per_node} per node: lower pool_reserved_cpus_per_node or set "
            f"pool_workers"
        )
    return plan


def internal_error(detail: str, total: int = 0) -> GradeResult:
    """The result of a completion the pool could not grade (not the model's fault; counted in metrics)."""
    return GradeResult(Verdict.INTERNAL_ERROR, total=total, detail=detail)


class GradingDispatcher:
    """Async actor: idle-worker FIFO, the three granularities, re-grading and counters."""

    def __init__(self, config: PoolConfig, isolation: str) -> None:
        self.config = config
        worker_class = ray.remote(SandboxWorker)
        self._slots = [
            _Slot(
                index,
                worker_class.options(
                    num_cpus=config.worker_num_cpus,
                    max_restarts=config.max_worker_restarts,
                    max_task_retries=0,
                    scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=node_id, soft=True),
                ).remote(isolation, config.worker_cache_mb),
            )
            for index, node_id in enumerate(plan_workers(config, ray.nodes()))
        ]
        self._live = len(self._slots)
        self._idle: asyncio.Queue[_Slot | None] = asyncio.Queue()  # binds to the actor's loop at first use
        self._started = False
        self._waiting = 0
        self._busy: dict[tuple[Hashable, int], _Busy] = {}
        self._job_ids = itertools.count()
        self._groups: dict[str, _Group] = {}
        self._test_counts: collections.OrderedDict[str, int] = collections.OrderedDict()
        self._fatal: str | None = None
        self._background: set[asyncio.Task] = set()
        self.counters = collections.Counter(
            {"graded": 0, "internal_errors": 0, "regraded": 0, "worker_restarts": 0, "workers_retired": 0}
        )
        logger.info(
            "grading pool %r: %d sandbox workers, granularity %s", config.name, len(self._slots), config.granularity
        )

    # ------------------------------------------------------------------ public (remote) methods

    async def grade(
        self, code: str | None, key: str, ground_truth_ref: list[ray.ObjectRef], config: GraderConfig
    ) -> Outcome:
        """Grade one completion's program (None: no code) on the problem of content key ``key``."""
        self._start()
        if self._fatal:
            raise RuntimeError(self._fatal)
        queue_depth = self._waiting + sum(len(group.codes) for group in self._groups.values())
        job_id = next(self._job_ids)
        try:
            if self.config.granularity == "per_problem":
                result, executed, regraded = await self._per_problem(code, key, ground_truth_ref, config)
            elif self.config.granularity == "per_test":
                result, executed, regraded = await self._per_test(job_id, code, key, ground_truth_ref, config)
            else:
                result, regraded = await self._with_retry(
                    job_id, key, config.total_time_budget_s, "grade", code, key, ground_truth_ref, config
                )
                executed = result.tests_executed
        except (_WorkerFailed, PoolExhaustedError) as exc:
            if self._fatal:  # the workers refused to start (strict isolation): stop the run, not -1 for everyone
                raise RuntimeError(self._fatal) from exc
            result, executed, regraded = internal_error(f"grading failed twice: {exc}"), 0, True
        self.counters["graded"] += 1
        self.counters["regraded"] += regraded
        if result.verdict is Verdict.INTERNAL_ERROR:
            self.counters["internal_errors"] += 1
        return Outcome(result, executed, queue_depth, regraded, self.counters["worker_restarts"])

    async def ready(self) -> int:
        """Wait until every worker answered once; the number of live workers."""
        self._start()
        while self._idle.qsize() + len(self._busy) < self._live and not self._fatal:
            await asyncio.sleep(0.05)
        if self._fatal:
            raise RuntimeError(self._fatal)
        return self._live

    def stats(self) -> dict[str, int]:
        """Cumulative counters plus the current queue depth, busy and live workers."""
        return dict(self.counters) | {
            "queue_depth": self._waiting,
            "busy_workers": len(self._busy),
            "live_workers": self._live,
        }

    def shutdown(self) -> None:
        """Kill every sandbox worker (their fork servers exit with them); the pool grades nothing afterwards."""
        for slot in self._slots:
            ray.kill(slot.handle, no_restart=True)
        self._live = 0

    def busy_workers(self) -> list[dict[str, Any]]:
        """Each call in flight (operators, fault tests): ``pid`` of its worker, ``running_s`` since it was sent,
        ``method`` (grade, grade_group, grade_tests, test_count) and ``problem_key`` (the ground truth's sha256)."""
        now = time.monotonic()
        return [
            {"pid": busy.slot.pid, "running_s": now - busy.since, "method": busy.method, "problem_key": busy.key}
            for busy in self._busy.values()
        ]

    async def cache_stats(self) -> list[dict[str, int]]:
        """Each live worker's problem-cache hits and misses."""
        return await asyncio.gather(
            *(
                slot.handle.cache_stats.remote()
                for slot in self._slots
                if slot.deaths <= self.config.max_worker_restarts
            )
        )

    # ------------------------------------------------------------------ worker life cycle

    def _start(self) -> None:
        if not self._started:
            self._started = True
            for slot in self._slots:
                self._spawn(self._revive(slot))

    def _spawn(self, coroutine: Any) -> asyncio.Task:
        task = asyncio.get_running_loop().create_task(coroutine)
        self._background.add(task)
        task.add_done_callback(self._forget)
        return task

    def _forget(self, task: asyncio.Task) -> None:
        """Drop a finished background task; its error, if any, was logged where it happened (or is moot: an
        abandoned per-test chunk)."""
        self._background.discard(task)
        if not task.cancelled():
            task.exception()

    async def _revive(self, slot: _Slot) -> None:
        """Wait until a (re)started worker answers, then make it idle; retire it if it never does."""
        try:
            slot.pid = await pid_once_restarted(slot.handle, WORKER_START_TIMEOUT_S)
        except (RayError, TimeoutError) as exc:
            if "IsolationUnavailableError" in str(exc):
                self._fatal = f"sandbox workers refuse to start: {exc}"
            self._retire(slot, f"did not answer after (re)start: {exc!r}"[:500])
            return
        self._idle.put_nowait(slot)

    def _lose(self, slot: _Slot, reason: str) -> None:
        slot.deaths += 1
        slot.pid = None
        if slot.deaths > self.config.max_worker_restarts:
            self._retire(slot, f"failed {slot.deaths} times, the last: {reason}")
            return
        self.counters["worker_restarts"] += 1
        logger.warning(
            "sandbox worker %d failed (%s); restart %d of %d",
            slot.index,
            reason,
            slot.deaths,
            self.config.max_worker_restarts,
        )
        self._spawn(self._revive(slot))

    def _retire(self, slot: _Slot, reason: str) -> None:
        self._live -= 1
        self.counters["workers_retired"] += 1
        logger.error("sandbox worker %d retired: %s; %d workers left", slot.index, reason, self._live)
        if self._live == 0:
            for _ in range(self._waiting):
                self._idle.put_nowait(None)

    async def _acquire(self) -> _Slot:
        if self._live == 0:
            raise PoolExhaustedError("every sandbox worker was retired (see the log for why)")
        self._waiting += 1
        try:
            slot = await self._idle.get()
        finally:
            self._waiting -= 1
        if slot is None:
            raise PoolExhaustedError("every sandbox worker was retired (see the log for why)")
        return slot

    # ------------------------------------------------------------------ calls with deadline and one re-grade

    async def _call(self, call_id: tuple[Hashable, int], key: str, budget_s: float, method: str, *args: Any) -> Any:
        slot = await self._acquire()
        self._busy[call_id] = _Busy(slot, time.monotonic(), method, key)
        try:
            reply = await asyncio.wait_for(
                _awaitable(getattr(slot.handle, method).remote(*args)), budget_s + self.config.attempt_slack_s
            )
        except TimeoutError:
            ray.kill(slot.handle, no_restart=False)
            self._lose(slot, f"{method} overran {budget_s + self.config.attempt_slack_s:.0f} s and was killed")
            raise _WorkerFailed(f"worker {slot.index} overran its deadline") from None
        except (RayActorError, WorkerCrashedError, NodeDiedError) as exc:
            self._lose(slot, f"{type(exc).__name__} during {method}")
            raise _WorkerFailed(f"worker {slot.index} died: {type(exc).__name__}") from exc
        except RayError as exc:  # the call failed (e.g. the ground truth object was lost) but the worker lives
            self._idle.put_nowait(slot)
            raise _WorkerFailed(f"worker {slot.index}: {exc!r}"[:500]) from exc
        finally:
            del self._busy[call_id]
        self._idle.put_nowait(slot)
        return reply

    async def _with_retry(
        self, job_id: Hashable, key: str, budget_s: float, method: str, *args: Any
    ) -> tuple[Any, bool]:
        """The reply of ``method`` on problem ``key`` and whether it needed a second attempt; raises _WorkerFailed
        after two."""
        try:
            return await self._call((job_id, 0), key, budget_s, method, *args), False
        except _WorkerFailed as first:
            logger.warning("re-grading job %s (problem %s) elsewhere after: %s", job_id, key[:12], first)
        return await self._call((job_id, 1), key, budget_s, method, *args), True

    # ------------------------------------------------------------------ granularities

    async def _per_problem(
        self, code: str | None, key: str, ground_truth_ref: list[ray.ObjectRef], config: GraderConfig
    ) -> tuple[GradeResult, int, bool]:
        group = self._groups.get(key)
        if group is None:
            group = self._groups[key] = _Group(key, ground_truth_ref, config)
            group.timer = asyncio.get_running_loop().call_later(self.config.group_window_s, self._flush, key)
        waiter = asyncio.get_running_loop().create_future()
        group.codes.append(code)
        group.waiters.append(waiter)
        if 0 < self.config.group_size <= len(group.codes):
            self._flush(key)
        return await waiter

    def _flush(self, key: str) -> None:
        group = self._groups.pop(key, None)
        if group is not None:
            group.timer.cancel()
            self._spawn(self._grade_group(group))

    async def _grade_group(self, group: _Group) -> None:
        budget_s = group.config.total_time_budget_s * len(group.codes)
        try:
            results, regraded = await self._with_retry(
                next(self._job_ids),
                group.key,
                budget_s,
                "grade_group",
                group.codes,
                group.key,
                group.ground_truth_ref,
                group.config,
            )
        except (_WorkerFailed, PoolExhaustedError) as exc:
            results, regraded = [internal_error(f"grading failed twice: {exc}") for _ in group.codes], True
        for waiter, result in zip(group.waiters, results, strict=True):
            waiter.set_result((result, result.tests_executed, regraded))

    async def _per_test(
        self, job_id: int, code: str | None, key: str, ground_truth_ref: list[ray.ObjectRef], config: GraderConfig
    ) -> tuple[GradeResult, int, bool]:
        """Chunks of ``tests_per_chunk`` tests, in the problem's order (longest input first), on as many workers
        as are live; no chunk is started after a failure, and the answer does not wait for chunks still running."""
        started = time.monotonic()
        count = await self._test_count(job_id, key, ground_truth_ref, config)
        if count == 0 or code is None:  # bad ground truth or no code: one call names the verdict
            result, regraded = await self._with_retry(
                job_id, key, config.total_time_budget_s, "grade", code, key, ground_truth_ref, config
            )
            return result, result.tests_executed, regraded
        size = self.config.tests_per_chunk
        chunks = collections.deque((start, min(start + size, count)) for start in range(0, count, size))
        running: dict[asyncio.Task, int] = {}
        results: dict[int, GradeResult] = {}
        regraded = False
        while (chunks or running) and all(result.accepted for result in results.values()):
            while chunks and len(running) < max(1, self._live):
                start, stop = chunks.popleft()
                remaining = config.total_time_budget_s - (time.monotonic() - started)
                if remaining <= 0:
                    results[start] = GradeResult(Verdict.TIME_LIMIT, detail="total time budget spent")
                    break
                chunk_config = dataclasses.replace(config, total_time_budget_s=remaining)
                task = self._spawn(
                    self._with_retry(
                        (job_id, start),
                        key,
                        remaining,
                        "grade_tests",
                        code,
                        key,
                        ground_truth_ref,
                        start,
                        stop,
                        chunk_config,
                    )
                )
                running[task] = start
            if not running:
                break
            done, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                start = running.pop(task)
                result, again = task.result()
                results[start] = result
                regraded |= again
        return _combine_chunks(results, count, time.monotonic() - started), _executed(results), regraded

    async def _test_count(
        self, job_id: int, key: str, ground_truth_ref: list[ray.ObjectRef], config: GraderConfig
    ) -> int:
        if key not in self._test_counts:
            count, _ = await self._with_retry(
                job_id, key, config.total_time_budget_s, "test_count", key, ground_truth_ref
            )
            self._test_counts[key] = count
            while len(self._test_counts) > _TEST_COUNT_CACHE:
                self._test_counts.popitem(last=False)
        return self._test_counts[key]


def _executed(results: Mapping[int, GradeResult]) -> int:
    return sum(result.tests_executed for result in results.values())


def _combine_chunks(results: Mapping[int, GradeResult], total: int, elapsed_s: float) -> GradeResult:
    """Accepted when every chunk was; otherwise the verdict of the failed chunk nearest the front of the order."""
    passed = sum(result.passed for result in results.values())
    max_test = max((result.max_test_time_s for result in results.values()), default=0.0)
    failures = sorted((start, result) for start, result in results.items() if not result.accepted)
    if not failures:
        return GradeResult(Verdict.ACCEPTED, passed, total, elapsed_s, max_test)
    start, failed = failures[0]
    return GradeResult(
        failed.verdict, passed, total, elapsed_s, max_test, f"chunk from test {start}: {failed.detail}", failed.extra
    )


async def pid_once_restarted(handle: ActorHandle, timeout_s: float) -> int:
    """The worker's pid as soon as it answers, asking again while Ray is still restarting it.

    With ``max_task_retries=0`` a call that reaches an actor Ray is restarting fails at once with
    ``ActorUnavailableError`` ("The actor is restarting"); on a loaded node the restart takes seconds, so the first
    call after a death often lands there. Any other Ray error (``ActorDiedError``: restarts spent) or the timeout
    is raised. Each call gets at least one poll interval, so a stalled event loop never asks with no time at all.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            remaining_s = max(deadline - time.monotonic(), RESTART_POLL_S)
            return await asyncio.wait_for(_awaitable(handle.pid.remote()), remaining_s)
        except ActorUnavailableError:
            if time.monotonic() + RESTART_POLL_S >= deadline:
                raise
            await asyncio.sleep(RESTART_POLL_S)


async def _awaitable(ref: ray.ObjectRef) -> Any:
    """``await ref`` as a coroutine, which ``asyncio.wait_for`` can cancel."""
    return await ref
