"""Every bundled sample solution gets its expected verdict, through compute_score and through the grading CLI.

The large generated tests are included (some too-slow solutions fail only on them). Limits are the defaults except
the per-test time limit, lowered to TIME_LIMIT_S (not 15 s) so that the infinite loops cost seconds; the references
took at most 1.5 s per test on this 2-core machine shared by several jobs (load average ~10).
"""

import json
from concurrent.futures import ThreadPoolExecutor

import pytest

from data_prep.sample import load_problems, load_solutions
from reward_fns import compute_score
from reward_fns.grade import main as grade_main

# Every bundled completion graded by fork-server pools (the CLI's and compute_score's): about a minute.
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


def test_cli_gives_every_solution_its_expected_verdict(problems, solutions, tmp_path, capsys):
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
