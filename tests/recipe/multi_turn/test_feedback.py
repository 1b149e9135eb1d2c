"""Public-test checks and feedback messages on real sandboxed runs; no hidden test content in any feedback."""

from __future__ import annotations

import asyncio
import json

import pytest

from recipe.nouscoder.multi_turn.feedback import feedback_message, is_done_reply
from recipe.nouscoder.multi_turn.options import MultiTurnOptions
from recipe.nouscoder.multi_turn.public_tests import LocalPublicGrader, PublicTests, check_public, public_tests_of
from reward_fns.types import GroundTruthError, Verdict

GRADER = LocalPublicGrader({"time_limit_s": 2.0, "total_time_budget_s": 20.0})
PUBLIC = PublicTests.from_ground_truth(
    {
        "tests": [
            {"input": "1 2\n", "output": "3\n"},
            {"input": "5 5\n", "output": "10\n"},
            {"input": "0 7\n", "output": "7\n"},
        ]
    }
)
OPTIONS = MultiTurnOptions()


def check(program: str, public: PublicTests = PUBLIC):
    return asyncio.run(check_public(GRADER, f"```python\n{program}\n```", public))


def message(program: str, public: PublicTests = PUBLIC, options: MultiTurnOptions = OPTIONS) -> str:
    return feedback_message(check(program, public), options, GRADER.config)


def test_public_tests_run_in_statement_order_and_stop_at_the_first_failure():
    result = check("a, b = map(int, input().split())\nprint(a + b if a != 5 else 0)")
    assert (result.verdict, result.passed, result.total) == (Verdict.WRONG_ANSWER, 1, 3)
    assert result.failed_test.input == "5 5\n" and result.actual_output == "0\n"
    assert check("a, b = map(int, input().split())\nprint(a + b)").all_passed


def test_wrong_answer_message():
    assert message("a, b = map(int, input().split())\nprint(a * b)") == (
        "Your program failed public test 1 of 3: wrong answer.\n\n"
        "Input:\n```text\n1 2\n```\n\n"
        "Expected output:\n```text\n3\n```\n\n"
        "Your output:\n```text\n2\n```\n\n"
        "Fix the program and reply with the complete corrected program in a ```python code block."
    )


def test_runtime_error_message_shows_the_input_and_the_stderr_tail():
    text = message("a, b = map(int, input().split())\nif b == 5:\n    raise KeyError('no key ' + str(a))\nprint(a + b)")
    assert text.startswith("Your program failed public test 2 of 3: runtime error.\n\nInput:\n```text\n5 5\n```\n\n")
    assert "End of stderr:\n```text\n" in text and "KeyError: 'no key 5'" in text
    assert "Expected output" not in text


def test_time_limit_compile_error_and_no_code_messages():
    assert message("while True:\n    pass").startswith(
        "Your program failed public test 1 of 3: time limit exceeded (limit 2 s per test).\n\nInput:\n```text\n1 2\n```"
    )
    compile_error = message("def broken(:\n    pass")
    assert compile_error.startswith("Your program does not compile.\n\nError:\n```text\nSyntaxError")
    no_code = feedback_message(
        asyncio.run(check_public(GRADER, "I think the answer is 3.", PUBLIC)), OPTIONS, GRADER.config
    )
    assert no_code == (
        "I found no Python program in your answer (a ```python code block).\n\n"
        "Fix the program and reply with the complete corrected program in a ```python code block."
    )


def test_functional_tests_show_arguments_and_return_values():
    public = PublicTests.from_ground_truth(
        {"fn_name": "add", "tests": [{"input": "[1, 2]\n3", "output": "[1, 2, 3]", "testtype": "functional"}]}
    )
    text = message("class Solution:\n    def add(self, items, x):\n        return items", public)
    assert "Arguments (one JSON value per line):\n```text\n[1, 2]\n3\n```" in text
    assert (
        "Expected return value:\n```text\n[1, 2, 3]\n```" in text and "Your return value:\n```text\n[1,2]\n```" in text
    )


def test_long_fields_are_cut_and_verdict_format_shows_no_test_content():
    options = MultiTurnOptions(feedback_field_chars=50)
    text = message("print('x' * 5000)", options=options)
    assert "Your output:\n```text\n" + "x" * 50 + "\n... (cut: only the first 50 characters are shown)\n```" in text
    assert "x" * 51 not in text
    verdict_only = message("print(0)", options=MultiTurnOptions(feedback_format="verdict"))
    assert verdict_only == (
        "Your program failed public test 1 of 3: wrong answer.\n\n"
        "Fix the program and reply with the complete corrected program in a ```python code block."
    )


def test_shown_text_with_backticks_cannot_close_its_fence():
    text = message("print('````')")
    assert "Your output:\n`````text\n````\n`````" in text


def test_done_reply():
    options = MultiTurnOptions(allow_done=True)
    assert is_done_reply("<think>the test is wrong</think>I keep my program.\nDONE", options)
    assert not is_done_reply("DONE\n```python\nprint(3)\n```", options)
    assert not is_done_reply("DONE", MultiTurnOptions())
    assert "reply with DONE alone instead" in message("print(0)", options=options)


def test_row_public_tests():
    assert public_tests_of({"public_tests": ""}) is None and public_tests_of({}) is None
    parsed = public_tests_of({"public_tests": json.dumps({"tests": [{"input": "1", "output": "2"}]})})
    assert [test.input for test in parsed.tests] == ["1"]
    for bad in ("{nope", json.dumps({"tests": []}), json.dumps({"tests": [{"input": 1}]})):
        with pytest.raises(GroundTruthError):
            public_tests_of({"public_tests": bad})


HIDDEN_MARKERS = ("918273645501", "HIDDEN-ONLY-7f3a", "424242424242")
HIDDEN = {
    "tests": [
        {"input": "918273645501 1\n", "output": "918273645502\n"},
        {"input": "424242424242 0\nHIDDEN-ONLY-7f3a\n", "output": "424242424242\n"},
    ]
}
PROBES = {
    "wrong": "a, b = map(int, input().split())\nprint(a - b)",
    "echo stdin": "import sys\nprint(sys.stdin.read())",
    "crash with input": "import sys\nraise ValueError(sys.stdin.read())",
    "environment": "import os\nprint(dict(os.environ))",
    "files around": (
        "import os\nfor root, dirs, files in os.walk('/'):\n"
        "    if root.count('/') > 3:\n        continue\n"
        "    for name in files:\n        path = os.path.join(root, name)\n"
        "        try:\n            data = open(path, errors='replace').read(4096)\n"
        "        except Exception:\n            continue\n        print(path, data)"
    ),
    "argv and proc": "import sys, os\nprint(sys.argv, open('/proc/self/cmdline').read(), os.listdir('.'))",
    "stderr flood": "import sys\nsys.stderr.write('E' * 100000)\nraise SystemExit(3)",
    "timeout": "while True:\n    pass",
}


@pytest.mark.parametrize("probe", sorted(PROBES))
def test_no_hidden_test_content_reaches_feedback(probe):
    """Feedback is built from the public tests and the program's outputs on them; hidden tests never reach it."""
    public = PublicTests.from_ground_truth({"tests": [{"input": "1 2\n", "output": "3\n"}]})
    seen = []

    class Recording:
        config = GRADER.config

        async def grade(self, response, ground_truth):
            seen.append(ground_truth)
            return await GRADER.grade(response, ground_truth)

    result = asyncio.run(check_public(Recording(), f"```python\n{PROBES[probe]}\n```", public))
    assert not result.all_passed
    assert all(marker not in truth for truth in seen for marker in HIDDEN_MARKERS)
    for options in (
        MultiTurnOptions(),
        MultiTurnOptions(feedback_format="verdict"),
        MultiTurnOptions(feedback_field_chars=100000),
    ):
        text = feedback_message(result, options, GRADER.config)
        assert all(marker not in text for marker in HIDDEN_MARKERS)
        for test in HIDDEN["tests"]:
            assert test["input"] not in text and test["output"].strip() not in text
