"""compute_score on the ground-truth layouts of other verl runs' code datasets: one row of each, right and wrong.

Each row is laid out as the public code that writes or reads it (``reward_fns/layouts.py`` names it).
"""

from __future__ import annotations

import json
import logging

import pytest

from recipe.nouscoder.training.step_metrics import grading_metrics
from reward_fns import compute_score

PAIRS = [("1 2\n", "3\n"), ("10 -4\n", "6\n"), ("0 0\n", "0\n")]
CALLS = [([1, 2], 3), ([10, -4], 6), ([7, 0], 7)]
STDIN_RIGHT = "a, b = map(int, input().split())\nprint(a + b)"
STDIN_WRONG = "a, b = map(int, input().split())\nprint(a - b)"
CALL_RIGHT = "def add(a, b):\n    return a + b"
CALL_WRONG = "def add(a, b):\n    return a - b"


def _lines(arguments: list) -> str:
    return "\n".join(json.dumps(argument) for argument in arguments)


FOREIGN_ROWS = {
    # verl prime_code / TACO stdin, as verl's prime_code reads it: a JSON string of {inputs, outputs}
    "taco-stdin-json": (json.dumps({"inputs": [i for i, _ in PAIRS], "outputs": [o for _, o in PAIRS]}), "stdin"),
    # TACO call-based from codewars (argument lists, outputs wrapped in one-element lists), as a dict
    "taco-codewars-dict": (
        {"inputs": [a for a, _ in CALLS], "outputs": [[r] for _, r in CALLS], "fn_name": "add"},
        "call",
    ),
    # verl prime_code call-based: arguments as one JSON value per line, outputs as JSON text
    "prime_code-call": (
        json.dumps(
            {"inputs": [_lines(a) for a, _ in CALLS], "outputs": [json.dumps(r) for _, r in CALLS], "fn_name": "add"}
        ),
        "call",
    ),
    # LiveCodeBench get_evaluation_sample / rLLM postprocess_lcb_sample: {"input_output": <TACO JSON>}
    "input_output-string": (
        {
            "input_output": json.dumps(
                {
                    "inputs": [_lines(a) for a, _ in CALLS],
                    "outputs": [json.dumps(r) for _, r in CALLS],
                    "fn_name": "add",
                }
            )
        },
        "call",
    ),
    # LiveCodeBench test list (stdin)
    "lcb-list-stdin": (json.dumps([{"input": i, "output": o, "testtype": "stdin"} for i, o in PAIRS]), "stdin"),
    # rLLM DeepCoder list: LiveCodeBench tests with metadata.func_name on each
    "rllm-list-functional": (
        json.dumps(
            [
                {
                    "input": _lines(a),
                    "output": json.dumps(r),
                    "testtype": "functional",
                    "metadata": {"func_name": "add"},
                }
                for a, r in CALLS
            ]
        ),
        "call",
    ),
    # PrimeIntellect verification_info: function_call tests with argument list and wrapped output as JSON text
    "primeintellect-verification_info": (
        json.dumps(
            {
                "language": "python",
                "test_cases": [
                    {"type": "function_call", "fn_name": "add", "input": json.dumps(a), "output": json.dumps([r])}
                    for a, r in CALLS
                ],
            }
        ),
        "call",
    ),
    # DeepCoder primeintellect config: the same test cases with native lists
    "deepcoder-primeintellect-native": (
        [{"type": "function_call", "fn_name": "add", "input": a, "output": [r]} for a, r in CALLS],
        "call",
    ),
    # DeepCoder codeforces: plain {input, output}
    "codeforces-list": ([{"input": i, "output": o} for i, o in PAIRS], "stdin"),
}


def _answer(code: str) -> str:
    return f"Here it is.\n```python\n{code}\n```\n"


@pytest.mark.parametrize("name", sorted(FOREIGN_ROWS))
def test_each_foreign_layout_grades_right_and_wrong_programs(name: str) -> None:
    ground_truth, kind = FOREIGN_ROWS[name]
    right, wrong = (STDIN_RIGHT, STDIN_WRONG) if kind == "stdin" else (CALL_RIGHT, CALL_WRONG)
    accepted = compute_score("other_run", _answer(right), ground_truth)
    rejected = compute_score("other_run", _answer(wrong), ground_truth)
    assert (accepted["verdict"], accepted["score"], accepted["passed"], accepted["total"]) == ("accepted", 1.0, 3, 3)
    assert (rejected["verdict"], rejected["score"]) == ("wrong_answer", -1.0)
    assert not accepted["ground_truth_error"] and not rejected["ground_truth_error"]


def test_list_results_of_several_lengths_are_not_unwrapped() -> None:
    """A list-returning problem (leetcode-style, not wrapped): results [1, 3] and [5]; [5] stays a list."""
    truth = {"inputs": [[[3, 1]], [[5]]], "outputs": [[1, 3], [5]], "fn_name": "sort_it"}
    right = compute_score("x", _answer("def sort_it(values):\n    return sorted(values)"), truth)
    unwrapped_reader = compute_score(
        "x",
        _answer(
            "def sort_it(values):\n    values = sorted(values)\n    return values[0] if len(values) == 1 else values"
        ),
        truth,
    )
    assert right["verdict"] == "accepted" and unwrapped_reader["verdict"] == "wrong_answer"


@pytest.mark.parametrize(
    "ground_truth",
    [
        json.dumps({"question": "add", "answer": "3"}),
        json.dumps({"tests": [], "inputs": [], "outputs": []}),  # two layouts at once: ambiguous
        json.dumps(["1 2", "3"]),
        json.dumps(42),
    ],
    ids=["unknown-keys", "ambiguous", "list-of-strings", "number"],
)
def test_unrecognised_layout_is_loud_logged_once_and_counted(ground_truth: str, caplog, monkeypatch) -> None:
    monkeypatch.setattr("reward_fns.types._logged_layouts", set())
    with caplog.at_level(logging.ERROR, logger="reward_fns.types"):
        first = compute_score("other_run", _answer(STDIN_RIGHT), ground_truth)
        second = compute_score("other_run", _answer(STDIN_RIGHT), ground_truth)
    for result in (first, second):
        assert (result["verdict"], result["score"], result["internal_error"]) == ("internal_error", -1.0, True)
        assert result["ground_truth_error"] is True
    layout_logs = [record.getMessage() for record in caplog.records if record.name == "reward_fns.types"]
    assert len(layout_logs) == 1  # the first occurrence in this process only
    assert "unrecognised ground-truth layout: a " in layout_logs[0]
    assert '"testtype"' in layout_logs[0] and "reward_fns/README.md" in layout_logs[0]
    right = compute_score("other_run", _answer(STDIN_RIGHT), FOREIGN_ROWS["taco-stdin-json"][0])
    metrics = grading_metrics([first, second, right])  # what the trainers log each step
    assert metrics["grading/ground_truth_errors"] == 2.0 and metrics["grading/internal_errors"] == 2.0
    assert metrics["grading/verdict/accepted"] == 1.0
