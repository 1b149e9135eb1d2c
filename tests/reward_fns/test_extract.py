"""Code extraction rules of reward_fns.extract."""

import random
import re

import pytest

from reward_fns.extract import extract_code, strip_reasoning

FENCE = "```"


def block(body: str, tag: str = "python", fence: str = FENCE) -> str:
    return f"{fence}{tag}\n{body}\n{fence}"


@pytest.mark.parametrize("tag", ["python", "py", "Python3", "PYTHON", "py3", ""])
def test_python_tags_and_untagged_blocks_are_taken(tag):
    assert extract_code(f"Here it is:\n{block('print(1)', tag)}\nDone.") == "print(1)"


def test_last_python_block_wins():
    text = f"Draft:\n{block('print(1)')}\nBetter:\n{block('print(2)', 'py')}\nexplanation"
    assert extract_code(text) == "print(2)"


def test_multiline_body_is_kept_verbatim():
    body = "import sys\n\ndef main():\n    print(sys.stdin.read())\n\nmain()"
    assert extract_code(block(body)) == body


@pytest.mark.parametrize("tag", ["cpp", "java", "text", "bash", "python-repl-output"])
def test_block_tagged_with_another_language_is_not_taken(tag):
    assert extract_code(block("int main() {}", tag)) is None
    assert extract_code(f"{block('print(1)')}\n{block('int main() {}', tag)}") == "print(1)"


def test_info_string_after_language_is_ignored():
    assert extract_code(block("print(1)", "python title=solution.py")) == "print(1)"


def test_no_block_is_no_code():
    assert extract_code("I think the answer is print(1).") is None
    assert extract_code("") is None


def test_blank_block_is_not_code():
    assert extract_code(block("   \n")) is None
    assert extract_code(f"{block('print(1)')}\n{block('')}") == "print(1)"


def test_unterminated_fence_is_not_a_block():
    assert extract_code("```python\nprint(1)\n") is None
    assert extract_code(f"{block('print(1)')}\nnow faster:\n```python\nprint(2") == "print(1)"


def test_longer_fence_contains_shorter_fence_lines():
    body = 's = """\n```\nnot a fence\n```\n"""\nprint(s)'
    assert extract_code(block(body, fence="````")) == body


def test_python_block_nested_in_markdown_block_is_not_taken():
    inner = block("print(1)")
    assert extract_code(block(inner, "markdown", fence="````")) is None


def test_indented_fences_and_crlf():
    assert extract_code("  ```python\n  print(1)\n  ```") == "  print(1)"
    assert extract_code("```python\r\nprint(1)\r\n```\r\n") == "print(1)\r"


def test_block_inside_think_section_is_ignored():
    text = f"<think>try {block('print(0)')} maybe</think>\nFinal:\n{block('print(1)')}"
    assert extract_code(text) == "print(1)"
    assert extract_code(f"<think>{block('print(0)')}</think>No code, sorry.") is None


def test_every_think_section_is_removed():
    text = f"<think>a</think>\n{block('print(1)')}\n<think>{block('print(2)')}</think>the end"
    assert extract_code(text) == "print(1)"


def test_unterminated_think_means_no_answer():
    assert extract_code(f"<think>let me write {block('print(1)')} and then") is None
    assert extract_code(f"{block('print(1)')}\n<think>second thoughts {block('print(2)')}") is None


def test_closing_think_without_opening_tag_ends_the_reasoning():
    text = f"the prompt opened the think tag\n{block('print(0)')}\n</think>\n{block('print(1)')}"
    assert extract_code(text) == "print(1)"


def test_think_sections_are_removed_as_the_rule_reads_on_random_texts():
    """Rule 1 against the plain reading of it (a non-greedy ``<think>.*?</think>`` substitution, then everything
    before the last ``</think>`` dropped), on texts built from the tags and their fragments, without fences."""
    rule = re.compile(r"<think>.*?</think>", re.DOTALL)
    pieces = ["<think>", "</think>", "<think", "think>", "</", "a", "\n", "print(1)\n"]
    rng = random.Random(3)
    for _ in range(20_000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 12)))
        separated = rule.sub("\0", text)
        without = separated.replace("\0", "")
        if any(without.count(tag) != separated.count(tag) for tag in ("<think>", "</think>")):
            continue  # removing a section joined fragments into a new tag: the rule reads the text as written
        if "</think>" in without:
            without = without.rsplit("</think>", 1)[1]
        assert strip_reasoning(text) == (None if "<think>" in without else without), text


COUNTING_PROGRAMS = [
    'print(input().count("<think>"))',
    's = input()\nprint(s.replace("<think>", "").replace("</think>", ""))',
]
"""Programs whose first tag is an opening one: read as code with or without reasoning before them."""
CLOSING_FIRST_PROGRAMS = ['print(input().count("</think>"))', 'print("</think>" + "<think>")']


@pytest.mark.parametrize("program", COUNTING_PROGRAMS + CLOSING_FIRST_PROGRAMS)
@pytest.mark.parametrize(
    "reasoning",
    ["<think>count the tags</think>\n", "the prompt opened the tag\n</think>\n"],
    ids=["closed section", "closing tag only"],
)
def test_think_tags_inside_the_answers_code_are_code(program, reasoning):
    assert extract_code(f"{reasoning}Here:\n{block(program)}\nIt counts the tags.") == program


@pytest.mark.parametrize("program", COUNTING_PROGRAMS)
def test_think_tags_in_code_without_any_reasoning(program):
    assert extract_code(f"Here:\n{block(program)}") == program


def test_a_closing_tag_first_is_the_end_of_reasoning_even_in_code():
    """Rule 1 decides before fences are read: with no reasoning at all, a program whose first tag is ``</think>``
    loses what comes before it (a template that opened ``<think>`` in the prompt looks the same)."""
    assert extract_code(f"Here:\n{block(CLOSING_FIRST_PROGRAMS[0])}") is None


def test_a_draft_cut_off_inside_reasoning_does_not_swallow_the_answer():
    text = "the prompt opened the tag\n```python\ndef draft(\n</think>\n" + block("print(1)")
    assert extract_code(text) == "print(1)"
    assert extract_code("<think>\n```python\ndef draft(\n</think>\n" + block("print(1)")) == "print(1)"


def test_tags_outside_the_answers_fences_keep_their_meaning():
    program = 'print("<think>")'
    assert extract_code(f"{block(program)}\n<think>second thoughts") is None
    assert extract_code(f"{block('print(0)')}\n</think>\n{block(program)}") == program
    assert extract_code(f"{block(program)}\n</think>\nno code after the reasoning") is None


def test_tags_in_code_are_kept_on_random_answers():
    """Answers built from prose (with closed reasoning sections) and python blocks whose bodies hold random tag
    fragments, after reasoning of each kind (none only when the answer's first tag opens a section): the program
    is the last block's body, verbatim."""
    fragments = ["<think>", "</think>", "<think", "think>", "x = 1", "#", "'", "\n"]
    prose = ["Here it is.", "<think>hmm</think>", "<think>a\nb</think>ok", "text\n"]
    reasoning = ["<think>r</think>\n", "r\n</think>\n", "<think>draft:\n```python\nprint(0)\n</think>\n", ""]
    rng = random.Random(5)
    for _ in range(5_000):
        parts, last = [], None
        for _ in range(rng.randint(1, 4)):
            if rng.random() < 0.5:
                parts.append(rng.choice(prose) + "\n")
            else:
                last = "".join(rng.choice(fragments) for _ in range(rng.randint(1, 8))) + "\nprint(1)"
                parts.append(block(last) + "\n")
        answer = "".join(parts)
        first_tag = re.search("</?think>", answer)
        prefix = rng.choice(reasoning[:-1] if first_tag and first_tag.group() == "</think>" else reasoning)
        assert extract_code(prefix + answer) == last, prefix + answer
