"""Statement normalisation: PrimeIntellect's prompt wrapper, and the words duplicates are found by."""

from __future__ import annotations

from data_prep.statements import statement_words, strip_prompt_wrapper

STATEMENT = "Given n numbers, print their sum.\n\n-----Input-----\nn, then n integers."


def test_the_wrapper_of_both_io_notes_is_removed_and_nothing_else() -> None:
    stdin = (
        "Solve the following coding problem using the programming language python:\n\n"
        + STATEMENT
        + "\n\nThe input will be stdin and you should print your solution to stdout\n\n\n"
        "Now solve the problem and return the code."
    )
    given_via = (
        "Solve the following coding problem using the programming language python:\n\n"
        + STATEMENT
        + "\n\nThe input will be given via stdin and the output should be printed to stdout by your code.\n\n"
        "Now solve the problem and return the code."
    )
    assert strip_prompt_wrapper(stdin) == STATEMENT
    assert strip_prompt_wrapper(given_via) == STATEMENT
    assert strip_prompt_wrapper(STATEMENT) == STATEMENT
    mentions = "Explain how to solve the following coding problem using the programming language python: later."
    assert strip_prompt_wrapper(mentions) == mentions


def test_html_markdown_and_the_wrapper_do_not_change_the_words() -> None:
    html = (
        "<p>Given <code>n</code> numbers, print their <strong>sum</strong>.</p>\n<p><strong>Input</strong></p>"
        "<p>n, then n integers.</p>"
    )
    wrapped = (
        "Solve the following coding problem using the programming language python: "
        + STATEMENT
        + " Now solve the problem and return the code."
    )
    assert statement_words(html) == statement_words(STATEMENT) == statement_words(wrapped)
    assert statement_words("a &lt; b") == ["a", "b"]
