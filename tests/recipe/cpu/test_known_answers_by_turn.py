"""known_answers.by_turn: scripted multi-turn conversations of the CPU rollout (a wrong answer, then a right one)."""

import pytest

from data_prep.sample import load_problems
from recipe.nouscoder.cpu.known_answers import PROGRAM_CLASSES, KnownAnswerBook, KnownAnswerOptions

STATEMENTS = {problem.problem_id: problem.statement for problem in load_problems(include_large=False)}


def first_prompt(problem_id: str) -> str:
    return f"<|im_start|>user\n### Question:\n{STATEMENTS[problem_id]}<|im_end|>\n<|im_start|>assistant\n"


def revision_prompt(problem_id: str, previous_answer: str) -> str:
    feedback = "<|im_start|>user\nYour program failed public test 1 of 1: wrong answer.<|im_end|>\n"
    return f"{first_prompt(problem_id)}{previous_answer}<|im_end|>\n{feedback}<|im_start|>assistant\n"


def is_kind(answer, program_class: str) -> bool:
    return any(answer.kind == kind or answer.kind.startswith(kind + "_") for kind in PROGRAM_CLASSES[program_class])


def test_a_failing_first_answer_then_a_passing_revision():
    book = KnownAnswerBook.from_bundled_sample(KnownAnswerOptions(fraction=1.0, by_turn=("failing", "passing")))
    for _ in range(4):
        first = book.next_answer(first_prompt("average_rainfall"))
        assert is_kind(first, "failing")
        revision = book.next_answer(revision_prompt("average_rainfall", first.text))
        assert is_kind(revision, "passing")
        assert is_kind(book.next_answer(revision_prompt("average_rainfall", revision.text)), "passing")  # repeats


def test_a_conversation_that_started_sampled_stays_sampled():
    book = KnownAnswerBook.from_bundled_sample(KnownAnswerOptions(fraction=0.5, by_turn=("failing", "passing")))
    assert book.next_answer(revision_prompt("average_rainfall", "the model's own text")) is None
    firsts = [book.next_answer(first_prompt("average_rainfall")) for _ in range(4)]
    assert [answer is not None for answer in firsts] == [False, True, False, True]


def test_problems_without_a_program_of_the_class_are_sampled():
    book = KnownAnswerBook.from_bundled_sample(KnownAnswerOptions(fraction=1.0, by_turn=("failing",)))
    assert book.next_answer(first_prompt("blocked_grid_paths")) is None  # only a reference is bundled


def test_by_turn_entries_are_checked():
    with pytest.raises(ValueError, match="by_turn"):
        KnownAnswerOptions(fraction=1.0, by_turn=("wrong",))
    assert KnownAnswerOptions.from_mapping({"fraction": 0.5, "by_turn": ["failing", "passing"]}).by_turn == (
        "failing",
        "passing",
    )
