"""reward_fns.compute_score: verdicts, the reward dict verl receives, grader settings, internal errors."""

import json
import logging

import numpy as np
import pytest
from verl.trainer.ppo.metric_utils import process_validation_metrics

from reward_fns import compute_score
from reward_fns.score import grader_config
from reward_fns.types import GraderConfig

SUM_PROBLEM = json.dumps(
    {
        "tests": [
            {"input": "1 2\n", "output": "3\n", "testtype": "stdin"},
            {"input": "10 -4\n", "output": "6\n", "testtype": "stdin"},
            {"input": "0 0\n", "output": "0\n", "testtype": "stdin"},
        ]
    }
)
THIRD_PROBLEM = json.dumps({"tests": [{"input": "3\n", "output": "0.33333333\n", "testtype": "stdin"}]})
PAIRS_PROBLEM = json.dumps(
    {
        "tests": [
            {"input": "[1, 2]\n3", "output": "[[1, 3], [2, 3]]", "testtype": "functional"},
            {"input": "[]\n1", "output": "[]", "testtype": "functional"},
        ],
        "fn_name": "pairWith",
    }
)
EXPECTED_KEYS = {
    "score",
    "acc",
    "verdict",
    "passed",
    "total",
    "time_s",
    "max_test_time_s",
    "internal_error",
    "ground_truth_error",
}


def answer(code: str, thinking: str = "Let me think.") -> str:
    return f"<think>{thinking}</think>\nHere is my solution.\n```python\n{code}\n```\n"


SUM_OK = answer("a, b = map(int, input().split())\nprint(a + b)")
SUM_WRONG = answer("a, b = map(int, input().split())\nprint(a - b)")
THIRD = answer("print(f'{1 / int(input()):.7f}')")  # 0.3333333: close, not decimal-equal


def score(solution: str, ground_truth=SUM_PROBLEM, extra_info=None, **kwargs) -> dict:
    return compute_score(
        data_source="nous_sample", solution_str=solution, ground_truth=ground_truth, extra_info=extra_info, **kwargs
    )


def test_accepted_program_scores_plus_one():
    result = score(SUM_OK)
    assert result["score"] == 1.0
    assert result["acc"] is True
    assert result["verdict"] == "accepted"
    assert (result["passed"], result["total"]) == (3, 3)
    assert result["internal_error"] is False
    assert result["time_s"] > 0


def test_wrong_program_scores_minus_one():
    result = score(SUM_WRONG)
    assert (result["score"], result["acc"], result["verdict"]) == (-1.0, False, "wrong_answer")
    assert result["passed"] < result["total"] == 3


def test_functional_problem_with_tuples_is_accepted():
    code = "class Solution:\n    def pairWith(self, xs, y):\n        return tuple((x, y) for x in xs)"
    assert score(answer(code), PAIRS_PROBLEM)["verdict"] == "accepted"


def test_ground_truth_may_be_a_dict():
    assert score(SUM_OK, json.loads(SUM_PROBLEM))["verdict"] == "accepted"


def test_no_code_block_is_no_code():
    result = score("The answer is to add the numbers.")
    assert (result["score"], result["verdict"], result["passed"], result["total"]) == (-1.0, "no_code", 0, 3)


def test_code_only_inside_think_is_no_code():
    assert score("<think>```python\nprint(3)\n```</think>I am not sure.")["verdict"] == "no_code"


def test_syntax_error_is_compile_error():
    assert score(answer("print(1 +"))["verdict"] == "compile_error"


def _functional(test_input: str, output: str = "3", fn_name: object = "add") -> str:
    return json.dumps(
        {"tests": [{"input": test_input, "output": output, "testtype": "functional"}], "fn_name": fn_name}
    )


@pytest.mark.parametrize(
    "bad_ground_truth",
    [
        "{not json",
        json.dumps({"tests": []}),
        json.dumps({"tests": [{"input": "1"}]}),
        _functional("[1, 2"),
        _functional("1\n2", fn_name=5),
        _functional("1\n2", output="{bad"),
        '{"tests": ' + "[" * 5_000 + "]" * 5_000 + "}",
        {"inputs": [["x"]], "outputs": [json.loads("[" * 900 + "]" * 900)], "fn_name": "f"},
    ],
    ids=[
        "bad-json",
        "no-tests",
        "test-without-output",
        "arguments-not-json",
        "fn-name-not-a-string",
        "expected-result-not-json",
        "nested-5000-deep",
        "parsed-and-nested-900-deep",
    ],
)
def test_bad_ground_truth_is_a_logged_flagged_internal_error(bad_ground_truth, caplog):
    """Detected before any program runs: never a -1 for the model, never an exception into verl."""
    with caplog.at_level(logging.ERROR, logger="reward_fns.score"):
        result = score(SUM_OK, bad_ground_truth, extra_info={"problem_id": "p-bad", "index": 7})
    assert (result["score"], result["verdict"], result["internal_error"]) == (-1.0, "internal_error", True)
    assert result["ground_truth_error"] is True and result["total"] == 0
    assert "p-bad" in caplog.text and "internal_error" in caplog.text and "ground truth" in caplog.text


def test_every_verdict_returns_the_same_numeric_keys():
    results = [score(SUM_OK), score(SUM_WRONG), score("no code"), score(SUM_OK, "{bad")]
    for result in results:
        assert set(result) == EXPECTED_KEYS
        assert all(isinstance(result[key], int | float) for key in EXPECTED_KEYS - {"verdict"})
        assert isinstance(result["verdict"], str)
        json.dumps(result)


def test_results_aggregate_in_verl_validation_metrics():
    """The dicts go through verl's own per-key stacking and validation metric code without error."""
    results = [score(SUM_OK), score(SUM_WRONG), score("no code"), score(SUM_OK)]
    columns = {key: np.array([result[key] for result in results]).tolist() for key in results[0]}
    metrics = process_validation_metrics(["nous_sample"] * 4, ["u1", "u1", "u2", "u2"], columns)
    per_key = metrics["nous_sample"]
    assert per_key["acc"]["mean@2"] == pytest.approx(0.5)
    assert per_key["score"]["mean@2"] == pytest.approx(0.0)
    assert per_key["internal_error"]["mean@2"] == 0.0
    assert "verdict" not in per_key  # strings are skipped by verl, not averaged


def test_reward_kwargs_choose_the_comparison_mode():
    assert score(THIRD, THIRD_PROBLEM)["verdict"] == "wrong_answer"
    assert score(THIRD, THIRD_PROBLEM, compare_mode="tolerant")["verdict"] == "accepted"


def test_environment_chooses_the_comparison_mode(monkeypatch):
    monkeypatch.setenv("REWARD_FNS_COMPARE_MODE", "tolerant")
    assert score(THIRD, THIRD_PROBLEM)["verdict"] == "accepted"
    assert score(THIRD, THIRD_PROBLEM, compare_mode="lcb")["verdict"] == "wrong_answer"  # kwargs win


def test_verl_router_kwargs_are_ignored_and_unknown_settings_rejected():
    assert score(SUM_OK, reward_router_address=None, reward_model_tokenizer=None)["verdict"] == "accepted"
    with pytest.raises(ValueError, match="unknown grader setting"):
        score(SUM_OK, time_limit=3)


def test_grader_config_precedence_and_types():
    environ = {"REWARD_FNS_TIME_LIMIT_S": "3", "REWARD_FNS_MEMORY_LIMIT_MB": "512", "REWARD_FNS_ISOLATION": "none"}
    config = grader_config({"time_limit_s": 5, "compare_mode": None}, environ)
    assert config == GraderConfig(time_limit_s=5.0, memory_limit_mb=512, isolation="none")
    assert grader_config({}, {}) == GraderConfig()
    with pytest.raises(ValueError, match="must be one of"):
        grader_config({"compare_mode": "fuzzy"}, {})
    with pytest.raises(ValueError, match="REWARD_FNS_MEMORY_LIMIT_MB=.lots. must be an integer"):
        grader_config({}, {"REWARD_FNS_MEMORY_LIMIT_MB": "lots"})
