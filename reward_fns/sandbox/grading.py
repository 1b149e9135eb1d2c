"""Grade one program on one fork server: run its tests in order, stop at the first failure, name the verdict.

Verdict of one test (first matching rule wins; the comparison runs here, in the trusted grader):

1. the child's isolation set-up failed, or a process of the run survived SIGKILL
                                                                 -> internal_error (not the program's fault)
2. killed at the wall-clock limit (per test, or what is left of the completion's budget; both count the time
   the program waited for a CPU only past ``isolation.LOAD_STRETCH`` times the limit, so that verdicts do not
   depend on the machine's load)                                 -> time_limit
   killed because the run held more than the memory limit: its processes together, plus what its pipes and
   sockets can hold in kernel buffers (``server.run_memory``)   -> memory_limit
3. stdout or the functional result reached the cap (RLIMIT_FSIZE; CPython ignores SIGXFSZ, so the write fails)
                                                                 -> output_limit
4. SIGXCPU, or CPU time at the RLIMIT_CPU limit                  -> time_limit
5. MemoryError / ENOMEM (also seccomp's answer to memfd, SysV and POSIX shared memory) / ENOSPC (the scratch
   tmpfs, memory too, is full) in the stderr tail, peak RSS at the limit, or a SIGKILL we did not send with peak
   RSS at half the limit or more (the OOM killer picks the largest process; a small one killed itself)
                                                                 -> memory_limit
6. another signal or a nonzero exit status                       -> runtime_error
7. stdin test: ``compare.stdout_matches``; functional: ``compare.functional_matches`` on the harness's JSON
   (an unconvertible result -- custom class, NaN -- is wrong_answer; no result at all is runtime_error), both
   streamed from the output files (the grader never holds a whole output); evalplus: EvalPlus's assertion on each
   call's result line (``reward_fns.evalplus.check_suite``)

An evalplus test carries its own wall-clock limit (EvalPlus's suite limit, ``TestCase.time_limit_s``); its CPU-time
limit is then that limit + 1 s, the per-call limits being checked on the result lines.

A failing result's ``extra`` also holds what the program printed on the failing test, cut to
``FAILURE_OUTPUT_CHARS``: ``actual_output`` (the head of its stdout, or the returned value's JSON) for a wrong answer,
``stderr_tail`` for a runtime error or memory limit. The reward never shows them; the multi-turn feedback does, for
public tests only (``recipe/nouscoder/multi_turn``).
"""

from __future__ import annotations

import functools
import json
import logging
import marshal
import signal
import time

from reward_fns import compare, evalplus
from reward_fns.sandbox.forkserver import ForkServer, Program, RunOutcome
from reward_fns.sandbox.harness import SOURCE_FILE, lazy_prelude_names, needs_lazy_prelude
from reward_fns.sandbox.isolation import LOAD_STRETCH, RunLimits
from reward_fns.types import GraderConfig, GradeResult, Problem, TestCase, Verdict

logger = logging.getLogger(__name__)

_MEMORY_ERROR_MARKERS = ("MemoryError", "Cannot allocate memory", "[Errno 12]", "No space left on device", "[Errno 28]")
_DETAIL_CHARS = 600
FAILURE_OUTPUT_CHARS = 4096
_MB = 1 << 20


def compile_program(code: str) -> Program | str:
    """The program a fork server runs (marshalled code object, source, whether it needs the lazy part of the
    prelude), or the compile error message (the syntax check happens here)."""
    try:
        compiled = compile(code, SOURCE_FILE, "exec", dont_inherit=True)
    except (SyntaxError, ValueError, OverflowError, RecursionError, MemoryError) as exc:
        return f"{type(exc).__name__}: {exc}"
    source = code.encode("utf-8", errors="surrogatepass")
    return Program(marshal.dumps(compiled), source, needs_lazy_prelude(compiled, _lazy_prelude_names()))


@functools.cache
def _lazy_prelude_names() -> frozenset[str]:
    return lazy_prelude_names()


def run_limits(config: GraderConfig, processes: int) -> RunLimits:
    return RunLimits(
        cpu_time_s=config.effective_cpu_time_limit_s,
        memory_bytes=config.memory_limit_mb * _MB,
        output_bytes=config.output_limit_mb * _MB + 1,
        processes=processes,
    )


def grade_on_server(
    server: ForkServer, code: str, problem: Problem, config: GraderConfig, processes: int
) -> GradeResult:
    """Run ``problem.tests`` (already longest input first) one after another; stop at the first failure."""
    try:
        return _run_tests(server, code, problem, config, processes)
    finally:
        server.discard_files()


def _run_tests(server: ForkServer, code: str, problem: Problem, config: GraderConfig, processes: int) -> GradeResult:
    started = time.monotonic()
    total = len(problem.tests)
    compiled = compile_program(code)
    if isinstance(compiled, str):
        return GradeResult(Verdict.COMPILE_ERROR, total=total, time_s=time.monotonic() - started, detail=compiled)
    limits = run_limits(config, processes)
    max_test_time = waited_for_cpu = 0.0
    for index, test in enumerate(problem.tests):
        remaining = config.total_time_budget_s - (time.monotonic() - started - waited_for_cpu)
        if remaining <= 0:
            return GradeResult(
                Verdict.TIME_LIMIT,
                index,
                total,
                time.monotonic() - started,
                max_test_time,
                f"total time budget of {config.total_time_budget_s} s spent before test {index}",
            )
        test_limit = test.time_limit_s or config.time_limit_s
        timeout = min(test_limit, remaining)
        test_limits = limits if test.time_limit_s is None else limits._replace(cpu_time_s=test.time_limit_s + 1.0)
        outcome = server.run(compiled, test.input, test.testtype, problem.fn_name, test_limits, timeout, index == 0)
        max_test_time = max(max_test_time, outcome.wall_s)
        waited_for_cpu += min(outcome.cpu_wait_s, timeout * (LOAD_STRETCH - 1))
        verdict, detail = _test_verdict(
            server, outcome, test, config, test_limits.cpu_time_s, budget_limited=timeout < test_limit
        )
        if verdict is not Verdict.ACCEPTED:
            return GradeResult(
                verdict,
                index,
                total,
                time.monotonic() - started,
                max_test_time,
                f"test {index}: {detail}"[:_DETAIL_CHARS],
                _outcome_extra(outcome) | _failure_output(server, test, verdict),
            )
    return GradeResult(Verdict.ACCEPTED, total, total, time.monotonic() - started, max_test_time)


def _test_verdict(
    server: ForkServer,
    outcome: RunOutcome,
    test: TestCase,
    config: GraderConfig,
    cpu_limit: float,
    budget_limited: bool,
) -> tuple[Verdict, str]:
    if not outcome.setup_ok:
        logger.warning("sandbox set-up failed in a test child: %s", outcome.setup_error)
        return Verdict.INTERNAL_ERROR, f"sandbox set-up failed: {outcome.setup_error}"
    if outcome.leftover_processes:
        logger.warning("%d processes of a run survived SIGKILL", outcome.leftover_processes)
        return Verdict.INTERNAL_ERROR, f"{outcome.leftover_processes} processes of the run could not be killed"
    if outcome.timed_out:
        limit = "total time budget" if budget_limited else f"wall limit {test.time_limit_s or config.time_limit_s} s"
        waited = f", {outcome.cpu_wait_s:.2f} s of it waiting for a CPU" if outcome.cpu_wait_s >= 0.01 else ""
        return Verdict.TIME_LIMIT, f"killed at the {limit} ({outcome.wall_s:.2f} s{waited})"
    if outcome.memory_exceeded:
        return Verdict.MEMORY_LIMIT, f"over the memory limit of {config.memory_limit_mb} MB: {outcome.memory_held}"
    if max(outcome.stdout_bytes, outcome.result_bytes) > config.output_limit_mb * _MB:
        return Verdict.OUTPUT_LIMIT, f"output exceeded {config.output_limit_mb} MB"
    if outcome.signal == signal.SIGXCPU or outcome.cpu_s >= cpu_limit:
        return Verdict.TIME_LIMIT, f"CPU time {outcome.cpu_s:.2f} s reached the limit {cpu_limit} s"
    failed = outcome.signal is not None or outcome.exit_code != 0
    stderr_tail = server.stderr_tail() if failed else ""
    if failed and _out_of_memory(outcome, stderr_tail, config):
        return Verdict.MEMORY_LIMIT, f"memory limit {config.memory_limit_mb} MB: {_last_line(stderr_tail)}"
    if outcome.signal is not None:
        return Verdict.RUNTIME_ERROR, f"killed by {signal.Signals(outcome.signal).name}: {_last_line(stderr_tail)}"
    if outcome.exit_code != 0:
        return Verdict.RUNTIME_ERROR, f"exit status {outcome.exit_code}: {stderr_tail[-_DETAIL_CHARS:]}"
    if test.testtype == "functional":
        return _functional_verdict(server, test, config)
    if test.testtype == "evalplus":
        return _evalplus_verdict(server, test)
    if compare.stdout_matches(server.stdout_chunks, test.output, config):
        return Verdict.ACCEPTED, ""
    return Verdict.WRONG_ANSWER, "output differs from the expected output"


def _functional_verdict(server: ForkServer, test: TestCase, config: GraderConfig) -> tuple[Verdict, str]:
    head = server.result_head(_DETAIL_CHARS)
    if head.startswith("OK "):
        if compare.functional_matches(lambda: server.result_chunks(start=3), test.output, config):
            return Verdict.ACCEPTED, ""
        return Verdict.WRONG_ANSWER, "returned value differs from the expected value"
    if head.startswith("ERR "):
        return Verdict.WRONG_ANSWER, head[4:]
    return Verdict.RUNTIME_ERROR, "the program exited before the function returned"


def _evalplus_verdict(server: ForkServer, test: TestCase) -> tuple[Verdict, str]:
    spec = _parsed(test.output)
    calls = _parsed(test.input)["calls"] if spec["entry_point"] == evalplus.FIND_ZERO else None
    verdict, detail = evalplus.check_suite(evalplus.result_lines(server.result_chunks()), spec, calls)
    return Verdict(verdict), detail


@functools.lru_cache(maxsize=8)
def _parsed(text: str) -> dict:
    """A test's JSON (an EvalPlus suite's calls or expected values), parsed once for all completions of a problem."""
    return json.loads(text)


def _out_of_memory(outcome: RunOutcome, stderr_tail: str, config: GraderConfig) -> bool:
    peak = outcome.max_rss_kb * 1024
    if peak >= config.memory_limit_mb * _MB or (
        outcome.signal == signal.SIGKILL and 2 * peak >= config.memory_limit_mb * _MB
    ):
        return True
    return any(marker in _last_line(stderr_tail) for marker in _MEMORY_ERROR_MARKERS)


def _last_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[-1] if lines else ""


def _failure_output(server: ForkServer, test: TestCase, verdict: Verdict) -> dict[str, str]:
    """What the program printed on its failing test (module docstring), cut to ``FAILURE_OUTPUT_CHARS``."""
    if verdict is Verdict.WRONG_ANSWER:
        if test.testtype == "functional":
            result = server.result_head(FAILURE_OUTPUT_CHARS + 3)  # never the whole result: it can be 64 MB
            return {"actual_output": result[3:]} if result.startswith("OK ") else {}
        return {"actual_output": server.read_stdout(FAILURE_OUTPUT_CHARS)[:FAILURE_OUTPUT_CHARS]}
    if verdict in (Verdict.RUNTIME_ERROR, Verdict.MEMORY_LIMIT):
        return {"stderr_tail": server.stderr_tail()[-FAILURE_OUTPUT_CHARS:]}
    return {}


def _outcome_extra(outcome: RunOutcome) -> dict[str, object]:
    return {
        "exit_code": outcome.exit_code,
        "signal": outcome.signal,
        "cpu_s": outcome.cpu_s,
        "max_rss_kb": outcome.max_rss_kb,
    }
