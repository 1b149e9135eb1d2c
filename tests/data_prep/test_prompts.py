"""The LiveCodeBench prompt variants, written out literally."""

from __future__ import annotations

import pytest

from data_prep.prompts import build_prompt

SYSTEM = (
    "You are an expert Python programmer. You will be given a question (problem specification) and will generate a "
    "correct Python program that matches the specification and passes all tests."
)
STDIN_FORMAT = (
    "### Format: Read the inputs from stdin solve the problem and write the answer to stdout (do not directly test "
    "on the sample inputs). Enclose your code within delimiters as follows. Ensure that when the python program "
    "runs, it reads the inputs, runs the algorithm and writes output to STDOUT.\n```python\n# YOUR CODE HERE\n```\n\n"
)
STARTER_FORMAT = (
    "### Format: You will use the following starter code to write the solution to the problem and enclose your "
    "code within delimiters.\n```python\nclass Solution:\n    def f(self):\n```\n\n"
)
ANSWER = "### Answer: (use the provided format with backticks)\n\n"


def test_nouscoder_without_starter_code() -> None:
    assert build_prompt("Add two numbers.", "") == [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "### Question:\nAdd two numbers.\n\n" + STDIN_FORMAT + ANSWER},
    ]


def test_nouscoder_with_starter_code() -> None:
    messages = build_prompt("Return it.", "class Solution:\n    def f(self):", "nouscoder")
    assert messages[1]["content"] == "### Question:\nReturn it.\n\n" + STARTER_FORMAT + ANSWER


def test_deepcoder_inlines_the_system_text_in_one_user_turn() -> None:
    assert build_prompt("Add two numbers.\n", "", "deepcoder") == [
        {"role": "user", "content": SYSTEM + "\n\nAdd two numbers.\n" + STDIN_FORMAT + ANSWER}
    ]
    with_starter = build_prompt("Return it.\n", "class Solution:\n    def f(self):", "deepcoder")
    assert with_starter[0]["content"] == SYSTEM + "\n\nReturn it.\n" + STARTER_FORMAT + ANSWER


def test_unknown_variant_is_refused() -> None:
    with pytest.raises(ValueError, match="nouscoder, deepcoder"):
        build_prompt("x", "", "other")
