"""Limits and verdicts: time, CPU, memory, output, crashes, compile errors, test order, budget, internal errors."""

from __future__ import annotations

import threading

import psutil
import pytest

from reward_fns.sandbox.forkserver import ServerDied
from reward_fns.sandbox.grading import compile_program, run_limits
from reward_fns.sandbox.pool import ServerSet, grade_with
from reward_fns.types import GraderConfig, Problem, Verdict
from reward_fns.types import TestCase as Case


def test_wall_clock_limit_is_time_limit(grade):
    result = grade("import time\ntime.sleep(30)", [("", "")], GraderConfig(time_limit_s=1.0))
    assert result.verdict is Verdict.TIME_LIMIT, result.detail
    assert 1.0 <= result.max_test_time_s < 10.0


def test_cpu_time_limit_is_time_limit(grade):
    config = GraderConfig(time_limit_s=20.0, cpu_time_limit_s=1.0)
    result = grade("while True:\n    pass", [("", "")], config)
    assert result.verdict is Verdict.TIME_LIMIT, result.detail
    assert "CPU" in result.detail
    assert result.max_test_time_s < 10.0


def test_memory_limit_from_memory_error(grade):
    config = GraderConfig(memory_limit_mb=256)
    result = grade("blocks = [bytearray(1 << 20) for _ in range(1024)]\nprint(len(blocks))", [("", "1024")], config)
    assert result.verdict is Verdict.MEMORY_LIMIT, result.detail


def test_memory_limit_for_a_huge_single_allocation(grade):
    result = grade("x = [0] * (10 ** 10)", [("", "")], GraderConfig(memory_limit_mb=512))
    assert result.verdict is Verdict.MEMORY_LIMIT, result.detail


def test_output_over_the_cap_is_output_limit(grade):
    code = "import sys\nfor _ in range(3000):\n    sys.stdout.write('x' * 1000 + '\\n')"
    result = grade(code, [("", "")], GraderConfig(output_limit_mb=1))
    assert result.verdict is Verdict.OUTPUT_LIMIT, result.detail


def test_output_just_under_the_cap_is_compared(grade):
    code = "import sys\nsys.stdout.write('x' * 1000 + '\\n')"
    result = grade(code, [("", "x" * 1000)], GraderConfig(output_limit_mb=1))
    assert result.verdict is Verdict.ACCEPTED, result.detail


def test_uncaught_exception_nonzero_exit_and_signal_are_runtime_errors(grade):
    for code in ("raise ValueError('boom')", "import sys\nprint(1)\nsys.exit(3)", "import ctypes\nctypes.string_at(0)"):
        result = grade(code, [("", "1")])
        assert result.verdict is Verdict.RUNTIME_ERROR, (code, result.detail)
    assert "SIGSEGV" in result.detail


def test_runtime_error_detail_keeps_the_stderr_tail(grade):
    result = grade("raise KeyError('missing-key-42')", [("", "")])
    assert "missing-key-42" in result.detail


def test_syntax_error_is_compile_error_without_running(grade):
    result = grade("def f(:\n    pass", [("", "")])
    assert result.verdict is Verdict.COMPILE_ERROR
    assert "SyntaxError" in result.detail and result.passed == 0 and result.total == 1


def test_stops_at_first_failure_and_counts_passed_tests(grade):
    code = "x = int(input())\nprint(x * 2 if x < 3 else -1)"
    tests = [("1", "2"), ("2", "4"), ("3", "6"), ("4", "8")]
    result = grade(code, tests)
    assert result.verdict is Verdict.WRONG_ANSWER
    assert (result.passed, result.total) == (2, 4)
    assert result.detail.startswith("test 2")


def test_tests_run_longest_input_first(grade):
    ground_truth = {
        "tests": [
            {"input": "1", "output": "short"},
            {"input": "1" * 100, "output": "long"},
            {"input": "1" * 10, "output": "medium"},
        ]
    }
    problem = Problem.from_ground_truth(ground_truth)
    code = "n = len(input())\nprint('long' if n == 100 else 'medium' if n == 10 else 'wrong')"
    result = grade(code, [(test.input, test.output) for test in problem.tests])
    assert result.verdict is Verdict.WRONG_ANSWER
    assert result.passed == 2  # the two long tests ran (and passed) before the short one


def test_total_budget_per_completion_is_time_limit(grade):
    config = GraderConfig(time_limit_s=5.0, total_time_budget_s=1.5)
    result = grade("import time\ntime.sleep(0.6)\nprint(1)", [("", "1")] * 5, config)
    assert result.verdict is Verdict.TIME_LIMIT, result.detail
    assert result.passed == 2
    assert "budget" in result.detail
    assert result.time_s < 4.0


def test_dead_fork_server_is_internal_error_and_replaced():
    servers = ServerSet()
    problem = Problem(tests=(Case("", "done"),))
    config = GraderConfig(time_limit_s=10.0)
    with servers.lease("auto") as server:
        doomed = server  # returned to the idle set, then leased again by grade_with below
    killer = threading.Timer(0.5, doomed.process.kill)
    killer.start()
    result = grade_with(servers, "import time\ntime.sleep(5)\nprint('done')", problem, config)
    killer.join()
    assert result.verdict is Verdict.INTERNAL_ERROR, result.detail
    assert "fork server" in result.detail
    after = grade_with(servers, "print('done')", problem, config)
    assert after.verdict is Verdict.ACCEPTED, after.detail
    servers.close()


def test_hung_fork_server_is_detected_and_replaced(fork_server):
    """A server that stops answering (here: SIGSTOP) must not hang the grader."""
    server_process = psutil.Process(fork_server.process.pid).children()[0]  # the launcher's child: the server
    server_process.suspend()
    fork_server.reply_margin_s = 0.5
    code = compile_program("print(1)")
    with pytest.raises(ServerDied):
        fork_server.run(code, "", "stdin", None, run_limits(GraderConfig(), 64), 0.5)
