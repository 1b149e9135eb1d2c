"""Every bundled sample solution gets its expected verdict through compute_score; the grading CLI gives one
solution of each expected verdict its own (``make demo`` runs the CLI on all of them).

The large generated tests are included (some too-slow solutions fail only on them). Limits are the defaults except
the per-test time limit, lowered to TIME_LIMIT_S (not 15 s) so that the infinite loops cost seconds; the references
took at most 1.5 s per test on this 2-core machine shared by several jobs (load average ~10).
"""

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from data_prep.sample import load_problems, load_solutions
from reward_fns import compute_score
from reward_fns.grade import main as grade_main
from reward_fns.sandbox import GraderPool
from reward_fns.types import GraderConfig, Problem

# Every bundled completion graded by compute_score's fork-server pool: about half a minute.
pytestmark = pytest.mark.integration

TIME_LIMIT_S = 4.0


@pytest.fixture(scope="module")
def problems():
    return {problem.problem_id: problem for problem in load_problems(include_large=True)}


@pytest.fixture(scope="module")
def solutions():
    return load_solutions()


def test_sample_has_references_and_every_wrong_kind(solutions):
    verdicts = {solution.expected_verdict for solution in solutions}
    assert {"accepted", "wrong_answer", "time_limit", "memory_limit", "runtime_error"} <= verdicts
    assert {"output_limit", "compile_error", "no_code"} <= verdicts


def test_compute_score_gives_every_solution_its_expected_verdict(problems, solutions):
    def grade(solution):
        ground_truth = json.dumps(problems[solution.problem_id].ground_truth)
        return compute_score("nous_sample", solution.completion, ground_truth, None, time_limit_s=TIME_LIMIT_S)

    with ThreadPoolExecutor(max_workers=2) as threads:  # verl calls compute_score from a thread pool too
        results = list(threads.map(grade, solutions))
    wrong = [
        (solution.problem_id, solution.kind, solution.expected_verdict, result["verdict"])
        for solution, result in zip(solutions, results, strict=True)
        if result["verdict"] != solution.expected_verdict
    ]
    assert wrong == []
    for solution, result in zip(solutions, results, strict=True):
        assert result["score"] == (1.0 if solution.expected_verdict == "accepted" else -1.0)


def test_cli_gives_a_solution_of_each_verdict_its_expected_verdict(problems, solutions, tmp_path, capsys):
    first_of_each = {}
    for solution in solutions:
        first_of_each.setdefault(solution.expected_verdict, solution)
    solutions = list(first_of_each.values())
    problems_file, completions_file, out = tmp_path / "p.jsonl", tmp_path / "c.jsonl", tmp_path / "o.jsonl"
    with problems_file.open("w") as lines:
        for problem in problems.values():
            record = {"problem_id": problem.problem_id, "data_source": "nous_sample"}
            lines.write(json.dumps(record | {"ground_truth": json.dumps(problem.ground_truth)}) + "\n")
    with completions_file.open("w") as lines:
        for solution in solutions:
            record = {"problem_id": solution.problem_id, "completion": solution.completion, "kind": solution.kind}
            lines.write(json.dumps(record | {"expected_verdict": solution.expected_verdict}) + "\n")
    flags = ["--workers", "2", "--time-limit-s", str(TIME_LIMIT_S), "--summary", "--check-expected"]
    files = ["--problems", str(problems_file), "--completions", str(completions_file), "--out", str(out)]
    status = grade_main(files + flags)
    table = capsys.readouterr().out
    assert status == 0, table
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(row["problem_id"], row["kind"]) for row in rows] == [(s.problem_id, s.kind) for s in solutions]
    assert all(row["verdict"] == row["expected_verdict"] for row in rows)
    assert f"{len(solutions)} completions, {len(solutions)} with expected_verdict, 0 mismatches" in table


@pytest.fixture
def saturated_machine():
    """A busy process on every core, at the graders' own priority, for the length of the test."""
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(os.cpu_count() or 1)]
    yield len(busy)
    for process in busy:
        process.kill()
        process.wait()


def test_verdicts_do_not_depend_on_the_machines_load(problems, solutions, saturated_machine):
    """Every bundled solution but the too-slow ones, graded while every core is busy: the verdicts a quiet machine
    gives. A run's wall-clock limit does not count the time its program waited for a CPU (up to 3 times the limit),
    the memory sampler counts what the run holds, not how long it took. The time_limit programs are left out: a
    busier machine can only make them slower, and each would cost several seconds here (~20 s for the rest)."""
    graded = [solution for solution in solutions if solution.expected_verdict != "time_limit"]
    parsed = {problem_id: Problem.from_ground_truth(problem.ground_truth) for problem_id, problem in problems.items()}
    jobs = [(solution.code, parsed[solution.problem_id]) for solution in graded if solution.code is not None]
    with GraderPool(workers=2, config=GraderConfig(time_limit_s=TIME_LIMIT_S)) as pool:
        results = iter(list(pool.grade_many(jobs)))
    verdicts = [str(next(results).verdict) if solution.code is not None else "no_code" for solution in graded]
    wrong = [
        (solution.problem_id, solution.kind, solution.expected_verdict, verdict)
        for solution, verdict in zip(graded, verdicts, strict=True)
        if verdict != solution.expected_verdict
    ]
    assert wrong == []
