"""The grading CLI `python -m reward_fns.grade`: output order and keys, malformed lines, summary, exit status."""

import json
import subprocess
import sys

import pytest

from reward_fns.batch_grading import Completion, grade_in_order
from reward_fns.grade import main
from reward_fns.sandbox import GraderPool
from reward_fns.types import GraderConfig, Problem

SUM_TESTS = {
    "tests": [
        {"input": "1 2\n", "output": "3\n", "testtype": "stdin"},
        {"input": "5 5\n", "output": "10\n", "testtype": "stdin"},
    ]
}
REVERSE_TESTS = {
    "tests": [{"input": "[1, 2, 3]", "output": "[3, 2, 1]", "testtype": "functional"}],
    "fn_name": "reverse",
}
SUM_OK = "```python\na, b = map(int, input().split())\nprint(a + b)\n```"
SUM_WRONG = "```python\na, b = map(int, input().split())\nprint(a * b)\n```"
REVERSE_OK = "```python\nclass Solution:\n    def reverse(self, xs):\n        return xs[::-1]\n```"


def write_lines(path, lines) -> None:
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))


@pytest.fixture
def problems_file(tmp_path):
    path = tmp_path / "problems.jsonl"
    write_lines(
        path,
        [
            {"problem_id": "sum", "data_source": "test", "ground_truth": json.dumps(SUM_TESTS)},
            {"problem_id": "reverse", "data_source": "test", "ground_truth": REVERSE_TESTS},  # an object works too
            {"problem_id": "broken", "data_source": "test", "ground_truth": json.dumps({"tests": []})},
            "{this is not json",
            {"problem_id": "no_ground_truth"},
            {"problem_id": "sum", "ground_truth": json.dumps({"tests": [{"input": "", "output": "x"}]})},
        ],
    )
    return path


def run_cli(problems, completions, out, *flags) -> int:
    return main(["--problems", str(problems), "--completions", str(completions), "--out", str(out), *flags])


def read_out(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_output_has_one_line_per_completion_in_order_with_passed_through_keys(problems_file, tmp_path, capsys):
    completions = tmp_path / "completions.jsonl"
    write_lines(
        completions,
        [
            {"problem_id": "sum", "completion": SUM_OK, "n": 0, "expected_verdict": "accepted"},
            {"problem_id": "sum", "completion": SUM_WRONG, "n": 1},
            {"problem_id": "reverse", "completion": REVERSE_OK, "n": 2},
            {"problem_id": "sum", "completion": "I give up.", "n": 3},
            "",
            {"problem_id": "nope", "completion": SUM_OK, "n": 4},
            {"problem_id": "broken", "completion": SUM_OK, "n": 5},
            "[1, 2",
            {"problem_id": "sum", "n": 7},
            {"problem_id": "sum", "completion": SUM_OK, "n": 8},
        ],
    )
    out = tmp_path / "graded.jsonl"
    assert run_cli(problems_file, completions, out, "--workers", "2") == 0
    rows = read_out(out)
    assert [row["verdict"] for row in rows] == [
        "accepted",
        "wrong_answer",
        "accepted",
        "no_code",
        "internal_error",  # unknown problem_id
        "internal_error",  # bad ground truth
        "internal_error",  # not JSON
        "internal_error",  # no completion key
        "accepted",
    ]
    assert [row.get("n") for row in rows] == [0, 1, 2, 3, 4, 5, None, 7, 8]
    assert rows[0]["expected_verdict"] == "accepted"
    assert all("completion" not in row for row in rows)
    first = rows[0]
    assert (first["problem_id"], first["score"], first["passed"], first["total"]) == ("sum", 1.0, 2, 2)
    assert first["time_s"] > 0
    assert (rows[1]["score"], rows[3]["total"]) == (-1.0, 2)
    assert "unknown problem_id 'nope'" in rows[4]["detail"]
    assert "no tests" in rows[5]["detail"]

    stderr = capsys.readouterr().err
    assert f"{problems_file}:3: problem 'broken': ground truth has no tests" in stderr
    assert f"{problems_file}:4: not valid JSON" in stderr
    assert f'{problems_file}:5: a problem needs "problem_id"' in stderr
    assert f"{problems_file}:6: duplicate problem_id 'sum'" in stderr
    assert f"{completions}:6: unknown problem_id 'nope'" in stderr
    assert f"{completions}:8: not valid JSON" in stderr
    assert f'{completions}:9: a completion needs "problem_id"' in stderr


DEEP = "[" * 5_000 + "]" * 5_000
MALFORMED_PROBLEMS = {
    "deep": json.dumps({"tests": [{"input": "", "output": "x"}], "fn_name": "f"})[:-1] + ', "extra": ' + DEEP + "}",
    "args_not_json": {"tests": [{"input": "[1, 2", "output": "3", "testtype": "functional"}], "fn_name": "add"},
    "fn_name_not_a_string": {"tests": [{"input": "1\n2", "output": "3", "testtype": "functional"}], "fn_name": 5},
    "expected_nan": {"tests": [{"input": "1", "output": "NaN", "testtype": "functional"}], "fn_name": "f"},
}
"""Ground truths of the kinds that were graded -1 or crashed the CLI: each must be internal_error, flagged."""


def test_whatever_the_input_holds_every_completion_gets_one_line(problems_file, tmp_path, capsys):
    problems = tmp_path / "more_problems.jsonl"
    problems.write_bytes(
        problems_file.read_bytes()
        + "".join(
            json.dumps({"problem_id": name, "ground_truth": truth}) + "\n" for name, truth in MALFORMED_PROBLEMS.items()
        ).encode()
        + b'{"problem_id": "latin1", "ground_truth": "caf\xe9"}\n'
        + (DEEP + "\n").encode()
    )
    completions = tmp_path / "completions.jsonl"
    lines = [json.dumps({"problem_id": name, "completion": SUM_OK}) for name in MALFORMED_PROBLEMS]
    lines += [
        DEEP,
        '{"problem_id": "sum", "completion": "x", "big": ' + "9" * 5_000 + "}",
        json.dumps({"problem_id": ["sum"], "completion": SUM_OK}),
        json.dumps({"problem_id": "sum", "completion": SUM_OK, "deep": json.loads("[" * 900 + "]" * 900)}),
    ]
    completions.write_bytes("\n".join(lines).encode() + b'\n{"problem_id": "sum", "completion": "\xff"}\n')
    out = tmp_path / "graded.jsonl"
    assert run_cli(problems, completions, out, "--workers", "1") == 0
    rows = read_out(out)
    assert len(rows) == len(lines) + 1
    assert [row["verdict"] for row in rows] == ["internal_error"] * 7 + ["accepted", "internal_error"], rows
    assert [row["ground_truth_error"] for row in rows[:4]] == [True] * 4
    assert "nested deeper than" in rows[0]["detail"] and "not JSON" in rows[1]["detail"]
    assert "identifier" in rows[2]["detail"] and "NaN" in rows[3]["detail"]
    stderr = capsys.readouterr().err
    assert f"{problems}:11: not UTF-8 text" in stderr and f"{problems}:12: not readable JSON" in stderr
    assert f"{completions}:5: not readable JSON" in stderr and f"{completions}:6: not readable JSON" in stderr
    assert f"{completions}:9: not UTF-8 text" in stderr


def test_many_completions_stay_in_input_order(problems_file, tmp_path):
    completions = tmp_path / "completions.jsonl"
    choices = [SUM_OK, SUM_WRONG, "no code here", REVERSE_OK]
    lines = [
        {"problem_id": "reverse" if choices[n % 4] is REVERSE_OK else "sum", "completion": choices[n % 4], "n": n}
        for n in range(24)
    ]
    write_lines(completions, lines)
    out = tmp_path / "graded.jsonl"
    assert run_cli(problems_file, completions, out, "--workers", "3") == 0
    rows = read_out(out)
    assert [row["n"] for row in rows] == list(range(24))
    expected = {0: "accepted", 1: "wrong_answer", 2: "no_code", 3: "accepted"}
    assert [row["verdict"] for row in rows] == [expected[n % 4] for n in range(24)]


def test_summary_table_and_check_expected(problems_file, tmp_path, capsys):
    completions = tmp_path / "completions.jsonl"
    write_lines(
        completions,
        [
            {"problem_id": "sum", "completion": SUM_OK, "kind": "reference", "expected_verdict": "accepted"},
            {"problem_id": "sum", "completion": SUM_WRONG, "kind": "wrong", "expected_verdict": "accepted"},
            {"problem_id": "sum", "completion": "none", "kind": "no_code", "expected_verdict": "no_code"},
        ],
    )
    out = tmp_path / "graded.jsonl"
    assert run_cli(problems_file, completions, out, "--summary") == 0
    table = capsys.readouterr().out
    lines = table.splitlines()
    wrong_row = next(line for line in lines if " wrong " in line)
    assert "wrong_answer" in wrong_row and "MISMATCH" in wrong_row and "0/2" in wrong_row
    reference_row = next(line for line in lines if "reference" in line)
    assert "MISMATCH" not in reference_row and "2/2" in reference_row
    assert any(line.startswith("accepted") and " 1 " in line for line in lines)  # per-verdict totals
    assert "3 completions, 3 with expected_verdict, 1 mismatches" in table
    assert run_cli(problems_file, completions, out, "--check-expected") == 1
    write_lines(completions, [{"problem_id": "sum", "completion": SUM_OK, "expected_verdict": "accepted"}])
    assert run_cli(problems_file, completions, out, "--check-expected") == 0


def test_grader_flags_reach_the_grader(tmp_path):
    problems = tmp_path / "problems.jsonl"
    thirds = {"tests": [{"input": "3\n", "output": "0.33333333\n", "testtype": "stdin"}]}
    write_lines(problems, [{"problem_id": "third", "ground_truth": json.dumps(thirds)}])
    completions = tmp_path / "completions.jsonl"
    code = "```python\nprint(f'{1 / int(input()):.7f}')\n```"
    write_lines(completions, [{"problem_id": "third", "completion": code}])
    out = tmp_path / "graded.jsonl"
    run_cli(problems, completions, out)
    assert read_out(out)[0]["verdict"] == "wrong_answer"
    run_cli(
        problems, completions, out, "--compare-mode", "tolerant", "--time-limit-s", "5", "--memory-limit-mb", "1024"
    )
    assert read_out(out)[0]["verdict"] == "accepted"


def test_help_documents_every_flag():
    completed = subprocess.run(
        [sys.executable, "-m", "reward_fns.grade", "--help"], capture_output=True, text=True, check=True, timeout=120
    )
    for flag in ["--problems", "--completions", "--out", "--workers", "--compare-mode", "--time-limit-s"]:
        assert flag in completed.stdout
    for flag in ["--memory-limit-mb", "--isolation", "--summary", "--check-expected"]:
        assert flag in completed.stdout


def test_missing_input_file_is_a_usage_error(tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        run_cli(tmp_path / "missing.jsonl", tmp_path / "missing.jsonl", tmp_path / "out.jsonl")
    assert stop.value.code == 2
    assert "missing.jsonl is not a readable file" in capsys.readouterr().err


def test_completions_are_streamed_not_read_all_at_once():
    """With one worker the pool keeps 2 jobs in flight, so the first result comes after a handful of lines."""
    problem = Problem.from_ground_truth(SUM_TESTS)
    consumed = []

    def completions():
        for n in range(50):
            consumed.append(n)
            yield Completion(n, {"n": n}, code="print(sum(map(int, input().split())))", problem=problem)

    with GraderPool(1, GraderConfig()) as pool:
        graded = grade_in_order(completions(), pool)
        first, result = next(graded)
        assert (first.line_number, result.verdict) == (0, "accepted")
        assert len(consumed) <= 4
        assert [completion.line_number for completion, _ in graded] == list(range(1, 50))


def test_a_problems_file_without_one_usable_ground_truth_fails_at_once_and_writes_nothing(tmp_path, capsys):
    problems = tmp_path / "problems.jsonl"
    write_lines(problems, [{"problem_id": "a", "ground_truth": "{not json"}, {"problem_id": "b", "ground_truth": "[]"}])
    completions = tmp_path / "completions.jsonl"
    write_lines(completions, [{"problem_id": "a", "completion": SUM_OK}])
    out = tmp_path / "graded.jsonl"
    assert run_cli(problems, completions, out) == 2
    error = capsys.readouterr().err.splitlines()[-1]
    assert error.startswith(f"python -m reward_fns.grade: error: --problems {problems}: none of its 2 problems")
    assert "python -m data_prep.build_deepcoder_mix writes it" in error
    assert not out.exists() and not list(tmp_path.glob("graded.jsonl*"))


def test_all_completions_internal_error_is_a_failure(problems_file, tmp_path, capsys):
    completions = tmp_path / "completions.jsonl"
    write_lines(
        completions, [{"problem_id": "broken", "completion": SUM_OK}, {"problem_id": "x", "completion": SUM_OK}]
    )
    out = tmp_path / "graded.jsonl"
    assert run_cli(problems_file, completions, out) == 1
    assert "error: all 2 completions are internal_error" in capsys.readouterr().err
    assert [row["verdict"] for row in read_out(out)] == ["internal_error", "internal_error"]  # aligned, complete


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("REWARD_FNS_TIME_LIMIT_S", "abc", "grader setting REWARD_FNS_TIME_LIMIT_S='abc' must be a number"),
        ("REWARD_FNS_TIME_LIMT_S", "5", "REWARD_FNS_TIME_LIMT_S (did you mean REWARD_FNS_TIME_LIMIT_S?)"),
    ],
)
def test_a_bad_or_misspelt_variable_stops_before_grading(
    problems_file, tmp_path, capsys, monkeypatch, variable, value, message
):
    monkeypatch.setenv(variable, value)
    completions = tmp_path / "completions.jsonl"
    write_lines(completions, [{"problem_id": "sum", "completion": SUM_OK}])
    out = tmp_path / "graded.jsonl"
    assert run_cli(problems_file, completions, out) == 2
    error = capsys.readouterr().err
    assert error.startswith("python -m reward_fns.grade: error: ") and message in error
    assert not out.exists()
