"""GraderPool: parallel workers, results in input order, bounded memory on huge inputs; grade_program threads."""

from __future__ import annotations

import concurrent.futures
import os
import subprocess
import sys
import tempfile

from reward_fns.sandbox import GraderPool, grade_program
from reward_fns.sandbox import pool as sandbox_pool
from reward_fns.sandbox.forkserver import ForkServer
from reward_fns.types import GraderConfig, Problem, Verdict
from reward_fns.types import TestCase as Case

DOUBLE = "print(2 * int(input()))"
CRASH = "raise SystemExit(1)"
WRONG = "print(2 * int(input()) + 1)"


def _doubling_problem(value: int) -> Problem:
    return Problem(tests=(Case(str(value), str(2 * value)), Case(str(value + 1), str(2 * value + 2))))


def test_grade_many_streams_results_in_input_order():
    programs = [DOUBLE, CRASH, WRONG, "def f(:", DOUBLE] * 4
    expected = [
        Verdict.ACCEPTED,
        Verdict.RUNTIME_ERROR,
        Verdict.WRONG_ANSWER,
        Verdict.COMPILE_ERROR,
        Verdict.ACCEPTED,
    ] * 4
    with GraderPool(workers=3, config=GraderConfig(time_limit_s=5)) as pool:
        results = list(pool.grade_many((code, _doubling_problem(index)) for index, code in enumerate(programs)))
    assert [result.verdict for result in results] == expected
    assert [result.passed for result in results[:5]] == [2, 0, 0, 0, 2]


def test_grade_program_is_thread_safe():
    with concurrent.futures.ThreadPoolExecutor(4) as threads:
        results = list(threads.map(lambda value: grade_program(DOUBLE, _doubling_problem(value)), range(12)))
    assert all(result.verdict is Verdict.ACCEPTED for result in results), [r.detail for r in results]


_RSS_SCRIPT = """
from reward_fns.sandbox import grade_program
from reward_fns.types import GraderConfig, Problem, TestCase

line = "1234567 " * 16 + "\\n"
inputs = [f"{index}\\n" + line * (50_000_000 // len(line)) for index in range(4)]  # four distinct 50 MB strings
problem = Problem(tests=tuple(TestCase(text, str(len(text))) for text in inputs))
code = "import sys\\nprint(len(sys.stdin.buffer.read()))"
result = grade_program(code, problem, GraderConfig(time_limit_s=60, total_time_budget_s=240))
peak_kb = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(result.verdict, peak_kb // 1024, result.detail)
"""


def test_200_mb_of_test_input_keeps_grader_rss_under_1_gb():
    """Four 50 MB inputs (the Problem itself holds 200 MB): inputs are streamed to a file, never copied whole.

    Measured in a fresh interpreter as VmHWM (ru_maxrss would keep the forked pytest process's peak across exec).
    """
    completed = subprocess.run([sys.executable, "-c", _RSS_SCRIPT], capture_output=True, text=True, check=True)
    verdict, peak_rss_mb, *detail = completed.stdout.split(maxsplit=2)
    assert verdict == Verdict.ACCEPTED, detail
    assert int(peak_rss_mb) < 1024, f"grader peak RSS {peak_rss_mb} MB"


def test_forked_grader_process_starts_its_own_servers():
    """A grader that forks (multiprocessing 'fork') must not share its parent's fork servers."""
    assert grade_program(DOUBLE, _doubling_problem(1)).verdict is Verdict.ACCEPTED  # parent has an idle server
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:
        verdict = grade_program(DOUBLE, _doubling_problem(2)).verdict
        os.write(writer, str(verdict).encode())
        sandbox_pool._process_servers.close()
        os._exit(0)
    os.close(writer)
    child_verdict = os.read(reader, 100).decode()
    os.waitpid(pid, 0)
    assert child_verdict == "accepted"
    assert grade_program(DOUBLE, _doubling_problem(3)).verdict is Verdict.ACCEPTED


def test_work_dirs_of_dead_graders_are_swept_by_the_next_one():
    """A grader killed without closing its servers leaves its work dir; the next server start removes it."""
    finished = subprocess.Popen(["true"])
    finished.wait()  # its pid is now free: a dead "grader"
    stale = tempfile.mkdtemp(prefix=f"nouscoder-grader-{finished.pid}-")
    os.mkdir(os.path.join(stale, "io"))
    alive = tempfile.mkdtemp(prefix=f"nouscoder-grader-{os.getpid()}-")
    server = ForkServer()
    try:
        assert not os.path.exists(stale)
        assert os.path.exists(alive)
    finally:
        server.close()
        os.rmdir(alive)
