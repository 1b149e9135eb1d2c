"""Fork servers shared by threads: ``grade_program`` (servers owned by the calling process) and ``GraderPool``.

Each completion is graded on one server from start to end; a server serves one completion at a time. A server
that died (crash, kill) is replaced and the completion it was grading gets ``internal_error``.
"""

from __future__ import annotations

import atexit
import collections
import concurrent.futures
import contextlib
import logging
import os
import threading
import time
from collections.abc import Iterable, Iterator

from reward_fns.sandbox.forkserver import ForkServer, IsolationUnavailableError
from reward_fns.sandbox.grading import grade_on_server
from reward_fns.types import GraderConfig, GradeResult, Problem, Verdict

logger = logging.getLogger(__name__)

DEFAULT_CONFIG = GraderConfig()
"""The limits of the NousCoder blog (frozen, so safe as a shared default argument)."""

PROCESS_LIMIT = 128
"""RLIMIT_NPROC budget of one run (processes and threads)."""


class ServerSet:
    """Idle fork servers by isolation mode; ``lease`` hands one to a single thread and takes it back."""

    def __init__(self, max_idle: int | None = None) -> None:
        self._idle: dict[str, list[ForkServer]] = collections.defaultdict(list)
        self._lock = threading.Lock()
        self._max_idle = max_idle or os.cpu_count() or 1
        self._closed = False

    @contextlib.contextmanager
    def lease(self, isolation_mode: str) -> Iterator[ForkServer]:
        with self._lock:
            idle = self._idle[isolation_mode]
            server = idle.pop() if idle else None
        if server is not None and server.process.poll() is not None:
            logger.warning("an idle fork server had exited (status %s); starting a new one", server.process.poll())
            server.close()
            server = None
        server = server or ForkServer(isolation_mode)
        healthy = False
        try:
            yield server
            healthy = server.process.poll() is None
        finally:
            with self._lock:
                keep = healthy and not self._closed and len(self._idle[isolation_mode]) < self._max_idle
                if keep:
                    self._idle[isolation_mode].append(server)
            if not keep:
                server.close()

    def forget(self) -> None:
        """In a forked copy of the grader: drop the parent's servers unclosed (they still serve the parent)."""
        self._idle = collections.defaultdict(list)
        self._lock = threading.Lock()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            servers = [server for idle in self._idle.values() for server in idle]
            self._idle.clear()
        for server in servers:
            server.close()


def grade_with(servers: ServerSet, code: str, problem: Problem, config: GraderConfig) -> GradeResult:
    """Grade on a leased server; any failure of the grader itself becomes ``internal_error`` (logged)."""
    started = time.monotonic()
    try:
        with servers.lease(config.isolation) as server:
            return grade_on_server(server, code, problem, config, PROCESS_LIMIT)
    except IsolationUnavailableError:
        raise
    except Exception as exc:  # the grader failed, not the program: count it, log it, never raise into verl
        logger.warning("grader internal error: %r", exc, exc_info=True)
        return GradeResult(
            Verdict.INTERNAL_ERROR,
            total=len(problem.tests),
            time_s=time.monotonic() - started,
            detail=f"grader internal error: {exc!r}",
        )


_process_servers = ServerSet()
atexit.register(_process_servers.close)
os.register_at_fork(after_in_child=_process_servers.forget)


def grade_program(code: str, problem: Problem, config: GraderConfig = DEFAULT_CONFIG) -> GradeResult:
    """Grade the extracted program ``code`` on ``problem`` in a warm fork server of this process (thread-safe).

    Raises:
        IsolationUnavailableError: only with ``config.isolation == "strict"`` on a host missing a mechanism.
    """
    return grade_with(_process_servers, code, problem, config)


class GraderPool:
    """``workers`` fork servers graded from as many threads; results streamed in input order."""

    def __init__(self, workers: int | None = None, config: GraderConfig = DEFAULT_CONFIG) -> None:
        self.workers = workers or os.cpu_count() or 1
        self.config = config
        self._servers = ServerSet(max_idle=self.workers)
        self._executor = concurrent.futures.ThreadPoolExecutor(self.workers, thread_name_prefix="grader")
        with self._servers.lease(config.isolation):
            pass  # start one server now: strict mode refuses here, and missing mechanisms are logged up front

    def grade_many(self, jobs: Iterable[tuple[str, Problem]]) -> Iterator[GradeResult]:
        """Grade (code, problem) jobs, at most 2 x workers in flight (inputs are not all held), in input order."""
        pending: collections.deque[concurrent.futures.Future[GradeResult]] = collections.deque()
        for code, problem in jobs:
            pending.append(self._executor.submit(grade_with, self._servers, code, problem, self.config))
            if len(pending) >= 2 * self.workers:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()

    def close(self) -> None:
        self._executor.shutdown(wait=True, cancel_futures=True)
        self._servers.close()

    def __enter__(self) -> GraderPool:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
