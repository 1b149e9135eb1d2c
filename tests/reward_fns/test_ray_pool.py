"""The Ray grading pool on a local 2-CPU Ray cluster: granularities, the problem cache, faults and deadlines.

One Ray session for the module; each test builds its pool under its own name and stops it (2 CPUs hold 2 workers).
"""

import asyncio
import json
import os
import signal
import time

import pytest
import ray

from data_prep.sample import load_problems, load_solutions
from reward_fns.async_score import compute_score
from reward_fns.ray_pool import PoolConfig, pool_client, shutdown_pools
from reward_fns.types import GraderConfig

# A local Ray cluster with grading actors.
pytestmark = pytest.mark.integration

SAMPLE_VERDICTS = ("accepted", "wrong_answer", "runtime_error", "no_code", "compile_error")
GRADER = {"time_limit_s": 4.0}


@pytest.fixture(scope="module", autouse=True)
def ray_session():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


@pytest.fixture(autouse=True)
def stop_pools():
    yield
    shutdown_pools()


def stdin_problem(outputs: list[str]) -> str:
    """Tests whose inputs are all 6 characters (the grader's longest-first order keeps this order)."""
    return json.dumps(
        {
            "tests": [
                {"input": f"{index:05d}\n", "output": output, "testtype": "stdin"}
                for index, output in enumerate(outputs)
            ]
        }
    )


def fenced(code: str) -> str:
    return f"Here it is.\n```python\n{code}\n```\n"


ECHO = fenced("print(int(input()))")


def grade_all(responses: list[tuple[str, str]], **kwargs) -> list[dict]:
    async def run():
        return await asyncio.gather(
            *(
                compute_score("test", response, ground_truth, {}, **GRADER, **kwargs)
                for response, ground_truth in responses
            )
        )

    return asyncio.run(run())


def wait_until(condition, what: str, limit_s: float = 60.0):
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"gave up waiting for {what}")


@pytest.fixture(scope="module")
def sample_batch() -> list[tuple[str, str, str]]:
    """(completion, ground truth, expected verdict) of the fast bundled-sample solutions (no large tests)."""
    problems = {problem.problem_id: json.dumps(problem.ground_truth) for problem in load_problems(include_large=False)}
    solutions = [solution for solution in load_solutions() if solution.expected_verdict in SAMPLE_VERDICTS]
    return [
        (solution.completion, problems[solution.problem_id], solution.expected_verdict) for solution in solutions[:24]
    ]


@pytest.mark.parametrize("granularity", ["per_rollout", "per_problem", "per_test"])
def test_every_granularity_gives_the_sample_its_expected_verdicts(sample_batch, granularity):
    results = grade_all(
        [(completion, truth) for completion, truth, _ in sample_batch],
        pool_name=f"verdicts_{granularity}",
        pool_granularity=granularity,
        pool_group_window_s=0.2,
        pool_tests_per_chunk=3,
    )
    assert [result["verdict"] for result in results] == [expected for _, _, expected in sample_batch]
    assert [result["score"] for result in results] == [
        1.0 if expected == "accepted" else -1.0 for _, _, expected in sample_batch
    ]
    assert not any(result["internal_error"] or result["regraded"] for result in results)
    assert len({frozenset(result) for result in results}) == 1  # verl stacks the first sample's keys


def test_early_exit_counts_tests_and_per_test_stops_dispatching_after_the_failure():
    outputs = [f"{index}\n" for index in range(60)]
    outputs[5] = "wrong\n"
    problem = stdin_problem(outputs)
    (rollout,) = grade_all([(ECHO, problem)], pool_name="exit_rollout")
    assert (rollout["verdict"], rollout["passed"], rollout["tests_executed"]) == ("wrong_answer", 5, 6)
    shutdown_pools()
    (per_test,) = grade_all(
        [(ECHO, problem)], pool_name="exit_test", pool_granularity="per_test", pool_tests_per_chunk=5
    )
    assert per_test["verdict"] == "wrong_answer"
    # chunk [5, 10) fails at its first test; the reward does not wait for the other worker's chunk, and no chunk is
    # started once the failure is in: 5 + 1 + 5 tests when the two workers keep pace. On a loaded machine the other
    # worker may finish a few more chunks before the failing test's result arrives (once 45 + 1 + 10 ran with the
    # failure at test 45), so the bound is half the tests: without the stop, 59 would run.
    assert per_test["tests_executed"] <= 30
    assert per_test["passed"] <= 29
    assert per_test["total"] == 60


def test_group_of_rollouts_ships_the_problem_once_per_worker():
    problem = stdin_problem([f"{index}\n" for index in range(10)])
    results = grade_all([(ECHO, problem)] * 6, pool_name="cache")
    assert all(result["verdict"] == "accepted" for result in results)
    stats = ray.get(pool_client(PoolConfig(name="cache"), "auto").dispatcher.cache_stats.remote())
    assert sum(worker["misses"] for worker in stats) <= 2
    assert sum(worker["hits"] + worker["misses"] for worker in stats) == 6


def test_a_bad_ground_truth_is_an_internal_error_not_a_worker_failure():
    """Text the worker cannot parse, and a parsed ground truth the client cannot even ship (nested past JSON's
    recursion limit): both flagged, neither raises into verl."""
    deep: object = []
    for _ in range(5_000):
        deep = [deep]
    bad_arguments = {"tests": [{"input": "[1,", "output": "1", "testtype": "functional"}], "fn_name": "f"}
    results = grade_all([(ECHO, "{broken"), (ECHO, {"tests": deep}), (ECHO, bad_arguments)], pool_name="bad_truth")
    for result in results:
        assert (result["verdict"], result["internal_error"], result["regraded"]) == ("internal_error", True, False)
        assert result["ground_truth_error"] is True


def test_completion_over_its_total_budget_gets_time_limit():
    slow = fenced("import time\ntime.sleep(0.6)\nprint(int(input()))")
    (result,) = grade_all([(slow, stdin_problem(["0\n", "1\n", "2\n"]))], pool_name="budget", total_time_budget_s=1.0)
    assert result["verdict"] == "time_limit"
    assert result["passed"] < 3


def test_the_hard_call_deadline_returns_internal_error_instead_of_hanging():
    sleeper = fenced("import time\ntime.sleep(3)\nprint(int(input()))")
    (result,) = grade_all([(sleeper, stdin_problem(["0\n"]))], pool_name="deadline", pool_call_deadline_s=1.0)
    assert result["verdict"] == "internal_error"
    assert result["internal_error"] is True


def test_a_worker_killed_mid_grade_is_regraded_and_a_second_death_gives_internal_error():
    config = PoolConfig(name="faults", max_worker_restarts=2)
    client = pool_client(config, "auto")
    assert ray.get(client.dispatcher.ready.remote()) == 2
    # 6 s of sleep: the kill must land mid-grade even when a loaded machine polls the busy list slowly
    sleeper = fenced("import time\ntime.sleep(6)\nprint(int(input()))")
    problem = stdin_problem(["0\n"])

    def busy_pids(killed: list[int]) -> list[int]:
        """Workers whose call has run 0.3 s of the 6 s program."""
        return [
            call["pid"]
            for call in ray.get(client.dispatcher.busy_workers.remote())
            if call["method"] == "grade" and call["pid"] not in (None, *killed) and call["running_s"] > 0.3
        ]

    async def grade_while_killing(kills: int):
        task = asyncio.ensure_future(client.grade(sleeper, problem, GraderConfig(time_limit_s=10.0)))
        killed: list[int] = []
        for _ in range(kills):
            pids = await asyncio.to_thread(wait_until, lambda: busy_pids(killed), "a busy worker")
            os.kill(pids[0], signal.SIGKILL)
            killed.append(pids[0])
        outcome, _ = await task
        return outcome

    once = asyncio.run(grade_while_killing(1))
    assert (once.result.verdict, once.regraded, once.worker_restarts) == ("accepted", True, 1)
    twice = asyncio.run(grade_while_killing(2))
    assert (twice.result.verdict, twice.regraded) == ("internal_error", True)
    stats = ray.get(client.dispatcher.stats.remote())
    assert stats["internal_errors"] == 1
    assert stats["regraded"] == 2
    assert stats["worker_restarts"] == 3
    (after,) = grade_all([(ECHO, problem)], pool_name="faults", pool_max_worker_restarts=2)
    assert after["verdict"] == "accepted"  # restarted workers grade again


def test_per_problem_grades_a_full_group_in_one_worker_call():
    problem = stdin_problem([f"{index}\n" for index in range(5)])
    wrong = fenced("print(-1)")
    results = grade_all(
        [(ECHO, problem), (wrong, problem), (ECHO, problem)],
        pool_name="group",
        pool_granularity="per_problem",
        pool_group_size=3,
        pool_group_window_s=600.0,
        pool_call_deadline_s=60.0,
    )  # only the third arrival can flush the group in time
    assert [result["verdict"] for result in results] == ["accepted", "wrong_answer", "accepted"]
    assert [result["tests_executed"] for result in results] == [5, 1, 5]
    stats = ray.get(
        pool_client(
            PoolConfig(
                name="group", granularity="per_problem", group_size=3, group_window_s=600.0, call_deadline_s=60.0
            ),
            "auto",
        ).dispatcher.cache_stats.remote()
    )
    assert sorted(worker["misses"] + worker["hits"] for worker in stats) == [0, 1]  # one fetch, one worker call


def test_a_call_past_its_attempt_deadline_has_its_worker_killed_and_is_regraded_once():
    sleeper = fenced("import time\ntime.sleep(1.5)\nprint(int(input()))")
    # attempt deadline = total budget 3 s + slack -2.5 s = 0.5 s, while the program needs 1.5 s of its 3 s budget
    (result,) = grade_all(
        [(sleeper, stdin_problem(["0\n"]))], pool_name="overrun", total_time_budget_s=3.0, pool_attempt_slack_s=-2.5
    )
    assert (result["verdict"], result["regraded"], result["worker_restarts"]) == ("internal_error", True, 2)
