"""The reward of a multi-turn trajectory (its final program, the turn penalty) and the failing test's output."""

from __future__ import annotations

import asyncio
import json
import random

import pytest

from reward_fns import async_score
from reward_fns.extract import extract_code, fenced_block
from reward_fns.ray_pool.dispatcher import Outcome
from reward_fns.score import compute_score
from reward_fns.types import GradeResult, Verdict

GROUND_TRUTH = json.dumps({"tests": [{"input": "2 3\n", "output": "5\n"}, {"input": "-1 1\n", "output": "0\n"}]})
RIGHT = "a, b = map(int, input().split())\nprint(a + b)"
WRONG = "a, b = map(int, input().split())\nprint(a * b)"


def record(final_program, turns=2, penalty=0.0):
    return {"problem_id": "p", "multi_turn": {"final_program": final_program, "turns": turns, "turn_penalty": penalty}}


def test_the_final_program_is_graded_not_the_last_block_of_the_conversation():
    conversation = f"```python\n{WRONG}\n```\nfeedback ...\n```python\n{RIGHT}\n```"
    assert compute_score("x", conversation, GROUND_TRUTH)["score"] == 1.0  # single-turn rule: the last block
    assert compute_score("x", conversation, GROUND_TRUTH, record(WRONG))["score"] == -1.0
    assert compute_score("x", f"```python\n{WRONG}\n```", GROUND_TRUTH, record(RIGHT))["score"] == 1.0
    no_code = compute_score("x", conversation, GROUND_TRUTH, record(None))
    assert no_code["verdict"] == "no_code" and no_code["score"] == -1.0


def test_turn_penalty_applies_to_accepted_trajectories_only():
    accepted = compute_score("x", "", GROUND_TRUTH, record(RIGHT, turns=3, penalty=0.2))
    assert accepted["acc"] and accepted["score"] == pytest.approx(1.0 - 0.2 * 2)
    assert compute_score("x", "", GROUND_TRUTH, record(WRONG, turns=3, penalty=0.2))["score"] == -1.0
    assert compute_score("x", "", GROUND_TRUTH, record(RIGHT, turns=1, penalty=0.2))["score"] == 1.0


def test_the_pool_reward_grades_the_final_program_with_the_penalty(monkeypatch):
    graded = []

    class Client:
        async def grade(self, response, ground_truth, config):
            graded.append(extract_code(response))
            return Outcome(GradeResult(Verdict.ACCEPTED, 2, 2), 2, 0, False, 0), 0.01

    monkeypatch.setattr(async_score, "pool_client", lambda pool, isolation: Client())
    result = asyncio.run(
        async_score.compute_score("x", f"```python\n{WRONG}\n```", GROUND_TRUTH, record(RIGHT, turns=2, penalty=0.5))
    )
    assert graded == [RIGHT] and result["score"] == pytest.approx(0.5) and result["tests_executed"] == 2


def test_fenced_block_round_trips_any_program():
    generator = random.Random(0)
    pieces = ["x = 1", "```", "````", "  ```py", "s = '```'", "", "# ``````", "print(`)", "\t", "y"]
    for _ in range(300):
        program = "\n".join(generator.choice(pieces) for _ in range(generator.randint(1, 8)))
        if not program.strip():
            continue
        assert extract_code(fenced_block(program)) == program


def test_a_failing_result_keeps_the_programs_output(grade, grade_functional):
    wrong = grade("print('got', input())", [("7\n", "7\n")])
    assert wrong.verdict is Verdict.WRONG_ANSWER and wrong.extra["actual_output"] == "got 7\n"
    crash = grade("import sys\nsys.stderr.write('first\\n')\nraise RuntimeError('boom')", [("1\n", "1\n")])
    assert crash.verdict is Verdict.RUNTIME_ERROR and crash.extra["stderr_tail"].rstrip().endswith("RuntimeError: boom")
    assert "actual_output" not in crash.extra
    returned = grade_functional("def f(x):\n    return [x, x]", "f", [("3", "[3]")])
    assert returned.verdict is Verdict.WRONG_ANSWER and json.loads(returned.extra["actual_output"]) == [3, 3]
    flood = grade("print('z' * 100000)", [("\n", "z\n")])
    assert flood.extra["actual_output"] == "z" * 4096
    assert "actual_output" not in grade("print(1)", [("\n", "1\n")]).extra
