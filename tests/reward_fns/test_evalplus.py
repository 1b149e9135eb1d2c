"""HumanEval+ in the grader: the ``evalplus`` layout, the test program in the sandbox, EvalPlus's assertion.

The task below is laid out as an EvalPlus release row (``task_id``, ``prompt``, ``entry_point``, ``base_input``,
``plus_input``, ``atol``: evalplus/evalplus ``evalplus/data/humaneval.py``, ``get_human_eval_plus``) with its ground
truth (``base`` / ``plus`` expected values and ``base_time`` / ``plus_time`` seconds: ``evaluate.py``
``get_groundtruth``), written by hand. The expected values and limits below are worked out from EvalPlus's rules
(``evalplus/eval/__init__.py``, ``evalplus/config.py``), not from the code under test.
"""

from __future__ import annotations

import json

import pytest

from reward_fns import evalplus
from reward_fns.layouts import to_our_layout
from reward_fns.sandbox.harness import UnconvertibleResult, to_literal_text
from reward_fns.score import compute_score
from reward_fns.types import Problem

TASK = {
    "task_id": "HumanEval/8",
    "entry_point": "sum_product",
    "atol": 0,
    "base_input": [[[]], [[1, 2, 3]]],
    "plus_input": [[[5, 5]], [[2.5, 2.0]], [[10**20, 3]]],
    "base": ["(0, 1)", "(6, 6)"],
    "plus": ["(10, 25)", "(4.5, 5.0)", "(100000000000000000003, 300000000000000000000)"],
    "base_time": [1e-06, 2.0],
    "plus_time": [1e-06, 1e-06, 1e-06],
}
CORRECT = "def sum_product(numbers):\n    s, p = 0, 1\n    for n in numbers:\n        s += n\n        p *= n\n    return (s, p)"


def grade(code: str, task: dict | None = None) -> dict:
    return compute_score("humanevalplus", f"```python\n{code}\n```", json.dumps(task or TASK), time_limit_s=5)


def test_layout_gives_one_test_per_suite_with_evalplus_time_limits() -> None:
    truth, layout = to_our_layout(json.dumps(TASK))
    assert layout == "evalplus" and truth["fn_name"] == "sum_product"
    base, plus = truth["tests"]
    # max(4.0, 4.0 * t): 4 s for the fast inputs, 8 s for the one the canonical solution took 2 s on
    assert json.loads(base["input"]) == {"calls": TASK["base_input"], "time_limits_s": [4.0, 8.0]}
    assert base["time_limit_s"] == min(60, 4.0 + 8.0) + 1 and plus["time_limit_s"] == 13.0
    spec = json.loads(plus["output"])
    assert spec == {"entry_point": "sum_product", "atol": 0, "expected": TASK["plus"], "time_limits_s": [4.0] * 3}
    assert Problem.from_ground_truth(json.dumps(TASK)).tests[0].testtype == "evalplus"
    many = evalplus.time_limits([1.0] * 20)
    assert evalplus.suite_timeout(many) == 61.0  # capped at EVALPLUS_TIMEOUT_PER_TASK = 60, plus 1


def test_base_only_drops_the_plus_suite() -> None:
    truth, _ = to_our_layout(evalplus.base_only(TASK))
    assert len(truth["tests"]) == 1 and json.loads(truth["tests"][0]["output"])["expected"] == TASK["base"]


@pytest.mark.parametrize(
    ("actual", "expected", "atol", "passes"),
    [
        ((1, 2), (1, 2), 0, True),
        ([1, 2], (1, 2), 0, False),  # == is False and atol is 0: EvalPlus fails a list for a tuple
        (1, 1.0, 0, True),  # == holds across int and float
        (0.1 + 0.2, 0.3, 0, True),  # a float expected: atol becomes 1e-6
        (0.3001, 0.3, 0, False),
        ([0.1 + 0.2, 1.0], [0.3, 1.0], 0, True),
        ((0.1 + 0.2,), [0.3], 0, False),  # allclose needs equal types first
        ([1.0, 2.0], [1.0, 2.0, 3.0], 0, False),
        (2.0004, 2.0, 1e-3, True),  # the task's own atol
        ("abc", "abd", 1e-3, False),
        ({1, 2}, {2, 1}, 0, True),
        (float("inf"), float("inf"), 0, True),
    ],
)
def test_assertion_is_evalplus_rule(actual, expected, atol, passes) -> None:
    assert evalplus.output_passes(actual, expected, atol, [], "f") is passes


def test_find_zero_uses_the_polynomial_oracle() -> None:
    coefficients = [-6, 11, -6, 1]  # (x - 1)(x - 2)(x - 3)
    assert evalplus.output_passes(2.0000000001, 0.0, 1e-6, [coefficients], evalplus.FIND_ZERO)
    assert not evalplus.output_passes(2.5, 2.0, 1e-6, [coefficients], evalplus.FIND_ZERO)


def test_literals_keep_types_and_refuse_what_is_not_data() -> None:
    value = (1, [2.5, "é"], {3}, {"k": (None, True)}, (7,), b"x", float("inf"))
    assert evalplus.parse_literal(to_literal_text(value)) == value
    assert to_literal_text(set()) == "set()" and to_literal_text((1,)) == "(1,)"
    for bad in (float("nan"), object(), type("Sub", (int,), {})(3)):
        with pytest.raises(UnconvertibleResult):
            to_literal_text(bad)


@pytest.mark.parametrize(
    ("code", "verdict"),
    [
        (CORRECT, "accepted"),
        (CORRECT.replace("return (s, p)", "return [s, p]"), "wrong_answer"),
        ("def sum_product(numbers):\n    return (sum(numbers), 1)", "wrong_answer"),
        ("def sum_product(numbers):\n    raise ValueError('no')", "runtime_error"),
        ("import os\nos._exit(0)", "runtime_error"),
        ("def other(numbers):\n    return (0, 1)", "runtime_error"),
        ("def sum_product(numbers):\n    return object()", "wrong_answer"),
        # a program cannot write its own "results": it would need the expected values, which are not there
        ("import os\nos.write(3, b'OK 0.0 (10, 25)\\n' * 3)\nos._exit(0)", "wrong_answer"),
        ("def sum_product(numbers):\n    import sys\n    sys.exit(0)", "runtime_error"),
    ],
)
def test_completions_get_evalplus_verdicts(code: str, verdict: str) -> None:
    result = grade(code)
    assert result["verdict"] == verdict, result


@pytest.mark.integration  # two calls that each burn EvalPlus's 4 s minimum limit of CPU (about 9 s in all)
def test_a_call_over_its_cpu_limit_fails_even_if_it_swallows_the_stop() -> None:
    task = {**TASK, "plus_input": [], "plus": [], "plus_time": [], "base_input": [[[]]], "base": ["(0, 1)"]}
    task["base_time"] = [1e-6]
    assert grade("def sum_product(numbers):\n    while True:\n        pass", task)["verdict"] == "time_limit"
    slow = (
        "import time\ndef sum_product(numbers):\n    end = time.process_time() + 5\n    try:\n"
        "        while time.process_time() < end:\n            pass\n    except BaseException:\n        pass\n"
        "    return (sum(numbers), 1)"
    )
    assert grade(slow, task)["verdict"] == "time_limit"
